"""Element offsets of an n-D argument as indices of its shape, and sets of them as blocks.

Findings and the memory guard count elements from the argument's data pointer (`MemoryEvent`'s
offsets); a person reads a 2-D argument by row and column. An offset is split over the strides,
the largest first, so an index past the shape stays visible: `x[600, 0:28]` of a (512, 28) array
says which row was wrong, where the flat `[16800, 16828)` says nothing of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernel_nb.distinct import distinct
from kernel_nb.trace.launch import Launch

MAX_BLOCKS = 3  # blocks written out in a text; the rest are counted


@dataclass(frozen=True)
class Layout:
    """An argument's shape and strides, both in elements."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def shaped(self) -> bool:
        """Whether offsets are shown as indices: an argument of more than one axis whose strides
        tell elements apart (a broadcast axis, of stride 0 and more than one element, does not)."""
        if len(self.shape) < 2 or len(self.strides) != len(self.shape):
            return False
        return all(stride or extent == 1 for extent, stride in zip(self.shape, self.strides))

    def indices(self, offsets: np.ndarray) -> np.ndarray | None:
        """(len(offsets), ndim) indices of element offsets, the outermost axis unbounded (None: an
        offset lies between elements, as in a column-strided view, or the layout is not `shaped`)."""
        if not self.shaped:
            return None
        flat = np.asarray(offsets, dtype=np.int64).reshape(-1)
        shape, strides = np.array(self.shape), np.array(self.strides)
        flipped = strides < 0  # counted from the axis's far end, where its elements start in memory
        rest = flat - int((strides * (shape - 1))[flipped].sum())
        out = np.zeros((flat.size, len(shape)), np.int64)
        # the largest stride first; of equal strides, an axis of one element last (its index is 0
        # unless nothing else takes the offset)
        for axis in np.lexsort((shape == 1, -np.abs(strides))):
            step = abs(int(strides[axis]))
            if step:
                out[:, axis], rest = np.divmod(rest, step)
        if rest.any():
            return None
        out[:, flipped] = shape[flipped] - 1 - out[:, flipped]
        return out

    def text(self, name: str, offsets: np.ndarray) -> str | None:
        """The elements at `offsets` as blocks of indices, `x[3, 0:64]` (None: not `shaped`)."""
        index = self.indices(offsets)
        return None if index is None else blocks_text(name, index)


def layout_of(launch: Launch, arg: str) -> Layout | None:
    """The layout of a launch's array argument (None: no argument of that name has one)."""
    for info in launch.args:
        if info.name == arg and info.kind == "buffer":
            return Layout(tuple(info.shape), tuple(info.strides))
    return None


def box_text(index: np.ndarray) -> str | None:
    """ "[3, 0:64]" where the (n, ndim) indices fill one box, each element once (None: they do not).
    Linear in n, for many sets at a time (a table of accesses)."""
    index = np.asarray(index, dtype=np.int64)
    if index.size == 0:
        return None
    lo, hi = index.min(axis=0), index.max(axis=0) + 1
    if int(np.prod(hi - lo)) != len(index):
        return None
    filled = np.zeros(tuple(int(e) for e in hi - lo), bool)
    filled[tuple((index - lo).T)] = True
    if not filled.all():
        return None
    return f"[{', '.join(_axis(int(a), int(b)) for a, b in zip(lo, hi))}]"


def blocks(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A set of (n, ndim) indices as boxes: each box's first indices and its ends (exclusive),
    ordered by their first indices. Runs along the last axis are joined first, then boxes that
    differ in one axis only and touch along it, axis by axis towards the first."""
    index = np.asarray(index, dtype=np.int64).reshape(len(index), -1)
    runs = _runs(index)
    if runs is None:
        lo = _distinct(index)
        hi = lo + 1
    else:
        lo, hi = runs
    if len(lo) == 0:
        return lo, lo
    for axis in reversed(range(lo.shape[1])):
        others = [a for a in range(lo.shape[1]) if a != axis]
        keys = [lo[:, a] for a in others] + [hi[:, a] for a in others] + [lo[:, axis]]
        order = np.lexsort(keys[::-1])  # lexsort takes its primary key last
        lo, hi = lo[order], hi[order]
        same = np.ones(len(lo), bool)
        same[0] = False
        for a in others:
            same[1:] &= (lo[1:, a] == lo[:-1, a]) & (hi[1:, a] == hi[:-1, a])
        same[1:] &= lo[1:, axis] == hi[:-1, axis]
        starts = np.flatnonzero(~same)
        ends = np.append(starts[1:], len(lo)) - 1
        lo, top = lo[starts], hi[ends, axis]
        hi = hi[starts]
        hi[:, axis] = top
    order = np.lexsort(lo.T[::-1])
    return lo[order], hi[order]


def _runs(index: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The set of (n, ndim) indices as its runs along the last axis, in lexicographic order: each
    run's first indices and its ends (exclusive), found on a table of the set's bounding box
    (None: the box is too large against the set for one). A million indices take milliseconds,
    where sorting them took a third of a second."""
    if len(index) == 0 or index.shape[1] == 0:
        return None
    low = index.min(axis=0)
    extent = tuple(int(e) for e in index.max(axis=0) - low + 1)
    if float(np.prod(np.array(extent, np.float64))) > 8 * len(index) + (1 << 16):
        return None
    # a row per place along the other axes, padded by an empty column on each side
    table = np.zeros((int(np.prod(extent[:-1])), extent[-1] + 2), np.int8)
    rel = index - low
    rows = np.ravel_multi_index(tuple(rel[:, :-1].T), extent[:-1]) if len(extent) > 1 else 0
    table[rows, rel[:, -1] + 1] = 1
    step = np.diff(table, axis=1)
    row, first = np.nonzero(step == 1)  # row-major: the n-th start and the n-th end are one run's
    _, end = np.nonzero(step == -1)
    lead = (
        np.stack(np.unravel_index(row, extent[:-1]), axis=1)
        if len(extent) > 1
        else np.zeros((row.size, 0), np.int64)
    )
    lo = np.concatenate([lead, first[:, None]], axis=1) + low
    hi = np.concatenate([lead + 1, end[:, None]], axis=1) + low
    return lo.astype(np.int64), hi.astype(np.int64)


def _distinct(index: np.ndarray) -> np.ndarray:
    """The distinct rows of (n, ndim) indices in lexicographic order; through one integer per row
    where their bounding box allows (np.unique over rows sorts far more slowly)."""
    if len(index) == 0:
        return index
    low = index.min(axis=0)
    extent = index.max(axis=0) - low + 1
    if float(np.prod(extent.astype(np.float64))) >= 2.0**62:
        return np.unique(index, axis=0)
    keys = distinct(np.ravel_multi_index(tuple((index - low).T), tuple(int(e) for e in extent)))
    return np.stack(np.unravel_index(keys, tuple(int(e) for e in extent)), axis=1).astype(np.int64) + low


def blocks_text(name: str, index: np.ndarray, noun: str = "elements") -> str:
    """`x[3, 0:64]`, `x[0:32:2, 5]`, `x[0:2, 5], x[4, 0:8]`, or the first MAX_BLOCKS and "and 29
    more (61 elements)" (`noun` names what is counted)."""
    index = np.asarray(index, dtype=np.int64).reshape(len(index), -1)
    box = box_text(index)  # the usual set, a tile's rows and columns: found in one pass
    if box is not None:
        return f"{name}{box}"
    strided = _strided(index)
    if strided is not None:
        return f"{name}[{', '.join(strided)}]"
    lo, hi = blocks(index)
    shown = ", ".join(
        f"{name}[{', '.join(_axis(int(a), int(b)) for a, b in zip(start, end))}]"
        for start, end in zip(lo[:MAX_BLOCKS], hi[:MAX_BLOCKS])
    )
    if len(lo) <= MAX_BLOCKS:
        return shown
    count = int(np.prod(hi - lo, axis=1).sum())
    return f"{shown} and {len(lo) - MAX_BLOCKS} more ({count} {noun})"


def _strided(index: np.ndarray) -> list[str] | None:
    """Per axis "lo:hi:step" where the set is every combination of evenly spaced values along its
    axes, one of them spaced more than one apart (None: it is not)."""
    if len(index) < 2:
        return None
    values = [distinct(index[:, axis]) for axis in range(index.shape[1])]
    steps = [int(v[1] - v[0]) if v.size > 1 else 1 for v in values]
    if all(step == 1 for step in steps) or any(
        v.size > 1 and (np.diff(v) != step).any() for v, step in zip(values, steps)
    ):
        return None
    if int(np.prod([v.size for v in values])) != len(_distinct(index)):
        return None
    return [
        _axis(int(v[0]), int(v[-1]) + 1) if step == 1 else f"{int(v[0])}:{int(v[-1]) + 1}:{step}"
        for v, step in zip(values, steps)
    ]


def _axis(lo: int, hi: int) -> str:
    return str(lo) if hi - lo == 1 else f"{lo}:{hi}"
