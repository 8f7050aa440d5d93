"""What the fp64 shadow keeps on each interpreter value (see engine/shadow.py): its shadow, its local
value and the statement epoch that made them, as attributes of the value's handle, and the
arithmetic on them that the run and the records share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language as tl

from kernel_nb import numerics
from kernel_nb.engine import triton_compat

SHADOW = "_kernel_nb_shadow"
LOCAL = "_kernel_nb_local"
EPOCH = "_kernel_nb_epoch"
REAL64 = "_kernel_nb_real64"  # (the data it was made from, the values in fp64)
MADE_BY = "_kernel_nb_statement"  # the statement whose record a value was (kept through casts)
NATIVE = ("fp16", "fp32", "fp64")  # the float types numpy computes in (the others are bits)


# float operations that round nothing: each element of the result is one of the operands' elements,
# or its negation or magnitude
EXACT_OPERATIONS = {
    "create_select",
    "create_maximumf",
    "create_minimumf",
    "create_maxnumf",
    "create_minnumf",
    "create_clampf",
    "create_fneg",
    "create_fabs",
}
# elementwise float operations the interpreter runs as numpy ufuncs on its operands' arrays: with
# one fp64 operand, numpy computes in fp64, widening fp16/fp32 operands element by element (under
# numpy 2's promotion rules; numpy 1 narrows a 0-d fp64 operand to an fp32 array's type instead)
WIDENING_OPERATIONS = {
    "create_fadd",
    "create_fsub",
    "create_fmul",
    "create_fdiv",
    "create_precise_divf",
    "create_select",
    "create_maximumf",
    "create_minimumf",
    "create_maxnumf",
    "create_minnumf",
}
WIDENS = np.lib.NumpyVersion(np.__version__) >= "2.0.0"
# the language's reductions that round nothing (tl.max, tl.min, and with indices), by combine function
_EXACT_COMBINES = {
    "_elementwise_max",
    "_elementwise_min",
    "_argmax_combine_tie_break_left",
    "_argmax_combine_tie_break_fast",
    "_argmin_combine_tie_break_left",
    "_argmin_combine_tie_break_fast",
}


def exact_reduction(combine: Any) -> bool:
    """Whether a reduction with combine function `combine` (a JITFunction) rounds nothing."""
    return getattr(getattr(combine, "fn", combine), "__name__", "") in _EXACT_COMBINES


def floating(handle: Any) -> bool:
    """Whether an interpreter value holds floats (not pointers, not integers, not the booleans of
    a comparison of floats, which the interpreter types as its operands)."""
    dtype = getattr(handle, "dtype", None)
    if dtype is None or dtype.is_ptr() or not dtype.is_floating():
        return False
    data = handle.__dict__.get("data") if hasattr(handle, "__dict__") else None
    return not (isinstance(data, np.ndarray) and data.dtype == np.bool_)


def real64(handle: Any) -> np.ndarray:
    """A float value's own values, in fp64 (made once per value: a loaded tile is the shadow and
    the local value of every operation that reads it)."""
    data = handle.data
    cached = getattr(handle, REAL64, None)
    if cached is not None and cached[0] is data:
        return cached[1]
    name = str(handle.dtype)
    values = np.asarray(data)
    if numerics.is_bits_float(name):
        values = numerics.decode(values, name)
    values = values.astype(np.float64, copy=False)  # an fp64 value's own array serves
    setattr(handle, REAL64, (data, values))
    return values


def shadow_of(handle: Any) -> np.ndarray:
    """A float value's shadow (its own values upcast where it has none)."""
    shadow = getattr(handle, SHADOW, None)
    return real64(handle) if shadow is None else shadow


def local_of(handle: Any, epoch: int) -> np.ndarray:
    """A float value as the statement of `epoch` reads it: its local value if that statement made
    it, else its own values upcast."""
    if getattr(handle, EPOCH, None) == epoch:
        local = getattr(handle, LOCAL, None)
        if local is not None:
            return local
    return real64(handle)


def has_local(handle: Any, epoch: int) -> bool:
    """Whether the statement of `epoch` made `handle` with a local value other than its values."""
    return getattr(handle, EPOCH, None) == epoch and getattr(handle, LOCAL, None) is not None


def held_bytes(handle: Any) -> int:
    """Bytes of the fp64 arrays the shadow keeps on a value past its statement (0 without a
    shadow): its shadow and its values upcast, not its local value (see ShadowRun.record)."""
    arrays = {id(a): a for a in (getattr(handle, SHADOW, None),) if a is not None}
    cached = getattr(handle, REAL64, None)
    if cached is not None and cached[1] is not cached[0]:  # an fp64 value's upcast is itself
        arrays[id(cached[1])] = cached[1]
    return sum(a.nbytes for a in arrays.values())


def settle_exact(handle: Any, shadow: np.ndarray) -> None:
    """A value whose shadow equals its values (to 2**-150 and less: their difference in fp32 is
    0) becomes one without a shadow, its values upcast being the shadow's array: then
    `shadow_of(h) is local_of(h, e)`, which tells the operations that read it that one fp64 run
    serves for both."""
    setattr(handle, SHADOW, None)
    setattr(handle, REAL64, (handle.data, shadow))


def attach(handle: Any, shadow: np.ndarray, local: np.ndarray | None, epoch: int) -> None:
    setattr(handle, SHADOW, shadow)
    setattr(handle, LOCAL, local)
    setattr(handle, EPOCH, epoch)


def as64(handle: Any, values: np.ndarray) -> Any:
    return triton_compat.TensorHandle(values, tl.float64)


def tensor64(value: Any, values: np.ndarray) -> Any:
    """A tensor like `value` (a float tensor) holding fp64 `values`."""
    ty = value.type
    if getattr(ty, "is_block", lambda: False)():
        return tl.core.tensor(as64(value.handle, values), tl.block_type(tl.float64, list(ty.shape)))
    return tl.core.tensor(as64(value.handle, values), tl.float64)


def handles(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [h for h in result if isinstance(h, triton_compat.TensorHandle)]
    return [result] if isinstance(result, triton_compat.TensorHandle) else []


def ulps_of(real: np.ndarray, reference: np.ndarray, type_name: str, spacing: np.ndarray) -> np.ndarray:
    """|real - reference| in units in the last place of `type_name` at the real values (`spacing`,
    `numerics.ulp` of them), as fp32; 0 where they are equal, infinities included; NaN where either
    is NaN or only one is infinite."""
    if real is reference:
        return np.broadcast_to(np.float32(0), np.shape(real))  # exact: one row for all
    small = np.empty(np.broadcast_shapes(np.shape(real), np.shape(reference)), np.float32)
    with np.errstate(all="ignore"):
        # the difference in fp64, written as fp32: ulps need no more digits than fp32 has
        np.subtract(real, reference, out=small, casting="unsafe")
        np.abs(small, out=small)
        np.divide(small, spacing, out=small, casting="unsafe")
    if np.isnan(small.max(initial=0.0)):  # NaN propagates through max: a pass only when there is one
        undefined = np.isnan(small)
        small[undefined & (real == reference)] = 0.0  # an infinity the shadow has too is no error
    return small


def operand64(arg: Any, values: Callable[[Any], np.ndarray]) -> Any:
    """An operation's argument, a float operand as an fp64 handle of `values` of it."""
    if isinstance(arg, triton_compat.TensorHandle) and floating(arg):
        return as64(arg, values(arg))
    return arg


def operands64(
    args: Any, values: Callable[[Any], np.ndarray], real: Callable[[Any], bool], widens: bool
) -> list[Any]:
    """An operation's arguments with fp64 values for its float operands (`values` of them).
    Where it `widens` (see WIDENING_OPERATIONS), an operand whose values would be its real ones
    upcast (`real`) enters as its fp16/fp32 values when another operand is fp64 already: numpy
    widens them as it runs, and no fp64 copy is made (of a load every statement reads, say)."""
    if not (widens and WIDENS):
        return [operand64(a, values) for a in args]
    floats = [i for i, a in enumerate(args) if isinstance(a, triton_compat.TensorHandle) and floating(a)]
    raw = {i for i in floats if str(args[i].dtype) in ("fp16", "fp32") and real(args[i])}
    upcast: int | None = None
    if raw and len(raw) == len(floats):
        # one fp64 operand for the others to widen to: the smallest (a row's scalar, broadcast)
        upcast = min(raw, key=lambda i: _compact(np.asarray(args[i].data)).size)
        raw.discard(upcast)
    return [
        as64(a, np.asarray(a.data))
        if i in raw
        else as64(a, _upcast(np.asarray(a.data)))
        if i == upcast
        else operand64(a, values)
        for i, a in enumerate(args)
    ]


def _compact(data: np.ndarray) -> np.ndarray:
    """A broadcast array's own elements: its axes of stride 0 cut to one."""
    if not data.ndim or all(data.strides):
        return data
    return data[tuple(slice(0, 1) if not st else slice(None) for st in data.strides)]


def _upcast(data: np.ndarray) -> np.ndarray:
    """`data` in fp64, a broadcast array upcast as its own elements and broadcast again."""
    return np.broadcast_to(_compact(data).astype(np.float64), data.shape)


def selected_whole(args: Any, result: Any, epoch: int) -> bool:
    """`tl.where(c, a, b)` with `c` the same everywhere (a full tile's mask): the result is `a`
    or `b` as it is, and so are its shadow and local value (no fp64 select run). False where
    the condition differs between lanes."""
    cond, *operands = args
    condition = np.asarray(getattr(cond, "data", cond))
    if condition.dtype != np.bool_ or not condition.size:
        return False
    if condition.all():
        chosen = operands[0]
    elif not condition.any():
        chosen = operands[1]
    else:
        return False
    if not (isinstance(chosen, triton_compat.TensorHandle) and floating(chosen)):
        return False
    if np.shape(chosen.data) != np.shape(result.data):
        return False  # a broadcast operand: the select makes the result's shape
    shadow = getattr(chosen, SHADOW, None)
    if shadow is not None:
        attach(result, shadow, getattr(chosen, LOCAL, None) if has_local(chosen, epoch) else None, epoch)
    return True


def follow(result: Any, rows: Callable[..., Any], *sources: Any) -> None:
    """Where the batched strategy made `result` from rows of `sources` with `rows` (a masked
    loop narrowing its values to the programs still running, or merging them back), the same rows
    of their shadows, and of their local values while the statement that made them runs."""
    if not floating(result) or all(getattr(h, SHADOW, None) is None for h in sources):
        return
    epoch = max(getattr(h, EPOCH, -1) for h in sources)
    shadow = rows(*[as64(h, shadow_of(h)) for h in sources])
    if all(getattr(h, LOCAL, None) is None for h in sources):
        # their statements are done (see ShadowRun.record): a later one reads the values upcast
        attach(result, np.asarray(shadow.data), None, -1)
        return
    local = rows(*[as64(h, local_of(h, epoch)) for h in sources])
    attach(result, np.asarray(shadow.data), np.asarray(local.data), epoch)
