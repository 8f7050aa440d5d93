"""Recording for the batched strategy: each value's rows are its programs' values, split into the
per-program records the serial strategy makes (see batched.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.engine import triton_compat
from kernel_nb.engine.batched_builder import AFFINE
from kernel_nb.engine.capture import Recorder, report_origin
from kernel_nb.trace import Deferred, EventBlock, Pid, ProgramTrace, RecordBlock, SummaryColumns


class BatchRecorder(Recorder):
    """Records a batch: each value's rows are its programs' values."""

    def begin_batch(self, pids: list[Pid]) -> None:
        self.batch = pids
        # values are copied only for programs that can still be kept: the budget is not spent yet
        # and they are selected; `trim` then applies the serial strategy's exact rule
        open_budget = self.capture and self.kept_bytes < self.budget
        self.keep_rows = np.array(
            [open_budget and (self.selected is None or pid in self.selected) for pid in pids]
        )
        self.programs = [ProgramTrace(pid, kept=bool(k)) for pid, k in zip(pids, self.keep_rows)]
        # every program of the batch runs the same statements: they share the blocks, one row each
        self.record_blocks: list[RecordBlock] = []
        self.event_blocks: list[EventBlock] = []
        for r, program in enumerate(self.programs):
            records, events = program.records, program.events
            assert isinstance(records, Deferred) and isinstance(events, Deferred)
            records.share(self.record_blocks, r)
            events.share(self.event_blocks, r)
            records.keep_values = events.keep_values = program.kept
        picked = np.flatnonzero(self.keep_rows)
        self.kept_index = None if picked.size == len(pids) else picked
        self.program = self.programs[0]
        self.keep = bool(self.keep_rows.any())
        self.seq = 0
        self.frames = [type(self.frames[0])("")]

    def _rows_of(self, data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        b = data.shape[0]
        full = data.reshape((b, *shape)) if data.size == b * int(np.prod(shape)) else data
        return np.broadcast_to(full, (len(self.batch), *full.shape[1:])) if b != len(self.batch) else full

    def record(self, stmt: int, value: Any) -> None:
        tile = self._pointer_tile(value)
        if tile is not None:
            self._record_tile(stmt, value, *tile)
            return
        extracted = self._extract_batch(value)
        if extracted is None:
            return
        rows, dtype, shape, pointer_args = extracted
        seq = self.next_seq()
        call_path, iteration = self.call_path, self.iteration
        flat = rows.reshape(len(self.batch), -1)
        summaries = SummaryColumns.of(np.ascontiguousarray(flat))
        values, value_rows = None, None
        if self.keep:  # only the rows of programs that can be kept
            values, value_rows = self.kept_rows(rows), self.kept_row_map()
        self.record_blocks.append(
            RecordBlock(
                stmt, seq, call_path, iteration, dtype, shape, summaries, values, pointer_args, value_rows
            )
        )
        if self.observations is not None:
            self._batch_nonfinite(stmt, rows, *summaries.nonfinite())

    def _pointer_tile(self, value: Any) -> tuple[np.ndarray, np.ndarray, str] | None:
        """A pointer block with an Affine form inside one argument: each program's element offsets
        as shift + lanes, so that its records need no array per program."""
        if not (triton_compat.is_tensor(value) and triton_compat.is_pointer_tensor(value)):
            return None
        affine = getattr(value.handle, AFFINE, None)
        if not affine or affine.lanes.size != int(np.prod(triton_compat.tensor_shape(value))):
            return None
        return self.guard.tile_offsets(affine, len(self.batch))  # type: ignore[union-attr]  # a BatchGuard

    def _record_tile(self, stmt: int, value: Any, shift: np.ndarray, lanes: np.ndarray, arg: str) -> None:
        batch = len(self.batch)
        shape = triton_compat.tensor_shape(value)
        count = lanes.size
        # the mean as Summary.of computes it: the exact integer sum, divided once
        total = shift.astype(np.float64) * count + float(int(lanes.sum()))
        summaries = SummaryColumns(
            (shift + int(lanes.min())).astype(np.int64),
            (shift + int(lanes.max())).astype(np.int64),
            total / count,
            count,
            {},
        )
        values, value_rows = None, None
        if self.keep:
            picked = np.arange(batch) if self.kept_index is None else self.kept_index
            values = (shift[picked][:, None] + lanes[None, :]).reshape((picked.size, *shape))
            value_rows = self.kept_row_map()
        self.record_blocks.append(
            RecordBlock(
                stmt,
                self.next_seq(),
                self.call_path,
                self.iteration,
                triton_compat.tensor_type_name(value),
                shape,
                summaries,
                values,
                [arg] * batch,
                value_rows,
            )
        )
        if self.observations is not None:
            none = np.zeros(batch, bool)
            self._batch_nonfinite(stmt, np.zeros((batch, 0)), none, none)

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
                offsets, args = self.guard.row_offsets(rows)  # type: ignore[union-attr]  # a BatchGuard
                return offsets, type_name, shape, args
            if numerics.is_bits_float(type_name):
                rows = numerics.decode(rows, type_name)
            return rows, type_name, shape, [None] * batch
        single = self._extract(value)
        if single is None:
            return None
        data, dtype, shape, arg = single
        return np.broadcast_to(data, (batch, *data.shape)), dtype, shape, [arg] * batch

    def _batch_nonfinite(self, stmt: int, rows: np.ndarray, has_nan: np.ndarray, has_inf: np.ndarray) -> None:
        info = self.statement_info[stmt]
        frame = self.frames[-1]
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
                report_origin(
                    self.observations,
                    info,
                    statement,
                    pid,
                    self.order_of(pid),
                    rows[r],
                    operand_nan=bool(operand_nan[r]),
                    operand_inf=bool(operand_inf[r]),
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

    def kept_rows(self, rows: np.ndarray) -> np.ndarray:
        """A copy of the rows of programs that can be kept."""
        if self.kept_index is None:
            return np.array(rows, copy=True)
        return np.array(rows[self.kept_index], copy=True)

    def kept_row_map(self) -> np.ndarray | None:
        """Row → index in `kept_rows` copies (-1: not kept); None when every row is kept."""
        if self.kept_index is None:
            return None
        index = np.full(len(self.batch), -1)
        index[self.kept_index] = np.arange(self.kept_index.size)
        return index

    def trim(self) -> None:
        """Apply the capture budget in program order, as the serial strategy does as it goes."""
        sizes = np.zeros(len(self.batch), np.int64)
        for record in self.record_blocks:
            sizes += record.row_bytes()
        for event in self.event_blocks:
            sizes += event.row_bytes()
        for program, size in zip(self.programs, sizes.tolist()):
            if program.kept and self.kept_bytes < self.budget:
                self.kept_bytes += size
                continue
            program.kept = False
            for deferred in (program.records, program.events):
                assert isinstance(deferred, Deferred)
                deferred.keep_values = False
