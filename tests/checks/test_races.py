"""Races between programs: a racy kernel and its race-free twin, and the findings' wording."""

import numpy as np

from kernel_nb.checks import Observations, races
from tests.checks.helpers import NamedLaunch, site
from tests.engine import detector_kernels as dk


def test_wording_and_severity():
    observations = Observations()
    races.read_after_write(observations, site((1, 0, 0)), arg="x", elements=np.array([4, 5]), other=(0, 0, 0))
    races.conflicting_write(
        observations, site((1, 0, 0), line=8), arg="x", elements=np.array([4]), other=(0, 0, 0)
    )
    read, write = observations.findings(NamedLaunch())
    assert (read.kind, read.severity, write.kind, write.severity) == (
        "race_read_after_write",
        "warning",
        "race_write",
        "error",
    )
    assert read.message == (
        "k:7 pid=(1,0,0): reads x elements [4, 5] that program (0,0,0) wrote earlier in this launch; "
        "programs of one launch run in no guaranteed order on the GPU"
    )
    assert write.message == (
        "k:8 pid=(1,0,0): writes x elements [4] that program (0,0,0) also wrote, with a different "
        "value; the result depends on which program the GPU runs last"
    )


def test_racy_write_and_its_clean_twin(interpret):
    with interpret() as session:
        dk.racy_write_kernel[(3,)](np.zeros(64, np.int32), BLOCK=64)
    assert [f.kind for f in session.trace[0].findings] == ["race_write"]
    with interpret() as session:
        dk.race_free_write_kernel[(3,)](np.zeros(192, np.int32), BLOCK=64)
    assert session.trace[0].findings == []


def test_read_after_write_and_its_clean_twin(interpret):
    x = np.ones(4 * 32, np.float32)
    with interpret() as session:
        dk.carry_kernel[(4,)](x, np.zeros_like(x), BLOCK=32)
    assert {f.kind for f in session.trace[0].findings} == {"race_read_after_write"}
    with interpret() as session:
        dk.carry_kernel_clean[(4,)](x, np.zeros_like(x), BLOCK=32)
    assert session.trace[0].findings == []
