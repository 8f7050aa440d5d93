"""Measure, on a CUDA GPU, the values the interpreter's GPU-faithful numerics must reproduce.

    python tests/gpu/make_numerics_fixtures.py OUT.npz

Compiled Triton kernels on torch CUDA tensors: float → int casts of special values, fp32 → bf16 /
fp8 conversions, bf16 arithmetic and a tf32 tl.dot. The result is committed as
tests/engine/fixtures/gpu_numerics.npz and checked on the CPU by tests/engine/test_numerics.py.
"""

import sys

import numpy as np
import torch
import triton
import triton.language as tl

SPECIALS = np.array(
    [
        1e10,
        np.nan,
        np.inf,
        -1e10,
        -np.inf,
        3.7,
        -3.7,
        -1.0,
        255.5,
        256.0,
        2147483520.0,
        -2147483648.0,
        0.0,
        -0.0,
    ],
    dtype=np.float32,
)
INT_TYPES = {"int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
             "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32}  # fmt: skip
TORCH_INT = {"int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
             "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32}  # fmt: skip


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(DST), mask=offs < n)


@triton.jit
def bf16_math_kernel(a_ptr, b_ptr, add_ptr, mul_ptr, exp_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs, mask=offs < n)
    b = tl.load(b_ptr + offs, mask=offs < n)
    tl.store(add_ptr + offs, a + b, mask=offs < n)
    tl.store(mul_ptr + offs, a * b, mask=offs < n)
    tl.store(exp_ptr + offs, tl.exp(a.to(tl.float32)).to(tl.bfloat16), mask=offs < n)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PRECISION: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision=PRECISION))


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def bf16_scan_kernel(
    x_ptr, scan_ptr, sum_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, REVERSE: tl.constexpr
):
    # a bf16 scan and reduction with a combine the language does not promote to fp32 (tl.cumsum of
    # triton < 3.7 does): how the GPU rounds bf16 steps of a scan and of a reduction
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(scan_ptr + offs, tl.associative_scan(x, AXIS, _add, reverse=REVERSE))
    total = tl.reduce(x, AXIS, _add)
    if AXIS == 0:
        tl.store(sum_ptr + tl.arange(0, N), total)
    else:
        tl.store(sum_ptr + tl.arange(0, M), total)  # fmt: skip


BF16_SCANS = (((8, 32), 1, True), ((32, 32), 0, False), ((2, 1024), 1, False), ((1024, 2), 0, True))


def main(path: str) -> None:
    out = {"specials": SPECIALS}
    x = torch.from_numpy(SPECIALS).cuda()
    for name, ty in INT_TYPES.items():
        dst = torch.zeros(SPECIALS.size, dtype=TORCH_INT[name], device="cuda")
        cast_kernel[(1,)](x, dst, SPECIALS.size, DST=ty, BLOCK=16)
        out[f"cast_{name}"] = dst.cpu().numpy()
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.standard_normal(200).astype(np.float32) * 10, SPECIALS])
    out["convert_inputs"] = values
    xv = torch.from_numpy(values).cuda()
    for name, ty, tty in (("bf16", tl.bfloat16, torch.bfloat16), ("fp8e4nv", tl.float8e4nv, torch.float8_e4m3fn),
                          ("fp8e5", tl.float8e5, torch.float8_e5m2), ("fp16", tl.float16, torch.float16)):  # fmt: skip
        dst = torch.zeros(values.size, dtype=tty, device="cuda")
        cast_kernel[(1,)](xv, dst, values.size, DST=ty, BLOCK=256)
        out[f"convert_{name}"] = dst.view(torch.uint8 if tty.itemsize == 1 else torch.int16).cpu().numpy()
    a = torch.from_numpy(rng.standard_normal(256).astype(np.float32) * 4).cuda().to(torch.bfloat16)
    b = torch.from_numpy(rng.standard_normal(256).astype(np.float32) * 4).cuda().to(torch.bfloat16)
    results = [torch.zeros(256, dtype=torch.bfloat16, device="cuda") for _ in range(3)]
    bf16_math_kernel[(1,)](a, b, *results, 256, BLOCK=256)
    out["bf16_a"], out["bf16_b"] = (t.view(torch.int16).cpu().numpy() for t in (a, b))
    for label, t in zip(("add", "mul", "exp"), results):
        out[f"bf16_{label}"] = t.view(torch.int16).cpu().numpy()
    n = 64
    da = rng.standard_normal((n, n)).astype(np.float32)
    db = rng.standard_normal((n, n)).astype(np.float32)
    out["dot_a"], out["dot_b"] = da, db
    # the same operands with infinities and NaNs: split precisions zero their low parts' NaNs
    sa, sb = da.copy(), db.copy()
    sa[3, 5], sa[7, :4], sb[2, 9], sb[11, 11] = np.inf, -np.inf, np.inf, np.nan
    out["dot_special_a"], out["dot_special_b"] = sa, sb
    for precision in ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6"):
        for label, (pa, pb) in (("dot", (da, db)), ("dot_special", (sa, sb))):
            c = torch.zeros((n, n), device="cuda")
            dot_kernel[(1,)](
                torch.from_numpy(pa).cuda(), torch.from_numpy(pb).cuda(), c, N=n, PRECISION=precision
            )
            out[f"{label}_{precision}"] = c.cpu().numpy()
    for i, ((m, n), axis, reverse) in enumerate(BF16_SCANS):
        xs = torch.from_numpy(rng.standard_normal((m, n)).astype(np.float32)).cuda().to(torch.bfloat16)
        scan = torch.zeros((m, n), dtype=torch.bfloat16, device="cuda")
        total = torch.zeros(n if axis == 0 else m, dtype=torch.bfloat16, device="cuda")
        bf16_scan_kernel[(1,)](xs, scan, total, M=m, N=n, AXIS=axis, REVERSE=reverse)
        out[f"bf16_scan{i}_x"] = xs.view(torch.int16).cpu().numpy()
        out[f"bf16_scan{i}_scan"] = scan.view(torch.int16).cpu().numpy()
        out[f"bf16_scan{i}_sum"] = total.view(torch.int16).cpu().numpy()
        out[f"bf16_scan{i}_how"] = np.array([m, n, axis, int(reverse)])
    out["device"] = np.array(torch.cuda.get_device_name())
    out["triton"] = np.array(triton.__version__)
    np.savez(path, **out)
    for key in sorted(out):
        if key.startswith("cast_"):
            print(key, out[key].tolist())


if __name__ == "__main__":
    main(sys.argv[1])
