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


def batches(programs: Iterable[Pid], sizes: Iterator[int]) -> Iterator[list[Pid]]:
    """`programs` cut into consecutive lists, each as long as the next of `sizes` asks (the sizes
    are asked for one at a time, as the lists are taken)."""
    walk = iter(programs)
    for size in sizes:
        batch = list(islice(walk, size))
        if not batch:
            return
        yield batch
