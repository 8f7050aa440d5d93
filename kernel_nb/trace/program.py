"""What one program recorded. Its own module rather than with the records because its lists
default to the lazy `Records` / `Events` of `columns.py`; saved traces made before it moved here
name it `kernel_nb.trace.launch.ProgramTrace`, which `launch` still imports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel_nb.trace.columns import Events, RecordBlock, Records
from kernel_nb.trace.records import MemoryEvent, Pid, Record


@dataclass(slots=True)
class ProgramTrace:
    """Everything one program recorded."""

    pid: Pid
    records: list[Record] = field(default_factory=Records)
    events: list[MemoryEvent] = field(default_factory=Events)
    stdout: str = ""
    kept: bool = False

    @classmethod
    def batch(
        cls, pids: list[Pid], kept: list[bool], records: list[RecordBlock], events: list[Any]
    ) -> list[ProgramTrace]:
        """The programs of a batch, row by row, each reading its row of the batch's shared
        `records` and `events` blocks (see `Deferred.shared`): what `ProgramTrace(pid,
        Records.shared(records, row, kept), Events.shared(events, row, kept), kept=kept)` makes,
        without a call of __init__ for each of the thousands a launch makes."""
        made = []
        new = object.__new__
        rows = zip(pids, kept, Records.shared_rows(records, kept), Events.shared_rows(events, kept))
        for pid, keep, own_records, own_events in rows:
            program = new(cls)
            program.pid, program.records, program.events = pid, own_records, own_events
            program.stdout, program.kept = "", keep
            made.append(program)
        return made
