import numpy as np

from kernel_nb.checks.describe import describe, ranges


def test_describe_lists_a_few_and_counts_the_rest():
    assert describe(np.array([3, 4, 9])) == "[3, 4, 9]"
    assert describe(np.arange(512)) == "[0, 1, 2, 3, 4, 5, ... 512 in all]"


def test_ranges_are_runs():
    assert ranges(np.arange(500, 512)) == "[500, 512)"
    assert ranges(np.array([0, 1, 2, 3, 8, 9, 10, 11, 20, 30, 40])) == (
        "[0, 4), [8, 12), [20, 21) and 2 more runs"
    )
    assert ranges(np.array([], np.int64)) == "[]"
