"""The fp64 shadow on every scenario of the strategy tests: it leaves the real run as it is (outputs,
records, strategy), and the serial and batched strategies compute the same shadow."""

import numpy as np
import pytest

import kernel_nb
from kernel_nb.trace import COMPANION_KINDS
from tests.engine import test_strategies as scenarios


def _run(name, strategy, shadow, **options):
    make, launch, _ = scenarios.SCENARIOS[name]
    scenarios.rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrays = make()
    with kernel_nb.interpret(strategy=strategy, shadow=shadow, **options) as session:
        launch(arrays)
    return arrays, session.trace[0]


def _records(launch, companions):
    """Per program, its records as (place, iteration, dtype, shape, summary, value): companions or not."""
    out = {}
    for pid, program in launch.programs.items():
        rows = []
        for r in program.records:
            s = launch.statements[r.stmt]
            if (s.kind in COMPANION_KINDS) != companions:
                continue
            rows.append(((s.function, s.line, s.name, s.kind), r.call_path, r.iteration, r.dtype, r.shape, r))
        out[pid] = rows
    return out


def _bytes(array):
    return np.ascontiguousarray(array).view(np.uint8)


@pytest.fixture(autouse=True)
def _once(strategy):
    if strategy == "serial":
        pytest.skip("runs both strategies itself")


@pytest.mark.parametrize("name", sorted(scenarios.SCENARIOS))
def test_the_shadow_leaves_the_real_run_as_it_is_and_both_strategies_agree(name, capsys):
    plain_arrays, plain = _run(name, "auto", None)
    runs = {strategy: _run(name, strategy, "fp64") for strategy in ("auto", "serial")}
    arrays, auto = runs["auto"]
    _, serial = runs["serial"]
    assert auto.strategy == plain.strategy, auto.strategy_note
    for before, after in zip(plain_arrays, arrays):
        assert np.array_equal(_bytes(before), _bytes(after))
    real, shadowed = _records(plain, False), _records(auto, False)
    assert real.keys() == shadowed.keys()
    for pid in real:
        assert [row[:5] for row in real[pid]] == [row[:5] for row in shadowed[pid]], pid
        for a, b in zip(real[pid], shadowed[pid]):
            assert a[5].summary == b[5].summary or np.isnan(a[5].summary.mean)
            if a[5].value is not None and b[5].value is not None:
                assert np.array_equal(_bytes(a[5].value), _bytes(b[5].value))
    # the two strategies' shadows
    assert auto.references.keys() == serial.references.keys()
    for buffer, reference in auto.references.items():
        assert np.array_equal(reference, serial.references[buffer], equal_nan=True), buffer
    a_comp, s_comp = _records(auto, True), _records(serial, True)
    assert a_comp.keys() == s_comp.keys()
    for pid in a_comp:
        assert [row[:5] for row in a_comp[pid]] == [row[:5] for row in s_comp[pid]], pid
        for a, s in zip(a_comp[pid], s_comp[pid]):
            if a[5].value is not None and s[5].value is not None:
                assert np.array_equal(a[5].value, s[5].value, equal_nan=True), (pid, a[0])
    # every statement's largest errors, over every program
    assert auto.errors == serial.errors
    assert [(f.kind, f.line) for f in auto.findings] == [(f.kind, f.line) for f in serial.findings]


@pytest.mark.parametrize(
    "name", ["flash_attention", "masked_loop", "nested_masked_loops", "tuple_in_masked_loop"]
)
def test_a_budget_that_keeps_some_programs_keeps_their_companions_alone(name):
    """Masked and narrowed loops where the budget keeps only the first programs: the companions
    are recorded for those, the batch is not given up, and the errors still count every program."""
    budget = 6 << 10
    plain_arrays, plain = _run(name, "auto", None, budget_bytes=budget)
    arrays, auto = _run(name, "auto", "fp64", budget_bytes=budget)
    _, serial = _run(name, "serial", "fp64", budget_bytes=budget)
    assert auto.strategy == plain.strategy == "batched", auto.strategy_note
    for before, after in zip(plain_arrays, arrays):
        assert np.array_equal(_bytes(before), _bytes(after))
    kept = [pid for pid, p in auto.programs.items() if p.kept]
    assert 0 < len(kept) < len(auto.programs)
    companions = {s.id for s in auto.statements if s.kind in COMPANION_KINDS}
    for pid, program in auto.programs.items():
        made = [r for r in program.records if r.stmt in companions]
        if pid in kept:
            assert made and all(r.value is not None for r in made), pid
        else:  # cut while its batch ran: the summaries of what it recorded until then, no values
            assert all(r.value is None for r in made), pid
    assert auto.errors == serial.errors
    for pid in (p for p in kept if serial.programs[p].kept):
        a, s = _records(auto, True)[pid], _records(serial, True)[pid]
        assert [row[:5] for row in a] == [row[:5] for row in s], pid
