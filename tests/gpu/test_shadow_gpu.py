"""The fp64 shadow against a real GPU: the Gram-matrix distances that a tf32 dot and a cancellation
ruin MATCH under the dtype's rule (the interpreter computes the GPU's wrong answer), the shadow's
findings say why, its reference is the true result, and `tolerance="shadow"` judges the GPU by
what the kernel's arithmetic can promise."""

import numpy as np
import triton

import kernel_nb.gpu as gpu
from tests.engine import shadow_kernels as k

M, N, D, BM = 64, 16, 16, 16


def _points():
    rng = np.random.default_rng(0)
    x = (10 + rng.random((M, D))).astype(np.float32)
    y = (x[:N] + 0.01 * rng.standard_normal((N, D))).astype(np.float32)
    return x, y


def _compare(kernel, tolerance):
    x, y = _points()
    out = np.zeros((M, N), np.float32)
    with gpu.compare(tolerance=tolerance) as session:
        kernel[(triton.cdiv(M, BM),)](x, y, out, M, N=N, D=D, BM=BM)
    return session.trace[0], out, x, y


def _true(x, y):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    return ((x64[:, None, :] - y64[None, :, :]) ** 2).sum(-1)


def test_the_gram_kernel_matches_the_gpu_and_the_shadow_says_what_is_wrong():
    launch, out, x, y = _compare(k.gram_distances, "dtype")
    print(launch.comparison.report())
    assert launch.comparison.ok  # the interpreter computes the GPU's answer, cancellation and all
    true = _true(x, y)
    near = true < 0.01
    assert (np.abs(out - true)[near] > 10 * true[near]).all()


def test_shadow_tolerance_on_the_gpu():
    launch, out, x, y = _compare(k.gram_distances, "shadow")
    print(launch.comparison.report())
    assert launch.shadow == "fp64"
    assert launch.comparison.ok
    assert np.abs(launch.reference("out_ptr") - _true(x, y)).max() < 1e-9
    kinds = [f.kind for f in launch.findings]
    assert kinds.count("precision_loss") == 2
    twin, out, x, y = _compare(k.centered_distances, "shadow")
    print(twin.comparison.report())
    assert twin.comparison.ok and not [f for f in twin.findings if f.kind == "precision_loss"]
    assert np.allclose(out, _true(x, y), rtol=1e-5)
