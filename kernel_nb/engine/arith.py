"""Builder hooks for arithmetic: GPU-faithful numerics and undefined-behaviour observations.

With numerics="gpu" (the default) bf16/fp8 values are computed as floats and rounded back to
nearest even, tl.dot honours input_precision, and float → int casts saturate (NaN → 0) as NVIDIA
GPUs do. In both modes the operations whose result the language leaves undefined are reported:
float → int casts of NaN or out-of-range values, signed integer overflow, integer division by
zero, shifts by at least the bit width.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.checks import Observations, Site, undefined
from kernel_nb.engine import bits_reductions, triton_compat
from kernel_nb.engine.guard import Locator
from kernel_nb.engine.patches import patched_methods
from kernel_nb.engine.recorder import Recorder

_OVERFLOW_OPS = {np.add: "+", np.subtract: "-", np.multiply: "*"}
RowOf = Callable[[Any], np.ndarray]
# reports one program's flagged lanes: (where, lanes, the program's row of a batched value)
Report = Callable[[Site, np.ndarray, RowOf], None]
_SHIFT_OPS = (np.left_shift, np.right_shift)
_BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor, *_SHIFT_OPS)


class ArithmeticHooks:
    """Installs the arithmetic hooks of one launch."""

    def __init__(
        self, recorder: Recorder, locate: Locator, observations: Observations, *, faithful: bool, detect: bool
    ) -> None:
        self.recorder = recorder
        self.locate = locate
        self.observations = observations
        self.faithful = faithful
        self.detect = detect

    def _observe(self, bad: np.ndarray, report: Report) -> None:
        """One observation per program with flagged lanes, made by `report`."""
        file, line = self.locate()
        for pid, order, lanes, row_of in self.recorder.lane_rows(bad):
            report(Site(pid, order, file, line), lanes, row_of)

    @contextmanager
    def installed(self, builder: Any, *, observations: Observations | None = None) -> Iterator[None]:
        """The hooks in `builder` for a while; observations go to `observations` meanwhile (None:
        to the launch's, given at construction: a batch's are its own until it succeeds)."""
        launch_observations = self.observations
        if observations is not None:
            self.observations = observations
        originals = {
            method.name: getattr(builder, method.name)
            for method in triton_compat.ARITHMETIC_METHODS
            if hasattr(builder, method.name)
        }
        hooks: dict[str, Callable[..., Any]] = {
            triton_compat.BINARY_OP.name: lambda lhs, rhs, op: self.binary_op(
                originals[triton_compat.BINARY_OP.name], lhs, rhs, op
            ),
            triton_compat.UNARY_OP.name: lambda arg, op: self.unary_op(
                originals[triton_compat.UNARY_OP.name], arg, op
            ),
            triton_compat.CAST.name: lambda src, dst: self.cast(originals[triton_compat.CAST.name], src, dst),
            triton_compat.FP_TO_FP.name: lambda src, dst, mode: self.fp_to_fp(
                originals[triton_compat.FP_TO_FP.name], src, dst, mode
            ),
            triton_compat.IDIV.name: lambda lhs, rhs: self.idiv(originals[triton_compat.IDIV.name], lhs, rhs),
            triton_compat.DOT.name: lambda a, b, d, precision, *rest: self.dot(
                originals[triton_compat.DOT.name], a, b, d, precision, *rest
            ),
            triton_compat.ASHR.name: lambda lhs, rhs: self.shift(
                originals[triton_compat.ASHR.name], lhs, rhs
            ),
            triton_compat.DOT_SCALED.name: lambda *args: self.dot_scaled(
                originals.get(triton_compat.DOT_SCALED.name), *args
            ),
        }
        # dot_scaled is kernel_nb's own, also where the interpreter has none (before 3.9)
        hooks = {
            name: hook
            for name, hook in hooks.items()
            if name in originals or name == triton_compat.DOT_SCALED.name
        }
        try:
            with (
                patched_methods(builder, hooks),
                bits_reductions.gpu_order() if self.faithful else nullcontext(),
            ):
                yield
        finally:
            self.observations = launch_observations

    # -- integer operations ---------------------------------------------------------------------

    def binary_op(self, original: Any, lhs: Any, rhs: Any, op: Any) -> Any:
        type_name = str(lhs.dtype.scalar)
        # bitwise operations on bf16/fp8 (tl.abs of fp8 clears the sign bit) act on the raw bits
        if self.faithful and numerics.is_bits_float(type_name) and op not in _BITWISE:
            a, b = numerics.decode(lhs.data, type_name), numerics.decode(rhs.data, type_name)
            with np.errstate(all="ignore"):
                result = op(a, b)
            if result.dtype == np.bool_:
                return triton_compat.TensorHandle(result, triton_compat.tl.int1)
            return triton_compat.TensorHandle(numerics.encode(result, type_name), lhs.dtype.scalar)
        if op in _BOOL_EXACT and lhs.data.dtype == np.bool_ and rhs.data.dtype == np.bool_:
            # numpy's own bool and/or/xor are the 1-bit integer ones: no detour through int8
            return triton_compat.TensorHandle(_bool_op(op, lhs.data, rhs.data), lhs.dtype.scalar)
        with np.errstate(all="ignore"):
            result = original(lhs, rhs, op)
        if self.detect and lhs.data.dtype.kind in "iu":
            self._check_integer(lhs, rhs, op, result)
        return result

    def _check_integer(self, lhs: Any, rhs: Any, op: Any, result: Any) -> None:
        data = lhs.data
        signed = data.dtype.kind == "i"
        if op in _OVERFLOW_OPS and signed and data.dtype.itemsize <= 4:
            if _fits(op, data, np.asarray(rhs.data), np.iinfo(data.dtype)):
                return
            exact = op(data.astype(np.int64), np.asarray(rhs.data).astype(np.int64))
            info = np.iinfo(data.dtype)
            bad = (exact < info.min) | (exact > info.max)
            if bad.any():
                bits, symbol = data.dtype.itemsize * 8, _OVERFLOW_OPS[op]
                self._observe(
                    bad,
                    lambda site, lanes, row_of: undefined.int_overflow(
                        self.observations,
                        site,
                        lanes,
                        bits=bits,
                        symbol=symbol,
                        exact=int(row_of(exact)[lanes[0]]),
                    ),
                )
        elif op is np.fmod:
            self._check_zero_divisor(rhs, remainder=True)
        elif op in _SHIFT_OPS:
            self._check_shift(data, rhs)

    def _check_zero_divisor(self, rhs: Any, *, remainder: bool) -> None:
        zero = np.asarray(rhs.data) == 0
        if zero.any():
            self._observe(
                zero,
                lambda site, lanes, row_of: undefined.division_by_zero(
                    self.observations, site, lanes, remainder=remainder
                ),
            )

    def _check_shift(self, data: np.ndarray, rhs: Any) -> None:
        bits = data.dtype.itemsize * 8
        amount = np.asarray(rhs.data).astype(np.int64)
        bad = (amount >= bits) | (amount < 0)
        if bad.any():
            self._observe(
                bad,
                lambda site, lanes, row_of: undefined.shift_overflow(
                    self.observations, site, lanes, amount=int(row_of(amount)[lanes[0]]), bits=bits
                ),
            )

    def idiv(self, original: Any, lhs: Any, rhs: Any) -> Any:
        if self.detect:
            self._check_zero_divisor(rhs, remainder=False)
        with np.errstate(all="ignore"):
            return original(lhs, rhs)

    def shift(self, original: Any, lhs: Any, rhs: Any) -> Any:
        if self.detect:
            self._check_shift(lhs.data, rhs)
        with np.errstate(all="ignore"):
            return original(lhs, rhs)

    # -- floats -----------------------------------------------------------------------------------

    def unary_op(self, original: Any, arg: Any, op: Any) -> Any:
        type_name = str(arg.dtype.scalar)
        if self.faithful and numerics.is_bits_float(type_name):
            with np.errstate(all="ignore"):
                result = op(numerics.decode(arg.data, type_name))
            return triton_compat.TensorHandle(numerics.encode(result, type_name), arg.dtype.scalar)
        with np.errstate(all="ignore"):  # NaN and Inf are reported by the detectors, not as warnings
            return original(arg, op)

    def cast(self, original: Any, src: Any, dst_type: Any) -> Any:
        src_name, dst_name = str(src.dtype.scalar), str(dst_type.scalar)
        src_float = src_name.startswith(("fp", "bf"))
        dst_int = dst_name.startswith(("int", "uint")) and dst_name != "int1"
        if not self.faithful:
            if self.detect and src_float and dst_int:
                values = numerics.decode(src.data, src_name) if numerics.is_bits_float(src_name) else src.data
                self._check_cast(values, triton_compat.np_dtype(dst_type.scalar), dst_name)
            with np.errstate(invalid="ignore"):
                return original(src, dst_type)
        values = numerics.decode(src.data, src_name) if numerics.is_bits_float(src_name) else src.data
        if numerics.is_bits_float(dst_name):
            return triton_compat.TensorHandle(numerics.encode(values, dst_name), dst_type.scalar)
        if src_float and dst_int:
            target = triton_compat.np_dtype(dst_type.scalar)
            converted, bad = numerics.float_to_int(values, target, src_name)
            if self.detect:
                self._report_cast(values, bad, dst_name)
            return triton_compat.TensorHandle(converted, dst_type.scalar)
        if numerics.is_bits_float(src_name):
            return triton_compat.TensorHandle(
                values.astype(triton_compat.np_dtype(dst_type.scalar)), dst_type.scalar
            )
        return original(src, dst_type)

    def _check_cast(self, values: np.ndarray, target: np.dtype, dst_name: str) -> None:
        _, bad = numerics.float_to_int(values, target)
        self._report_cast(values, bad, dst_name)

    def _report_cast(self, values: np.ndarray, bad: np.ndarray, dst_name: str) -> None:
        if np.asarray(bad).any():
            self._observe(
                np.asarray(bad),
                lambda site, lanes, row_of: undefined.undefined_cast(
                    self.observations, site, lanes, target=dst_name, first=float(row_of(values)[lanes[0]])
                ),
            )

    def fp_to_fp(self, original: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        src_name, dst_name = str(src.dtype.scalar), str(dst_type.scalar)
        round_to_zero = rounding_mode is not None and str(rounding_mode).upper().endswith("RTZ")
        if (
            self.faithful
            and not round_to_zero
            and (numerics.is_bits_float(src_name) or numerics.is_bits_float(dst_name))
        ):
            values = numerics.decode(src.data, src_name) if numerics.is_bits_float(src_name) else src.data
            if numerics.is_bits_float(dst_name):
                return triton_compat.TensorHandle(numerics.encode(values, dst_name), dst_type.scalar)
            return triton_compat.TensorHandle(
                values.astype(triton_compat.np_dtype(dst_type.scalar)), dst_type.scalar
            )
        return original(src, dst_type, rounding_mode)

    def dot(self, original: Any, a: Any, b: Any, d: Any, precision: Any, *rest: Any) -> Any:
        if not self.faithful:
            return original(a, b, d, precision, *rest)
        a_name, b_name = str(a.dtype.scalar), str(b.dtype.scalar)
        a_values = numerics.decode(a.data, a_name) if numerics.is_bits_float(a_name) else a.data
        b_values = numerics.decode(b.data, b_name) if numerics.is_bits_float(b_name) else b.data
        mode = str(precision).split(".")[-1].lower() if precision is not None else "tf32"
        # only fp32 operands are rounded: lower-precision operands have exact fp32 products
        if not (a_name == "fp32" and b_name == "fp32"):
            mode = "ieee"
        d_name = str(d.dtype.scalar)
        if numerics.is_bits_float(d_name):
            result = numerics.dot(a_values, b_values, numerics.decode(d.data, d_name), mode)
            return triton_compat.TensorHandle(numerics.encode(result, d_name), d.dtype.scalar)
        return triton_compat.TensorHandle(numerics.dot(a_values, b_values, d.data, mode), d.dtype.scalar)

    def dot_scaled(self, original: Callable[..., Any] | None, *args: Any) -> Any:
        """tl.dot_scaled with fp8 operands decoded exactly (the GPU reads e5m2 subnormals as such)."""
        if original is not None and not self.faithful:
            return original(*args)
        lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, _fast_math, lhs_k_pack, rhs_k_pack, acc = args
        compute = triton_compat.dot_scaled_compute_type(lhs_format, rhs_format)

        def decode(handle: Any) -> np.ndarray:
            name = str(handle.dtype.scalar)
            return numerics.decode(handle.data, name) if numerics.is_bits_float(name) else handle.data

        a = triton_compat.dot_scaled_operand(lhs, lhs_scale, lhs_format, lhs_k_pack, compute, False, decode)
        b = triton_compat.dot_scaled_operand(rhs, rhs_scale, rhs_format, rhs_k_pack, compute, True, decode)
        with np.errstate(all="ignore"):
            result = (np.matmul(a, b) + acc.data).astype(np.float32)
        return triton_compat.TensorHandle(result, triton_compat.tl.float32)


_BOOL_EXACT = (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.logical_and, np.logical_or, np.logical_xor)


def _bool_op(op: Any, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`op` of two bool blocks, computed once along the axes where both are one value (a bound
    every lane meets, a mask every program of a batch shares: an axis of 1 or a broadcast) and
    broadcast along them. numpy walks an operand broadcast along its inner axis one element at a
    time: `&` of two (64, 64, 64) broadcasts took 320 us, of two arrays 13 us."""
    if not (a.ndim == b.ndim and a.ndim and a.size and b.size):
        return op(a, b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    once = [
        n > 1 and (na == 1 or sa == 0) and (nb == 1 or sb == 0)
        for n, na, nb, sa, sb in zip(shape, a.shape, b.shape, a.strides, b.strides)
    ]
    if not any(once):
        return op(a, b)
    index = tuple(slice(0, 1) if one else slice(None) for one in once)
    result = op(a[index], b[index])
    if result.all() or not result.any():  # one value: held as one (see BatchRecorder.kept_rows)
        result = result.reshape(-1)[:1].reshape(())
    return np.broadcast_to(result, shape)


def _fits(op: Any, a: np.ndarray, b: np.ndarray, info: np.iinfo) -> bool:
    """Whether `op(a, b)` cannot leave `info`'s range, from the operands' extremes alone (operands
    broadcast from a row or a column cost a pass over that row or column only)."""
    if a.size == 0 or b.size == 0:
        return True
    a_lo, a_hi = _extremes(a)
    b_lo, b_hi = _extremes(b)
    if op is np.add:
        low, high = a_lo + b_lo, a_hi + b_hi
    elif op is np.subtract:
        low, high = a_lo - b_hi, a_hi - b_lo
    elif op is np.multiply:
        corners = (a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi)
        low, high = min(corners), max(corners)
    else:
        return False
    return info.min <= low and high <= info.max


def _extremes(values: np.ndarray) -> tuple[int, int]:
    # a broadcast axis (stride 0) repeats one slice: look at that slice only
    core = values[tuple(slice(0, 1) if st == 0 else slice(None) for st in values.strides)]
    return int(core.min()), int(core.max())
