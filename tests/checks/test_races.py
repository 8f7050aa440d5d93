"""Races between programs: a racy kernel and its race-free twin, and the findings' wording."""

import inspect

import numpy as np
import triton
import triton.language as tl

from kernel_nb.checks import Observations, races
from kernel_nb.trace.coordinates import Layout
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


def test_elements_of_a_2d_argument_are_named_by_index():
    observations = Observations()
    layout = Layout((8, 64), (64, 1))
    races.read_after_write(
        observations, site((1, 0, 0)), arg="x", elements=np.arange(64, 72), other=(0, 0, 0), layout=layout
    )
    races.conflicting_write(
        observations, site((1, 0, 0), line=8), arg="x", elements=np.array([4]), other=(0, 0, 0), layout=layout
    )
    read, write = observations.findings(NamedLaunch())
    assert read.message == (
        "k:7 pid=(1,0,0): reads x[1, 0:8] that program (0,0,0) wrote earlier in this launch; "
        "programs of one launch run in no guaranteed order on the GPU"
    )
    assert write.message.startswith("k:8 pid=(1,0,0): writes x[0, 4] that program (0,0,0) also wrote")


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


@triton.jit
def row_three_kernel(out_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    tl.store(out_ptr + 3 * N + cols, cols * 0 + tl.program_id(0))  # every program: row 3


@triton.jit
def own_row_kernel(out_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)
    tl.store(out_ptr + tl.program_id(0) * N + cols, cols * 0 + tl.program_id(0))


def test_a_race_on_a_2d_argument_names_its_elements_by_index_and_its_clean_twin(interpret):
    with interpret() as session:
        row_three_kernel[(2,)](np.zeros((8, 64), np.int32), N=64)
    finding, uncovered = session.trace[0].findings
    line = inspect.getsourcelines(row_three_kernel.fn)[1] + 3
    assert finding.message == (
        f"row_three_kernel:{line} pid=(1,0,0): writes out_ptr[3, 0:64] that program (0,0,0) also wrote, "
        "with a different value; the result depends on which program the GPU runs last"
    )
    assert finding.elements.tolist() == list(range(192, 256))  # the offsets stay flat
    assert uncovered.message == (
        "row_three_kernel: out_ptr[0:3, 0:64], out_ptr[4:8, 0:64] (448 of 512) were never written by the "
        f"tl.store at test_races.py:{line}, though the launch wrote the rest of out_ptr; check the grid covers "
        "the whole buffer and the store mask's bound"
    )
    with interpret() as session:
        own_row_kernel[(8,)](np.zeros((8, 64), np.int32), N=64)
    assert session.trace[0].findings == []
