"""Kernels of the divergence tests (CPU and GPU): loops, helpers, 1-D to 3-D values, planted bugs."""

import inspect

import triton
import triton.language as tl


@triton.jit
def scale_row(x, factor):
    scaled = x * factor
    return scaled


@triton.jit
def rows_kernel(x_ptr, out_ptr, n_cols, factor, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for step in range(STEPS):
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        acc += scale_row(x, factor + step)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + row * n_cols + cols, acc / total, mask=mask)


@triton.jit
def shapes_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    pid = tl.program_id(0)
    i = tl.arange(0, A)[:, None, None]
    j = tl.arange(0, B)[None, :, None]
    k = tl.arange(0, C)[None, None, :]
    cube = (i * 100 + j * 10 + k + pid * 1000).to(tl.float32)
    plane = tl.sum(cube, axis=2)
    line = tl.max(plane, axis=1)
    flag = line > 150.0
    scalar = tl.sum(line, axis=0)
    tl.store(out_ptr + pid * A + tl.arange(0, A), tl.where(flag, line, scalar))


@triton.jit
def dtypes_kernel(x_ptr, h_ptr, b_ptr, i_ptr, u_ptr, d_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    h = x.to(tl.float16)
    b = x.to(tl.bfloat16)
    f8 = x.to(tl.float8e4nv)
    back = f8.to(tl.float32)
    i = x.to(tl.int32)
    w = i.to(tl.int64) * 3
    small = (i & 255).to(tl.uint8)
    d = x.to(tl.float64) * 2.0
    tl.store(h_ptr + offs, h)
    tl.store(b_ptr + offs, b)
    tl.store(i_ptr + offs, (w + back.to(tl.int64)).to(tl.int32))
    tl.store(u_ptr + offs, small)
    tl.store(d_ptr + offs, d)


@triton.jit
def race_kernel(buf_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    # program p reads block p-1, which program p-1 writes only after a long loop: the serial
    # interpreter runs p-1 first and sees its result, the GPU runs them together and sees the input
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    left = tl.load(buf_ptr + ((pid + tl.num_programs(0) - 1) % tl.num_programs(0)) * BLOCK + offs)
    acc = left + 1.0
    for _ in range(n_iter):
        acc = acc * 0.5 + 1.0
    tl.store(buf_ptr + pid * BLOCK + offs, acc)
    tl.store(out_ptr + pid * BLOCK + offs, left)


@triton.jit
def nan_cast_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x * 2.0
    n = y.to(tl.int32)
    tl.store(out_ptr + offs, n + 1)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr, IEEE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK + tl.arange(0, BLOCK)
    offs_n = pid_n * BLOCK + tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * (BLOCK * tl.num_programs(1)) + offs_n[None, :])
        if IEEE:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * (BLOCK * tl.num_programs(1)) + offs_n[None, :], acc)


@triton.jit
def sites_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # every kind of site: a tuple unpacked, an annotated assignment, +=, a loop variable
    lo, hi = tl.program_id(0) * BLOCK, (tl.program_id(0) + 1) * BLOCK
    offs: tl.tensor = lo + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < hi)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in range(3):
        acc += x * i
    y = acc * 0.5
    tl.store(out_ptr + offs, y)


def _line(kernel, text):
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


# The lines the planted bugs are on (found by their text, so editing this file keeps them right).
LINES = {
    "race_left": _line(race_kernel, "left = tl.load"),
    "nan_cast": _line(nan_cast_kernel, "n = y.to(tl.int32)"),
    "dot_tf32": _line(dot_kernel, "acc += tl.dot(a, b)\n"),
    "dot_ieee": _line(dot_kernel, 'input_precision="ieee"'),
    "rows_scaled": _line(scale_row, "scaled = x * factor"),
    "rows_call": _line(rows_kernel, "acc += scale_row"),
}
