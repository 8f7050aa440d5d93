"""Detectors: what the engine observed while a launch ran, and what the finished launch shows,
turned into `Finding`s a person can act on.

The engine reports observations as they happen (a NaN appearing, an undefined cast, a race); each
is grouped by kind, source line and argument, so a bug that fires in 4096 programs is one finding
("in 4096 programs, first pid=(0,0,0)"). Detectors that need the whole launch (coverage) run after
it, from `DETECTORS`: a detector is a function `detect_xxx(launch) -> list[Finding]`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kernel_nb.trace import Finding, Launch, Pid, Severity

MAX_ELEMENTS = 4096  # element indices kept per finding


@dataclass
class _Group:
    kind: str
    severity: Severity
    pid: Pid
    file: str
    line: int
    arg: str | None
    elements: np.ndarray
    detail: str
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
        pid: Pid,
        file: str,
        line: int,
        *,
        arg: str | None = None,
        elements: np.ndarray | None = None,
        detail: str = "",
        order: int = 0,
    ) -> None:
        """Record one observation; `order` ranks programs (the group shows its first program)."""
        key = (kind, file, line, arg)
        group = self._groups.get(key)
        kept = (np.zeros(0, np.int64) if elements is None else np.asarray(elements).reshape(-1))[
            :MAX_ELEMENTS
        ]
        if group is None:
            group = _Group(kind, severity, pid, file, line, arg, kept.astype(np.int64), detail, order)
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
        out = []
        # in the order the serial strategy meets them: by first program, then source line
        for g in sorted(self._groups.values(), key=lambda g: (g.order, g.line, g.kind, g.arg or "")):
            where = f"{launch.kernel}:{g.line} pid=({g.pid[0]},{g.pid[1]},{g.pid[2]})"
            spread = "" if len(g.programs) == 1 else f" (in {len(g.programs)} programs; the first shown)"
            out.append(
                Finding(
                    kind=g.kind,
                    severity=g.severity,
                    message=f"{where}: {g.detail}{spread}",
                    launch=launch.index,
                    pid=g.pid,
                    file=g.file,
                    line=g.line,
                    arg=g.arg,
                    elements=g.elements,
                )
            )
        return out


def describe(elements: np.ndarray, limit: int = 6) -> str:
    """ "[3, 4, 9]" or "[3, 4, 9, ... 512 in all]" for element or lane indices."""
    flat = np.asarray(elements).reshape(-1)
    shown = ", ".join(str(int(e)) for e in flat[:limit])
    return f"[{shown}]" if flat.size <= limit else f"[{shown}, ... {flat.size} in all]"


def _ranges(elements: np.ndarray) -> str:
    """Contiguous runs as "[lo, hi)" pieces: "[500, 512)" or "[0, 4), [8, 12) and 3 more runs"."""
    flat = np.unique(np.asarray(elements).reshape(-1))
    if flat.size == 0:
        return "[]"
    breaks = np.flatnonzero(np.diff(flat) != 1)
    starts = np.concatenate([[flat[0]], flat[breaks + 1]])
    ends = np.concatenate([flat[breaks], [flat[-1]]]) + 1
    pieces = [f"[{int(s)}, {int(e)})" for s, e in zip(starts[:3], ends[:3])]
    more = f" and {starts.size - 3} more runs" if starts.size > 3 else ""
    return ", ".join(pieces) + more


def detect_uncovered_elements(launch: Launch) -> list[Finding]:
    """Elements of a written buffer that no program wrote (skipped when the launch failed)."""
    if launch.status != "ok":
        return []
    findings = []
    for name, bmap in launch.buffers.items():
        if not bmap.written:
            continue
        missing = bmap.never_written()
        if missing.size == 0:
            continue
        offsets = missing - bmap.origin
        findings.append(
            Finding(
                kind="uncovered",
                severity="warning",
                message=(
                    f"{launch.kernel}: {name} elements {_ranges(offsets)} ({missing.size} of {bmap.size}) "
                    f"were never written, though the launch wrote the rest of {name}; "
                    f"check the grid covers the whole buffer and the store mask's bound"
                ),
                launch=launch.index,
                arg=name,
                elements=offsets[:MAX_ELEMENTS],
            )
        )
    return findings


DETECTORS: list[Callable[[Launch], list[Finding]]] = [detect_uncovered_elements]


def finish(launch: Launch, observations: Observations) -> None:
    """Put the launch's findings in place: grouped observations, then the whole-launch detectors."""
    launch.findings = observations.findings(launch)
    for detector in DETECTORS:
        launch.findings.extend(detector(launch))
