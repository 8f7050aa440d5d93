"""A %%tkernel interpret cell whose launch fails: the viewer open at the failure above the error,
whose last line says where the recording is; the cell still fails, the arrays are unchanged."""

from __future__ import annotations

import numpy as np
from tkernel_support import KERNELS, line_of

from kernel_nb import KernelMemoryError, LaunchArgumentError
from kernel_nb.view import TraceViewer
from kernel_nb.view.state import Selection

FAILING = "unmasked_kernel[(4,)](x, out, BLOCK=256)"
LINE = line_of(KERNELS, "x = tl.load(x_ptr + offsets)")
NOTE = "kernel_nb: the launch's recording is in _tk (its error is _tk[0].findings[0]); the viewer above opens at the failure"


def run(ip, source: str):
    return ip.run_cell(source, store_history=True)


def shown_by(monkeypatch) -> list[object]:
    shown: list[object] = []
    monkeypatch.setattr("kernel_nb.magic.cell_viewers.display", shown.append)
    return shown


def test_the_viewer_opens_at_the_failure_and_the_traceback_ends_with_where_the_recording_is(
    ip, monkeypatch, capsys
):
    shown = shown_by(monkeypatch)

    result = run(ip, f"%%tkernel interpret\n{FAILING}")

    error = result.error_in_exec
    assert isinstance(error, KernelMemoryError)
    trace = ip.user_ns["_tk"]
    first = trace[0].findings[0]
    assert (first.kind, first.pid, first.line, first.arg, first.iteration) == (
        "launch_error",
        (3, 0, 0),
        LINE,
        "x_ptr",
        (),
    )
    [viewer] = shown
    assert isinstance(viewer, TraceViewer)
    assert viewer.trace is trace
    assert viewer.selection == Selection.at_finding(trace, 0, 0)
    assert (viewer.pid, viewer.finding) == ([3, 0, 0], 0)
    assert trace[0].statements[viewer.stmt].name == "offsets"  # what program 3 computed before it failed
    assert error.__notes__ == [NOTE]
    printed = capsys.readouterr().out.rstrip("\n").splitlines()
    assert printed[0].startswith(f"KernelMemoryError: unmasked_kernel:{LINE} pid=(3,0,0): tl.load of x_ptr")
    assert printed[-1] == NOTE
    assert [line for line in printed if line.startswith("kernel_nb:")] == [NOTE]  # one line, once
    assert not ip.user_ns["out"].any()
    assert run(ip, "1 + 1").result == 2


def test_quiet_shows_no_viewer_and_the_line_says_so(ip, monkeypatch):
    shown = shown_by(monkeypatch)

    result = run(ip, f"%%tkernel interpret --quiet --name tr\n{FAILING}")

    assert shown == []
    assert result.error_in_exec.__notes__ == [
        "kernel_nb: the launch's recording is in _tk and tr (its error is _tk[0].findings[0])"
    ]
    assert ip.user_ns["tr"] is ip.user_ns["_tk"]


def test_the_second_launch_of_a_cell_fails(ip, monkeypatch):
    shown = shown_by(monkeypatch)

    result = run(ip, f"%%tkernel interpret\nadd_kernel[(4,)](x, y, out, 1000, BLOCK=256)\n{FAILING}")

    [viewer] = shown
    assert (viewer.launch, viewer.pid, viewer.finding) == (1, [3, 0, 0], 0)
    assert result.error_in_exec.__notes__ == [NOTE.replace("_tk[0]", "_tk[1]")]
    np.testing.assert_array_equal(ip.user_ns["out"], ip.user_ns["x"] + ip.user_ns["y"])  # the first ran


def test_a_refused_launch_records_nothing_and_shows_nothing_more(ip, monkeypatch):
    shown = shown_by(monkeypatch)

    result = run(ip, "%%tkernel interpret\nadd_kernel[(2.5,)](x, y, out, 1000, BLOCK=256)")

    assert isinstance(result.error_in_exec, LaunchArgumentError)
    assert shown == []
    assert getattr(result.error_in_exec, "__notes__", []) == []


def test_interpret_with_ir_shows_the_failure_the_same_way(ip, monkeypatch):
    shown = shown_by(monkeypatch)

    result = run(ip, f"%%tkernel interpret --ir\n{FAILING}")

    assert isinstance(result.error_in_exec, KernelMemoryError)
    [viewer] = shown
    assert (viewer.pid, viewer.finding) == ([3, 0, 0], 0)
    assert result.error_in_exec.__notes__ == [NOTE]
