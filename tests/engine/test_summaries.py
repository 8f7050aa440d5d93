"""A launch's summaries stay within Options.summary_bytes: past it, per-statement aggregates."""

import numpy as np

import kernel_nb
from kernel_nb.trace import Aggregate
from kernel_nb.trace.aggregates import held_bytes
from tests.engine import kernels as k

N, BLOCK = 64 * 128, 128


def _launch(**options):
    x, y = np.arange(N, dtype=np.float32), np.ones(N, np.float32)
    out = np.zeros(N, np.float32)
    with kernel_nb.interpret(**options) as session:
        k.add_kernel[(N // BLOCK,)](x, y, out, N, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x + y)
    return session.trace


def test_programs_past_the_summary_bytes_keep_aggregates_and_replay_when_looked_at():
    whole = _launch()[0]
    records = len(whole.programs[(0, 0, 0)].records)
    trace = _launch(summary_bytes=12 * held_bytes(records), budget_bytes=0)
    launch = trace[0]
    assert len(launch.programs) == 12 and launch.aggregated == 52
    assert launch.summary_bytes <= 12 * held_bytes(records)
    # the aggregates are the folded summaries of the programs that were not held
    for stmt, aggregate in launch.aggregates.items():
        expected = Aggregate(stmt)
        for pid in sorted(whole.programs, key=whole.linear)[12:]:
            for record in whole.programs[pid].records:
                if record.stmt == stmt:
                    expected.add(record.summary)
        assert aggregate == expected
    # an aggregated program is replayed from the inputs
    np.testing.assert_array_equal(launch.value(40, "x"), np.arange(40 * BLOCK, 41 * BLOCK, dtype=np.float32))
    assert launch.summary_row()["programs"] == 64
    assert trace.summary().splitlines()[2] == (
        "  [info] add_kernel: 52 of 64 programs kept per-statement aggregates only (past "
        "Options.summary_bytes); program(pid) replays one"
    )


def test_summaries_of_many_programs_stay_within_the_bytes():
    launch = _launch(summary_bytes=100_000, budget_bytes=0)[0]
    records = sum(len(p.records) for p in launch.programs.values())
    assert held_bytes(0) * len(launch.programs) + (held_bytes(1) - held_bytes(0)) * records <= 100_000
    assert len(launch.programs) + launch.aggregated == 64
