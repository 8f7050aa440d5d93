"""What a store overwrote (its event's `before`) in a launch of several batches: the inputs where
the launch had not written those elements yet, taken from where the launch found them, and what
the launch stored where it had."""

import numpy as np

import kernel_nb
from kernel_nb.engine.batched import guard as batched_guard
from tests.engine import kernels as k

N, BLOCK = 64 * 256, 256
# batches of a few dozen programs, each of which keeps its values
SMALL = {"strategy": "auto", "working_set_bytes": 16 << 10, "budget_bytes": 1 << 30}


def _batches(monkeypatch) -> list[int]:
    ran: list[int] = []
    original = batched_guard.BatchGuard.begin_batch

    def begin_batch(self, builder, observations, pids):
        ran.append(len(pids))
        return original(self, builder, observations, pids)

    monkeypatch.setattr(batched_guard.BatchGuard, "begin_batch", begin_batch)
    return ran


def _inputs_served(monkeypatch) -> list[bool]:
    served: list[bool] = []
    original = batched_guard.BatchGuard._unwritten_inputs

    def unwritten_inputs(self, access, dtype):
        found = original(self, access, dtype)
        served.append(found is not None)
        return found

    monkeypatch.setattr(batched_guard.BatchGuard, "_unwritten_inputs", unwritten_inputs)
    return served


def test_a_store_after_the_first_batch_overwrote_the_inputs_and_a_second_store_the_first(monkeypatch):
    ran, served = _batches(monkeypatch), _inputs_served(monkeypatch)
    x = np.arange(N, dtype=np.float32)
    original = -1.0 - np.arange(N, dtype=np.float32)
    out = original.copy()
    with kernel_nb.interpret(**SMALL) as session:
        k.store_twice_kernel[(N // BLOCK,)](x, out, N, BLOCK=BLOCK)
    launch = session.trace[0]
    assert launch.strategy == "batched" and len(ran) > 2
    # later batches' first stores took what they overwrote from the caller's memory; the second
    # stores, of elements written just before, did not
    assert True in served and False in served
    np.testing.assert_array_equal(out, 2 * x)
    np.testing.assert_array_equal(launch.snapshot["out_ptr"], original)
    for p in range(N // BLOCK):
        program = launch.program(p)
        assert program.kept
        first, second = [e for e in program.events if e.kind == "store"]
        part = slice(p * BLOCK, (p + 1) * BLOCK)
        np.testing.assert_array_equal(first.before, original[part])
        np.testing.assert_array_equal(first.values, x[part])
        np.testing.assert_array_equal(second.before, x[part])
        np.testing.assert_array_equal(second.values, 2 * x[part])


def test_an_argument_read_then_written_in_place_overwrote_its_inputs_in_every_batch(monkeypatch):
    ran, served = _batches(monkeypatch), _inputs_served(monkeypatch)
    x = np.arange(N, dtype=np.float32)
    original = np.linspace(-3, 3, N, dtype=np.float32)
    y = original.copy()
    with kernel_nb.interpret(**SMALL) as session:
        k.axpy_kernel[(N // BLOCK,)](x, y, N, 2.0, BLOCK=BLOCK)
    launch = session.trace[0]
    assert launch.strategy == "batched" and len(ran) > 2 and True in served
    np.testing.assert_array_equal(y, np.float32(2.0) * x + original)
    for p in range(N // BLOCK):
        [store] = [e for e in launch.program(p).events if e.kind == "store"]
        part = slice(p * BLOCK, (p + 1) * BLOCK)
        np.testing.assert_array_equal(store.before, original[part])
        np.testing.assert_array_equal(store.values, y[part])


def test_a_poisoned_output_is_overwritten_as_the_launch_poisoned_it(monkeypatch):
    ran, served = _batches(monkeypatch), _inputs_served(monkeypatch)
    x = np.arange(N, dtype=np.float32)
    out = np.zeros(N, np.float32)
    with kernel_nb.interpret(poison=("out_ptr",), **SMALL) as session:
        k.store_twice_kernel[(N // BLOCK,)](x, out, N, BLOCK=BLOCK)
    launch = session.trace[0]
    assert launch.strategy == "batched" and len(ran) > 2 and True not in served
    np.testing.assert_array_equal(out, 2 * x)
    for p in (0, N // BLOCK - 1):
        first = next(e for e in launch.program(p).events if e.kind == "store")
        assert np.isnan(first.before).all()  # the poison, not the caller's zeros
