"""view.payloads on a launch whose later programs kept per-statement aggregates only."""

from __future__ import annotations

import pytest

from kernel_nb.trace import Launch, ProgramTrace, Trace
from kernel_nb.view import payloads


def test_a_program_kept_as_aggregates_says_so_and_how_to_see_it():
    launch = Launch(0, "add_kernel", (4, 1, 1), [])
    for i in range(4):
        launch.add_program(ProgramTrace((i, 0, 0)), 2000)
    assert launch.aggregated == 2
    with pytest.raises(payloads.RequestError) as raised:  # it has no records to show
        payloads.program_key(launch, [3, 0, 0])
    assert str(raised.value) == (
        "add_kernel: program (3, 0, 0) kept per-statement aggregates only (past "
        "Options.summary_bytes); launch.program(pid) replays it"
    )
    assert payloads.program_key(launch, [1, 0, 0]) == (1, 0, 0)
    assert payloads.default_selection(Trace([launch]))[1] == [0, 0, 0]
