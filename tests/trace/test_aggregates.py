"""trace.aggregates: per-statement aggregates of the programs past a launch's summary bytes."""

import numpy as np
import pytest

from kernel_nb.trace import (
    Aggregate,
    Launch,
    ProgramTrace,
    Record,
    RecordBlock,
    Statement,
    Summary,
    SummaryColumns,
)
from kernel_nb.trace.aggregates import held_bytes


def _record(stmt, value):
    return Record(stmt, 0, (), (), "fp32", value.shape, Summary.of(value))


def test_folding_rows_of_a_block_equals_folding_their_summaries():
    values = np.array([[1.0, 2.0, np.nan], [np.inf, -4.0, 0.5], [7.0, 8.0, 9.0], [np.nan] * 3])
    block = RecordBlock(0, 0, (), (), "fp64", (3,), SummaryColumns.of(values), None, [None] * 4)
    rows = np.array([True, True, False, True])
    by_rows, one_by_one = Aggregate(0), Aggregate(0)
    by_rows.add_rows(block, rows)
    for r in np.flatnonzero(rows):
        one_by_one.add(Summary.of(values[r]))
    assert by_rows == one_by_one
    assert (by_rows.records, by_rows.min, by_rows.max, by_rows.nan, by_rows.inf) == (3, -4.0, 2.0, 4, 1)
    assert by_rows.mean == (1.0 + 2.0 - 4.0 + 0.5) / 4
    assert by_rows.text("x") == "x: 3 records, min -4, max 2, mean -0.125, 4 NaN, 1 Inf"


def test_a_launch_holds_programs_up_to_its_summary_bytes_then_aggregates():
    launch = Launch(0, "k", (100, 1, 1), [], statements=[Statement(0, "f.py", 3, "x", "k", "assign")])
    limit = 10 * held_bytes(2)
    for i in range(100):
        program = ProgramTrace((i, 0, 0))
        program.records.extend([_record(0, np.array([float(i)])), _record(0, np.array([-1.0]))])
        launch.add_program(program, limit)
    assert len(launch.programs) == 10 and launch.summary_bytes == limit
    assert launch.aggregated == 90
    assert launch.aggregates[0] == Aggregate(0, 180, -1.0, 99.0, sum(range(10, 100)) - 90.0, 180)
    row = launch.summary_row()
    assert (row["programs"], row["aggregated"], row["records"]) == (100, 90, 200)
    assert launch.aggregate_text() == (
        "k: 90 of 100 programs kept per-statement aggregates only (past Options.summary_bytes); "
        "program(pid) replays one\n  line 3 x: 180 records, min -1, max 99, mean 26.75"
    )


def test_kept_programs_count_too_as_those_that_record_nothing_are_all_kept():
    launch = Launch(0, "k", (1000, 1, 1), [])
    for i in range(1000):
        launch.add_program(ProgramTrace((i, 0, 0), kept=True), 5 * held_bytes(0))
    assert len(launch.programs) == 5 and launch.aggregated == 995


def test_an_aggregated_program_of_a_failed_launch_is_not_looked_up():
    launch = Launch(0, "k", (3, 1, 1), [], aggregated=2, status="error")
    launch.replayer = lambda pid: ProgramTrace(pid)
    with pytest.raises(KeyError):  # past the limit, a program of a failed launch may not have run
        launch.program(1)
    launch.status = "ok"
    assert launch.program(1).pid == (1, 0, 0)
