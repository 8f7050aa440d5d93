"""The grouping collector: what the engine observed while a launch ran, one group per bug.

Each observation is grouped by kind, source line and argument, so a bug that fires in 4096
programs is one finding ("in 4096 programs; the first shown"). The detector modules (races,
uninitialised, nonfinite, undefined) word what goes in; the engine only says where it happened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kernel_nb.trace import Finding, Launch, Pid, Severity

MAX_ELEMENTS = 4096  # element indices kept per finding


@dataclass(frozen=True)
class Site:
    """Where an observation was made: the program, its place in launch order, the source line."""

    pid: Pid
    order: int
    file: str
    line: int


@dataclass
class _Group:
    kind: str
    severity: Severity
    pid: Pid
    file: str
    line: int
    arg: str | None
    elements: np.ndarray
    detail: str | Callable[[], str]
    order: int = 0
    programs: set[Pid] = field(default_factory=set)
    count: int = 0


class Observations:
    """Collects a launch's in-flight observations, grouped by (kind, file, line, arg)."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str, int, str | None], _Group] = {}

    def add(
        self,
        kind: str,
        severity: Severity,
        site: Site,
        *,
        arg: str | None = None,
        elements: np.ndarray | None = None,
        detail: str | Callable[[], str] = "",
    ) -> None:
        """Record one observation; the site's `order` ranks programs (a group shows its first).
        `detail` may be a function that words it, called only for the observation a group shows."""
        pid, order = site.pid, site.order
        key = (kind, site.file, site.line, arg)
        group = self._groups.get(key)
        kept = (np.zeros(0, np.int64) if elements is None else np.asarray(elements).reshape(-1))[
            :MAX_ELEMENTS
        ]
        if group is None:
            group = _Group(
                kind, severity, pid, site.file, site.line, arg, kept.astype(np.int64), detail, order
            )
            self._groups[key] = group
        elif order < group.order:
            group.pid, group.elements, group.detail, group.order = pid, kept.astype(np.int64), detail, order
        group.programs.add(pid)
        group.count += 1

    def merge(self, other: Observations) -> None:
        """Add another collector's groups (a batch's, once it has run to the end)."""
        for key, g in other._groups.items():
            mine = self._groups.get(key)
            if mine is None:
                self._groups[key] = g
                continue
            if g.order < mine.order:
                mine.pid, mine.elements, mine.detail, mine.order = g.pid, g.elements, g.detail, g.order
            mine.programs |= g.programs
            mine.count += g.count

    def seen(self, kind: str, pid: Pid) -> bool:
        """Whether this program already reported an observation of this kind (first-only kinds)."""
        return any(g.kind == kind and pid in g.programs for g in self._groups.values())

    def findings(self, launch: Launch) -> list[Finding]:
        """The groups as findings, in the order the serial strategy meets them."""
        out = []
        # by first program, then source line
        for g in sorted(self._groups.values(), key=lambda g: (g.order, g.line, g.kind, g.arg or "")):
            where = f"{launch.kernel}:{g.line} pid=({g.pid[0]},{g.pid[1]},{g.pid[2]})"
            spread = "" if len(g.programs) == 1 else f" (in {len(g.programs)} programs; the first shown)"
            out.append(
                Finding(
                    kind=g.kind,
                    severity=g.severity,
                    message=f"{where}: {g.detail() if callable(g.detail) else g.detail}{spread}",
                    launch=launch.index,
                    pid=g.pid,
                    file=g.file,
                    line=g.line,
                    arg=g.arg,
                    elements=g.elements,
                )
            )
        return out
