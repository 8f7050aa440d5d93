"""GPU-faithful arithmetic on numpy arrays: tf32 dots, bf16/fp8 through ml_dtypes, saturating casts.

Triton's interpreter keeps bf16 and fp8 values as their raw bits (uint16 / uint8) and computes on
those bits as integers; it truncates fp32 → bf16 where the GPU rounds to nearest even; its tl.dot
is exact fp32 whatever `input_precision` says; and float → int casts wrap where NVIDIA GPUs
saturate. The functions here compute what an NVIDIA GPU computes (values measured on an H200 are
kept as test fixtures in tests/engine/fixtures/).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

# Triton element type name → the ml_dtypes type whose bits the interpreter stores.
BITS_TYPES: dict[str, type] = {
    "bf16": ml_dtypes.bfloat16,
    "fp8e4nv": ml_dtypes.float8_e4m3fn,
    "fp8e5": ml_dtypes.float8_e5m2,
    "fp8e4b8": ml_dtypes.float8_e4m3fnuz,
    "fp8e5b16": ml_dtypes.float8_e5m2fnuz,
    "fp8e4b15": ml_dtypes.float8_e4m3b11fnuz,
}


def is_bits_float(type_name: str) -> bool:
    """True for the float types the interpreter stores as raw bits."""
    return type_name in BITS_TYPES


def decode(bits: np.ndarray, type_name: str) -> np.ndarray:
    """Raw bf16/fp8 bits → float32 values."""
    return np.asarray(bits).view(BITS_TYPES[type_name]).astype(np.float32)


def encode(values: np.ndarray, type_name: str) -> np.ndarray:
    """float values → raw bf16/fp8 bits as the GPU converts them (measured on an H200).

    Round to nearest even. bf16 keeps Inf and writes NaN as 0x7FFF. fp8 conversions saturate:
    out-of-range values and ±Inf become the largest finite value of that sign, NaN is 0x7F.
    """
    target = BITS_TYPES[type_name]
    x = np.asarray(values, dtype=np.float32)
    nan = np.isnan(x)
    if np.dtype(target).itemsize == 2:
        bits = x.astype(target).view(np.uint16)
        return np.where(nan, np.uint16(0x7FFF), bits).astype(np.uint16)
    largest = float(ml_dtypes.finfo(target).max)
    with np.errstate(invalid="ignore"):
        clipped = np.clip(x, -largest, largest)
    bits = clipped.astype(target).view(np.uint8)
    return np.where(nan, np.uint8(0x7F), bits).astype(np.uint8)


def truncate_to_tf32(x: np.ndarray) -> np.ndarray:
    """fp32 → tf32 as the tensor cores read fp32 operands: the low 13 mantissa bits dropped.

    Measured on an H200: a 64x64x64 tf32 tl.dot matches truncated operands to 2e-7 (fp32
    summation order), where round-to-nearest operands are off by 9e-4.
    """
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    return np.where(special, bits, bits & np.uint32(0xFFFFE000)).view(np.float32)


def dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray, precision: str) -> np.ndarray:
    """acc + a @ b as tl.dot computes it on an NVIDIA GPU for fp32 operands.

    Args:
        a, b: float32 operands (already decoded from bf16/fp8 bits where needed).
        acc: the accumulator (float32 or the output type).
        precision: "tf32" (the default: operands truncated to tf32, products exact, fp32 sums),
            "tf32x3" (each operand split into a tf32 high part and a tf32 low part, three
            products: close to fp32), or "ieee" (fp32).
    """
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    if precision == "tf32":
        product = np.matmul(truncate_to_tf32(a), truncate_to_tf32(b), dtype=np.float32)
    elif precision == "tf32x3":
        a_hi, b_hi = truncate_to_tf32(a), truncate_to_tf32(b)
        a_lo, b_lo = truncate_to_tf32(a - a_hi), truncate_to_tf32(b - b_hi)
        product = (
            np.matmul(a_hi, b_lo, dtype=np.float32) + np.matmul(a_lo, b_hi, dtype=np.float32)
        ) + np.matmul(a_hi, b_hi, dtype=np.float32)
    else:
        product = np.matmul(a, b, dtype=np.float32)
    addend = acc.astype(np.float32, copy=False)
    fits = np.broadcast_shapes(product.shape, addend.shape) == product.shape
    product = np.add(product, addend, out=product if fits else None)
    return product if acc.dtype == np.float32 else product.astype(acc.dtype)


def float_to_int(values: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Float → integer as compiled Triton computes it on an NVIDIA GPU (measured on an H200).

    Truncate toward zero and saturate at the type's range, NaN → 0; except that 8-bit targets
    saturate at the 16-bit range and keep the low byte (1e10 → int8 -1, 256.0 → uint8 0), and
    NaN → int64 gives INT64_MIN.

    Returns:
        The converted values and a mask of the lanes whose result is backend-dependent
        (NaN or out of the target's range: C and LLVM leave them undefined).
    """
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    x = np.asarray(values, dtype=np.float64)
    if dtype.itemsize == 1:
        wide, _ = float_to_int(x, np.dtype(np.int16 if dtype.kind == "i" else np.uint16))
        truncated = np.trunc(x)
        undefined = np.isnan(x) | (truncated < info.min) | (truncated > info.max)
        return wide.astype(dtype), undefined
    nan = np.isnan(x)
    truncated = np.trunc(np.where(nan, 0.0, x))
    out_of_range = (truncated < info.min) | (truncated > info.max)
    result = np.clip(truncated, info.min, info.max)
    # float64 cannot hold int64's max exactly: saturate those lanes by hand
    converted = np.where(out_of_range, 0, result).astype(dtype)
    converted = np.where(truncated > info.max, info.max, converted)
    converted = np.where(truncated < info.min, info.min, converted).astype(dtype)
    if dtype == np.int64:
        converted = np.where(nan, info.min, converted).astype(dtype)
    return converted, nan | out_of_range
