"""The fp64 shadow's copies of the buffers a launch stores into (see engine/shadow.py): each starts
as the buffer's inputs upcast and takes the shadow of every float value stored; which elements a
float store wrote, and with which statement's value, go to the precision findings
(`checks.precision`), which measure the launch's results against it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernel_nb.checks.precision import StoredOutput
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.shadow_values import MADE_BY, shadow_of

_EXCHANGE = np.positive  # stands for "the new value replaces the old" (a plain write)
# a float atomic's operation as a ufunc whose .at applies lanes on one element in turn
_ATOMIC = {"add": np.add, "fadd": np.add, "max": np.fmax, "min": np.fmin, "xchg": _EXCHANGE}

TileOffsets = Callable[[Any], "tuple[np.ndarray, np.ndarray, str] | None"]


class References:
    """Per buffer argument the launch stored floats into, its fp64 reference and what was stored."""

    def __init__(self, addresses: AddressMap, inputs: Callable[[str], np.ndarray]) -> None:
        """
        Args:
            addresses: turns the stores' pointers into elements of the buffer arguments.
            inputs: a buffer argument's elements before the launch, by name.
        """
        self.addresses = addresses
        self.inputs = inputs
        self.references: dict[str, np.ndarray] = {}
        self.outputs: dict[str, StoredOutput] = {}
        # per batch row, whether its program still runs the masked loop it is in (None: all)
        self.loop_active: Callable[[], np.ndarray | None] = lambda: None
        # a batched pointer block's tile form as element offsets (see ShadowRun.installed)
        self.tile_offsets: TileOffsets | None = None
        # how many programs a batched value's rows stand for (1: the serial strategy's one)
        self.rows: Callable[[], int] = lambda: 1
        # per buffer, the elements an access the shadow does not follow wrote (an atomic on a
        # float's bits: tl.atomic_max of floats, a compare-and-swap): see `settle`
        self.unfollowed: dict[str, np.ndarray] = {}

    def _reference(self, name: str) -> np.ndarray:
        """Buffer `name`'s reference, made from its inputs upcast at its first use."""
        reference = self.references.get(name)
        if reference is None:
            reference = self.references[name] = np.asarray(self.inputs(name)).astype(np.float64).reshape(-1)
        return reference

    def _target(self, name: str, dtype: str) -> tuple[np.ndarray, StoredOutput]:
        """Buffer `name`'s reference and the record of what float accesses of `dtype` wrote there."""
        reference = self._reference(name)
        output = self.outputs.get(name)
        if output is None:
            output = self.outputs[name] = StoredOutput(dtype, np.zeros(reference.size, bool), set())
        return reference, output

    def unfollowed_write(self, ptrs: Any, mask: Any) -> None:
        """An access the shadow does not follow may have written the elements `ptrs` point to."""
        addresses = np.asarray(ptrs.data)
        if not addresses.size:
            return
        offsets, name = self.addresses.offsets(addresses)
        if name is None:
            return
        written = self.unfollowed.get(name)
        if written is None:
            written = self.unfollowed[name] = np.zeros(np.asarray(self.inputs(name)).size, bool)
        lanes = np.ones(addresses.shape, bool)
        if mask is not None:
            lanes &= np.broadcast_to(_lanes(mask), addresses.shape)
        at = offsets[lanes]
        written[at[(at >= 0) & (at < written.size)]] = True

    def settle(self, results: Callable[[str], np.ndarray]) -> None:
        """At the launch's end: elements of float buffers that accesses the shadow does not follow
        wrote take the launch's own results (`results(name)`), which are all the shadow knows of
        them; the precision findings leave them out."""
        for name, written in self.unfollowed.items():
            inputs = np.asarray(self.inputs(name))
            if not (inputs.dtype.kind == "f" or "float" in inputs.dtype.name) or not written.any():
                continue
            reference = self._reference(name)
            reference[written] = np.asarray(results(name)).astype(np.float64).reshape(-1)[written]
            output = self.outputs.get(name)
            if output is not None:
                output.stored[written] = False

    def store(self, ptrs: Any, value: Any, mask: Any) -> None:
        """A float store of `value` through `ptrs` (lanes where `mask`, None: all) happened."""
        shadow = shadow_of(value)
        tile = self.tile_offsets(ptrs) if self.tile_offsets is not None and shadow.ndim else None
        offsets: np.ndarray | None = None
        if tile is not None:
            shift, lanes, name = tile
            shape: tuple[int, ...] = (shift.size, *shadow.shape[1:])
            if int(np.prod(shape[1:])) != lanes.size:
                tile = None
        if tile is None:
            addresses = np.asarray(ptrs.data)
            shape = addresses.shape
            offsets, found = self.addresses.offsets(addresses)
            if found is None:
                return
            name = found
        if not int(np.prod(shape)):
            return
        lanes_on: np.ndarray | None = None if mask is None else _lanes(mask)
        if lanes_on is not None and lanes_on.all():
            lanes_on = None
        active = self.loop_active()
        if active is not None and (not len(shape) or active.size != shape[0] or active.all()):
            active = None
        stored: np.ndarray | None = None  # None: every lane
        if lanes_on is not None:
            stored = np.broadcast_to(lanes_on, shape)
        if active is not None:
            rows = np.broadcast_to(active.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
            stored = rows if stored is None else stored & rows
        if stored is not None and not stored.any():
            return
        reference, output = self._target(name, str(value.dtype))
        values = np.broadcast_to(shadow, shape)
        span = _contiguous(shift, lanes) if tile is not None and stored is None else None
        if span is not None and span[0] >= 0 and span[1] <= reference.size:
            # one run of elements (a block per program, the programs side by side): no index array
            lo, hi = span
            reference[lo:hi] = values.reshape(-1)
            output.stored[lo:hi] = True
        elif tile is not None and active is None and lanes_on is not None and lanes_on.shape[0] == 1:
            # every program stores the same lanes of its block (cols < n): those lanes' columns
            chosen = np.flatnonzero(lanes_on.reshape(-1))
            rows = values.reshape(shape[0], -1)
            if chosen[-1] == chosen.size - 1:  # a leading run of lanes: a view, no gather
                self._put(
                    reference, output, np.add.outer(shift, lanes[: chosen.size]), rows[:, : chosen.size]
                )
            else:
                self._put(reference, output, np.add.outer(shift, lanes[chosen]), rows[:, chosen])
        else:
            if offsets is None:
                offsets = np.add.outer(shift, lanes).reshape(shape)
            if stored is None:
                self._put(reference, output, offsets, values)
            else:
                self._put(reference, output, offsets[stored], values[stored])
        _note_statement(output, value)

    def atomic(self, op: str, ptrs: Any, value: Any, mask: Any) -> None:
        """A float atomic `op` ("add", "fadd", "max", "min", "xchg") of `value` through `ptrs`
        (lanes where `mask`) happened: the reference takes the same operation with the shadow,
        lanes on one element one after another."""
        combine = _ATOMIC.get(op)
        shadow = shadow_of(value)
        addresses = np.asarray(ptrs.data)
        if combine is None or not addresses.size:
            return
        rows = self.rows()
        if addresses.ndim and addresses.shape[0] == 1 and rows > 1:
            # one row for every program of a batch: each program still makes its own access
            addresses = np.broadcast_to(addresses, (rows, *addresses.shape[1:]))
        offsets, name = self.addresses.offsets(addresses)
        if name is None:
            return
        stored = np.ones(addresses.shape, bool)
        if mask is not None:
            stored &= np.broadcast_to(_lanes(mask), addresses.shape)
        active = self.loop_active()
        if active is not None and addresses.ndim and active.size == addresses.shape[0]:
            stored &= active.reshape((-1,) + (1,) * (addresses.ndim - 1))
        reference, output = self._target(name, str(value.dtype))
        at, values = offsets[stored], np.broadcast_to(shadow, addresses.shape)[stored]
        inside = (at >= 0) & (at < reference.size)
        at, values = at[inside], values[inside]
        if combine is _EXCHANGE:
            reference[at] = values
        else:
            combine.at(reference, at, values)
        output.stored[at] = True
        _note_statement(output, value)

    @staticmethod
    def _put(reference: np.ndarray, output: StoredOutput, at: np.ndarray, values: np.ndarray) -> None:
        """Elements `at` of the buffer (lanes outside it left out) take `values`."""
        at, values = at.reshape(-1), values.reshape(-1)
        if at.size and (int(at.min()) < 0 or int(at.max()) >= reference.size):
            inside = (at >= 0) & (at < reference.size)
            at, values = at[inside], values[inside]
        reference[at] = values
        output.stored[at] = True


def _note_statement(output: StoredOutput, value: Any) -> None:
    """The statement whose recorded value `value` is (if it is one) wrote into `output`."""
    made_by = getattr(value, MADE_BY, None)
    if made_by is not None:
        output.statements.add(made_by)


def _lanes(mask: Any) -> np.ndarray:
    """A mask's lanes: a handle's data, or a bare array."""
    return np.asarray(getattr(mask, "data", mask), bool)


def _contiguous(shift: np.ndarray, lanes: np.ndarray) -> tuple[int, int] | None:
    """The elements [lo, hi) that rows at `shift` of `lanes` cover, where they are one run in
    row order (each row's lanes consecutive, each row where the last ended); else None."""
    flat = lanes.reshape(-1)
    count = flat.size
    if not count or flat[-1] - flat[0] != count - 1 or (count > 1 and (np.diff(flat) != 1).any()):
        return None
    starts = np.asarray(shift).reshape(-1) + int(flat[0])
    if starts.size > 1 and (np.diff(starts) != count).any():
        return None
    return int(starts[0]), int(starts[0]) + count * starts.size
