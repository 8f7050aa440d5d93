"""Reads of poisoned memory before any program wrote it."""

import inspect

import numpy as np
import triton
import triton.language as tl

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


@triton.jit
def add_rows_kernel(x_ptr, acc_ptr, N: tl.constexpr):
    at = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(acc_ptr + at, tl.load(acc_ptr + at) + tl.load(x_ptr + at))  # acc was never written


@triton.jit
def set_rows_kernel(x_ptr, acc_ptr, N: tl.constexpr):
    at = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(acc_ptr + at, tl.load(x_ptr + at))
    tl.store(acc_ptr + at, tl.load(acc_ptr + at) * 2)


def test_a_poisoned_2d_argument_names_its_elements_by_index_and_its_clean_twin(interpret):
    x = np.ones((4, 32), np.float32)
    with interpret() as session:
        add_rows_kernel[(4,)](x, kernel_nb.poison(np.empty((4, 32), np.float32)), N=32)
    [finding] = session.trace[0].findings
    line = inspect.getsourcelines(add_rows_kernel.fn)[1] + 3
    assert finding.message == (
        f"add_rows_kernel:{line} pid=(0,0,0): reads acc_ptr[0, 0:32] before any program wrote them "
        "(acc_ptr holds uninitialised memory) (in 4 programs; the first shown)"
    )
    with interpret() as session:
        set_rows_kernel[(4,)](x, kernel_nb.poison(np.empty((4, 32), np.float32)), N=32)
    assert session.trace[0].findings == []
