"""kernel_nb.minimize with keep="gpu_mismatch": a launch whose GPU run is out of tolerance shrinks to a
small launch that is out of tolerance still, every candidate compared on the real GPU."""

from __future__ import annotations

import numpy as np

import kernel_nb
import kernel_nb.gpu as gpu
from kernel_nb.minimize import MISMATCH
from tests.diff import kernels as dk

STRICT = {"rtol": 0.0, "atol": 0.0}


def test_a_tf32_dot_out_of_a_strict_tolerance_shrinks_to_one_small_program():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 128)).astype(np.float32) for _ in range(2))
    c = np.zeros((128, 128), np.float32)
    with gpu.compare(**STRICT) as session:
        dk.dot_kernel[(2, 2)](a, b, c, 128, 128, 128, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, IEEE=False)
    launch = session.trace[0]
    assert not launch.comparison.ok

    lines: list[str] = []
    result = kernel_nb.minimize(launch, MISMATCH, compare=STRICT, time_limit=240, progress=lines.append)
    print("\n".join(lines))

    assert result.finding.kind == MISMATCH and result.finding.arg == "c_ptr"
    assert result.launch.num_programs == 1 and not result.launch.comparison.ok
    assert result.arguments["BLOCK_M"] * result.arguments["BLOCK_N"] <= 32 * 32
    assert result.arguments["a_ptr"].size <= 32 * 32
    # the same launch under the default tolerance is within it: the mismatch is the strict rule's
    with gpu.compare() as again:
        dk.dot_kernel[result.grid](**result.arguments)
    assert again.trace[0].comparison.ok
