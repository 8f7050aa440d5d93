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


def _assert_each_row_is_summary_of_s(values, columns):
    for r in range(values.shape[0]):
        expected, got = Summary.of(values[r]), columns.row(r)
        assert np.array_equal(
            [got.min, got.max, got.mean, got.nan, got.inf, got.size],
            [expected.min, expected.max, expected.mean, expected.nan, expected.inf, expected.size],
            equal_nan=True,
        ), r


@pytest.mark.parametrize("kind", ["bool", "int", "float"])
def test_each_row_is_summarised_as_summary_of_summarises_it(kind):
    values = _rows(kind)
    columns = SummaryColumns.of(values)
    _assert_each_row_is_summary_of_s(values, columns)


def _masked_rows(dtype):
    """Rows as masked attention and padded softmax make them: -Inf in a share of every row's lanes,
    rows wider than numpy's casting buffer, rows all -Inf, +Inf, NaN, and rows with one of each."""
    rng = np.random.default_rng(11)
    values = rng.standard_normal((24, 9000)).astype(dtype)
    values[:, ::5] = -np.inf  # every row dirty: the max stays finite, the min does not
    values[1, :] = -np.inf
    values[2, :] = np.inf
    values[3, :] = np.nan
    values[4, 7], values[5, 8], values[6, 9] = np.nan, np.inf, np.nan
    values[6, 10] = np.inf
    values[7, ::2] = np.nan
    values[8, 1::5] = np.inf  # both extremes Inf
    values[9, 3] = -0.0
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_rows_masked_with_infinities_are_summarised_as_summary_of_summarises_them(dtype):
    values = _masked_rows(dtype)
    columns = SummaryColumns.of(values)
    assert columns.nan is not None and columns.inf is not None
    _assert_each_row_is_summary_of_s(values, columns)
    # a row of -Inf and finite lanes: its extremes and mean are its finite lanes'
    finite = values[0][np.isfinite(values[0])].astype(np.float64)
    assert columns.row(0).min == finite.min() and columns.row(0).max == finite.max()
    assert columns.row(1).nan == 0 and columns.row(1).inf == values.shape[1]
    assert np.isnan(columns.row(1).min) and np.isnan(columns.row(1).mean)
