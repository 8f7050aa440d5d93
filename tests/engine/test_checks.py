"""Each detector: a kernel with the bug planted, and its clean twin, which must report nothing."""

import numpy as np
import pytest
import triton

import kernel_nb
from tests.engine import detector_kernels as dk
from tests.engine import kernels as k


def _line(kernel, text):
    """The file line of the kernel's first line containing `text`."""
    first = kernel.fn.__code__.co_firstlineno
    with open(kernel.fn.__code__.co_filename) as f:
        source = f.read().splitlines()
    return next(i for i in range(first, first + 40) if text in source[i - 1])


def _findings(launch, kind):
    return [f for f in launch.findings if f.kind == kind]


def test_nan_origin_is_the_statement_that_makes_it_not_its_carriers():
    x = np.linspace(-1, 1, 256, dtype=np.float32)  # negatives in the first half
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        dk.log_kernel[(2,)](x, out, 256, BLOCK=128)
    launch = session.trace[0]
    [finding] = launch.findings
    line = _line(dk.log_kernel, "y = tl.log(x)")
    assert (finding.kind, finding.severity, finding.line, finding.pid) == (
        "nan_origin",
        "error",
        line,
        (0, 0, 0),
    )
    assert finding.message == (
        f"log_kernel:{line} pid=(0,0,0): y becomes NaN here, from operands that hold no NaN: "
        "128 of 128 lanes [0, 1, 2, 3, 4, 5, ... 128 in all]"
    )
    assert finding.elements.tolist() == list(range(128))  # x < 0 in all of program 0; none in program 1


def test_nan_origin_clean_twin():
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    with kernel_nb.interpret() as session:
        dk.log_kernel_clean[(2,)](x, np.zeros_like(x), 256, BLOCK=128)
    assert session.trace[0].findings == []


def test_nan_from_a_fully_masked_row_is_traced_to_the_subtraction():
    x = np.ones((3, 16), np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        dk.masked_row_softmax[(3,)](x, out, 16, 0, BLOCK=16)  # no valid column: -inf - -inf
    [finding] = _findings(session.trace[0], "nan_origin")
    assert finding.line == _line(dk.masked_row_softmax, "shifted = scores - row_max")
    assert "(an Inf among them" in finding.message and "(in 3 programs; the first shown)" in finding.message
    assert np.isnan(out).all()
    with kernel_nb.interpret() as session:
        dk.masked_row_softmax[(3,)](x, out, 16, 5, BLOCK=16)
    assert session.trace[0].findings == []  # the deliberate -inf of tl.where is not a finding


def test_inf_origin():
    x = np.full(128, 2.0, np.float32)
    with kernel_nb.interpret() as session:
        dk.exp_kernel[(1,)](x, np.zeros_like(x), 128, SCALE=100.0, BLOCK=128)
    [finding] = session.trace[0].findings
    assert finding.kind == "inf_origin" and finding.line == _line(dk.exp_kernel, "e = tl.exp(")
    with kernel_nb.interpret() as session:
        dk.exp_kernel[(1,)](x, np.zeros_like(x), 128, SCALE=1.0, BLOCK=128)
    assert session.trace[0].findings == []


def test_int32_overflow_in_offset_arithmetic():
    out = np.zeros(1024, np.float32)
    with kernel_nb.interpret() as session:
        dk.scaled_offsets_kernel[(1,)](out, out, 1024, SCALE=4_000_000, BLOCK=1024)
    [finding] = session.trace[0].findings
    assert finding.kind == "int_overflow" and finding.line == _line(dk.scaled_offsets_kernel, "big = offs")
    # 537 * 4e6 is the first product past 2^31 - 1
    assert "int32 overflow in '*' in 487 lanes [537, 538" in finding.message
    with kernel_nb.interpret() as session:
        dk.scaled_offsets_kernel_clean[(1,)](out, out, 1024, SCALE=4_000_000, BLOCK=1024)
    assert session.trace[0].findings == []


def test_integer_division_by_zero():
    a = np.arange(16, dtype=np.int32)
    b = np.ones(16, np.int32)
    b[[3, 7]] = 0
    with kernel_nb.interpret() as session:
        dk.divide_kernel[(1,)](a, b, np.zeros_like(a), 16, BLOCK=16)
    [finding] = session.trace[0].findings
    assert finding.kind == "division_by_zero" and finding.elements.tolist() == [3, 7]
    with kernel_nb.interpret() as session:
        dk.divide_kernel[(1,)](a, np.ones_like(b), np.zeros_like(a), 16, BLOCK=16)
    assert session.trace[0].findings == []


def test_shift_by_the_bit_width():
    a = np.arange(16, dtype=np.int32)
    with kernel_nb.interpret() as session:
        dk.shift_kernel[(1,)](a, np.zeros_like(a), 16, SHIFT=32, BLOCK=16)
    [finding] = session.trace[0].findings
    assert (
        finding.kind == "shift_overflow" and "shift by 32 of a 32-bit integer in 16 lanes" in finding.message
    )
    with kernel_nb.interpret() as session:
        dk.shift_kernel[(1,)](a, np.zeros_like(a), 16, SHIFT=3, BLOCK=16)
    assert session.trace[0].findings == []


def test_write_write_race_between_programs():
    out = np.zeros(64, np.int32)
    with kernel_nb.interpret() as session:
        dk.racy_write_kernel[(3,)](out, BLOCK=64)
    [finding] = session.trace[0].findings
    assert finding.kind == "race_write" and finding.severity == "error"
    assert finding.pid == (1, 0, 0) and finding.arg == "out_ptr"
    assert "that program (0,0,0) also wrote, with a different value" in finding.message
    assert "(in 2 programs; the first shown)" in finding.message
    with kernel_nb.interpret() as session:
        dk.race_free_write_kernel[(3,)](np.zeros(192, np.int32), BLOCK=64)
    assert session.trace[0].findings == []


def test_read_after_another_programs_write_and_order_dependence():
    x = np.ones(4 * 32, np.float32)
    results = {}
    for order in ("serial", "reverse"):
        out = np.zeros_like(x)
        with kernel_nb.interpret(order=order) as session:
            dk.carry_kernel[(4,)](x, out, BLOCK=32)
        results[order] = out
        kinds = {f.kind for f in session.trace[0].findings}
        assert kinds == ({"race_read_after_write"} if order == "serial" else set())
    # the result depends on the order the programs run in: serial sums up, reverse does not
    assert results["serial"][-1] == 4 and results["reverse"][-1] == 1
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        dk.carry_kernel_clean[(4,)](x, out, BLOCK=32)
    assert session.trace[0].findings == []


def test_uncovered_elements():
    n = 1000
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with kernel_nb.interpret() as session:
        k.add_kernel[(n // 256,)](x, x, out, n, BLOCK=256)  # floor instead of cdiv: the tail is lost
    [finding] = session.trace[0].findings
    assert finding.kind == "uncovered" and finding.arg == "out_ptr"
    assert finding.message == (
        "add_kernel: out_ptr elements [768, 1000) (232 of 1000) were never written by the tl.store "
        "at kernels.py:14, though the launch wrote the rest of out_ptr; check the grid covers the whole "
        "buffer and the store mask's bound"
    )
    with kernel_nb.interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256),)](x, x, out, n, BLOCK=256)
    assert session.trace[0].findings == []


@pytest.mark.parametrize("how", ["poison()", "option"])
def test_uninitialised_reads(how):
    x = np.ones(100, np.float32)
    out = kernel_nb.poison(np.empty(100, np.float32)) if how == "poison()" else np.zeros(100, np.float32)
    options = {"poison": ("out_ptr",)} if how == "option" else {}
    with kernel_nb.interpret(**options) as session:
        dk.accumulate_kernel[(1,)](x, out, 100, BLOCK=128)
    kinds = [f.kind for f in session.trace[0].findings]
    assert "uninitialised_read" in kinds
    [finding] = _findings(session.trace[0], "uninitialised_read")
    assert finding.line == _line(dk.accumulate_kernel, "acc = tl.load(out_ptr")
    assert "before any program wrote them" in finding.message
    assert np.isnan(out).all()  # poison + 1 is still poison: the output shows it
    out = kernel_nb.poison(np.empty(100, np.float32))
    with kernel_nb.interpret() as session:
        dk.accumulate_kernel_clean[(1,)](x, out, 100, BLOCK=128)
    assert session.trace[0].findings == []
    np.testing.assert_array_equal(out, 2.0)


def test_detectors_can_be_switched_off():
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    with kernel_nb.interpret(detect=False) as session:
        dk.log_kernel[(1,)](x, np.zeros_like(x), 128, BLOCK=128)
    assert session.trace[0].findings == []


def test_findings_appear_in_the_summary():
    x = np.linspace(-1, 1, 128, dtype=np.float32)
    with kernel_nb.interpret() as session:
        dk.log_kernel[(1,)](x, np.zeros_like(x), 128, BLOCK=128)
    summary = session.trace.summary()
    assert "[error] log_kernel:" in summary and "y becomes NaN here" in summary
