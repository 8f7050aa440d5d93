"""Bessel functions J0, J1, Y0, Y1, Jn, Yn, I0, I1, vectorised, for libdevice's CPU model.

CUDA documents 7 ulps (fp64) or 9 ulps (fp32) for |x| < 8 and an absolute error beyond. Below 20
the power series are summed in double-double (their terms reach 1e7 at x = 20 and cancel); above,
Hankel's asymptotic expansion with fp64's sin and cos, whose absolute error is ~1e-16. Jn uses
forward recurrence from J0, J1 where it is stable (|x| > n) and Miller's backward recurrence
elsewhere; Yn recurs forward from Y0, Y1. I0 and I1 are positive series below 30 and their
asymptotic expansion (times a double-double exp) above.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from kernel_nb.engine import libdevice_dd as dd
from kernel_nb.engine import libdevice_exact as exact

_SERIES_LIMIT = 20.0
# Orders past this are absurd in a kernel (libdevice loops over the order); rather than recurring
# for seconds, they get the leading Hankel term where x exceeds the order, and 0 (Jn) or -Inf (Yn)
# below it, where J underflows and Y overflows long before.
_MAX_ORDER = 1 << 16
_N = 72
_J0 = [dd.const(Fraction((-1) ** k, math.factorial(k) ** 2)) for k in range(_N)]
_J1 = [dd.const(Fraction((-1) ** k, math.factorial(k) * math.factorial(k + 1))) for k in range(_N)]
_H = [sum(Fraction(1, j) for j in range(1, k + 1)) for k in range(_N + 1)]
_Y0 = [dd.const(Fraction((-1) ** (k + 1), math.factorial(k) ** 2) * _H[k]) for k in range(_N)]
_Y1 = [dd.const(Fraction((-1) ** k, math.factorial(k) * math.factorial(k + 1)) * (_H[k] + _H[k + 1]))
       for k in range(_N)]  # fmt: skip
_I0 = [dd.const(Fraction(1, math.factorial(k) ** 2)) for k in range(_N)]
_I1 = [dd.const(Fraction(1, math.factorial(k) * math.factorial(k + 1))) for k in range(_N)]


def _hankel_coefficients(nu: int, terms: int = 28) -> list[float]:
    """a_k(nu) = prod_{j=1..k} (4 nu^2 - (2j-1)^2) / (k! 8^k)."""
    out, value = [], Fraction(1)
    for k in range(terms):
        out.append(float(value))
        value = value * (4 * nu * nu - (2 * k + 1) ** 2) / ((k + 1) * 8)
    return out


_HANKEL = {0: _hankel_coefficients(0), 1: _hankel_coefficients(1)}


def _terms(x: np.ndarray) -> int:
    """Series terms for max|x|: (x^2/4)^k / (k!)^2 falls below 1e-33 of the peak term by then."""
    return min(_N, int(2.2 * float(np.max(x, initial=0.0))) + 24)


def _horner(coefficients: list[tuple[float, float]], q: dd.DD, precise: bool) -> dd.DD:
    if precise:
        return dd.horner(coefficients, q)
    acc = np.full(q[0].shape, coefficients[-1][0])
    for c in reversed(coefficients[:-1]):
        acc = acc * q[0] + c[0]
    return dd.of(acc)


def _series(x: np.ndarray, nu: int, precise: bool) -> tuple[np.ndarray, np.ndarray]:
    """(J_nu, Y_nu) for 0 < x < 20 from the power series (double-double when precise)."""
    n = _terms(x)
    xd = dd.of(x)
    half = dd.mul_d(xd, 0.5)
    q = dd.mul(half, half)
    log_half = dd.log(half) if precise else dd.of(np.log(half[0]))
    log_term = dd.add(log_half, dd.full(dd.EULER, x.shape))  # ln(x/2) + gamma
    if nu == 0:
        j = _horner(_J0[:n], q, precise)
        y_sum = dd.mul(_horner(_Y0[1:n], q, precise), q)
        y = dd.mul(dd.add(dd.mul(log_term, j), y_sum), dd.full(dd.TWO_OVER_PI, x.shape))
        return dd.value(j), dd.value(y)
    j = dd.mul(_horner(_J1[:n], q, precise), half)
    y_sum = dd.mul(_horner(_Y1[:n], q, precise), half)
    y = dd.sub(dd.mul(dd.mul(log_term, j), dd.full(dd.TWO_OVER_PI, x.shape)),
               dd.add(dd.mul(y_sum, dd.full(dd.INV_PI, x.shape)),
                      dd.div(dd.full(dd.TWO_OVER_PI, x.shape), xd)))  # fmt: skip
    return dd.value(j), dd.value(y)


def _hankel(x: np.ndarray, nu: int) -> tuple[np.ndarray, np.ndarray]:
    """(J_nu, Y_nu) for x >= 20: sqrt(2/(pi x)) (P cos w - Q sin w, P sin w + Q cos w)."""
    a = _HANKEL[nu]
    inv = 1.0 / x
    inv2 = inv * inv
    p = np.zeros(x.shape)
    q = np.zeros(x.shape)
    for k in reversed(range(len(a) // 2)):
        p = p * (-inv2) + a[2 * k]
        q = q * (-inv2) + a[2 * k + 1]
    q = q * inv
    s, c = np.sin(x), np.cos(x)
    # w = x - pi/4 (nu = 0) or x - 3 pi/4 (nu = 1), expanded so that only sin x, cos x are needed.
    if nu == 0:
        cw, sw = (c + s) / math.sqrt(2), (s - c) / math.sqrt(2)
    else:
        cw, sw = (s - c) / math.sqrt(2), -(s + c) / math.sqrt(2)
    scale = np.sqrt(2.0 / (math.pi * x))
    return scale * (p * cw - q * sw), scale * (p * sw + q * cw)


def _jy(x: np.ndarray, nu: int, precise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(J_nu(|x|), Y_nu(|x|)) for finite x != 0."""
    ax = np.abs(x)
    tiny = ax < 1e-150  # J0 = 1, J1 = x/2, Y0 = (2/pi)(ln(x/2) + gamma), Y1 = -2/(pi x) to fp64
    small = (ax < _SERIES_LIMIT) & ~tiny
    j = np.zeros(x.shape)
    y = np.zeros(x.shape)
    if tiny.any():
        at = np.where(tiny, ax, 1.0)
        if nu == 0:
            j = np.where(tiny, 1.0, j)
            y = np.where(tiny, (2 / math.pi) * (np.log(at) - math.log(2) + dd.EULER[0]), y)
        else:
            j = np.where(tiny, at / 2, j)
            y = np.where(tiny, -(2 / math.pi) / at, y)
    if small.any():
        js, ys = _series(np.where(small, ax, 1.0), nu, precise)
        j, y = np.where(small, js, j), np.where(small, ys, y)
    if (~small & ~tiny).any():
        jh, yh = _hankel(np.where(small | tiny, 30.0, ax), nu)
        j, y = np.where(small | tiny, j, jh), np.where(small | tiny, y, yh)
    return j, y


def j0(x: np.ndarray, precise: bool = True) -> np.ndarray:
    j, _ = _jy(np.where(np.isfinite(x) & (x != 0), x, 1.0), 0, precise)
    return np.where(x == 0, 1.0, np.where(np.isinf(x), 0.0, np.where(np.isnan(x), np.nan, j)))


def j1(x: np.ndarray, precise: bool = True) -> np.ndarray:
    j, _ = _jy(np.where(np.isfinite(x) & (x != 0), x, 1.0), 1, precise)
    j = np.where(x < 0, -j, j)  # odd
    return np.where(x == 0, x, np.where(np.isinf(x), np.copysign(0.0, x), np.where(np.isnan(x), np.nan, j)))


def _y_special(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    y = np.where(x == 0, -np.inf, y)
    y = np.where(np.isposinf(x), 0.0, y)
    return np.where((x < 0) | np.isnan(x), np.nan, y)


def y0(x: np.ndarray, precise: bool = True) -> np.ndarray:
    _, y = _jy(np.where(np.isfinite(x) & (x > 0), x, 1.0), 0, precise)
    return _y_special(x, y)


def y1(x: np.ndarray, precise: bool = True) -> np.ndarray:
    _, y = _jy(np.where(np.isfinite(x) & (x > 0), x, 1.0), 1, precise)
    return _y_special(x, y)


def _leading_hankel(order: np.ndarray, x: np.ndarray, trig) -> np.ndarray:
    """sqrt(2/(pi x)) trig(x - n pi/2 - pi/4): J (cos) or Y (sin) for x far past the order."""
    phase = x - (np.mod(order, 4) * 0.5 + 0.25) * math.pi
    return np.sqrt(2.0 / (math.pi * x)) * trig(phase)


def _fma(f32: bool):
    if f32:
        return lambda a, b, c: exact.ftz32(exact.fma32(exact.ftz32(a), exact.ftz32(b), exact.ftz32(c), "rn"))
    return lambda a, b, c: exact.fma64(np.asarray(a), np.asarray(b), np.asarray(c), "rn")


def jn(n: np.ndarray, x: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """__nv_jn / __nv_jnf: libdevice's own algorithm (Numerical Recipes' bessj), step for step.

    n < 0 gives NaN; n = 0, 1 are j0, j1. Past the order (|x| > n - 1 in fp64, |x| > n + (n > 4)
    in fp32) it recurs forward from J0, J1; below, it recurs backward from an even start
    n + sqrt(60 n) (fp64; 40 n in fp32) with a rescale past 1e15, and normalises by
    J0 + 2 sum J2k. Every operation rounds as libdevice's does, so where that recurrence overflows
    (x = 0 or tiny x with n >= 2) the result is NaN, as on the GPU.
    """
    f32 = dtype == np.float32
    n = n.astype(np.int64)
    x = np.asarray(x, dtype=dtype)
    x_in = exact.ftz32(x) if f32 else x
    wide = x_in.astype(np.float64)
    j0v, j1v = j0(wide, not f32).astype(dtype), j1(wide, not f32).astype(dtype)
    ax = np.abs(x_in)
    out = np.where(n == 0, j0v, j1v)
    limit = (n + (n > 4)).astype(dtype) if f32 else (n.astype(dtype) - 1)
    sane = n <= _MAX_ORDER
    order = np.where(sane, n, 2)
    forward = (n >= 2) & (ax > limit) & sane
    backward = (n >= 2) & ~(ax > limit) & sane
    fma = _fma(f32)
    if forward.any():
        two = (dtype(2) / x).astype(dtype)
        prev, cur = j0v, j1v
        for i in range(1, int(order[forward].max())):
            step = fma((dtype(i) * cur).astype(dtype), two, -prev) if f32 else fma(dtype(i) * two, cur, -prev)
            active = i < n
            prev, cur = np.where(active, cur, prev), np.where(active, step, cur)
        out = np.where(forward, cur, out)
    if backward.any():
        out = np.where(backward, _bessj_backward(np.where(backward, order, 2), x, f32), out)
    if (~sane).any():
        far = np.where(ax >= n, _leading_hankel(n, wide, np.cos), 0.0)
        out = np.where(sane, out, far)
    return np.where(n < 0, dtype(np.nan), out).astype(dtype)


def _bessj_backward(n: np.ndarray, x: np.ndarray, f32: bool) -> np.ndarray:
    dtype = np.float32 if f32 else np.float64
    root = np.sqrt(((40 if f32 else 60) * n).astype(dtype)).astype(dtype)  # sqrt.approx / sqrt.rn
    start = 2 * ((n + root.astype(np.int64)) // 2)
    above = np.zeros(x.shape, dtype)  # J_{i+1} and J_i of the (unnormalised) recurrence
    cur = np.ones(x.shape, dtype)
    lam, total = np.zeros(x.shape, dtype), np.zeros(x.shape, dtype)
    big, scale = np.float32(1e15), dtype(1e-15)
    two = (dtype(2) / x).astype(dtype)
    fma = _fma(f32)
    for i in range(int(start.max(initial=0)), 0, -1):
        if f32:
            t = (((dtype(i) * dtype(2)) / x).astype(dtype) * cur - above).astype(dtype)
        else:
            t = np.asarray(fma(dtype(i) * two, cur, -above), dtype=dtype)
        rescale = np.abs(exact.ftz32(t.astype(np.float32))) > big
        t = np.where(rescale, t * scale, t)
        new_above = np.where(rescale, cur * scale, cur)
        lam_i = np.where(n == i - 1, t, np.where(rescale, lam * scale, lam))
        total_i = np.where(rescale, total * scale, total)
        if i % 2 == 1:
            total_i = total_i + dtype(2) * t
        active = i <= start
        above = np.where(active, new_above, above)
        cur = np.where(active, t, cur)
        lam = np.where(active, lam_i, lam)
        total = np.where(active, total_i, total)
    return (lam / (total - cur)).astype(dtype)


def yn(n: np.ndarray, x: np.ndarray, dtype: Any = np.float64) -> np.ndarray:
    """__nv_yn / __nv_ynf as libdevice computes them: NaN for n < 0 or x < 0; y0, y1 for n = 0, 1;
    for n >= 2, -1e9/|x| (fp32, |x| below 2**-126) or -(2/pi)/x (fp64, x below 1e-308), else the
    forward recurrence from Y0, Y1 (a NaN there, from Inf - Inf, is reported as -Inf)."""
    f32 = dtype == np.float32
    n = n.astype(np.int64)
    x = np.asarray(x, dtype=dtype)
    x_in = exact.ftz32(x) if f32 else x
    wide = x_in.astype(np.float64)
    y0v, y1v = y0(wide, not f32).astype(dtype), y1(wide, not f32).astype(dtype)
    y0v = np.where(x < 0, dtype(np.nan), y0v)  # the x < 0 test sees x before the flush
    y1v = np.where(x < 0, dtype(np.nan), y1v)
    ax = np.abs(x_in)
    sane = n <= _MAX_ORDER
    order = np.where(sane, n, 2)
    two = (dtype(2) / x).astype(dtype)
    prev, cur = y0v, y1v
    fma = _fma(f32)
    for i in range(1, int(order.max(initial=1))):
        step = np.asarray(fma((dtype(i) * two).astype(dtype), cur, -prev), dtype=dtype)
        active = i < order
        prev, cur = np.where(active, cur, prev), np.where(active, step, cur)
    cur = np.where(np.isnan(cur), dtype(-np.inf), cur)
    tiny = (ax < np.finfo(np.float32).tiny) if f32 else (ax < 1e-308)
    small = (dtype(-1e9) / ax) if f32 else (dtype(-2 / math.pi) / x)
    many = np.where(tiny, small, cur)
    if (~sane).any():
        far = np.where(ax >= n, _leading_hankel(n, wide, np.sin), -np.inf)
        many = np.where(sane, many, far)
    out = np.where(n == 0, y0v, np.where(n == 1, y1v, np.where(x >= 0, many, np.nan)))
    return np.where(n < 0, np.nan, out).astype(dtype)


def _i_series(x: np.ndarray, nu: int, precise: bool) -> np.ndarray:
    n = _terms(x) + 8  # positive terms: the sum is the peak term's order, more terms matter
    half = dd.mul_d(dd.of(x), 0.5)
    q = dd.mul(half, half)
    if nu == 0:
        return dd.value(_horner(_I0[:n], q, precise))
    return dd.value(dd.mul(_horner(_I1[:n], q, precise), half))


def _i_asymptotic(x: np.ndarray, nu: int) -> np.ndarray:
    """I_nu(x) ~ e^x / sqrt(2 pi x) * sum (-1)^k a_k(nu) / x^k, for x >= 30."""
    a = _hankel_coefficients(nu, 32)
    inv = 1.0 / x
    s = np.zeros(x.shape)
    for k in reversed(range(len(a))):
        s = s * (-inv) + a[k]
    # e^x / sqrt(2 pi x) as exp(x - ln(2 pi x)/2), so it overflows only where I(x) does.
    lead = dd.exp(dd.sub(dd.of(x), dd.mul_d(dd.log(dd.mul_d(dd.full(dd.PI, x.shape), 2 * x)), 0.5)))
    return lead[0] * s + lead[1] * s  # near overflow: a double-double product would split 1e300


def cyl_bessel_i(x: np.ndarray, nu: int, precise: bool = True) -> np.ndarray:
    ax = np.where(np.abs(x) > 720, np.inf, np.abs(x))  # I0, I1 overflow from 713.98
    small = ax < 30
    out = np.where(small, _i_series(np.where(small, ax, 1.0), nu, precise), 0.0)
    out = np.where(small, out, _i_asymptotic(np.where(small | ~np.isfinite(ax), 30.0, ax), nu))
    out = np.where(np.isinf(ax), np.inf, out)
    if nu == 1:
        out = np.copysign(out, x)
    return np.where(np.isnan(x), np.nan, out)
