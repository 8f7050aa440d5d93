"""Kernels with planted bugs, to be written out as standalone reproducers.

Each bug is on a line of its own that the tests rewrite in the written file to fix it.
"""

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice

OFFSET = tl.constexpr(4.0)  # read by _shifted_sqrt: a global constexpr the reproducer must carry
SCALE = tl.constexpr(2.0)  # read by shifted_sqrt_kernel, a kernel the helper is not


@triton.jit
def block_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + tl.program_id(0), tl.sum(x, axis=0))


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr + offsets, x)


@triton.jit
def doubled_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    # the lanes past the end load what lies there, and the masked store never keeps it
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, x * 2, mask=mask)


@triton.jit
def difference_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    # lane 0 of program 0 loads the element before x's start, which the store leaves out
    previous = tl.load(x_ptr + offsets - 1)
    tl.store(out_ptr + offsets, x - previous, mask=mask & (offsets > 0))


@triton.jit
def strided_rows_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    # the columns past n_cols of the last row lie past x's span; the other rows' lie inside it
    x = tl.load(x_ptr + row * stride_row + cols * stride_col)
    tl.store(out_ptr + row * n_cols + cols, x, mask=cols < n_cols)


@triton.jit
def window_kernel(x_ptr, out_ptr, start, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    # a window that starts past x's end: every lane reads thousands of elements past it
    x = tl.load(x_ptr + start + offsets, mask=mask)
    tl.store(out_ptr + offsets, x, mask=mask)


@triton.jit
def row_log_kernel(x_ptr, out_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_row + cols * stride_col, mask=cols < n_cols, other=1.0)
    y = tl.log(x)
    tl.store(out_ptr + row * n_cols + cols, y, mask=cols < n_cols)


@triton.jit
def checked_sqrt_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.device_assert(x >= 0, "x holds no negative value")
    tl.store(out_ptr + offsets, tl.sqrt(x), mask=offsets < n)


@triton.jit
def _shifted_sqrt(x):
    root = tl.sqrt(x - OFFSET)
    return root


@triton.jit
def shifted_sqrt_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=OFFSET)
    y = _shifted_sqrt(x) * SCALE
    tl.store(out_ptr + offsets, y, mask=offsets < n)


@triton.jit
def tanh_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr + offsets, libdevice.tanh(x))


@triton.jit
def scaled_index_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0)
    tl.store(out_ptr + offsets, x * 1000000, mask=offsets < n)


@triton.jit
def last_writer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    total = tl.sum(tl.load(x_ptr + offsets), axis=0)
    tl.store(out_ptr, total)


WEIGHT = np.float32(0.5)  # a numpy scalar: no standalone file can recreate it as it is


@triton.jit
def weighted_copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.store(out_ptr + offsets, x * WEIGHT)
