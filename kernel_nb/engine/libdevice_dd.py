"""Double-double arithmetic on numpy arrays: about 106 bits, for the fp64 special functions.

CUDA's fp64 special functions are within a few ulps; a reference computed in fp64 itself would
lose that much to cancellation (series of alternating terms, 1 - erf) or to error amplification
(exp of a large argument). A value here is a pair (hi, lo) of float64 arrays with hi = fl(hi + lo);
the operations are the classic error-free ones (Dekker 1971, Bailey's QD library). Constants are
derived from `decimal` at import, not typed in as digits.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction
from typing import Any

import numpy as np

from kernel_nb.engine.libdevice_exact import two_prod, two_sum

DD = tuple[np.ndarray, np.ndarray]
Pair = tuple[Any, Any]  # a double-double, or a constant (hi, lo) of two floats

getcontext().prec = 60
_PI = Decimal("3.141592653589793238462643383279502884197169399375105820974944592")
_EULER = Decimal("0.5772156649015328606065120900824024310421593359399235988057672348")


def const(value: Decimal | Fraction) -> tuple[float, float]:
    """The double-double nearest to a decimal or rational constant."""
    exact = value if isinstance(value, Decimal) else Decimal(value.numerator) / value.denominator
    hi = float(exact)
    return hi, float(exact - Decimal(hi))


PI = const(_PI)
LN2 = const(Decimal(2).ln())
LN_PI = const(_PI.ln())
HALF_LN_2PI = const((2 * _PI).ln() / 2)
TWO_OVER_SQRT_PI = const(2 / _PI.sqrt())
SQRT_PI_OVER_2 = const(_PI.sqrt() / 2)
INV_SQRT2 = const(1 / Decimal(2).sqrt())
SQRT2 = const(Decimal(2).sqrt())
TWO_OVER_PI = const(2 / _PI)
INV_PI = const(1 / _PI)
EULER = const(_EULER)
_INV_FACT = [const(Fraction(1, math.factorial(n))) for n in range(28)]


def of(x: np.ndarray) -> DD:
    return np.asarray(x, dtype=np.float64), np.zeros(np.shape(x))


def full(c: tuple[float, float], shape: tuple[int, ...]) -> DD:
    return np.full(shape, c[0]), np.full(shape, c[1])


def _renorm(s: np.ndarray, e: np.ndarray) -> DD:
    hi = s + e
    return hi, e - (hi - s)


def add(x: DD, y: Pair) -> DD:
    s, e = two_sum(x[0], y[0])
    return _renorm(s, e + (x[1] + y[1]))


def add_d(x: DD, d: np.ndarray | float) -> DD:
    s, e = two_sum(x[0], d)
    return _renorm(s, e + x[1])


def neg(x: DD) -> DD:
    return -x[0], -x[1]


def sub(x: DD, y: Pair) -> DD:
    return add(x, (-y[0], -y[1]))


def mul(x: DD, y: Pair) -> DD:
    p, e = two_prod(x[0], y[0])
    return _renorm(p, e + (x[0] * y[1] + x[1] * y[0]))


def mul_d(x: DD, d: np.ndarray | float) -> DD:
    p, e = two_prod(x[0], d)
    return _renorm(p, e + x[1] * d)


def div(x: DD, y: DD) -> DD:
    q1 = x[0] / y[0]
    r = sub(x, mul_d(y, q1))
    q2 = r[0] / y[0]
    r = sub(r, mul_d(y, q2))
    return add_d(_renorm(q1, q2), r[0] / y[0])


def sqrt(x: DD) -> DD:
    s = np.sqrt(x[0])
    safe = np.where(s > 0, s, 1.0)
    p, e = two_prod(safe, safe)
    correction = ((x[0] - p) - e + x[1]) / (2 * safe)
    return _renorm(s, np.where(s > 0, correction, 0.0))


def horner(coefficients: list[tuple[float, float]], z: DD) -> DD:
    """sum(c[k] * z**k), evaluated from the highest power down."""
    acc = full(coefficients[-1], z[0].shape)
    for c in reversed(coefficients[:-1]):
        acc = add(mul(acc, z), c)
    return acc


def exp(x: DD) -> DD:
    """e**x to about 1e-30 relative: x = k ln2 + r, a Taylor series for |r| <= 0.35, times 2**k."""
    hi = x[0]
    finite = np.isfinite(hi) & (np.abs(hi) < 760)
    k = np.rint(np.where(finite, hi, 0.0) / LN2[0])
    xs = (np.where(finite, hi, 0.0), np.where(finite, x[1], 0.0))
    r = sub(xs, mul_d(full(LN2, hi.shape), k))
    e = horner(_INV_FACT, r)
    ki = k.astype(np.int64)
    # Two steps of scaling keep 2**k representable when e**x is near the overflow or subnormal edge.
    half = ki // 2
    out_hi = np.ldexp(np.ldexp(e[0], half), ki - half)
    out_lo = np.ldexp(np.ldexp(e[1], half), ki - half)
    overflow = ~finite & (hi > 0)
    out_hi = np.where(finite, out_hi, np.where(overflow, np.inf, np.where(np.isnan(hi), np.nan, 0.0)))
    return out_hi, np.where(finite & np.isfinite(out_hi), out_lo, 0.0)


def log(x: DD) -> DD:
    """ln x for x > 0: x = m 2**e, one Newton step from fp64's log(m) doubles its precision."""
    ok = np.isfinite(x[0]) & (x[0] > 0)
    m, e = np.frexp(np.where(ok, x[0], 1.0))  # m in [0.5, 1): e**-log(m) cannot overflow
    lo = np.ldexp(np.where(ok, x[1], 0.0), -e)
    y = np.log(m)
    t = add_d(mul((m, lo), exp(of(-y))), -1.0)
    correction = sub(t, mul_d(mul(t, t), 0.5))
    out = add(add_d(correction, y), mul_d(full(LN2, m.shape), e.astype(np.float64)))
    with np.errstate(divide="ignore", invalid="ignore"):
        bad = np.log(x[0])
    return np.where(ok, out[0], bad), np.where(ok, out[1], 0.0)


def value(x: DD) -> np.ndarray:
    return x[0] + x[1]
