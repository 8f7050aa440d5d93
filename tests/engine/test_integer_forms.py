"""Integer blocks one tile per program (`pid * BLOCK + tl.arange(0, BLOCK)`) are held as their form
by the batched strategy: no value per lane is made for the offsets, their comparisons with one
value per program, their pointer arithmetic and their records; every value a kernel computes from
them, and every record, is what the serial strategy gives."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine.batched import builder, tiles


@pytest.fixture
def made(monkeypatch):
    """The shapes of the FormIntegers whose values something asked for, in order."""
    shapes = []
    original = tiles.FormIntegers.data

    def data(self):
        if self._data is None:
            shapes.append(self._shape)
        return original.fget(self)

    monkeypatch.setattr(tiles.FormIntegers, "data", property(data, original.fset))
    return shapes


@triton.jit
def _offsets_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + 1.0, mask=mask)


def _run(kernel, grid, *args, strategy, **meta):
    with kernel_nb.interpret(strategy=strategy) as session:
        kernel[grid](*args, **meta)
    return session.trace[0]


def test_offsets_make_no_value_per_lane_and_record_what_the_serial_strategy_records(made, strategy):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    n, block = 1000, 64
    x = np.arange(n, dtype=np.float32)
    out_batched, out_serial = np.zeros_like(x), np.zeros_like(x)
    batched = _run(_offsets_kernel, (16,), x, out_batched, n, BLOCK=block, strategy="auto")
    assert batched.strategy == "batched"
    assert made == []  # the offsets, their mask, the pointers, the records: all from the form
    serial = _run(_offsets_kernel, (16,), x, out_serial, n, BLOCK=block, strategy="serial")
    np.testing.assert_array_equal(out_batched, x + 1)
    np.testing.assert_array_equal(out_batched, out_serial)
    for pid in ((0, 0, 0), (7, 0, 0), (15, 0, 0)):
        offsets = batched.value(pid, "offsets")
        assert offsets.dtype == serial.value(pid, "offsets").dtype == np.int32
        np.testing.assert_array_equal(offsets, pid[0] * block + np.arange(block))
        np.testing.assert_array_equal(batched.value(pid, "mask"), serial.value(pid, "mask"))
        got = [(r.stmt, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.summary) for r in serial.programs[pid].records]
        assert [e.mask.sum() for e in batched.programs[pid].events] == [
            e.mask.sum() for e in serial.programs[pid].events
        ]
    assert batched.kept_bytes == serial.kept_bytes


@triton.jit
def _derived_kernel(out_ptr, n, limit, BLOCK: tl.constexpr, KIND: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    if KIND == 0:
        value = (n > offsets).to(tl.int32)  # the form on the right
    elif KIND == 1:
        value = (offsets == limit).to(tl.int32) + 2 * (offsets != limit + 1).to(tl.int32)
    elif KIND == 2:
        value = ((offsets >= limit) & (offsets <= n)).to(tl.int32)
    elif KIND == 3:
        value = offsets * 3 - 7  # scaled, then made by the subtraction
    elif KIND == 4:
        value = offsets % 5  # made: not a form
    elif KIND == 5:
        value = (offsets < pid * 10).to(tl.int32)  # one value per program, not one for all
    else:
        wide = offsets[:, None] + tl.zeros([BLOCK, 2], dtype=tl.int32)  # a shape changed lazily
        value = tl.sum(wide, axis=1)
    tl.store(out_ptr + offsets, value, mask=offsets < n)


@pytest.mark.parametrize("kind", range(7))
def test_values_computed_from_offsets_are_the_serial_strategys(kind, made, strategy):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    n, block = 500, 32
    outs = {}
    for run in ("auto", "serial"):
        out = np.full(16 * block, -1, np.int32)
        launch = _run(_derived_kernel, (16,), out, n, 77, BLOCK=block, KIND=kind, strategy=run)
        outs[run] = out
        if run == "auto":
            assert launch.strategy == "batched"
            # comparisons with one value for all or per program stay with the form; arithmetic
            # other than + and * by one value makes the values
            assert (made == []) == (kind in (0, 1, 2, 5))
            batched = launch
        else:
            serial = launch
    np.testing.assert_array_equal(outs["auto"], outs["serial"])
    for pid in ((0, 0, 0), (3, 0, 0), (15, 0, 0)):
        np.testing.assert_array_equal(batched.value(pid, "value"), serial.value(pid, "value"))
        np.testing.assert_array_equal(batched.value(pid, "offsets"), serial.value(pid, "offsets"))


@triton.jit
def _wrapping_kernel(out_ptr, base, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = base + pid * BLOCK + tl.arange(0, BLOCK)  # wraps around int32 in the last programs
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), (offsets < 0).to(tl.int32))


def test_offsets_that_wrap_around_are_made_as_the_interpreter_makes_them(strategy):
    block, programs = 16, 4
    base = 2**31 - 2 * block - 5
    out = np.zeros(programs * block, np.int32)
    with kernel_nb.interpret(strategy=strategy, detect=False) as session:
        _wrapping_kernel[(programs,)](out, base, BLOCK=block)
    wrapped = (base + np.arange(programs * block, dtype=np.int64) + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(out, (wrapped < 0).astype(np.int32))
    got = session.trace[0].value((3, 0, 0), "offsets")
    np.testing.assert_array_equal(got, wrapped[3 * block :].astype(np.int32))


@triton.jit
def _bounds_kernel(out_ptr, lo, hi, BLOCK: tl.constexpr, KIND: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    if KIND == 0:
        inside = offsets < hi
    elif KIND == 1:
        inside = hi > offsets  # the form on the right
    elif KIND == 2:
        inside = offsets >= lo
    else:
        inside = offsets <= hi
    tl.store(out_ptr + offsets, inside.to(tl.int32) + 1, mask=inside)


@pytest.fixture
def comparisons(monkeypatch):
    """The values of the comparisons the batched builder made from a form, in order."""
    made = []
    original = builder.formed_comparison

    def spy(lhs, rhs, op):
        result = original(lhs, rhs, op)
        if result is not None:
            made.append(result.data)
        return result

    monkeypatch.setattr(builder, "formed_comparison", spy)
    return made


@pytest.mark.parametrize("kind", range(4))
@pytest.mark.parametrize(("lo", "hi"), [(0, 1 << 20), (-5, -1), (0, 100), (37, 128)])
def test_a_bound_every_lane_or_no_lane_meets_is_one_value_for_the_block(kind, lo, hi, comparisons, strategy):
    if strategy == "serial":
        pytest.skip("compares the strategies itself")
    block, programs = 32, 4
    outs, launches = {}, {}
    for run in ("auto", "serial"):
        outs[run] = np.full(programs * block, -1, np.int32)
        with kernel_nb.interpret(strategy=run) as session:
            _bounds_kernel[(programs,)](outs[run], lo, hi, BLOCK=block, KIND=kind)
        launches[run] = session.trace[0]
    batched, serial = launches["auto"], launches["serial"]
    assert batched.strategy == "batched"
    np.testing.assert_array_equal(outs["auto"], outs["serial"])
    offsets = np.arange(programs * block)
    want = [offsets < hi, hi > offsets, offsets >= lo, offsets <= hi][kind]
    np.testing.assert_array_equal(outs["auto"], np.where(want, 2, -1))
    for pid in ((p, 0, 0) for p in range(programs)):
        np.testing.assert_array_equal(batched.value(pid, "inside"), serial.value(pid, "inside"))
        got = [(r.stmt, r.summary) for r in batched.programs[pid].records]
        assert got == [(r.stmt, r.summary) for r in serial.programs[pid].records]
        (event,) = batched.programs[pid].events
        assert event.active == int(want[pid[0] * block : (pid[0] + 1) * block].sum())
    assert batched.kept_bytes == serial.kept_bytes
    # where every lane of every program agrees, no byte per lane is made: the mask is one value,
    # and so is every store's mask kept
    one_value = bool(want.all() or not want.any())
    assert len(comparisons) == 1
    assert (comparisons[0].strides == (0, 0)) == one_value
    if want.all():
        assert all(batched.programs[(p, 0, 0)].events[0].mask.strides == (0,) for p in range(programs))
        # also where the budget keeps some programs only, and their rows are taken from the batch's
        with kernel_nb.interpret(budget_bytes=1) as session:
            _bounds_kernel[(programs,)](np.zeros_like(outs["auto"]), lo, hi, BLOCK=block, KIND=kind)
        first = session.trace[0].programs[(0, 0, 0)]
        assert first.kept and not session.trace[0].programs[(1, 0, 0)].kept
        assert first.events[0].mask.strides == (0,) and first.events[0].mask.all()
