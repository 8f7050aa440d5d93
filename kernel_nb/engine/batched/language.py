"""triton.language for batched values: the parts of the language that read values directly
(`int(x)`, `if x:`, `x.T`, `tl.reduce`, `tl.associative_scan`) redefined to work on every
program's row at once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import triton.language as tl

from kernel_nb.engine import triton_compat
from kernel_nb.engine.batched.builder import Divergence, LoopMask, TensorHandle, batch_rows, leading


def _uniform(data: np.ndarray, loop_mask: LoopMask) -> np.ndarray:
    """The first element of each program's value; Divergence when they differ (among the programs
    a masked loop still runs: the others' values are never used)."""
    firsts = np.asarray(data).reshape(data.shape[0], -1)[:, 0]
    active = loop_mask.active
    considered = firsts[active] if active is not None and firsts.size == active.size else firsts
    if considered.size > 1 and not (considered == considered[0]).all():
        raise Divergence(firsts)
    return considered


def _index(loop_mask: LoopMask) -> Callable[[Any], int]:
    def index(self: Any) -> int:
        triton_compat.refuse_block_as_int(self)  # as the serial strategy and the compiler do
        return int(_uniform(self.handle.data, loop_mask)[0])

    return index


def _truth(loop_mask: LoopMask) -> Callable[[Any], bool]:
    def truth(self: Any) -> bool:
        data = self.handle.data
        if data[0].size != 1:  # as in the stock interpreter: only scalars have a truth value
            return True
        return bool(_uniform(data, loop_mask)[0])

    return truth


def _transpose(self: Any) -> Any:
    data = self.handle.data
    perm = (0, *range(1, data.ndim - 2), data.ndim - 1, data.ndim - 2)
    shape = list(self.type.shape)
    shape[-1], shape[-2] = shape[-2], shape[-1]
    return tl.core.tensor(
        TensorHandle(np.transpose(data, perm), self.handle.dtype), tl.block_type(self.dtype, shape)
    )


def _wrap(data: np.ndarray, dtype: Any, shape: list[int]) -> Any:
    np_dtype = triton_compat.np_dtype(dtype)
    if shape:
        return tl.core.tensor(TensorHandle(data.astype(np_dtype), dtype.scalar), tl.block_type(dtype, shape))
    return tl.core.tensor(TensorHandle(data.reshape(data.shape[0], 1).astype(np_dtype), dtype.scalar), dtype)


def _reduce(input: Any, axis: Any, combine_fn: Any, keep_dims: bool = False, **kwargs: Any) -> Any:
    inputs = input if isinstance(input, tuple) else (input,)
    shape = list(inputs[0].shape)
    b = leading(*(t.handle.data for t in inputs))
    datas = [
        batch_rows(t.handle.data, b).reshape((b, *shape)) if shape else batch_rows(t.handle.data, b)
        for t in inputs
    ]
    if axis is None:
        datas = [d.reshape(b, -1) for d in datas]
        ax, out_shape = 1, []
    else:
        axis = axis % len(shape)
        ax, out_shape = axis + 1, shape[:axis] + shape[axis + 1 :]
    kind = triton_compat.combine_kind(combine_fn)
    first = datas[0]
    if kind == "sum":
        results = [np.sum(first, axis=ax)]
    elif kind == "max":
        results = [np.nanmax(first, axis=ax)]
    elif kind == "min":
        results = [np.nanmin(first, axis=ax)]
    elif kind == "argmax":
        results = [np.nanmax(first, axis=ax), np.nanargmax(first, axis=ax)]
    elif kind == "argmin":
        results = [np.nanmin(first, axis=ax), np.nanargmin(first, axis=ax)]
    else:
        return _generic_reduce(inputs, datas, ax, out_shape, combine_fn, keep_dims, axis)
    dtypes = [inputs[0].dtype, tl.int32][: len(results)]
    out = []
    for data, dtype in zip(results, dtypes):
        if keep_dims:
            data = np.expand_dims(data, ax) if axis is not None else data.reshape((b,) + (1,) * len(shape))
            out.append(_wrap(data, dtype, [1] * len(shape) if axis is None else _keep(shape, axis)))
        else:
            out.append(_wrap(data, dtype, out_shape))
    return out[0] if len(out) == 1 else tuple(out)


def _keep(shape: list[int], axis: int) -> list[int]:
    return [*shape[:axis], 1, *shape[axis + 1 :]]


def _generic_reduce(
    inputs: tuple[Any, ...],
    datas: list[np.ndarray],
    ax: int,
    out_shape: list[int],
    combine_fn: Any,
    keep_dims: bool,
    axis: Any,
) -> Any:
    # a left fold along the axis, all programs and all other positions at once: the same order of
    # combination as the serial interpreter's element-by-element loop
    def take(i: int) -> list[Any]:
        return [_wrap(np.take(d, i, axis=ax), t.dtype, out_shape) for d, t in zip(datas, inputs)]

    acc = take(0)
    for i in range(1, datas[0].shape[ax]):
        combined = combine_fn.fn(*acc, *take(i))
        acc = list(combined) if isinstance(combined, tuple) else [combined]
    if keep_dims:
        shape = list(inputs[0].shape)
        kept = [1] * len(shape) if axis is None else _keep(shape, axis)
        acc = [_wrap(a.handle.data.reshape((a.handle.data.shape[0], *kept)), a.dtype, kept) for a in acc]
    return acc[0] if len(acc) == 1 else tuple(acc)


def _scan(input: Any, axis: int, combine_fn: Any, reverse: bool = False, **kwargs: Any) -> Any:
    inputs = input if isinstance(input, tuple) else (input,)
    shape = list(inputs[0].shape)
    b = leading(*(t.handle.data for t in inputs))
    axis = axis % len(shape)
    ax = axis + 1
    datas = [batch_rows(t.handle.data, b) for t in inputs]
    if reverse:
        datas = [np.flip(d, axis=ax) for d in datas]
    kind = triton_compat.combine_kind(combine_fn)
    if kind == "sum":
        outs = [np.cumsum(datas[0], axis=ax)]
    elif kind == "prod":
        outs = [np.cumprod(datas[0], axis=ax)]
    else:
        slice_shape = shape[:axis] + shape[axis + 1 :]
        pieces: list[list[np.ndarray]] = [[] for _ in datas]
        acc = None
        for i in range(datas[0].shape[ax]):
            current = [_wrap(np.take(d, i, axis=ax), t.dtype, slice_shape) for d, t in zip(datas, inputs)]
            if acc is None:
                acc = current
            else:
                combined = combine_fn.fn(*acc, *current)
                acc = list(combined) if isinstance(combined, tuple) else [combined]
            for j, a in enumerate(acc):
                pieces[j].append(batch_rows(a.handle.data, b).reshape((b, *slice_shape)))
        outs = [np.stack(p, axis=ax) for p in pieces]
    if reverse:
        outs = [np.flip(o, axis=ax) for o in outs]
    result = [_wrap(np.ascontiguousarray(o), t.dtype, shape) for o, t in zip(outs, inputs)]
    return result[0] if len(result) == 1 else tuple(result)


@contextmanager
def batched_language(loop_mask: LoopMask) -> Iterator[None]:
    """Redefine the parts of triton.language that read values directly (the caller restores them:
    this runs inside the interpreter scope, whose namespace snapshot undoes it)."""
    triton_compat.patch_value_reads(
        index=_index(loop_mask), truth=_truth(loop_mask), transpose=_transpose, reduce=_reduce, scan=_scan
    )
    yield


def batched_value(value: Any) -> Any:
    """A kernel argument as the batched builder expects it: a leading axis of size 1."""
    if triton_compat.is_tensor(value):
        handle = value.handle
        return tl.core.tensor(
            TensorHandle(handle.data.reshape(1, *handle.data.shape), handle.dtype), value.type
        )
    if isinstance(value, tuple) and not hasattr(value, "data_ptr"):
        return triton_compat.make_tuple(value, (batched_value(v) for v in value))
    return value
