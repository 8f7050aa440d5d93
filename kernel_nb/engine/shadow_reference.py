"""The fp64 shadow's copies of the buffers a launch stores into (see engine/shadow.py): each starts
as the buffer's inputs upcast and takes the shadow of every float value stored, beside the real
values stored, which the precision findings measure against it (`checks.precision`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernel_nb.checks.precision import StoredOutput
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.shadow_values import MADE_BY, real64, shadow_of

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

    def store(self, ptrs: Any, value: Any, mask: Any) -> None:
        """A float store of `value` through `ptrs` (lanes where `mask`, None: all) happened."""
        shadow, real = shadow_of(value), real64(value)
        tile = self.tile_offsets(ptrs) if self.tile_offsets is not None and real.ndim else None
        offsets: np.ndarray | None = None
        if tile is not None:
            shift, lanes, name = tile
            shape: tuple[int, ...] = (shift.size, *real.shape[1:])
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
        stored: np.ndarray | None = None  # None: every lane
        if mask is not None:
            lanes_on = np.asarray(mask.data, bool)
            if not lanes_on.all():
                stored = np.broadcast_to(lanes_on, shape)
        active = self.loop_active()
        if active is not None and len(shape) and active.size == shape[0] and not active.all():
            rows = np.broadcast_to(active.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
            stored = rows if stored is None else stored & rows
        if stored is not None and not stored.any():
            return
        reference = self.references.get(name)
        if reference is None:
            reference = self.references[name] = np.asarray(self.inputs(name)).astype(np.float64).reshape(-1)
        output = self.outputs.get(name)
        if output is None:
            output = self.outputs[name] = StoredOutput(
                str(value.dtype), np.full(reference.size, np.nan), np.zeros(reference.size, bool), set()
            )
        span = _contiguous(shift, lanes) if tile is not None and stored is None else None
        if span is not None and span[0] >= 0 and span[1] <= reference.size:
            # one run of elements (a block per program, the programs side by side): no index array
            lo, hi = span
            reference[lo:hi] = np.broadcast_to(shadow, shape).reshape(-1)
            output.values[lo:hi] = np.broadcast_to(real, shape).reshape(-1)
            output.stored[lo:hi] = True
        else:
            if offsets is None:
                offsets = np.add.outer(shift, lanes).reshape(shape)
            every = stored is None
            at = offsets.reshape(-1) if every else offsets[stored]
            inside = (at >= 0) & (at < reference.size)
            at = at[inside]
            reference[at] = (
                np.broadcast_to(shadow, shape).reshape(-1)
                if every
                else np.broadcast_to(shadow, shape)[stored]
            )[inside]
            output.values[at] = (
                np.broadcast_to(real, shape).reshape(-1) if every else np.broadcast_to(real, shape)[stored]
            )[inside]
            output.stored[at] = True
        made_by = getattr(value, MADE_BY, None)
        if made_by is not None:
            output.statements.add(made_by)


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
