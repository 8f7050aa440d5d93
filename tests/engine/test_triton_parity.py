"""What Triton's own tests expect of an interpreter, checked here without them: reinterpreted
arguments, Triton's error classes, sources edited with _unsafe_update_src, tuple arguments, members
called on tensors, tensor descriptors, and fp8 decoded exactly."""

import importlib.util
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from triton.runtime.jit import TensorWrapper

import kernel_nb
from kernel_nb.errors import KernelCompileError, KernelError, KernelMemoryError
from tests.engine import kernels as k

HAS_TORCH = importlib.util.find_spec("torch") is not None


def reinterpreted(array, dtype):
    """What triton.reinterpret(tensor, dtype) returns, around a numpy array (Triton's own
    constructor reads torch attributes numpy arrays lack)."""
    wrapper = TensorWrapper.__new__(TensorWrapper)
    wrapper.base, wrapper.dtype = array, dtype
    return wrapper


@triton.jit
def copy_bits_kernel(src_ptr, dst_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets))


@triton.jit
def abs_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.abs(tl.load(x_ptr + offsets)))


def test_reinterpreted_arguments_are_read_as_their_new_type():
    signed = np.array([-1, -128, 5, 0], np.int8)
    out = np.zeros(4, np.int8)
    with kernel_nb.interpret() as session:
        copy_bits_kernel[(1,)](reinterpreted(signed, tl.uint8), reinterpreted(out, tl.uint8), BLOCK=4)
    np.testing.assert_array_equal(out, signed)
    launch = session.trace[0]
    assert [a.dtype for a in launch.args[:2]] == ["uint8", "uint8"]
    assert launch.value(0, "src_ptr") == 0  # pointer records: offsets into the argument


@pytest.mark.parametrize(
    "element, numpy_type",
    [(tl.float8e4nv, ml_dtypes.float8_e4m3fn), (tl.float8e5, ml_dtypes.float8_e5m2), (tl.float8e4b15, None)],
)
def test_fp8_bits_reinterpreted_as_fp8(element, numpy_type):
    bits = np.arange(256, dtype=np.uint8)
    bits[(bits & 0x7F) >= 0x78] = 0  # leaves finite values in every format, as Triton's test does
    bits = bits.view(np.int8)
    out = np.zeros_like(bits)
    with kernel_nb.interpret():
        abs_kernel[(1,)](reinterpreted(bits, element), reinterpreted(out, element), BLOCK=bits.size)
    np.testing.assert_array_equal(out.view(np.uint8), bits.view(np.uint8) & 0x7F)  # abs clears the sign
    if numpy_type is not None:
        assert np.all(out.view(numpy_type).astype(np.float32) >= 0)


def test_reinterpreting_to_another_element_size_counts_elements_of_the_new_size():
    words = np.arange(8, dtype=np.int32)
    out = np.zeros(32, np.uint8)
    with kernel_nb.interpret():
        copy_bits_kernel[(1,)](reinterpreted(words, tl.uint8), out, BLOCK=32)
    np.testing.assert_array_equal(out, words.view(np.uint8))


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")
def test_triton_reinterpret_of_a_torch_tensor():
    import torch

    x = torch.tensor([-3, 7, -128, 127], dtype=torch.int8)
    out = torch.zeros(4, dtype=torch.int8)
    with kernel_nb.interpret():
        copy_bits_kernel[(1,)](triton.reinterpret(x, tl.uint8), triton.reinterpret(out, tl.uint8), BLOCK=4)
    assert out.tolist() == x.tolist()


@triton.jit
def shape_error_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets) + tl.zeros((2 * BLOCK,), tl.float32)
    tl.store(x_ptr + offsets, x)


def test_errors_are_the_classes_triton_raises():
    x = np.zeros(8, np.float32)
    with pytest.raises(triton.CompilationError) as compile_error, kernel_nb.interpret():
        shape_error_kernel[(1,)](x, BLOCK=8)  # the compiler rejects this shape mismatch
    error = compile_error.value
    assert isinstance(error, KernelCompileError) and isinstance(error, triton.runtime.errors.InterpreterError)
    line = shape_error_kernel.fn.__code__.co_firstlineno + 3
    assert str(error).startswith(
        f"shape_error_kernel:{line} pid=(0,0,0): ValueError: Cannot make_shape_compatible"
    )
    with pytest.raises(triton.TritonError) as memory_error, kernel_nb.interpret():
        k.add_kernel_no_mask[(2,)](x, x, x, 8, BLOCK=8)
    assert isinstance(memory_error.value, KernelMemoryError) and isinstance(memory_error.value, IndexError)
    assert not isinstance(memory_error.value, triton.CompilationError)  # a fault at run time on the GPU


def test_a_source_edited_with_unsafe_update_src_is_what_runs():
    kernel = triton.JITFunction(copy_bits_kernel.fn)
    kernel._unsafe_update_src(
        kernel.src.replace("tl.load(src_ptr + offsets)", "tl.load(src_ptr + offsets) * 2")
    )
    x, out = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    with kernel_nb.interpret() as session:
        kernel[(1,)](x, out, BLOCK=4)
    np.testing.assert_array_equal(out, 2 * x)
    assert "* 2" in next(iter(session.trace[0].sources.values())).text
    with kernel_nb.interpret():  # the original function is untouched
        copy_bits_kernel[(1,)](x, out, BLOCK=4)
    np.testing.assert_array_equal(out, x)


class Tile(NamedTuple):
    ptr: object
    shape: tuple
    stride: tuple


@triton.jit
def tile_kernel(tile, out_ptr):
    offsets = tl.arange(0, 4)
    values = tl.load(tile.ptr + offsets * tile.stride[0]) * tile.shape[0]
    tl.store(out_ptr + offsets, values)


class Shape(tuple):
    """A tuple subclass whose constructor refuses tensors, as torch.Size does."""

    def __new__(cls, items):
        items = tuple(items)
        if not all(isinstance(i, int) for i in items):
            raise TypeError("Shape() takes an iterable of 'int'")
        return super().__new__(cls, items)


def test_named_tuples_and_tuple_subclasses_in_tuple_arguments():
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(4, np.float32)
    with kernel_nb.interpret():
        tile_kernel[(1,)](Tile(x, Shape((3,)), Shape((2,))), out)
    np.testing.assert_array_equal(out, x[::2] * 3)


@triton.jit
def member_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, x.sum())
    tl.store(out_ptr + 1, x.max())


def test_member_functions_without_arguments():
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(2, np.float32)
    with kernel_nb.interpret():
        member_kernel[(1,)](x, out, BLOCK=16)
    assert out.tolist() == [x.sum(), 15.0]


@pytest.mark.skipif(not HAS_TORCH, reason="Triton's TensorDescriptor takes torch tensors")
def test_tensor_descriptor_loads_and_stores():
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def transpose_tile(src, dst):
        tile = src.load([0, 0])
        dst.store([0, 0], tl.trans(tile))

    x = torch.arange(16 * 8, dtype=torch.float32).reshape(16, 8)
    out = torch.zeros((8, 16), dtype=torch.float32)
    with kernel_nb.interpret() as session:
        transpose_tile[(1,)](
            TensorDescriptor.from_tensor(x, [16, 8]), TensorDescriptor.from_tensor(out, [8, 16])
        )
    assert torch.equal(out, x.T)
    launch = session.trace[0]
    events = launch.program(0).events
    assert [(e.kind, e.arg) for e in events] == [("load", "src.base"), ("store", "dst.base")]
    assert launch.buffers["dst.base"].writes.sum() == 128


def test_fp8e5_subnormals_decode_exactly_in_dot_scaled():
    @triton.jit
    def scaled_dot_kernel(a_ptr, b_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        a = tl.load(a_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
        b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
        c = tl.dot_scaled(a, None, "e5m2", b, None, "e5m2")
        tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)

    M = N = K = 16
    a = np.zeros((M, K), np.uint8)
    a[:, 0] = 0x01  # the smallest e5m2 subnormal, 2**-16
    b = np.zeros((K, N), np.uint8)
    b[0, :] = 0x3C  # 1.0
    out = np.zeros((M, N), np.float32)
    with kernel_nb.interpret():
        scaled_dot_kernel[(1,)](
            reinterpreted(a, tl.float8e5), reinterpreted(b, tl.float8e5), out, M=M, N=N, K=K
        )
    np.testing.assert_array_equal(out, np.full((M, N), 2.0**-16, np.float32))


@triton.jit
def mx_dot_kernel(
    a_ptr, a_scale_ptr, b_ptr, b_scale_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr
):
    # a: M x K e2m1, two a byte along K; b: K x N e4m3; one e8m0 scale per 32 values of K
    a = tl.load(a_ptr + tl.arange(0, M)[:, None] * (K // 2) + tl.arange(0, K // 2)[None, :])
    b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    a_scale = tl.load(a_scale_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    b_scale = tl.load(b_scale_ptr + tl.arange(0, N)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
    c = tl.dot_scaled(a, a_scale, "e2m1", b, b_scale, "e4m3")
    tl.store(out_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


def test_mx_formats_and_scales_decode_exactly_in_dot_scaled():
    rng = np.random.default_rng(7)
    M, N, K = 16, 16, 64
    nibbles = rng.integers(0, 16, (M, K), dtype=np.uint8)
    packed = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)
    b_bits = rng.integers(0, 256, (K, N), dtype=np.uint8)
    b_bits[(b_bits & 0x7F) == 0x7F] = 0x38  # no NaNs: 1.0 instead
    a_scale = rng.integers(120, 135, (M, K // 32), dtype=np.uint8)
    b_scale = rng.integers(120, 135, (N, K // 32), dtype=np.uint8)
    out = np.zeros((M, N), np.float32)
    with kernel_nb.interpret():
        mx_dot_kernel[(1,)](
            packed, a_scale, reinterpreted(b_bits, tl.float8e4nv), b_scale, out, M=M, N=N, K=K
        )
    # an independent decoding: ml_dtypes' OCP MX types
    a = (nibbles.view(ml_dtypes.float4_e2m1fn).astype(np.float64)) * np.repeat(
        a_scale.view(ml_dtypes.float8_e8m0fnu).astype(np.float64), 32, axis=1
    )
    b = (
        b_bits.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        * np.repeat(b_scale.view(ml_dtypes.float8_e8m0fnu).astype(np.float64), 32, axis=1).T
    )
    expected = a @ b
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())


def test_kernel_errors_still_carry_kernel_nb_location():
    x = np.zeros(8, np.float32)
    with pytest.raises(KernelError) as caught, kernel_nb.interpret():
        shape_error_kernel[(1,)](x, BLOCK=8)
    assert caught.value.kernel == "shape_error_kernel" and caught.value.pid == (0, 0, 0)
    assert caught.value.launch is not None and caught.value.launch.status == "error"
