"""Whole-launch detectors: a protocol with one `check` method, run in order from a list."""

import numpy as np

from kernel_nb import checks
from kernel_nb.checks import (
    DETECTORS,
    Detector,
    GridAxes,
    NarrowerStoreMasks,
    Observations,
    UncoveredElements,
    extended_with,
    finish,
)
from kernel_nb.trace import Finding
from tests.checks.helpers import NamedLaunch, site


class Everything:
    def check(self, launch):
        return [Finding(kind="test", severity="info", message=f"{launch.kernel} ran", launch=launch.index)]


def test_the_registry_holds_coverage_grid_axes_and_store_masks():
    assert [type(d) for d in DETECTORS] == [UncoveredElements, GridAxes, NarrowerStoreMasks]
    detector: Detector = Everything()  # a class with `check` is a Detector
    assert detector.check(NamedLaunch())[0].message == "k ran"


def test_extended_with_is_a_copy():
    extended = extended_with(Everything())
    assert len(extended) == len(DETECTORS) + 1 and isinstance(extended[-1], Everything)
    assert [type(d) for d in checks.DETECTORS] == [UncoveredElements, GridAxes, NarrowerStoreMasks]


def test_finish_puts_observations_first_then_the_detectors():
    launch = NamedLaunch()
    launch.findings = None
    observations = Observations()
    observations.add("nan_origin", "error", site(), elements=np.array([0]), detail="y becomes NaN")
    finish(launch, observations, [Everything()])
    assert [f.message for f in launch.findings] == ["k:7 pid=(0,0,0): y becomes NaN", "k ran"]
