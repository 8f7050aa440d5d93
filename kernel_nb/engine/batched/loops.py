"""Loops whose trip count differs between a batch's programs, run once for all of them.

Each iteration holds the rows of the programs still running only (with range bookkeeping, where
the guard can follow: `loop_narrow`), or all rows with the others masked; the programs that are
done make no loads, stores, records or events, and the loop's names keep their values for them
(`loop_merge`). The batch's recorder takes these methods from `MaskedLoops`.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernel_nb.engine import shadow, triton_compat
from kernel_nb.engine.batched.builder import Divergence, LoopMask
from kernel_nb.engine.batched.tiles import rows_of, shape_of, widened
from kernel_nb.trace import Pid


class MaskedLoops:
    """The batch recorder's part that runs masked loops (see the module's docstring)."""

    batch: list[Pid]
    frames: list[Any]
    loop_mask: LoopMask
    hold_rows: Callable[[np.ndarray | None], None]
    narrows: bool  # iterations may narrow to the programs still running
    active: np.ndarray | None  # the programs a masked loop still runs (None: all)
    trips: np.ndarray | None  # per program, the masked loop's trip count
    at: np.ndarray | None  # the batch rows values hold (None: every row)
    split_trips: np.ndarray | None
    _masked_depth: tuple[int, int] | None
    _narrowing: bool

    def loop_range(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A range whose stop differs between programs runs for all of them together: each iteration
        on the programs still running (see loop_narrow), or on all of them with the others masked
        (their memory accesses off); the finished programs' values are kept (see loop_merge)."""
        # one masked loop at a time: a loop inside it runs as the programs still running agree
        bounds = None if self.trips is not None else _range_bounds(fn, args, kwargs, len(self.batch))
        if bounds is None:
            return fn(*args, **kwargs)  # one trip count for all, or Divergence splits the batch
        start, stop, step = bounds
        trips = np.maximum(0, -(-(stop - start) // step))
        if (trips == 0).any() or trips.min() == trips.max():
            return fn(*args, **kwargs)
        return self._masked_loop(start, step, trips)

    def _masked_loop(self, start: int, step: int, trips: np.ndarray) -> Iterator[int]:
        self.trips = self.loop_mask.trips = trips
        self.split_trips = trips
        self._masked_depth = (len(self.frames), len(self.frames[-1].loops))
        # with range bookkeeping, an iteration runs on the programs still running alone (their
        # rows narrowed: see loop_narrow); else on all of them, the others masked
        self._narrowing = self.narrows
        try:
            for k in range(int(trips.max())):
                active = trips > k
                self.active = None if active.all() else active
                narrow = self._narrowing and self.active is not None
                self._hold(np.flatnonzero(active) if narrow else None)
                self.loop_mask.active = None if narrow else self.active
                yield start + k * step
        finally:
            self._hold(None)
            self.active = self.trips = self._masked_depth = None
            self.loop_mask.clear()

    def _hold(self, at: np.ndarray | None) -> None:
        """Values hold rows `at` of the batch from now on (None: all rows)."""
        if at is None and self.at is None:
            return
        self.at = at
        self.hold_rows(at)

    def loop_snapshot(self, names: dict[str, Any], needed: tuple[str, ...]) -> Any:
        if self.trips is None:
            return None
        # only what narrowing and merging read: never the probe's own names (they hold the
        # snapshot of the iteration before, chaining every iteration's values together)
        mine = {name: names[name] for name in needed if name in names}
        if (len(self.frames), len(self.frames[-1].loops)) == self._masked_depth:
            return _MaskedLoopNames(mine)  # the masked loop's own iteration
        return mine

    def loop_narrow(self, saved: Any, names: tuple[str, ...]) -> dict[str, Any] | None:
        """The names a masked loop's body reads, narrowed to the rows of the programs it still
        runs (values that are the same in every program stay as they are)."""
        at = self.at
        if at is None or not isinstance(saved, _MaskedLoopNames):
            return None
        batch = len(self.batch)
        narrowed = {}
        for name in names:
            if name not in saved:
                continue
            value = saved[name]
            if triton_compat.is_tensor(value):
                if shape_of(value.handle)[:1] == (batch,):
                    rows = rows_of(value.handle, at)
                    shadow.follow(rows, lambda h: rows_of(h, at), value.handle)
                    narrowed[name] = triton_compat.tensor_with_handle(value, rows)
            elif _holds_rows(value, batch):
                # a tuple of per-program values: this loop runs on all programs, the others masked
                self._narrowing = False
                self._hold(None)
                self.loop_mask.active = self.active
                return None
        saved.narrowed = tuple(narrowed)
        return narrowed

    def loop_merge(
        self, saved: Any, names: dict[str, Any], assigned: tuple[str, ...]
    ) -> dict[str, Any] | None:
        """For the programs a masked loop is done with, the values the body's names had before;
        after a narrowed iteration, every name made whole again."""
        at, active, batch = self.at, self.active, len(self.batch)
        combine: Callable[[Any, Any], Any]
        if at is not None:
            if not isinstance(saved, _MaskedLoopNames):
                return None  # a loop inside the narrowed one: every row held runs it
            combine = lambda old, new: widened(old, new, at, batch)  # noqa: E731
        elif saved is None or active is None:
            return None
        else:

            def combine(old: Any, new: Any) -> Any:
                rows = np.broadcast_to(new.data, (batch, *new.data.shape[1:]))
                before = np.broadcast_to(old.data, rows.shape)
                kept = np.where(active.reshape((batch,) + (1,) * (rows.ndim - 1)), rows, before)
                return triton_compat.TensorHandle(kept, new.dtype)

        merged = {}
        for name in assigned:
            if name not in saved or name not in names or saved[name] is names[name]:
                continue
            old, new = saved[name], names[name]
            if triton_compat.is_tensor(old) and triton_compat.is_tensor(new) and old.type == new.type:
                made = combine(old.handle, new.handle)
                shadow.follow(made, combine, old.handle, new.handle)
                merged[name] = triton_compat.tensor_with_handle(new, made)
            elif not (triton_compat.is_tensor(old) or triton_compat.is_tensor(new)) and _same(old, new):
                continue
            else:  # a value the batch cannot hold per program: split the batch by trip count
                raise Divergence(self.trips if self.trips is not None else np.zeros(batch))
        if at is not None:
            for name in saved.narrowed:  # read, not assigned: the whole value from before
                if name not in assigned:
                    merged[name] = saved[name]
        return merged


class _MaskedLoopNames(dict):  # type: ignore[type-arg]
    """A masked loop's names at the top of an iteration; `narrowed`: those loop_narrow narrowed."""

    narrowed: tuple[str, ...] = ()


def _holds_rows(value: Any, batch: int) -> bool:
    """Whether a tuple or list holds a value per program (tensors with a row per program)."""
    if isinstance(value, (tuple, list)):
        return any(_holds_rows(v, batch) for v in value)
    return triton_compat.is_tensor(value) and shape_of(value.handle)[:1] == (batch,) and batch > 1


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _range_bounds(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], batch: int
) -> tuple[int, np.ndarray, int] | None:
    """(start, per-program stop, step) of range(...) or tl.range(...) whose start and step are the
    same for every program and whose stop is not (None: anything else)."""
    if fn is builtins.range:
        if kwargs or not 1 <= len(args) <= 3:
            return None
        values = list(args)
    elif triton_compat.is_interpreter_range(fn):
        values = [args[0] if args else kwargs.get("arg1")]
        values += [args[1] if len(args) > 1 else kwargs.get("arg2")]
        values += [args[2] if len(args) > 2 else kwargs.get("step")]
        if values[1] is None:
            values = [values[0]]
        elif values[2] is None:
            values = values[:2]
    else:
        return None
    if len(values) == 1:
        values = [0, values[0], 1]
    elif len(values) == 2:
        values = [values[0], values[1], 1]
    start, stop, step = (_per_program(v, batch) for v in values)
    if start is None or stop is None or step is None:
        return None
    if start.min() != start.max() or step.min() != step.max() or step[0] == 0:
        return None
    if stop.min() == stop.max():
        return None
    return int(start[0]), stop.astype(np.int64), int(step[0])


def _per_program(value: Any, batch: int) -> np.ndarray | None:
    value = triton_compat.unwrap_constexpr(value)
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return np.full(batch, int(value), np.int64)
    if triton_compat.is_tensor(value):
        data = np.asarray(triton_compat.tensor_data(value))
        if data.dtype.kind not in "iu" or data.size != data.shape[0]:
            return None
        return np.broadcast_to(data.reshape(-1).astype(np.int64), (batch,))
    return None
