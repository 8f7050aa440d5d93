"""The capture budget cuts a batch's programs as soon as the loops they are in make the cut certain
(batched/loops_ahead.py), and never a program the serial strategy keeps."""

import dis
import types

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine.rewrite import rewrite


def _entered(fn):
    """What each loop of the rewritten `fn` passes to the probe's loop_enter, in order: the names
    of the statements it says each of its iterations records."""
    made = rewrite(fn, instrument=True)
    [code] = [c for c in made.code.co_consts if isinstance(c, types.CodeType)]
    entered, calling = [], False
    for instruction in dis.get_instructions(code):
        if instruction.argval == "loop_enter":
            calling = True
            entered.append(())
        elif calling and instruction.opname == "LOAD_CONST" and isinstance(instruction.argval, tuple):
            entered[-1] = instruction.argval
        elif instruction.opname.startswith("CALL"):
            calling = False
    return [sorted(made.statements[i].name for i in sites) for sites in entered]


def _looping(n):
    total = 0
    first = 0
    inner = 0
    for i in range(n):
        step = i * 2
        if i == 0:
            first = step + 1
        total += step
        for j in range(i):
            inner = j
    return total + first + inner


def _stopping(n):
    total = 0
    for i in range(n):
        if i == 3:
            break
        total += i
    return total


def test_a_loop_names_the_sites_at_the_top_of_its_body_and_no_others():
    # the loop's variable, `step` and `total`, not the `if`'s `first` nor the inner loop's `j`
    # and `inner` (an inner loop may not run); the inner loop: its own
    assert _entered(_looping) == [["i", "step", "total"], ["inner", "j"]]
    assert _entered(_stopping) == [[]]  # an iteration that may end early names none


@triton.jit
def _steps(x_ptr, out_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for _step in range(STEPS):
        acc = acc * 0.5 + 1.0
    tl.store(out_ptr + offs, acc)


@triton.jit
def _first_is_big(x_ptr, out_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    # iteration 0 records four times what the others do: a bound counting it in every iteration
    # would cut programs the serial strategy keeps
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for i in range(STEPS):
        if i == 0:
            wide = tl.load(x_ptr + pid * BLOCK + tl.arange(0, 4 * BLOCK) % BLOCK)
            acc += tl.sum(wide) * 0.0
        acc = acc * 0.5 + 1.0
    tl.store(out_ptr + offs, acc)


@triton.jit
def _first_has_inner(x_ptr, out_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    # the same through a loop inside the loop that runs in iteration 0 only
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for i in range(STEPS):
        for _once in range(1 - i):
            wide = tl.load(x_ptr + pid * BLOCK + tl.arange(0, 4 * BLOCK) % BLOCK)
            acc += tl.sum(wide) * 0.0
        acc = acc * 0.5 + 1.0
    tl.store(out_ptr + offs, acc)


@triton.jit
def _add_quarters(acc, n):
    for _quarter in range(n):
        acc = acc + 0.25
    return acc


@triton.jit
def _ragged(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # a masked loop (a trip count per program) calling a helper whose loop does not run in its
    # first iteration
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs)
    for i in range(pid % 7 + 1):
        acc = _add_quarters(acc * 0.5 + 1.0, i)
    tl.store(out_ptr + offs, acc)


def _launch(kernel, strategy, budget, programs, block, **constants):
    x = np.linspace(0, 1, programs * block, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret(budget_bytes=budget, strategy=strategy) as session:
        kernel[(programs,)](x, out, BLOCK=block, **constants)
    return session.trace[0], out


@pytest.mark.parametrize(
    "kernel, constants",
    [
        (_steps, {"STEPS": 24}),
        (_first_is_big, {"STEPS": 24}),
        (_first_has_inner, {"STEPS": 24}),
        (_ragged, {}),
    ],
    ids=["steps", "first_is_big", "first_has_inner", "ragged"],
)
@pytest.mark.parametrize("budget", [64 << 10, 300 << 10, 1 << 20])
def test_the_batch_keeps_the_programs_the_serial_strategy_keeps(kernel, constants, budget, strategy):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    programs, block = 48, 256
    batched, out = _launch(kernel, "auto", budget, programs, block, **constants)
    serial, expected = _launch(kernel, "serial", budget, programs, block, **constants)
    assert batched.strategy == "batched"
    np.testing.assert_array_equal(out, expected)
    kept = [pid for pid, p in batched.programs.items() if p.kept]
    assert 0 < len(kept) < programs
    assert kept == [pid for pid, p in serial.programs.items() if p.kept]
    assert batched.kept_bytes == serial.kept_bytes
    for pid in kept[-2:]:
        got = [(r.stmt, r.iteration, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.iteration, r.summary) for r in serial.programs[pid].records]


def test_a_loop_copies_the_values_of_about_the_programs_it_keeps(strategy, copies):
    # 64 programs of 128 iterations; the budget keeps 8. Not knowing what the loop will record,
    # the batch would copy the values of every program it still keeps at each iteration and cut
    # them one by one as their bytes grow (33 MiB copied for 4.3 MiB kept); knowing it, it keeps
    # the 8 from the second iteration on
    if strategy == "serial":
        pytest.skip("measures the batched strategy")
    launch, _ = _launch(_steps, "auto", 4 << 20, 64, 1024, STEPS=128)
    assert launch.strategy == "batched"
    assert sum(p.kept for p in launch.programs.values()) == 8
    assert sum(c.nbytes for c in copies) < 1.25 * launch.kept_bytes
