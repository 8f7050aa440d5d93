"""A load's or store's mask with every lane on is kept as one value, not a byte per lane: the
launch keeps less, and every program's events still read the mask they had."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb


@triton.jit
def _masked_copy(src, dst, n, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    offs = rows[:, None] * BLOCK + cols[None, :]
    inside = (rows[:, None] < n) & (cols[None, :] < BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=inside, other=0.0) * 2.0, mask=inside)


def _launch(n_rows, programs):
    block, rows = 64, 64
    src = np.arange(programs * rows * block, dtype=np.float32).reshape(-1, block)
    dst = np.full_like(src, -1.0)
    with kernel_nb.interpret() as session:
        _masked_copy[(programs,)](src, dst, n_rows, BLOCK=block, ROWS=rows)
    return session.trace[0], src, dst


@pytest.fixture(autouse=True)
def batched_only(strategy):
    if strategy == "serial":
        pytest.skip("the serial strategy keeps each program's mask as that program made it")


def test_all_on_masks_take_no_byte_per_lane_and_read_back_as_they_were():
    programs = 64
    launch, src, dst = _launch(programs * 64, programs)
    assert launch.strategy == "batched"
    np.testing.assert_array_equal(dst, src * 2)
    for pid in ((0, 0, 0), (programs - 1, 0, 0)):
        events = launch.programs[pid].events
        assert [e.kind for e in events] == ["load", "store"]
        for event in events:
            assert event.mask is not None and event.mask.shape == (64, 64) and event.mask.all()
            assert event.mask.strides == (0, 0)  # one value, not a byte per lane
            assert event.active == 64 * 64
        inside = launch.value(pid, "inside")
        assert inside.shape == (64, 64) and inside.all()


def test_a_mask_with_lanes_off_keeps_every_lane():
    launch, src, dst = _launch(64 * 3 + 10, 4)
    assert launch.strategy == "batched"
    expected = np.where(np.arange(len(src))[:, None] < 64 * 3 + 10, src * 2, -1.0)
    np.testing.assert_array_equal(dst, expected)
    want = np.zeros((64, 64), bool)
    want[:10] = True
    for event in launch.programs[(3, 0, 0)].events:
        assert event.active == 10 * 64
        np.testing.assert_array_equal(event.mask, want)
    np.testing.assert_array_equal(launch.value((3, 0, 0), "inside"), want)
    assert all(e.mask.all() for e in launch.programs[(2, 0, 0)].events)
