"""Where an address of a launch falls: which memory it was derived from, which array argument, and
which element of it; and where that memory really is.

The kernel's pointers are addresses in per-memory windows (see memory.WINDOW_BITS), so an address
names the memory it came from whatever arithmetic made it: an access that leaves that memory is out
of bounds even where another argument's copy lies next to it. Built once per run from the launch's
buffers and shared by the recorder (pointer values become element offsets), the memory guard
(bounds, alignment and write checks, events, the host addresses the interpreter moves elements at)
and the batched guard.
"""

from __future__ import annotations

import itertools

import numpy as np

from kernel_nb.distinct import distinct
from kernel_nb.engine.args import BufferArg
from kernel_nb.engine.memory import WINDOW_BITS, WINDOWS_START, Memory


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
        spans = sorted((b.lo, b.hi) for b in self.buffers)
        self.partial_overlap = any(
            next_lo < hi and (lo, hi) != (next_lo, next_hi)
            for (lo, hi), (next_lo, next_hi) in itertools.pairwise(spans)
        )
        memories: dict[int, Memory] = {b.memory.window: b.memory for b in buffers}
        count = max(memories, default=-1) + 1
        self.memories: list[Memory | None] = [memories.get(w) for w in range(count)]
        self._members = [
            sorted((b for b in buffers if b.memory is m), key=lambda b: b.lo) for m in self.memories
        ]
        # per window: the kernel's address of the memory's first byte, its size (-1: no memory,
        # nothing is inside), and what turns an address of it into a host address
        self._base = np.array([m.base if m else 0 for m in self.memories], dtype=np.int64)
        self._size = np.array([m.size if m else -1 for m in self.memories], dtype=np.int64)
        self._all_writable = all(m is None or m.all_writable for m in self.memories)

    # -- which memory, which argument --------------------------------------------------------------

    def windows(self, addresses: np.ndarray) -> np.ndarray:
        """Per address the window it lies in, -1 for none of the launch's memories."""
        a = np.asarray(addresses, dtype=np.uint64)
        w = (a - np.uint64(WINDOWS_START)) >> np.uint64(WINDOW_BITS)  # below the windows: wraps, huge
        inside = w < np.uint64(len(self.memories))
        return np.where(inside, w, np.uint64(0)).astype(np.int64) - (~inside).astype(np.int64)

    def window_of(self, address: int) -> int:
        w = (address - WINDOWS_START) >> WINDOW_BITS
        return w if 0 <= w < len(self.memories) and self.memories[w] is not None else -1

    def memory_at(self, address: int) -> Memory | None:
        """The memory whose window holds the address: the memory the pointer was derived from."""
        w = self.window_of(address)
        return None if w < 0 else self.memories[w]

    def buffer_at(self, address: int) -> BufferArg | None:
        """The argument the address belongs to: of the memory the pointer was derived from, the
        argument whose span holds it, else the nearest one below it (or the first); None for an
        address derived from no argument."""
        w = self.window_of(address)
        if w < 0:
            return None
        members = self._members[w]
        holding = [b for b in members if b.lo <= address < b.hi]
        if holding:  # aliased arguments: the first in the signature
            return min(holding, key=lambda b: self._rank[b.name])
        below = [b for b in members if b.lo <= address]
        return below[-1] if below else members[0]

    def split(self, addresses: np.ndarray) -> list[tuple[BufferArg, np.ndarray, np.ndarray]]:
        """The addresses (1-D) grouped by the argument each belongs to, as `buffer_at` tells it:
        (argument, element offsets, positions in `addresses`) per argument, in first-lane order;
        addresses of no memory are left out. One access may touch several arguments (a select
        between two pointers)."""
        a = np.asarray(addresses, dtype=np.uint64).reshape(-1)
        if a.size == 0:
            return []
        lo, hi = int(a.min()), int(a.max())
        w = self.window_of(lo)
        if w >= 0 and w == self.window_of(hi) and len(self._members[w]) == 1:
            arg = self._members[w][0]  # the usual case: one argument's memory
            return [(arg, (a.astype(np.int64) - arg.ptr) // arg.itemsize, np.arange(a.size))]
        windows = self.windows(a)
        owner = np.full(a.size, -1, np.int64)  # index into self.arguments
        for window in distinct(windows[windows >= 0]).tolist():
            here = np.flatnonzero(windows == window)
            found = np.full(here.size, -1, np.int64)
            members = self._members[window]
            # nearest below (or the first), then, where a span holds the lane, the first such in
            # the signature
            for b in members:
                found = np.where(a[here] >= np.uint64(b.lo), self._rank[b.name], found)
            found = np.where(found < 0, self._rank[members[0].name], found)
            for b in sorted(members, key=lambda b: -self._rank[b.name]):
                inside = (a[here] >= np.uint64(b.lo)) & (a[here] < np.uint64(b.hi))
                found = np.where(inside, self._rank[b.name], found)
            owner[here] = found
        out = []
        for rank in dict.fromkeys(owner[owner >= 0].tolist()):
            arg = self.arguments[rank]
            at = np.flatnonzero(owner == rank)
            out.append((arg, (a[at].astype(np.int64) - arg.ptr) // arg.itemsize, at))
        return out

    def offsets(self, addresses: np.ndarray) -> tuple[np.ndarray, str | None]:
        """Element offsets of pointer values relative to the argument the first lane points into."""
        flat = addresses.reshape(-1)
        arg = self.buffer_at(int(flat[0])) if flat.size else None
        if arg is None:
            return addresses.astype(np.int64), None
        return (addresses.astype(np.int64) - arg.ptr) // arg.itemsize, arg.name

    # -- checks ----------------------------------------------------------------------------------

    def in_bounds(self, addresses: np.ndarray, itemsize: int) -> np.ndarray:
        """Per address, whether all `itemsize` bytes from it lie inside the memory it was derived
        from (an address that wraps past 2**64, or lies in no memory's window, is not)."""
        a = np.asarray(addresses, dtype=np.uint64)
        if a.size:
            # the common case, every lane inside one memory, costs two reductions
            lo, hi = int(a.min()), int(a.max())
            one = self.window_of(lo)
            if one >= 0:
                base, size = int(self._base[one]), int(self._size[one])
                if lo >= base and hi + itemsize <= base + size:
                    return np.ones(a.shape, dtype=bool)
        if not len(self.memories):
            return np.zeros(a.shape, dtype=bool)
        windows = self.windows(a)
        safe = np.clip(windows, 0, None)
        offset = a.view(np.int64) - self._base[safe]  # inside a window: |offset| < 2**43
        return (windows >= 0) & (offset >= 0) & (offset <= self._size[safe] - itemsize)

    def aligned(self, addresses: np.ndarray, itemsize: int) -> np.ndarray:
        """Per address, whether it is a multiple of `itemsize` (the caller's address is, as the
        windows keep it modulo 4096)."""
        a = np.asarray(addresses, dtype=np.uint64)
        if itemsize & (itemsize - 1) == 0:
            return (a & np.uint64(itemsize - 1)) == 0
        return a % np.uint64(itemsize) == 0

    def writable(self, addresses: np.ndarray, itemsize: int) -> np.ndarray:
        """Per address (each inside its memory), whether the caller's memory there may be written."""
        a = np.asarray(addresses, dtype=np.uint64)
        if self._all_writable:
            return np.ones(a.shape, dtype=bool)
        w = self.windows(a)
        out = np.zeros(a.shape, dtype=bool)
        for window in distinct(w[w >= 0]).tolist():
            memory = self.memories[window]
            assert memory is not None
            here = w == window
            offset = a[here].view(np.int64) - np.int64(memory.base)
            ok = np.zeros(offset.shape, dtype=bool)
            for lo, hi in memory.writable:
                ok |= (offset >= lo) & (offset + itemsize <= hi)
            out[here] = ok
        return out

    def allowed(self, addresses: np.ndarray, itemsize: int, *, write: bool) -> bool:
        """Whether every address passes the guard's checks: in bounds, aligned, and (for a write)
        writable."""
        a = np.asarray(addresses, dtype=np.uint64)
        return bool(
            self.in_bounds(a, itemsize).all()
            and self.aligned(a, itemsize).all()
            and (not write or self.writable(a, itemsize).all())
        )

    # -- where memory is -------------------------------------------------------------------------

    def host(self, addresses: np.ndarray, write: bool = True) -> np.ndarray:
        """The host addresses of the copies' bytes at these addresses (checked ones; an address of
        no memory stays as it is, for a masked lane that is never touched). To read only
        (`write` False), a memory whose copy is not filled yet is read where the caller holds it."""
        a = np.asarray(addresses, dtype=np.uint64)
        if a.size == 0 or not len(self.memories):
            return a
        lo, hi = int(a.min()), int(a.max())
        w = self.window_of(lo)
        if w >= 0 and w == self.window_of(hi):
            return a + self._delta(w, write)
        windows = self.windows(a)
        deltas = np.array([self._delta(i, write) for i in range(len(self.memories))], dtype=np.uint64)
        return a + np.where(windows >= 0, deltas[np.clip(windows, 0, None)], np.uint64(0))

    def _delta(self, window: int, write: bool) -> np.uint64:
        """What turns an address of memory `window` into a host address: of its copy (filled
        first), or to read one not filled yet, of the caller's memory."""
        m = self.memories[window]
        if m is None:
            return np.uint64(0)
        return np.uint64((m.address(write) - m.base) % (1 << 64))
