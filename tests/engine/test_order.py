"""engine.order: program ids made as the launch walks them, and batches sized by the working set."""

import itertools
import tracemalloc

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine import order as order_module
from kernel_nb.engine.batched import recorder as batched_recorder
from kernel_nb.engine.order import ProgramOrder, batches, row_batches
from tests.engine import kernels as k


@pytest.mark.parametrize("grid", [(1, 1, 1), (5, 1, 1), (3, 4, 2), (17, 1, 3)])
@pytest.mark.parametrize("how", ["serial", "reverse", "shuffle"])
def test_every_program_of_the_grid_comes_once(grid, how):
    pids = list(ProgramOrder(grid, how, seed=3))
    every = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    assert sorted(pids) == sorted(every)
    assert len(ProgramOrder(grid, how)) == len(every)
    if how == "serial":
        assert pids == every
    if how == "reverse":
        assert pids == every[::-1]


def test_a_small_grid_shuffles_as_a_seeded_numpy_permutation():
    pids = list(ProgramOrder((10, 3, 1), "shuffle", seed=5))
    every = [(x, y, 0) for y in range(3) for x in range(10)]
    assert pids == [every[i] for i in np.random.default_rng(5).permutation(30)]


@pytest.mark.parametrize("size", [2, 3, 1000, 4097])
def test_past_the_table_a_shuffle_is_a_bijection_with_no_table(monkeypatch, size):
    monkeypatch.setattr(order_module, "SHUFFLE_TABLE", 1)
    shuffled = ProgramOrder((size, 1, 1), "shuffle", seed=11)
    positions = [pid[0] for pid in shuffled]
    assert sorted(positions) == list(range(size))
    assert positions == [pid[0] for pid in ProgramOrder((size, 1, 1), "shuffle", seed=11)]
    if size >= 1000:  # a permutation of a few positions may well be the identity
        assert positions != list(range(size))
        assert positions != [pid[0] for pid in ProgramOrder((size, 1, 1), "shuffle", seed=12)]


@pytest.mark.parametrize("how", ["serial", "reverse", "shuffle"])
def test_the_largest_grid_costs_no_memory_per_program(how):
    tracemalloc.start()
    try:
        walk = ProgramOrder((2**31 - 1, 1, 1), how, seed=1)
        first = list(itertools.islice(walk, 1000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(set(first)) == 1000
    assert all(0 <= p[0] < 2**31 - 1 for p in first)
    assert peak < 1 << 20


def test_batches_ask_for_each_size_as_they_are_taken():
    asked = []

    def sizes():
        for size in (1, 3, 100):
            asked.append(size)
            yield size

    taken = batches(ProgramOrder((6, 1, 1)), sizes())
    assert next(taken) == [(0, 0, 0)]
    assert asked == [1]
    assert list(taken) == [[(1, 0, 0), (2, 0, 0), (3, 0, 0)], [(4, 0, 0), (5, 0, 0)]]


@pytest.mark.parametrize("grid", [(1, 1, 1), (7, 1, 1), (3, 4, 2), (5, 2, 3)])
@pytest.mark.parametrize("how", ["serial", "reverse", "shuffle"])
def test_batches_as_rows_hold_the_programs_batches_hold_in_the_same_order(grid, how):
    sizes = [1, 2, 5, 9, 1000]
    expected = list(batches(ProgramOrder(grid, how, seed=3), iter(sizes)))
    taken = list(row_batches(ProgramOrder(grid, how, seed=3), iter(sizes)))
    assert [pids for pids, _ in taken] == expected
    for pids, rows in taken:
        assert rows.dtype == np.int64 and rows.shape == (len(pids), 3)
        assert [tuple(row) for row in rows.tolist()] == pids
        assert all(type(p) is int for pid in pids for p in pid)


def test_batches_as_rows_walk_a_shuffle_past_its_table_one_program_at_a_time(monkeypatch):
    monkeypatch.setattr(order_module, "SHUFFLE_TABLE", 16)
    walked = list(row_batches(ProgramOrder((40, 1, 1), "shuffle", seed=2), iter([3, 30, 30])))
    assert [pids for pids, _ in walked] == list(
        batches(ProgramOrder((40, 1, 1), "shuffle", seed=2), iter([3, 30, 30]))
    )
    assert sorted(p for pids, _ in walked for p in pids) == [(x, 0, 0) for x in range(40)]
    assert all(np.array_equal(rows, np.array(pids).reshape(-1, 3)) for pids, rows in walked)


def _finished_batches(monkeypatch):
    """(programs, bytes one program's values took) of each batch that ran to its end."""
    finished = []
    original = batched_recorder.BatchRecorder.end_batch

    def end_batch(self):
        finished.append((len(self.batch), self.program_bytes()))
        return original(self)

    monkeypatch.setattr(batched_recorder.BatchRecorder, "end_batch", end_batch)
    return finished


def _added_again(finished, x, y, programs, block, sizes, **options):
    """Vector add launched once per n of `sizes`, each in a session of its own, its results
    checked: per launch, its trace, its batches' sizes and what each measured per program."""
    runs = []
    for size in sizes:
        finished.clear()
        out = np.zeros(len(x), np.float32)
        with kernel_nb.interpret(strategy="auto", **options) as session:
            k.add_kernel[(programs,)](x, y, out, size, BLOCK=block)
        launch = session.trace[0]
        assert launch.strategy == "batched"
        np.testing.assert_array_equal(out[:size], (x + y)[:size])
        runs.append((launch, [s for s, _ in finished], [b for _, b in finished]))
    return runs


def test_the_working_set_sizes_the_batches(monkeypatch):
    n, block, working_set = 64 * 256, 256, 16 << 10
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    finished = _finished_batches(monkeypatch)
    out = np.zeros(n, np.float32)
    with kernel_nb.interpret(strategy="auto", working_set_bytes=working_set) as session:
        k.add_kernel[(n // block,)](x, y, out, n, BLOCK=block)
    launch = session.trace[0]
    assert launch.strategy == "batched"
    np.testing.assert_array_equal(out, x + y)
    assert sum(size for size, _ in finished) == n // block == len(launch.programs)
    assert len(finished) > 1
    for size, per_program in finished:
        # the offsets are a base per program (their values are never made: see FormIntegers), and
        # the mask one value for the block (every lane of every program is inside); x and y are
        # views of the launch's inputs (tiles side by side), which take no bytes of their own
        own = 8
        assert own <= per_program < own + 4 * block
        assert size * batched_recorder.WORKING_SET_FACTOR * per_program <= working_set

    finished.clear()
    with kernel_nb.interpret(strategy="auto"):
        k.add_kernel[(n // block,)](x, y, np.zeros(n, np.float32), n, BLOCK=block)
    assert [size for size, _ in finished] == [n // block]  # the default working set holds them all


def test_a_load_counts_in_the_working_set_unless_it_is_a_view_of_the_inputs(monkeypatch):
    rows, cols = 64, 256
    src = np.arange(rows * cols * 2, dtype=np.float32)
    finished = _finished_batches(monkeypatch)
    measured = {}
    for step in (1, 2):  # rows side by side: a view of src; every other element: a copy
        dst = np.zeros(rows * cols, np.float32)
        finished.clear()
        with kernel_nb.interpret(strategy="auto") as session:
            k.strided_copy_kernel[(rows,)](src, dst, rows, cols, cols * step, step, BLOCK=cols)
        assert session.trace[0].strategy == "batched"
        np.testing.assert_array_equal(dst, src[: rows * cols * step : step])
        [(size, measured[step])] = finished
        assert size == rows
    assert measured[2] - measured[1] == 4 * cols  # the loaded row, float32, counted where copied


def test_a_pointer_tile_counts_in_the_working_set_as_what_it_holds(monkeypatch):
    # a matmul's a_ptrs and b_ptrs walk their tiles as a base per program: counted as the
    # 8-byte addresses of every lane they stand for, the 16 programs would not fit one batch
    m, block = 256, 64
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    c = np.zeros((m, m), np.float32)
    working_set = 3 << 20
    finished = _finished_batches(monkeypatch)
    with kernel_nb.interpret(strategy="auto", working_set_bytes=working_set) as session:
        k.matmul_kernel[(m // block, m // block)](
            a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=block, BLOCK_N=block, BLOCK_K=block
        )
    assert session.trace[0].strategy == "batched"
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    [(size, per_program)] = finished
    addresses = 2 * 8 * block * block  # of a_ptrs and b_ptrs, had they been made
    assert size == (m // block) ** 2
    assert size * batched_recorder.WORKING_SET_FACTOR * (per_program + addresses) > working_set
    assert size * batched_recorder.WORKING_SET_FACTOR * per_program <= working_set


def test_a_loops_summaries_count_in_the_working_set(monkeypatch):
    from bench import memory_kernels as mk

    programs, steps, working_set = 200, 50, 64 << 10
    finished = _finished_batches(monkeypatch)
    out = np.zeros(programs, np.float32)
    with kernel_nb.interpret(strategy="auto", working_set_bytes=working_set) as session:
        mk.loop_kernel[(programs,)](out, STEPS=steps)
    launch = session.trace[0]
    assert launch.strategy == "batched"
    np.testing.assert_array_equal(out, np.full(programs, steps, np.float32))
    assert sum(size for size, _ in finished) == programs
    summaries = 2 * steps * batched_recorder.SUMMARY_ROW_BYTES  # the loop variable and acc
    for size, per_program in finished:
        assert per_program >= summaries
        assert size * batched_recorder.WORKING_SET_FACTOR * per_program <= working_set


def test_a_large_launch_measures_a_small_first_batch_and_undoes_none(monkeypatch):
    from kernel_nb.engine.batched import guard as batched_guard
    from kernel_nb.engine.batched import run as batched_run

    programs, block = 4096, 1024
    n = programs * block
    x, y, out = np.arange(n, dtype=np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    finished = _finished_batches(monkeypatch)
    undone = []
    rollback = batched_guard.BatchGuard.rollback
    monkeypatch.setattr(
        batched_guard.BatchGuard, "rollback", lambda self: (undone.append(1), rollback(self))[1]
    )
    with kernel_nb.interpret(strategy="auto") as session:
        k.add_kernel[(programs,)](x, y, out, n, BLOCK=block)
    assert session.trace[0].strategy == "batched"
    np.testing.assert_array_equal(out, x + y)
    sizes = [size for size, _ in finished]
    assert sizes[0] == batched_run.PROBE_BATCH and sum(sizes) == programs
    assert not undone  # no batch outgrew the working set: none was run and undone
    working_set = kernel_nb.Options().working_set_bytes
    kept = sum(program.kept for program in session.trace[0].programs.values())
    for i in range(1, len(finished)):  # each later batch as large as what the ones before measured
        fits = working_set // (batched_recorder.WORKING_SET_FACTOR * finished[i - 1][1])
        expected = min(fits, batched_run.MAX_BATCH, programs - sum(sizes[:i]))
        # or smaller, ending where the budget stops keeping programs
        assert sizes[i] == expected or (sizes[i] < expected and sum(sizes[: i + 1]) == kept)


def test_a_batch_that_reaches_the_end_of_the_budget_ends_there(monkeypatch):
    """The budget keeps the first programs' values; the batch that reaches its end stops at the
    last program it keeps, so that no batch holds values of programs it then cuts (which would
    have to be copied out of the values to let the rest go)."""
    from kernel_nb.engine.batched import recorder

    programs, block, budget = 2048, 256, 1 << 20
    n = programs * block
    x, y, out = np.arange(n, dtype=np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)
    finished = _finished_batches(monkeypatch)
    picked = []
    original = recorder._picked_rows
    monkeypatch.setattr(recorder, "_picked_rows", lambda *a: (picked.append(1), original(*a))[1])
    with kernel_nb.interpret(strategy="auto", budget_bytes=budget) as session:
        k.add_kernel[(programs,)](x, y, out, n, BLOCK=block)
    launch = session.trace[0]
    assert launch.strategy == "batched"
    np.testing.assert_array_equal(out, x + y)
    kept = [pid for pid, program in launch.programs.items() if program.kept]
    assert kept == [(i, 0, 0) for i in range(len(kept))] and 0 < len(kept) < programs
    ends = np.cumsum([size for size, _ in finished])
    assert len(kept) in ends  # a batch ends with the last program kept
    assert launch.kept_bytes >= budget  # the budget was used up, no more
    assert launch.kept_bytes - budget < launch.kept_bytes / len(kept)
    assert not picked  # no values of cut programs were held and copied out
    np.testing.assert_array_equal(launch.value(kept[-1], "x"), x[(len(kept) - 1) * block : len(kept) * block])


def test_a_launch_made_again_sizes_its_first_batch_by_what_the_last_one_measured(monkeypatch):
    from kernel_nb.engine.batched import run as batched_run

    programs, block = 4096, 256
    n = programs * block
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    finished = _finished_batches(monkeypatch)
    # the last launch: another n, which the measurement of the others is not for
    runs = _added_again(finished, x, y, programs, block, [n, n, n - block])
    (first, sizes, measured), (again, sizes_again, measured_again), (other, sizes_other, _) = runs
    assert sizes[0] == batched_run.PROBE_BATCH and sum(sizes) == programs
    # made again: no probe, the first batch as large as the last launch's measure lets it be
    working_set = kernel_nb.Options().working_set_bytes
    fits = working_set // (batched_recorder.WORKING_SET_FACTOR * measured[-1])
    assert sum(sizes_again) == programs and len(sizes_again) < len(sizes)
    assert sizes_again[0] == min(fits, batched_run.MAX_BATCH, programs) > batched_run.PROBE_BATCH
    assert measured_again[-1] == measured[-1]
    # the same launch, the same trace
    assert again.kept_bytes == first.kept_bytes
    assert [p for p, t in again.programs.items() if t.kept] == [
        p for p, t in first.programs.items() if t.kept
    ]
    for pid in ((0, 0, 0), (sizes[0], 0, 0), (programs - 1, 0, 0)):
        got = [(r.stmt, r.summary) for r in again.programs[pid].records]
        assert got == [(r.stmt, r.summary) for r in first.programs[pid].records]
    # another scalar argument: measured afresh
    assert sizes_other[0] == batched_run.PROBE_BATCH and other.status == "ok"


def test_a_program_that_takes_more_than_the_last_launch_measured_still_cuts_its_batch(monkeypatch):
    """A loop whose trip count the data sets: the launch made again with longer loops makes more
    summaries per program than the measure it starts from, and its batches still fit."""
    programs, working_set = 2048, 256 << 10
    finished = _finished_batches(monkeypatch)
    per_program = {}
    for steps in (2, 40):
        finished.clear()
        trips = np.full(programs, steps, np.int32)
        out = np.zeros(programs, np.float32)
        with kernel_nb.interpret(strategy="auto", working_set_bytes=working_set) as session:
            k.counted_loop_kernel[(programs,)](trips, out)
        assert session.trace[0].strategy == "batched"
        np.testing.assert_array_equal(out, np.full(programs, steps, np.float32))
        assert sum(size for size, _ in finished) == programs
        for size, measured in finished:
            assert size * batched_recorder.WORKING_SET_FACTOR * measured <= working_set
        per_program[steps] = finished[-1][1]
    assert per_program[40] > 10 * per_program[2]  # the second launch did take more per program


def test_a_launch_that_ran_in_one_batch_runs_in_one_batch_again(monkeypatch):
    """The budget keeps some of its programs only: made again, the launch is not cut where the
    budget ends (a batch's Python work costs more than copying the kept programs' rows)."""
    programs, block, budget = 256, 256, 64 << 10
    n = programs * block
    x, y = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    finished = _finished_batches(monkeypatch)
    runs = _added_again(finished, x, y, programs, block, [n, n], budget_bytes=budget)
    kept = []
    for launch, sizes, _ in runs:
        assert sizes == [programs]
        kept.append([pid for pid, program in launch.programs.items() if program.kept])
    assert kept[0] == kept[1] and 0 < len(kept[0]) < programs


@triton.jit
def _accumulate_then_branch(x_ptr, out_ptr, flag_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(out_ptr + offs) + tl.load(x_ptr + offs))
    if tl.load(flag_ptr + tl.program_id(0)) > 0:  # the programs of a batch disagree: it is split
        tl.store(out_ptr + offs, tl.load(out_ptr + offs) * 2.0)


def test_a_batch_undone_after_its_stores_leaves_memory_as_it_was(monkeypatch):
    """The undo of a batch that diverged after its stores puts their tiles back before its groups
    run them again (an accumulation run twice would add x twice)."""
    from kernel_nb.engine.batched import guard as batched_guard

    programs, block = 64, 128
    x = np.arange(programs * block, dtype=np.float32)
    out = np.ones(programs * block, np.float32)
    flag = (np.arange(programs) % 3 == 0).astype(np.int32)
    undone = []
    rollback = batched_guard.BatchGuard.rollback
    monkeypatch.setattr(
        batched_guard.BatchGuard, "rollback", lambda self: (undone.append(1), rollback(self))[1]
    )
    with kernel_nb.interpret(strategy="auto") as session:
        _accumulate_then_branch[(programs,)](x, out, flag, BLOCK=block)
    assert session.trace[0].strategy == "batched" and undone
    np.testing.assert_array_equal(out, (1 + x) * np.repeat(np.where(flag > 0, 2, 1), block))
