"""Kernels that fail part-way through a launch, each with a clean twin: the launch's error as a finding."""

import triton
import triton.language as tl


@triton.jit
def row_blocks_kernel(src_ptr, dst_ptr, n_cols, stride_row, stride_col, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for j in range(0, tl.cdiv(n_cols, BLOCK)):
        cols = j * BLOCK + tl.arange(0, BLOCK)
        src = src_ptr + row * stride_row + cols * stride_col
        tile = tl.load(src, mask=cols < n_cols)
        tl.store(dst_ptr + row * n_cols + cols, tile, mask=cols < n_cols)


@triton.jit
def _checked(x, limit):
    tl.device_assert(x < limit, "x below the limit")
    return x


@triton.jit
def assert_in_loop_kernel(x_ptr, out_ptr, limit, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offsets)
    for _step in range(STEPS):
        acc = acc + 1.0
        tl.device_assert(acc < limit, "acc stays below the limit")
    tl.store(out_ptr + offsets, acc)


@triton.jit
def helper_in_loop_kernel(x_ptr, out_ptr, limit, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offsets)
    for _step in range(STEPS):
        acc = _checked(acc + 1.0, limit)
    tl.store(out_ptr + offsets, acc)


@triton.jit
def raising_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = x + tl.zeros((2 * BLOCK,), tl.float32)
    tl.store(out_ptr + offsets, y)
