"""What an out-of-bounds refusal tells: the mask when some active lanes leave the argument, the
offsets when every one does, and elements of an n-D argument as indices of its shape."""

import inspect

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb


def _line(kernel, text):
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _refused(launch):
    with kernel_nb.interpret(), pytest.raises(kernel_nb.KernelMemoryError) as info:
        launch()
    return str(info.value)


@triton.jit
def transpose_kernel(
    x_ptr,
    out_ptr,
    M,
    N,
    stride_xm,
    stride_xn,
    stride_om,
    stride_on,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * stride_xn
    x = tl.load(x_ptrs, mask=mask)
    out_ptrs = out_ptr + offs_n[:, None] * stride_om + offs_m[None, :] * stride_on
    tl.store(out_ptrs, tl.trans(x), mask=tl.trans(mask))


@triton.jit
def rows_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] <= M) & (offs_n[None, :] < N)  # <= M: one row too many
    offsets = offs_m[:, None] * N + offs_n[None, :]
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets <= n  # <= n: one element too many
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def strided_copy_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets * stride, mask=mask), mask=mask)


def test_a_transpose_with_swapped_strides_names_the_offsets_not_the_mask():
    m, n = 32, 512
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    out = np.zeros((n, m), np.float32)
    line = _line(transpose_kernel, "x = tl.load")
    # x's strides passed in the wrong order: (1, 512) for (512, 1); the mask is right
    message = _refused(
        lambda: transpose_kernel[(1, n // 32)](x, out, m, n, 1, n, m, 1, BLOCK_M=32, BLOCK_N=32)
    )
    assert message == (
        f"transpose_kernel:{line} pid=(0,1,0): tl.load of x_ptr reads x_ptr[32:64, 0:32] but x_ptr has shape "
        "(32, 512) (1024 of 1024 active lanes out of bounds); the offsets are wrong, not the mask: "
        "`offs_m[:, None] * stride_xm` (stride_xm = 1) and `offs_n[None, :] * stride_xn` (stride_xn = 512) "
        "step the tile's axes by (1, 512) elements, while x_ptr's strides are (512, 1); check which stride "
        "goes with which index"
    )
    assert not out.any()


def test_the_transpose_with_its_strides_in_order_runs():
    m, n = 32, 512
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    out = np.zeros((n, m), np.float32)
    with kernel_nb.interpret() as session:
        transpose_kernel[(1, n // 32)](x, out, m, n, n, 1, m, 1, BLOCK_M=32, BLOCK_N=32)
    np.testing.assert_array_equal(out, x.T)
    assert session.trace[0].findings == []


def test_an_off_by_one_mask_names_the_lanes_it_lets_through():
    x = np.ones((30, 16), np.float32)
    out = np.zeros_like(x)
    line = _line(rows_kernel, "tl.store")
    assert _refused(lambda: rows_kernel[(1,)](x, out, 30, 16, BLOCK_M=32, BLOCK_N=16)) == (
        f"rows_kernel:{line} pid=(0,0,0): tl.load of x_ptr reads x_ptr[30, 0:16] but x_ptr has shape (30, 16) "
        "(16 of 496 active lanes out of bounds: lanes[30, 0:16]); the mask lets these lanes through; check "
        "the mask's bound"
    )


def test_a_1d_argument_keeps_flat_element_offsets():
    x = np.ones(100, np.float32)
    line = _line(copy_kernel, "tl.store")
    assert _refused(lambda: copy_kernel[(1,)](x, np.zeros_like(x), 100, BLOCK=128)) == (
        f"copy_kernel:{line} pid=(0,0,0): tl.load of x_ptr reads element 100 but x_ptr has 100 "
        "(1 of 101 active lanes out of bounds: lanes[100]); the mask lets these lanes through; check the "
        "mask's bound"
    )


def test_every_lane_of_a_1d_access_out_names_the_stride_term():
    x = np.ones(256, np.float32)
    line = _line(strided_copy_kernel, "tl.store")
    # program 1's offsets 64..127 times 4 all lie past x's 256 elements, though the mask holds
    message = _refused(lambda: strided_copy_kernel[(2,)](x, np.zeros(128, np.float32), 128, 4, BLOCK=64))
    assert message == (
        f"strided_copy_kernel:{line} pid=(1,0,0): tl.load of x_ptr reads elements [256, 509) but x_ptr has "
        "256 (64 of 64 active lanes out of bounds); the offsets are wrong, not the mask: the offsets come "
        "from `offsets * stride` (stride = 4)"
    )


def test_a_column_major_argument_is_named_by_its_own_strides():
    x = np.asfortranarray(np.ones((8, 8), np.float32))  # strides (1, 8) in elements
    line = _line(strided_copy_kernel, "tl.store")
    message = _refused(lambda: strided_copy_kernel[(1,)](x, np.zeros(64, np.float32), 64, 2, BLOCK=64))
    # offsets 2 * (32..63) = 64..126 lie past x's 64 elements: every other row of columns 8 to 15
    assert message == (
        f"strided_copy_kernel:{line} pid=(0,0,0): tl.load of x_ptr reads x_ptr[0:7:2, 8:16] but x_ptr has "
        "shape (8, 8) (32 of 64 active lanes out of bounds: lanes[32:64]); the mask lets these lanes "
        "through; check the mask's bound"
    )


def test_a_store_into_a_read_only_2d_array_names_its_elements_by_index():
    x = np.ones((4, 16), np.float32)
    out = np.zeros((4, 16), np.float32)
    out.flags.writeable = False
    line = _line(rows_kernel, "tl.store")
    assert _refused(lambda: rows_kernel[(1,)](x, out, 1, 16, BLOCK_M=2, BLOCK_N=16)) == (
        f"rows_kernel:{line} pid=(0,0,0): tl.store of out_ptr writes out_ptr[0:2, 0:16] but out_ptr is "
        "read-only (its array may not be written); pass a writable array, e.g. a copy"
    )


def test_a_block_wholly_past_the_end_under_a_mask_may_be_the_mask_s_bound():
    x = np.ones(128, np.float32)
    line = _line(strided_copy_kernel, "tl.store")
    # n = 200 for arrays of 128: program 2's block, 128..191, is let through whole
    message = _refused(lambda: strided_copy_kernel[(4,)](x, np.zeros_like(x), 200, 1, BLOCK=64))
    assert message == (
        f"strided_copy_kernel:{line} pid=(2,0,0): tl.load of x_ptr reads elements [128, 192) but x_ptr has "
        "128 (64 of 64 active lanes out of bounds); the offsets are wrong, or the mask's bound reaches past "
        "x_ptr's end (a program whose block lies wholly past it needs every lane masked off): the offsets "
        "come from `offsets * stride` (stride = 1)"
    )


def test_swapped_strides_that_put_only_some_lanes_out_name_the_mask_and_the_offsets():
    m, n = 40, 64
    x = np.arange(m * n, dtype=np.float32).reshape(m, n)
    out = np.zeros((n, m), np.float32)
    line = _line(transpose_kernel, "x = tl.load")
    # x's strides swapped on a (40, 64) array: the tile at pid (1,0,0) reaches rows 40:48 of 40
    message = _refused(lambda: transpose_kernel[(2, 2)](x, out, m, n, 1, n, m, 1, BLOCK_M=32, BLOCK_N=32))
    assert message.startswith(f"transpose_kernel:{line} pid=(")
    assert message.endswith(
        "the mask lets these lanes through; check the mask's bound; or the offsets: "
        "`offs_m[:, None] * stride_xm` (stride_xm = 1) and `offs_n[None, :] * stride_xn` (stride_xn = 64) "
        "step the tile's axes by (1, 64) elements while x_ptr's strides are (64, 1); unless the tile is read "
        "transposed on purpose, check which stride goes with which index"
    )
    assert not out.any()


def test_an_off_by_one_mask_on_a_tile_in_stride_order_names_only_the_mask():
    x = np.ones((30, 16), np.float32)
    message = _refused(lambda: rows_kernel[(1,)](x, np.zeros_like(x), 30, 16, BLOCK_M=32, BLOCK_N=16))
    assert message.endswith("the mask lets these lanes through; check the mask's bound")
