"""A launch keeps its inputs, copied only where it changes them: a replay computes from the inputs
whatever the caller did to the arrays after the launch."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine.args import bind
from tests.engine import kernels as k


@triton.jit
def _accumulate(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    before = tl.load(out_ptr + offs)
    total = before + tl.load(x_ptr + offs) * 2.0
    tl.store(out_ptr + offs, total)


@pytest.mark.parametrize("strategy", ["serial", "auto"])
def test_a_replay_reads_the_inputs_after_the_caller_changed_its_arrays(strategy):
    x = np.arange(256, dtype=np.float32)
    out = np.full(256, 10.0, np.float32)
    with kernel_nb.interpret(budget_bytes=0, strategy=strategy) as session:  # nothing kept: replays
        _accumulate[(2,)](x, out, BLOCK=128)
    np.testing.assert_array_equal(out, 10.0 + 2 * x)
    launch = session.trace[0]
    assert launch.strategy == ("serial" if strategy == "serial" else "batched")
    x[:] = -1.0  # only read by the launch: its inputs are its private copy, not the caller's array
    out[:] = 99.0  # written: its inputs were copied before the results were written back
    np.testing.assert_array_equal(launch.value((1, 0, 0), "before"), np.full(128, 10.0, np.float32))
    np.testing.assert_array_equal(launch.value((1, 0, 0), "total"), 10.0 + 2 * np.arange(128, 256))
    np.testing.assert_array_equal(launch.snapshot["x_ptr"], np.arange(256))
    np.testing.assert_array_equal(launch.snapshot["out_ptr"], np.full(256, 10.0))
    # and again, after the replay wrote the private copies
    np.testing.assert_array_equal(launch.value((0, 0, 0), "total"), 10.0 + 2 * np.arange(128))


def _commit_a_result(out, x, y):
    bound = bind(k.add_kernel.fn, (x, y, out, out.size), {"BLOCK": 128})
    inputs = bound.inputs()
    assert inputs.copied_bytes == 0
    out_index = next(
        i
        for i, m in enumerate(bound.memories)
        if any(b.name == "out_ptr" and b.memory is m for b in bound.buffers)
    )
    bound.memories[out_index].copy[:] = 7  # the launch's result
    bound.commit(lambda name: name == "out_ptr", inputs=inputs)
    return inputs, inputs[out_index], bound.memories[out_index]


def test_a_written_argument_is_written_back_by_exchange_and_its_copy_keeps_the_inputs():
    x, y, out = np.ones(1000, np.float32), np.ones(1000, np.float32), np.zeros(1000, np.float32)
    inputs, out_inputs, memory = _commit_a_result(out, x, y)
    assert (out.view(np.uint8) == 7).all()
    assert inputs.copied_bytes == 0  # nothing copied: the private copy took the caller's bytes
    np.testing.assert_array_equal(out_inputs.view(np.float32), np.zeros(1000, np.float32))
    assert out_inputs is memory.arena and not out_inputs.flags.writeable
    memory.copy[:] = 9  # a replay writing the memory writes a copy: the inputs stay
    np.testing.assert_array_equal(out_inputs.view(np.float32), np.zeros(1000, np.float32))


def test_only_the_memories_written_back_are_copied():
    """A big-endian argument's copy holds its elements swapped: it is copied before write-back."""
    x, y = np.ones(1000, np.float32), np.ones(1000, np.float32)
    out = np.zeros(1000, ">f4")
    inputs, out_inputs, _ = _commit_a_result(out, x, y)
    assert inputs.copied_bytes == out.nbytes
    np.testing.assert_array_equal(out_inputs.view(np.float32), np.zeros(1000, np.float32))
    assert (out.view(np.uint8) == 7).all()


def test_a_saved_trace_keeps_its_inputs(tmp_path):
    x, y, out = np.arange(300, dtype=np.float32), np.ones(300, np.float32), np.zeros(300, np.float32)
    with kernel_nb.interpret() as session:
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    session.trace.save(tmp_path / "t.kntrace")
    x[:] = 0
    loaded = kernel_nb.Trace.load(tmp_path / "t.kntrace")
    np.testing.assert_array_equal(loaded[0].snapshot["x_ptr"], np.arange(300))
    assert isinstance(loaded[0].snapshot, dict)


def _states_at_commit(monkeypatch):
    """Per launch, each argument's memory as write-back finds it: (lazy, frozen)."""
    from kernel_nb.engine import args as args_module

    states = []
    commit = args_module.BoundArguments.commit

    def noting(self, *a, **kw):
        states.append({b.name: (b.memory.lazy, b.memory.frozen) for b in self.buffers})
        return commit(self, *a, **kw)

    monkeypatch.setattr(args_module.BoundArguments, "commit", noting)
    return states


@pytest.mark.parametrize("strategy", ["serial", "auto"])
def test_an_argument_the_launch_only_reads_is_copied_once(strategy, monkeypatch):
    n = 4096
    x, y, out = np.arange(n, dtype=np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    at_commit = _states_at_commit(monkeypatch)
    with kernel_nb.interpret(strategy=strategy) as session:
        k.add_kernel[(n // 256,)](x, y, out, n, BLOCK=256)
    np.testing.assert_array_equal(out, x + 1)
    launch = session.trace[0]
    assert launch.strategy == ("serial" if strategy == "serial" else "batched")
    if strategy == "serial":
        # read where the caller holds them (by the interpreter, at host addresses)
        assert at_commit == [{"x_ptr": (True, False), "y_ptr": (True, False), "out_ptr": (False, False)}]
    else:
        # copied once, read-only, by the first load: the loaded tiles are views of that copy
        assert at_commit == [{"x_ptr": (False, True), "y_ptr": (False, True), "out_ptr": (False, False)}]
        assert np.shares_memory(launch.value((3, 0, 0), "x"), launch.snapshot["x_ptr"])
    x[:] = -5.0  # after the launch the copies hold its inputs, whatever the caller does
    np.testing.assert_array_equal(launch.snapshot["x_ptr"], np.arange(n))
    np.testing.assert_array_equal(launch.value((3, 0, 0), "x"), np.arange(768, 1024))


def test_an_argument_read_then_written_keeps_what_was_read(strategy):
    """y is loaded (into a read-only copy), then stored to: the stores go to a copy of that copy,
    so that the kept loaded values, and the launch's inputs, stay as they were read."""
    n = 4096
    x, y = np.arange(n, dtype=np.float32), np.full(n, 2.0, np.float32)
    with kernel_nb.interpret() as session:
        k.axpy_kernel[(n // 256,)](x, y, n, 3.0, BLOCK=256)
    launch = session.trace[0]
    assert launch.strategy == ("serial" if strategy == "serial" else "batched")
    np.testing.assert_array_equal(y, 2.0 + 3.0 * x)
    np.testing.assert_array_equal(launch.snapshot["y_ptr"], 2.0)
    loaded = [r for r in launch.programs[(5, 0, 0)].records if launch.statements[r.stmt].name == "y"]
    np.testing.assert_array_equal(loaded[0].value, 2.0)
    y[:] = -1.0
    np.testing.assert_array_equal(launch.snapshot["y_ptr"], 2.0)
    np.testing.assert_array_equal(loaded[0].value, 2.0)


def test_a_load_that_copies_anyway_leaves_its_argument_where_the_caller_has_it(monkeypatch):
    """A masked tile is gathered into a fresh array either way: no read-only copy of x is made
    for it (it would only add to the launch's memory), x is copied when the launch ends."""
    x, y, out = np.arange(300, dtype=np.float32), np.ones(300, np.float32), np.zeros(300, np.float32)
    at_commit = _states_at_commit(monkeypatch)
    with kernel_nb.interpret() as session:
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    np.testing.assert_array_equal(out, x + 1)
    assert at_commit == [{"x_ptr": (True, False), "y_ptr": (True, False), "out_ptr": (False, False)}]
    x[:] = -5.0
    np.testing.assert_array_equal(session.trace[0].snapshot["x_ptr"], np.arange(300))
    np.testing.assert_array_equal(session.trace[0].value((2, 0, 0), "x")[:44], np.arange(256, 300))
