"""Marking arrays as uninitialised, so that reading them before writing them is reported."""

from __future__ import annotations

from typing import Any

import numpy as np


class PoisonedArray(np.ndarray):
    """A numpy array whose contents count as uninitialised for the next interpreted launches."""


def poison_value(dtype: np.dtype) -> Any:
    """What poisoned memory holds: NaN for floats, the largest value for integers, True for bool."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.nan


def poison(array: np.ndarray) -> PoisonedArray:
    """Fill `array` with a poison value (NaN, or the integer maximum) and mark it uninitialised.

    Pass the returned array (a view of the same memory) to the kernel: reads of elements that no
    program wrote before are reported as `uninitialised_read` findings.

    Example::

        out = kernel_nb.poison(np.empty_like(x))
    """
    array[...] = poison_value(array.dtype)
    return array.view(PoisonedArray)
