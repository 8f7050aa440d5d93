"""One memory access of a batch as the range check saw it (batched_hooks): its addresses, the
rows that make it, each row's range, and, computed only where needed, the lanes' element indices
and their tile shape (batched_intervals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb.engine.args import BufferArg
from kernel_nb.engine.batched_builder import AFFINE, Affine, affine_of
from kernel_nb.engine.batched_intervals import TileShape


@dataclass
class Access:
    """The access being made, as the range check saw it (interval bookkeeping only).

    Attributes:
        ptrs: the pointer handle (its Affine form, once found, is kept on it).
        flat: (rows, lanes) host addresses.
        active: (rows, lanes) active lanes, None when all are.
        arg: the one argument every active lane falls in.
        lo, hi: per row, the map indices [lo, hi) its active lanes span (empty for no active lane).
        direct: the elements can be moved with numpy on the argument's copy (the pointer type is the
            argument's own, never cast), rather than through the interpreter's address-based copy.
        affine: the pointers' Affine form, where known.
        rows: where only some programs access, all their lanes (a masked loop's running programs):
            those rows; `flat`, `active` and `index()` then hold them only.
    """

    ptrs: Any
    addresses: np.ndarray
    flat: np.ndarray
    active: np.ndarray | None
    arg: BufferArg
    lo: np.ndarray
    hi: np.ndarray
    direct: bool
    affine: Affine | None = None
    rows: np.ndarray | None = None
    _index: np.ndarray | None = None

    def index(self) -> np.ndarray:
        """(rows, lanes) map indices of every lane (masked lanes: whatever their address gives)."""
        if self._index is None:
            arg = self.arg
            if self.affine is not None and self.direct:
                lanes, _ = self.affine.elements(arg.itemsize)
                base = self.affine.base
                if self.rows is not None and base.size > 1:
                    base = base[self.rows]
                shift = (base - arg.lo) // arg.itemsize
                self._index = np.broadcast_to(shift[:, None] + lanes[None, :], self.flat.shape)
                return self._index
            index = np.subtract(self.flat.view(np.int64), np.int64(arg.lo))
            if arg.itemsize & (arg.itemsize - 1) == 0:
                np.right_shift(index, arg.itemsize.bit_length() - 1, out=index)
            else:
                np.floor_divide(index, arg.itemsize, out=index)
            self._index = index
        return self._index

    def tile(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per batch row the map index of its tile's origin, and the lanes' element offsets from it
        (None: the access has no Affine form, or is not made in the argument's own elements)."""
        if self.direct and self.affine is None and getattr(self.ptrs, AFFINE, None) is None:
            if self.rows is None:
                self.affine = affine_of(self.flat)
                setattr(self.ptrs, AFFINE, self.affine or False)
        if not (self.affine and self.direct):
            return None
        lanes, _ = self.affine.elements(self.arg.itemsize)
        base = np.broadcast_to(self.affine.base, (len(self.lo),))
        return (base - self.arg.lo) // self.arg.itemsize, lanes

    def shape(self, live: np.ndarray) -> TileShape | None:
        """Each row's elements as one sorted set of lanes at a per-row shift (None: no such form,
        or a row touches an element twice)."""
        if self.active is None and self.direct:
            tile = self.tile()
            if tile is not None:
                assert self.affine
                _, ordered = self.affine.elements(self.arg.itemsize)
                if ordered is None:
                    return None
                return TileShape(ordered, np.broadcast_to(tile[0], live.shape))
        if self.rows is None:
            return TileShape.of(self.index(), self.active, live)
        shape = TileShape.of(self.index(), self.active, live[self.rows])
        if shape is None:
            return None
        shift = np.zeros(live.shape, np.int64)  # rows that access nothing are not live
        shift[self.rows] = shape.shift
        return TileShape(shape.lanes, shift)

    def gather(self, view: np.ndarray, fill: Any = None) -> np.ndarray:
        """view[index] for every lane of every row; `fill` (default 0) for masked lanes."""
        index = self.index()
        if self.rows is not None:
            full = np.zeros(self.addresses.shape, view.dtype).reshape(len(self.lo), -1)
            if fill is not None:
                full[...] = np.broadcast_to(fill, self.addresses.shape).reshape(full.shape)
            full[self.rows] = view[index]
            return full
        if self.active is None:
            return view[index]
        gathered = view[np.where(self.active, index, 0)]
        if fill is None:
            return np.where(self.active, gathered, np.zeros((), view.dtype))
        return np.where(
            self.active, gathered, np.broadcast_to(fill, self.addresses.shape).reshape(index.shape)
        )

    def full_index(self) -> np.ndarray:
        """index() for every row (rows that access nothing included)."""
        if self.rows is None:
            return self.index()
        index = np.subtract(self.addresses.reshape(len(self.lo), -1).view(np.int64), np.int64(self.arg.lo))
        return index // self.arg.itemsize


def view_of(arg: BufferArg, dtype: np.dtype) -> np.ndarray:
    """The argument's span of its host copy, as elements of `dtype` (the same size as its own)."""
    return arg.memory.copy[arg.span_lo : arg.span_hi].view(dtype)
