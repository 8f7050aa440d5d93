"""The error function family and the gamma function, vectorised, for libdevice's CPU model.

numpy has none of erf, erfc, erfcx, their inverses, normcdf, lgamma or tgamma, and scipy is not a
dependency. Each function here takes and returns float64 arrays and is accurate to about an fp64
ulp (measured in tests/engine/test_libdevice.py against `decimal` references), well inside CUDA's
documented bounds; fp32 callers round the result once. `precise=False` skips the double-double
work that only fp64 results need.

Methods: erf is its Taylor series below 2.5 (double-double when precise: the alternating terms
cancel), erfcx the Laplace continued fraction above, erfc = exp(-x^2) * erfcx there; the inverses
are Newton iterations on those from classical first guesses; lgamma is Stirling's series past 20
with the recurrence below it and the reflection formula for x < 0, tgamma = exp(lgamma) with the
sign of the reflection.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from kernel_nb.engine import libdevice_dd as dd

_ERF_TERMS = 64
_ERF_DD = [dd.const(Fraction((-1) ** n, math.factorial(n) * (2 * n + 1))) for n in range(_ERF_TERMS)]
_ERF_F64 = [c[0] for c in _ERF_DD]
_SERIES_LIMIT = 2.5  # below: Taylor series of erf; above: continued fraction of erfcx
_CF_DEPTH = 60


def _series_terms(z: np.ndarray, digits: float) -> int:
    """Taylor terms of erf for max|z|: the first n with z^(2n) / (n! (2n+1)) < 10**-digits."""
    top = float(np.max(np.abs(z), initial=0.0))
    if top == 0:
        return 1
    log_term = 0.0
    for n in range(1, _ERF_TERMS):
        log_term += 2 * math.log10(top) - math.log10(n)
        if log_term - math.log10(2 * n + 1) < -digits:
            return n + 1
    return _ERF_TERMS


def _erf_series(z: dd.DD, precise: bool) -> dd.DD:
    """erf(z) for |z| < 2.5 from its Taylor series (2/sqrt(pi)) sum (-1)^n z^(2n+1)/(n!(2n+1))."""
    if precise:
        s = dd.horner(_ERF_DD[: _series_terms(z[0], 34)], dd.mul(z, z))
        return dd.mul(dd.mul(s, z), dd.TWO_OVER_SQRT_PI)
    zz = z[0] * z[0]
    coefficients = _ERF_F64[: _series_terms(z[0], 18)]
    acc = np.full(zz.shape, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = acc * zz + c
    return dd.of(acc * z[0] * dd.TWO_OVER_SQRT_PI[0])


def _erfcx_cf(x: np.ndarray, precise: bool = True) -> dd.DD:
    """erfcx(x) = exp(x^2) erfc(x) for x >= 2.5: 1/(sqrt(pi) K), K = x + (1/2)/(x + 1/(x + ...)).

    The backward evaluation is stable, so only its last steps need double-double.
    """
    xs = np.where(np.isfinite(x), x, 3.0)
    t = xs.copy()
    for k in range(_CF_DEPTH, 3 if precise else 0, -1):
        t = xs + (k / 2) / t
    if not precise:
        out = 1.0 / (math.sqrt(math.pi) * t)
        return np.where(np.isinf(x), 0.0, out), np.zeros(x.shape)
    td = dd.of(t)
    for k in (3, 2, 1):
        td = dd.add_d(dd.div(dd.of(np.full(x.shape, k / 2)), td), xs)
    out = dd.div(dd.of(np.ones(x.shape)), dd.mul(td, dd.full(dd.SQRT_PI_OVER_2, x.shape)))
    out = dd.mul_d(out, 0.5)
    return np.where(np.isinf(x), 0.0, out[0]), np.where(np.isinf(x), 0.0, out[1])


def _exp_neg_square(z: dd.DD) -> dd.DD:
    return dd.exp(dd.neg(dd.mul(z, z)))


def erfc_of(z: dd.DD, precise: bool = True) -> np.ndarray:
    """erfc of a double-double argument (normcdf's -x/sqrt(2) must not be rounded first)."""
    x = z[0]
    out = np.full(x.shape, np.nan)
    ax = np.abs(x)
    small = ax < 0.5
    mid = ~small & (ax < _SERIES_LIMIT)
    large = (ax >= _SERIES_LIMIT) & (ax < 30)  # erfc(30) underflows: 0 or 2 beyond
    if small.any() or mid.any():
        s = _erf_series((np.where(small | mid, x, 0.0), np.where(small | mid, z[1], 0.0)), precise)
        one_minus = dd.add_d(dd.neg(s), 1.0)
        out = np.where(small | mid, dd.value(one_minus), out)
    if large.any():
        a = (np.where(large, ax, 3.0), np.where(large, np.sign(x) * z[1], 0.0))
        tail = (
            dd.mul(_exp_neg_square(a), _erfcx_cf(a[0], precise))
            if precise
            else dd.of(np.exp(-a[0] * a[0]) * _erfcx_cf(a[0], False)[0])
        )
        tail_value = dd.value(tail)
        out = np.where(large & (x > 0), tail_value, out)
        out = np.where(large & (x < 0), dd.value(dd.add_d(dd.neg(tail), 2.0)), out)
    out = np.where(ax >= 30, np.where(x > 0, 0.0, 2.0), out)
    return np.where(np.isnan(x), np.nan, out)


def erfc(x: np.ndarray, precise: bool = True) -> np.ndarray:
    return erfc_of(dd.of(x), precise)


def erf(x: np.ndarray, precise: bool = True) -> np.ndarray:
    ax = np.abs(x)
    small = ax < _SERIES_LIMIT
    series = dd.value(_erf_series(dd.of(np.where(small, ax, 0.0)), precise))
    tail = erfc(np.where(small, 3.0, ax), precise)
    out = np.where(small, series, 1.0 - tail)
    return np.where(np.isnan(x), np.nan, np.copysign(out, x))


def erfcx(x: np.ndarray, precise: bool = True) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    huge = x > 1e8  # erfcx(x) = 1/(x sqrt(pi)) (1 - 1/(2x^2) + ...): the second term is below an ulp
    large = (x >= _SERIES_LIMIT) & ~huge
    out = np.where(large, dd.value(_erfcx_cf(np.where(large, x, 3.0), precise)), out)
    rest = ~large & (x > -26.7)
    if rest.any():
        xr = np.where(rest, x, 0.0)
        ax = np.abs(xr)
        inner = ax < _SERIES_LIMIT
        e = erfc(np.where(inner, xr, 0.0), precise)
        if precise:
            grow = dd.exp(dd.mul(dd.of(xr), dd.of(xr)))
            inside = dd.value(dd.mul_d(grow, e))
            grow_value = dd.value(grow)
        else:
            grow_value = np.exp(xr * xr)
            inside = grow_value * e
        neg_tail = 2.0 * grow_value - dd.value(_erfcx_cf(np.where(inner, 3.0, ax), precise))
        out = np.where(rest & inner, inside, out)
        out = np.where(rest & ~inner, neg_tail, out)
    with np.errstate(all="ignore"):
        out = np.where(huge, (1 / math.sqrt(math.pi)) / x, out)
    return np.where(x <= -26.7, np.inf, np.where(np.isnan(x), np.nan, out))


def normcdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) = erfc(-x/sqrt(2))/2, with -x/sqrt(2) as a double-double."""
    z = dd.mul_d(dd.full(dd.INV_SQRT2, x.shape), -np.clip(np.nan_to_num(x), -100.0, 100.0))
    out = 0.5 * erfc_of(z)
    return np.where(np.isposinf(x), 1.0, np.where(np.isneginf(x), 0.0, np.where(np.isnan(x), np.nan, out)))


# --- inverses -----------------------------------------------------------------------------------


def _erfinv_small(a: np.ndarray, precise: bool) -> np.ndarray:
    """erfinv(a) for 0 <= a < 0.5: Maclaurin series guess, then Newton on erf."""
    c = math.pi * a * a
    t = (math.sqrt(math.pi) / 2) * a * (1 + c / 12 + 7 * c * c / 480 + 127 * c**3 / 40320)
    for _ in range(3):
        residual = erf(t, precise) - a
        t = t - residual * dd.SQRT_PI_OVER_2[0] * np.exp(t * t)
    return t


def erfcinv_small(y: np.ndarray, precise: bool = True) -> np.ndarray:
    """erfcinv(y) for 0 < y <= 0.5: Newton on log(erfc(t)) = log(y), which is nearly linear.

    log(erfc t) = log(erfcx t) - t^2 with t^2 exact, so the residual keeps full precision even
    where erfc underflows. From the asymptotic first guess, four steps reach fp64's precision;
    only the last needs double-double.
    """
    w = -np.log(y)
    t = np.sqrt(np.maximum(w - 0.5 * np.log(np.pi * w), 0.1))
    target = np.log(y)
    for step in range(5):
        last = precise and step == 4
        ex = erfcx(t, last)
        if last:
            g = dd.value(dd.add_d(dd.neg(dd.mul(dd.of(t), dd.of(t))), np.log(ex) - target))
        else:
            g = np.log(ex) - t * t - target
        t = t + g * dd.SQRT_PI_OVER_2[0] * ex
    return t


def erfinv(y: np.ndarray, precise: bool = True) -> np.ndarray:
    a = np.abs(y)
    small = a < 0.5
    t_small = _erfinv_small(np.where(small, a, 0.25), precise)
    t_big = erfcinv_small(np.where(small | (a >= 1), 0.25, 1.0 - a), precise)  # 1 - a is exact
    t = np.where(small, t_small, t_big)
    t = np.where(a == 1, np.inf, np.where(a > 1, np.nan, t))
    return np.where(np.isnan(y), np.nan, np.copysign(t, y))


def erfcinv(y: np.ndarray, precise: bool = True) -> np.ndarray:
    low = (y > 0) & (y <= 0.5)
    high = (y >= 1.5) & (y < 2)
    t = np.zeros(y.shape)
    t = np.where(low, erfcinv_small(np.where(low, y, 0.25), precise), t)
    t = np.where(high, -erfcinv_small(np.where(high, 2.0 - y, 0.25), precise), t)  # exact
    middle = (y > 0.5) & (y < 1.5)
    t = np.where(middle, 0.0 - erfinv(np.where(middle, y - 1.0, 0.0), precise), t)  # y - 1 exact
    t = np.where(y == 0, np.inf, np.where(y == 2, -np.inf, t))
    return np.where((y < 0) | (y > 2) | np.isnan(y), np.nan, t)


def normcdfinv(p: np.ndarray, precise: bool = True) -> np.ndarray:
    t = erfcinv(2.0 * p, precise)  # 2p is exact
    finite = np.isfinite(t)
    tf = np.where(finite, t, 0.0)
    out = dd.value(dd.mul_d(dd.full(dd.SQRT2, p.shape), -tf)) if precise else -math.sqrt(2) * tf
    return np.where(finite, out, -t) + 0.0  # normcdfinv(1/2) is +0


# --- gamma --------------------------------------------------------------------------------------

_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
              Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730)]  # fmt: skip
_STIRLING = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI, start=1)]
_TWELFTH = dd.const(Fraction(1, 12))
_TINY = 2.0**-60  # below: lgamma = -log|x| and tgamma = 1/x to within half an ulp
_SHIFT_TO = 20.0


def _lgamma_positive(z: dd.DD, precise: bool = True) -> dd.DD:
    """ln Gamma(z) for z > 0 (z < 1e280): shift z past 20, Stirling's series there."""
    hi = z[0]
    steps = np.where(hi < _SHIFT_TO, np.ceil(_SHIFT_TO - hi), 0).astype(np.int64)
    prod = dd.of(np.ones(hi.shape))
    w = z
    for _ in range(int(steps.max(initial=0))):
        active = steps > 0
        if precise:
            prod = dd_where(active, dd.mul(prod, w), prod)
            w = dd_where(active, dd.add_d(w, 1.0), w)
        else:
            prod = (np.where(active, prod[0] * w[0], prod[0]), prod[1])
            w = (np.where(active, w[0] + 1.0, w[0]), w[1])
        steps = steps - active
    # (w - 1/2) ln w - w + ln(2 pi)/2 + sum B_2k / (2k (2k-1) w^(2k-1))
    inv = 1.0 / w[0]
    inv2 = inv * inv
    series = np.zeros(hi.shape)
    for c in reversed(_STIRLING[1:]):
        series = series * inv2 + c
    series = series * inv2 * inv
    if not precise:
        plain = (w[0] - 0.5) * np.log(w[0]) - w[0] + dd.HALF_LN_2PI[0] + inv / 12 + series
        return dd.of(plain - np.log(prod[0]))
    first = dd.div(dd.full(_TWELFTH, hi.shape), w)
    main = dd.sub(dd.mul(dd.add_d(w, -0.5), dd.log(w)), w)
    total = dd.add_d(dd.add(dd.add(main, dd.full(dd.HALF_LN_2PI, hi.shape)), first), series)
    return dd.sub(total, dd.log(prod))


def dd_where(mask: np.ndarray, a: dd.DD, b: dd.DD) -> dd.DD:
    return np.where(mask, a[0], b[0]), np.where(mask, a[1], b[1])


def sinpi(x: np.ndarray) -> np.ndarray:
    """sin(pi x) with the reduction x - 2 round(x/2) done exactly and pi x as a double-double."""
    r = x - 2.0 * np.rint(x / 2.0)  # exact, in [-1, 1]
    s = np.where(np.abs(r) > 0.5, np.copysign(1.0, r) - r, r)  # sin(pi r) = sin(pi (1 - r)); exact
    p = dd.mul_d(dd.full(dd.PI, x.shape), np.where(np.isfinite(s), s, 0.0))
    out = np.sin(p[0]) + p[1] * np.cos(p[0])
    out = np.where(s == 0, np.copysign(0.0, x), out)  # IEEE sinPi(+n) = +0, sinPi(-n) = -0
    return np.where(np.isfinite(x), out, np.nan)


def cospi(x: np.ndarray) -> np.ndarray:
    """cos(pi x) = sin(pi (1/2 - |r|)) on the exactly reduced r (cos(pi (n + 1/2)) is +0)."""
    r = np.abs(x - 2.0 * np.rint(x / 2.0))  # [0, 1]
    s = 0.5 - r  # exact for r in [0.25, 1], and fine below (|s| >= 1/4)
    p = dd.mul_d(dd.full(dd.PI, x.shape), np.where(np.isfinite(s), s, 0.0))
    out = np.sin(p[0]) + p[1] * np.cos(p[0])
    out = np.where(s == 0, 0.0, out)
    return np.where(np.isfinite(x), out, np.nan)


def _log_abs_sinpi(x: np.ndarray, precise: bool) -> dd.DD:
    magnitude = np.abs(sinpi(x))
    return dd.log(dd.of(magnitude)) if precise else dd.of(np.log(magnitude))


def _exp(x: dd.DD, precise: bool) -> np.ndarray:
    return dd.value(dd.exp(x)) if precise else np.exp(x[0])


def lgamma(x: np.ndarray, precise: bool = True) -> np.ndarray:
    out = np.full(x.shape, np.inf)
    positive = np.isfinite(x) & (x >= _TINY) & (x < 1e280)
    if positive.any():
        z = dd.of(np.where(positive, x, 1.0))
        out = np.where(positive, dd.value(_lgamma_positive(z, precise)), out)
    tiny = (np.abs(x) < _TINY) & (x != 0)
    out = np.where(tiny, -np.log(np.where(tiny, np.abs(x), 1.0)), out)
    huge = np.isfinite(x) & (x >= 1e280)
    with np.errstate(over="ignore"):
        out = np.where(huge, x * (np.log(np.where(huge, x, 1.0)) - 1.0), out)
    negative = np.isfinite(x) & (x <= -_TINY) & (x != np.floor(x))
    if negative.any():
        xn = np.where(negative, x, -0.5)
        one_minus = dd.add_d(dd.of(-xn), 1.0)  # 1 - x exactly, as a double-double
        reflected = _lgamma_positive(one_minus, precise)
        value = dd.sub(dd.sub(dd.full(dd.LN_PI, x.shape), _log_abs_sinpi(xn, precise)), reflected)
        out = np.where(negative, dd.value(value), out)
    out = np.where((x == 1) | (x == 2), 0.0, out)
    return np.where(np.isnan(x), np.nan, out)


def tgamma(x: np.ndarray, precise: bool = True) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    positive = np.isfinite(x) & (x >= _TINY)
    if positive.any():
        xp = np.where(positive & (x < 172), x, 1.0)
        value = _exp(_lgamma_positive(dd.of(xp), precise), precise)
        out = np.where(positive, np.where(x < 172, value, np.inf), out)
    tiny = (np.abs(x) < _TINY) & (x != 0)
    out = np.where(tiny, 1.0 / np.where(tiny, x, 1.0), out)
    negative = np.isfinite(x) & (x <= -_TINY) & (x != np.floor(x))
    if negative.any():
        xn = np.where(negative & (x > -200), x, -0.5)
        one_minus = dd.add_d(dd.of(-xn), 1.0)
        reflected = _lgamma_positive(one_minus, precise)
        log_value = dd.sub(dd.sub(dd.full(dd.LN_PI, x.shape), _log_abs_sinpi(xn, precise)), reflected)
        magnitude = _exp(log_value, precise)
        sign = np.where(np.floor(xn) % 2 == 0, 1.0, -1.0)
        out = np.where(negative, np.where(x > -200, sign * magnitude, sign * 0.0), out)
    out = np.where(x == 0, np.copysign(np.inf, x), out)
    return np.where(np.isposinf(x), np.inf, out)
