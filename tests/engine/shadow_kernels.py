"""Kernels for the fp64 shadow tests and demos: precision lost on purpose, and clean twins."""

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gram_distances(x_ptr, y_ptr, out_ptr, M, N: tl.constexpr, D: tl.constexpr, BM: tl.constexpr):
    """Squared distances through the Gram matrix: |x|^2 + |y|^2 - 2 x.y, the dot as tf32 (the
    GPU default for fp32): on points far from the origin and close to each other, it cancels."""
    pid = tl.program_id(0)
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    ys = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=rows[:, None] < M, other=0.0)
    y = tl.load(y_ptr + ys[:, None] * D + cols[None, :])
    na = tl.sum(x * x, axis=1)
    nb = tl.sum(y * y, axis=1)
    g = tl.dot(x, tl.trans(y))
    d = na[:, None] + nb[None, :] - 2 * g
    tl.store(out_ptr + rows[:, None] * N + ys[None, :], d, mask=rows[:, None] < M)


@triton.jit
def centered_distances(x_ptr, y_ptr, out_ptr, M, N: tl.constexpr, D: tl.constexpr, BM: tl.constexpr):
    """The twin: the differences first, then their squares summed in fp32 (no cancellation)."""
    pid = tl.program_id(0)
    rows = pid * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    ys = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * D + cols[None, :], mask=rows[:, None] < M, other=0.0)
    y = tl.load(y_ptr + ys[:, None] * D + cols[None, :])
    diff = x[:, None, :] - y[None, :, :]
    d = tl.sum(diff * diff, axis=2)
    tl.store(out_ptr + rows[:, None] * N + ys[None, :], d, mask=rows[:, None] < M)


@triton.jit
def chain(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Elementwise fp32 arithmetic, a bf16 round trip, libdevice and tl.exp, a reduction."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    s = x * y + x / y
    h = s.to(tl.bfloat16)
    back = h.to(tl.float32)
    e = tl.exp(back * 0.01) + libdevice.log1p(x)
    total = tl.sum(tl.where(mask, e, 0.0), axis=0)
    k = offs * 3 + 1
    f = k.to(tl.float32)
    tl.store(out_ptr + offs, e + total * 0.0 + f * 0.0, mask=mask)


@triton.jit
def ragged_sum(x_ptr, lens_ptr, out_ptr, STRIDE: tl.constexpr, BLOCK: tl.constexpr, ACC: tl.constexpr):
    """Per program a row of its own length, summed a block at a time in ACC: the trip counts
    differ from program to program; a bf16 accumulator loses bits (past 512, adding values near 1
    leaves it where it is), an fp32 one does not."""
    pid = tl.program_id(0)
    length = tl.load(lens_ptr + pid)
    acc = tl.zeros((BLOCK,), ACC)
    for start in range(0, length, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + pid * STRIDE + offs, mask=offs < length, other=0.0)
        acc += v.to(ACC)
    tl.store(out_ptr + pid, tl.sum(acc.to(tl.float32), axis=0))


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr):
    """One tile of a @ b, the dot at PRECISION ("tf32" is the GPU's default for fp32)."""
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, input_precision=PRECISION)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@triton.jit
def split_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each program adds its block's sum into out[0] with an atomic (a split reduction)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    tl.atomic_add(out_ptr, part)
    tl.atomic_max(out_ptr + 1, part)


@triton.jit
def abs_fp8(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """tl.abs of fp8 clears the sign bit: an operation on the encoding the shadow cannot follow."""
    offs = tl.arange(0, BLOCK)
    y = tl.abs(tl.load(x_ptr + offs))
    tl.store(out_ptr + offs, y)


@triton.jit
def exact_ops(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    """Operations that round nothing (maximum, where, tl.max) on values that carry errors."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    p = x * y
    q = x / y
    top = tl.maximum(p, q)
    picked = tl.where(x > y, p, q)
    whole = tl.where(offs < BLOCK, p * 1.0, q)
    clipped = tl.maximum(x * y, 0.0)
    m = tl.max(q, axis=0)
    larger = tl.maximum(x, y)
    twice = larger * 3.0
    tl.store(out_ptr + offs, top + picked + whole + clipped + m + twice)


@triton.jit
def compares(x_ptr, y_ptr, less_ptr, nonzero_ptr, BLOCK: tl.constexpr):
    """Booleans made from floats: a comparison (which the interpreter types as its operands) and a
    cast to bool."""
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    less = x < y
    nonzero = (x - y).to(tl.int1)
    tl.store(less_ptr + offs, less)
    tl.store(nonzero_ptr + offs, nonzero)
