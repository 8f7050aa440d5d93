"""Memory hooks for the batched strategy: every program's accesses at once, split per program, and
the bookkeeping that tells when running programs together would differ from running them one by one
(see batched/run.py).

Why one module: every hook has two forms, per element and
by ranges (batched/intervals), and both forms of a check, a load or store and its event share the
state of the one access under way (`_access`, the undo log, the rows held by a narrowed loop).
Apart, that state would pass between modules on every access.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernel_nb.checks import Observations, Site, uninitialised
from kernel_nb.checks.state import AccessState
from kernel_nb.distinct import distinct
from kernel_nb.engine import triton_compat
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.batched.access import Access, view_of
from kernel_nb.engine.batched.builder import BatchUnsupported, Divergence
from kernel_nb.engine.batched.intervals import IntervalBook, NeedsPrecise, TileShape
from kernel_nb.engine.batched.recorder import BatchRecorder
from kernel_nb.engine.batched.tiles import AFFINE, Addresses, AffinePointers, shape_of
from kernel_nb.engine.guard import Locator, MemoryGuard, layout
from kernel_nb.trace import EventBlock, GatheredRows, Launch, MemoryEvent, TileRows

_NO_ADDRESS = np.iinfo(np.uint64).max


def ranges_apply(addresses: AddressMap, state: AccessState) -> str | None:
    """Why range bookkeeping cannot serve a launch (None: it can)."""
    if addresses.partial_overlap:
        return "arguments overlap in part"
    if state.initialised:
        return "uninitialised-read detection"
    return None


def same_memory(addresses: AddressMap) -> dict[str, str]:
    """Per argument, the first argument that is the same array (an in-place kernel given x twice):
    such arguments share their access state, so that one program writing through one name and
    another reading through the other is seen."""
    canonical: dict[tuple[int, int, int], str] = {}
    return {b.name: canonical.setdefault((b.lo, b.hi, b.itemsize), b.name) for b in addresses.buffers}


class UndoLog:
    """What a batch changed, to be put back (latest first) when the batch must be split."""

    def __init__(self) -> None:
        self.steps: list[Callable[[], None]] = []

    def remember(self, target: np.ndarray, index: np.ndarray) -> None:
        """Keep what `target[index]` holds, before it is assigned to (the arena or bookkeeping)."""
        old = target[index].copy()
        self.steps.append(lambda: target.__setitem__(index, old))

    def stored(self, addresses: np.ndarray, old: np.ndarray) -> None:
        """Keep the values a store at host `addresses` overwrote."""
        self.steps.append(lambda: triton_compat.raw_store(addresses, old))

    def rollback(self) -> None:
        for step in reversed(self.steps):
            step()
        self.steps.clear()


class BatchGuard(MemoryGuard):
    """The memory guard for a batch: accesses of every program at once, split per program."""

    recorder: BatchRecorder

    def __init__(
        self,
        launch: Launch,
        addresses: AddressMap,
        recorder: BatchRecorder,
        locate: Locator,
        *,
        state: AccessState,
        precise: bool,
    ) -> None:
        """
        Args:
            state: the launch's per-element race and initialisation state, its arrays shared
                between arguments that are the same memory (`same_memory`).
            precise: keep per-element bookkeeping; otherwise ranges (see batched/intervals).
        """
        super().__init__(launch, addresses, recorder, locate, state=state)
        self.precise = precise
        canonical = same_memory(addresses)
        self.book = IntervalBook(
            self.launch.buffers,
            canonical,
            self.launch.grid[0] * self.launch.grid[1] * self.launch.grid[2],
        )
        if precise:
            # the latest program (in launch order) that read each element with a plain load, and
            # the line and program of each element's latest atomic; aliases share one array
            self._plain_reader: dict[str, np.ndarray] = {}
            self._atomic_line: dict[str, np.ndarray] = {}
            self._atomic_writer: dict[str, np.ndarray] = {}
            for b in self.buffers:
                if canonical[b.name] == b.name:
                    self._plain_reader[b.name] = np.full(b.size, -1, np.int32)
                    self._atomic_line[b.name] = np.full(b.size, -1, np.int32)
                    self._atomic_writer[b.name] = np.full(b.size, -1, np.int32)
            for b in self.buffers:
                first = canonical[b.name]
                self._plain_reader[b.name] = self._plain_reader[first]
                self._atomic_line[b.name] = self._atomic_line[first]
                self._atomic_writer[b.name] = self._atomic_writer[first]
        self.builder: Any = None  # the interpreter's builder while it is batched (per-program atomics)
        self.undo = UndoLog()
        self._access: Access | None = None
        # per argument, the map indices [lo, hi) its direct stores wrote so far in the launch (None:
        # some write went another way, which this does not follow; see `_unwritten_inputs`)
        self._written: dict[str, tuple[int, int]] | None = {}

    def begin_batch(self, builder: Any, observations: Observations | None, pids: np.ndarray) -> None:
        """Start a batch run by `builder` of the programs `pids` (an (x, y, z) row each);
        observations go to `observations` (None: none)."""
        self.builder, self.observations = builder, observations
        gx, gy, _ = self.launch.grid  # Launch.linear's order, for every row at once
        self._linear = (pids[:, 0] + gx * (pids[:, 1] + gy * pids[:, 2])).astype(np.int32)
        self._whole: tuple[np.ndarray, np.ndarray] | None = None  # the batch's program ids, while narrowed
        self.undo = UndoLog()
        self.pairs: list[tuple[str, np.ndarray, np.ndarray, bool, bool]] = []
        if not self.precise:
            self.book.begin_batch(self._linear)

    def hold(self, at: np.ndarray | None) -> None:
        """Values hold rows `at` of the batch from now on (None: all): program ids follow."""
        if at is None:
            if self._whole is not None:
                self.builder.pids, self._linear = self._whole
                self._whole = None
            return
        if self._whole is None:
            self._whole = (self.builder.pids, self._linear)
        pids, linear = self._whole
        self.builder.pids, self._linear = pids[at], linear[at]

    def rollback(self) -> None:
        """Undo the batch (its programs run again in groups)."""
        self.undo.rollback()
        if not self.precise:
            self.book.rollback()

    def lanes(self, ptrs: Any, mask: Any, *others: Any) -> tuple[np.ndarray, np.ndarray]:
        shape = (self.recorder.width, *shape_of(ptrs)[1:])  # every program gets its own lanes
        affine = getattr(ptrs, AFFINE, None) or None
        if (
            isinstance(ptrs, AffinePointers)
            and not self.precise
            and affine is not None
            and affine.lanes.size == int(np.prod(shape[1:]))
        ):
            addresses: Any = Addresses(affine, shape)  # made only if something needs the values
        else:
            addresses = np.broadcast_to(ptrs.data, shape)
        active = np.broadcast_to(np.asarray(mask.data, bool) if mask is not None else np.True_, shape)
        running = self.recorder.running()
        if running is not None:  # programs a masked loop is done with access nothing
            active = active & running.reshape((shape[0],) + (1,) * (len(shape) - 1))
        return addresses, active

    def check(
        self, op: str, ptrs: Any, addresses: np.ndarray, active: np.ndarray, unmasked: bool = False
    ) -> None:
        itemsize = triton_compat.pointer_element_itemsize(ptrs)
        write = op != "load"
        self._access = None
        self._every_lane: bool | None = None  # (what `lanes_off` asks, where seen here)
        if self.precise:
            if not self.addresses.allowed(addresses[active], itemsize, write=write):
                # which program fails first is defined by the serial order: let it say so
                raise BatchUnsupported("an access the guard refuses")
            return
        batch = addresses.shape[0]
        flat = addresses.reshape(batch, -1)
        given = active.reshape(batch, -1)
        affine = getattr(ptrs, AFFINE, None) or None
        if affine is not None and affine.lanes.size != flat.shape[1]:
            affine = None
        rows: np.ndarray | None = None
        lanes: np.ndarray | None = None
        self._every_lane = _all(given)
        if not self._every_lane:
            running = given.any(axis=1)
            if not running.all() and given[running].all():
                # only some programs access, each with all its lanes: work on their rows alone
                rows = np.flatnonzero(running)
                flat = flat[rows]
            else:
                lanes = given
        if lanes is not None and affine is not None and _increasing(affine.lanes):
            # the first and the last active lane are the lowest and the highest address
            any_lane = lanes.any(axis=1)
            first = lanes.argmax(axis=1)
            final = lanes.shape[1] - 1 - lanes[:, ::-1].argmax(axis=1)
            base = np.broadcast_to(affine.base, (batch,))
            low = np.where(any_lane, (base + affine.lanes[first]).view(np.uint64), _NO_ADDRESS)
            high = np.where(any_lane, (base + affine.lanes[final]).view(np.uint64), 0)
        elif lanes is not None:
            flat = np.asarray(flat)
            low = flat.min(axis=1, where=lanes, initial=_NO_ADDRESS)
            high = flat.max(axis=1, where=lanes, initial=0)
        elif affine is not None and flat.shape[1]:  # the tile's corners, at each program's place
            base = np.broadcast_to(affine.base, (batch,))
            if rows is not None:
                base = base[rows]
            low = (base + affine.lanes.min()).view(np.uint64)
            high = (base + affine.lanes.max()).view(np.uint64)
        else:
            low, high = flat.min(axis=1), flat.max(axis=1)
        live = low <= high
        if flat.shape[1] == 0 or not live.any():
            return
        first, last = low[live].min(), high[live].max()
        arg = self.buffer_at(int(first))
        if arg is None or not (arg.lo <= first and int(last) + itemsize <= arg.hi):
            if not self.addresses.allowed(addresses[active], itemsize, write=write):
                raise BatchUnsupported("an access the guard refuses")
            raise NeedsPrecise("an access spans several arguments")
        if not self._aligned(affine, flat, lanes, rows, itemsize) or (
            write
            and not arg.memory.all_writable
            and not self.addresses.allowed(addresses[active], itemsize, write=True)
        ):
            raise BatchUnsupported("an access the guard refuses")
        size = arg.itemsize
        lo = np.where(live, (low - np.uint64(arg.lo)).astype(np.int64) // size, 0)
        hi = np.where(live, (high - np.uint64(arg.lo)).astype(np.int64) // size + 1, 0)
        if rows is not None:  # per batch row; rows that access nothing are empty
            lo, hi = _spread(lo, rows, batch), _spread(hi, rows, batch)
        direct = (
            itemsize == size
            and not getattr(self.builder, "pointer_cast", True)
            and triton_compat.pointer_element_np(ptrs).itemsize == size
        )
        self._access = Access(ptrs, addresses, flat, lanes, arg, lo, hi, direct, affine, rows)

    def lanes_off(self, active: np.ndarray) -> bool:
        every = self._every_lane
        return not (_all(active.reshape(len(active), -1)) if every is None else every)

    @staticmethod
    def _aligned(
        affine: Any, flat: Any, lanes: np.ndarray | None, rows: np.ndarray | None, itemsize: int
    ) -> bool:
        """Whether every active lane of a range-checked access is aligned to its element."""
        if itemsize == 1:
            return True
        if affine is not None:  # from the tile's form: every lane is base + one of the lanes
            base = np.broadcast_to(affine.base, (np.asarray(affine.base).size,))
            if rows is not None and base.size > 1:
                base = base[rows]
            return not ((base % itemsize).any() or (affine.lanes % itemsize).any())
        values = np.asarray(flat)
        misaligned = (
            (values & np.uint64(itemsize - 1)) != 0
            if itemsize & (itemsize - 1) == 0
            else values % np.uint64(itemsize) != 0
        )
        if lanes is not None:
            misaligned &= lanes
        return not misaligned.any()

    def load(self, load: Callable[[], Any], ptrs: Any, other: Any) -> Any:
        access = self._access
        if self.precise or access is None or not access.direct:
            return load()
        dtype = triton_compat.pointer_element_np(ptrs)
        fill = None if other is None else other.data
        memory = access.arg.memory
        whole_tiles = access.active is None and access.rows is None and access.tile() is not None
        if memory.lazy and (whole_tiles or self._shareable(access, dtype)):
            # from a copy filled read-only, which nothing changes (the inputs the launch keeps
            # when it ends, copied now): tiles that are one stretch of it are views of it, kept
            # as they are, and other tiles are kept as their places in it (see
            # BatchRecorder.kept_rows). Else the memory stays where the caller has it
            memory.freeze()
        view = view_of(access.arg, dtype)
        values = access.gather(view, fill, share=memory.frozen)
        loaded = values.astype(dtype, copy=False).reshape(access.addresses.shape)
        if memory.frozen and whole_tiles and not np.may_share_memory(values, view):
            tile = access.tile()
            assert tile is not None and access.affine is not None
            lanes, _ = access.affine.elements(access.arg.itemsize)
            self.recorder.note_gathered(loaded, GatheredRows(view, tile[0], lanes, loaded.shape[1:]))
        return triton_compat.TensorHandle(loaded, ptrs.get_element_ty())

    @staticmethod
    def _shareable(access: Access, dtype: np.dtype) -> bool:
        """Whether a gather of `access` can be a view (see Access.gather)."""
        if access.active is not None or access.rows is not None:
            return False
        return access.side_by_side(view_of(access.arg, dtype).size) is not None

    def store(
        self, store: Callable[[], Any], addresses: np.ndarray, active: np.ndarray, dtype: np.dtype, value: Any
    ) -> tuple[np.ndarray, Any, np.ndarray | None]:
        access = self._access
        if self.precise or access is None or not access.direct:
            self._written = None
            return super().store(store, np.asarray(addresses), active, dtype, value)
        # the launch's first write to this memory, or to these elements of it: what is there is
        # its inputs, which stay where they are (the caller's memory, or a frozen copy), so a view
        # of them serves as `before` (and for the undo) where a copy would otherwise
        memory = access.arg.memory
        before: np.ndarray | None = None
        if memory.lazy or memory.frozen:
            before = access.gather(view_of(access.arg, dtype), share=True)
        else:
            inputs = self._unwritten_inputs(access, dtype)
            before = None if inputs is None else access.gather(inputs, share=True)
        if before is None:
            before = access.gather(view_of(access.arg, dtype))
        # every lane active, the rows' elements one stretch: each of its bytes is written
        stretch = None
        if access.active is None and access.rows is None:
            stretch = access.side_by_side((access.arg.span_hi - access.arg.span_lo) // dtype.itemsize)
        view = view_of(access.arg, dtype, write=True, whole=stretch)
        values = np.broadcast_to(value.data, addresses.shape).reshape(before.shape)
        self.undo.steps.append(access.scatter(view, values, before))
        self._note_written(access)
        after = None
        if self.recorder.keep:
            whole = access.active is None and access.rows is None and values.dtype == view.dtype
            # every lane stored, each to its own element: what is there now is what was stored
            after = values if whole and access.distinct() else access.gather(view)
        shape = addresses.shape
        return before.reshape(shape), None, None if after is None else after.reshape(shape)

    def _unwritten_inputs(self, access: Access, dtype: np.dtype) -> np.ndarray | None:
        """The argument's elements as the launch found them, where none that `access` writes was
        written in the launch yet (the copy holds those bytes still): the caller's memory, which
        the launch leaves as it is until it ends, or the read-only inputs a frozen copy left
        (None: elsewhere, or not known)."""
        arg, memory = access.arg, access.arg.memory
        # (a poisoned argument's copy differs from the caller's memory from the start)
        if self._written is None or not memory.direct or memory.space != "host" or arg.poisoned:
            return None
        reach = _reach(access)
        if reach is None:
            return None
        span = self._written.get(arg.name)
        if span is not None and reach[0] < span[1] and span[0] < reach[1]:
            return None
        inputs = memory.read_only_inputs
        raw = memory.read() if inputs is None else inputs
        return raw[arg.span_lo : arg.span_hi].view(dtype)

    def _note_written(self, access: Access) -> None:
        written = self._written
        reach = None if written is None else _reach(access)
        if written is None or reach is None:
            return
        lo, hi = reach
        span = written.get(access.arg.name)
        written[access.arg.name] = (lo, hi) if span is None else (min(lo, span[0]), max(hi, span[1]))

    def assertion_failed(self) -> None:
        if self.recorder.trips is not None:  # perhaps only in programs a masked loop is done with
            raise Divergence(self.recorder.trips)
        raise BatchUnsupported("a failed device_assert")

    def around(
        self, addresses: np.ndarray, active: np.ndarray, dtype: np.dtype, atomic: Callable[[], Any]
    ) -> tuple[np.ndarray, Any, np.ndarray]:
        self._written = None
        result = atomic()
        before, after = self.builder.atomic_rows
        zero = np.zeros((), dtype=before.dtype)
        return np.where(active, before, zero), result, np.where(active, after, zero)

    def event(
        self,
        kind: str,
        addresses: np.ndarray,
        active: np.ndarray,
        values: np.ndarray | None,
        before: np.ndarray | None = None,
        reads: bool = False,
        writes: bool = False,
    ) -> None:
        if not self.precise:
            self._ranged_event(kind, addresses, active, values, before, reads, writes)
            return
        file, line = self.locate()
        recorder = self.recorder
        seq = recorder.next_seq()
        batch = addresses.shape[0]
        flat_addresses = addresses.reshape(batch, -1)
        flat_active = active.reshape(batch, -1)
        counts = flat_active.sum(axis=1)
        firsts = flat_addresses[np.arange(batch), flat_active.argmax(axis=1)]
        args = self._first_lane_arguments(firsts, counts)
        # one copy of the batch's arrays, when a program of it can be kept; each event holds its row
        keep = recorder.keep
        mask_rows = np.array(active, copy=True) if keep else None
        value_rows = (
            None
            if values is None or not keep
            else np.array(np.broadcast_to(values, addresses.shape), copy=True)
        )
        before_rows = None if before is None or not keep else np.array(before, copy=True)
        shared = args[0] if all(a is args[0] for a in args) else None
        if shared is not None:
            offsets = (addresses.astype(np.int64) - shared.ptr) // shared.itemsize
            big = np.iinfo(np.int64).max
            lows = np.where(active, offsets, big).reshape(batch, -1).min(axis=1)
            highs = np.where(active, offsets, -big).reshape(batch, -1).max(axis=1) + 1
        if self.update_maps and counts.any():  # each lane counts for the argument it lies in
            programs = np.repeat(self._linear, counts)
            for arg, offsets_of_arg, lanes_of_arg in self.addresses.split(addresses[active]):
                index = offsets_of_arg + arg.origin
                inside = (index >= 0) & (index < arg.size)
                self.pairs.append((arg.name, programs[lanes_of_arg][inside], index[inside], reads, writes))
        running = recorder.active
        lanes_per_row = int(np.prod(addresses.shape[1:]))
        for r, program in enumerate(recorder.programs):
            if running is not None and not running[r]:
                continue  # a masked loop is done with this program: it made no access
            arg = args[r]
            at = seq if isinstance(seq, int) else int(seq[r])
            event = MemoryEvent(
                kind, at, file, line, arg.name if arg else None, int(counts[r]), 0, 0, lanes=lanes_per_row
            )
            if arg is not None:
                if shared is not None:
                    row_offsets = offsets[r]
                    event.lo, event.hi = int(lows[r]), int(highs[r])
                else:
                    row_offsets = (addresses[r].astype(np.int64) - arg.ptr) // arg.itemsize
                    live = row_offsets[active[r]]
                    event.lo, event.hi = int(live.min()), int(live.max()) + 1
                if program.kept:
                    event.indices = row_offsets
            if program.kept and mask_rows is not None:
                event.mask = mask_rows[r]
                event.values = None if value_rows is None else value_rows[r]
                event.before = None if before_rows is None else before_rows[r]
            program.events.append(event)

    def _ranged_event(
        self,
        kind: str,
        addresses: np.ndarray,
        active: np.ndarray,
        values: np.ndarray | None,
        before: np.ndarray | None,
        reads: bool,
        writes: bool,
    ) -> None:
        """`event` with range bookkeeping (the access was seen by `check`)."""
        file, line = self.locate()
        recorder = self.recorder
        seq = recorder.next_seq()
        access, self._access = self._access, None
        batch = addresses.shape[0]
        held, whole = recorder.at, len(recorder.batch)
        if access is not None:
            arg = access.arg
            if held is None:
                self.book.access(arg.name, reads, writes, access.lo, access.hi, access)
            else:  # the bookkeeping keeps every program of the batch
                lo, hi = _spread(access.lo, held, whole), _spread(access.hi, held, whole)
                self.book.access(arg.name, reads, writes, lo, hi, HeldRows(access, held, whole))
            lanes = access.flat.shape[1]
            if access.rows is not None:
                counts = np.zeros(batch, np.int64)
                counts[access.rows] = lanes
            else:
                counts = np.full(batch, lanes) if access.active is None else access.active.sum(axis=1)
            live = access.lo < access.hi
            low, high = np.where(live, access.lo - arg.origin, 0), np.where(live, access.hi - arg.origin, 0)
            if held is not None:
                counts, low, high = (_spread(a, held, whole) for a in (counts, low, high))
        else:
            counts = low = high = np.zeros(whole, np.int64)
        block = EventBlock(
            kind,
            seq,
            file,
            line,
            access.arg.name if access is not None else None,
            counts,
            low,
            high,
            rows=recorder.active,
            lanes=int(np.prod(addresses.shape[1:])),
        )
        if recorder.keep:
            block.kept_rows = recorder.kept_row_map()
            block.mask = recorder.kept_rows(active)
            if values is not None:
                block.values = recorder.kept_rows(np.broadcast_to(values, addresses.shape))
            if before is not None:
                block.before = recorder.kept_rows(before)
            if access is not None:
                tile = access.tile()
                if tile is not None:
                    shift, lanes = tile
                    index_kept = recorder.kept_positions()
                    kept = slice(None) if index_kept is None else index_kept
                    block.indices = TileRows(shift[kept] - access.arg.origin, lanes, addresses.shape[1:])
                else:
                    index = access.full_index().reshape(addresses.shape) - access.arg.origin
                    block.indices = recorder.kept_rows(index)
        recorder.add_block(block)

    def _first_lane_arguments(self, firsts: np.ndarray, counts: np.ndarray) -> list[Any]:
        """Per program, the argument its first active lane points into (None: no active lane)."""
        live = counts > 0
        if not live.any():
            return [None] * len(counts)
        common = self.buffer_at(int(firsts[live][0]))
        if common is not None:
            inside = (firsts >= np.uint64(common.lo)) & (firsts < np.uint64(common.hi))
            if inside[live].all():
                return [common if c else None for c in live]
        return [self.buffer_at(int(a)) if c else None for a, c in zip(firsts, live)]

    def before_read(self, addresses: np.ndarray, active: np.ndarray, atomic: bool = False) -> None:
        if not self.precise:
            return  # the range check happens with the access's event
        for arg, offsets, rows in self._per_argument(addresses, active):
            index = offsets + arg.origin
            me = self._linear_rows(rows)
            plain = self.state.plain_writer[arg.name][index]
            other_atomic = self._atomic_writer[arg.name][index]
            if ((plain >= 0) & (plain != me)).any() or (
                not atomic and ((other_atomic >= 0) & (other_atomic != me)).any()
            ):
                raise BatchUnsupported("a program reads what another program wrote")
            if not atomic:
                readers = self._plain_reader[arg.name]
                self.undo.remember(readers, index)
                np.maximum.at(readers, index, me)
            initialised = self.state.initialised.get(arg.name)
            if initialised is not None and self.observations is not None:
                fresh = ~initialised[index]
                for r in distinct(rows[fresh]):
                    uninitialised.read(
                        self.observations,
                        self._row_site(int(r)),
                        arg=arg.name,
                        elements=offsets[fresh & (rows == r)],
                        layout=layout(arg),
                    )

    def after_write(
        self,
        addresses: np.ndarray,
        active: np.ndarray,
        before: np.ndarray,
        after: np.ndarray | None,
        plain: bool,
    ) -> None:
        if not self.precise:
            access = self._access
            if access is None or not access.direct:  # stored by the interpreter: undo by address
                lanes = active.reshape(-1)
                self._stored(addresses.reshape(-1)[lanes], before.reshape(-1)[lanes].copy())
            return
        lanes = active.reshape(-1)
        self._stored(addresses.reshape(-1)[lanes], before.reshape(-1)[lanes].copy())
        for arg, offsets, rows in self._per_argument(addresses, active):
            index = offsets + arg.origin
            me = self._linear_rows(rows)
            initialised = self.state.initialised.get(arg.name)
            if initialised is not None:
                self.undo.remember(initialised, index)
                initialised[index] = True
            writers = self.state.plain_writer[arg.name]
            if (self._plain_reader[arg.name][index] > me).any():
                # a later program already read these elements: run serially, it would see this write
                raise BatchUnsupported("a program writes what a later program reads")
            if plain:
                order = np.argsort(index, kind="stable")
                duplicate = np.zeros(index.size, bool)
                duplicate[order[1:]] = (index[order][1:] == index[order][:-1]) & (
                    me[order][1:] != me[order][:-1]
                )
                foreign = (writers[index] >= 0) & (writers[index] != me)
                if duplicate.any() or foreign.any() or (self._atomic_writer[arg.name][index] >= 0).any():
                    raise BatchUnsupported("programs write the same elements")
                self.undo.remember(writers, index)
                writers[index] = me
            else:
                line = self.locate()[1]
                sites = self._atomic_line[arg.name]
                touched = sites[index]
                if (
                    (touched >= 0) & (touched != line) & (self._atomic_writer[arg.name][index] != me)
                ).any() or ((writers[index] >= 0) & (writers[index] != me)).any():
                    raise BatchUnsupported("programs interleave atomics at different sites")
                self.undo.remember(sites, index)
                self.undo.remember(self._atomic_writer[arg.name], index)
                sites[index] = line
                self._atomic_writer[arg.name][index] = me

    def _stored(self, addresses: np.ndarray, old: np.ndarray) -> None:
        """Keep what a store at the kernel's `addresses` overwrote (the undo puts it back at the
        host addresses the interpreter wrote)."""
        self.undo.stored(np.array(self.addresses.host(addresses), copy=True), old)

    def _per_argument(
        self, addresses: np.ndarray, active: np.ndarray
    ) -> Iterator[tuple[Any, np.ndarray, np.ndarray]]:
        """(argument, element offsets, batch rows) of the active lanes, per argument touched."""
        batch = addresses.shape[0]
        rows = np.broadcast_to(
            np.arange(batch).reshape((batch,) + (1,) * (addresses.ndim - 1)), addresses.shape
        )
        live = addresses[active]
        live_rows = rows[active]
        for arg, offsets, at in self.addresses.split(live):
            yield arg, offsets, live_rows[at]

    def _linear_rows(self, rows: np.ndarray) -> np.ndarray:
        return self._linear[rows]

    def _row_site(self, row: int) -> Site:
        """Where the program of batch row `row` is now, for an observation."""
        file, line = self.locate()
        pid = self.recorder.batch[self.recorder.full_row(row)]
        return Site(pid, self.launch.linear(pid), file, line)

    def commit_counts(self) -> None:
        """Add the batch's accesses to the launch's buffer maps (distinct programs per element)."""
        if not self.precise:
            self.book.commit()
            return
        for name in {p[0] for p in self.pairs}:
            bmap = self.launch.buffers[name]
            for reads in (True, False):
                picked = [
                    (prog, idx) for n, prog, idx, r, w in self.pairs if n == name and (r if reads else w)
                ]
                if not picked:
                    continue
                programs = np.concatenate([p for p, _ in picked]).astype(np.int64)
                index = np.concatenate([i for _, i in picked]).astype(np.int64)
                keys = programs * bmap.size + index
                # one access of ascending elements per program (the common case) is distinct already
                if len(picked) > 1 or (keys.size > 1 and not (np.diff(keys) > 0).all()):
                    keys = np.sort(keys)
                    keys = keys[
                        np.concatenate(([True], keys[1:] != keys[:-1]))
                    ]  # distinct (program, element)
                elements = keys % bmap.size
                counts = np.bincount(elements, minlength=bmap.size).astype(np.int32)
                if reads:
                    bmap.reads += counts
                else:
                    bmap.writes += counts
                    np.maximum.at(bmap.writers(), elements, (keys // bmap.size).astype(np.int32))
        self.pairs = []


class HeldRows:
    """An access made by the rows a narrowed masked loop holds (see BatchRecorder.at), as the
    bookkeeping sees it: rows of the whole batch (the Lanes protocol of batched/intervals)."""

    def __init__(self, access: Access, held: np.ndarray, batch: int) -> None:
        self.access, self.held, self.batch = access, held, batch
        self.active = access.active
        self.rows = held if access.rows is None else held[access.rows]

    def index(self) -> np.ndarray:
        return self.access.index()

    def shape(self, live: np.ndarray) -> TileShape | None:
        shape = self.access.shape(live[self.held])
        if shape is None:
            return None
        return TileShape(shape.lanes, _spread(shape.shift, self.held, self.batch))

    def put(self, target: np.ndarray, values: np.ndarray) -> None:
        self.access.put(target, values)

    def put_later(self, size: int, values: np.ndarray) -> Callable[[np.ndarray], None] | None:
        return self.access.put_later(size, values)

    def disjoint(self, size: int) -> bool:
        return self.access.disjoint(size)


def _all(mask: np.ndarray) -> bool:
    """mask.all(), looking at each element once where `mask` is a broadcast (an unmasked load's
    all-true mask, a row mask repeated over lanes)."""
    if 0 in mask.strides:
        mask = mask[tuple(slice(None) if stride else slice(0, 1) for stride in mask.strides)]
    return bool(mask.all())


def _reach(access: Access) -> tuple[int, int] | None:
    """The map indices [lo, hi) an access's rows touch together (None: no row touches any)."""
    live = access.lo < access.hi
    if not live.any():
        return None
    return int(access.lo[live].min()), int(access.hi[live].max())


def _spread(values: np.ndarray, rows: np.ndarray, batch: int) -> np.ndarray:
    full = np.zeros(batch, values.dtype)
    full[rows] = values
    return full


def _increasing(lanes: np.ndarray) -> bool:
    return lanes.size < 2 or bool((lanes[1:] > lanes[:-1]).all())
