import numpy as np

from kernel_nb.checks.describe import describe, elements_of, ranges
from kernel_nb.trace.coordinates import Layout


def test_describe_lists_a_few_and_counts_the_rest():
    assert describe(np.array([3, 4, 9])) == "[3, 4, 9]"
    assert describe(np.arange(512)) == "[0, 1, 2, 3, 4, 5, ... 512 in all]"


def test_ranges_are_runs():
    assert ranges(np.arange(500, 512)) == "[500, 512)"
    assert ranges(np.array([0, 1, 2, 3, 8, 9, 10, 11, 20, 30, 40])) == (
        "[0, 4), [8, 12), [20, 21) and 2 more runs"
    )
    assert ranges(np.array([], np.int64)) == "[]"


def test_elements_of_an_nd_argument_are_indices_and_of_a_1d_one_offsets():
    layout = Layout((8, 64), (64, 1))
    assert elements_of("out", np.arange(192, 256), layout) == "out[3, 0:64]"
    assert elements_of("out", np.array([3, 4, 9]), Layout((64,), (1,))) == "out elements [3, 4, 9]"
    assert elements_of("out", np.arange(500, 512), None, runs=True) == "out elements [500, 512)"
    # a column-strided view: offsets between its elements are shown as they are
    assert elements_of("out", np.array([1, 3]), Layout((8, 32), (64, 2))) == "out elements [1, 3]"
