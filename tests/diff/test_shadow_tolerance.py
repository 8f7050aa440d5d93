"""`--tolerance shadow`: each element judged by what the kernel's own arithmetic can promise there,
from the interpreter's fp64 shadow; looser than the dtype's rule where the arithmetic loses
precision, tighter where it does not. The GPU is numpy here (the real one: tests/gpu)."""

import numpy as np
import pytest
import triton

import kernel_nb.gpu as gpu
from kernel_nb import numerics
from kernel_nb.gpu.launch_diff import SHADOW_FACTOR, SHADOW_REASON
from kernel_nb.gpu.runner import GpuLaunch
from kernel_nb.trace import Artifacts
from tests.engine import shadow_kernels as k

M, N, D, BM = 32, 16, 16, 16
TF32_TTIR = "%4 = tt.dot %a, %b, %acc, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>"


def _points():
    rng = np.random.default_rng(0)
    x = (10 + rng.random((M, D))).astype(np.float32)
    y = (x[:N] + 0.01 * rng.standard_normal((N, D))).astype(np.float32)
    return x, y


def _gram_in_numpy(x, y):
    """The Gram kernel's arithmetic in another order: fp32 sums from left to right, the dot's
    products over tf32 operands summed from the other end."""
    na = np.cumsum(x * x, axis=1, dtype=np.float32)[:, -1]
    nb = np.cumsum(y * y, axis=1, dtype=np.float32)[:, -1]
    g = numerics.truncate_to_tf32(x)[:, ::-1] @ numerics.truncate_to_tf32(y)[:, ::-1].T
    return (na[:, None] + nb[None, :] - np.float32(2) * g).astype(np.float32)


def _centered_in_numpy(x, y):
    diff = x[:, None, :] - y[None, :, :]
    return (diff * diff).sum(axis=2, dtype=np.float32)


def _launcher(compute, off=None):
    def launcher(run, kernel, grid, args, kwargs, index):
        x, y, out = args[:3]
        out[...] = compute(x, y)
        if off is not None:
            off(out)
        artifacts = Artifacts(target="cuda:90", stages={"ttir": TF32_TTIR})
        return GpuLaunch(index, kernel.fn.__name__, (2, 1, 1), "fake GPU", 0.0, artifacts=artifacts)

    return launcher


def _compare(kernel, launcher, tolerance):
    x, y = _points()
    out = np.zeros((M, N), np.float32)
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare", tolerance=tolerance), launcher=launcher)
    with session:
        kernel[(triton.cdiv(M, BM),)](x, y, out, M, N=N, D=D, BM=BM)
    launch = session.trace[0]
    (buffer,) = [b for b in launch.comparison.buffers if b.arg == "out_ptr"]
    return launch, buffer


def test_shadow_tolerance_runs_the_interpreter_with_a_shadow():
    launch, buffer = _compare(k.gram_distances, _launcher(_gram_in_numpy), "shadow")
    assert launch.shadow == "fp64"
    assert buffer.tolerance.reason == SHADOW_REASON


def test_a_cancelling_kernel_computed_in_another_order_is_judged_by_what_its_arithmetic_promises():
    # where the distances cancel, the GPU's result and the interpreter's differ by a large share
    # of the values themselves, far beyond fp32's own rule; the shadow says that the kernel's
    # arithmetic promises no better there, and judges each element by that
    launch, by_shadow = _compare(k.gram_distances, _launcher(_gram_in_numpy), "shadow")
    assert by_shadow.mismatches == 0
    cpu, gpu_values = (np.asarray(v, np.float64).reshape(-1) for v in (by_shadow.cpu, by_shadow.gpu))
    reference = launch.reference("out_ptr").reshape(-1)
    near = np.abs(reference) < 0.01
    assert near.sum() == N
    assert (np.abs(gpu_values - cpu)[near] > 1e-5 * np.abs(cpu[near])).any()
    assert (
        np.abs(gpu_values - cpu) <= SHADOW_FACTOR * np.maximum(np.abs(cpu - reference), 1e-30) + 1e-3
    ).all()


def test_a_wrong_element_beyond_the_promise_is_a_mismatch():
    def bug(out):
        out[20, 3] += 50.0

    _, buffer = _compare(k.gram_distances, _launcher(_gram_in_numpy, bug), "shadow")
    assert buffer.mismatches == 1
    assert list(buffer.positions) == [20 * N + 3]


@pytest.mark.parametrize("tolerance", ["dtype", "shadow"])
def test_where_the_arithmetic_is_precise_the_shadow_is_the_stricter_judge(tolerance):
    # off by 4e-6 relative: within fp32's blanket rule (1e-5), far beyond what the centered
    # kernel's arithmetic allows (a few ulps, about 1e-7)
    def off(out):
        out[5, 5] *= np.float32(1 + 4e-6)

    _, buffer = _compare(k.centered_distances, _launcher(_centered_in_numpy, off), tolerance)
    assert buffer.mismatches == (1 if tolerance == "shadow" else 0)


def test_the_tolerance_option_is_checked():
    with pytest.raises(ValueError, match="tolerance"):
        gpu.GpuOptions(mode="compare", tolerance="loose")
