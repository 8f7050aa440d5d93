"""Where a finding takes the viewer (kernel_nb.view.findings), and a failed launch opening at its error."""

from __future__ import annotations

import pytest
from conftest import FILE, add_launch
from failing import FAILING_PID, failed_trace

from kernel_nb.trace import Finding, Trace
from kernel_nb.view import TraceViewer
from kernel_nb.view.findings import target_of
from kernel_nb.view.state import Selection, viewer_meta


def test_the_error_of_a_failed_launch_shows_the_last_value_of_its_iteration():
    trace = failed_trace()
    launch = trace[0]

    # line 19 recorded nothing in iteration 2: the loop variable k, the program's last value, is shown
    assert target_of(launch, launch.findings[0]) == {"pid": [1, 1, 0], "stmt": 6, "iteration": [2]}


def test_a_finding_shows_the_record_of_its_line():
    launch = failed_trace()[0]

    assert target_of(launch, launch.findings[1]) == {"pid": [3, 0, 0], "stmt": 3, "iteration": []}


def test_a_finding_in_a_loop_shows_its_iteration_and_without_one_the_last():
    launch = add_launch()
    at = Finding("nan_origin", "warning", "acc", 0, (2, 0, 0), FILE, 19, "x_ptr", iteration=(1,))
    unknown = Finding("nan_origin", "warning", "acc", 0, (2, 0, 0), FILE, 19, "x_ptr")

    assert target_of(launch, at) == {"pid": [2, 0, 0], "stmt": 7, "iteration": [1]}
    assert target_of(launch, unknown) == {"pid": [2, 0, 0], "stmt": 7, "iteration": [2]}


def test_a_finding_of_a_program_not_held_shows_its_line_and_one_of_no_program_nothing():
    launch = add_launch()
    gone = Finding("race", "error", "x", 0, (9, 0, 0), FILE, 15, "x_ptr", iteration=(4,))
    launch_wide = Finding("uncovered", "warning", "out", 0, None, FILE, 23, "out_ptr")

    assert target_of(launch, gone) == {"pid": [9, 0, 0], "stmt": 3, "iteration": [4]}
    assert target_of(launch, launch_wide) is None


def test_the_metadata_carries_each_findings_iteration_and_target():
    findings = viewer_meta(failed_trace())["launches"][0]["findings"]

    assert [(f["kind"], f["iteration"], f["target"]) for f in findings] == [
        ("launch_error", [2], {"pid": [1, 1, 0], "stmt": 6, "iteration": [2]}),
        ("nan_origin", None, {"pid": [3, 0, 0], "stmt": 3, "iteration": []}),
    ]


def test_a_viewer_of_a_failed_launch_opens_at_its_error():
    trace = Trace([add_launch(), failed_trace()[0]])
    trace[1].index = 1
    for f in trace[1].findings:
        f.launch = 1

    viewer = TraceViewer(trace)

    assert viewer.selection == Selection(1, FAILING_PID, 6, (2,), 0)
    assert (viewer.launch, viewer.pid, viewer.stmt, viewer.iteration, viewer.finding) == (
        1,
        [1, 1, 0],
        6,
        [2],
        0,
    )


def test_a_trace_without_a_failure_opens_as_before(add_trace):
    assert Selection.at_failure(add_trace) is None
    assert TraceViewer(add_trace).selection == Selection(0, (0, 0, 0), 10, (), -1)


def test_the_opening_view_can_be_given_and_traits_win_over_it():
    trace = failed_trace()

    chosen = TraceViewer(trace, selection=Selection.at_finding(trace, 0, 1))
    moved = TraceViewer(trace, selection=Selection.at_finding(trace, 0, 1), pid=[0, 0, 0])

    assert chosen.selection == Selection(0, (3, 0, 0), 3, (), 1)
    assert moved.selection == Selection(0, (0, 0, 0), 3, (), 1)


def test_show_finding_moves_the_view_as_a_click_does():
    trace = failed_trace()
    viewer = TraceViewer(trace)

    assert viewer.show_finding(1) is viewer
    assert viewer.selection == Selection(0, (3, 0, 0), 3, (), 1)
    viewer.show_finding(0)
    assert viewer.selection == Selection(0, FAILING_PID, 6, (2,), 0)
    with pytest.raises(IndexError):
        viewer.show_finding(2)


def test_another_launch_forgets_the_finding_marked():
    trace = Trace([failed_trace()[0], add_launch(index=1)])
    viewer = TraceViewer(trace)

    viewer.select(launch=1, pid=0)

    assert (viewer.launch, viewer.finding) == (1, -1)
