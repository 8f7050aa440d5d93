"""Kernels that call libdevice run: through the stub module, tl.extra, names imported into helper
modules and the CUDA module itself; Triton is as it was afterwards."""

import math

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

import kernel_nb
import kernel_nb.gpu
from kernel_nb.errors import KernelCompileError
from tests.engine import libdevice_helpers as helpers


@triton.jit
def norm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    inv = libdevice.rsqrt(tl.sum(x * x, axis=0) / n + 1e-6)  # an RMS norm's scale
    tl.store(out_ptr + offsets, x * inv, mask=mask)


@triton.jit
def erf_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, tl.extra.libdevice.erf(x) + cuda_libdevice.exp(x))


@triton.jit
def missing_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, libdevice.fast_tanhf(tl.load(x_ptr + offsets)))


@triton.jit
def integer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, libdevice.popc(x) + libdevice.clz(x))


def test_the_stub_module_runs_the_cuda_functions():
    x = np.linspace(-3, 3, 200, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret():
        norm_kernel[(1,)](x, out, 200, BLOCK=256)
    expected = x / np.sqrt(np.mean(x.astype(np.float64) ** 2) + 1e-6)
    np.testing.assert_allclose(out, expected, rtol=2e-6)


def test_names_imported_into_a_helper_module():
    x = np.linspace(-4, 4, 300, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        helpers.gelu_kernel[(3,)](x, out, 300, BLOCK=128)
    x64 = x.astype(np.float64)
    expected = 0.5 * x64 * (1 + np.tanh(0.7978845608028654 * (x64 + 0.044715 * x64**3)))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert session.trace[0].value(0, "inner").shape == (128,)


def test_tl_extra_and_the_cuda_module():
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret():
        erf_kernel[(1,)](x, out, BLOCK=64)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)]) + np.exp(x.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=3e-7, atol=1e-7)


def test_integer_functions_are_exact():
    x = np.array([0, 1, 7, -1, 2**31 - 1, 1 << 20, 12345, -(2**31)], dtype=np.int32)
    out = np.zeros_like(x)
    with kernel_nb.interpret():
        integer_kernel[(1,)](x, out, BLOCK=8)
    bits = x.view(np.uint32)
    popc = [bin(int(v)).count("1") for v in bits]
    clz = [32 - int(v).bit_length() for v in bits]
    assert out.tolist() == [p + c for p, c in zip(popc, clz)]


@pytest.mark.skipif(
    not hasattr(libdevice, "fast_tanhf"), reason="this Triton's libdevice stubs all have a CUDA function"
)
def test_a_function_without_a_cuda_implementation_is_named():
    x = np.zeros(8, np.float32)
    with pytest.raises(KernelCompileError, match=r"libdevice\.fast_tanhf has no CUDA implementation"):
        with kernel_nb.interpret():
            missing_kernel[(1,)](x, BLOCK=8)


def test_triton_is_as_it_was_after_the_session():
    x = np.ones(8, np.float32)
    with kernel_nb.interpret():
        erf_kernel[(1,)](x, np.zeros_like(x), BLOCK=8)
    assert libdevice.rsqrt.__module__ == "triton.language.extra.libdevice"
    assert libdevice.rsqrt(1.0) is None  # the stub again
    assert helpers.tanh is libdevice.tanh
    artifacts = kernel_nb.gpu.compile_for_target(norm_kernel, (x, x, 8), {"BLOCK": 8}, sass=False)
    assert "__nv_rsqrtf" in artifacts.stages["llir"]


def test_a_libdevice_function_replaced_between_launches_is_the_one_the_next_launch_calls(monkeypatch):
    """The routing made for libdevice's functions is made once, and made again where a module's
    member is no longer the one it routes (a function replaced, as a test or a patch would)."""
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    out = np.empty_like(x)
    for _ in range(2):  # the second launch sets what the first one made
        with kernel_nb.interpret():
            erf_kernel[(1,)](x, out, BLOCK=64)
        np.testing.assert_allclose(out, [math.erf(v) + math.exp(v) for v in x], rtol=2e-6)
    calls = []
    original = cuda_libdevice.exp

    @tl.core.extern
    def exp(arg0, _semantic=None):
        calls.append(1)
        return original(arg0, _semantic=_semantic)

    monkeypatch.setattr(cuda_libdevice, "exp", exp)
    with kernel_nb.interpret():
        erf_kernel[(1,)](x, out, BLOCK=64)
    assert calls  # the new member, routed
    np.testing.assert_allclose(out, [math.erf(v) + math.exp(v) for v in x], rtol=2e-6)
    assert cuda_libdevice.exp is exp and libdevice.exp is not exp  # each module as it was
