"""Launches on unchanged host arrays share the read-only copy of them they keep as their inputs."""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

import kernel_nb
from tests.engine import kernels as k


@triton.jit
def add_one_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x + 1, mask=mask)


def _arrays():
    x = np.arange(4096, dtype=np.float32)
    return x, np.ones(4096, np.float32), np.zeros(4096, np.float32)


def test_a_launch_on_unchanged_arrays_shares_the_inputs_an_earlier_one_keeps():
    x, y, out = _arrays()
    with kernel_nb.interpret() as first:
        k.add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    with kernel_nb.interpret() as again:
        k.add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    kept, shared = first.trace[0].snapshot["x_ptr"], again.trace[0].snapshot["x_ptr"]
    assert np.shares_memory(kept, shared) and not shared.flags.writeable
    np.testing.assert_array_equal(shared, x)
    assert not np.shares_memory(first.trace[0].snapshot["out_ptr"], again.trace[0].snapshot["out_ptr"])
    np.testing.assert_array_equal(out, x + y)


def test_a_changed_array_gets_its_own_copy_and_the_earlier_launch_keeps_what_it_read():
    x, y, out = _arrays()
    with kernel_nb.interpret() as first:
        k.add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    x[1024] = 99.0
    with kernel_nb.interpret() as changed:
        k.add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    kept, fresh = first.trace[0].snapshot["x_ptr"], changed.trace[0].snapshot["x_ptr"]
    assert not np.shares_memory(kept, fresh)
    assert kept[1024] == 1024.0 and fresh[1024] == 99.0
    assert first.trace[0].value((1, 0, 0), "x")[0] == 1024.0
    assert changed.trace[0].value((1, 0, 0), "x")[0] == 99.0
    assert out[1024] == 100.0


def test_a_launch_that_writes_shared_inputs_leaves_the_earlier_launch_its_inputs():
    x, y, out = _arrays()
    original = x.copy()
    with kernel_nb.interpret(budget_bytes=0) as first:  # every program replayed when looked at
        k.add_kernel[(4,)](x, y, out, 4096, BLOCK=1024)
    with kernel_nb.interpret() as in_place:  # reads x as the first launch kept it, then writes it
        add_one_in_place[(4,)](x, 4096, BLOCK=1024)
    np.testing.assert_array_equal(x, original + 1)
    np.testing.assert_array_equal(in_place.trace[0].value((2, 0, 0), "x"), original[2048:3072])
    launch = first.trace[0]
    assert not launch.programs[(2, 0, 0)].kept
    # replayed from the inputs the two launches shared: as they were before the write
    np.testing.assert_array_equal(launch.value((2, 0, 0), "x"), original[2048:3072])
    np.testing.assert_array_equal(launch.value((2, 0, 0), "y"), 1.0)
