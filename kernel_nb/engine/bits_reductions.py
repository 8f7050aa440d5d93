"""Reductions and scans of bf16 and fp8 values, combined in the GPU's order and rounded at each step.

Triton's interpreter holds bf16/fp8 values as raw bits and reduces them with one numpy call, which
adds or compares the bit patterns (a bf16 cumsum of [1, 2, 3, 4] came out as [1, inf, -1.5, 6e-39]).
What the GPU does, measured on an H200 (tests/engine/fixtures/gpu_numerics.npz): a scan combines
values of the element type, each step rounded, at strides 1, 2, 4, ... (a warp's shuffle-up scan);
here the same strides run on whole arrays at once, each step rounded, so the error grows with log2
of the length as on the GPU, not with the length. A reduction keeps its partial results in 32-bit
registers and rounds once: here a float32 sum, rounded to the element type. The order inside a
thread and between warps, which depends on the compiled layout, is not modelled: results can differ
from the GPU's in the last bits.

Sums, products, maxima and minima (and argmax/argmin) of tl.standard take this path; any other
combine function runs through the interpreter's step-by-step fallback, whose every operation is
rounded by the arithmetic hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.engine import triton_compat

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]


@contextmanager
def gpu_order() -> Iterator[None]:
    """While entered, tl.reduce and tl.associative_scan of bf16/fp8 values combine as the GPU does."""
    tl = triton_compat.tl
    spaces = [tl, tl.core]
    saved = {
        (space, name): getattr(space, name) for space in spaces for name in ("reduce", "associative_scan")
    }
    kinds = triton_compat.standard_combines()

    def wrap(original: Any, scan: bool) -> Any:
        def call(input: Any, axis: Any, combine_fn: Any, *args: Any, **kwargs: Any) -> Any:
            values = input if isinstance(input, tuple) else (input,)
            if not any(_holds_bits(v) for v in values):
                return original(input, axis, combine_fn, *args, **kwargs)
            kind = next((k for fn, k in kinds if fn is combine_fn), None)
            if scan and kind in ("argmax", "argmin"):
                kind = None
            if kind is None:  # the interpreter's step-by-step fallback, every step rounded
                return original(input, axis, _Stepwise(combine_fn), *args, **kwargs)
            # the interpreter's own result gives the types and shapes; its values are replaced
            result = original(input, axis, combine_fn, *args, **kwargs)
            outputs = result if isinstance(result, tuple) else (result,)
            reverse = bool(args[0] if args else kwargs.get("reverse", False)) if scan else False
            _replace(values, outputs, axis, kind, scan, reverse)
            return result

        return call

    for (space, name), original in saved.items():
        setattr(space, name, wrap(original, scan=name == "associative_scan"))
    try:
        yield
    finally:
        for (space, name), original in saved.items():
            setattr(space, name, original)


def _replace(
    values: tuple[Any, ...], outputs: tuple[Any, ...], axis: Any, kind: str, scan: bool, reverse: bool
) -> None:
    value = values[0]
    name = str(value.dtype.scalar)
    data = np.asarray(value.handle.data)
    lead = data.ndim - len(value.shape)  # the batched strategy's program axis
    floats = numerics.decode(data, name)
    shape = (*data.shape[:lead], -1) if axis is None else data.shape
    floats = floats.reshape(shape)
    ax = lead if axis is None else lead + axis % len(value.shape)
    if scan:
        found = [_scan(floats, ax, kind, name, reverse)]
    else:
        found = _reduce(floats, ax, kind, name)
        if len(found) == 2 and len(values) == 2:  # argmax of (values, indices): the given indices
            indices = np.broadcast_to(np.asarray(values[1].handle.data), data.shape).reshape(shape)
            found[1] = np.take_along_axis(indices, np.expand_dims(found[1], ax), axis=ax).squeeze(ax)
    for output, computed in zip(outputs, found):
        target = output.handle.data
        if computed.dtype.kind == "f":
            computed = numerics.encode(computed, name)
        output.handle.data = np.ascontiguousarray(computed.astype(target.dtype).reshape(target.shape))


def _rounded(op: Combine, name: str) -> Combine:
    def step(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return numerics.decode(numerics.encode(op(a, b), name), name)

    return step


def _reduce(x: np.ndarray, ax: int, kind: str, name: str) -> list[np.ndarray]:
    if kind in ("sum", "prod"):
        # the GPU keeps a reduction's partial results in 32-bit registers: measured on an H200, a
        # 1024-element bf16 sum is the fp32 sum rounded once (tests/engine/test_numerics.py)
        with np.errstate(all="ignore"):
            return [np.asarray((np.sum if kind == "sum" else np.prod)(x, axis=ax, dtype=np.float32))]
    with np.errstate(all="ignore"):
        if kind == "max":
            return [np.nanmax(x, axis=ax)]
        if kind == "min":
            return [np.nanmin(x, axis=ax)]
        pick = np.nanargmax if kind == "argmax" else np.nanargmin
        index = pick(np.where(np.isnan(x).all(axis=ax, keepdims=True), 0, x), axis=ax)
        return [np.take_along_axis(x, np.expand_dims(index, ax), axis=ax).squeeze(ax), index.astype(np.int32)]


def _scan(x: np.ndarray, ax: int, kind: str, name: str, reverse: bool) -> np.ndarray:
    x = np.moveaxis(x, ax, -1)
    if reverse:
        x = x[..., ::-1]
    if kind in ("sum", "prod"):
        step = _rounded(np.add if kind == "sum" else np.multiply, name)
        shift = 1
        while shift < x.shape[-1]:  # each position combines with the one `shift` before it
            x = np.concatenate([x[..., :shift], step(x[..., :-shift], x[..., shift:])], axis=-1)
            shift *= 2
    else:
        with np.errstate(invalid="ignore"):
            x = (np.fmax if kind == "max" else np.fmin).accumulate(x, axis=-1)
    if reverse:
        x = x[..., ::-1]
    return np.moveaxis(x, -1, ax)


class _Stepwise:
    """A combine function the interpreter does not recognise, so it combines step by step."""

    def __init__(self, combine_fn: Any) -> None:
        self.fn = combine_fn.fn


def _holds_bits(value: Any) -> bool:
    return triton_compat.is_tensor(value) and numerics.is_bits_float(str(value.dtype.scalar))
