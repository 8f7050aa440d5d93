"""What the widget syncs: launch-wide metadata, and the selection (launch, program, statement,
iteration, and the finding the view was taken to)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_nb.trace import LAUNCH_ERROR, Trace
from kernel_nb.view import compare, findings, payloads
from kernel_nb.view import protocol as p
from kernel_nb.view.plot import palette


@dataclass(frozen=True)
class Selection:
    """What the viewer points at.

    Attributes:
        launch: the launch's position in the trace.
        pid: the program id.
        stmt: the statement whose value is shown (-1: none).
        iteration: the loop iteration of that statement's record.
        finding: the launch's finding the view was taken to (its index in `Launch.findings`;
            -1: none): the viewer marks it and its source line.
    """

    launch: int = 0
    pid: tuple[int, ...] = (0, 0, 0)
    stmt: int = -1
    iteration: tuple[int, ...] = ()
    finding: int = -1

    @classmethod
    def first(cls, trace: Trace) -> Selection:
        """What a new viewer shows: the first failed launch at its error (`at_failure`), else
        `payloads.default_selection`."""
        failed = cls.at_failure(trace)
        if failed is not None:
            return failed
        launch, pid, stmt, iteration = payloads.default_selection(trace)
        return cls(launch, tuple(pid), stmt, tuple(iteration))

    @classmethod
    def at_failure(cls, trace: Trace) -> Selection | None:
        """The first failed launch at its error: the failing program, line and loop iteration
        (None when no launch holds an error finding)."""
        for launch in trace:
            if launch.status == "error" and launch.findings and launch.findings[0].kind == LAUNCH_ERROR:
                return cls.at_finding(trace, launch.index, 0)
        return None

    @classmethod
    def at_finding(cls, trace: Trace, launch: int, index: int) -> Selection:
        """The view a click on a finding gives (`kernel_nb.view.findings.target_of`).

        Args:
            trace: the trace shown.
            launch: the launch's position in the trace.
            index: the finding's position in that launch's findings.

        Raises:
            IndexError: no such launch or finding.
        """
        shown = trace[launch]
        target = findings.target_of(shown, shown.findings[index])
        if target is None:
            return cls(launch, (0, 0, 0), -1, (), index)
        return cls(launch, tuple(target["pid"]), target["stmt"], tuple(target["iteration"]), index)

    def traits(self) -> dict[str, Any]:
        """The selection as the widget's traits hold it (lists, not tuples)."""
        return {
            "launch": self.launch,
            "pid": list(self.pid),
            "stmt": self.stmt,
            "iteration": list(self.iteration),
            "finding": self.finding,
        }


def viewer_meta(trace: Trace) -> p.ViewerMeta:
    """The widget's `meta` trait: every launch's metadata with its comparison and IR stages, and the palette."""
    meta = findings.with_targets(compare.with_comparisons(payloads.viewer_meta(trace), trace), trace)
    if meta["launches"]:  # an empty trace draws nothing, and its metadata stays {"launches": []}
        meta["palette"] = palette()
    return meta
