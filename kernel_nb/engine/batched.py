"""The batched strategy: the programs of a launch run together, one numpy call serving them all.

Every value carries the batch's programs along a leading axis (see batched_builder). Where the
programs disagree about control flow, the batch is undone (an undo log restores every byte its
stores and atomics changed) and split into groups that agree, each run on its own. The result must
equal the serial strategy's, records and findings included; wherever the batched form cannot
guarantee that (one program reading what another wrote, an out-of-bounds access whose first
occurrence only the serial order defines, prints, tensor descriptors), `BatchUnsupported` is
raised and the launch runs serially from its input snapshot.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb.checks import Observations, describe
from kernel_nb.engine import triton_compat
from kernel_nb.engine.batched_builder import (
    BatchedBuilder,
    BatchUnsupported,
    Divergence,
    batched_language,
    batched_value,
)
from kernel_nb.engine.capture import Recorder
from kernel_nb.engine.hooks import MemoryGuard
from kernel_nb.engine.run import LaunchContext
from kernel_nb.errors import LaunchInterrupted
from kernel_nb.options import Options
from kernel_nb.trace import MemoryEvent, Pid, ProgramTrace, Record, Summary, summary_rows

MAX_BATCH = 4096

# source text that makes a kernel's programs depend on running one at a time
_SERIAL_ONLY = ("print(", "breakpoint(", "set_trace(", "device_print", "static_print", "inline_asm")


def unsupported_reason(fn: Callable[..., Any], options: Options) -> str | None:
    """Why the batched strategy does not apply to a launch of `fn` (None: it applies)."""
    if options.strategy == "serial":
        return "the serial strategy was asked for"
    if options.breakpoints:
        return "breakpoints stop single programs"
    if options.order != "serial":
        return f"programs run in {options.order} order"
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return "the kernel's source is not available"
    for marker in _SERIAL_ONLY:
        if marker in source:
            return f"the kernel calls {marker.rstrip('(')}"
    return None


@dataclass
class _UndoLog:
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


class BatchRecorder(Recorder):
    """Records a batch: each value's rows are its programs' values."""

    def begin_batch(self, pids: list[Pid]) -> None:
        self.batch = pids
        self.programs = [ProgramTrace(pid, kept=True) for pid in pids]
        self.program = self.programs[0]
        self.keep = True
        self.seq = 0
        self.frames = [type(self.frames[0])("")]

    def _rows_of(self, data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        b = data.shape[0]
        full = data.reshape((b, *shape)) if data.size == b * int(np.prod(shape)) else data
        return np.broadcast_to(full, (len(self.batch), *full.shape[1:])) if b != len(self.batch) else full

    def record(self, stmt: int, value: Any) -> None:
        extracted = self._extract_batch(value)
        if extracted is None:
            return
        rows, dtype, shape, pointer_args = extracted
        seq = self.next_seq()
        call_path, iteration = self.call_path, self.iteration
        flat = rows.reshape(len(self.batch), -1)
        summaries = summary_rows(np.ascontiguousarray(flat))
        kept = np.array(rows, copy=True)
        for r, program in enumerate(self.programs):
            program.records.append(
                Record(stmt, seq, call_path, iteration, dtype, shape, summaries[r], kept[r], pointer_args[r])
            )
        if self.observations is not None:
            self._batch_nonfinite(stmt, kept, summaries)

    def _extract_batch(self, value: Any) -> tuple[np.ndarray, str, tuple[int, ...], list[str | None]] | None:
        batch = len(self.batch)
        if triton_compat.is_tensor(value):
            data = triton_compat.tensor_data(value)
            if not isinstance(data, np.ndarray):
                return None
            shape = triton_compat.tensor_shape(value)
            rows = self._rows_of(data, shape)
            type_name = triton_compat.tensor_type_name(value)
            if triton_compat.is_pointer_tensor(value):
                assert isinstance(self.guard, BatchGuard)
                offsets, args = self.guard.row_offsets(rows)
                return offsets, type_name, shape, args
            from kernel_nb import numerics

            if numerics.is_bits_float(type_name):
                rows = numerics.decode(rows, type_name)
            return rows, type_name, shape, [None] * batch
        single = self._extract(value)
        if single is None:
            return None
        data, dtype, shape, arg = single
        return np.broadcast_to(data, (batch, *data.shape)), dtype, shape, [arg] * batch

    def _batch_nonfinite(self, stmt: int, rows: np.ndarray, summaries: list[Summary]) -> None:
        info = self.statement_info[stmt]
        frame = self.frames[-1]
        has_nan = np.array([s.nan > 0 for s in summaries])
        has_inf = np.array([s.inf > 0 for s in summaries])
        if (has_nan.any() or has_inf.any()) and info.kind in ("assign", "augassign"):
            batch = len(self.batch)
            none = np.zeros(batch, bool)
            seen = [frame.nonfinite.get(name, (none, none)) for name in info.operands]
            operand_nan = np.logical_or.reduce([np.broadcast_to(n, batch) for n, _ in seen] + [none])
            operand_inf = np.logical_or.reduce([np.broadcast_to(i, batch) for _, i in seen] + [none])
            statement = self.statements[stmt]
            assert self.observations is not None
            for r in np.flatnonzero(has_nan | has_inf):
                pid = self.batch[r]
                row = np.asarray(rows[r], dtype=np.float64).reshape(-1)
                if has_nan[r] and not operand_nan[r] and not self.observations.seen("nan_origin", pid):
                    lanes = np.flatnonzero(np.isnan(row))
                    source = (
                        "loads NaN from memory"
                        if info.loads
                        else "becomes NaN here, from operands that hold no NaN"
                        + (" (an Inf among them: inf - inf, 0 * inf or inf / inf)" if operand_inf[r] else "")
                    )
                    self.observations.add(
                        "nan_origin",
                        "warning" if info.loads else "error",
                        pid,
                        statement.file,
                        statement.line,
                        elements=lanes,
                        detail=f"{info.name} {source}: {lanes.size} of {row.size} lanes {describe(lanes)}",
                        order=self.order_of(pid),
                    )
                elif (
                    not has_nan[r]
                    and has_inf[r]
                    and not (operand_nan[r] or operand_inf[r] or info.makes_inf)
                    and not self.observations.seen("inf_origin", pid)
                ):
                    lanes = np.flatnonzero(np.isinf(row))
                    source = (
                        "loads Inf from memory"
                        if info.loads
                        else "overflows to Inf here, from finite operands"
                    )
                    self.observations.add(
                        "inf_origin",
                        "warning",
                        pid,
                        statement.file,
                        statement.line,
                        elements=lanes,
                        detail=f"{info.name} {source}: {lanes.size} of {row.size} lanes {describe(lanes)}",
                        order=self.order_of(pid),
                    )
        frame.nonfinite[info.name] = (has_nan, has_inf)

    def lane_rows(
        self, bad: np.ndarray
    ) -> Iterator[tuple[Pid, int, np.ndarray, Callable[[Any], np.ndarray]]]:
        bad = np.asarray(bad)
        batch = len(self.batch)
        full = np.broadcast_to(bad, (batch, *bad.shape[1:])) if bad.shape[0] != batch else bad
        for r in np.flatnonzero(full.reshape(batch, -1).any(axis=1)):
            lanes = np.flatnonzero(full[r].reshape(-1))

            def row_of(a: Any, r: int = int(r)) -> np.ndarray:
                a = np.asarray(a)
                return (a[r] if a.shape[0] == batch else a[0]).reshape(-1)

            pid = self.batch[r]
            yield pid, self.order_of(pid), lanes, row_of

    def trim(self) -> None:
        """Apply the capture budget in program order, as the serial strategy does as it goes."""
        for program in self.programs:
            if (
                self.capture
                and (self.selected is None or program.pid in self.selected)
                and self.kept_bytes < self.budget
            ):
                self.kept_bytes += sum(r.value.nbytes for r in program.records if r.value is not None) + sum(
                    a.nbytes
                    for e in program.events
                    for a in (e.indices, e.mask, e.values, e.before)
                    if a is not None
                )
                continue
            program.kept = False
            for record in program.records:
                record.value = None
            for event in program.events:
                event.indices = event.mask = event.values = event.before = None


class BatchGuard(MemoryGuard):
    """The memory guard for a batch: accesses of every program at once, split per program."""

    undo: _UndoLog
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
        self.undo = _UndoLog()
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
        # one copy of the batch's arrays; each program's event holds its row
        mask_rows = np.array(active, copy=True)
        value_rows = None if values is None else np.array(np.broadcast_to(values, addresses.shape), copy=True)
        before_rows = None if before is None else np.array(before, copy=True)
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
                event.indices = row_offsets
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
                if len(picked) > 1 or keys.size > 1 and not (np.diff(keys) > 0).all():
                    keys = np.sort(keys)
                    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]  # distinct (program, element)
                elements = keys % bmap.size
                counts = np.bincount(elements, minlength=bmap.size).astype(np.int32)
                if reads:
                    bmap.reads += counts
                else:
                    bmap.writes += counts
                    np.maximum.at(bmap.last_writer, elements, (keys // bmap.size).astype(np.int32))
        self.pairs = []


class BatchedRun(LaunchContext):
    """Runs a launch's programs in batches, splitting where control flow diverges."""

    recorder: BatchRecorder
    guard: BatchGuard

    def __post_init__(self) -> None:
        super().__post_init__()
        options = self.engine.options
        recorder = BatchRecorder(options, options.budget_bytes)
        guard = BatchGuard(self.launch, self.bound.buffers, recorder, self.locate)
        recorder.guard = guard
        recorder.statements = self.launch.statements
        recorder.statement_info = self.recorder.statement_info
        recorder.order_of = self.launch.linear
        guard.update_maps = True
        guard.initialised = self.guard.initialised
        guard.share_aliases()
        self.recorder, self.guard = recorder, guard
        self.detect = options.detect
        self.arith.recorder = recorder

    def run(self, order: list[Pid]) -> None:
        engine, launch = self.engine, self.launch
        progress = engine.options.progress
        previous, engine._active = engine._active, self
        done = 0
        if progress is not None:
            # a batch can run long (a loop over all its programs at once): report between batches
            # and, at most every 0.2 s, from inside the batch's loops
            last = [time.perf_counter()]

            def during_batch() -> None:
                now = time.perf_counter()
                if now - last[0] > 0.2:
                    last[0] = now
                    progress(done, len(order))

            self.recorder.on_iteration = during_batch
        try:
            with self._language() as stock:
                kernel = self.function(self.fn)
                values = {k: batched_value(v) for k, v in self.bound.values.items()}
                for start in range(0, len(order), MAX_BATCH):
                    group = order[start : start + MAX_BATCH]
                    self._run_group(stock, kernel, values, group)
                    done += len(group)
                    if progress is not None:
                        progress(done, len(order))
        except KeyboardInterrupt:
            launch.status, launch.error = "interrupted", "interrupted"
            batch = getattr(self.recorder, "batch", None)
            pid = batch[0] if batch else None  # the first program of the batch that was running
            raise LaunchInterrupted(
                f"{launch.kernel}: interrupted at pid={pid}; the arrays are unchanged",
                kernel=launch.kernel,
                pid=pid,
                launch=launch,
            ) from None
        finally:
            engine._active = previous
        # groups split off by divergence finish out of order: list programs as the serial run does
        launch.programs = dict(sorted(launch.programs.items(), key=lambda item: launch.linear(item[0])))
        from kernel_nb import checks

        checks.finish(launch, self.observations)

    @contextmanager
    def _language(self) -> Iterator[Any]:
        from kernel_nb.engine.patches import interpreter_scope

        with interpreter_scope(self.engine.call_helper) as stock, batched_language():
            yield stock

    def _run_group(
        self, stock: Any, kernel: Callable[..., Any], values: dict[str, Any], pids: list[Pid]
    ) -> None:
        attributes = BatchedBuilder.attributes(np.array(pids, dtype=np.int64), self.launch.grid)
        batch_observations = Observations()
        self.recorder.begin_batch(pids)
        self.guard.begin_batch()
        self.guard.builder = stock
        if self.detect:
            self.recorder.observations = batch_observations
            self.guard.observations = batch_observations
            self.arith.observations = batch_observations
        try:
            with (
                triton_compat.builder_as(stock, BatchedBuilder, **attributes) as builder,
                self.guard.installed(builder),
                self.arith.installed(builder),
            ):
                kernel(**values)
        except Divergence as split:
            self.guard.undo.rollback()
            for group in _groups(pids, split.values):
                self._run_group(stock, kernel, values, group)
            return
        except (BatchUnsupported, KeyboardInterrupt):
            raise
        except Exception as exc:  # the serial strategy reports it with the failing program's id
            raise BatchUnsupported(f"{type(exc).__name__} in a batch") from exc
        self.observations.merge(batch_observations)
        self.guard.commit_counts()
        self.recorder.trim()
        for program in self.recorder.programs:
            self.launch.programs[program.pid] = program


def _groups(pids: list[Pid], values: np.ndarray) -> list[list[Pid]]:
    """Programs grouped by the value they disagreed on, groups in the order of their first program."""
    groups: dict[Any, list[Pid]] = {}
    for pid, value in zip(pids, values.tolist()):
        groups.setdefault(value, []).append(pid)
    return list(groups.values())
