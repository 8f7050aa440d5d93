"""Detectors: what the engine observed while a launch ran, and what the finished launch shows,
turned into `Finding`s a person can act on.

The engine reports typed facts as they happen, through one module per detector family (`races`,
`uninitialised`, `nonfinite`, `undefined`); each owns its kind, severity and wording, and the
facts are grouped in `Observations`. Detectors that need the whole launch (`coverage`,
`grid_axes`, `store_masks`) run after it, from `DETECTORS`: each has one method,
`check(launch) -> list[Finding]`. One needs to run programs again and so lives with the engine: `masked_fill_used`
(engine/perturb.py), run on a finished launch before its results are committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kernel_nb.checks.coverage import UncoveredElements, detect_uncovered_elements
from kernel_nb.checks.describe import describe
from kernel_nb.checks.grid_axes import GridAxes, detect_unused_grid_axes, program_id_reads
from kernel_nb.checks.observations import MAX_ELEMENTS, Observations, Site
from kernel_nb.checks.store_masks import NarrowerStoreMasks, detect_narrower_store_masks
from kernel_nb.trace import Finding, Launch


class Detector(Protocol):
    """A whole-launch detector: looks at a finished launch and returns what it found."""

    def check(self, launch: Launch) -> list[Finding]: ...


DETECTORS: list[Detector] = [UncoveredElements(), GridAxes(), NarrowerStoreMasks()]


def extended_with(*detectors: Detector, base: Sequence[Detector] = DETECTORS) -> list[Detector]:
    """A copy of `base` with `detectors` run after it (`base` itself is left as it is)."""
    return [*base, *detectors]


def finish(launch: Launch, observations: Observations, detectors: Sequence[Detector] | None = None) -> None:
    """Put the launch's findings in place: grouped observations, then the whole-launch detectors
    (`DETECTORS` unless given)."""
    launch.findings = observations.findings(launch)
    for detector in DETECTORS if detectors is None else detectors:
        launch.findings.extend(detector.check(launch))


__all__ = [
    "DETECTORS",
    "MAX_ELEMENTS",
    "Detector",
    "GridAxes",
    "NarrowerStoreMasks",
    "Observations",
    "Site",
    "UncoveredElements",
    "describe",
    "detect_narrower_store_masks",
    "detect_uncovered_elements",
    "detect_unused_grid_axes",
    "extended_with",
    "finish",
    "program_id_reads",
]
