"""Where an address of a launch falls: which array argument, and which element of it.

Built once per run from the launch's buffers and shared by the recorder (pointer values become
element offsets), the memory guard (bounds checks, events) and the batched guard.
"""

from __future__ import annotations

import itertools

import numpy as np

from kernel_nb.engine.args import BufferArg


class AddressMap:
    """The launch's array arguments by address.

    Attributes:
        arguments: the arguments in the kernel's signature order.
        buffers: the arguments, sorted by their first byte.
        starts: their first bytes, in that order.
        bounds: every argument's first byte and end, for telling whether a range crosses an edge.
        partial_overlap: two arguments share some bytes but are not the same span.
    """

    def __init__(self, buffers: list[BufferArg]) -> None:
        self.arguments = list(buffers)
        self.buffers = sorted(buffers, key=lambda b: b.lo)
        self._rank = {b.name: i for i, b in enumerate(buffers)}
        self.starts = np.array([b.lo for b in self.buffers], dtype=np.uint64)
        self.bounds = np.array([edge for b in self.buffers for edge in (b.lo, b.hi)], dtype=np.int64)
        merged: list[list[int]] = []
        for b in self.buffers:
            if merged and b.lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b.hi)
            else:
                merged.append([b.lo, b.hi])
        self._allowed_lo = np.array([m[0] for m in merged], dtype=np.uint64)
        self._allowed_hi = np.array([m[1] for m in merged], dtype=np.uint64)
        spans = sorted((b.lo, b.hi) for b in self.buffers)
        self.partial_overlap = any(
            next_lo < hi and (lo, hi) != (next_lo, next_hi)
            for (lo, hi), (next_lo, next_hi) in itertools.pairwise(spans)
        )

    def buffer_at(self, address: int) -> BufferArg | None:
        """The argument whose span holds the address, else the nearest one below it (or the first)."""
        if not self.buffers:
            return None
        i = int(np.searchsorted(self.starts, np.uint64(address), side="right")) - 1
        holding = [b for b in self.buffers[: i + 1] if b.lo <= address < b.hi]
        if holding:  # aliased arguments: the first in the signature
            return min(holding, key=lambda b: self._rank[b.name])
        return self.buffers[max(i, 0)]

    def offsets(self, addresses: np.ndarray) -> tuple[np.ndarray, str | None]:
        """Element offsets of pointer values relative to the argument the first lane points into."""
        flat = addresses.reshape(-1)
        arg = self.buffer_at(int(flat[0])) if flat.size else None
        if arg is None:
            return addresses.astype(np.int64), None
        return (addresses.astype(np.int64) - arg.ptr) // arg.itemsize, arg.name

    def in_bounds(self, addresses: np.ndarray, itemsize: int) -> np.ndarray:
        """Per address, whether all `itemsize` bytes from it lie inside some argument."""
        if self._allowed_lo.size == 0:
            return np.zeros(addresses.shape, dtype=bool)
        if addresses.size:
            # the common case, every lane inside one allowed range, costs two reductions
            lo, hi = addresses.min(), addresses.max()
            j = int(np.searchsorted(self._allowed_lo, lo, side="right")) - 1
            if j >= 0 and hi + np.uint64(itemsize) <= self._allowed_hi[j]:
                return np.ones(addresses.shape, dtype=bool)
        i = np.searchsorted(self._allowed_lo, addresses, side="right") - 1
        safe = np.clip(i, 0, None)
        return (i >= 0) & (addresses + np.uint64(itemsize) <= self._allowed_hi[safe])
