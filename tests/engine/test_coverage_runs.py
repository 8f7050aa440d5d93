"""The elements a batched launch never wrote, told from the runs its stores put (RunPut.spans), are
the serial strategy's, which counts every element's writes."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.trace import buffer_map

COMPARES_STRATEGIES = True  # (see conftest.strategy)


@triton.jit
def _fill_kernel(out_ptr, start, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if EVEN:
        mask = mask & (offs % 2 == 0)
    tl.store(out_ptr + offs, 1.0, mask=mask)


@triton.jit
def _tile_kernel(out_ptr, stride, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    tl.store(out_ptr + rows[:, None] * stride + cols[None, :], 2.0)


def _fill(programs, n, even=False, start=0):
    def launch(out):
        _fill_kernel[(programs,)](out, start, n, BLOCK=64, EVEN=even)

    return launch, 1000


def _tiles(out):
    _tile_kernel[(4,)](out, 48, ROWS=8, COLS=32)  # 32 rows of 48, the first 32 columns written


CASES = {
    "every element": _fill(16, 1000),  # the last program's lanes past the end masked off
    "a grid that stops short": _fill(10, 1000),
    "a bound short of the buffer": _fill(16, 900),
    "the first elements left as they were": _fill(15, 1000, start=40),
    "every other element": _fill(16, 1000, even=True),  # runs with lanes off: single elements
    "a column band of a matrix": (_tiles, 32 * 48),
}


@pytest.fixture
def told_from_runs(monkeypatch):
    told = []
    original = buffer_map._never_put

    def spy(size, marks):
        missing = original(size, marks)
        told.append(missing is not None)
        return missing

    monkeypatch.setattr(buffer_map, "_never_put", spy)
    return told


@pytest.mark.parametrize("working_set", [64 << 20, 1 << 10], ids=["one batch", "many batches"])
@pytest.mark.parametrize("case", list(CASES))
def test_never_written_from_runs_is_the_serial_strategy_s(case, working_set, told_from_runs):
    launch, size = CASES[case]
    found = {}
    for strategy in ("auto", "serial"):
        out = np.zeros(size, np.float32)
        with kernel_nb.interpret(strategy=strategy, working_set_bytes=working_set) as session:
            launch(out)
        traced = session.trace[0]
        assert traced.status == "ok" and traced.strategy == ("batched" if strategy == "auto" else "serial")
        found[strategy] = traced.buffers["out_ptr"].never_written().tolist()
        if strategy == "serial":  # the writes the serial strategy counted are the array's
            assert found["serial"] == np.flatnonzero(out == 0).tolist()
    assert found["auto"] == found["serial"]
    assert told_from_runs and all(told_from_runs)  # the batched launch's answer came from its runs
