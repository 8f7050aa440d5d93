"""Programs that wait for each other take turns: spin loops make progress, deadlocks are reported."""

import _thread
import inspect
import threading

import numpy as np
import pytest
import triton.language as tl

import kernel_nb
from kernel_nb.errors import KernelCompileError, KernelDeadlockError
from tests.engine import waiting_kernels as wk


def line_of(kernel, text):
    """The file line of the first source line of `kernel` that contains `text`."""
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


WAIT_LINE = line_of(wk.wait_forever_kernel, "while")


def test_a_split_k_semaphore_waits_for_the_partial_sums():
    a = np.arange(1000, dtype=np.float32)
    partial, out, count = np.zeros(4, np.float32), np.zeros(1, np.float32), np.zeros(1, np.int32)
    with kernel_nb.interpret() as session:
        wk.split_k_kernel[(4,)](a, partial, out, count, 1000, SPLIT=4, BLOCK=256)
    assert out[0] == a.sum() and count[0] == 3
    launch = session.trace[0]
    assert launch.strategy == "serial"
    assert launch.strategy_note == "programs took turns: 1 waited for another program"
    line = line_of(wk.split_k_kernel, "while")
    assert launch.turns == [((0, 0, 0), line), ((1, 0, 0), None), ((2, 0, 0), None), ((3, 0, 0), None),
                            ((0, 0, 0), None)]  # fmt: skip
    # every program's records are there, the waiting one's too
    assert launch.value((0, 0, 0), "total") == a.sum()


@pytest.mark.parametrize("order", ["serial", "reverse", "shuffle"])
def test_a_ticket_lock_serialises_the_critical_section(order):
    x = np.ones(8 * 16, np.float32)
    total, next_ticket, serving = (np.zeros(1, dt) for dt in (np.float32, np.int32, np.int32))
    with kernel_nb.interpret(order=order, seed=3):
        wk.ticket_lock_kernel[(8,)](x, total, next_ticket, serving, BLOCK=16)
    assert (total[0], next_ticket[0], serving[0]) == (128.0, 8, 8)


def test_programs_that_commit_in_reverse_order_each_wait_for_the_later_ones():
    log, position, serving = np.full(6, -1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with kernel_nb.interpret() as session:
        wk.ordered_commit_kernel[(6,)](log, position, serving)
    assert log.tolist() == [5, 4, 3, 2, 1, 0]
    turns = session.trace[0].turns
    assert [pid for pid, line in turns if line is None] == [(5, 0, 0), (4, 0, 0), (3, 0, 0), (2, 0, 0),
                                                            (1, 0, 0), (0, 0, 0)]  # fmt: skip
    assert turns[0] == ((0, 0, 0), line_of(wk.ordered_commit_kernel, "while"))


def test_a_flag_load_in_a_while_loop_sees_the_later_programs_write():
    flag, data, out = np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.float32)
    with kernel_nb.interpret():
        wk.flag_kernel[(5,)](flag, data, out)
    assert out[0] == 42.0


@pytest.mark.skipif(not hasattr(tl, "atomic_poll"), reason="tl.atomic_poll is new in triton 3.9")
def test_atomic_poll_waits_for_another_program():
    import triton

    @triton.jit
    def poll_kernel(flag_ptr, data_ptr, out_ptr):
        pid = tl.program_id(0)
        if pid == 1:
            tl.store(data_ptr, 7)
            tl.atomic_xchg(flag_ptr, 1)
        else:
            tl.atomic_poll(flag_ptr, 1)
            tl.store(out_ptr, tl.load(data_ptr))

    flag, data, out = np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with kernel_nb.interpret() as session:
        poll_kernel[(2,)](flag, data, out)
    assert out[0] == 7 and session.trace[0].turns[0][1] is not None


def test_a_deadlock_names_the_waiting_programs_and_changes_nothing():
    flag, out = np.zeros(1, np.int32), np.full(3, 9, np.int32)
    with pytest.raises(KernelDeadlockError) as caught, kernel_nb.interpret() as session:
        wk.wait_forever_kernel[(3,)](flag, out)
    assert str(caught.value) == (
        f"wait_forever_kernel:{WAIT_LINE}: deadlock: 3 programs wait for memory that no program of the "
        f"launch will write ((0,0,0) at line {WAIT_LINE}, (1,0,0) at line {WAIT_LINE}, (2,0,0) at line "
        f"{WAIT_LINE}; 0 finished); on the GPU they would spin forever"
    )
    assert caught.value.pid == (0, 0, 0) and caught.value.line == WAIT_LINE
    assert out.tolist() == [9, 9, 9]
    assert session.trace[0].status == "error"
    assert not [t for t in threading.enumerate() if t.name.startswith("kernel_nb program")]


def test_ctrl_c_while_programs_wait_ends_the_launch():
    flag, out = np.zeros(1, np.int32), np.full(3, 9, np.int32)

    def interrupt(done, total):
        _thread.interrupt_main()

    # a program that finishes reports progress; the others still wait when Ctrl-C arrives
    with pytest.raises(kernel_nb.LaunchInterrupted), kernel_nb.interpret(progress=interrupt):
        wk.split_k_kernel[(4,)](np.ones(1000, np.float32), np.zeros(4, np.float32), out[:1].astype(np.float32),
                                flag, 1000, SPLIT=5, BLOCK=256)  # fmt: skip
    assert flag[0] == 0
    assert not [t for t in threading.enumerate() if t.name.startswith("kernel_nb program")]


def test_a_program_whose_values_were_not_kept_is_replayed_with_the_others():
    a = np.arange(1000, dtype=np.float32)
    partial, out, count = np.zeros(4, np.float32), np.zeros(1, np.float32), np.zeros(1, np.int32)
    with kernel_nb.interpret(pids=((3, 0, 0),)) as session:
        wk.split_k_kernel[(4,)](a, partial, out, count, 1000, SPLIT=4, BLOCK=256)
    launch = session.trace[0]
    assert not launch.programs[(0, 0, 0)].kept
    assert launch.value((0, 0, 0), "total") == a.sum()  # replayed: it waits for the others again
    assert len(launch.turns) == 5 and out[0] == a.sum()


def test_a_while_loop_that_counts_is_not_a_wait():
    bound, out = np.array([10], np.int32), np.zeros(1, np.int32)
    with kernel_nb.interpret() as session:
        wk.counting_while_kernel[(1,)](bound, out)
    assert out[0] == 10 and session.trace[0].turns == [((0, 0, 0), None)]


def test_a_wait_that_reloads_its_variable_still_waits():
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with kernel_nb.interpret() as session:
        wk.reloading_wait_kernel[(2,)](flag, out)
    assert out[0] == 5 and session.trace[0].turns[0][1] is not None


def test_an_error_after_a_wait_names_the_program_that_failed():
    import triton

    @triton.jit
    def fail_after_wait_kernel(flag_ptr, x_ptr):
        pid = tl.program_id(0)
        if pid == 0:
            while tl.load(flag_ptr, volatile=True) == 0:
                pass
            tl.store(x_ptr + tl.arange(0, 4), tl.zeros((2,), tl.float32) + tl.zeros((4,), tl.float32))
        else:
            tl.atomic_xchg(flag_ptr, 1)

    flag, x = np.zeros(1, np.int32), np.zeros(8, np.float32)
    with (
        pytest.raises(KernelCompileError, match=r"pid=\(0,0,0\): ValueError") as caught,
        kernel_nb.interpret(),
    ):
        fail_after_wait_kernel[(3,)](flag, x)
    assert caught.value.pid == (0, 0, 0) and flag[0] == 0


def test_more_programs_than_can_take_turns_are_refused_before_any_runs(monkeypatch):
    from kernel_nb.engine import serial

    monkeypatch.setattr(serial, "MAX_TURNS", 5)
    log, position, serving = np.full(6, -1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with pytest.raises(ValueError) as raised, kernel_nb.interpret():
        wk.ordered_commit_kernel[(6,)](log, position, serving)
    assert str(raised.value) == (
        "ordered_commit_kernel: grid (6, 1, 1) has 6 programs that may wait for each other; at most 5 "
        "can take turns (each runs in a thread of its own): launch a smaller grid"
    )
    assert log.tolist() == [-1] * 6 and position[0] == 0 and serving[0] == 0
