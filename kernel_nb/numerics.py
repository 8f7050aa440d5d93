"""GPU-faithful arithmetic on numpy arrays: tf32 dots, bf16/fp8 through ml_dtypes, saturating casts.

Triton's interpreter keeps bf16 and fp8 values as their raw bits (uint16 / uint8) and computes on
those bits as integers; it truncates fp32 → bf16 where the GPU rounds to nearest even; its tl.dot
is exact fp32 whatever `input_precision` says; and float → int casts wrap where NVIDIA GPUs
saturate. The functions here compute what an NVIDIA GPU computes (values measured on an H200 are
kept as test fixtures in tests/engine/fixtures/).

The numpy types of Triton's element types (`NUMPY_TYPES`) are here too, for the probe and the
comparisons as for the arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

import numpy as np


def ml_dtypes() -> ModuleType:
    """The ml_dtypes module, imported when first asked for: its import registers a dozen types and
    their casts with numpy and takes about 0.5 s, which a kernel of numpy's own types never needs."""
    import ml_dtypes as module

    return module


class _Types(Mapping[str, type]):
    """Triton element type name → numpy type, ml_dtypes' types looked up when first read."""

    def __init__(self, plain: dict[str, type], ml_names: dict[str, str]) -> None:
        self._plain, self._ml_names = plain, ml_names

    def __getitem__(self, name: str) -> type:
        found = self._plain.get(name)
        if found is not None:
            return found
        if name in self._ml_names:
            return getattr(ml_dtypes(), self._ml_names[name])
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:  # without the import
        return name in self._plain or name in self._ml_names

    def __iter__(self) -> Iterator[str]:
        return iter([*self._plain, *self._ml_names])

    def __len__(self) -> int:
        return len(self._plain) + len(self._ml_names)

    def numpy_name(self, name: str) -> str:
        """numpy's name of the type `name` maps to, without the import."""
        return self._ml_names[name] if name in self._ml_names else np.dtype(self._plain[name]).name


# Triton's names of the types ml_dtypes holds → ml_dtypes' (numpy's) names of those types
_ML_NAMES = {
    "bf16": "bfloat16",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz",
}
# Triton's element type names → the numpy type that holds their values (ml_dtypes for bf16 and
# fp8). The one such table: `engine.triton_compat.TL_DTYPES` maps the other way, numpy names to
# Triton's type objects.
NUMPY_TYPES = _Types(
    {
        "int1": np.bool_,
        "int8": np.int8,
        "int16": np.int16,
        "int32": np.int32,
        "int64": np.int64,
        "uint8": np.uint8,
        "uint16": np.uint16,
        "uint32": np.uint32,
        "uint64": np.uint64,
        "fp16": np.float16,
        "fp32": np.float32,
        "fp64": np.float64,
    },
    _ML_NAMES,
)
# Triton element type name → the ml_dtypes type whose bits the interpreter stores.
# fp8e4b15 (exponent bias 15, every encoding finite, 0x80 is -0) has no ml_dtypes type: it is
# e4m3b11fnuz scaled by 2**-4, with 0x80 read as -0 where that type reads NaN
BITS_TYPES = _Types({}, {**_ML_NAMES, "fp8e4b15": "float8_e4m3b11fnuz"})
# numpy's names of the ml_dtypes types, which np.dtype does not know by name until they are imported
_ML_TYPE_NAMES = frozenset(BITS_TYPES.numpy_name(name) for name in BITS_TYPES)
# the ml_dtypes floats that torch tensors hold and comparisons measure in ulps
_COMPARED = frozenset(NUMPY_TYPES.numpy_name(name) for name in ("bf16", "fp8e4nv", "fp8e5"))
_B15_SCALE = np.float32(16.0)


def numpy_dtype(name: str) -> np.dtype:
    """A numpy dtype by its name, ml_dtypes' names ("bfloat16", "float8_e4m3fn", ...) included."""
    return np.dtype(getattr(ml_dtypes(), name) if name in _ML_TYPE_NAMES else name)


def is_float(dtype: np.dtype) -> bool:
    """Whether a buffer of `dtype` is compared as floats: numpy's, bf16 and the two fp8 of torch."""
    return dtype.kind == "f" or dtype.name in _COMPARED


def is_float_name(numpy_name: str) -> bool:
    """`is_float` of the dtype numpy names `numpy_name`, without importing ml_dtypes for it."""
    if numpy_name in _ML_TYPE_NAMES:
        return numpy_name in _COMPARED
    return np.dtype(numpy_name).kind == "f"


def is_bits_float(type_name: str) -> bool:
    """True for the float types the interpreter stores as raw bits."""
    return type_name in BITS_TYPES


def decode(bits: np.ndarray, type_name: str) -> np.ndarray:
    """Raw bf16/fp8 bits → float32 values."""
    raw = np.asarray(bits)
    values = raw.view(BITS_TYPES[type_name]).astype(np.float32)
    if type_name == "fp8e4b15":
        values = np.where(raw.view(np.uint8) == 0x80, np.float32(-0.0), values / _B15_SCALE)
    return values


def encode(values: np.ndarray, type_name: str) -> np.ndarray:
    """float values → raw bf16/fp8 bits as the GPU converts them (measured on an H200).

    Round to nearest even. bf16 keeps Inf and writes NaN as 0x7FFF. fp8 conversions saturate:
    out-of-range values and ±Inf become the largest finite value of that sign, NaN is 0x7F.
    """
    x = np.asarray(values, dtype=np.float32)
    if type_name == "fp8e4b15":
        bits = _encode_as(x * _B15_SCALE, BITS_TYPES[type_name])
        return np.where((bits == 0) & np.signbit(x), np.uint8(0x80), bits).astype(np.uint8)
    return _encode_as(x, BITS_TYPES[type_name])


def _encode_as(x: np.ndarray, target: type) -> np.ndarray:
    nan = np.isnan(x)
    if np.dtype(target).itemsize == 2:
        bits = x.astype(target).view(np.uint16)
        return np.where(nan, np.uint16(0x7FFF), bits).astype(np.uint16)
    largest = float(ml_dtypes().finfo(target).max)
    with np.errstate(invalid="ignore"):
        clipped = np.clip(x, -largest, largest)
    bits = clipped.astype(target).view(np.uint8)
    return np.where(nan, np.uint8(0x7F), bits).astype(np.uint8)


# per float type: the mantissa bits after the leading one, and the smallest normal exponent
_PRECISION: dict[str, tuple[int, int]] = {
    "fp64": (52, -1022),
    "fp32": (23, -126),
    "fp16": (10, -14),
    "bf16": (7, -126),
    "fp8e4nv": (3, -6),
    "fp8e4b8": (3, -7),
    "fp8e4b15": (3, -14),
    "fp8e5": (2, -14),
    "fp8e5b16": (2, -15),
}


# per float type numpy holds: the type, the integer of its width, its exponent field, and the
# spacing of its subnormals
_NATIVE_SPACING = {
    "fp64": (np.float64, np.int64, 0x7FF0000000000000, 2.0**-1074),
    "fp32": (np.float32, np.int32, 0x7F800000, 2.0**-149),
    "fp16": (np.float16, np.int16, 0x7C00, 2.0**-24),
}


def epsilon(type_name: str) -> float:
    """The machine epsilon of a float type by Triton's name ("fp32", "bf16", ...)."""
    return 2.0 ** -_PRECISION.get(type_name, _PRECISION["fp32"])[0]


def ulp(values: np.ndarray, type_name: str) -> np.ndarray:
    """The spacing of `type_name`'s values at each of `values` (any float array): the unit in the
    last place, subnormal spacing below the smallest normal (0 never; NaN at infinities and NaN,
    and where a value lies beyond the type's range). In the type itself for fp16/fp32/fp64, else
    in fp64."""
    native = _NATIVE_SPACING.get(type_name)
    if native is not None:
        return _native_ulp(np.asarray(values), type_name, *native)
    bits, lowest = _PRECISION.get(type_name, _PRECISION["fp32"])
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    _, exponent = np.frexp(magnitude)  # magnitude = m * 2**exponent, m in [0.5, 1)
    exponent = np.where(np.isfinite(magnitude) & (magnitude > 0), exponent - 1, lowest)
    return np.ldexp(1.0, np.maximum(exponent, lowest) - bits)


def _native_ulp(
    values: np.ndarray, type_name: str, kind: Any, width: Any, field: int, tiny: float
) -> np.ndarray:
    """`ulp` in the type itself, from the bits of the values rounded to it: the power of two of a
    value's exponent field times 2**-mantissa bits (exact), the subnormal spacing where that is
    smaller. A few integer passes where np.spacing calls nextafter per element."""
    with np.errstate(over="ignore"):
        rounded = values if values.dtype == kind else values.astype(kind)
    spacing = np.asarray(np.bitwise_and(rounded.view(width), width(field))).view(kind)
    spacing *= kind(2.0 ** -_PRECISION[type_name][0])
    np.maximum(spacing, kind(tiny), out=spacing)
    if np.isinf(spacing.max(initial=0)):  # the exponent field of an infinity or a NaN
        spacing[np.isinf(spacing)] = np.nan
    return spacing


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
            "tf32x3" (each operand split into a tf32 high part and a low part, three products),
            "bf16x3" / "bf16x6" (each operand split into two / three bf16 parts, three / six
            products), or "ieee" (fp32). The split forms follow Triton's F32DotTC pass: the
            partial products of the low parts are summed first, their NaNs (an infinite operand's
            low part) replaced by zero, then the product of the high parts, then `acc`.
    """
    with np.errstate(all="ignore"):  # infinities make NaN products as the tensor cores do, silently
        return _dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32), acc, precision)


def _dot(a: np.ndarray, b: np.ndarray, acc: np.ndarray, precision: str) -> np.ndarray:
    addend = acc.astype(np.float32, copy=False)
    if precision in _SPLIT_PRODUCTS:
        parts, pairs = _SPLIT_PRODUCTS[precision]
        a_parts, b_parts = _split(a, parts, precision), _split(b, parts, precision)
        small = None
        for i, j in pairs:
            term = np.matmul(a_parts[i], b_parts[j], dtype=np.float32)
            small = term if small is None else np.add(small, term, dtype=np.float32)
        assert small is not None
        small = np.where(np.isnan(small), np.float32(0), small)
        product = np.add(small, np.matmul(a_parts[0], b_parts[0], dtype=np.float32), dtype=np.float32)
    elif precision == "tf32":
        product = np.matmul(truncate_to_tf32(a), truncate_to_tf32(b), dtype=np.float32)
    else:
        product = np.matmul(a, b, dtype=np.float32)
    fits = np.broadcast_shapes(product.shape, addend.shape) == product.shape
    product = np.add(product, addend, out=product if fits else None)
    return product if acc.dtype == np.float32 else product.astype(acc.dtype)


# precision → (parts per operand, the (a part, b part) products before hi x hi, in Triton's order)
_SPLIT_PRODUCTS = {
    "tf32x3": (2, ((1, 0), (0, 1))),
    "bf16x3": (2, ((1, 0), (0, 1))),
    "bf16x6": (3, ((1, 1), (2, 0), (0, 2), (1, 0), (0, 1))),
}


def _split(x: np.ndarray, parts: int, precision: str) -> list[np.ndarray]:
    """x as `parts` values whose sum approximates it: each the rest so far rounded to the part's type
    (tf32x3's high part by cvt.rna, round to nearest with ties away; bf16 parts by truncf, to nearest
    even); the tensor cores then read each tf32 part by truncation."""
    out, rest = [], x
    for i in range(parts):
        if precision == "tf32x3":
            part = round_to_tf32(rest) if i == 0 else truncate_to_tf32(rest)
        else:
            part = rest.astype(ml_dtypes().bfloat16).astype(np.float32)
        out.append(part)
        with np.errstate(invalid="ignore"):
            rest = np.subtract(rest, part, dtype=np.float32)
    return out


def round_to_tf32(x: np.ndarray) -> np.ndarray:
    """fp32 → tf32 by cvt.rna (round to nearest, ties away from zero), kept as fp32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    rounded = (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)
    return np.where(special, bits, rounded).view(np.float32)


def float_to_int(values: np.ndarray, dtype: np.dtype, source: str = "fp32") -> tuple[np.ndarray, np.ndarray]:
    """Float → integer as compiled Triton computes it on an NVIDIA GPU (measured on an H200:
    tests/engine/fixtures/gpu_casts.npz).

    Truncate toward zero and saturate at the type's range; except that 8-bit targets saturate at
    the 16-bit range and keep the low byte (1e10 → int8 -1, 256.0 → uint8 0). NaN gives what the
    conversion instruction gives: from fp64 (`source`, a Triton type name) the integer with only the
    top bit set (-32768 for int16, 32768 for uint16, 2**31 for uint32 ...), from narrower floats 0;
    a 64-bit target takes the top bit from every source (int64 INT64_MIN, uint64 2**63).

    Returns:
        The converted values and a mask of the lanes whose result is backend-dependent
        (NaN or out of the target's range: C and LLVM leave them undefined).
    """
    dtype = np.dtype(dtype)
    info = np.iinfo(dtype)
    x = np.asarray(values, dtype=np.float64)
    if dtype.itemsize == 1:
        wide, _ = float_to_int(x, np.dtype(np.int16 if dtype.kind == "i" else np.uint16), source)
        truncated = np.trunc(x)
        undefined = np.isnan(x) | (truncated < info.min) | (truncated > info.max)
        return wide.astype(dtype), undefined
    nan = np.isnan(x)
    truncated = np.trunc(np.where(nan, 0.0, x))
    # the bounds as powers of two, which float64 holds exactly (float(INT64_MAX) rounds up to 2**63)
    bits = 8 * dtype.itemsize
    above = truncated >= 2.0 ** (bits - 1 if dtype.kind == "i" else bits)
    below = truncated < (-(2.0 ** (bits - 1)) if dtype.kind == "i" else 0.0)
    inside = ~(above | below)
    converted = np.where(inside, truncated, 0).astype(dtype)
    converted[above] = info.max
    converted[below] = info.min
    top_bit = source == "fp64" or bits == 64
    converted[nan] = np.array(1 << (bits - 1), np.uint64).astype(dtype) if top_bit else 0
    return converted, nan | above | below
