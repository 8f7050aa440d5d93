"""What the GPU computes for each CUDA libdevice function (`__nv_*`), on the CPU with numpy.

On the GPU, `triton.language.extra.libdevice.rsqrt(x)` becomes `core.extern_elementwise` with a
table `{(arg dtypes): ("__nv_rsqrtf", result dtype)}`, and the compiled kernel calls that symbol of
NVIDIA's libdevice. `evaluate(symbol, args, result)` gives the same values here:

    >>> evaluate("__nv_fadd_rz", [np.float32([1.0]), np.float32([2.0**-30])], np.dtype("float32"))
    array([1.], dtype=float32)

Fidelity: exact where CUDA is exact or correctly rounded (integer and bit functions,
conversions, every `_rn/_rz/_ru/_rd` operation, rounding, fmod, nextafter, ...); within CUDA's
documented error bound elsewhere (`ULP_BOUNDS`, `bound`). The model is libdevice as Triton links
it: with `__CUDA_FTZ=1` (Triton's `enable_reflect_ftz` default), so fp32 functions flush subnormal
arguments and results to zero, and `__CUDA_PREC_SQRT` unset, so `__nv_sqrtf` is the approximate
`sqrt.approx.ftz.f32`. Special values follow libdevice's code (its LLVM IR, and the PTX Triton
makes of it): float to integer conversions saturate, and NaN gives 0 from fp32 to 32-bit integers
and the most negative value (2**63 or 2**31 for unsigned ones) otherwise, as measured for Triton's
casts, which compile to the same cvt instructions, on an H200 (tests/engine/fixtures/gpu_numerics.npz).

Checked against an H200 (triton 3.6, tests/engine/fixtures/libdevice_gpu.npz, made by
tests/gpu/make_libdevice_fixtures.py): the exact symbols bit for bit, the others within their
bound; the quirks found there (NaN from jn with n < 0 or x = 0, fdimf keeping subnormals, ...) are
modelled, and the one place where the GPU misses its documented bound (lgamma near 1 and 2) is
listed in tests/engine/test_libdevice_gpu_fixture.py.

Sources of the error bounds: CUDA C++ Programming Guide, "Mathematical Functions" appendix
(CUDA 12.8/13.x): Table 17 (single-precision functions), Table 18 (double precision), Table 21
(single-precision intrinsics), Table 22 (double-precision intrinsics); the PTX ISA (9.7.3) for
instructions libdevice uses directly (sqrt.approx, rsqrt.approx, ex2.approx, lg2.approx,
sin/cos.approx, rcp.approx.ftz.f64).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from kernel_nb.engine import libdevice_bessel as bessel
from kernel_nb.engine import libdevice_bits as bits
from kernel_nb.engine import libdevice_exact as exact
from kernel_nb.engine import libdevice_math as fm
from kernel_nb.engine import libdevice_special as special
from kernel_nb.engine.libdevice_exact import F32, F64, ftz32

__all__ = [
    "ABS_BOUNDS",
    "SIGNATURES",
    "SYMBOLS",
    "ULP_BOUNDS",
    "UnsupportedExtern",
    "bound",
    "evaluate",
    "ulps_between",
]


class UnsupportedExtern(NotImplementedError):
    """A libdevice symbol kernel_nb has no CPU model of."""

    def __init__(self, symbol: str) -> None:
        super().__init__(
            f"libdevice function {symbol} is not interpreted: kernel_nb has no CPU model of it "
            f"(supported: the {len(SYMBOLS)} __nv_* functions of triton.language.extra.cuda.libdevice)"
        )
        self.symbol = symbol


class _Spec(NamedTuple):
    fn: Callable[..., np.ndarray]
    args: tuple[type, ...]
    result: type


I32, I64, U32, U64 = np.int32, np.int64, np.uint32, np.uint64
MODES: tuple[exact.Mode, ...] = ("rn", "rz", "rd", "ru")
_TABLE: dict[str, _Spec] = {}


def _add(symbol: str, fn: Callable[..., np.ndarray], args: tuple[type, ...], result: type) -> None:
    _TABLE[symbol] = _Spec(fn, args, result)


def _ftz(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """An fp32 instruction with .ftz: flush the arguments, flush the result."""
    return lambda *xs: ftz32(fn(*(ftz32(x) for x in xs)))


Row = tuple[str, Callable[..., np.ndarray], type, type]


def _register() -> None:
    # Integer and bit functions, reinterpretations, classification: exact.
    unary_bits: list[Row] = [
        ("clz", bits.clz, I32, I32), ("clzll", bits.clz, I64, I32), ("popc", bits.popc, I32, I32),
        ("popcll", bits.popc, I64, I32), ("brev", bits.brev, I32, I32), ("brevll", bits.brev, I64, I64),
        ("abs", bits.iabs, I32, I32), ("llabs", bits.iabs, I64, I64), ("ffs", bits.ffs, I32, I32),
        ("ffsll", bits.ffs, I64, I32), ("double2hiint", bits.double2hiint, F64, I32),
        ("double2loint", bits.double2loint, F64, I32), ("isnanf", bits.isnan, F32, I32),
        ("isnand", bits.isnan, F64, I32), ("isinff", bits.isinf, F32, I32), ("isinfd", bits.isinf, F64, I32),
        ("finitef", bits.isfinite, F32, I32), ("isfinited", bits.isfinite, F64, I32),
        ("signbitf", bits.signbit, F32, I32), ("signbitd", bits.signbit, F64, I32),
        ("int_as_float", lambda x: x.view(F32), I32, F32), ("float_as_int", lambda x: x.view(I32), F32, I32),
        ("uint_as_float", lambda x: x.view(F32), U32, F32), ("float_as_uint", lambda x: x.view(I32), F32, I32),
        ("longlong_as_double", lambda x: x.view(F64), I64, F64),
        ("double_as_longlong", lambda x: x.view(I64), F64, I64),
    ]  # fmt: skip
    for sym, fn, arg, res in unary_bits:
        _add(f"__nv_{sym}", fn, (arg,), res)
    binary_bits: list[Row] = [
        ("mulhi", bits.mulhi, I32, I32), ("umulhi", bits.mulhi, U32, U32), ("mul64hi", bits.mulhi, I64, I64),
        ("umul64hi", bits.mulhi, U64, U64), ("mul24", bits.mul24, I32, I32), ("umul24", bits.mul24, U32, U32),
        ("hadd", bits.hadd, I32, I32), ("uhadd", bits.hadd, U32, U32), ("rhadd", bits.rhadd, I32, I32),
        ("urhadd", bits.rhadd, U32, U32), ("hiloint2double", bits.hiloint2double, I32, F64),
    ]  # fmt: skip
    for sym, fn, arg, res in binary_bits:
        _add(f"__nv_{sym}", fn, (arg, arg), res)
    _add("__nv_byte_perm", bits.byte_perm, (I32, I32, I32), I32)
    _add("__nv_sad", bits.sad, (I32, I32, U32), I32)
    _add("__nv_usad", bits.sad, (U32, U32, U32), U32)

    # Arithmetic in each rounding mode: exact. fp32 ones are .ftz instructions.
    for m in MODES:
        _add(f"__nv_fadd_{m}", _ftz(partial(exact.add32, mode=m)), (F32, F32), F32)
        _add(f"__nv_fsub_{m}", _ftz(lambda a, b, m=m: exact.add32(a, -b, m)), (F32, F32), F32)
        _add(f"__nv_fmul_{m}", _ftz(partial(exact.mul32, mode=m)), (F32, F32), F32)
        _add(f"__nv_fmaf_{m}", _ftz(partial(exact.fma32, mode=m)), (F32, F32, F32), F32)
        _add(f"__nv_fdiv_{m}", _ftz(partial(exact.div32, mode=m)), (F32, F32), F32)
        _add(f"__nv_frcp_{m}", _ftz(lambda x, m=m: exact.div32(np.ones_like(x), x, m)), (F32,), F32)
        _add(f"__nv_fsqrt_{m}", _ftz(partial(exact.sqrt32, mode=m)), (F32,), F32)
        _add(f"__nv_dadd_{m}", partial(exact.add64, mode=m), (F64, F64), F64)
        _add(f"__nv_dsub_{m}", lambda a, b, m=m: exact.add64(a, -b, m), (F64, F64), F64)
        _add(f"__nv_dmul_{m}", partial(exact.mul64, mode=m), (F64, F64), F64)
        _add(f"__nv_fma_{m}", partial(exact.fma64, mode=m), (F64, F64, F64), F64)
        _add(f"__nv_ddiv_{m}", partial(exact.div64, mode=m), (F64, F64), F64)
        _add(f"__nv_drcp_{m}", partial(exact.rcp64, mode=m), (F64,), F64)
        _add(f"__nv_dsqrt_{m}", partial(exact.sqrt64, mode=m), (F64,), F64)
        # Conversions (cvt): exact. NaN → integer as measured (see the module docstring).
        _add(f"__nv_double2float_{m}", lambda x, m=m: ftz32(exact.f64_to_f32(x, m)), (F64,), F32)
        conversions: list[tuple[str, type, type, int, type]] = [
            ("double2int", F64, I32, -(2**31), I32), ("double2uint", F64, U32, 2**31, I32),
            ("double2ll", F64, I64, -(2**63), I64), ("double2ull", F64, U64, 2**63, I64),
            ("float2int", F32, I32, 0, I32), ("float2uint", F32, U32, 0, I32),
            ("float2ll", F32, I64, -(2**63), I64), ("float2ull", F32, U64, 2**63, I64),
        ]  # fmt: skip
        for name, src, dst, nan, as_type in conversions:
            flush: Callable[[np.ndarray], np.ndarray] = ftz32 if src == F32 else (lambda x: x)
            conv = partial(exact.float_to_int, mode=m, dtype=dst, nan=nan)
            _add(f"__nv_{name}_{m}", lambda x, c=conv, f=flush, t=as_type: c(f(x)).view(t), (src,), as_type)
        for name, src in [("int2float", I32), ("uint2float", U32), ("ll2float", I64), ("ull2float", U64)]:
            _add(f"__nv_{name}_{m}", partial(exact.int_to_f32, mode=m), (src,), F32)
        for name, src in [("ll2double", I64), ("ull2double", U64)]:
            _add(f"__nv_{name}_{m}", partial(exact.int_to_f64, mode=m), (src,), F64)
    _add("__nv_fmaf", _TABLE["__nv_fmaf_rn"].fn, (F32, F32, F32), F32)
    _add("__nv_fma", _TABLE["__nv_fma_rn"].fn, (F64, F64, F64), F64)
    _add("__nv_sqrt", np.sqrt, (F64,), F64)
    _add("__nv_int2double_rn", lambda x: x.astype(F64), (I32,), F64)
    _add("__nv_uint2double_rn", lambda x: x.astype(F64), (U32,), F64)
    _add("__nv_frsqrt_rn", fm.frsqrt_rn, (F32,), F32)
    rn_int64 = partial(exact.float_to_int, mode="rn", dtype=I64, nan=-(2**63))
    rz_int64 = partial(exact.float_to_int, mode="rz", dtype=I64, nan=-(2**63))
    _add("__nv_llrintf", lambda x: rn_int64(ftz32(x)), (F32,), I64)
    _add("__nv_llrint", rn_int64, (F64,), I64)
    _add("__nv_llroundf", lambda x: rz_int64(fm.round_half_away(x)), (F32,), I64)
    _add("__nv_llround", lambda x: rz_int64(fm.round_half_away(x)), (F64,), I64)

    # Exactly specified float functions. fp32 ones flush where their instructions do.
    exact_unary: list[tuple[str, Callable[..., np.ndarray], Callable[..., np.ndarray]]] = [
        ("fabs", lambda x: ftz32(np.abs(x)), np.abs), ("floor", lambda x: np.floor(ftz32(x)), np.floor),
        ("ceil", lambda x: np.ceil(ftz32(x)), np.ceil), ("trunc", np.trunc, np.trunc),
        ("rint", np.rint, np.rint), ("nearbyint", np.rint, np.rint),
        ("round", lambda x: fm.round_half_away(ftz32(x)), fm.round_half_away),
        ("logb", fm.logbf, fm.logb64),
    ]  # fmt: skip
    for name, fn32, fn64 in exact_unary:
        _add(f"__nv_{name}f", fn32, (F32,), F32)
        _add(f"__nv_{name}", fn64, (F64,), F64)
    _add("__nv_ilogbf", fm.ilogbf, (F32,), I32)
    _add("__nv_ilogb", fm.ilogb64, (F64,), I32)
    _add("__nv_saturatef", fm.saturatef, (F32,), F32)
    _add("__nv_copysignf", np.copysign, (F32, F32), F32)
    _add("__nv_copysign", np.copysign, (F64, F64), F64)
    _add("__nv_nextafterf", fm.nextafterf, (F32, F32), F32)
    _add("__nv_nextafter", np.nextafter, (F64, F64), F64)
    _add("__nv_fmodf", fm.fmodf, (F32, F32), F32)
    _add("__nv_fmod", np.fmod, (F64, F64), F64)
    _add("__nv_remainderf", fm.remainderf, (F32, F32), F32)
    _add("__nv_remainder", fm.remainder, (F64, F64), F64)
    # An H200 returns fdimf(0, -2**-149) = 2**-149: this subtraction keeps subnormals.
    _add("__nv_fdimf", lambda a, b: fm.fdim(a, b, lambda u, v: exact.add32(u, -v, "rn")), (F32, F32), F32)
    _add("__nv_fdim", lambda a, b: fm.fdim(a, b, np.subtract), (F64, F64), F64)
    for name in ("ldexp", "scalbn"):
        _add(f"__nv_{name}f", fm.ldexpf, (F32, I32), F32)
        _add(f"__nv_{name}", fm.ldexp64, (F64, I32), F64)
    _add("__nv_powif", fm.powi32, (F32, I32), F32)
    _add("__nv_powi", fm.powi64, (F64, I32), F64)

    # Approximate hardware instructions libdevice calls directly, and the fast intrinsics.
    _add("__nv_sqrtf", _ftz(partial(exact.sqrt32, mode="rn")), (F32,), F32)
    _add("__nv_rsqrtf", fm.f32(lambda x: 1.0 / np.sqrt(x)), (F32,), F32)
    _add("__nv_rsqrt", fm.rsqrt64, (F64,), F64)
    _add("__nv_rcp64h", fm.rcp64h, (F64,), F64)
    _add("__nv_exp2f", fm.ex2_approx, (F32,), F32)
    _add("__nv_exp2", fm.exp2_64, (F64,), F64)
    _add("__nv_fast_fdividef", fm.div_approx, (F32, F32), F32)
    for name, fn in [("sinf", fm.sin_approx), ("cosf", fm.cos_approx), ("tanf", fm.fast_tan),
                     ("expf", fm.fast_exp), ("exp10f", fm.fast_exp10), ("logf", fm.fast_log),
                     ("log2f", fm.lg2_approx), ("log10f", fm.fast_log10)]:  # fmt: skip
        _add(f"__nv_fast_{name}", fn, (F32,), F32)
    _add("__nv_fast_powf", fm.fast_pow, (F32, F32), F32)

    # Transcendental and special functions: fp32 via fp64, fp64 via numpy and the special modules.
    no_flush_out = {"exp", "exp10", "erfc", "normcdf"}
    no_flush_in = {"log", "log2", "log10"}  # these scale subnormal arguments instead of flushing
    unary: list[tuple[str, Callable[..., np.ndarray], Callable[..., np.ndarray]]] = [
        ("sin", np.sin, np.sin), ("cos", np.cos, np.cos), ("tan", np.tan, np.tan),
        ("sinpi", special.sinpi, special.sinpi), ("cospi", special.cospi, special.cospi),
        ("exp", np.exp, np.exp), ("exp10", fm.exp10_64, fm.exp10_64), ("expm1", np.expm1, np.expm1),
        ("log", np.log, np.log), ("log2", np.log2, np.log2), ("log10", np.log10, np.log10),
        ("log1p", np.log1p, np.log1p), ("sinh", np.sinh, np.sinh), ("cosh", np.cosh, np.cosh),
        ("tanh", np.tanh, np.tanh), ("asin", np.arcsin, np.arcsin), ("acos", np.arccos, np.arccos),
        ("atan", np.arctan, np.arctan), ("asinh", np.arcsinh, np.arcsinh),
        ("acosh", np.arccosh, np.arccosh), ("atanh", np.arctanh, np.arctanh),
        ("cbrt", np.cbrt, fm.cbrt64), ("rcbrt", fm.rcbrt64, fm.rcbrt64),
        ("erf", partial(special.erf, precise=False), special.erf),
        ("erfc", partial(special.erfc, precise=False), special.erfc),
        ("erfcx", partial(special.erfcx, precise=False), special.erfcx),
        ("erfinv", partial(special.erfinv, precise=False), special.erfinv),
        ("erfcinv", partial(special.erfcinv, precise=False), special.erfcinv),
        ("normcdf", special.normcdf, special.normcdf),
        ("normcdfinv", partial(special.normcdfinv, precise=False), special.normcdfinv),
        ("lgamma", partial(special.lgamma, precise=False), special.lgamma),
        ("tgamma", partial(special.tgamma, precise=False), special.tgamma),
        ("j0", partial(bessel.j0, precise=False), bessel.j0), ("j1", partial(bessel.j1, precise=False), bessel.j1),
        ("y0", partial(bessel.y0, precise=False), bessel.y0), ("y1", partial(bessel.y1, precise=False), bessel.y1),
        ("cyl_bessel_i0", partial(bessel.cyl_bessel_i, nu=0, precise=False), partial(bessel.cyl_bessel_i, nu=0)),
        ("cyl_bessel_i1", partial(bessel.cyl_bessel_i, nu=1, precise=False), partial(bessel.cyl_bessel_i, nu=1)),
    ]  # fmt: skip
    Wrap = Callable[[Callable[..., np.ndarray]], Callable[..., np.ndarray]]
    quirks: dict[str, Wrap] = {"cbrt": fm.cbrtf, "rcbrt": fm.cbrtf, "tgamma": fm.tgammaf, "normcdfinv": fm.normcdfinvf,
              "y0": fm.bessel_yf, "y1": fm.bessel_yf}  # fmt: skip
    for name, fn32, fn64 in unary:
        if name in quirks:
            wrapped = quirks[name](fn32)
        else:
            wrapped = fm.f32(fn32, ftz_in=name not in no_flush_in, ftz_out=name not in no_flush_out)
        _add(f"__nv_{name}f", wrapped, (F32,), F32)
        _add(f"__nv_{name}", fn64, (F64,), F64)
    nary: list[tuple[str, Callable[..., np.ndarray], int]] = [
        ("atan2", np.arctan2, 2), ("hypot", np.hypot, 2), ("rhypot", fm.rnorm64, 2), ("pow", np.power, 2),
        ("norm3d", fm.norm64, 3), ("rnorm3d", fm.rnorm64, 3), ("norm4d", fm.norm64, 4), ("rnorm4d", fm.rnorm64, 4),
    ]  # fmt: skip
    for name, fn, n in nary:
        wrapped = fm.powf if name == "pow" else fm.f32(fn, ftz_out=name not in no_flush_out)
        _add(f"__nv_{name}f", wrapped, (F32,) * n, F32)
        _add(f"__nv_{name}", fn, (F64,) * n, F64)
    _add("__nv_jnf", partial(bessel.jn, dtype=F32), (I32, F32), F32)
    _add("__nv_jn", partial(bessel.jn, dtype=F64), (I32, F64), F64)
    _add("__nv_ynf", partial(bessel.yn, dtype=F32), (I32, F32), F32)
    _add("__nv_yn", partial(bessel.yn, dtype=F64), (I32, F64), F64)


_register()
SYMBOLS: frozenset[str] = frozenset(_TABLE)
# symbol → (argument dtypes, result dtype), as the extern_elementwise tables declare them (unsigned
# results are declared int32/int64 there, e.g. __nv_float2uint_rn → int32).
SIGNATURES = MappingProxyType(
    {sym: (tuple(np.dtype(t) for t in spec.args), np.dtype(spec.result)) for sym, spec in _TABLE.items()}
)

# --- error bounds ---------------------------------------------------------------------------------

# Maximum error in ulps of the result, against the exact value: 0 where CUDA is exact or correctly
# rounded (integer functions, conversions, every _rn/_rz/_rd/_ru operation and the functions the
# tables list as 0: rounding, fmod, remainder, fdim, ldexp, scalbn, logb, ilogb, nextafter, ...).
# 0 also for __nv_powi/__nv_powif, which no table lists: this model repeats libdevice's
# square-and-multiply loop rounding for rounding, so it matches the GPU exactly (not pow's value).
ULP_BOUNDS: dict[str, float] = dict.fromkeys(SYMBOLS, 0.0)
# Table 17 (single-precision standard functions, compute capability >= 5.2).
ULP_BOUNDS.update({f"__nv_{k}": float(v) for k, v in {
    "rsqrtf": 2, "cbrtf": 1, "rcbrtf": 1, "hypotf": 3, "rhypotf": 2, "norm3df": 3, "rnorm3df": 2,
    "norm4df": 3, "rnorm4df": 2, "expf": 2, "exp2f": 2, "exp10f": 2, "expm1f": 1, "logf": 1,
    "log2f": 1, "log10f": 2, "log1pf": 1, "sinf": 2, "cosf": 2, "tanf": 4, "sinpif": 1, "cospif": 1,
    "asinf": 2, "acosf": 2, "atanf": 2, "atan2f": 3, "sinhf": 3, "coshf": 2, "tanhf": 2,
    "asinhf": 3, "acoshf": 4, "atanhf": 3, "powf": 4, "erff": 2, "erfcf": 4, "erfinvf": 2,
    "erfcinvf": 4, "erfcxf": 4, "normcdff": 5, "normcdfinvf": 5, "lgammaf": 6, "tgammaf": 5,
    "j0f": 9, "j1f": 9, "y0f": 9, "y1f": 9, "cyl_bessel_i0f": 6, "cyl_bessel_i1f": 6,
    # sqrtf: "1 for compute capability >= 5.2" without -prec-sqrt; Triton leaves
    # __CUDA_PREC_SQRT unset, so libdevice uses sqrt.approx.ftz.f32 (PTX: relative error 2**-23).
    "sqrtf": 1,
}.items()})  # fmt: skip
# Table 18 (double-precision standard functions).
ULP_BOUNDS.update({f"__nv_{k}": float(v) for k, v in {
    "rsqrt": 1, "cbrt": 1, "rcbrt": 1, "hypot": 2, "rhypot": 1, "norm3d": 2, "rnorm3d": 1,
    "norm4d": 2, "rnorm4d": 1, "exp": 1, "exp2": 1, "exp10": 1, "expm1": 1, "log": 1, "log2": 1,
    "log10": 1, "log1p": 1, "sin": 2, "cos": 2, "tan": 2, "sinpi": 2, "cospi": 2, "asin": 2,
    "acos": 2, "atan": 2, "atan2": 2, "sinh": 2, "cosh": 1, "tanh": 1, "asinh": 3, "acosh": 3,
    "atanh": 2, "pow": 2, "erf": 2, "erfc": 5, "erfinv": 5, "erfcinv": 6, "erfcx": 4,
    "normcdf": 5, "normcdfinv": 8, "lgamma": 4, "tgamma": 10, "j0": 7, "j1": 7, "y0": 7, "y1": 7,
    "cyl_bessel_i0": 6, "cyl_bessel_i1": 6,
}.items()})  # fmt: skip
# Table 21 (single-precision intrinsics); the input-dependent parts are in `bound`.
ULP_BOUNDS.update({
    "__nv_fast_fdividef": 2.0,  # for |y| in [2**-126, 2**126]; 0 beyond (the result is then 0)
    "__nv_fast_expf": 2.0,  # + floor(|1.173 x|)
    "__nv_fast_exp10f": 2.0,  # + floor(|2.97 x|)
    "__nv_fast_logf": 3.0,  # outside [0.5, 2]; ABS_BOUNDS inside
    "__nv_fast_log2f": 2.0,
    "__nv_fast_log10f": 3.0,
    "__nv_fast_sinf": math.inf,  # an absolute bound only (ABS_BOUNDS)
    "__nv_fast_cosf": math.inf,
    "__nv_fast_tanf": 2.0,  # "derived from __sinf(x) * (1/__cosf(x))": see `bound`
    "__nv_fast_powf": 2.0,  # "derived from exp2f(y * __log2f(x))": see `bound`
    # No ulp bound, only absolute ones (Table 17/18: jn "for n = 128", yn beyond |x| > 1.5 n).
    "__nv_jnf": math.inf, "__nv_jn": math.inf, "__nv_ynf": math.inf, "__nv_yn": math.inf,
    # rcp.approx.ftz.f64 has no published bound: PTX keeps a 20-bit mantissa, ~2**33 fp64 ulps.
    "__nv_rcp64h": 2.0**33,
})  # fmt: skip
# Where the first floating argument x lies in [low, high] (|x| when low >= 0 and the function is
# symmetric), the documented bound is an absolute error instead.
ABS_BOUNDS: dict[str, tuple[float, float, float]] = {
    "__nv_fast_logf": (0.5, 2.0, 2.0**-21.41),
    "__nv_fast_log2f": (0.5, 2.0, 2.0**-22),
    "__nv_fast_log10f": (0.5, 2.0, 2.0**-24),
    "__nv_fast_sinf": (-math.pi, math.pi, 2.0**-21.41),
    "__nv_fast_cosf": (-math.pi, math.pi, 2.0**-21.19),
    **{f"__nv_{k}f": (-math.inf, math.inf, 2.2e-6) for k in ("jn", "yn")},
    **{f"__nv_{k}": (-math.inf, math.inf, 5e-12) for k in ("jn", "yn")},
}
_BESSEL_ABS = {"__nv_j0f": 2.2e-6, "__nv_j1f": 2.2e-6, "__nv_y0f": 2.2e-6, "__nv_y1f": 2.2e-6,
               "__nv_j0": 5e-12, "__nv_j1": 5e-12, "__nv_y0": 5e-12, "__nv_y1": 5e-12}  # fmt: skip


def _ulp(value: np.ndarray) -> np.ndarray:
    """The spacing of the result's format at each value (the larger neighbour gap)."""
    v = np.abs(value)
    big = np.finfo(v.dtype).max
    return np.spacing(np.where(np.isfinite(v), np.minimum(v, big), big)).astype(F64)


def bound(symbol: str, args: list[np.ndarray], value: np.ndarray) -> np.ndarray:
    """Per element, CUDA's documented maximum error of `symbol` in ulps of `value` (the exact
    result, rounded to the result type); math.inf where nothing is documented.

    Combines ULP_BOUNDS, ABS_BOUNDS (an absolute error over the ulp of `value`) and the
    input-dependent entries of Tables 17, 18 and 21.
    """
    if symbol not in SYMBOLS:
        raise UnsupportedExtern(symbol)
    value = np.asarray(value)
    out = np.full(value.shape, ULP_BOUNDS[symbol])
    with np.errstate(all="ignore"):
        floats = [np.asarray(a, dtype=F64) for a in args if np.asarray(a).dtype.kind == "f"]
        x = floats[0] if floats else np.zeros(value.shape)
        ulp = _ulp(value)
        if symbol in ABS_BOUNDS:
            low, high, err = ABS_BOUNDS[symbol]
            inside = (x >= low) & (x <= high)
            out = np.where(inside, err / ulp, out)
        if symbol in _BESSEL_ABS:
            out = np.where(np.abs(x) >= 8, _BESSEL_ABS[symbol] / ulp, out)
        if symbol == "__nv_fast_expf":
            out = 2 + np.floor(np.abs(1.173 * x))
        elif symbol == "__nv_fast_exp10f":
            out = 2 + np.floor(np.abs(2.97 * x))
        elif symbol in ("__nv_fast_sinf", "__nv_fast_cosf"):
            # Beyond [-pi, pi] "larger": PTX gives 2**-14.7 within [-100 pi, 100 pi], nothing after.
            out = np.where(
                np.abs(x) <= math.pi, out, np.where(np.abs(x) <= 100 * math.pi, 2.0**-14.7 / ulp, math.inf)
            )
        elif symbol == "__nv_fast_tanf":
            s, c = np.abs(np.sin(x)), np.abs(np.cos(x))
            es = np.where(
                np.abs(x) <= math.pi, 2.0**-21.41, np.where(np.abs(x) <= 100 * math.pi, 2.0**-14.7, np.inf)
            )
            ec = np.where(np.abs(x) <= math.pi, 2.0**-21.19, es)
            # First order in the errors; where an error reaches |sin| or |cos|, no bound at all.
            rel = np.where((es < s) & (ec < c), es / s + ec / c, np.inf)
            out = 2 + rel * np.abs(np.tan(x)) / ulp
        elif symbol == "__nv_fast_powf":
            y = floats[1]
            log2 = np.abs(np.log2(np.abs(x)))
            err_log = np.where((x >= 0.5) & (x <= 2), 2.0**-22, 2 * np.spacing(log2.astype(F32)).astype(F64))
            t = np.abs(y * np.log2(np.abs(x)))
            out = 2 + math.log(2) * (np.abs(y) * err_log + t * 2.0**-24) * 2.0**24
        elif symbol == "__nv_ynf":
            n = np.abs(np.asarray(args[0], dtype=F64))
            out = np.where(np.abs(x) < n, np.ceil(2 + 2.5 * n), 2.2e-6 / ulp)
        elif symbol == "__nv_yn":
            n = np.abs(np.asarray(args[0], dtype=F64))
            out = np.where(np.abs(x) > 1.5 * n, 5e-12 / ulp, math.inf)
        elif symbol == "__nv_lgammaf":
            out = np.where((x > -10.001) & (x < -2.264), math.inf, out)
        elif symbol == "__nv_lgamma":
            out = np.where((x > -23.0001) & (x < -2.2637), math.inf, out)
        elif symbol == "__nv_fast_fdividef":
            out = np.where(np.abs(floats[1]) > 2.0**126, 0.0, out)
    return np.maximum(out, 0.0)


def ulps_between(a: np.ndarray, b: np.ndarray, *, ftz: bool = False) -> np.ndarray:
    """How many representable values apart a and b are (0 for equal values, -0 == +0, NaN == NaN;
    inf where exactly one is NaN). With `ftz`, fp32 subnormals count as zero, and the step from 0
    to the smallest normal as one ulp (the number line an FTZ function lives on)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return np.where(a == b, 0.0, np.abs(a.astype(F64) - b.astype(F64)))
    if ftz and a.dtype == F32:
        a, b = ftz32(a), ftz32(b)
    signed = np.int32 if a.dtype == F32 else np.int64
    ia, ib = a.view(signed).astype(np.int64), b.view(signed).astype(np.int64)
    low = np.iinfo(signed).min
    # Map sign-magnitude bits onto a monotonic integer line (-0 and +0 both at 0).
    ia = np.where(ia < 0, low - ia, ia)
    ib = np.where(ib < 0, low - ib, ib)
    if ftz and a.dtype == F32:
        gap = int(np.float32(np.finfo(F32).tiny).view(np.int32)) - 1
        ia = ia - np.sign(ia) * gap
        ib = ib - np.sign(ib) * gap
    distance = np.abs(ia - ib).astype(F64)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    return np.where(nan_a & nan_b, 0.0, np.where(nan_a | nan_b, math.inf, distance))


# --- evaluation -----------------------------------------------------------------------------------


def _coerce(arg: np.ndarray, dtype: type) -> np.ndarray:
    arg = np.asarray(arg)
    if arg.dtype == dtype:
        return arg
    if (
        arg.dtype.kind in "iu"
        and np.dtype(dtype).kind in "iu"
        and arg.dtype.itemsize == np.dtype(dtype).itemsize
    ):
        return arg.view(dtype)  # Triton hands unsigned values over as signed bits
    return arg.astype(dtype)


def evaluate(symbol: str, args: list[np.ndarray], result: np.dtype) -> np.ndarray:
    """The GPU's values of libdevice `symbol` on `args` (numpy arrays of the symbol's argument
    dtypes, already broadcast to one shape; the shape may have any rank, including a leading
    program axis), as an array of dtype `result` of that shape.

    Args:
        symbol: the `__nv_*` name from the extern_elementwise table.
        args: one array per argument; integers of the right width but other signedness are
            reinterpreted (Triton passes uint32 as int32 bits), other dtypes converted.
        result: the result dtype Triton declared (uint results are declared int32/int64).

    Returns:
        A new array of dtype `result`.

    Raises:
        UnsupportedExtern: `symbol` is not one of SYMBOLS.
        TypeError: the number of arguments does not match the symbol's.
    """
    spec = _TABLE.get(symbol)
    if spec is None:
        raise UnsupportedExtern(symbol)
    if len(args) != len(spec.args):
        raise TypeError(f"{symbol} takes {len(spec.args)} arguments, got {len(args)}")
    arrays = np.broadcast_arrays(*[_coerce(a, t) for a, t in zip(args, spec.args)])
    with np.errstate(all="ignore"):
        out = np.asarray(spec.fn(*[np.ascontiguousarray(a) for a in arrays]))
    result = np.dtype(result)
    if out.dtype != result:
        same_width_ints = (
            out.dtype.kind in "iu" and result.kind in "iu" and out.dtype.itemsize == result.itemsize
        )
        out = out.view(result) if same_width_ints else out.astype(result)
    return out.reshape(np.shape(arrays[0])) if arrays else out
