"""kernel_nb.distinct: np.unique's answer for integer arrays, by a table or a sort."""

import numpy as np
import pytest

from kernel_nb.distinct import distinct

RNG = np.random.default_rng(3)


@pytest.mark.parametrize(
    "values",
    [
        RNG.integers(-5, 5, 1000),  # a small range: counted in a table
        RNG.integers(0, 1 << 40, 5000),  # a wide one: sorted
        np.arange(10, dtype=np.uint64) + np.uint64(2**63),  # past int64
        np.array([-128, 127, 0, 127], np.int8),  # the whole range of a narrow type
        np.array([2**63 - 1, -(2**63), 0], np.int64),
        np.array([255, 0, 255], np.uint8),
        np.array([3], np.int16),
        np.array([], np.int64),
        RNG.permutation(1 << 16).reshape(256, 256),  # flattened, as np.unique does
        np.array([1.5, np.nan, 1.5]),  # not integers: np.unique itself
    ],
)
def test_distinct_values_and_counts_are_np_unique_s(values):
    expected, expected_counts = np.unique(values, return_counts=True)
    found, counts = distinct(values, return_counts=True)
    assert found.dtype == expected.dtype
    np.testing.assert_array_equal(found, expected)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(distinct(values), expected)
