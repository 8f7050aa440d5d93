"""libdevice's floating-point functions on numpy arrays: fp32 through fp64, fp64 through numpy.

How each family reaches the GPU's values (Triton links libdevice with `__CUDA_FTZ=1`, so fp32
functions flush subnormal arguments, and most of their subnormal results, to zero of the same
sign):

- fp32 transcendental functions: evaluated in fp64 and rounded once to fp32, which is within half
  an ulp and a hair of the exact value (CUDA's bounds are 1 ulp or more). `f32` applies the FTZ.
- fp64 transcendental functions: numpy's float64 libm (within an ulp), double-double where that
  or the plain formula would lose more (rsqrt, cbrt, rcbrt, exp2, exp10, norms), and the
  special-function modules.
- fp32 quirks an H200 showed (tests/engine/fixtures/libdevice_gpu.npz): cbrtf and rcbrtf of a
  subnormal are NaN, powf reads a subnormal base as 2**-127 * 1.mantissa, tgammaf and
  normcdfinvf do not flush every subnormal argument, y0f/y1f test x < 0 before flushing.
- fast intrinsics (`__nv_fast_*`): the PTX sequence Triton emits, operation for operation, with
  each approximate instruction (ex2.approx, lg2.approx, sin.approx, div.approx) computed correctly
  rounded; those instructions are within 2 ulps (ex2) or 2**-22 (lg2) of that.
- exactly specified functions (rounding to integers, fmod, remainder, nextafter, ldexp, ilogb,
  logb, copysign, fdim, saturate): bit for bit what libdevice's code does, FTZ quirks included.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import numpy as np

from kernel_nb.engine import libdevice_dd as dd
from kernel_nb.engine.libdevice_exact import F32, F64, f64_to_f32, ftz32, two_prod


def f32(fn64: Callable[..., np.ndarray], *, ftz_in: bool = True, ftz_out: bool = True):
    """An fp32 function from an fp64 one: flush arguments, evaluate in fp64, round, flush."""

    def run(*args: np.ndarray) -> np.ndarray:
        wide = [(ftz32(a) if ftz_in else a).astype(F64) if a.dtype == F32 else a for a in args]
        out = fn64(*wide).astype(F32)
        return ftz32(out) if ftz_out else out

    return run


# --- fp64 building blocks -------------------------------------------------------------------------


def rsqrt64(x: np.ndarray) -> np.ndarray:
    """1/sqrt(x) within half an ulp: y = 1/sqrt(x), then one Newton step with an exact residual."""
    y = 1.0 / np.sqrt(x)
    ok = np.isfinite(y) & (y > 0) & np.isfinite(x)
    xs, ys = np.where(ok, x, 1.0), np.where(ok, y, 1.0)
    m, e = np.frexp(xs)  # scale so y*y*x cannot underflow or overflow
    shift = np.where(e % 2 == 0, e, e - 1) // 2
    ym = np.ldexp(ys, shift)
    xm = np.ldexp(m, np.where(e % 2 == 0, 0, 1))
    s = dd.mul(dd.mul(dd.of(ym), dd.of(ym)), dd.of(xm))  # y^2 x, ~1
    correction = ym * dd.value(dd.add_d(dd.neg(s), 1.0)) * 0.5
    return np.where(ok, np.ldexp(ym + correction, -shift), y)


def cbrt64(x: np.ndarray) -> np.ndarray:
    """cbrt within half an ulp (libm's is up to 3 ulps off): y -= (y^3 - x) / (3 y^2), exact residual."""
    y = np.cbrt(x)
    ok = np.isfinite(y) & (y != 0)
    ax, ay = np.abs(np.where(ok, x, 1.0)), np.abs(np.where(ok, y, 1.0))
    m, e = np.frexp(ax)
    k = np.floor_divide(e, 3)
    xm = np.ldexp(m, e - 3 * k)  # [0.5, 4): ym^3 cannot under- or overflow
    ym = np.ldexp(ay, -k)
    cube = dd.mul(dd.mul(dd.of(ym), dd.of(ym)), dd.of(ym))
    residual = dd.value(dd.add_d(cube, -xm))
    ym = ym - residual / (3 * ym * ym)
    return np.where(ok, np.copysign(np.ldexp(ym, k), y), y)


def rcbrt64(x: np.ndarray) -> np.ndarray:
    """1/cbrt(x) with one Newton step: r += r (1 - x r^3) / 3, the residual in double-double."""
    r = 1.0 / np.cbrt(x)
    ok = np.isfinite(r) & (r != 0) & np.isfinite(x)
    ax, ar = np.abs(np.where(ok, x, 1.0)), np.abs(np.where(ok, r, 1.0))
    m, e = np.frexp(ax)
    k = np.floor_divide(e, 3)
    xm = np.ldexp(m, e - 3 * k)  # [0.5, 4)
    rm = np.ldexp(ar, k)
    cube = dd.mul(dd.mul(dd.of(rm), dd.of(rm)), dd.mul(dd.of(rm), dd.of(xm)))
    rm = rm + rm * dd.value(dd.add_d(dd.neg(cube), 1.0)) / 3.0
    return np.where(ok, np.copysign(np.ldexp(rm, -k), r), r)


def _sum_squares(args: tuple[np.ndarray, ...]) -> tuple[dd.DD, np.ndarray]:
    """sum(x_i^2) as a double-double after scaling by a power of two, and that scale's exponent."""
    big = np.max(np.abs(np.stack(args)), axis=0)
    _, e = np.frexp(np.where(np.isfinite(big) & (big > 0), big, 1.0))
    total = dd.of(np.zeros(big.shape))
    for a in args:
        s = np.ldexp(a, -e)
        total = dd.add(total, dd.mul(dd.of(s), dd.of(s)))
    return total, e


def _norm_specials(args: tuple[np.ndarray, ...], value: np.ndarray, reciprocal: bool) -> np.ndarray:
    inf = np.any(np.isinf(np.stack(args)), axis=0)
    nan = np.any(np.isnan(np.stack(args)), axis=0)
    value = np.where(nan, np.nan, value)
    return np.where(inf, 0.0 if reciprocal else np.inf, value)  # an Inf beats a NaN (C99 hypot)


def norm64(*args: np.ndarray) -> np.ndarray:
    total, e = _sum_squares(args)
    root = dd.sqrt(total)
    return _norm_specials(args, np.ldexp(dd.value(root), e), False)


def rnorm64(*args: np.ndarray) -> np.ndarray:
    total, e = _sum_squares(args)
    root = dd.sqrt(total)
    one = dd.of(np.ones(e.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = dd.div(one, root)
    value = np.where(root[0] == 0, np.inf, np.ldexp(dd.value(inv), -e))
    return _norm_specials(args, value, True)


_LN10 = dd.const(Decimal(10).ln())


def _exp_times(x: np.ndarray, c: tuple[float, float]) -> np.ndarray:
    """e**(c x) with c x a double-double (10**x from pow is 1 ulp off near half of its results)."""
    clipped = np.clip(np.nan_to_num(x, nan=0.0), -2000.0, 2000.0)  # e**(+-1400) is already 0 or Inf
    out = dd.value(dd.exp(dd.mul_d(dd.full(c, x.shape), clipped)))
    return np.where(np.isnan(x), np.nan, out)


def exp2_64(x: np.ndarray) -> np.ndarray:
    return _exp_times(x, dd.LN2)


def exp10_64(x: np.ndarray) -> np.ndarray:
    return _exp_times(x, _LN10)


def powi64(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """__nv_powi: libdevice's square-and-multiply loop, rounding where it rounds."""
    return _powi(x, n, lambda a, b: a * b, lambda r: 1.0 / r)


def powi32(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """__nv_powif: the same loop with mul.rn.ftz.f32 and a final (non-ftz) div.rn.f32."""
    return _powi(x, n, lambda a, b: ftz32(ftz32(a) * ftz32(b)), lambda r: (F32(1) / r).astype(F32))


def _powi(x: np.ndarray, n: np.ndarray, mul, recip) -> np.ndarray:
    e = np.abs(n.astype(np.int64))  # |INT_MIN| = 2**31, as libdevice's unsigned shift sees it
    base, result = x.copy(), np.ones_like(x)
    while True:
        result = np.where((e & 1) == 1, mul(result, base), result)
        e = e >> 1
        if not (e > 0).any():
            break
        base = np.where(e > 0, mul(base, base), base)
    return np.where(n < 0, recip(result), result).astype(x.dtype)


# --- fast intrinsics: the PTX Triton emits, each approximate instruction correctly rounded --------

_LOG2E = F32(1.44269502)  # 0x3FB8AA3B
_LOG2_10 = F32(3.32192802)  # 0x40549A78
_LN2 = F32(0.693147182)  # 0x3F317218
_LOG10_2 = F32(0.301029980)  # 0x3E9A209B
_INV_2PI = F32(0.159154937)  # 0x3E22F983


def _mul32(a: np.ndarray, b: np.ndarray | np.float32) -> np.ndarray:
    return (a * b).astype(F32)  # mul.f32: round to nearest, subnormals kept


def ex2_approx(x: np.ndarray) -> np.ndarray:
    return ftz32(np.exp2(ftz32(x).astype(F64)).astype(F32))


def lg2_approx(x: np.ndarray) -> np.ndarray:
    return np.log2(ftz32(x).astype(F64)).astype(F32)


def _turns(x: np.ndarray) -> np.ndarray:
    """sin.approx/cos.approx see x * fp32(1/2pi) rounded toward zero (FMUL.RZ), in turns."""
    t = f64_to_f32(ftz32(x).astype(F64) * F64(_INV_2PI), "rz")  # the fp64 product is exact
    r = ftz32(t).astype(F64)
    return r - np.rint(r)


def sin_approx(x: np.ndarray) -> np.ndarray:
    return ftz32(np.sin(2 * np.pi * _turns(x)).astype(F32))


def cos_approx(x: np.ndarray) -> np.ndarray:
    return ftz32(np.cos(2 * np.pi * _turns(x)).astype(F32))


def div_approx(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """div.approx.ftz.f32 computes a * (1/b): 1/b flushes to 0 for |b| > 2**126."""
    r = ftz32((F32(1) / ftz32(b)).astype(F32))
    return ftz32(_mul32(ftz32(a), r))


def fast_exp(x: np.ndarray) -> np.ndarray:
    return ex2_approx(_mul32(x, _LOG2E))


def fast_exp10(x: np.ndarray) -> np.ndarray:
    return ex2_approx(_mul32(x, _LOG2_10))


def fast_log(x: np.ndarray) -> np.ndarray:
    return _mul32(lg2_approx(x), _LN2)


def fast_log10(x: np.ndarray) -> np.ndarray:
    return _mul32(lg2_approx(x), _LOG10_2)


def fast_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ex2_approx(_mul32(lg2_approx(x), y))


def fast_tan(x: np.ndarray) -> np.ndarray:
    return div_approx(sin_approx(x), cos_approx(x))


def rcp64h(x: np.ndarray) -> np.ndarray:
    """rcp.approx.ftz.f64: 1/x from x's upper 32 bits, kept to a 20-bit mantissa, low word zero.

    Truncating the mantissa reproduced 94% of an H200's results exactly (the rest are a unit of
    the 20th bit away), rounding it only 59%.
    """
    high = (x.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(F64)
    subnormal = (high != 0) & (np.abs(high) < np.finfo(F64).tiny)
    r = 1.0 / np.where(subnormal, np.copysign(0.0, high), high)
    m, e = np.frexp(r)
    r = np.where(np.isfinite(r) & (r != 0), np.ldexp(np.trunc(m * 2.0**21) / 2.0**21, e), r)
    r = np.where(np.abs(r) < np.finfo(F64).tiny, np.copysign(0.0, r), r)
    return (r.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(F64)


# --- exactly specified functions ------------------------------------------------------------------


def round_half_away(x: np.ndarray) -> np.ndarray:
    """round(): libdevice adds copysign(0.5, x) rounding toward zero, then truncates; exact."""
    t = np.trunc(x)
    bump = np.abs(x - t) >= 0.5  # x - t is exact
    return np.where(bump, t + np.copysign(np.ones_like(x), x), t).astype(x.dtype)


def fdim(a: np.ndarray, b: np.ndarray, sub: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    """fdim: a - b where a > b or either is NaN (libdevice's `a <= b ? +0 : a - b`)."""
    return np.where(a <= b, np.zeros_like(a), sub(a, b)).astype(a.dtype)


def saturatef(x: np.ndarray) -> np.ndarray:
    """cvt.ftz.sat.f32: clamp to [+0, 1], NaN and -0 to +0, subnormals flushed."""
    x = ftz32(x)
    return np.where(np.isnan(x) | (x <= 0), F32(0), np.minimum(x, F32(1))).astype(F32)


def remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """IEEE remainder (x - n y, n = x/y rounded to even) from fmod, as fdlibm does; exact."""
    ax, ay = np.abs(x), np.abs(y)
    fits = ay <= np.finfo(x.dtype).max / 2
    r = np.fmod(ax, np.where(fits, ay + ay, ay))  # r < 2|y|, with the quotient's parity kept
    # Subtract |y| when r is past |y|/2 (or at it with an odd quotient: r = 1.5|y|). Below 2*tiny,
    # |y|/2 would round: compare 2r with |y| there.
    tiny = ay < 2 * np.finfo(x.dtype).tiny
    half = ay / 2
    first = np.where(tiny, r + r > ay, r > half)
    r = np.where(first, r - ay, r)  # exact (Sterbenz)
    second = first & np.where(tiny, r + r >= ay, r >= half)
    r = np.where(second, r - ay, r)
    r = np.where(np.signbit(x), -r, r)
    r = np.where(np.isinf(y) & np.isfinite(x), x, r)
    invalid = np.isnan(x) | np.isnan(y) | np.isinf(x) | (y == 0)
    return np.where(invalid, np.nan, r).astype(x.dtype)


def fmodf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """__nv_fmodf with FTZ: |x| and |y| flushed; the short path (|x| <= 2**23 |y|) flushes its
    result (fma.rn.ftz), the long reduction path ends in a plain multiply that keeps subnormals."""
    ax, ay = ftz32(np.abs(x)), ftz32(np.abs(y))
    r = np.fmod(ax, ay)
    long_path = ax > _mul32(ay, F32(2.0**23))
    r = np.where(long_path | (ax < ay), r, ftz32(r))
    return np.where(np.isnan(r), r, np.copysign(r, x)).astype(F32)


def remainderf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """__nv_remainderf with FTZ: |x| and |y| flushed; the quotient steps end in fma.rn.ftz, so a
    subnormal result is flushed, unless the last step to IEEE's remainder (r - |y|, taken when r
    is past |y|/2) is needed, which is a plain sub.f32 that keeps it; on the long reduction path
    (|x| > 2**23 |y|) the result comes from a plain multiply and is kept too."""
    ax, ay = ftz32(np.abs(x)), ftz32(np.abs(y))
    r = remainder(np.copysign(ax, x).astype(F32), ay.astype(F32))
    stepped = np.abs(r) != np.fmod(ax, ay)
    long_path = ax > _mul32(ay, F32(2.0**23))
    return np.where(stepped | long_path | np.isnan(r), r, ftz32(r)).astype(F32)


def nextafterf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """__nv_nextafterf with FTZ: arguments flushed by their exponent bits, a zero `a` steps to
    ±2**-126 (not the smallest subnormal), and a step into the subnormals is kept (setp, no ftz)."""
    fa, fb = ftz32(a), ftz32(b)
    bits = fa.view(np.int32)
    step = np.where(((a < b) & (a < 0)) | ((a > b) & (a > 0)), -1, 0) + np.where(
        ((a < b) & (a > 0)) | ((a > b) & (a < 0)), 1, 0
    )
    stepped = (bits + step.astype(np.int32)).view(F32)
    out = np.where(fa == 0, np.copysign(F32(2.0**-126), b), stepped)
    out = np.where((fa == 0) & (fb == 0), fb, out)
    return np.where(np.isnan(a) | np.isnan(b), a + b, out).astype(F32)


def ldexpf(a: np.ndarray, n: np.ndarray) -> np.ndarray:
    """__nv_ldexpf: a times ex2.approx.ftz(k) for one, two or four pieces k of n (exact powers of
    two, 0 below 2**-126, Inf from 2**128), each product a plain mul.f32. A zero, infinite or
    subnormal `a`, or n == 0, returns a (a + a for ±0 and the flushed subnormals: 2a)."""
    n = n.astype(np.int64)
    mag = ftz32(np.abs(a))
    keep = (mag == 0) | np.isinf(mag) | (n == 0)
    keep_value = np.where(mag > 0, a, (a + a).astype(F32))

    def p(k: np.ndarray) -> np.ndarray:  # ex2.approx.ftz of an integer
        power = np.ldexp(np.ones(k.shape, F32), np.clip(k, -126, 127).astype(np.int32)).astype(F32)
        return np.where(k < -126, F32(0), np.where(k >= 128, F32(np.inf), power)).astype(F32)

    an = np.abs(n)
    one = _mul32(a, p(n))
    half = np.trunc(n / 2).astype(np.int64)
    two = _mul32(_mul32(a, p(half)), p(n - half))
    quarter = np.trunc(n / 4).astype(np.int64)
    pq = p(quarter)
    four = _mul32(_mul32(_mul32(_mul32(a, pq), pq), pq), p(n - 3 * quarter))
    out = np.where(an < 126, one, np.where(an < 252, two, four))
    return np.where(keep, keep_value, out).astype(F32)


def cbrtf(fn64: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """__nv_cbrtf, __nv_rcbrtf: a subnormal argument gives NaN on an H200 (lg2.approx.ftz of the
    flushed value is -Inf, and libdevice's scaling then multiplies it by 0); else fp64's value."""
    plain = f32(fn64)
    return lambda x: np.where((x != 0) & (np.abs(x) < F32(np.finfo(F32).tiny)), F32(np.nan), plain(x)).astype(
        F32
    )


def powf(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """__nv_powf: y is not flushed; a subnormal x is read as 2**-127 * 1.mantissa (libdevice's
    logarithm takes the exponent field as it is), so powf(2**-149, -1) is 2**127 on an H200;
    subnormal results are flushed."""
    bits = x.view(np.uint32)
    subnormal = (x != 0) & (np.abs(x) < F32(np.finfo(F32).tiny))
    as_normal = (1.0 + (bits & np.uint32(0x7FFFFF)).astype(F64) * 2.0**-23) * 2.0**-127
    x64 = np.where(subnormal, np.copysign(as_normal, x.astype(F64)), x.astype(F64))
    return ftz32(np.power(x64, y.astype(F64)).astype(F32))


def tgammaf(fn64: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """__nv_tgammaf: a positive subnormal gives +Inf (flushed to +0), a negative one 1/x rounded
    to fp32 (libdevice's x < 0 path divides without flushing), as measured on an H200."""
    plain = f32(fn64, ftz_out=False)

    def run(x: np.ndarray) -> np.ndarray:
        subnormal = (x != 0) & (np.abs(x) < F32(np.finfo(F32).tiny))
        reciprocal = (F32(1) / np.where(subnormal, x, F32(1))).astype(F32)
        return np.where(subnormal & (x < 0), reciprocal, plain(x)).astype(F32)

    return run


def bessel_yf(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """y0f, y1f, ynf test x < 0 before flushing: a negative subnormal gives NaN, not -Inf."""
    plain = f32(fn)

    def run(*args: np.ndarray) -> np.ndarray:
        return np.where(args[-1] < 0, F32(np.nan), plain(*args)).astype(F32)

    return run


def normcdfinvf(fn64: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """__nv_normcdfinvf doubles p with a plain add first, so p in [2**-127, 2**-126) is not
    flushed (normcdfinvf(1e-38) is -12.97), and only 2p is."""

    def run(p: np.ndarray) -> np.ndarray:
        doubled = ftz32((p + p).astype(F32)).astype(F64)
        return ftz32(fn64(doubled / 2).astype(F32))

    return run


def ilogbf(x: np.ndarray) -> np.ndarray:
    """__nv_ilogbf: exponent of fabs.ftz(x); 0 and subnormals INT_MIN, NaN INT_MIN, Inf INT_MAX."""
    m = ftz32(np.abs(x))
    _, e = np.frexp(np.where(np.isfinite(m) & (m > 0), m, F32(1)))
    out = np.where(m == 0, np.iinfo(np.int32).min, e - 1)
    out = np.where(np.isinf(m), np.iinfo(np.int32).max, np.where(np.isnan(m), np.iinfo(np.int32).min, out))
    return out.astype(np.int32)


def logbf(x: np.ndarray) -> np.ndarray:
    """__nv_logbf: like ilogbf, except that a flushed subnormal reads as bits 0 → -150.0 (only an
    exact ±0 gives -Inf: that test uses the unflushed x), and NaN, ±Inf give x*x."""
    m = ftz32(np.abs(x))
    _, e = np.frexp(np.where(np.isfinite(m) & (m > 0), m, F32(1)))
    out = np.where(m == 0, np.where(x == 0, F32(-np.inf), F32(-150)), (e - 1).astype(F32))
    return np.where(np.isfinite(m), out, (x * x).astype(F32)).astype(F32)


def ilogb64(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(np.where(np.isfinite(x) & (x != 0), x, 1.0))
    out = np.where(x == 0, np.iinfo(np.int32).min, e - 1)
    out = np.where(np.isinf(x), np.iinfo(np.int32).max, np.where(np.isnan(x), np.iinfo(np.int32).min, out))
    return out.astype(np.int32)


def logb64(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(np.where(np.isfinite(x) & (x != 0), x, 1.0))
    out = np.where(x == 0, -np.inf, (e - 1).astype(F64))
    return np.where(np.isfinite(x), out, x * x)


def ldexp64(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.ldexp(x, np.clip(n.astype(np.int64), -2200, 2200).astype(np.int32))


def frsqrt_rn(x: np.ndarray) -> np.ndarray:
    """__nv_frsqrt_rn: 1/sqrt(x) correctly rounded to fp32, subnormal x flushed (so ±Inf).

    fp64 gets within an fp32 ulp; the exact test 1/sqrt(x) > m  <=>  x m^2 < 1 against each
    neighbouring midpoint m (m^2 exact in fp64, x m^2 exact as TwoProduct) settles the rounding.
    """
    xf = ftz32(x)
    x64 = xf.astype(F64)
    y = (1.0 / np.sqrt(x64)).astype(F32)
    ok = np.isfinite(y) & (y > 0) & (x64 > 0)
    for toward in (np.inf, 0.0):
        other = np.nextafter(y, F32(toward))
        mid = (y.astype(F64) + other.astype(F64)) / 2
        p, e = two_prod(np.where(ok, x64, 1.0), mid * mid)
        d = (p - 1.0) + e  # sign of x m^2 - 1
        move = ok & ((d < 0) if toward == np.inf else (d > 0))
        y = np.where(move, other, y)
    return y.astype(F32)
