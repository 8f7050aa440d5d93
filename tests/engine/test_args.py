"""Arguments as the kernel receives them: values no parameter can take are refused before the
launch, integers are typed as Triton's launcher types them, and arrays in the other byte order
are computed on native copies and written back in the caller's order."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from tests.engine import kernels as k


def _launch_refused(x_ptr, n, message):
    y = np.ones(300, np.float32)
    out = np.full(300, 7.0, np.float32)
    with pytest.raises(kernel_nb.LaunchArgumentError) as info, kernel_nb.interpret() as session:
        k.add_kernel[(3,)](x_ptr, y, out, n, BLOCK=128)
    assert str(info.value) == message
    assert session.launches == []
    assert (out == 7).all()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            [1.0] * 300,
            "add_kernel: argument x_ptr: a list cannot be passed to a kernel; pass an array (np.asarray(x)) "
            "for a pointer, or a tuple",
        ),
        (
            "abc",
            "add_kernel: argument x_ptr: a str cannot be passed to a kernel; pass an int, a float or an "
            "array, or make the parameter a tl.constexpr",
        ),
        (
            {},
            "add_kernel: argument x_ptr: a dict cannot be passed to a kernel; pass an int, a float or an "
            "array, or make the parameter a tl.constexpr",
        ),
        (
            1 + 2j,
            "add_kernel: argument x_ptr: a complex cannot be passed to a kernel; pass its real and "
            "imaginary parts as two floats",
        ),
    ],
)
def test_values_no_parameter_takes_are_refused_naming_the_argument(value, message):
    _launch_refused(value, 300, message)


@pytest.mark.parametrize("n", [2**70, 2**64, -(2**63) - 1])
def test_integers_beyond_64_bits_are_refused(n):
    _launch_refused(
        np.ones(300, np.float32),
        n,
        f"add_kernel: argument n: {n} does not fit in 64 bits; Triton passes integers from -2**63 to "
        "2**64-1 (as int32, int64 or uint64): pass one in that range",
    )


@triton.jit
def minus_kernel(out_ptr, n):
    tl.store(out_ptr, (n - 3000000001).to(tl.int64))


@triton.jit
def unsigned_kernel(out_ptr, n):
    tl.store(out_ptr, (n >> 63).to(tl.int64))


def test_integers_are_typed_as_the_launcher_types_them():
    """From 2**31 to 2**32 an int is an int64 argument (a uint32 would wrap n - 3000000001), and
    from 2**63 on a uint64 (its shift is logical)."""
    out = np.zeros(1, np.int64)
    with kernel_nb.interpret():
        minus_kernel[(1,)](out, 3000000000)
        assert out[0] == -1
        unsigned_kernel[(1,)](out, 2**64 - 1)
        assert out[0] == 1


@pytest.mark.parametrize("dtype", [">f4", ">i4", ">f8", ">i2"])
def test_big_endian_arrays_are_computed_as_their_values_and_written_back_in_their_order(dtype):
    x = np.arange(300).astype(dtype)
    y = np.full(300, 2).astype("<" + dtype[1:])
    out = np.zeros(300, dtype)
    with kernel_nb.interpret() as session:
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    assert out.dtype == np.dtype(dtype)
    assert (out == np.arange(300) + 2).all()
    assert (session.launches[0].snapshot["x_ptr"] == np.arange(300)).all()


def test_overlapping_big_endian_views_share_one_native_copy():
    s = np.arange(20).astype(">i4")
    with kernel_nb.interpret():
        k.add_kernel[(1,)](s[:10], s[10:], s[5:15], 10, BLOCK=16)
    expected = np.arange(20)
    expected[5:15] = np.arange(10) + np.arange(10, 20)
    assert (s == expected).all()
