"""One memory access of a batch as the range check saw it (batched/guard): its addresses, the
rows that make it, each row's range, and, computed only where needed, the lanes' element indices
and their tile shape (batched/intervals)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from kernel_nb.engine.args import BufferArg
from kernel_nb.engine.batched.intervals import TileShape
from kernel_nb.engine.batched.tiles import AFFINE, Affine, affine_of


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
    _searched: bool = False
    _tile: tuple[np.ndarray, np.ndarray] | None = None  # what tile() found (an access asks several times)

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
        if (
            self.direct
            and self.affine is None
            and not self._searched
            and getattr(self.ptrs, AFFINE, None) is None
        ):
            self._searched = True
            found = affine_of(self.flat)
            if self.rows is None:
                self.affine = found
                setattr(self.ptrs, AFFINE, found or False)
            elif found is not None:  # the running programs' tiles (the others access nothing)
                base = np.zeros(len(self.lo), np.int64)
                base[self.rows] = found.base
                self.affine = Affine(base, found.lanes)
        if not (self.affine and self.direct):
            return None
        if self._tile is None:
            lanes, _ = self.affine.elements(self.arg.itemsize)
            base = np.broadcast_to(self.affine.base, (len(self.lo),))
            shift = (base - self.arg.lo) // self.arg.itemsize
            shift.flags.writeable = False  # shared by every caller
            self._tile = shift, lanes
        return self._tile

    def shape(self, live: np.ndarray) -> TileShape | None:
        """Each row's elements as one sorted set of lanes at a per-row shift (None: no such form,
        or a row touches an element twice)."""
        if self.direct and self.rows is None:
            tile = self.tile()
            if tile is not None:
                assert self.affine
                lanes, ordered = self.affine.elements(self.arg.itemsize)
                shift = np.broadcast_to(tile[0], live.shape)
                if self.active is not None:
                    # as TileShape.of has it, from the tile form rather than every lane's index:
                    # the lanes every live row keeps where their masks agree, else all of them
                    kept = self.active.reshape(len(self.lo), -1)[live]
                    if kept.shape[0] and not kept[0].all() and (kept == kept[:1]).all():
                        picked = np.sort(lanes[kept[0]])
                        if picked.size > 1 and not (picked[1:] != picked[:-1]).all():
                            return None
                        return TileShape(picked, shift)
                if ordered is None:
                    return None
                return TileShape(ordered, shift)
        if self.direct and self.active is None:
            # the programs a loop still runs, each at its place: every lane, from the tile form
            tile = self.tile()
            if tile is not None:
                assert self.affine
                ordered = self.affine.elements(self.arg.itemsize)[1]
                return None if ordered is None else TileShape(ordered, tile[0])
        if self.rows is None:
            return TileShape.of(self.index(), self.active, live)
        shape = TileShape.of(self.index(), self.active, live[self.rows])
        if shape is None:
            return None
        shift = np.zeros(live.shape, np.int64)  # rows that access nothing are not live
        shift[self.rows] = shape.shift
        return TileShape(shape.lanes, shift)

    def runs(self, size: int) -> tuple[np.ndarray, int, np.ndarray | None] | None:
        """Where each row's lanes are runs of consecutive elements (a tile's rows): the start of
        every run, (rows, runs), the run length, and which runs lie inside a map of `size`
        elements (None: all of them); None where the lanes have no such form."""
        tile = self.tile()
        if tile is None:
            return None
        assert self.affine
        found = self.affine.runs(self.arg.itemsize)
        if found is None or found[1] > size:
            return None
        heads, run = found
        shift = tile[0] if self.rows is None else tile[0][self.rows]
        starts = shift[:, None] + heads[None, :]
        inside = (starts >= 0) & (starts <= size - run)
        return starts, run, None if inside.all() else inside

    def disjoint(self, size: int) -> bool:
        """Whether no two lanes of the access, of one row or of two, touch one element of a map
        of `size` elements: told from the tile's runs, with no index per lane (False: they may,
        or the access has no such form)."""
        if self.active is not None:
            return False
        found = self.runs(size)
        if found is None:
            return False
        starts, run, _ = found
        ordered = np.sort(starts, axis=None)
        return bool((ordered[1:] - ordered[:-1] >= run).all())

    def gather(self, view: np.ndarray, fill: Any = None, share: bool = False) -> np.ndarray:
        """view[index] for every lane of every row; `fill` (default 0) for masked lanes. With
        `share`, where every lane is active and the rows are one stretch of `view` in order, a
        read-only view of it rather than a copy."""
        if share and self.active is None and self.rows is None:
            span = self.side_by_side(view.size)
            if span is not None:
                shared = view[span].reshape(len(self.lo), -1)
                shared.flags.writeable = False
                return shared
        picked: np.ndarray | None = None  # every lane of the rows held, gathered without an index
        runs = self.runs(view.size)
        if runs is not None:
            # whole runs at a time: no index per lane
            starts, run, inside = runs
            if inside is None:
                picked = sliding_window_view(view, run)[starts]
            else:
                picked = sliding_window_view(view, run)[np.where(inside, starts, 0)]
                # runs reaching past the map: their active lanes are inside it (checked before)
                ends = starts[~inside][:, None] + np.arange(run)
                picked[~inside] = view[np.clip(ends, 0, view.size - 1)]
            picked = picked.reshape(len(starts), -1)
        else:
            picked = self._transposed_gather(view)
        if self.rows is not None:
            full = np.zeros(self.addresses.shape, view.dtype).reshape(len(self.lo), -1)
            if fill is not None:
                full[...] = np.broadcast_to(fill, self.addresses.shape).reshape(full.shape)
            full[self.rows] = picked if picked is not None else view[self.index()]
            return full
        if self.active is None:
            return picked if picked is not None else view[self.index()]
        # a fresh array either way (fancy indexing copies): the masked lanes are filled in place
        gathered = picked if picked is not None else view[np.where(self.active, self.index(), 0)]
        if gathered.shape != self.active.shape:
            gathered = np.array(np.broadcast_to(gathered, self.active.shape))
        filler = np.zeros((), view.dtype) if fill is None else np.broadcast_to(fill, self.addresses.shape)
        np.copyto(gathered, filler.reshape(gathered.shape) if filler.ndim else filler, where=~self.active)
        return gathered

    def _transposed_gather(self, view: np.ndarray) -> np.ndarray | None:
        """view[index] for every lane of the rows held, where each row's 2-D block holds its
        elements down the columns (a tile loaded transposed, as attention loads K): the columns
        gathered as runs, then turned (None: no such form, or a run reaches past the map)."""
        block = self.addresses.shape[1:]
        tile = self.tile()
        if tile is None or len(block) != 2:
            return None
        assert self.affine
        found = self.affine.transposed_runs(self.arg.itemsize, (int(block[0]), int(block[1])))
        if found is None:
            return None
        heads, run = found
        shift = tile[0] if self.rows is None else tile[0][self.rows]
        starts = shift[:, None] + heads[None, :]
        if not ((starts >= 0) & (starts <= view.size - run)).all():
            return None
        columns = sliding_window_view(view, run)[starts]  # (rows, block[1], block[0])
        return np.ascontiguousarray(columns.transpose(0, 2, 1)).reshape(len(starts), -1)

    def side_by_side(self, size: int) -> slice | None:
        """Where the rows' lanes are, in order, one stretch of consecutive elements of a map of
        `size` (a launch's tiles side by side): that stretch (None: they are not)."""
        runs = self.runs(size)
        if runs is None:
            return None
        starts, run, inside = runs
        if inside is not None or not starts.size:
            return None
        flat = starts.reshape(-1)
        first = int(flat[0])
        if not (flat == first + run * np.arange(flat.size)).all():
            return None
        return slice(first, first + run * flat.size)

    def _whole_runs(self, size: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, slice] | None:
        """The runs (see `runs`) split for writing: which runs are inside the map with every lane
        active, (rows, runs); the run starts; the run length; the map indices of the active
        lanes of the other runs, with their (row, run) place, for a lane-by-lane write; and the
        lanes of a run written (all of them, or where every run's active lanes are one stretch
        of it, as a mask `cols < n` makes, that stretch: the runs then start where it does)."""
        runs = self.runs(size)
        if runs is None:
            return None
        starts, run, inside = runs
        every = slice(0, run)
        if self.active is not None:
            stretch = self._one_stretch(starts.shape, run)
            if stretch is not None:
                moved = starts + stretch.start
                width = stretch.stop - stretch.start
                if ((moved >= 0) & (moved <= size - width)).all():
                    return np.ones(starts.shape, bool), moved, width, np.zeros(0, np.int64), stretch
        whole = np.ones(starts.shape, bool) if inside is None else inside.copy()
        if self.active is not None:
            lanes = self.active.reshape(*starts.shape, run)
            whole &= lanes.all(axis=2)
            rest = ~whole
            index = (starts[rest][:, None] + np.arange(run))[lanes[rest]]
        else:
            index = np.zeros(0, np.int64)  # every active lane is inside: so is every run
        return whole, starts, run, index, every

    def _one_stretch(self, runs: tuple[int, ...], run: int) -> slice | None:
        """The lanes of a run that are active, where they are the same consecutive ones in every
        run of every row (None: they are not)."""
        assert self.active is not None
        lanes = self.active.reshape(-1, run)
        first = lanes[0]
        at = np.flatnonzero(first)
        if not at.size or at[-1] - at[0] + 1 != at.size or at.size == run:
            return None
        if not (lanes == first).all():
            return None
        return slice(int(at[0]), int(at[-1]) + 1)

    def distinct(self) -> bool:
        """Whether no row's lanes share an element (a tile: then a store leaves each lane's value)."""
        if self.tile() is None:
            return False
        assert self.affine
        return self.affine.elements(self.arg.itemsize)[1] is not None

    def scatter(self, view: np.ndarray, values: np.ndarray, before: np.ndarray) -> Callable[[], None]:
        """Store `values` (one per lane of every row) at the active lanes, `before` being what
        `gather` gave before; returns the undo."""
        split = self._whole_runs(view.size)
        if split is not None:
            whole, starts, run, index, stretch = split
            if self.rows is not None:
                values, before = values[self.rows], before[self.rows]
            values = values.reshape(*starts.shape, -1)[..., stretch]
            before = before.reshape(*starts.shape, -1)[..., stretch]
            windows = sliding_window_view(view, run, writeable=True)
            every = bool(whole.all())
            # every run written whole: the runs as they are, not a copy picked by a mask of all True
            at = starts if every else starts[whole]
            old_runs = before if every else before[whole]
            rest = ~whole
            rest_values = None
            if index.size:  # lanes of runs with masked lanes (index is empty without a mask)
                assert self.active is not None
                rest_values = values[rest][self.active.reshape(*starts.shape, run)[rest]]
            old_lanes = view[index]
            windows[at] = values if every else values[whole]
            if rest_values is not None:
                view[index] = rest_values

            def undo() -> None:
                view[index] = old_lanes
                windows[at] = old_runs

            return undo
        index = self.index()
        if self.rows is not None:
            values = values[self.rows]
        elif self.active is not None:
            index, values = index[self.active], values[self.active]
        old = view[index]
        view[index] = values
        return lambda: view.__setitem__(index, old)

    def put(self, target: np.ndarray, values: np.ndarray) -> None:
        """target[index] = the row's value at every active lane; masked lanes go to the slot past
        the map (target[-1])."""
        size = target.size - 1
        later = self.put_later(size, values)
        if later is not None:
            later(target)
            return
        rows = values.reshape(-1) if values.size > 1 else np.broadcast_to(values.reshape(-1), (len(self.lo),))
        index = self.index()
        if self.active is not None:
            index = np.where(self.active, index, size)
        target[index] = rows[: len(index)].reshape(-1, 1)

    def put_later(self, size: int, values: np.ndarray) -> RunPut | None:
        """`put` into a map of `size` elements (and its slot past the end) that may be made later:
        whole runs of the tile, holding only where they start (None: no tile form). The callable
        takes the map, and optionally one value to put everywhere instead (True: which elements)."""
        split = self._whole_runs(size)
        if split is None:
            return None
        whole, starts, run, index, _ = split
        rows = values.reshape(-1) if values.size > 1 else np.broadcast_to(values.reshape(-1), (len(self.lo),))
        per_run = np.broadcast_to(rows[: len(starts), None], starts.shape)
        rest = None
        if index.size:
            assert self.active is not None
            lanes = self.active.reshape(*starts.shape, run)[~whole]
            rest = np.repeat(per_run[~whole], lanes.sum(axis=1))
        return RunPut(size, starts[whole], run, per_run[whole][:, None], index, rest)

    def full_index(self) -> np.ndarray:
        """index() for every row (rows that access nothing included)."""
        if self.rows is None:
            return self.index()
        index = np.subtract(self.addresses.reshape(len(self.lo), -1).view(np.int64), np.int64(self.arg.lo))
        return index // self.arg.itemsize


class RunPut:
    """What `Access.put_later` makes: a put of whole runs of a tile, each held by where it starts,
    and of single elements (the lanes of runs some of whose lanes are masked off). Called with a
    map, it puts the rows' values there (or one `value` everywhere); `spans` tells which elements
    it puts to, as runs, for a map that needs no more than that (see BufferMap.never_written)."""

    __slots__ = ("at", "fill", "index", "rest", "run", "size")

    def __init__(
        self,
        size: int,
        at: np.ndarray,
        run: int,
        fill: np.ndarray,
        index: np.ndarray,
        rest: np.ndarray | None,
    ) -> None:
        self.size, self.at, self.run, self.fill, self.index, self.rest = size, at, run, fill, index, rest

    def __call__(self, target: np.ndarray, value: Any = None) -> None:
        at, run = self.at, self.run
        sliding_window_view(target[: self.size], run, writeable=True)[at] = (
            self.fill if value is None else value
        )
        if self.rest is not None:
            target[self.index] = self.rest if value is None else value

    def spans(self) -> tuple[np.ndarray, int, np.ndarray]:
        """The starts of the whole runs put, the run length, and the single elements put."""
        return self.at, self.run, self.index


def view_of(arg: BufferArg, dtype: np.dtype, write: bool = False, whole: slice | None = None) -> np.ndarray:
    """The argument's span of its host copy, as elements of `dtype` (the same size as its own); to
    read only, perhaps the caller's memory while the launch has not written it (Memory.current);
    to write every element of `whole` (of those elements), perhaps a copy not filled there
    (Memory.overwritten)."""
    memory = arg.memory
    if whole is not None:
        size = np.dtype(dtype).itemsize
        raw = memory.overwritten(arg.span_lo + whole.start * size, arg.span_lo + whole.stop * size)
    else:
        raw = memory.copy if write else memory.current()
    return raw[arg.span_lo : arg.span_hi].view(dtype)
