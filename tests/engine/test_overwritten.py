"""An output written whole is never copied from the caller's memory (Memory.overwritten): what the
launch did not write is filled from there the moment anything else uses the copy, the caller keeps
it, and the launch's inputs hold what the caller had."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine.arrays import host_bytes
from kernel_nb.engine.memory import Memory
from tests.engine import kernels as k


def _memory(caller: np.ndarray) -> Memory:
    lo = caller.ctypes.data
    raw = caller.view(np.uint8)
    return Memory(
        "host", lo, lo + raw.size, lambda: host_bytes(lo, lo + raw.size), None, lazy=True, direct=True
    )


def test_a_copy_written_whole_is_filled_only_where_it_was_not_and_only_when_used():
    caller = np.arange(64, dtype=np.uint8)
    memory = _memory(caller)
    copy = memory.overwritten(8, 24)
    assert not memory.lazy and memory.unfilled == [(0, 8), (24, 64)]
    copy[8:24] = 200
    memory.overwritten(40, 64)[40:64] = 201
    assert memory.unfilled == [(0, 8), (24, 40)]
    seen = memory.current()  # read: every byte, the ones not written as the caller holds them
    assert memory.unfilled == []
    expected = caller.copy()
    expected[8:24], expected[40:64] = 200, 201
    np.testing.assert_array_equal(seen, expected)


@pytest.mark.parametrize("use", ["copy", "address", "exchange"])
def test_every_other_use_of_the_copy_fills_it_first(use):
    caller = np.arange(64, dtype=np.uint8)
    memory = _memory(caller)
    memory.overwritten(0, 32)[0:32] = 7
    memory.writable = [(0, 64)]
    if use == "copy":
        seen = memory.copy
    elif use == "address":
        memory.address(write=False)
        seen = memory.arena
    else:
        before = caller.copy()
        assert memory.exchange()
        np.testing.assert_array_equal(caller[:32], 7)  # the caller has the launch's writes
        np.testing.assert_array_equal(caller[32:], before[32:])  # and its own bytes elsewhere
        np.testing.assert_array_equal(memory.arena, before)  # the copy holds the inputs
        return
    np.testing.assert_array_equal(seen[32:], caller[32:])
    np.testing.assert_array_equal(seen[:32], 7)


@triton.jit
def _store_then_read(x_ptr, out_ptr, tail_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + 1.0)
    tl.store(tail_ptr + offsets, tl.load(out_ptr + n + offsets))  # out's second half: never written


def _fills(monkeypatch) -> list[int]:
    """Bytes copied into copies from the caller's memory (by fill, and by the fill of the rest)."""
    copied: list[int] = []
    fill, fill_rest = Memory.fill, Memory._fill_rest

    def counted_fill(self):
        if self.lazy:
            copied.append(self.size)
        fill(self)

    def counted_fill_rest(self):
        copied.append(sum(hi - lo for lo, hi in self.unfilled))
        fill_rest(self)

    monkeypatch.setattr(Memory, "fill", counted_fill)
    monkeypatch.setattr(Memory, "_fill_rest", counted_fill_rest)
    return copied


def test_an_output_written_whole_is_not_copied_and_its_inputs_are_kept(monkeypatch):
    copied = _fills(monkeypatch)
    n, block = 64 * 256, 256
    x = np.arange(n, dtype=np.float32)
    original = np.linspace(-1, 1, n, dtype=np.float32)
    out = original.copy()
    with kernel_nb.interpret(strategy="auto", working_set_bytes=16 << 10) as session:
        k.copy_kernel[(n // block,)](x, out, n, BLOCK=block)
    launch = session.trace[0]
    assert launch.strategy == "batched"
    np.testing.assert_array_equal(out, x)
    assert sum(copied) == x.nbytes  # x's frozen copy: none of out
    out[:] = 5.0
    np.testing.assert_array_equal(launch.snapshot["dst_ptr"], original)
    np.testing.assert_array_equal(launch.program(n // block - 1).events[-1].before, original[-block:])


def test_what_an_output_did_not_get_written_is_read_and_kept_as_the_caller_had_it(monkeypatch):
    copied = _fills(monkeypatch)
    n, block = 1024, 128
    x = np.arange(n, dtype=np.float32)
    original = -np.arange(2 * n, dtype=np.float32)
    out, tail = original.copy(), np.zeros(n, np.float32)
    with kernel_nb.interpret(strategy="auto") as session:
        _store_then_read[(n // block,)](x, out, tail, n, BLOCK=block)
    assert session.trace[0].strategy == "batched"
    np.testing.assert_array_equal(out[:n], x + 1)
    np.testing.assert_array_equal(out[n:], original[n:])
    np.testing.assert_array_equal(tail, original[n:])  # read after the first half was written
    assert original.nbytes // 2 in copied  # the second half filled when it was read, not the first
    np.testing.assert_array_equal(session.trace[0].snapshot["out_ptr"], original)


def test_a_launch_that_fails_after_writing_an_output_whole_leaves_it_as_it_was():
    n, block = 1024, 128
    x = np.arange(n, dtype=np.float32)
    out = np.full(n, 3.0, np.float32)
    with pytest.raises(kernel_nb.KernelError), kernel_nb.interpret(strategy="auto"):
        k.copy_kernel[(n // block + 1,)](x, out, n + block, BLOCK=block)  # the last program reads past x
    np.testing.assert_array_equal(out, 3.0)
