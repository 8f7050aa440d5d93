"""SummaryColumns: a batch's summaries, row by row the same as Summary.of."""

import numpy as np
import pytest

from kernel_nb.trace import Summary, SummaryColumns


def _rows(kind):
    rng = np.random.default_rng(7)
    if kind == "bool":
        values = rng.random((40, 33)) < rng.random((40, 1))
        values[0], values[1] = True, False  # rows all True, all False
        return values
    if kind == "int":
        return rng.integers(-(2**31), 2**31, (40, 33), dtype=np.int64)
    values = rng.standard_normal((40, 33)).astype(np.float32)
    values[2, 5], values[3, :], values[4, 7], values[5, 1] = np.nan, np.nan, np.inf, -np.inf
    return values


@pytest.mark.parametrize("kind", ["bool", "int", "float"])
def test_each_row_is_summarised_as_summary_of_summarises_it(kind):
    values = _rows(kind)
    columns = SummaryColumns.of(values)
    for r in range(values.shape[0]):
        expected, got = Summary.of(values[r]), columns.row(r)
        assert np.array_equal(
            [got.min, got.max, got.mean, got.nan, got.inf, got.size],
            [expected.min, expected.max, expected.mean, expected.nan, expected.inf, expected.size],
            equal_nan=True,
        ), r
