"""Kernels whose results depend on numerics the interpreter must get right."""

import triton
import triton.language as tl


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = x.to(DST)
    tl.store(out_ptr + offs, y, mask=offs < n)


@triton.jit
def bf16_math_kernel(a_ptr, b_ptr, add_ptr, mul_ptr, exp_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n)
    b = tl.load(b_ptr + offs, mask=offs < n)
    total = a + b
    product = a * b
    tl.store(add_ptr + offs, total, mask=offs < n)
    tl.store(mul_ptr + offs, product, mask=offs < n)
    tl.store(exp_ptr + offs, tl.exp(a.to(tl.float32)).to(tl.bfloat16), mask=offs < n)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision=PRECISION))


@triton.jit
def default_dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + r[:, None] * N + r[None, :], c)
