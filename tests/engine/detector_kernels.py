"""Kernels with one planted bug each, and their clean twins."""

import triton
import triton.language as tl


@triton.jit
def log_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = tl.log(x)  # NaN for negative x
    z = y * 2.0
    tl.store(out_ptr + offs, z, mask=offs < n)


@triton.jit
def log_kernel_clean(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = tl.log(tl.abs(x) + 1.0)
    z = y * 2.0
    tl.store(out_ptr + offs, z, mask=offs < n)


@triton.jit
def exp_kernel(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    e = tl.exp(x * SCALE)
    tl.store(out_ptr + offs, e, mask=offs < n)


@triton.jit
def masked_row_softmax(x_ptr, out_ptr, n_cols, valid, BLOCK: tl.constexpr):
    """Only the first `valid` columns take part; with valid == 0 every lane is masked: -inf - -inf."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    scores = tl.where(cols < valid, x, float("-inf"))
    row_max = tl.max(scores, axis=0)
    shifted = scores - row_max
    p = tl.exp(shifted)
    tl.store(out_ptr + row * n_cols + cols, p / tl.sum(p, axis=0), mask=cols < n_cols)


@triton.jit
def scaled_offsets_kernel(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    big = offs * SCALE  # int32: overflows for large SCALE
    tl.store(out_ptr + offs, (big % 7).to(tl.float32), mask=offs < n)


@triton.jit
def scaled_offsets_kernel_clean(x_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    big = offs.to(tl.int64) * SCALE
    tl.store(out_ptr + offs, (big % 7).to(tl.float32), mask=offs < n)


@triton.jit
def divide_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n, other=0)
    b = tl.load(b_ptr + offs, mask=offs < n, other=1)
    q = a // b
    tl.store(out_ptr + offs, q, mask=offs < n)


@triton.jit
def shift_kernel(a_ptr, out_ptr, n, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n, other=0)
    s = a << SHIFT
    tl.store(out_ptr + offs, s, mask=offs < n)


@triton.jit
def racy_write_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)  # every program writes the same block
    pid = tl.program_id(0)
    tl.store(out_ptr + offs, offs + pid)


@triton.jit
def overlapping_tiles_kernel(out_ptr, STRIDE: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr,
                             STEP: tl.constexpr):  # fmt: skip
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rows = pid_m * ROWS + tl.arange(0, ROWS)
    cols = pid_n * STEP + tl.arange(0, COLS)  # STEP < COLS: a program's tile overlaps its neighbour's
    tl.store(out_ptr + rows[:, None] * STRIDE + cols[None, :], tl.full((ROWS, COLS), 0, tl.int32) + pid_n)


@triton.jit
def race_free_write_kernel(out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs + pid)


@triton.jit
def carry_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """Each program adds the previous program's output: a dependency the GPU does not order."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    prev = tl.load(out_ptr + offs - BLOCK, mask=(offs >= BLOCK), other=0.0)
    tl.store(out_ptr + offs, x + prev)


@triton.jit
def carry_kernel_clean(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    prev = tl.load(x_ptr + offs - BLOCK, mask=(offs >= BLOCK), other=0.0)
    tl.store(out_ptr + offs, x + prev)


@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(out_ptr + offs, mask=offs < n)  # reads the output before anything wrote it
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, acc + x, mask=offs < n)


@triton.jit
def accumulate_kernel_clean(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x, mask=offs < n)
    acc = tl.load(out_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, acc + x, mask=offs < n)
