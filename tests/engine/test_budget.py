"""The capture budget is checked while a program runs: a program too large for it is cut."""

import gc
import tracemalloc

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine import recorder

BLOCK = 1 << 14


@triton.jit
def _wide_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    b = a * 2.0
    c = b + 1.0
    d = c * c
    e = d - a
    tl.store(out_ptr + offs, e)


def _run(programs, budget, strategy="auto"):
    x = np.arange(programs * BLOCK, dtype=np.float32)
    out = np.zeros_like(x)
    gc.collect()
    tracemalloc.start()
    try:
        with kernel_nb.interpret(budget_bytes=budget, strategy=strategy) as session:
            _wide_kernel[(programs,)](x, out, BLOCK=BLOCK)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    a = x
    np.testing.assert_array_equal(out, (a * 2 + 1) ** 2 - a)
    return session.trace[0], x, held


@pytest.fixture
def small_slack(monkeypatch):
    monkeypatch.setattr(recorder, "CUT_SLACK", 0)


def test_a_program_past_twice_the_budget_is_cut_and_replayed(small_slack):
    launch, x, _ = _run(1, 16 << 10)
    program = launch.programs[(0, 0, 0)]
    assert not program.kept
    assert all(r.value is None for r in program.records) and all(e.values is None for e in program.events)
    assert launch.kept_bytes == 0
    np.testing.assert_array_equal(launch.value(0, "c"), x * 2 + 1)  # replayed, all its values


@pytest.mark.parametrize("strategy", ["serial", "auto"])
def test_no_program_after_a_cut_one_keeps_values(small_slack, strategy):
    # the first program is cut; the budget would have room for the next, but keeps none after it
    per_program = _run(1, 1 << 30)[0].kept_bytes
    launch = _run(4, per_program // 3, strategy)[0]
    assert [p.kept for p in launch.programs.values()] == [False] * 4
    assert launch.kept_bytes == 0


def test_a_program_within_twice_the_budget_is_kept_whole(small_slack):
    per_program = _run(1, 1 << 30)[0].kept_bytes
    launch = _run(4, per_program // 2)[0]
    assert [p.kept for p in launch.programs.values()] == [True, False, False, False]
    assert launch.kept_bytes == per_program


@pytest.mark.parametrize("strategy", ["serial", "auto"])
def test_the_values_held_follow_the_budget_not_the_program(small_slack, strategy):
    budget = 16 << 10
    whole = _run(1, 1 << 30, strategy)
    cut = _run(1, budget, strategy)
    assert whole[0].kept_bytes > 20 * budget
    assert whole[2] > 20 * budget
    # held after the launch, inputs and snapshot included: at most twice the budget and one value
    # (a block's lanes, 8 bytes each) past what the launch holds with nothing kept
    nothing = _run(1, 0, strategy)
    assert cut[2] <= nothing[2] + 2 * budget + 8 * BLOCK + (16 << 10)


@triton.jit
def _loop_values(x_ptr, out_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for _step in range(STEPS):
        acc = acc * 0.5 + 1.0
    tl.store(out_ptr + offs, acc)


def _run_loop_values(programs, block, steps, budget):
    """Launch `_loop_values` batched on a ramp, traced: its input, session, the bytes traced
    after it and the most traced above the start while it ran."""
    x = np.linspace(0, 1, programs * block, dtype=np.float32)
    out = np.zeros_like(x)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        with kernel_nb.interpret(budget_bytes=budget, strategy="auto") as session:
            _loop_values[(programs,)](x, out, STEPS=steps, BLOCK=block)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return x, session, held, peak - start


def test_a_batch_lets_go_of_the_values_of_programs_the_budget_cut():
    # every program of the batch is kept at first; the budget holds 14 of the 64, and the values
    # the others made before it ran out are let go then, not when the launch ends
    programs, block, steps, budget = 64, 1024, 64, 4 << 20
    x, session, held, _ = _run_loop_values(programs, block, steps, budget)
    launch = session.trace[0]
    assert launch.strategy == "batched"
    kept = [pid for pid, p in launch.programs.items() if p.kept]
    assert 0 < len(kept) < programs and launch.kept_bytes <= 2 * budget
    assert held < 1.5 * budget  # the kept values and little else (all the batch's: 16 MiB)
    expected = x.reshape(programs, block)
    for _ in range(3):
        expected = expected * np.float32(0.5) + np.float32(1.0)
    last_kept, first_cut = kept[-1][0], len(kept)
    for pid in (last_kept, first_cut):  # kept, then replayed
        np.testing.assert_array_equal(launch.value(pid, "acc", iteration=(2,)), expected[pid])


def test_a_batch_holds_about_its_budget_while_it_runs_not_only_when_it_ends():
    # the cut programs' values go while the loop runs: at no time does the launch hold the whole
    # batch's values of the loop's iterations (16 MiB for each of its statements)
    budget = 4 << 20
    _, session, _, peak = _run_loop_values(64, 1024, 64, budget)
    assert session.trace[0].strategy == "batched"
    assert peak < 2 * budget


@triton.jit
def _triangle(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(pid + 1):  # a trip count per program: one masked loop for the batch
        acc += tl.load(x_ptr + i * BLOCK + offs)
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def _uncaptured_peak(kernel, programs, block):
    """Run `kernel` batched without capture on ones; its output and the peak bytes it held."""
    x = np.ones(programs * block, np.float32)
    out = np.zeros_like(x)
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        with kernel_nb.interpret(capture=False, strategy="auto") as session:
            kernel[(programs,)](x, out, BLOCK=block)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert session.trace[0].strategy == "batched"
    return out, peak


def test_a_masked_loop_holds_one_iterations_values_not_all_of_them():
    programs, block = 64, 4096
    out, peak = _uncaptured_peak(_triangle, programs, block)
    expected = np.broadcast_to(np.arange(1, programs + 1, dtype=np.float32)[:, None], (programs, block))
    np.testing.assert_array_equal(out.reshape(programs, block), expected)
    # an iteration's values are a few arrays of 64 rows of 16 KiB; all 64 iterations' would be
    # some 100 MiB
    assert peak < 24 << 20, peak


@triton.jit
def _temporaries(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(pid + 1):  # a masked loop whose body makes temporaries only it reads
        a = tl.load(x_ptr + i * BLOCK + offs)
        b = a * 2.0
        c = b + 1.0
        d = c * c
        acc += d
    tl.store(out_ptr + pid * BLOCK + offs, acc)


def test_a_masked_loop_lets_go_of_an_iterations_temporaries_when_the_next_one_starts():
    programs, block = 64, 4096  # a temporary of the first iteration: 1 MiB
    out, peak = _uncaptured_peak(_temporaries, programs, block)
    np.testing.assert_array_equal(out.reshape(programs, block)[:, 0], 9 * np.arange(1, programs + 1))
    # about 13.5 MiB; 18.5 MiB while the snapshot an iteration starts with held the body's
    # temporaries from the iteration before (a, b, c, d) until the next iteration started
    assert peak < 16 << 20, peak


@triton.jit
def _copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    a = tl.load(x_ptr + offs, mask=inside, other=0.0)  # masked: gathered, not a view of x
    tl.store(out_ptr + offs, a, mask=inside)


@pytest.mark.parametrize("budget", [1 << 20, 3 << 20])  # cut while the batch runs / at its end
def test_a_loaded_value_kept_by_its_event_and_its_record_is_held_once(budget):
    # the budget counts the load's values and the record of `a` apiece (as the serial strategy
    # keeps them); a batch keeps one copy of the kept programs' rows for both, however many
    # programs the budget cut between them (a masked store's values are what memory then holds)
    programs, block = 256, 1024
    x = np.arange(programs * block, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(budget_bytes=budget, strategy="auto") as session:
        _copy_kernel[(programs,)](x, out, x.size - 1, BLOCK=block)
    launch = session.trace[0]
    assert launch.strategy == "batched"
    np.testing.assert_array_equal(out[:-1], x[:-1])
    kept = [pid for pid, p in launch.programs.items() if p.kept]
    assert 0 < len(kept) < programs
    assert launch.kept_bytes >= len(kept) * 3 * 4 * block
    for pid in (kept[0], kept[-1]):
        expected = x[pid[0] * block : (pid[0] + 1) * block]
        [value] = [r.value for r in launch.records(pid, name="a")]
        [load, store] = launch.programs[pid].events
        for held in (value, load.values, store.values):
            np.testing.assert_array_equal(held, expected)
        assert np.shares_memory(value, load.values)
