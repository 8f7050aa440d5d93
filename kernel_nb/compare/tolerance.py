"""The tolerance policy: how far the GPU may be from the interpreter, per buffer dtype.

The policy (`default_tolerance`), per element, with `cpu` the interpreter's value as reference::

    |gpu - cpu| <= atol + atol_of_max * max|cpu| + rtol * |cpu|

| buffer dtype | rtol | atol | atol_of_max | why |
| --- | --- | --- | --- | --- |
| integers, bool | 0 | 0 | 0 | integer arithmetic is exact on both sides |
| float64 | 1e-7 | 1e-7 | 0 | torch.testing's default; FMA contraction and summation order |
| float32 | 1e-5 | 1e-6 | 1e-6 | FMA contraction, summation order, approximate exp/log on the GPU |
| float32, tf32 dots | 5e-3 | 1e-5 | 5e-3 | fp32 `tl.dot` rounds its inputs to tf32 (10-bit mantissa) on the GPU |
| float16 | 2e-3 | 1e-5 | 1e-3 | 2 ulp of fp16 |
| bfloat16 | 1.6e-2 | 1e-5 | 8e-3 | 2 ulp of bf16 |
| float8 e4m3 / e5m2 | 0.25 / 0.5 | 2^-9 / 2^-16 | 0.125 / 0.25 | 2 ulp; the smallest subnormal |

`atol_of_max` scales the absolute floor with the buffer's magnitude: an output that is a sum of many
products (a dot, a reduction) has absolute rounding errors proportional to its inputs, so elements
that cancel to near zero would fail any purely relative test. An explicit `atol` (``--atol``) replaces
the whole absolute part; an explicit `rtol` (``--rtol``) replaces rtol.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from kernel_nb.trace import Tolerance

EXACT = Tolerance(rtol=0.0, atol=0.0, reason="integers: exact")
_FLOAT_DEFAULTS: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-7, atol=1e-7, reason="fp64"),
    "float32": Tolerance(rtol=1e-5, atol=1e-6, atol_of_max=1e-6, reason="fp32"),
    "float16": Tolerance(rtol=2e-3, atol=1e-5, atol_of_max=1e-3, reason="fp16: 2 ulp"),
    "bfloat16": Tolerance(rtol=1.6e-2, atol=1e-5, atol_of_max=8e-3, reason="bf16: 2 ulp"),
    "float8_e4m3fn": Tolerance(rtol=0.25, atol=2.0**-9, atol_of_max=0.125, reason="fp8e4m3: 2 ulp"),
    "float8_e5m2": Tolerance(rtol=0.5, atol=2.0**-16, atol_of_max=0.25, reason="fp8e5m2: 2 ulp"),
}
TF32 = Tolerance(rtol=5e-3, atol=1e-5, atol_of_max=5e-3, reason="fp32 with tf32 dots")


def default_tolerance(dtype: np.dtype | str, *, tf32: bool = False) -> Tolerance:
    """The policy's tolerance for a buffer of `dtype` (see the module docstring).

    Args:
        dtype: the buffer's element type (numpy or ml_dtypes).
        tf32: the kernel has fp32 `tl.dot`s that the GPU runs in tf32 (its default precision).
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return EXACT
    if tf32 and dtype.name == "float32":
        return TF32
    default = _FLOAT_DEFAULTS.get(dtype.name)
    if default is None:
        raise ValueError(f"no tolerance policy for dtype {dtype}; pass rtol and atol")
    return default


def tolerance_for(
    dtype: np.dtype | str, *, tf32: bool = False, rtol: float | None = None, atol: float | None = None
) -> Tolerance:
    """The default tolerance for `dtype`, with the user's overrides applied."""
    tolerance = default_tolerance(dtype, tf32=tf32)
    changes: dict[str, object] = {}
    if rtol is not None:
        changes["rtol"] = rtol
    if atol is not None:
        changes["atol"], changes["atol_of_max"] = atol, 0.0
    if changes:
        tolerance = replace(tolerance, **changes, reason=f"{tolerance.reason}, overridden")  # type: ignore[arg-type]
    return tolerance


def uses_tf32_dots(ttir: str) -> bool:
    """Whether a kernel's TTIR has a dot that the GPU runs with tf32 inputs: Triton's default precision
    on fp32 operands. Every dot carries `inputPrecision = tf32` by default, fp16 and bf16 ones too,
    which the GPU multiplies exactly: the operand types decide."""
    return any(
        (dot := _TF32_DOT.search(line)) is not None and dot["a"] == dot["b"] == "f32"
        for line in ttir.splitlines()
    )


# `%4 = tt.dot %a, %b, %c, inputPrecision = tf32 : tensor<32x32xf32> * tensor<32x32xf32> -> ...`
_TF32_DOT = re.compile(
    r"tt\.dot .*inputPrecision = tf32\b(?!x).*: tensor<[^>]*x(?P<a>\w+)> \* tensor<[^>]*x(?P<b>\w+)>"
)
