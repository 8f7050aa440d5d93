"""Coverage: elements of a written buffer that no program wrote, the trace of a grid or a store
mask that stops short. A whole-launch detector: it reads the finished launch's buffer maps."""

from __future__ import annotations

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
        findings.append(
            Finding(
                kind="uncovered",
                severity="warning",
                message=(
                    f"{launch.kernel}: {elements_of(name, offsets, layout_of(launch, name), runs=True)} "
                    f"({missing.size} of {bmap.size}) "
                    f"were never written, though the launch wrote the rest of {name}; "
                    f"check the grid covers the whole buffer and the store mask's bound"
                ),
                launch=launch.index,
                arg=name,
                elements=offsets[:MAX_ELEMENTS],
            )
        )
    return findings
