"""Coverage: elements of a written buffer that no program wrote, the trace of a grid or a store
mask that stops short. A whole-launch detector: it reads the finished launch's buffer maps, and the
programs' events for the stores that write the buffer (where to fix the bound)."""

from __future__ import annotations

from pathlib import Path

from kernel_nb.checks.describe import elements_of
from kernel_nb.checks.observations import MAX_ELEMENTS
from kernel_nb.trace import Finding, Launch
from kernel_nb.trace.coordinates import layout_of


class UncoveredElements:
    """Elements of a written buffer that no program wrote (skipped when the launch failed)."""

    def check(self, launch: Launch) -> list[Finding]:
        return detect_uncovered_elements(launch)


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
        writers = store_sites(launch, name)
        by = f" by {_sites_text(writers)}" if writers else ""
        file, line = writers[0] if writers else (None, None)
        findings.append(
            Finding(
                kind="uncovered",
                severity="warning",
                message=(
                    f"{launch.kernel}: {elements_of(name, offsets, layout_of(launch, name), runs=True)} "
                    f"({missing.size} of {bmap.size}) "
                    f"were never written{by}, though the launch wrote the rest of {name}; "
                    f"check the grid covers the whole buffer and the store mask's bound"
                ),
                launch=launch.index,
                file=file,
                line=line,
                arg=name,
                elements=offsets[:MAX_ELEMENTS],
            )
        )
    return findings


def store_sites(launch: Launch, arg: str) -> list[tuple[str, int]]:
    """The (file, line) of every tl.store and atomic that wrote `arg`, in source order.

    Read off the programs the launch holds: the aggregated ones ran the same source, and a store
    only they reached is missed (the finding then names the lines it knows)."""
    sites: set[tuple[str, int]] = set()
    for program in launch.programs.values():
        for event in program.events:
            if event.arg == arg and event.kind != "load":
                sites.add((event.file, event.line))
    return sorted(sites)


def _sites_text(sites: list[tuple[str, int]]) -> str:
    what = "the tl.store at" if len(sites) == 1 else "the stores at"
    return f"{what} {', '.join(f'{Path(file).name}:{line}' for file, line in sites)}"
