"""Race and initialisation state: per element, made when first used, shared between aliases."""

import numpy as np

from kernel_nb.checks.state import AccessState, ElementArrays


def test_element_arrays_are_made_on_first_use():
    arrays = ElementArrays({"x": 4, "y": 2})
    assert "x" not in arrays
    assert arrays["x"].tolist() == [-1, -1, -1, -1] and arrays["x"].dtype == np.int32
    assert list(arrays) == ["x"]


def test_aliases_share_one_array():
    arrays = ElementArrays({"x": 4, "x2": 4}, aliases={"x": "x", "x2": "x"})
    arrays["x2"][1] = 5
    assert arrays["x"][1] == 5 and arrays["x"] is arrays["x2"]


def test_only_poisoned_arguments_are_watched_for_initialisation():
    state = AccessState({"x": 3, "out": 2}, ["out"])
    assert list(state.initialised) == ["out"] and not state.initialised["out"].any()
    assert AccessState({"x": 3}).initialised == {}
