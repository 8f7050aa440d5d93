"""The budget picks the programs the serial strategy keeps, by the bytes that strategy holds; a batch
whose arrays, every program's rows, fit the budget in memory holds them as they are, copying no
program's rows, and one that outgrows it copies the kept programs' rows and lets the others go."""

import gc
import tracemalloc

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from tests.engine import kernels as k


def _matmul(m, budget, strategy, **options):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, m)).astype(np.float32), rng.standard_normal((m, m)).astype(np.float32)
    c = np.zeros((m, m), np.float32)
    gc.collect()
    tracemalloc.start()
    try:
        with kernel_nb.interpret(budget_bytes=budget, strategy=strategy, **options) as session:
            k.matmul_kernel[(m // 32, m // 32)](
                a, b, c, m, m, m, m, 1, m, 1, m, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32
            )
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return session.trace[0], a, b, held


def test_a_batch_that_fits_the_budget_in_memory_copies_no_rows_and_keeps_the_serial_programs(
    strategy, copies
):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    # 64 programs of 8 iterations: the serial strategy's bytes (8 a lane for the pointer tiles and
    # the loads' indices, a load's values for its event and its record) are about twice the
    # budget, what the batch's arrays take is a fraction of it
    budget = 8 << 20
    batched, a, b, held = _matmul(256, budget, "auto")
    serial, _, _, _ = _matmul(256, budget, "serial")
    nothing = _matmul(256, 0, "auto")[3]  # the inputs' copies and the summaries
    assert batched.strategy == "batched"
    kept = [pid for pid, p in batched.programs.items() if p.kept]
    assert 0 < len(kept) < 64
    assert kept == [pid for pid, p in serial.programs.items() if p.kept]
    assert batched.kept_bytes == serial.kept_bytes > budget
    assert copies == []  # every array as the operations made it
    # every program's rows of those arrays: 13 MiB for a 512 x 512 matmul in 64 programs of 64 x 64
    assert held - nothing < budget / 2
    expected = a @ b
    for pid in (kept[0], kept[-1], (7, 7, 0)):  # kept, kept, replayed
        acc = batched.value(pid, "acc", iteration=(7,))
        rows, cols = slice(pid[0] * 32, pid[0] * 32 + 32), slice(pid[1] * 32, pid[1] * 32 + 32)
        np.testing.assert_allclose(acc, expected[rows, cols], rtol=1e-4, atol=1e-4)
    for pid in kept[-2:]:
        got = [(r.stmt, r.iteration, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.iteration, r.summary) for r in serial.programs[pid].records]


def test_programs_the_user_picks_keep_copies_of_their_rows_not_the_batch_arrays(strategy):
    if strategy == "serial":
        pytest.skip("measures the batched strategy")
    # every program's rows would fit the budget, but one program's values, copied, take far less
    picked = (3, 5, 0)
    launch, a, b, held = _matmul(256, 8 << 20, "auto", pids=(picked,))
    nothing = _matmul(256, 0, "auto")[3]
    assert launch.strategy == "batched"
    assert [pid for pid, p in launch.programs.items() if p.kept] == [picked]
    # its values and their bookkeeping, about 1.2 MiB; the batch's arrays, held, added 2.7 MiB more
    assert held - nothing < (2 << 20)
    acc = launch.value(picked, "acc", iteration=(7,))
    np.testing.assert_allclose(acc, (a @ b)[96:128, 160:192], rtol=1e-4, atol=1e-4)


@triton.jit
def _straight(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x * 2.0
    b = a + 1.0
    c = b * b
    d = c - x
    e = d * 0.5
    f = e + a
    g = f * f
    h = g - b
    tl.store(out_ptr + offs, h)


def _straight_launch(x, programs, block, budget, strategy):
    out = np.zeros_like(x)
    gc.collect()
    tracemalloc.start()
    try:
        with kernel_nb.interpret(budget_bytes=budget, strategy=strategy) as session:
            _straight[(programs,)](x, out, BLOCK=block)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return session.trace[0], out, held


def test_a_batch_that_outgrows_the_budget_in_memory_keeps_the_serial_programs_within_twice_it(strategy):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    # no loop to foresee the batch's size by: the budget cuts programs while the arrays fit it,
    # then the arrays outgrow it (each statement's rows take 1 MiB), and the kept programs' rows
    # are copied from then on
    programs, block, budget = 64, 4096, 1 << 20
    x = np.linspace(-1, 1, programs * block, dtype=np.float32)
    launch, out, held = _straight_launch(x, programs, block, budget, "auto")
    serial = _straight_launch(x, programs, block, budget, "serial")[0]
    nothing = _straight_launch(x, programs, block, 0, "auto")[2]  # the inputs' copies, the summaries
    assert launch.strategy == "batched"
    kept = [pid for pid, p in launch.programs.items() if p.kept]
    assert 0 < len(kept) < programs
    assert kept == [pid for pid, p in serial.programs.items() if p.kept]
    assert held - nothing < 2 * budget  # at most twice the budget, as the serial strategy may
    a = x * np.float32(2.0)
    b = a + np.float32(1.0)
    c = b * b
    d = c - x
    e = d * np.float32(0.5)
    f = e + a
    g = f * f
    np.testing.assert_array_equal(out, g - b)
    for pid in (kept[-1], (programs - 1, 0, 0)):  # kept, then replayed
        rows = slice(pid[0] * block, (pid[0] + 1) * block)
        np.testing.assert_array_equal(launch.value(pid, "c"), c[rows])
        np.testing.assert_array_equal(launch.value(pid, "g"), g[rows])
