"""Correctly rounded arithmetic in every IEEE rounding mode, on numpy arrays.

CUDA's `_rn/_rz/_ru/_rd` intrinsics (add, sub, mul, fma, div, rcp, sqrt, conversions) are exact:
IEEE-754 rounding of the infinitely precise result in the named direction. numpy rounds to nearest
only, so each operation here finds the nearest result R and the sign of the exact value minus R,
and steps one ulp when the mode asks for it:

- fp32 operations run in fp64, where the exact result is a pair `hi + lo` (the product of two fp32
  values is exact in fp64; TwoSum and Dekker's TwoProduct give the error of a sum or a product).
  The pair is rounded to odd in fp64 (`hi` with its last bit forced to 1 when `lo != 0`), and since
  53 >= 24 + 2 bits, rounding that value to fp32 in any mode rounds the exact value (Boldo and
  Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to
  odd", IEEE TC 2008).
- fp64 operations scale their operands to mantissas in [0.5, 1) so that TwoProduct cannot
  underflow or overflow, and recover the residual's sign from the scaled operands. fma renormalises
  the three-term exact value to non-overlapping form and decides its rounding exactly; the rare
  elements whose result is an fp64 subnormal, or whose renormalisation did not settle, are rounded
  with `fractions.Fraction` (exact rational arithmetic, one element at a time).

Flush-to-zero is the caller's business (`ftz32`): these functions are IEEE-754 with subnormals.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np

Mode = Literal["rn", "rz", "rd", "ru"]
F32 = np.float32
F64 = np.float64
_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitting constant for fp64
_TINY32 = float(np.finfo(F32).tiny)


def ftz32(x: np.ndarray) -> np.ndarray:
    """fp32 subnormals to zero of the same sign (what every `.ftz` instruction does)."""
    x = np.asarray(x, dtype=F32)
    return np.where(np.abs(x) < _TINY32, np.copysign(F32(0), x), x).astype(F32)


def two_sum(a: np.ndarray | float, b: np.ndarray | float) -> tuple[Any, Any]:
    """s + e == a + b exactly, s = fl(a + b) (Knuth); e is NaN where s is not finite."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def two_prod(a: np.ndarray | float, b: np.ndarray | float) -> tuple[Any, Any]:
    """p + e == a * b exactly when |a|, |b| < 2**995 and |a*b| >= 2**-969 (Dekker, Veltkamp)."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah = ca - (ca - a)
    bh = cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _sign(x: np.ndarray) -> np.ndarray:
    return np.sign(np.nan_to_num(x, nan=0.0)).astype(np.int8)


def to_odd(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """hi + lo rounded to odd in fp64, given hi = fl(hi + lo): the neighbour with an odd last bit."""
    even = (hi.view(np.uint64) & np.uint64(1)) == 0
    bump = (lo != 0) & even & np.isfinite(hi)
    return np.where(bump, np.nextafter(hi, np.where(lo > 0, np.inf, -np.inf)), hi)


def f64_to_f32(x: np.ndarray, mode: Mode) -> np.ndarray:
    """Round fp64 values to fp32 in `mode` (exact: x - fp32(x) is representable in fp64)."""
    x = np.asarray(x, dtype=F64)
    r = x.astype(F32)
    if mode == "rn":
        return r
    over = np.isinf(r) & np.isfinite(x)
    d = np.where(over, 0.0, x - r.astype(F64))
    return _step(r, d, mode, over, x, F32)


def _step(
    r: np.ndarray, d: np.ndarray, mode: Mode, over: np.ndarray, x_sign: np.ndarray, dtype: type
) -> np.ndarray:
    """Directed rounding from the nearest value `r` and the sign of (exact - r) in `d`.

    `over` marks finite results that rounded to ±Inf; RZ and the direction away from the overflow
    give the largest finite value instead (IEEE-754 7.4).
    """
    big = dtype(np.finfo(dtype).max)
    inf = dtype(np.inf)
    if mode == "ru":
        r = np.where(d > 0, np.nextafter(r, inf), r)
        r = np.where(over & (x_sign < 0), -big, r)
    elif mode == "rd":
        r = np.where(d < 0, np.nextafter(r, -inf), r)
        r = np.where(over & (x_sign > 0), big, r)
    elif mode == "rz":
        toward = ((r > 0) & (d < 0)) | ((r < 0) & (d > 0))
        r = np.where(toward, np.nextafter(r, dtype(0)), r)
        r = np.where(over, np.copysign(big, x_sign), r)
    return r.astype(dtype)


def pair_to_f32(hi: np.ndarray, lo: np.ndarray, mode: Mode) -> np.ndarray:
    """The exact value hi + lo (hi = fl64(hi + lo)) rounded to fp32 in `mode`."""
    lo = np.where(np.isfinite(hi), np.nan_to_num(lo, nan=0.0), 0.0)
    return f64_to_f32(to_odd(hi, lo), mode)


def _zero_sum_sign(a: np.ndarray, b: np.ndarray, r: np.ndarray, mode: Mode, exact_zero: np.ndarray):
    """IEEE's sign of an exact zero sum: +0 unless both addends are -0, or -0 in round-down."""
    if mode != "rd":
        return r
    with np.errstate(invalid="ignore"):
        rd_zero = -((-a) + (-b))  # -0 unless both addends are +0
    return np.where(exact_zero, rd_zero.astype(r.dtype), r)


# --- fp32 ---------------------------------------------------------------------------------------


def add32(a: np.ndarray, b: np.ndarray, mode: Mode) -> np.ndarray:
    """a + b in fp32 (TwoSum in fp64 is exact for fp32 operands)."""
    a64, b64 = a.astype(F64), b.astype(F64)
    hi, lo = two_sum(a64, b64)
    r = pair_to_f32(hi, lo, mode)
    return _zero_sum_sign(a64, b64, r, mode, (hi == 0) & (lo == 0))


def mul32(a: np.ndarray, b: np.ndarray, mode: Mode) -> np.ndarray:
    """a * b in fp32."""
    return f64_to_f32(a.astype(F64) * b.astype(F64), mode)  # 24 + 24 bits: exact in fp64


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: Mode) -> np.ndarray:
    """a * b + c in fp32 with one rounding: the fp64 product is exact, TwoSum adds c exactly."""
    p, c64 = a.astype(F64) * b.astype(F64), c.astype(F64)
    hi, lo = two_sum(p, c64)
    r = pair_to_f32(hi, lo, mode)
    return _zero_sum_sign(p, c64, r, mode, (hi == 0) & (lo == 0))


def div32(a: np.ndarray, b: np.ndarray, mode: Mode) -> np.ndarray:
    """a / b in fp32: q = fl64(a/b), and a - q*b (TwoProduct, then Sterbenz) signs the residual."""
    a64, b64 = a.astype(F64), b.astype(F64)
    q = a64 / b64
    ok = np.isfinite(q) & (q != 0) & np.isfinite(b64)
    qs, bs = np.where(ok, q, 1.0), np.where(ok, b64, 1.0)
    ph, pl = two_prod(qs, bs)  # q*b ~ a: a - ph is exact (Sterbenz)
    residual = ((np.where(ok, a64, 1.0) - ph) - pl) * np.sign(bs)
    return pair_to_f32(q, np.where(ok, residual, 0.0), mode)


def sqrt32(a: np.ndarray, mode: Mode) -> np.ndarray:
    """sqrt(a) in fp32: s = fl64(sqrt a), and a - s*s (exactly) signs the residual."""
    a64 = a.astype(F64)
    s = np.sqrt(a64)
    ok = np.isfinite(s) & (s > 0)
    ss = np.where(ok, s, 1.0)
    ph, pl = two_prod(ss, ss)
    residual = (np.where(ok, a64, 1.0) - ph) - pl
    return pair_to_f32(s, np.where(ok, residual, 0.0), mode)


# --- fp64 ---------------------------------------------------------------------------------------


def _directed64(r: np.ndarray, d: np.ndarray, mode: Mode, finite_inputs: np.ndarray) -> np.ndarray:
    """fp64 directed rounding from the nearest result `r` and the residual's sign `d`."""
    if mode == "rn":
        return r
    over = np.isinf(r) & finite_inputs
    return _step(r, np.where(over, 0, d), mode, over, np.sign(r), F64)


def add64(a: np.ndarray, b: np.ndarray, mode: Mode) -> np.ndarray:
    """a + b in fp64: TwoSum's error term is the residual (exact, subnormals included)."""
    s, e = two_sum(a, b)
    finite = np.isfinite(a) & np.isfinite(b)
    r = _directed64(s, np.where(np.isfinite(s), _sign(e), 0), mode, finite)
    return _zero_sum_sign(a, b, r, mode, (s == 0) & (np.nan_to_num(e) == 0))


def mul64(a: np.ndarray, b: np.ndarray, mode: Mode) -> np.ndarray:
    """a * b in fp64: TwoProduct of the mantissas (never under- or overflows) against the nearest
    result scaled back to them gives the residual's sign, also for subnormal results."""
    r = a * b
    ok = np.isfinite(r) & (r != 0) | ((r == 0) & (a != 0) & (b != 0) & np.isfinite(a) & np.isfinite(b))
    ma, ea = np.frexp(np.where(ok, a, 0.5))
    mb, eb = np.frexp(np.where(ok, b, 0.5))
    ph, pl = two_prod(ma, mb)  # exact: ma*mb in [0.25, 1)
    scaled = np.ldexp(np.where(ok, r, 0.0), -(ea + eb))  # exact: undoes the scaling
    d = _sign((ph - scaled) + pl)
    return _directed64(r, np.where(ok, d, 0), mode, np.isfinite(a) & np.isfinite(b))


def div64(a: np.ndarray, b: np.ndarray, mode: Mode) -> np.ndarray:
    """a / b in fp64: the nearest quotient scaled to the mantissas' quotient, times b's mantissa
    (TwoProduct), against a's mantissa signs the residual."""
    r = a / b
    ok = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
    ma, ea = np.frexp(np.where(ok, a, 0.5))
    mb, eb = np.frexp(np.where(ok, b, 0.5))
    scaled = np.ldexp(np.where(ok & np.isfinite(r), r, 1.0), -(ea - eb))  # ~ ma/mb, exact
    ph, pl = two_prod(scaled, mb)
    d = _sign(((ma - ph) - pl) * np.sign(mb))
    return _directed64(r, np.where(ok & np.isfinite(r), d, 0), mode, ok)


def rcp64(a: np.ndarray, mode: Mode) -> np.ndarray:
    """1 / a in fp64."""
    return div64(np.ones_like(a), a, mode)


def sqrt64(a: np.ndarray, mode: Mode) -> np.ndarray:
    """sqrt(a) in fp64: the scaled root squared (TwoProduct) against the scaled argument."""
    r = np.sqrt(a)
    ok = np.isfinite(a) & (a > 0)
    m, e = np.frexp(np.where(ok, a, 0.5))
    m, e = np.where(e % 2 == 1, m * 2, m), np.where(e % 2 == 1, e - 1, e)  # even exponent
    scaled = np.ldexp(np.where(ok, r, 0.5), -(e // 2))
    ph, pl = two_prod(scaled, scaled)
    d = _sign((m - ph) - pl)
    return _directed64(r, np.where(ok, d, 0), mode, ok)


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: Mode) -> np.ndarray:
    """a*b + c with one rounding (fp64)."""
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    general = finite & (a != 0) & (b != 0) & (c != 0)
    # Specials: IEEE's a*b + c where a*b is exact (a or b is 0, Inf or NaN), c when c is not finite.
    p = a * b
    out = np.where(np.isfinite(a) & np.isfinite(b) & ~np.isfinite(c), c, p + c)
    out = np.where(finite & (c == 0), mul64(a, b, mode), out)
    zero_product = finite & ((a == 0) | (b == 0))
    out = np.where(zero_product, _zero_sum_sign(p, c, p + c, mode, zero_product & (c == 0)), out)
    if not general.any():
        return out
    index = np.flatnonzero(general)
    ga, gb, gc = a.ravel()[index], b.ravel()[index], c.ravel()[index]
    r, ok = _fma_general(ga, gb, gc, mode)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        r[bad] = [_fma_exact(x, y, z, mode) for x, y, z in zip(ga[bad], gb[bad], gc[bad])]
    flat = out.ravel().copy()
    flat[index] = r
    return flat.reshape(out.shape)


def _fma_general(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: Mode):
    """Finite nonzero a, b, c: the rounded a*b + c and a mask of the elements it is sure about."""
    ma, ea = np.frexp(a)
    mb, eb = np.frexp(b)
    mc, ec = np.frexp(c)
    ph, pl = two_prod(ma, mb)
    k = ea + eb
    top = np.maximum(k, ec)
    # A term more than 2**-200 below the other only decides the rounding by its sign (it is
    # smaller than every rounding boundary's distance): keep it as a sticky ±2**-300.
    sticky = np.ldexp(1.0, -300)
    far_p, far_c = k - top < -200, ec - top < -200
    x1 = np.where(far_p, np.copysign(sticky, ph), np.ldexp(ph, np.maximum(k - top, -200)))
    x2 = np.where(far_p, 0.0, np.ldexp(pl, np.maximum(k - top, -200)))
    x3 = np.where(far_c, np.copysign(sticky, mc), np.ldexp(mc, np.maximum(ec - top, -200)))
    s, t3 = two_sum(x2, x3)
    y0, t2 = two_sum(x1, s)
    y1, y2 = two_sum(t2, t3)
    settled = np.zeros(a.shape, dtype=bool)
    for _ in range(6):  # renormalise until y0 = fl(y0 + y1) and y1 = fl(y1 + y2) both hold
        n0, v = two_sum(y0, y1)
        n1, n2 = two_sum(v, y2)
        settled = (n0 == y0) & (n1 == y1) & (n2 == y2)
        y0, y1, y2 = n0, n1, n2
        if settled.all():
            break
    # Now x = y0 + y1 + y2 with |y2| <= ulp(y1)/2: y0 is the nearest value unless y1 sits exactly
    # on the half-way point and y2 pushes past it (ties of y0 + y1 already went to even).
    toward = np.where(y1 > 0, np.inf, -np.inf)
    half_gap = np.abs(np.nextafter(y0, toward) - y0) / 2
    past = (np.abs(y1) == half_gap) & (y2 != 0) & (_sign(y2) == _sign(y1))
    r = np.where(past, np.nextafter(y0, toward), y0)
    d = np.where(past, -_sign(y1), np.where(y1 != 0, _sign(y1), _sign(y2)))
    result = np.ldexp(r, top)
    normal = np.abs(result) >= np.finfo(F64).tiny
    result = _directed64(result, np.where(np.isinf(result), 0, d), mode, np.ones(a.shape, bool))
    return result, settled & (normal | np.isinf(np.ldexp(r, top)))


def _fma_exact(a: float, b: float, c: float, mode: Mode) -> float:
    value = Fraction(a) * Fraction(b) + Fraction(c)
    if value == 0:
        return -0.0 if mode == "rd" else 0.0
    return round_fraction(value, F64, mode)


def round_fraction(value: Fraction, dtype: type, mode: Mode) -> float:
    """An exact rational rounded to fp32 or fp64 in `mode`, one element at a time (fma64's rare
    subnormal results)."""
    info = np.finfo(dtype)
    big = Fraction(float(info.max))
    if abs(value) > big:
        # Past the largest finite value: ±Inf, unless the mode rounds toward the finite side (and
        # round-to-nearest keeps max below max + half an ulp).
        ulp = Fraction(2) ** (int(info.maxexp) - int(info.nmant) - 1)
        positive = value > 0
        to_inf = {
            "rn": abs(value) >= big + ulp / 2,
            "rz": False,
            "ru": positive,
            "rd": not positive,
        }[mode]
        magnitude = math.inf if to_inf else float(info.max)
        return magnitude if positive else -magnitude
    try:
        guess = dtype(float(value))
    except OverflowError:
        guess = dtype(math.copysign(float(info.max), value))
    # The fp32 guess may be double rounded: walk to the largest value <= the exact one.
    low = guess
    while Fraction(float(low)) > value:
        low = np.nextafter(low, dtype(-np.inf))
    while Fraction(float(np.nextafter(low, dtype(np.inf)))) <= value:
        low = np.nextafter(low, dtype(np.inf))
    if Fraction(float(low)) == value:
        return float(low)
    high = np.nextafter(low, dtype(np.inf))
    if mode == "rd" or (mode == "rz" and value > 0):
        pick = low
    elif mode == "ru" or mode == "rz":
        pick = high
    else:
        below, above = value - Fraction(float(low)), Fraction(float(high)) - value
        if below != above:
            pick = low if below < above else high
        else:
            pick = low if int(np.asarray(low).view(_uint(dtype))) % 2 == 0 else high
    if pick == 0:
        return 0.0 if value > 0 else -0.0
    return float(pick)


def _uint(dtype: type) -> type:
    return np.uint32 if dtype == F32 else np.uint64


# --- conversions --------------------------------------------------------------------------------


def integral(x: np.ndarray, mode: Mode) -> np.ndarray:
    """Round to an integral value in `mode` (rn: ties to even), same float dtype."""
    return {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode](x)


def float_to_int(x: np.ndarray, mode: Mode, dtype: type, nan: int) -> np.ndarray:
    """cvt.r*i: round to an integer in `mode`, saturate to `dtype`'s range, NaN → `nan`."""
    info = np.iinfo(dtype)
    y = integral(np.asarray(x, dtype=F64), mode)
    nan_mask = np.isnan(y)
    y = np.where(nan_mask, 0.0, y)
    top = float(info.max) + 1.0  # 2**bits or 2**(bits-1): exact in fp64
    high = y >= top
    low = y < float(info.min)
    inside = np.where(high | low, 0.0, y)
    if info.bits == 64 and info.min == 0:
        # fp64 → uint64 above 2**63 goes through int64 with the top bit added back.
        upper = inside >= 2.0**63
        as_int = np.where(upper, inside - 2.0**63, inside).astype(np.int64).view(np.uint64)
        values = np.where(upper, as_int + np.uint64(2**63), as_int)
    else:
        values = inside.astype(np.int64)
    values = np.where(high, info.max, np.where(low, info.min, values))
    return np.where(nan_mask, nan, values).astype(dtype)


def int_to_pair(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A 64-bit integer as an exact fp64 pair hi + lo with hi = fl(x)."""
    unsigned = x.dtype == np.uint64
    x = x.astype(np.uint64 if unsigned else np.int64)
    high = (x >> 32).astype(F64) * 2.0**32  # arithmetic shift for int64
    low = (x & (np.uint64 if unsigned else np.int64)(0xFFFFFFFF)).astype(F64)
    return two_sum(high, low)


def int_to_f32(x: np.ndarray, mode: Mode) -> np.ndarray:
    """cvt.r*.f32 from any integer: 32-bit ones are exact in fp64, 64-bit ones an exact pair."""
    if x.dtype.itemsize <= 4:
        return f64_to_f32(x.astype(F64), mode)
    hi, lo = int_to_pair(x)
    return pair_to_f32(hi, lo, mode)


def int_to_f64(x: np.ndarray, mode: Mode) -> np.ndarray:
    """cvt.r*.f64 from any integer."""
    if x.dtype.itemsize <= 4:
        return x.astype(F64)
    hi, lo = int_to_pair(x)
    return _directed64(hi, _sign(lo), mode, np.ones(x.shape, bool))
