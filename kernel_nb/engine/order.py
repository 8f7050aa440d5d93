"""The order a launch's programs run in, made as it is walked: a grid of 2**31 - 1 programs costs
no list of program ids.

"serial" is x fastest (Launch.linear), "reverse" its opposite, "shuffle" a seeded permutation: a
numpy permutation for grids up to `SHUFFLE_TABLE` programs (its table is small then), past that a
Feistel network over the next power of two, walked until it lands inside the grid (cycle
walking), which is a bijection of range(n) with no table at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

import numpy as np

from kernel_nb.trace import Pid

SHUFFLE_TABLE = 1 << 20  # programs whose shuffle is a table of int64 (8 MiB at most)
_ROUNDS = 4


class ProgramOrder:
    """The program ids of a grid in run order; iterating makes them one at a time."""

    def __init__(self, grid: Pid, order: str = "serial", seed: int = 0) -> None:
        self.grid = grid
        self.order = order
        self.size = grid[0] * grid[1] * grid[2]
        self._table: np.ndarray | None = None
        self._keys: tuple[int, ...] = ()
        if order == "shuffle":
            if self.size <= SHUFFLE_TABLE:
                self._table = np.random.default_rng(seed).permutation(self.size)
            else:
                self._half = (max(self.size - 1, 1).bit_length() + 1) // 2
                rng = np.random.default_rng(seed)
                self._keys = tuple(int(k) for k in rng.integers(0, 1 << 62, _ROUNDS))

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Pid]:
        gx, gy = self.grid[0], self.grid[1]
        for i in self._positions():
            yield (i % gx, (i // gx) % gy, i // (gx * gy))

    def __contains__(self, pid: object) -> bool:
        return (
            isinstance(pid, tuple)
            and len(pid) == 3
            and all(isinstance(p, int) and 0 <= p < g for p, g in zip(pid, self.grid))
        )

    def positions(self, start: int, stop: int) -> np.ndarray | None:
        """The run positions from the `start`-th program run to before the `stop`-th, as int64
        (None: a shuffle past `SHUFFLE_TABLE`, walked one position at a time)."""
        if self.order == "reverse":
            return np.arange(self.size - 1 - start, self.size - 1 - stop, -1, dtype=np.int64)
        if self.order != "shuffle":
            return np.arange(start, stop, dtype=np.int64)
        if self._table is not None:
            return self._table[start:stop].astype(np.int64)
        return None

    def _positions(self) -> Iterator[int]:
        if self.order == "reverse":
            return iter(range(self.size - 1, -1, -1))
        if self.order != "shuffle":
            return iter(range(self.size))
        if self._table is not None:
            return (int(i) for i in self._table)
        return (self._permuted(i) for i in range(self.size))

    def _permuted(self, i: int) -> int:
        """Where position i goes: Feistel rounds over 2 * half bits, repeated while the result
        lies past the grid (a bijection of range(size), since the network is one of range(2**bits))."""
        while True:
            i = self._feistel(i)
            if i < self.size:
                return i

    def _feistel(self, i: int) -> int:
        half = self._half
        mask = (1 << half) - 1
        left, right = i >> half, i & mask
        for key in self._keys:
            left, right = right, left ^ (_mix(right ^ key) & mask)
        return (left << half) | right


def _mix(x: int) -> int:
    """A 64-bit integer hash (splitmix64's finaliser): the round function."""
    x &= (1 << 64) - 1
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    return x ^ (x >> 31)


def row_batches(order: ProgramOrder, sizes: Iterator[int]) -> Iterator[tuple[list[Pid], np.ndarray]]:
    """`batches` of an order, each with its program ids as the rows of an (n, 3) int64 array too.
    Made a batch at a time from the run positions, in numpy where the order has them as an array
    (every order but a shuffle past its table), not a program at a time in Python: a batch of
    4,096 programs took 1.5 ms to walk and 0.5 ms to turn into rows, its ids now 0.2 ms."""
    start, walk = 0, None
    for size in sizes:
        stop = min(start + size, order.size)
        if stop <= start:
            return
        positions = order.positions(start, stop)
        if positions is None:
            if walk is None:
                walk = islice(iter(order), start, None)
            pids = list(islice(walk, stop - start))
            rows = np.array(pids, dtype=np.int64).reshape(-1, 3)
        else:
            gx, gy = order.grid[0], order.grid[1]
            x, rest = np.divmod(positions, gx)[::-1]
            z, y = np.divmod(rest, gy)
            rows = np.stack([x, y, z], axis=1)
            pids = list(zip(x.tolist(), y.tolist(), z.tolist()))
        yield pids, rows
        start = stop


def batches(programs: Iterable[Pid], sizes: Iterator[int]) -> Iterator[list[Pid]]:
    """`programs` cut into consecutive lists, each as long as the next of `sizes` asks (the sizes
    are asked for one at a time, as the lists are taken)."""
    walk = iter(programs)
    for size in sizes:
        batch = list(islice(walk, size))
        if not batch:
            return
        yield batch
