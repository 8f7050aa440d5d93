"""Reads of poisoned memory before any program wrote it."""

import numpy as np

import kernel_nb
from kernel_nb.checks import Observations, uninitialised
from tests.checks.helpers import NamedLaunch, site
from tests.engine import detector_kernels as dk


def test_wording_and_severity():
    observations = Observations()
    uninitialised.read(observations, site(), arg="out", elements=np.arange(3))
    [finding] = observations.findings(NamedLaunch())
    assert (finding.kind, finding.severity, finding.arg) == ("uninitialised_read", "error", "out")
    assert finding.message == (
        "k:7 pid=(0,0,0): reads out elements [0, 1, 2] before any program wrote them "
        "(out holds uninitialised memory)"
    )


def test_poisoned_read_and_its_clean_twin(interpret):
    x = np.ones(100, np.float32)
    with interpret() as session:
        dk.accumulate_kernel[(1,)](x, kernel_nb.poison(np.empty(100, np.float32)), 100, BLOCK=128)
    assert "uninitialised_read" in {f.kind for f in session.trace[0].findings}
    with interpret() as session:
        dk.accumulate_kernel_clean[(1,)](x, kernel_nb.poison(np.empty(100, np.float32)), 100, BLOCK=128)
    assert session.trace[0].findings == []


def test_without_detection_nothing_is_watched(interpret):
    x = np.ones(100, np.float32)
    with interpret(detect=False) as session:
        dk.accumulate_kernel[(1,)](x, kernel_nb.poison(np.empty(100, np.float32)), 100, BLOCK=128)
    assert session.trace[0].findings == []
