"""The fp64 shadow in the viewer's payloads: each statement's worst errors, each record's companions.

A launch run with `shadow="fp64"` records three companion statements per statement
(`kernel_nb.trace.COMPANION_KINDS`: the fp64 shadow, the error against it and the statement's own
error, both in ulps of the real type), and follows each float record with their records. The
viewer does not list them as statements of their own: a statement carries its worst errors over
every program (`PrecisionMeta`, which the source gutter marks), and a record the indices of its
companions' records, whose values the browser asks for as it asks for any record's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from kernel_nb.trace import COMPANION_KINDS, Deferred, Launch, Record, RecordBlock, Summary, SummaryColumns
from kernel_nb.view import protocol as p

SHADOW, ERROR, OWN_ERROR = COMPANION_KINDS
# what a companion record's value is, as a value's label says it
COMPANION_LABELS = {
    SHADOW: "fp64 shadow",
    ERROR: "error against the fp64 shadow, in ulps",
    OWN_ERROR: "error of its own arithmetic, in ulps",
}


def companions_by_statement(launch: Launch) -> dict[int, tuple[int, ...]]:
    """Per statement that has companions, their ids in COMPANION_KINDS order (empty without a
    shadow). `Launch.companions` for every statement at once."""
    found: dict[int, dict[str, int]] = {}
    for s in launch.statements:
        if s.of is not None and s.kind in COMPANION_KINDS:
            found.setdefault(s.of, {})[s.kind] = s.id
    return {
        stmt: tuple(kinds[k] for k in COMPANION_KINDS)
        for stmt, kinds in found.items()
        if len(kinds) == len(COMPANION_KINDS)
    }


def is_companion(launch: Launch, stmt: int) -> bool:
    """Whether statement `stmt` is a shadow run's companion of another (shown only with it)."""
    s = launch.statements[stmt]
    return s.of is not None and s.kind in COMPANION_KINDS


def companion_records(records: list[Record], i: int, expected: tuple[int, ...] | None) -> list[int]:
    """The indices of record i's companion records: the ones right after it, when they are the
    statements `expected` (a non-float record of a statement that has companions has none)."""
    if not expected or i + len(expected) >= len(records):
        return []
    following = range(i + 1, i + 1 + len(expected))
    if all(records[j].stmt == stmt for j, stmt in zip(following, expected)):
        return list(following)
    return []


@dataclass
class _Worst:
    """The largest finite element over summaries folded in, and how many were NaN or Inf."""

    max: float = -math.inf
    nonfinite: int = 0

    def add(self, top: float, nan: int, inf: int) -> None:
        if math.isfinite(top):
            self.max = max(self.max, top)
        self.nonfinite += int(nan) + int(inf)

    def add_rows(self, columns: SummaryColumns, rows: list[int]) -> None:
        """Fold in the summaries of rows `rows` of a block's columns."""
        picked = np.asarray(rows)
        tops = np.asarray(columns.hi, dtype=np.float64)[picked]
        finite = tops[np.isfinite(tops)]
        nan = 0 if columns.nan is None else int(np.asarray(columns.nan)[picked].sum())
        inf = 0 if columns.inf is None else int(np.asarray(columns.inf)[picked].sum())
        self.add(float(finite.max()) if finite.size else math.nan, nan, inf)

    def largest(self) -> float | None:
        return self.max if math.isfinite(self.max) else None


# a record as statement_precision reads it: statement, dtype, and its summary (a Record's) or its
# row of a batch's block (a record not made yet: see kernel_nb.trace.Deferred)
_Entry = tuple[int, str, Summary | None, RecordBlock | None, int]


def _entries(records: list[Record]) -> Iterator[_Entry]:
    """A program's records, without making those the batched strategy has not made yet."""
    pending = records.pending() if isinstance(records, Deferred) else None
    if pending is None:
        return ((r.stmt, r.dtype, r.summary, None, 0) for r in records)
    return ((b.stmt, b.dtype, None, b, row) for b, row, _ in pending)


def statement_precision(launch: Launch) -> dict[int, p.PrecisionMeta]:
    """Per statement with companion records, its worst total and own error in ulps over every
    program: the summaries of the programs the launch holds and the aggregates of those it folded
    (past `Options.summary_bytes`). Reads summaries only: no program is replayed, and of a batch
    of programs whose records were not made yet, the columns of its errors' summaries. Empty
    without a shadow; a statement that never recorded a float value (an integer, a mask) has no entry."""
    if launch.shadow is None:
        return {}
    owners = companions_by_statement(launch)
    role = {ids[k]: (stmt, kind) for stmt, ids in owners.items() for k, kind in enumerate(COMPANION_KINDS)}
    worst: dict[tuple[int, str], _Worst] = {}
    dtypes: dict[int, str] = {}
    # per block of a batch, the rows of the programs held: folded a column at a time
    columns: dict[int, tuple[RecordBlock, tuple[int, str], list[int]]] = {}
    for program in launch.programs.values():
        previous = (-1, "")
        for stmt, dtype, summary, block, row in _entries(program.records):
            owner = role.get(stmt)
            if owner is None:
                previous = (stmt, dtype)
            elif owner[1] == SHADOW:  # right after the real record: its dtype is the one its ulps are of
                if previous[0] == owner[0]:
                    dtypes.setdefault(owner[0], previous[1])
            elif summary is not None:
                worst.setdefault(owner, _Worst()).add(summary.max, summary.nan, summary.inf)
            elif block is not None:
                columns.setdefault(id(block), (block, owner, []))[2].append(row)
    for block, owner, rows in columns.values():
        worst.setdefault(owner, _Worst()).add_rows(block.summaries, rows)
    for companion, aggregate in launch.aggregates.items():
        owner = role.get(companion)
        if owner is not None and owner[1] != SHADOW and aggregate.records:
            worst.setdefault(owner, _Worst()).add(aggregate.max, aggregate.nan, aggregate.inf)
    result: dict[int, p.PrecisionMeta] = {}
    for stmt in owners:
        total, own = worst.get((stmt, ERROR)), worst.get((stmt, OWN_ERROR))
        if total is None or own is None:
            continue
        result[stmt] = {
            "dtype": dtypes.get(stmt, ""),
            "ulps": total.largest(),
            "own_ulps": own.largest(),
            "nonfinite": total.nonfinite,
            "own_nonfinite": own.nonfinite,
        }
    return result
