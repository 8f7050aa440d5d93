"""Tolerances scoped to what a tf32 dot feeds: the buffers its result is stored into get tf32's, the
others keep fp32's own, and the report says which rule applied and why."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
import kernel_nb.gpu as gpu
from kernel_nb.compare import dot_fed_buffers
from kernel_nb.gpu.runner import GpuLaunch
from kernel_nb.trace import Artifacts


@triton.jit
def _scaled_dot(a, b):
    return tl.dot(a, b) * 0.5


@triton.jit
def _store_half(ptr, offs, value):
    tl.store(ptr + offs, value * 0.5)


@triton.jit
def matmul_norm_kernel(a_ptr, b_ptr, c_ptr, norm_ptr, N: tl.constexpr, STEPS: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    acc = tl.zeros((N, N), tl.float32)
    a = tl.load(a_ptr + offs)
    for _ in range(STEPS):
        b = tl.load(b_ptr + offs)
        acc += tl.dot(a, b)
    c_ptrs = c_ptr + offs
    tl.store(c_ptrs, acc)
    norm = tl.sum(a * a, axis=1)
    tl.store(norm_ptr + r, norm)


@triton.jit
def helper_dot_kernel(a_ptr, c_ptr, norm_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    a = tl.load(a_ptr + offs)
    tl.store(c_ptr + offs, _scaled_dot(a, a))
    tl.store(norm_ptr + r, tl.sum(a, axis=1))


@triton.jit
def ieee_kernel(a_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    a = tl.load(a_ptr + offs)
    tl.store(c_ptr + offs, tl.dot(a, a, input_precision="ieee"))


@triton.jit
def helper_store_kernel(a_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    a = tl.load(a_ptr + offs)
    _store_half(c_ptr, offs, tl.dot(a, a))


def _launch(kernel, *args, **kwargs):
    with kernel_nb.interpret() as session:
        kernel[(1,)](*args, **kwargs)
    return session.trace[0]


def _fed(launch):
    buffers = [a.name for a in launch.args if a.kind == "buffer"]
    return dot_fed_buffers(launch.sources, launch.kernel, buffers)


def test_a_dot_accumulated_in_a_loop_feeds_its_output_and_not_the_norms():
    m = np.ones((16, 16), np.float32)
    launch = _launch(matmul_norm_kernel, m, m, np.zeros_like(m), np.zeros(16, np.float32), N=16, STEPS=2)
    assert _fed(launch) == {"c_ptr"}


def test_a_helper_holding_a_dot_feeds_what_its_result_is_stored_into():
    m = np.ones((16, 16), np.float32)
    launch = _launch(helper_dot_kernel, m, np.zeros_like(m), np.zeros(16, np.float32), N=16)
    assert _fed(launch) == {"c_ptr"}


def test_an_ieee_dot_feeds_nothing_and_a_helper_that_stores_leaves_it_to_every_buffer():
    m = np.ones((16, 16), np.float32)
    assert _fed(_launch(ieee_kernel, m, np.zeros_like(m), N=16)) == set()
    assert _fed(_launch(helper_store_kernel, m, np.zeros_like(m), N=16)) is None


TF32_TTIR = "%4 = tt.dot %a, %b, %acc, inputPrecision = tf32 : tensor<16x16xf32> * tensor<16x16xf32> -> tensor<16x16xf32>"


def _fake_gpu(c_off, norm_off):
    """The kernel's results computed in numpy, each output off by a relative amount, as a tf32 GPU."""

    def launcher(run, kernel, grid, args, kwargs, index):
        a, b, c, norm = args
        c[...] = (a @ b) * kwargs["STEPS"] * (1 + c_off)
        norm[...] = (a * a).sum(axis=1) * (1 + norm_off)
        artifacts = Artifacts(target="cuda:90", stages={"ttir": TF32_TTIR})
        return GpuLaunch(index, kernel.fn.__name__, (1, 1, 1), "fake GPU", 0.0, artifacts=artifacts)

    return launcher


@pytest.mark.parametrize(("c_off", "norm_off", "bad"), [(1e-3, 0.0, []), (0.0, 1e-3, ["norm_ptr"])])
def test_compare_relaxes_only_the_buffer_a_tf32_dot_feeds(c_off, norm_off, bad):
    rng = np.random.default_rng(0)
    a, b = rng.random((2, 16, 16), dtype=np.float32)
    c, norm = np.zeros((16, 16), np.float32), np.zeros(16, np.float32)
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=_fake_gpu(c_off, norm_off))
    with session:
        matmul_norm_kernel[(1,)](a, b, c, norm, N=16, STEPS=2)
    comparison = session.trace[0].comparison
    reasons = {buffer.arg: buffer.tolerance.reason for buffer in comparison.buffers}
    assert reasons == {
        "c_ptr": "fp32 with tf32 dots (a tf32 dot's result is stored into it)",
        "norm_ptr": "fp32 (no tf32 dot reaches it)",
    }
    assert [buffer.arg for buffer in comparison.buffers if not buffer.ok] == bad
    assert (
        "fp32 with tf32 dots (a tf32 dot's result is stored into it): 256 elements (c_ptr)"
        in comparison.report()
    )


@triton.jit
def dot_and_copy_kernel(a_ptr, b_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(out_ptr + offs, tl.dot(a, b))  # rows 0..N-1: a tf32 dot
    tl.store(out_ptr + N * N + offs, a * 2.0)  # rows N..2N-1: no dot


def _fake_mixed_gpu(dot_off, copy_off):
    def launcher(run, kernel, grid, args, kwargs, index):
        a, b, out = args
        n = kwargs["N"]
        out[:n] = (a @ b) * (1 + dot_off)
        out[n:] = a * 2.0 * (1 + copy_off)
        artifacts = Artifacts(target="cuda:90", stages={"ttir": TF32_TTIR})
        return GpuLaunch(index, kernel.fn.__name__, (1, 1, 1), "fake GPU", 0.0, artifacts=artifacts)

    return launcher


@pytest.mark.parametrize("strategy", ["serial", "auto"])
@pytest.mark.parametrize(("copy_off", "mismatches"), [(0.0, 0), (1e-4, 256)])
def test_in_a_buffer_two_stores_write_only_the_dots_elements_get_the_tf32_rule(
    strategy, copy_off, mismatches
):
    rng = np.random.default_rng(1)
    a, b = rng.random((2, 16, 16), dtype=np.float32) + np.float32(0.5)
    out = np.zeros((32, 16), np.float32)
    session = gpu.GpuSession(
        kernel_nb.Options(strategy=strategy),
        gpu.GpuOptions(mode="compare"),
        launcher=_fake_mixed_gpu(1e-3, copy_off),
    )
    with session:
        dot_and_copy_kernel[(1,)](a, b, out, N=16)
    comparison = session.trace[0].comparison
    (buffer,) = comparison.buffers
    assert buffer.mismatches == mismatches
    if mismatches:  # the copied rows only: the dot's rows are 1e-3 off, within tf32's rule
        assert buffer.positions.min() == 256
    assert buffer.tolerance.reason == "fp32 (the elements other stores wrote)"
    assert buffer.relaxed is not None and buffer.relaxed[1] == 256
    assert buffer.relaxed[0].reason == "fp32 with tf32 dots (the elements a tf32 dot's stores wrote)"
    assert comparison.rules() == (
        "fp32 (the elements other stores wrote): 256 elements (out_ptr); "
        "fp32 with tf32 dots (the elements a tf32 dot's stores wrote): 256 elements (out_ptr)"
    )


def test_a_budget_that_keeps_nothing_scopes_by_the_ranges_the_stores_spanned():
    rng = np.random.default_rng(1)
    a, b = rng.random((2, 16, 16), dtype=np.float32) + np.float32(0.5)
    out = np.zeros((32, 16), np.float32)
    session = gpu.GpuSession(
        kernel_nb.Options(budget_bytes=0),
        gpu.GpuOptions(mode="compare"),
        launcher=_fake_mixed_gpu(1e-3, 1e-4),
    )
    with session:
        dot_and_copy_kernel[(1,)](a, b, out, N=16)
    (buffer,) = session.trace[0].comparison.buffers
    assert not session.trace[0].programs[(0, 0, 0)].kept
    assert buffer.relaxed[1] == 256 and buffer.mismatches == 256 and buffer.positions.min() == 256


@pytest.mark.parametrize("case", ["fp16 buffer", "rtol given"])
def test_element_scoping_only_splits_fp32_buffers_under_the_policy(case):
    rng = np.random.default_rng(1)
    a, b = rng.random((2, 16, 16), dtype=np.float32) + np.float32(0.5)
    out = np.zeros((32, 16), np.float16 if case == "fp16 buffer" else np.float32)
    options = gpu.GpuOptions(mode="compare", rtol=1e-2 if case == "rtol given" else None)
    session = gpu.GpuSession(gpu=options, launcher=_fake_mixed_gpu(0.0, 0.0))
    with session:
        dot_and_copy_kernel[(1,)](a, b, out, N=16)
    (buffer,) = session.trace[0].comparison.buffers
    assert buffer.relaxed is None
    expected = (
        "fp16: 2 ulp"
        if case == "fp16 buffer"
        else "fp32 with tf32 dots, overridden (a tf32 dot's result is stored into it)"
    )
    assert buffer.tolerance.reason == expected
