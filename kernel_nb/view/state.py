"""What the widget syncs: launch-wide metadata, and the selection (launch, program, statement, iteration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_nb.trace import Trace
from kernel_nb.view import compare, payloads
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
    """

    launch: int = 0
    pid: tuple[int, ...] = (0, 0, 0)
    stmt: int = -1
    iteration: tuple[int, ...] = ()

    @classmethod
    def first(cls, trace: Trace) -> Selection:
        """What a new viewer shows (`payloads.default_selection`)."""
        launch, pid, stmt, iteration = payloads.default_selection(trace)
        return cls(launch, tuple(pid), stmt, tuple(iteration))

    def traits(self) -> dict[str, Any]:
        """The selection as the widget's traits hold it (lists, not tuples)."""
        return {
            "launch": self.launch,
            "pid": list(self.pid),
            "stmt": self.stmt,
            "iteration": list(self.iteration),
        }


def viewer_meta(trace: Trace) -> p.ViewerMeta:
    """The widget's `meta` trait: every launch's metadata with its comparison and IR stages, and the palette."""
    meta = compare.with_comparisons(payloads.viewer_meta(trace), trace)
    if meta["launches"]:  # an empty trace draws nothing, and its metadata stays {"launches": []}
        meta["palette"] = palette()
    return meta
