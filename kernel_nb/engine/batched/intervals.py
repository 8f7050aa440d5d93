"""Interval bookkeeping for the batched strategy: each program's accesses as [lo, hi) ranges.

Telling whether running programs together could differ from running them one by one, and counting
how many distinct programs touched each element, needs per-element state in general (batched/guard
keeps it). Most kernels give each program its own part of every array, or let programs share only
what they read; for those, the range each program touches per argument proves that no program sees
another's writes, and the buffer maps follow from one scatter per access instead of a sort.

`IntervalBook` keeps that proof. Whenever the ranges cannot prove the batch exact (programs' ranges
overlap where one of them writes, or shared reads whose per-program distinctness it cannot see), it
raises `NeedsPrecise` and the launch runs again with per-element bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from kernel_nb.distinct import distinct
from kernel_nb.trace import BufferMap

_BIG = np.iinfo(np.int64).max


class Lanes(Protocol):
    """An access's lanes, for the bookkeeping."""

    active: np.ndarray | None  # (rows, lanes) active lanes, None when all are
    rows: np.ndarray | None  # the batch rows index() and active hold (None: all)

    def index(self) -> np.ndarray:
        """(rows, lanes) map indices of every lane (masked lanes hold anything)."""
        ...

    def shape(self, live: np.ndarray) -> TileShape | None:
        """The rows as one tile at per-row shifts (see TileShape), if they are and no row touches an
        element twice."""
        ...

    def put(self, target: np.ndarray, values: np.ndarray) -> None:
        """target[index] = value of the row, at every active lane (masked lanes: the slot past the
        map's last element, which takes them)."""
        ...

    def put_later(self, size: int, values: np.ndarray) -> Callable[[np.ndarray], None] | None:
        """`put` into a map of `size` elements that may be made later (None: not that cheaply)."""
        ...

    def disjoint(self, size: int) -> bool:
        """Whether no two active lanes, of one row or of two, touch one element of a map of `size`
        elements, told without an index per lane (False: they may, or it cannot tell so)."""
        ...


class NeedsPrecise(Exception):
    """Ranges cannot prove the batch exact; the launch reruns with per-element bookkeeping."""


@dataclass
class _Side:
    """One argument's reads, or its writes, within one batch."""

    size: int
    union_lo: np.ndarray  # per batch row: the union of that program's ranges so far
    union_hi: np.ndarray
    shared: bool = False  # some programs' ranges overlap: rows are counted, not marked
    # per access: each row's range, and for counted accesses the lanes' shape (see TileShape)
    ranges: list[tuple[np.ndarray, np.ndarray, TileShape | None]] = field(default_factory=list)
    mark: np.ndarray | None = None  # element → touched by one program (see IntervalBook._mark)
    later: list[Callable[[np.ndarray], None]] = field(default_factory=list)  # marks not made yet
    counts: np.ndarray | None = None  # element → programs of shared rows that touched it
    # TileShape.meets's answers by (lanes, lanes, step): a loop's tiles have equal lanes and
    # meet each earlier one at the few steps a loop makes, not at a step per pair of iterations
    steps: dict[tuple[int, int, int], tuple[bool, np.ndarray, np.ndarray]] = field(default_factory=dict)
    lo: int = _BIG
    hi: int = -_BIG


def _overlap_others(lo: np.ndarray, hi: np.ndarray, rows: np.ndarray, c: np.ndarray, d: np.ndarray) -> bool:
    """Whether any range [c[r], d[r]) meets the union range of a program other than rows[r].

    `lo`, `hi` are per linear program id (empty where lo >= hi). The number of ranges meeting
    [c, d) is #(lo < d) - #(hi <= c), since a range ending at or before c starts before d.
    """
    live = lo < hi
    if not live.any():
        return False
    starts, ends = np.sort(lo[live]), np.sort(hi[live])
    meeting = np.searchsorted(starts, d, side="left") - np.searchsorted(ends, c, side="right")
    own = (lo[rows] < hi[rows]) & (lo[rows] < d) & (hi[rows] > c)
    return bool(((meeting - own) > 0)[c < d].any())


class IntervalBook:
    """Range proofs and buffer-map counts for a batched launch."""

    def __init__(self, maps: dict[str, BufferMap], canonical: dict[str, str], programs: int) -> None:
        self.maps = maps
        self.canonical = canonical  # argument → the first argument sharing its memory
        self.programs = programs
        # launch-wide per canonical argument and linear program id: union of read / written ranges
        self.reach: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self.sides: dict[tuple[str, str], _Side] = {}
        self._saved: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        # per (argument, kind): marks and counts of the batch running, cleared where it touched them
        self._marks: dict[tuple[str, str], np.ndarray] = {}
        self._counts: dict[tuple[str, str], np.ndarray] = {}
        self._grids: dict[int, tuple[np.ndarray, tuple[int, int, int, int] | None]] = {}

    def begin_batch(self, linear: np.ndarray) -> None:
        self.linear = linear
        self.sides = {}
        self._saved = {key: (lo.copy(), hi.copy()) for key, (lo, hi) in self.reach.items()}

    def rollback(self) -> None:
        self.reach = self._saved
        self._clear()

    def _clear(self) -> None:
        for side in self.sides.values():
            side.later = []
            span = slice(side.lo, side.hi)
            if side.mark is not None:
                blank = -1 if side.mark.dtype != bool else False
                side.mark[span] = blank
                side.mark[-1] = blank
            if side.counts is not None:
                side.counts[span] = 0
        self.sides = {}

    def _mark(self, key: tuple[str, str], size: int) -> np.ndarray:
        """Writes: the writing program's linear id (-1: none); reads: whether read. The last slot
        takes masked lanes."""
        if key not in self._marks:
            self._marks[key] = (
                np.full(size + 1, -1, np.int32) if key[1] == "write" else np.zeros(size + 1, bool)
            )
        return self._marks[key]

    def access(
        self,
        name: str,
        reads: bool,
        writes: bool,
        lo: np.ndarray,
        hi: np.ndarray,
        lanes: Lanes,
    ) -> None:
        """One access of every batch row to argument `name`.

        Args:
            lo, hi: per row, the range of map indices its active lanes touch (lo >= hi: none).
            lanes: the access's lanes (their map indices are computed only where needed).
        """
        active = lanes.active
        canonical = self.canonical[name]
        rows = self.linear
        programs = rows if lanes.rows is None else rows[lanes.rows]  # of index()'s rows
        if reads and self._meets("write", canonical, lo, hi):
            self._written_elsewhere(
                canonical, lanes.index(), active, programs, "a program reads what another wrote"
            )
        if writes:
            if self._meets("read", canonical, lo, hi):
                raise NeedsPrecise("a program writes where another program reads")
            if self._meets("write", canonical, lo, hi):
                # ranges meet what other programs wrote before: whether elements do is told by
                # who wrote them
                self._written_elsewhere(
                    canonical, lanes.index(), active, programs, "programs write the same elements"
                )
            self._extend(canonical, "write", rows, lo, hi)
            # the access's own rows: ranges that meet (a tile's rows, every program's a band of
            # the same rows) need their elements looked at, unless the tile's runs tell them apart
            verify = self._meets("write", canonical, lo, hi) and not lanes.disjoint(self.maps[name].size)
            self._mark_writes(name, lo, hi, lanes, programs, verify=verify)
        if reads:
            self._extend(canonical, "read", rows, lo, hi)
            self._count(name, "read", lo, hi, lanes)

    def _meets(self, kind: str, canonical: str, lo: np.ndarray, hi: np.ndarray) -> bool:
        """Whether a row's range meets what another program read or wrote (by ranges)."""
        reach = self.reach.get((canonical, kind))
        return reach is not None and _overlap_others(reach[0], reach[1], self.linear, lo, hi)

    def _written_elsewhere(
        self,
        canonical: str,
        elements: np.ndarray,
        active: np.ndarray | None,
        programs: np.ndarray,
        why: str,
    ) -> None:
        """NeedsPrecise where an active lane's element was written by another program."""
        batch = elements.shape[0]
        flat = elements.reshape(batch, -1)
        lanes = None if active is None else active.reshape(batch, -1)
        me = programs.astype(np.int32)[:, None]
        for name, first in self.canonical.items():
            if first != canonical:
                continue
            bmap = self.maps[name]
            safe = flat if lanes is None else np.where(lanes, flat, 0)
            writers = [bmap.last_writer[safe]]  # earlier batches: any writer is another program
            side = self.sides.get((name, "write"))
            if side is not None and (side.mark is not None or side.later):
                writers.append(self._written_mark(name, side)[safe])
            for writer in writers:
                foreign = (writer >= 0) & (writer != me)
                if lanes is not None:
                    foreign &= lanes
                if foreign.any():
                    raise NeedsPrecise(why)

    def _mark_writes(
        self,
        name: str,
        lo: np.ndarray,
        hi: np.ndarray,
        access: Lanes,
        programs: np.ndarray,
        verify: bool,
    ) -> None:
        side = self._side(name, "write", lo.shape[0])
        live = lo < hi
        if not live.any():
            return
        side.lo = min(side.lo, int(lo[live].min()))  # first: clearing must cover what is marked
        side.hi = max(side.hi, int(hi[live].max()))
        me = programs.astype(np.int32)
        if not verify and side.mark is None:
            # tiles: which program wrote where is put in when someone asks (see `_written_mark`)
            later = access.put_later(side.size, me)
            if later is not None:
                side.later.append(later)
                return
        mark = self._written_mark(name, side)
        access.put(mark, me)
        if verify:  # two programs of this access, one element: only one of them stays marked
            elements = access.index()
            batch = elements.shape[0]
            lanes = None if access.active is None else access.active.reshape(batch, -1)
            index = elements.reshape(batch, -1) if lanes is None else np.where(lanes, elements, side.size)
            differs = mark[index] != me[:, None]
            if lanes is not None:
                differs &= lanes
            if differs.any():
                raise NeedsPrecise("programs write the same elements")

    def _written_mark(self, name: str, side: _Side) -> np.ndarray:
        """The batch's write marks of argument `name` (see `_mark`), those held as tiles put in."""
        if side.mark is None:
            side.mark = self._mark((name, "write"), side.size)
        for put in side.later:
            put(side.mark)
        side.later = []
        return side.mark

    def _side(self, name: str, kind: str, batch: int) -> _Side:
        side = self.sides.get((name, kind))
        if side is None:
            side = self.sides[name, kind] = _Side(
                self.maps[name].size, np.full(batch, _BIG), np.full(batch, -_BIG)
            )
        return side

    def _extend(self, canonical: str, kind: str, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        key = (canonical, kind)
        if key not in self.reach:
            self.reach[key] = (np.full(self.programs, _BIG), np.full(self.programs, -_BIG))
        reach_lo, reach_hi = self.reach[key]
        live = lo < hi
        picked = rows[live]  # each program is one row: no repeated indices
        reach_lo[picked] = np.minimum(reach_lo[picked], lo[live])
        reach_hi[picked] = np.maximum(reach_hi[picked], hi[live])

    def _grid(self, lanes: np.ndarray) -> tuple[int, int, int, int] | None:
        """`_grid_of(lanes)`, found once for the lanes a loop's tiles share."""
        found = self._grids.get(id(lanes))
        if found is None or found[0] is not lanes:
            found = self._grids[id(lanes)] = (lanes, _grid_of(lanes))
        return found[1]

    def _count(self, name: str, kind: str, lo: np.ndarray, hi: np.ndarray, lanes: Lanes) -> None:
        batch = lo.shape[0]
        side = self._side(name, kind, batch)
        live = lo < hi
        if not live.any():
            return
        union_lo = np.where(live, np.minimum(side.union_lo, lo), side.union_lo)
        union_hi = np.where(live, np.maximum(side.union_hi, hi), side.union_hi)
        side.lo = min(side.lo, int(lo[live].min()))  # first: clearing must cover what is marked
        side.hi = max(side.hi, int(hi[live].max()))
        if not side.shared:
            held = union_lo < union_hi
            order = np.argsort(union_lo[held], kind="stable")
            starts, ends = union_lo[held][order], union_hi[held][order]
            side.shared = not bool((ends[:-1] <= starts[1:]).all())
        flat_active = lanes.active
        if not side.shared:
            # every element of this access belongs to one program of the batch: mark it, when
            # the map is read (nothing reads these marks while the batch runs)
            later = lanes.put_later(side.size, np.ones(1, bool))
            if later is not None:
                side.later.append(later)
            else:
                if side.mark is None:
                    side.mark = self._mark((name, kind), side.size)
                lanes.put(side.mark, np.ones(1, bool))
        else:
            # counted: each row must touch an element once, and none that its program touched before
            shape = lanes.shape(live)
            if shape is None:
                raise NeedsPrecise("a shared access may touch an element twice in one program")
            for before_lo, before_hi, before in side.ranges:
                meets = (lo < before_hi) & (before_lo < hi) & live & (before_lo < before_hi)
                if meets.any() and (before is None or shape.meets(before, meets, side.steps)):
                    raise NeedsPrecise("a program touches elements again that other programs share")
            if side.counts is None:
                key = (name, kind)
                if key not in self._counts:
                    self._counts[key] = np.zeros(side.size, _count_dtype(len(self.linear)))
                side.counts = self._counts[key]
            counts = side.counts
            shifts, rows = distinct(shape.shift[live], return_counts=True)
            if flat_active is None and shifts.size <= 64:
                # rows are one tile at a few shifts: add each shift's rows to its tile's elements
                tile = shape.lanes
                grid = self._grid(tile)
                for shift, times in zip(shifts.tolist(), rows.tolist()):
                    block = None if grid is None else _block(counts, shift, *grid)
                    if block is not None:  # a 2-D slice of the counts: no index per lane
                        block += times
                    else:
                        counts[tile + shift] += times
            else:
                first, last = int(lo[live].min()), int(hi[live].max())
                running = live if lanes.rows is None else live[lanes.rows]
                picked = lanes.index()[running] if flat_active is None else lanes.index()[flat_active]
                counts[first:last] += np.bincount(picked.reshape(-1) - first, minlength=last - first).astype(
                    counts.dtype
                )
            side.ranges.append((np.where(live, lo, 0), np.where(live, hi, 0), shape))
        if not side.shared:
            side.ranges.append((np.where(live, lo, 0), np.where(live, hi, 0), None))
        side.union_lo, side.union_hi = union_lo, union_hi

    def commit(self) -> None:
        """Hand the batch's marks and counts to the launch's buffer maps (which add them in when
        read). Marks: copies of the span the batch touched, so that the next batch reuses the
        arrays (blanked there by `_clear`) rather than filling an argument's worth of new ones.
        Counts: the arrays themselves (zeros cost no page until counted in), the next batch
        making new ones."""
        for (name, kind), side in self.sides.items():
            if side.lo >= side.hi:
                continue
            bmap = self.maps[name]
            span = slice(side.lo, side.hi)
            if side.later:
                bmap.add_marks_later(kind, side.lo, side.hi, side.later)
                side.later = []
            if side.mark is not None:
                bmap.add_marks(kind, side.lo, side.mark[span].copy())
            if side.counts is not None:
                bmap.add_marks(f"{kind}-count", side.lo, side.counts[span])
                del self._counts[name, kind]
                side.counts = None
        self._clear()


@dataclass
class TileShape:
    """An access whose every live row touches `shift[row] + lanes` (lanes distinct, sorted): the
    same block shape at a per-program place, as a loop over tiles makes."""

    lanes: np.ndarray
    shift: np.ndarray  # per batch row (meaningless where the row is not live)
    _digest: int | None = field(default=None, repr=False, compare=False)

    @staticmethod
    def of(flat: np.ndarray, active: np.ndarray | None, live: np.ndarray) -> TileShape | None:
        rows = flat[live]
        if rows.shape[0] == 0:
            return TileShape(
                np.zeros(0, np.int64), flat[:, 0] if flat.shape[1] else np.zeros(len(live), np.int64)
            )
        shifted = rows - rows[:, :1]
        if not (shifted == shifted[:1]).all():
            return None
        lanes = shifted[0]
        if active is not None:
            same = active[live]
            if (same == same[:1]).all():
                lanes = lanes[same[0]]  # the lanes every row touches; else all (a superset)
        ordered = np.sort(lanes)
        if ordered.size > 1 and not (ordered[1:] != ordered[:-1]).all():
            return None
        return TileShape(ordered, flat[:, 0])

    def meets(
        self,
        before: TileShape,
        rows: np.ndarray,
        known: dict[tuple[int, int, int], tuple[bool, np.ndarray, np.ndarray]] | None = None,
    ) -> bool:
        """Whether any of `rows` touches an element here that it touched in `before`; `known`
        keeps the answer per step for lanes seen again (a loop's tiles have equal lanes, made
        anew by each access)."""
        for step in distinct(before.shift[rows] - self.shift[rows]).tolist():
            key = (self.digest, before.digest, step)
            seen = None if known is None else known.get(key)
            if (
                seen is not None
                and (seen[1] is self.lanes or np.array_equal(seen[1], self.lanes))
                and (seen[2] is before.lanes or np.array_equal(seen[2], before.lanes))
            ):
                if seen[0]:
                    return True
                continue
            # shift + a == before.shift + b  ⇔  a == b + step
            moved = before.lanes + step
            at = np.searchsorted(self.lanes, moved)
            inside = at < self.lanes.size
            hit = bool((self.lanes[at[inside]] == moved[inside]).any())
            if known is not None:
                known[key] = (hit, self.lanes, before.lanes)
            if hit:
                return True
        return False

    @property
    def digest(self) -> int:
        """A hash of the lanes (`meets` compares the lanes themselves where two digests agree)."""
        if self._digest is None:
            self._digest = hash(self.lanes.tobytes())
        return self._digest


def _grid_of(lanes: np.ndarray) -> tuple[int, int, int, int] | None:
    """Sorted, distinct lanes as `lines` runs of `run` consecutive elements, `stride` apart, from
    `first` (a 2-D tile of a row-major array, or one stretch): (first, lines, run, stride); None
    where they are not."""
    if not lanes.size:
        return None
    breaks = np.flatnonzero(np.diff(lanes) != 1)
    run = int(breaks[0]) + 1 if breaks.size else lanes.size
    if lanes.size % run:
        return None
    lines = lanes.size // run
    first = int(lanes[0])
    stride = int(lanes[run]) - first if lines > 1 else run
    expected = first + stride * np.arange(lines)[:, None] + np.arange(run)
    if not np.array_equal(lanes.reshape(lines, run), expected):
        return None
    return first, lines, run, stride


def _block(
    counts: np.ndarray, shift: int, first: int, lines: int, run: int, stride: int
) -> np.ndarray | None:
    """The elements `shift` + a `_grid_of` grid's lanes, as a writable 2-D slice of `counts` (None:
    the grid's runs wrap a row of `stride` elements, or reach past the counts)."""
    start = shift + first
    if lines == 1:
        return counts[start : start + run] if start >= 0 and start + run <= counts.size else None
    row, col = divmod(start, stride)
    if start < 0 or col + run > stride or (row + lines) * stride > counts.size:
        return None
    return counts[: (row + lines) * stride].reshape(-1, stride)[row:, col : col + run]


def _count_dtype(programs: int) -> np.dtype[Any]:
    """The smallest unsigned type that counts up to `programs`: a batch's rows touch an element
    once each (see IntervalBook.access), and the counts are an argument's size."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if programs <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)
