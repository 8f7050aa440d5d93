"""What one program recorded, and the programs of a launch. Its own module rather than with the
records because its lists default to the lazy `Records` / `Events` of `columns.py`; saved traces
made before it moved here name it `kernel_nb.trace.launch.ProgramTrace`, which `launch` still
imports.

A batched launch runs thousands of programs that share their record and event blocks, one row
each (see `Deferred`). `BatchPrograms` holds a batch's programs as rows, and `ProgramTable` a
launch's as entries that point at rows: a `ProgramTrace` is made for a program when someone asks
for it. Vector add 2**22 runs 4,096 programs a launch, and made three objects for each (the trace
and its two lists), budgeted them one by one, and the garbage collector walked them afterwards:
its warm launch took 38.4 ms with them and 35.0 ms without (medians of 8 fresh processes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from kernel_nb.trace.columns import Deferred, Events, RecordBlock, Records
from kernel_nb.trace.records import MemoryEvent, Pid, Record


@dataclass(slots=True)
class ProgramTrace:
    """Everything one program recorded."""

    pid: Pid
    records: list[Record] = field(default_factory=Records)
    events: list[MemoryEvent] = field(default_factory=Events)
    stdout: str = ""
    kept: bool = False


class BatchPrograms(Sequence[ProgramTrace]):
    """The programs of a batch, row by row: program `r` is `ProgramTrace(pids[r],
    Records.shared(records, r, kept[r]), Events.shared(events, r, kept[r]), kept=kept[r])`, made
    when first asked for. Until then its `kept` is `kept[r]`; `cut` changes both."""

    __slots__ = ("_made", "events", "kept", "pids", "records")

    def __init__(
        self, pids: list[Pid], kept: np.ndarray, records: list[RecordBlock], events: list[Any]
    ) -> None:
        self.pids = pids
        self.kept = np.array(kept, bool)  # its own: `cut` writes it
        self.records, self.events = records, events  # shared by the rows, growing while the batch runs
        self._made: dict[int, ProgramTrace] = {}

    def __len__(self) -> int:
        return len(self.pids)

    @overload
    def __getitem__(self, row: int) -> ProgramTrace: ...
    @overload
    def __getitem__(self, row: slice) -> list[ProgramTrace]: ...
    def __getitem__(self, row: int | slice) -> ProgramTrace | list[ProgramTrace]:
        if isinstance(row, slice):
            return [self[r] for r in range(*row.indices(len(self.pids)))]
        if row < 0:
            row += len(self.pids)
        made = self._made.get(row)
        if made is None:
            if not 0 <= row < len(self.pids):
                raise IndexError(row)
            keep = bool(self.kept[row])
            made = object.__new__(ProgramTrace)
            made.pid, made.stdout, made.kept = self.pids[row], "", keep
            made.records = Records.shared(self.records, row, keep)
            made.events = Events.shared(self.events, row, keep)
            self._made[row] = made
        return made

    def __iter__(self) -> Iterator[ProgramTrace]:
        return (self[r] for r in range(len(self.pids)))

    def kept_now(self) -> np.ndarray:
        """Per row, whether the program is kept (made programs say for themselves)."""
        kept = self.kept.copy()
        for row, program in self._made.items():
            kept[row] = program.kept
        return kept

    def cut(self, rows: np.ndarray) -> None:
        """The programs of `rows` are not kept: their values are not read from the blocks."""
        self.kept[rows] = False
        for row in rows.tolist() if self._made else ():
            program = self._made.get(row)
            if program is not None:
                program.kept = False
                for made in (program.records, program.events):
                    if isinstance(made, Deferred):
                        made.keep_values = False


class ProgramTable(MutableMapping[Pid, ProgramTrace]):
    """A launch's programs by program id, in the order they were added: those of batches as rows
    of their `BatchPrograms`, made into `ProgramTrace`s when asked for (see the module's
    docstring), the others as they were given."""

    def __init__(self, programs: Iterable[tuple[Pid, ProgramTrace]] = ()) -> None:
        # a program, or where it is: its batch's index times 2**32 plus its row (an int holds
        # no reference, and the collector does not track it)
        self._entries: dict[Pid, ProgramTrace | int] = dict(programs)
        self._batches: list[BatchPrograms] = []
        # rows of batches added but not entered yet, in order: (batch index, rows; None: all).
        # Entered when the table is first read, which a launch does not do: a dict of 4,096
        # programs and the collector's walk over it took a tenth of vector add 2**22's warm
        # launch, for a table that a cell's viewer reads once, if at all
        self._pending: list[tuple[int, np.ndarray | None]] = []

    def add_rows(self, batch: BatchPrograms, rows: np.ndarray | None = None) -> None:
        """The programs of `batch`'s `rows` (None: every row), in that order. The table holds the
        batch while it holds a program of it: none, and the batch goes."""
        index = None if rows is None else np.asarray(rows, np.int64)
        if not (len(batch) if index is None else index.size):
            return
        self._batches.append(batch)
        self._pending.append((len(self._batches) - 1, index))

    @property
    def _table(self) -> dict[Pid, ProgramTrace | int]:
        """The entries, with every row added so far entered (see `_pending`)."""
        if self._pending:
            pending, self._pending = self._pending, []
            for at, index in pending:
                batch = self._batches[at]
                if index is None:
                    pids, index = batch.pids, np.arange(len(batch), dtype=np.int64)
                else:
                    pids = [batch.pids[r] for r in index.tolist()]
                self._entries.update(zip(pids, ((at << 32) + index).tolist()))
        return self._entries

    def ordered(self, key: Callable[[Pid], Any]) -> None:
        """Put the programs in the order of `key` of their ids, making none."""
        self._entries = dict(sorted(self._table.items(), key=lambda entry: key(entry[0])))

    def __getitem__(self, pid: Pid) -> ProgramTrace:
        table = self._table
        entry = table[pid]
        if isinstance(entry, int):
            entry = table[pid] = self._batches[entry >> 32][entry & 0xFFFFFFFF]
        return entry

    def __setitem__(self, pid: Pid, program: ProgramTrace) -> None:
        self._table[pid] = program

    def __delitem__(self, pid: Pid) -> None:
        del self._table[pid]

    def __contains__(self, pid: object) -> bool:
        return pid in self._table

    def __iter__(self) -> Iterator[Pid]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"ProgramTable({len(self)} programs)"

    def __reduce__(self) -> tuple[Any, ...]:
        # saved (and copied) as the dict of programs a launch held before there were tables: a
        # saved trace reads the same in every version, and a launch takes either
        return dict, (list(self.items()),)
