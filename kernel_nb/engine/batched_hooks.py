"""Memory hooks for the batched strategy: every program's accesses at once, split per program, and
the bookkeeping that tells when running programs together would differ from running them one by one
(see batched.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb.checks import describe
from kernel_nb.engine import triton_compat
from kernel_nb.engine.batched_builder import BatchUnsupported
from kernel_nb.engine.batched_capture import BatchRecorder
from kernel_nb.engine.hooks import MemoryGuard
from kernel_nb.trace import MemoryEvent


@dataclass
class UndoLog:
    """What a batch changed, to be put back when the batch must be split."""

    memory: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    arrays: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    def remember(self, target: np.ndarray, index: np.ndarray) -> None:
        self.arrays.append((target, index, target[index].copy()))

    def rollback(self) -> None:
        for addresses, old in reversed(self.memory):
            triton_compat.raw_store(addresses, old)
        for target, index, old in reversed(self.arrays):
            target[index] = old
        self.memory.clear()
        self.arrays.clear()


class BatchGuard(MemoryGuard):
    """The memory guard for a batch: accesses of every program at once, split per program."""

    undo: UndoLog
    recorder: BatchRecorder
    builder: Any  # the interpreter's builder while it is batched (for per-program atomic values)

    def share_aliases(self) -> None:
        """Arguments that are the same array (an in-place kernel given x twice) share their access
        state, so that one program writing through one name and another reading through the other
        is seen."""
        canonical: dict[tuple[int, int, int], str] = {}
        for b in self.buffers:
            key = (b.lo, b.hi, b.itemsize)
            first = canonical.setdefault(key, b.name)
            self._plain_writer[b.name] = self._plain_writer[first]
        self._canonical = canonical
        # the latest program (in launch order) that read each element with a plain load
        self._plain_reader = {b.name: np.full(b.size, -1, np.int32) for b in self.buffers}
        for b in self.buffers:
            self._plain_reader[b.name] = self._plain_reader[canonical[(b.lo, b.hi, b.itemsize)]]

    def begin_batch(self) -> None:
        self._linear = np.array([self.launch.linear(pid) for pid in self.recorder.batch], dtype=np.int32)
        self.undo = UndoLog()
        self.pairs: list[tuple[str, np.ndarray, np.ndarray, bool, bool]] = []
        if not hasattr(self, "_atomic_line"):
            self._atomic_line = {b.name: np.full(b.size, -1, np.int32) for b in self.buffers}
            self._atomic_writer = {b.name: np.full(b.size, -1, np.int32) for b in self.buffers}
            for b in self.buffers:
                first = self._canonical[(b.lo, b.hi, b.itemsize)]
                self._atomic_line[b.name] = self._atomic_line[first]
                self._atomic_writer[b.name] = self._atomic_writer[first]

    def lanes(self, ptrs: Any, mask: Any, *others: Any) -> tuple[np.ndarray, np.ndarray]:
        arrays = [ptrs.data] + [o.data for o in others if o is not None]
        if mask is not None:
            arrays.append(np.asarray(mask.data))
        shape = (len(self.recorder.batch), *ptrs.data.shape[1:])  # every program gets its own lanes
        addresses = np.broadcast_to(ptrs.data, shape)
        active = (
            np.broadcast_to(np.asarray(mask.data, bool), shape) if mask is not None else np.ones(shape, bool)
        )
        return addresses, active

    def check(
        self, op: str, ptrs: Any, addresses: np.ndarray, active: np.ndarray, unmasked: bool = False
    ) -> None:
        itemsize = triton_compat.pointer_element_itemsize(ptrs)
        if not self._in_bounds(addresses[active], itemsize).all():
            # which program fails first is defined by the serial order: let it say so
            raise BatchUnsupported("an access out of bounds")

    def assertion_failed(self) -> None:
        raise BatchUnsupported("a failed device_assert")

    def around(
        self, addresses: np.ndarray, active: np.ndarray, dtype: np.dtype, atomic: Callable[[], Any]
    ) -> tuple[np.ndarray, Any, np.ndarray]:
        result = atomic()
        before, after = self.builder.atomic_rows
        zero = np.zeros((), dtype=before.dtype)
        return np.where(active, before, zero), result, np.where(active, after, zero)

    def row_offsets(self, rows: np.ndarray) -> tuple[np.ndarray, list[str | None]]:
        """Pointer values of each program as element offsets into the argument its first lane points to."""
        batch = rows.shape[0]
        flat = rows.reshape(batch, -1)
        if flat.shape[1] == 0:
            return rows.astype(np.int64), [None] * batch
        firsts = [self.buffer_at(int(a)) for a in flat[:, 0]]
        bases = np.array([a.ptr if a is not None else 0 for a in firsts], dtype=np.int64)
        sizes = np.array([a.itemsize if a is not None else 1 for a in firsts], dtype=np.int64)
        shape = (batch,) + (1,) * (rows.ndim - 1)
        offsets = (rows.astype(np.int64) - bases.reshape(shape)) // sizes.reshape(shape)
        return offsets, [a.name if a is not None else None for a in firsts]

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
            if self.update_maps:
                index = offsets[active] + shared.origin
                programs = np.repeat(self._linear, counts)
                inside = (index >= 0) & (index < shared.size)
                self.pairs.append((shared.name, programs[inside], index[inside], reads, writes))
        for r, program in enumerate(recorder.programs):
            arg = args[r]
            event = MemoryEvent(kind, seq, file, line, arg.name if arg else None, int(counts[r]), 0, 0)
            if arg is not None:
                if shared is not None:
                    row_offsets = offsets[r]
                    event.lo, event.hi = int(lows[r]), int(highs[r])
                else:
                    row_offsets = (addresses[r].astype(np.int64) - arg.ptr) // arg.itemsize
                    live = row_offsets[active[r]]
                    event.lo, event.hi = int(live.min()), int(live.max()) + 1
                    if self.update_maps:
                        index = live + arg.origin
                        index = index[(index >= 0) & (index < arg.size)]
                        self.pairs.append(
                            (arg.name, np.full(index.size, self._linear[r]), index, reads, writes)
                        )
                if program.kept:
                    event.indices = row_offsets
            if program.kept and mask_rows is not None:
                event.mask = mask_rows[r]
                event.values = None if value_rows is None else value_rows[r]
                event.before = None if before_rows is None else before_rows[r]
            program.events.append(event)

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
        for arg, offsets, rows in self._per_argument(addresses, active):
            index = offsets + arg.origin
            me = self._linear_rows(rows)
            plain = self._plain_writer[arg.name][index]
            other_atomic = self._atomic_writer[arg.name][index]
            if ((plain >= 0) & (plain != me)).any() or (
                not atomic and ((other_atomic >= 0) & (other_atomic != me)).any()
            ):
                raise BatchUnsupported("a program reads what another program wrote")
            if not atomic:
                readers = self._plain_reader[arg.name]
                self.undo.remember(readers, index)
                np.maximum.at(readers, index, me)
            if arg.name in self.initialised and self.observations is not None:
                fresh = ~self.initialised[arg.name][index]
                for r in np.unique(rows[fresh]):
                    elements = offsets[fresh & (rows == r)]
                    self._observe_row(
                        int(r),
                        "uninitialised_read",
                        arg.name,
                        elements,
                        f"reads {arg.name} elements {describe(elements)} before any program wrote them "
                        f"({arg.name} holds uninitialised memory)",
                    )

    def after_write(
        self, addresses: np.ndarray, active: np.ndarray, before: np.ndarray, after: np.ndarray, plain: bool
    ) -> None:
        lanes = active.reshape(-1)
        self.undo.memory.append((addresses.reshape(-1)[lanes].copy(), before.reshape(-1)[lanes].copy()))
        for arg, offsets, rows in self._per_argument(addresses, active):
            index = offsets + arg.origin
            me = self._linear_rows(rows)
            if arg.name in self.initialised:
                self.undo.remember(self.initialised[arg.name], index)
                self.initialised[arg.name][index] = True
            writers = self._plain_writer[arg.name]
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
        if live.size == 0:
            return
        starts = np.array([b.lo for b in self.buffers], dtype=np.uint64)
        edges = np.searchsorted(starts, np.array([live.min(), live.max()]), side="right") - 1
        if edges[0] == edges[1]:  # every lane in one argument's range: no per-lane lookup
            arg = self.buffers[int(edges[0])]
            yield arg, (live.astype(np.int64) - arg.ptr) // arg.itemsize, live_rows
            return
        owner = np.searchsorted(starts, live, side="right") - 1
        for i in np.unique(owner):
            arg = self.buffers[int(i)]
            pick = owner == i
            offsets = (live[pick].astype(np.int64) - arg.ptr) // arg.itemsize
            yield arg, offsets, live_rows[pick]

    def _linear_rows(self, rows: np.ndarray) -> np.ndarray:
        return self._linear[rows]

    def _observe_row(self, row: int, kind: str, arg: str, elements: np.ndarray, detail: str) -> None:
        assert self.observations is not None
        file, line = self.locate()
        pid = self.recorder.batch[row]
        self.observations.add(
            kind,
            "error",
            pid,
            file,
            line,
            arg=arg,
            elements=elements,
            detail=detail,
            order=self.launch.linear(pid),
        )

    def commit_counts(self) -> None:
        """Add the batch's accesses to the launch's buffer maps (distinct programs per element)."""
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
                    np.maximum.at(bmap.last_writer, elements, (keys // bmap.size).astype(np.int32))
        self.pairs = []
