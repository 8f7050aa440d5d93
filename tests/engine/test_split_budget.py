"""A batch whose programs disagree splits into groups that run in the order of their first
programs; the capture budget and the summary limit still go to the programs in program order, as
the serial strategy gives them."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb


@triton.jit
def _nested_trips(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # the inner loop's trip count differs between programs: the batch splits by pid % 7, and
    # group 0 (programs 0, 7, 14, ...) runs first
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for i in range(pid % 7 + 1):
        for j in range(i):
            acc = acc * 0.5 + j
    tl.store(out_ptr + offs, acc)


@triton.jit
def _nested_branches(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # a split inside a split: by pid % 2, then the even programs by pid % 3
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    if pid % 2 == 0:
        acc = acc * 2.0
        if pid % 3 == 0:
            for k in range(4):
                acc = acc + k
    else:
        acc = acc - 1.0
    tl.store(out_ptr + offs, acc)


def _launch(kernel, strategy, programs=48, block=256, **options):
    x = np.linspace(0, 1, programs * block, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(strategy=strategy, **options) as session:
        kernel[(programs,)](x, out, BLOCK=block)
    return session.trace[0], out


def _kept(launch):
    return [pid for pid, program in launch.programs.items() if program.kept]


@pytest.mark.parametrize("kernel", [_nested_trips, _nested_branches], ids=["trips", "branches"])
@pytest.mark.parametrize("budget", [16 << 10, 64 << 10, 200 << 10])
def test_a_split_batch_keeps_the_programs_the_serial_strategy_keeps(kernel, budget, strategy):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    batched, out = _launch(kernel, "auto", budget_bytes=budget)
    serial, expected = _launch(kernel, "serial", budget_bytes=budget)
    assert batched.strategy == "batched"
    np.testing.assert_array_equal(out, expected)
    kept = _kept(batched)
    assert 0 < len(kept) < len(batched.programs)
    assert kept == _kept(serial)
    assert batched.kept_bytes == serial.kept_bytes
    for pid in kept:
        got = [(r.stmt, r.iteration, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.iteration, r.summary) for r in serial.programs[pid].records]
        for mine, theirs in zip(batched.programs[pid].records, serial.programs[pid].records):
            np.testing.assert_array_equal(mine.value, theirs.value)


@pytest.mark.parametrize("kernel", [_nested_trips, _nested_branches], ids=["trips", "branches"])
@pytest.mark.parametrize("limit", [8000, 16000, 40000])
def test_a_split_batch_folds_the_programs_the_serial_strategy_folds(kernel, limit, strategy):
    # past Options.summary_bytes a program keeps aggregates only: which ones is decided in
    # program order, whichever group ran first
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    batched, _ = _launch(kernel, "auto", summary_bytes=limit)
    serial, _ = _launch(kernel, "serial", summary_bytes=limit)
    assert batched.strategy == "batched"
    assert 0 < batched.aggregated < 48
    assert sorted(batched.programs) == sorted(serial.programs)
    assert batched.aggregated == serial.aggregated
    assert batched.aggregate_text() == serial.aggregate_text()


@triton.jit
def _even_heavy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # the even programs (the group that runs first) record 16 iterations each, the odd ones one
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    if pid % 2 == 0:
        for _ in range(16):
            acc = acc * 0.5 + 1.0
    else:
        acc = acc + 1.0
    tl.store(out_ptr + offs, acc)


def test_a_group_copies_no_values_of_programs_the_groups_before_it_put_past_the_budget(strategy, copies):
    # the even programs reach the budget by program 14; the odd ones after that cannot be kept,
    # whatever they record: their group makes no copies of their values (counting the even
    # group's bytes alone, it copied 3.9 MB for 1.1 kept; now 2.2, the even group's rows copied
    # once when it ends and once more when the split does)
    if strategy == "serial":
        pytest.skip("measures the batched strategy")
    launch, _ = _launch(_even_heavy, "auto", programs=256, block=1024, budget_bytes=1 << 20)
    serial, _ = _launch(_even_heavy, "serial", programs=256, block=1024, budget_bytes=1 << 20)
    assert launch.strategy == "batched"
    kept = _kept(launch)
    assert kept == _kept(serial) and 4 < len(kept) < 32
    assert sum(c.nbytes for c in copies) < 2.5 * launch.kept_bytes
