"""What a batch's programs are sure to record still, in the loops they are in: a lower bound per
program, so that the capture budget cuts a program as soon as it is sure to (see
BatchRecorder.add_block), not after its values were copied for many more iterations.

A loop whose body cannot end an iteration early (no break, continue or return) records the sites
at the top level of its body in every iteration, each a value of the same type as in its first
iteration. After that first iteration, each program that runs `n` more iterations will record at
least `n` times what one of them recorded there; what the loop's nested statements, the helpers
it calls and the statements after it record only adds to that. A cut on this bound is one the
serial strategy makes too, since a program's kept bytes only grow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class _Loop:
    sites: frozenset[int]  # the statements every iteration records once each
    start: int  # how many record blocks the batch had when the loop began
    trips: np.ndarray | None = None  # per program of the batch, the iterations it runs
    masked: bool = False  # the trip counts differ between programs (known from its first iteration)
    iteration: int = -1  # the iteration running
    per_iteration: int = 0  # bytes a program's iteration records at least (0: not known yet)


class LoopsAhead:
    """The loops a batch is in, innermost last, and the bytes they will still record."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self._open: list[_Loop | None] = []
        self.ahead: np.ndarray | None = None  # per program: bytes still to record at least (None: 0)

    def enter(self, sites: Sequence[int], blocks: int) -> None:
        """A loop begins, whose every iteration records `sites` (none: no bound), the batch
        having made `blocks` record blocks so far."""
        self._open.append(_Loop(frozenset(sites), blocks) if sites else None)

    def ranged(self, made: Any) -> None:
        """The innermost loop iterates over `made`: a range (the same trip count for every
        program) or the masked loop's iterations (their trip counts come with the first one)."""
        loop = self._open[-1] if self._open else None
        if loop is None or loop.trips is not None:
            return
        if isinstance(made, range):
            loop.trips = np.full(self.batch, len(made), np.int64)
        else:
            loop.masked = True

    def next(self, blocks: Sequence[Any], trips: np.ndarray | None) -> None:
        """The innermost loop starts its next iteration; `blocks`: the batch's record blocks,
        `trips`: the running masked loop's trip counts (None: none runs)."""
        loop = self._open[-1] if self._open else None
        if loop is None:
            return
        loop.iteration += 1
        if loop.masked and loop.trips is None and trips is not None:
            loop.trips = np.asarray(trips, np.int64)
        if loop.iteration == 1 and loop.trips is not None:
            # the first iteration's top-level records, each once per program that ran it
            loop.per_iteration = sum(
                int(block.row_bytes()) for block in blocks[loop.start :] if block.stmt in loop.sites
            )
        self._update()

    def iterations_left(self) -> int:
        """The iterations the innermost loop runs after the one running, in the program that runs
        the most (0: not known)."""
        loop = self._open[-1] if self._open else None
        if loop is None or loop.trips is None or not loop.trips.size:
            return 0
        return max(0, int(loop.trips.max()) - loop.iteration - 1)

    def exit(self) -> None:
        if self._open.pop() is not None:
            self._update()

    def _update(self) -> None:
        ahead = None
        for loop in self._open:
            if loop is None or not loop.per_iteration or loop.trips is None:
                continue
            # the iterations after the one running: the one running has made some records already
            later = loop.per_iteration * np.maximum(0, loop.trips - loop.iteration - 1)
            ahead = later if ahead is None else ahead + later
        self.ahead = ahead
