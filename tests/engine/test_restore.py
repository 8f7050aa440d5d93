"""Replays of single programs put a launch's inputs back only where they go, and its results back
after (engine/restore.py)."""

import numpy as np

from kernel_nb.engine.args import bind
from kernel_nb.engine.restore import RestoreOnTouch
from tests.engine import kernels as k


def _bound():
    x = np.arange(1000, dtype=np.float32)
    y = np.full(1000, 2.0, np.float32)
    out = np.full(1000, -1.0, np.float32)
    bound = bind(k.add_kernel.fn, (x, y, out, 1000), {"BLOCK": 128})
    index = {b.name: i for i, m in enumerate(bound.memories) for b in bound.buffers if b.memory is m}
    return bound, index, x, out


def test_inputs_go_back_where_a_replay_goes_and_results_after():
    bound, index, _, out = _bound()
    inputs = bound.inputs()
    memory = bound.memories[index["out_ptr"]]
    results = np.arange(1000, dtype=np.float32) * 3
    memory.copy.view(np.float32)[:] = results  # what the launch wrote
    restore = RestoreOnTouch(bound.memories, inputs)

    restore.begin()
    restore.touch(index["out_ptr"], 40, 80, writes=True)  # elements 10..19
    view = memory.copy.view(np.float32)
    np.testing.assert_array_equal(view[10:20], out[10:20])  # the inputs, there only
    np.testing.assert_array_equal(view[:10], results[:10])
    np.testing.assert_array_equal(view[20:], results[20:])
    view[12] = 99.0  # the replay writes
    restore.touch(index["out_ptr"], 40, 80, writes=False)  # and reads it again: its own write stays
    assert view[12] == 99.0

    restore.begin()  # the next replay starts from the inputs again
    restore.touch(index["out_ptr"], 0, 60, writes=False)
    np.testing.assert_array_equal(view[:15], out[:15])

    restore.finish()
    np.testing.assert_array_equal(memory.copy.view(np.float32), results)


def test_a_memory_the_launch_never_filled_holds_its_inputs_after_replays_that_wrote_it():
    bound, index, x, _ = _bound()
    restore = RestoreOnTouch(bound.memories, bound.inputs())
    memory = bound.memories[index["x_ptr"]]
    assert memory.lazy  # only read, where the caller holds it
    restore.begin()
    restore.touch(index["x_ptr"], 0, 40, writes=False)  # nothing to put back: the caller's memory is
    restore.touch(index["x_ptr"], 8, 16, writes=True)  # the input, but a replay writes there (a
    # perturbed address): it fills the copy
    memory.copy.view(np.float32)[3] = 7.0
    restore.finish()
    np.testing.assert_array_equal(memory.copy.view(np.float32), x)
    np.testing.assert_array_equal(x, np.arange(1000))  # the caller's array was never written


def test_byte_ranges_are_added_and_subtracted_as_sets_of_bytes_would_be():
    import random

    from kernel_nb.engine.restore import _add, _missing

    rng = random.Random(0)
    for _ in range(3000):
        covered, ranges = set(), []
        for _ in range(rng.randint(0, 8)):
            lo = rng.randint(0, 60)
            hi = lo + rng.randint(1, 15)
            _add(ranges, lo, hi)
            covered |= set(range(lo, hi))
            assert all(ranges[i][1] < ranges[i + 1][0] for i in range(len(ranges) - 1))  # sorted, apart
            assert {b for lo, hi in ranges for b in range(lo, hi)} == covered
        lo = rng.randint(0, 70)
        hi = lo + rng.randint(0, 20)
        missing = _missing(lo, hi, ranges)
        assert all(hi > lo for lo, hi in missing)
        assert {b for lo, hi in missing for b in range(lo, hi)} == set(range(lo, hi)) - covered
