"""A launch's summaries stay within Options.summary_bytes: past it, per-statement aggregates."""

import gc
import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from bench import memory_kernels as mk
from kernel_nb.errors import LaunchInterrupted
from kernel_nb.trace import Aggregate, DeferredSummaries, GatheredRows, Summary
from kernel_nb.trace.aggregates import held_bytes
from tests.engine import kernels as k

N, BLOCK = 64 * 128, 128


def _launch(**options):
    x, y = np.arange(N, dtype=np.float32), np.ones(N, np.float32)
    out = np.zeros(N, np.float32)
    with kernel_nb.interpret(**options) as session:
        k.add_kernel[(N // BLOCK,)](x, y, out, N, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x + y)
    return session.trace


def test_programs_past_the_summary_bytes_keep_aggregates_and_replay_when_looked_at():
    whole = _launch()[0]
    records = len(whole.programs[(0, 0, 0)].records)
    trace = _launch(summary_bytes=12 * held_bytes(records), budget_bytes=0)
    launch = trace[0]
    assert len(launch.programs) == 12 and launch.aggregated == 52
    assert launch.summary_bytes <= 12 * held_bytes(records)
    # the aggregates are the folded summaries of the programs that were not held
    for stmt, aggregate in launch.aggregates.items():
        expected = Aggregate(stmt)
        for pid in sorted(whole.programs, key=whole.linear)[12:]:
            for record in whole.programs[pid].records:
                if record.stmt == stmt:
                    expected.add(record.summary)
        assert aggregate == expected
    # an aggregated program is replayed from the inputs
    np.testing.assert_array_equal(launch.value(40, "x"), np.arange(40 * BLOCK, 41 * BLOCK, dtype=np.float32))
    assert launch.summary_row()["programs"] == 64
    assert trace.summary().splitlines()[2] == (
        "  [info] add_kernel: 52 of 64 programs kept per-statement aggregates only (past "
        "Options.summary_bytes); program(pid) replays one"
    )


def test_summaries_of_many_programs_stay_within_the_bytes():
    launch = _launch(summary_bytes=100_000, budget_bytes=0)[0]
    records = sum(len(p.records) for p in launch.programs.values())
    assert held_bytes(0) * len(launch.programs) + (held_bytes(1) - held_bytes(0)) * records <= 100_000
    assert len(launch.programs) + launch.aggregated == 64


def _noop_memory(programs, **options):
    """Bytes held after, and at most during, a launch of a kernel that records its argument only."""
    x = np.zeros(1, np.float32)
    gc.collect()
    tracemalloc.start()
    try:
        with kernel_nb.interpret(**options) as session:
            mk.noop_kernel[(programs,)](x)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return session.trace[0], held, peak


def test_a_launch_of_four_times_the_programs_holds_no_more():
    small, small_held, small_peak = _noop_memory(5000, summary_bytes=100 * held_bytes(1))
    large, large_held, large_peak = _noop_memory(20000, summary_bytes=100 * held_bytes(1))
    assert len(small.programs) == len(large.programs) == 100
    assert (small.aggregated, large.aggregated) == (4900, 19900)
    assert large_held < 2 * small_held + (256 << 10)
    assert large_peak < 2 * small_peak + (256 << 10)


@pytest.mark.parametrize("order", ["serial", "reverse", "shuffle"])
def test_an_interrupt_ends_the_largest_grid_with_its_programs_bounded(order):
    x = np.arange(4, dtype=np.float32)

    def interrupt(done, total):
        assert total == 2**31 - 1
        if done >= 3000:
            raise KeyboardInterrupt

    tracemalloc.start()
    try:
        with (
            pytest.raises(LaunchInterrupted) as raised,
            kernel_nb.interpret(order=order, progress=interrupt, summary_bytes=500 * held_bytes(1)),
        ):
            mk.noop_kernel[(2**31 - 1,)](x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    launch = raised.value.launch
    assert launch is not None and launch.status == "interrupted"
    assert len(launch.programs) <= 500
    assert peak < 16 << 20
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32))


def test_summaries_equal_the_serial_ones_where_the_budget_keeps_some_programs_of_a_batch():
    # the kept programs' summaries are made from their kept values when read, the others' as
    # the batch runs: NaN and Inf in a kept program and in a cut one
    n, block = 1 << 16, 256
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    x[[5000, 5001]], x[5100], x[60000], x[60300] = np.nan, np.inf, np.nan, -np.inf
    launches = {}
    for strategy in ("auto", "serial"):
        out = np.zeros(n, np.float32)
        with kernel_nb.interpret(budget_bytes=300_000, strategy=strategy) as session:
            k.add_kernel[(n // block,)](x, y, out, n, BLOCK=block)
        launches[strategy] = session.trace[0]
    batched, serial = launches["auto"], launches["serial"]
    assert batched.strategy == "batched"
    kept = [pid for pid, p in batched.programs.items() if p.kept]
    assert (19, 0, 0) in kept and (234, 0, 0) not in kept and 0 < len(kept) < n // block
    assert kept == [pid for pid, p in serial.programs.items() if p.kept]
    for pid in serial.programs:
        got = [(r.stmt, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.summary) for r in serial.programs[pid].records], pid
    [x_record] = batched.records(19, name="x")
    assert (x_record.summary.nan, x_record.summary.inf) == (2, 1)


def test_summaries_of_loaded_inputs_wait_until_read_in_programs_the_budget_cuts(strategy):
    # a load's tile is a view of the launch's read-only inputs, which replays keep anyway: its
    # summaries need not be made while the launch runs, kept or not
    if strategy == "serial":
        pytest.skip("the batched strategy's summary columns")
    trace = _launch(budget_bytes=0)
    launch = trace[0]
    assert launch.strategy == "batched"
    program = launch.programs[(40, 0, 0)]
    assert not program.kept
    waiting = [
        b.stmt
        for b in program.records.blocks
        if isinstance(b.summaries, DeferredSummaries) and b.summaries._columns is None
    ]
    names = {s.name for i, s in enumerate(launch.statements) if i in waiting}
    assert {"x", "y"} <= names
    [x_record] = launch.records(40, name="x")
    assert x_record.summary == Summary.of(np.arange(40 * BLOCK, 41 * BLOCK, dtype=np.float32))


@triton.jit
def _ragged_rows(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, pid + 1):  # each program runs as many iterations as its id and one
        acc += tl.load(x_ptr + i * BLOCK + lanes) * 2.0
    tl.store(out_ptr + pid * BLOCK + lanes, acc)


def test_loop_summaries_equal_the_serial_ones_where_the_budget_cuts_inside_the_batch(strategy):
    # a loop whose programs run different trip counts (its iterations hold the programs still
    # running), with NaN and Inf, where the budget keeps the first programs of the batch only
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    programs, block = 48, 256
    rng = np.random.default_rng(2)
    x = rng.standard_normal(programs * block, dtype=np.float32)
    x[3 * block + 7], x[3 * block + 9], x[40 * block] = np.nan, np.inf, -np.inf
    launches = {}
    for strategy in ("auto", "serial"):
        out = np.zeros_like(x)
        with kernel_nb.interpret(budget_bytes=200_000, strategy=strategy) as session:
            _ragged_rows[(programs,)](x, out, BLOCK=block)
        np.testing.assert_array_equal(
            out, np.cumsum(x.reshape(programs, block) * 2, axis=0, dtype=np.float32).reshape(-1)
        )
        launches[strategy] = session.trace[0]
    batched, serial = launches["auto"], launches["serial"]
    assert batched.strategy == "batched"
    kept = [pid for pid, p in batched.programs.items() if p.kept]
    assert 3 < len(kept) < programs // 2
    assert kept == [pid for pid, p in serial.programs.items() if p.kept]
    for pid in serial.programs:
        got = [(r.stmt, r.iteration, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.iteration, r.summary) for r in serial.programs[pid].records], pid
    acc = [r.summary for r in batched.records(5, name="acc")]
    assert (acc[-1].nan, acc[-1].inf) == (1, 1)


def test_values_holding_inf_and_minus_inf_are_summarised_without_a_warning(strategy):
    # a program's value with both infinities: numpy's mean of it would warn (Inf - Inf) into the
    # user's cell, and where warnings are errors, a batch would stop and run serially
    programs, block = 8, 256
    x = np.ones(programs * block, np.float32)
    x[7], x[block + 9] = np.inf, -np.inf
    out = np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # summarised as it runs (a budget that keeps the first program only), and when read
        with kernel_nb.interpret(strategy=strategy, budget_bytes=4096) as session:
            _ragged_rows[(programs,)](x, out, BLOCK=block)
        launch = session.trace[0]
        summaries = [r.summary for pid in range(programs) for r in launch.records(pid, name="acc")]
    assert launch.strategy == ("serial" if strategy == "serial" else "batched")
    last = summaries[-1]
    assert (last.nan, last.inf) == (0, 2) and last.min == last.max == 2 * programs


def test_summaries_of_integer_tiles_equal_the_serial_ones_near_the_top_of_int32(strategy):
    # `pid * BLOCK + tl.arange` is summarised from its tile form, not lane by lane: the same
    # summaries as the serial strategy's, where int32 offsets reach 2**31 - 1
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    block = 1 << 12
    programs = 24
    start = (1 << 31) - programs * block
    launches = {}
    for strategy in ("auto", "serial"):
        out = np.zeros(programs * block, np.int32)
        with kernel_nb.interpret(strategy=strategy) as session:
            _offsets_from[(programs,)](out, start, BLOCK=block)
        np.testing.assert_array_equal(out, np.arange(start, 1 << 31, dtype=np.int64).astype(np.int32))
        launches[strategy] = session.trace[0]
    batched, serial = launches["auto"], launches["serial"]
    assert batched.strategy == "batched"
    for pid in serial.programs:
        got = [(r.stmt, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.summary) for r in serial.programs[pid].records], pid
    [last] = batched.records(programs - 1, name="offsets")
    assert (last.summary.min, last.summary.max) == ((1 << 31) - block, (1 << 31) - 1)


@triton.jit
def _offsets_from(out_ptr, start, BLOCK: tl.constexpr):
    offsets = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), offsets)


def test_tiles_loaded_from_the_inputs_are_kept_as_their_places(strategy):
    # matmul's a and b tiles are copies of the launch's read-only inputs: kept programs keep their
    # places in the inputs, not copies, and every program's summaries wait until read; what a
    # reader gets (values, summaries, events, the NaN a load brings in) is the serial strategy's
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    m, block = 128, 32
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((m, m), dtype=np.float32), rng.standard_normal((m, m), dtype=np.float32)
    a[70, 5] = np.nan
    launches = {}
    for run in ("auto", "serial"):
        c = np.zeros((m, m), np.float32)
        with kernel_nb.interpret(budget_bytes=300_000, strategy=run) as session:
            k.matmul_kernel[(m // block, m // block)](
                a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=block, BLOCK_N=block, BLOCK_K=block
            )
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
        launches[run] = session.trace[0]
    batched, serial = launches["auto"], launches["serial"]
    assert batched.strategy == "batched"
    kept = [pid for pid, p in batched.programs.items() if p.kept]
    assert 0 < len(kept) < len(batched.programs)
    assert kept == [pid for pid, p in serial.programs.items() if p.kept]
    tiles = [
        blk.summaries
        for pid in (kept[0], (3, 3, 0))
        for blk in batched.programs[pid].records.blocks
        if isinstance(blk.values, GatheredRows)
        or isinstance(getattr(blk.summaries, "waiting", None), GatheredRows)
    ]
    assert tiles and all(s.waiting is not None for s in tiles)  # none summarised yet
    for pid, program in serial.programs.items():
        for got, want in zip(batched.programs[pid].records, program.records, strict=True):
            assert (got.stmt, got.iteration, got.summary) == (want.stmt, want.iteration, want.summary)
            assert (got.value is None) == (want.value is None)
            if want.value is not None:
                np.testing.assert_array_equal(got.value, want.value)
        for got, want in zip(batched.programs[pid].events, program.events, strict=True):
            for field in ("values", "mask", "indices"):
                mine, theirs = getattr(got, field), getattr(want, field)
                assert (mine is None) == (theirs is None), field
                if theirs is not None:
                    np.testing.assert_array_equal(mine, theirs)
    assert [(f.kind, f.pid, f.line, f.message) for f in batched.findings] == [
        (f.kind, f.pid, f.line, f.message) for f in serial.findings
    ]
    assert [f.pid for f in batched.findings if f.kind == "nan_origin"] == [(2, 0, 0)]


def test_gathered_rows_are_saved_as_the_values_they_stand_for():
    source = np.arange(100, dtype=np.float32)
    source.flags.writeable = False
    rows = GatheredRows(source, np.array([0, 10, 50]), np.array([0, 1, 20, 21]), (2, 2))
    np.testing.assert_array_equal(rows[1], [[10, 11], [30, 31]])
    np.testing.assert_array_equal(rows.rows(np.array([2]))[0], [[50, 51], [70, 71]])
    saved = pickle.loads(pickle.dumps(rows))
    assert isinstance(saved, np.ndarray) and saved.shape == (3, 2, 2)
    np.testing.assert_array_equal(saved, [rows[i] for i in range(3)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_rows_holding_nan_or_inf_are_told_from_rows_whose_sum_overflows(dtype):
    big = np.finfo(dtype).max
    rows = np.ones((6, 300), dtype)
    rows[1, 17] = np.nan
    rows[2, 299] = np.inf
    rows[3, 0] = -np.inf
    rows[3, 5] = np.inf  # Inf and -Inf: a NaN sum
    rows[4, :] = big  # finite, the sum past the type's range
    rows[5, :2] = (big, -big)  # finite, a sum that may overflow on the way
    has_nan, has_inf = DeferredSummaries(rows).nonfinite()
    assert has_nan.tolist() == [False, True, False, False, False, False]
    assert has_inf.tolist() == [False, False, True, True, False, False]
    with np.errstate(all="ignore"):
        want = [Summary.of(row) for row in rows]
    assert [s.nan > 0 for s in want] == has_nan.tolist() and [s.inf > 0 for s in want] == has_inf.tolist()
