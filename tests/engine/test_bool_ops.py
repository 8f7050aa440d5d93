"""`&`, `|` and `^` of two masks are computed once along the axes where both are one value (a
bound every lane meets, a mask every program of a batch shares), and equal numpy's own result."""

import itertools

import numpy as np
import pytest

from kernel_nb.engine.arith import _bool_op

rng = np.random.default_rng(3)
SHAPE = (4, 8, 16)


def _operands():
    """Bool blocks of SHAPE made as the batched strategy meets them: whole arrays, broadcasts along
    some axes, and blocks one program long (the batch axis of 1)."""
    made = []
    for axes in itertools.product((False, True), repeat=3):
        small = tuple(1 if one else n for one, n in zip(axes, SHAPE))
        values = rng.random(small) < 0.7
        made.append(np.broadcast_to(values, SHAPE))
        made.append(np.broadcast_to(np.ones(small, bool), SHAPE))
    made.append(rng.random((1, 8, 16)) < 0.5)  # one program's block, as every program's
    return made


@pytest.mark.parametrize("op", [np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.logical_and])
def test_masks_combined_equal_numpys_and_stay_one_value_where_both_are(op):
    operands = _operands()
    for a, b in itertools.product(operands, repeat=2):
        got = _bool_op(op, a, b)
        want = op(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype == np.bool_
        np.testing.assert_array_equal(got, want)
        for axis, n in enumerate(got.shape):
            both_one = all(x.shape[axis] == 1 or x.strides[axis] == 0 for x in (a, b))
            if both_one and n > 1:
                assert got.strides[axis] == 0, (a.strides, b.strides, got.strides)
        if want.size and (want.all() or not want.any()) and got.strides != want.strides:
            assert not any(got.strides)  # one value for the whole block: held as one


def test_operands_of_other_ranks_or_empty_are_left_to_numpy():
    a = rng.random((8, 16)) < 0.5
    b = np.broadcast_to(True, (4, 8, 16))
    np.testing.assert_array_equal(_bool_op(np.bitwise_and, a, b), a & b)
    empty = np.zeros((0, 8, 16), bool)
    assert _bool_op(np.bitwise_or, empty, empty).shape == (0, 8, 16)
