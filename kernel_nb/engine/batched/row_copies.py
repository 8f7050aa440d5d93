"""Copies of a batch's rows that several blocks keep: made once, each block holding a view.

A load's event and its statement's record hold the same values, as do a store's event and the
record of the value it stored. Where the budget keeps only some programs' rows, each block would
copy those rows on its own, and the budget may cut programs between the two (a block then keeps
fewer rows than the one before it). `RowCopies` remembers the copies made, by the rows they hold
of the array they were made from (the array an operation made, through any copies of it), so
that a later block asking for rows one copy holds gets a view of it.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb.engine.memory import base_array

_PRUNE_EVERY = 1024  # copies made between sweeps of those no block holds any more


@dataclass(frozen=True)
class Rows:
    """Rows of an array an operation made (`source`, a number of its own), by the byte where
    each row starts in it (ascending), with the rows' layout (dtype, shape and strides within a
    row): two views showing the same such rows show the same bytes."""

    source: int
    layout: tuple[Any, ...]
    starts: np.ndarray


@dataclass(frozen=True)
class _Copy:
    starts: np.ndarray
    made: weakref.ref[np.ndarray]  # weak: the blocks holding it decide how long it lives


class RowCopies:
    """The copies of rows made in one batch (see the module's docstring)."""

    def __init__(self) -> None:
        self._numbers = itertools.count()
        # id of a live array → its number and a weak reference to it (the entry goes with it)
        self._sources: dict[int, tuple[int, weakref.ref[np.ndarray]]] = {}
        # id of a live copy → the rows it holds
        self._origins: dict[int, tuple[Rows, weakref.ref[np.ndarray]]] = {}
        self._copies: dict[tuple[Any, ...], list[_Copy]] = {}
        self._made = 0

    def rows_of(self, rows: np.ndarray, index: np.ndarray | None) -> Rows | None:
        """Which rows (`index` of) `rows` shows, in the array an operation made (None: rows of
        memory that may change, or not one after the other)."""
        whole = base_array(rows)
        if whole.base is not None or not whole.flags.owndata or not rows.ndim or rows.strides[0] <= 0:
            return None
        step = rows.strides[0]
        offset = rows.__array_interface__["data"][0] - whole.__array_interface__["data"][0]
        chosen = np.arange(len(rows)) if index is None else np.asarray(index)
        layout = (rows.dtype.str, rows.shape[1:], rows.strides[1:])
        origin = self._origins.get(id(whole))
        if origin is not None and origin[1]() is whole:
            # a copy's rows are the rows of the array it was made from
            made_from, row = origin[0], whole.strides[0]
            if made_from.layout != layout or step != row or offset % row:
                return None
            return Rows(made_from.source, layout, made_from.starts[offset // row + chosen])
        return Rows(self._number(whole), layout, offset + step * chosen)

    def find(self, rows: Rows) -> np.ndarray | None:
        """A live copy of just `rows` (None: none). Not a view of a copy of more rows: that would
        keep the others' alive as long as the view lives."""
        wanted = rows.starts
        for copy in self._copies.get((rows.source, rows.layout), ()):
            made = copy.made()
            if made is not None and np.array_equal(copy.starts, wanted):
                return made
        return None

    def add(self, rows: Rows, made: np.ndarray) -> None:
        """`made` is a copy of `rows`, one row each, in order."""
        self._made += 1
        if self._made % _PRUNE_EVERY == 0:
            for copies in self._copies.values():
                copies[:] = [c for c in copies if c.made() is not None]
        key = id(made)
        self._origins[key] = (rows, weakref.ref(made, lambda _: self._origins.pop(key, None)))
        self._copies.setdefault((rows.source, rows.layout), []).append(_Copy(rows.starts, weakref.ref(made)))

    def _number(self, array: np.ndarray) -> int:
        key = id(array)
        found = self._sources.get(key)
        if found is not None and found[1]() is array:
            return found[0]
        number = next(self._numbers)
        self._sources[key] = (number, weakref.ref(array, lambda _: self._sources.pop(key, None)))
        return number
