"""TileShape.meets, the proof that a program touches no element twice across a loop's tiles,
answered per step once for tiles with equal lanes."""

from __future__ import annotations

import numpy as np

from kernel_nb.engine.batched.intervals import TileShape


def _tile(rows: int, cols: int, stride: int) -> np.ndarray:
    return np.sort((np.arange(rows)[:, None] * stride + np.arange(cols)[None, :]).reshape(-1))


def test_answers_kept_per_step_are_the_answers_worked_out_afresh():
    rng = np.random.default_rng(0)
    lanes = _tile(8, 8, 32)  # a tile of 8 rows of 8 elements, rows 32 apart
    known: dict = {}
    for _ in range(200):
        shifts = rng.integers(0, 64, (2, 16))
        rows = rng.random(16) < 0.5
        here = TileShape(lanes.copy(), shifts[0])  # equal lanes, a new array each access
        before = TileShape(lanes.copy(), shifts[1])
        assert here.meets(before, rows, known) == here.meets(before, rows)
    assert 0 < len(known) < 200  # steps repeat: most answers were found kept


def test_a_kept_answer_for_other_lanes_of_the_same_digest_is_not_used():
    lanes, other = _tile(4, 4, 16), _tile(4, 4, 8)
    here, before = TileShape(lanes, np.array([0])), TileShape(lanes, np.array([4]))
    rows = np.array([True])
    assert not here.meets(before, rows)  # 4 columns apart: never the same element
    # an answer kept under this key for lanes that differ (as two lanes of one digest would)
    known = {(here.digest, before.digest, 4): (True, other, other)}
    assert not here.meets(before, rows, known)
    assert known[(here.digest, before.digest, 4)][0] is False


def test_a_step_that_lands_on_an_element_touched_before_meets():
    lanes = _tile(4, 4, 16)
    here, before = TileShape(lanes, np.array([16])), TileShape(lanes, np.array([0]))
    assert here.meets(before, np.array([True]), {})  # one row down: rows 1-3 touched again


def test_a_grid_of_lanes_is_found_and_its_blocks_are_the_tiles_elements():
    from kernel_nb.engine.batched.intervals import _block, _grid_of

    tile = (3 + 40 * np.arange(5)[:, None] + np.arange(8)).reshape(-1)  # 5 rows of 8, 40 apart
    assert _grid_of(tile) == (3, 5, 8, 40)
    assert _grid_of(np.arange(7, 19)) == (7, 1, 12, 12)  # one stretch
    assert _grid_of(np.array([0, 1, 2, 5, 6])) is None  # runs of two lengths
    assert _grid_of(np.array([0, 1, 4, 5, 9, 10])) is None  # runs not equally apart
    assert _grid_of(np.zeros(0, np.int64)) is None
    for shift in (0, 17, 40 * 3 - 3):
        counts = np.zeros(40 * 9, np.uint8)
        block = _block(counts, shift, *_grid_of(tile))
        assert block is not None
        block += 2
        want = np.zeros_like(counts)
        want[tile + shift] += 2
        np.testing.assert_array_equal(counts, want)
    counts = np.zeros(40 * 9, np.uint8)
    assert _block(counts, 30, *_grid_of(tile)) is None  # its rows would wrap a row of 40
    assert _block(counts, 40 * 5, *_grid_of(tile)) is None  # past the counts' end
    assert _block(counts, 40 * 9 - 12, 7, 1, 12, 12) is None
    assert _block(counts, 40 * 9 - 19, 7, 1, 12, 12) is not None
