"""kernel_nb.minimize with keep="gpu_mismatch": a launch whose GPU run is out of tolerance shrinks to a
small launch that is out of tolerance still, every candidate compared on the real GPU."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import triton

import kernel_nb
import kernel_nb.gpu as gpu
from kernel_nb.minimize import MISMATCH
from tests.diff import kernels as dk

STRICT = {"rtol": 0.0, "atol": 0.0}


def _exported_outcomes(result, tmp_path):
    """The minimised launch written as a test file and run with pytest in a fresh process, compiled
    on this GPU: per test its outcome and message."""
    test_file, _ = result.to_pytest(tmp_path)
    report = tmp_path / "report.xml"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            str(test_file),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    print(run.stdout[-3000:], run.stderr[-3000:])
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        found = [c for c in case if c.tag in ("failure", "error", "skipped")]
        outcomes[case.get("name")] = (
            found[0].tag if found else "passed",
            found[0].get("message", "") if found else "",
        )
    return outcomes


def test_a_tf32_dot_out_of_a_strict_tolerance_shrinks_to_one_small_program(tmp_path):
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

    # the exported file, compiled on the GPU, shows the mismatch against the interpreter's saved results
    outcomes = _exported_outcomes(result, tmp_path)
    assert outcomes == {"test_stock_triton": ("passed", ""), "test_kernel_nb": ("passed", "")}, outcomes


def test_an_exp_the_gpu_rounds_its_own_way_shrinks_to_its_element(tmp_path):
    # tl.exp compiles to the GPU's approximate exp2 of x * log2(e): a few ulps from the
    # interpreter's exp, not equal to it. One input where they differ (found on this GPU, under a
    # tolerance of none) among zeros, whose exp is 1 on both
    probe = np.random.default_rng(1).uniform(-10, 10, 4096).astype(np.float32)
    with gpu.compare(**STRICT) as session:
        dk.exp_kernel[(4,)](probe, np.zeros_like(probe), 4096, BLOCK=1024)
    [differs] = session.trace[0].comparison.mismatching
    value = probe[int(differs.positions[0])]
    n = 1 << 20
    x = np.zeros(n, np.float32)
    x[700_001] = value
    with gpu.compare(**STRICT) as session:
        dk.exp_kernel[(triton.cdiv(n, 1024),)](x, np.zeros_like(x), n, BLOCK=1024)
    launch = session.trace[0]
    [buffer] = launch.comparison.mismatching
    assert buffer.positions.tolist() == [700_001], launch.comparison.report()

    result = kernel_nb.minimize(launch, MISMATCH, compare=STRICT, time_limit=240, progress=print)

    assert result.launch.num_programs == 1 and result.finding.arg == "out_ptr"
    assert result.arguments["x_ptr"].size <= 4 and result.arguments["x_ptr"].any()
    assert not result.launch.comparison.ok
    outcomes = _exported_outcomes(result, tmp_path)
    assert outcomes == {"test_stock_triton": ("passed", ""), "test_kernel_nb": ("passed", "")}, outcomes
