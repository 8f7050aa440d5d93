"""Measure, on a CUDA GPU, every float → int cast the language has, on NaN, infinities, values out of
each target's range and values at its edges.

    python tests/gpu/make_cast_fixtures.py OUT.npz

Sources fp16, bf16, fp32, fp64 (and fp8e4nv, fp8e5 where the compiler takes the cast); targets
int8 … int64 and uint8 … uint64. Inputs and outputs travel as raw bytes (`triton.reinterpret`), so
no framework's dtype support decides what can be measured. The result is committed as
tests/engine/fixtures/gpu_casts.npz and checked on the CPU by tests/engine/test_cast_fixture.py:
`inputs_<src>` holds the source values as bits (uint of the source's width), `cast_<src>_<dst>` what
the GPU made of them.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import torch
import triton
import triton.language as tl

SOURCES = {
    "float16": (np.float16, np.uint16, tl.float16),
    "bfloat16": (ml_dtypes.bfloat16, np.uint16, tl.bfloat16),
    "float32": (np.float32, np.uint32, tl.float32),
    "float64": (np.float64, np.uint64, tl.float64),
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, np.uint8, tl.float8e4nv),
    "float8_e5m2": (ml_dtypes.float8_e5m2, np.uint8, tl.float8e5),
}
TARGETS = {
    "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
}  # fmt: skip


def values() -> np.ndarray:
    """NaN, infinities, signed zeros, fractions, and each integer type's edges and just past them."""
    edges = []
    for bits in (8, 16, 32, 64):
        for top in (2.0 ** (bits - 1), 2.0**bits):
            edges += [top - 1, top - 0.5, top, top + 1, -top, -top - 1, -top + 0.5]
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, -2.5,
               1e-30, -1e-30, 1e10, -1e10, 1e20, -1e20, 1e30, -1e30, 3e38, -3e38, 1e300, -1e300]  # fmt: skip
    rng = np.random.default_rng(7)
    spread = rng.standard_normal(256) * 10.0 ** rng.integers(0, 20, 256)
    return np.array(special + edges + list(spread), np.float64)


@triton.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(DST), mask=offs < n)


def _device(raw: np.ndarray, ty: tl.dtype) -> triton.TensorWrapper:
    return triton.reinterpret(torch.from_numpy(raw.view(np.uint8).copy()).cuda(), ty)


def main(path: str) -> None:
    out: dict[str, np.ndarray] = {}
    base = values()
    block = triton.next_power_of_2(base.size)
    for src, (np_type, bits_type, src_ty) in SOURCES.items():
        with np.errstate(all="ignore"):
            x = base.astype(np_type)
        out[f"inputs_{src}"] = x.view(bits_type)
        for dst, dst_ty in TARGETS.items():
            itemsize = np.dtype(dst).itemsize
            result = torch.zeros(x.size * itemsize, dtype=torch.uint8, device="cuda")
            try:
                cast_kernel[(1,)](
                    _device(x, src_ty), triton.reinterpret(result, dst_ty), x.size, DST=dst_ty, BLOCK=block
                )
                torch.cuda.synchronize()
            except Exception as exc:  # a cast the compiler refuses: recorded as not measured
                print(f"{src} -> {dst}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
                continue
            out[f"cast_{src}_{dst}"] = result.cpu().numpy().view(np.dtype(dst))
    out["device"] = np.array(torch.cuda.get_device_name())
    out["triton"] = np.array(triton.__version__)
    np.savez(path, **out)
    print(f"{len([k for k in out if k.startswith('cast_')])} casts measured on {out['device']}")


if __name__ == "__main__":
    main(sys.argv[1])
