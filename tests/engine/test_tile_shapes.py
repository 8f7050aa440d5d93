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
