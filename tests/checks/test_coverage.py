"""Elements never written: a grid that stops short, and the grid that covers the buffer."""

import inspect

import numpy as np
import triton

from kernel_nb.checks import UncoveredElements
from tests.engine import kernels as k


def test_a_short_grid_and_its_clean_twin(interpret):
    n = 1000
    x = np.ones(n, np.float32)
    with interpret() as session:
        k.add_kernel[(n // 256,)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
    launch = session.trace[0]
    [finding] = launch.findings
    assert (finding.kind, finding.severity, finding.elements[0]) == ("uncovered", "warning", 768)
    [again] = UncoveredElements().check(launch)
    assert again.message == finding.message and again.elements.tolist() == finding.elements.tolist()
    with interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256),)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
    assert session.trace[0].findings == []


def test_a_failed_launch_is_not_checked(interpret):
    n = 1000
    x = np.ones(n, np.float32)
    with interpret() as session:
        k.add_kernel[(n // 256,)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
    launch = session.trace[0]
    launch.status = "error"
    assert UncoveredElements().check(launch) == []


def test_a_short_grid_over_a_2d_argument_names_the_rows_left_and_its_clean_twin(interpret):
    x = np.ones((8, 64), np.float32)
    with interpret() as session:
        k.copy_kernel[(6,)](x, np.zeros_like(x), x.size, BLOCK=64)  # one row a program, 6 of 8
    [finding] = session.trace[0].findings
    store = inspect.getsourcelines(k.copy_kernel.fn)[1] + 4
    assert finding.message == (
        f"copy_kernel: dst_ptr[6:8, 0:64] (128 of 512) were never written by the tl.store at kernels.py:{store}, "
        "though the launch wrote the rest of dst_ptr; check the grid covers the whole buffer and the store mask's "
        "bound"
    )
    assert finding.elements[0] == 384  # the offsets stay flat
    with interpret() as session:
        k.copy_kernel[(8,)](x, np.zeros_like(x), x.size, BLOCK=64)
    assert session.trace[0].findings == []
