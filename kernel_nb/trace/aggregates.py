"""Per-statement aggregates: what a launch keeps of the programs past its summary limit.

A launch keeps a `Summary` per program, statement and loop iteration until it holds
`Options.summary_bytes` of them; the programs after that fold their summaries into one
`Aggregate` per statement, so that a launch of any size holds a bounded number of them. Those
programs' own records come back by replaying them (`Launch.program`).

The bytes are counted as the objects a reader gets (the batched strategy keeps columns, but
makes the same objects when a program is read), measured on CPython 3.12 with tracemalloc, so
that both strategies keep the same programs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kernel_nb.trace.columns import RecordBlock
from kernel_nb.trace.records import Summary

PROGRAM_BYTES = 1000  # a ProgramTrace, its record and event lists, its pid, its entry in programs
RECORD_BYTES = 420  # a Record with its Summary


def held_bytes(records: int) -> int:
    """The bytes of a program with `records` records, as `Launch.programs` holds it."""
    return PROGRAM_BYTES + RECORD_BYTES * records


def held_bytes_each(records: np.ndarray) -> np.ndarray:
    """`held_bytes` of programs with `records[i]` records each."""
    return PROGRAM_BYTES + RECORD_BYTES * records.astype(np.int64)


def folded_past(
    limit: int, spent: int, costs: list[np.ndarray], order: Callable[[], list[tuple[int, int]]]
) -> tuple[int, list[np.ndarray]]:
    """Which programs of batches (`costs[i][r]`: what program r of batch i holds) keep aggregates
    only, the programs taken in `order()` (pairs (i, r); asked for only where some program is
    folded) against `limit` with `spent` held already, as `add_program` takes them one at a time;
    and what is held then."""
    folded = [np.zeros(len(c), bool) for c in costs]
    total = sum(int(c.sum()) for c in costs)
    if spent + total <= limit:
        return spent + total, folded
    for i, r in order():
        cost = int(costs[i][r])
        if spent + cost <= limit:
            spent += cost
        else:
            folded[i][r] = True
    return spent, folded


@dataclass
class Aggregate:
    """The summaries of one statement over the aggregated programs, combined.

    Attributes:
        stmt: the `Statement` id.
        records: how many records were combined (programs x loop iterations).
        min, max: over every finite element of those records (NaN when none).
        total: the sum of the finite elements (the records' means times their finite counts).
        finite: how many finite elements the records held.
        nan, inf: NaN and Inf elements.
    """

    stmt: int
    records: int = 0
    min: float = np.inf
    max: float = -np.inf
    total: float = 0.0
    finite: int = 0
    nan: int = 0
    inf: int = 0

    @property
    def mean(self) -> float:
        return self.total / self.finite if self.finite else float("nan")

    def add(self, summary: Summary) -> None:
        """Fold in one record's summary."""
        self.records += 1
        finite = summary.size - summary.nan - summary.inf
        self.nan += summary.nan
        self.inf += summary.inf
        if finite > 0:
            self.finite += finite
            self.total += summary.mean * finite
            self.min = min(self.min, summary.min)
            self.max = max(self.max, summary.max)

    def add_rows(self, block: RecordBlock, rows: np.ndarray) -> None:
        """Fold in the records of `block` of the batch rows `rows` (a boolean mask)."""
        if block.rows is not None:
            rows = rows & block.rows
        if not rows.any():
            return
        columns = block.summaries
        picked = np.flatnonzero(rows)
        nan = np.zeros(picked.size, np.int64) if columns.nan is None else columns.nan[picked]
        inf = np.zeros(picked.size, np.int64) if columns.inf is None else columns.inf[picked]
        finite = columns.size - nan - inf
        some = finite > 0
        self.records += int(picked.size)
        self.nan += int(nan.sum())
        self.inf += int(inf.sum())
        if some.any():
            self.finite += int(finite[some].sum())
            self.total += float((np.asarray(columns.mean)[picked][some] * finite[some]).sum())
            self.min = min(self.min, float(np.asarray(columns.lo)[picked][some].min()))
            self.max = max(self.max, float(np.asarray(columns.hi)[picked][some].max()))

    def text(self, name: str) -> str:
        """One line: the statement's name and what its aggregated records held."""
        if not self.finite:
            values = "no finite values"
        else:
            values = f"min {self.min:.6g}, max {self.max:.6g}, mean {self.mean:.6g}"
        nonfinite = "".join(
            f", {count} {kind}" for kind, count in (("NaN", self.nan), ("Inf", self.inf)) if count
        )
        return f"{name}: {self.records} records, {values}{nonfinite}"
