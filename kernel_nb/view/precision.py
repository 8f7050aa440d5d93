"""The fp64 shadow in the viewer's payloads: each statement's worst errors, each record's companions.

A launch run with `shadow="fp64"` records three companion statements per statement
(`kernel_nb.trace.COMPANION_KINDS`: the fp64 shadow, the error against it and the statement's own
error, both in ulps of the real type), and in the programs whose values are kept follows each
float record with their records. The viewer does not list them as statements of their own: a
statement carries its worst errors over every program (`PrecisionMeta` from `Launch.errors`,
which the source gutter marks), and a record the indices of its companions' records, whose
values the browser asks for as it asks for any record's.
"""

from __future__ import annotations

from kernel_nb.trace import COMPANION_KINDS, Launch, Record
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


def statement_precision(launch: Launch) -> dict[int, p.PrecisionMeta]:
    """Per float statement, its worst total and own error in ulps over every program and
    iteration (`Launch.errors`, kept as the launch ran: no program is replayed). Empty without a
    shadow."""
    if launch.shadow is None:
        return {}
    return {
        stmt: {
            "dtype": errors.dtype,
            "ulps": errors.largest(),
            "own_ulps": errors.largest(own=True),
            "nonfinite": errors.nonfinite,
            "own_nonfinite": errors.own_nonfinite,
        }
        for stmt, errors in launch.errors.items()
    }
