"""Kernels of the memory bench (a module of their own: the stock interpreter reads TRITON_INTERPRET
when they are decorated, so its child process imports them after setting it)."""

import triton
import triton.language as tl


@triton.jit
def chain_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """50 statements over a block: each a value of BLOCK lanes that a name holds."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v0 = tl.load(x_ptr + offs, mask=mask)
    v1 = v0 * 1.0001 + 1.0
    v2 = v1 * 1.0001 + 2.0
    v3 = v2 * 1.0001 + 3.0
    v4 = v3 * 1.0001 + 4.0
    v5 = v4 * 1.0001 + 5.0
    v6 = v5 * 1.0001 + 6.0
    v7 = v6 * 1.0001 + 7.0
    v8 = v7 * 1.0001 + 8.0
    v9 = v8 * 1.0001 + 9.0
    v10 = v9 * 1.0001 + 10.0
    v11 = v10 * 1.0001 + 11.0
    v12 = v11 * 1.0001 + 12.0
    v13 = v12 * 1.0001 + 13.0
    v14 = v13 * 1.0001 + 14.0
    v15 = v14 * 1.0001 + 15.0
    v16 = v15 * 1.0001 + 16.0
    v17 = v16 * 1.0001 + 17.0
    v18 = v17 * 1.0001 + 18.0
    v19 = v18 * 1.0001 + 19.0
    v20 = v19 * 1.0001 + 20.0
    v21 = v20 * 1.0001 + 21.0
    v22 = v21 * 1.0001 + 22.0
    v23 = v22 * 1.0001 + 23.0
    v24 = v23 * 1.0001 + 24.0
    v25 = v24 * 1.0001 + 25.0
    v26 = v25 * 1.0001 + 26.0
    v27 = v26 * 1.0001 + 27.0
    v28 = v27 * 1.0001 + 28.0
    v29 = v28 * 1.0001 + 29.0
    v30 = v29 * 1.0001 + 30.0
    v31 = v30 * 1.0001 + 31.0
    v32 = v31 * 1.0001 + 32.0
    v33 = v32 * 1.0001 + 33.0
    v34 = v33 * 1.0001 + 34.0
    v35 = v34 * 1.0001 + 35.0
    v36 = v35 * 1.0001 + 36.0
    v37 = v36 * 1.0001 + 37.0
    v38 = v37 * 1.0001 + 38.0
    v39 = v38 * 1.0001 + 39.0
    v40 = v39 * 1.0001 + 40.0
    v41 = v40 * 1.0001 + 41.0
    v42 = v41 * 1.0001 + 42.0
    v43 = v42 * 1.0001 + 43.0
    v44 = v43 * 1.0001 + 44.0
    v45 = v44 * 1.0001 + 45.0
    v46 = v45 * 1.0001 + 46.0
    tl.store(out_ptr + offs, v46, mask=mask)


@triton.jit
def noop_kernel(x_ptr):
    """Does nothing: what a program costs with no work."""
    pass


@triton.jit
def loop_kernel(out_ptr, STEPS: tl.constexpr):
    """Two records per iteration (the loop variable and acc), STEPS iterations per program."""
    acc = tl.program_id(0) * 0.0
    for _i in range(STEPS):
        acc += 1.0
    tl.store(out_ptr + tl.program_id(0), acc)
