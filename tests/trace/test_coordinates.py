"""Element offsets of n-D arguments as indices of their shape, and sets of them as blocks."""

import numpy as np

from kernel_nb.trace import coordinates
from kernel_nb.trace.coordinates import Layout, blocks_text


def test_offsets_split_over_the_strides_with_the_outer_axis_unbounded():
    layout = Layout((512, 28), (28, 1))
    assert layout.indices(np.array([0, 27, 28, 600 * 28 + 5, -1])).tolist() == [
        [0, 0],
        [0, 27],
        [1, 0],
        [600, 5],
        [-1, 27],
    ]
    assert layout.text("x", np.arange(600 * 28, 601 * 28)) == "x[600, 0:28]"


def test_a_transposed_or_reversed_layout_is_read_by_its_own_strides():
    transposed = Layout((6, 4), (1, 6))  # np.zeros((4, 6)).T
    assert transposed.text("t", np.array([0, 1, 6, 7])) == "t[0:2, 0:2]"
    reversed_rows = Layout((4, 6), (-6, 1))  # np.zeros((4, 6))[::-1]: offset 0 is row 0, row 1 lies below
    assert reversed_rows.indices(np.array([0, -6, 5])).tolist() == [[0, 0], [1, 0], [0, 5]]


def test_offsets_between_elements_and_1d_or_broadcast_layouts_have_no_indices():
    assert Layout((4, 64), (128, 2)).indices(np.array([3])) is None  # every other column
    assert Layout((64,), (1,)).text("x", np.arange(4)) is None
    assert Layout((4, 64), (0, 1)).text("x", np.arange(4)) is None


def test_blocks_join_runs_axis_by_axis():
    corner = np.zeros((128, 128), bool)
    corner[64:100, 100:128] = True
    corner[100:128, 64:128] = True
    assert blocks_text("o", np.argwhere(corner)) == "o[64:100, 100:128], o[100:128, 64:128]"
    assert blocks_text("o", np.argwhere(np.eye(8, dtype=bool))) == (
        "o[0, 0], o[1, 1], o[2, 2] and 5 more (8 elements)"
    )
    assert blocks_text("lanes", np.array([[3]]), noun="lanes") == "lanes[3]"


def test_every_combination_of_evenly_spaced_indices_is_one_strided_block():
    assert blocks_text("x", np.argwhere(np.ones((4, 8), bool)) * [1, 2]) == "x[0:4, 0:15:2]"
    assert blocks_text("lanes", np.arange(65, 128, 2)[:, None]) == "lanes[65:128:2]"


def test_an_axis_of_one_element_takes_no_offset_from_an_axis_of_the_same_stride():
    assert Layout((1, 64), (1, 1)).text("x", np.arange(4, 8)) == "x[0, 4:8]"  # as torch may give it
    assert Layout((1, 64), (0, 1)).text("x", np.arange(4, 8)) == "x[0, 4:8]"  # np.broadcast_to
    assert Layout((1, 64), (64, 1)).text("x", np.array([100])) == "x[1, 36]"  # past the one row


def test_blocks_from_a_table_of_the_bounding_box_equal_those_from_sorted_indices(monkeypatch):
    # runs along the last axis come from a table where the set fills enough of its box; the
    # boxes must be the ones the sort-based joining finds, duplicates and negative indices too
    rng = np.random.default_rng(7)
    found = []
    for _ in range(400):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(e) for e in rng.integers(1, 9, ndim))
        index = np.argwhere(rng.random(shape) < rng.random()) + rng.integers(-3, 4, ndim)
        if not len(index):
            continue
        if rng.random() < 0.3:
            index = np.concatenate([index, index[: len(index) // 2]])
        rng.shuffle(index)
        found.append((index, coordinates.blocks(index)))
    monkeypatch.setattr(coordinates, "_runs", lambda index: None)
    for index, (lo, hi) in found:
        sorted_lo, sorted_hi = coordinates.blocks(index)
        np.testing.assert_array_equal(lo, sorted_lo)
        np.testing.assert_array_equal(hi, sorted_hi)
    assert len(found) > 300


def test_a_million_elements_read_as_their_boxes():
    unwritten = np.ones((1024, 1024), bool)
    unwritten[:64, :64] = False  # the one program of a 1x1 grid wrote its tile
    assert blocks_text("c", np.argwhere(unwritten)) == "c[0:64, 64:1024], c[64:1024, 0:1024]"
