"""A launch's inputs put back only where a replay of one of its programs goes.

The masked-fill detector replays single programs of a launch that has run, each from the memory
as it was before the launch, then leaves the launch's results in place. Copying every memory the
launch wrote back to its inputs before each replay, and its results back after, moves an
argument's worth of bytes per replay, for a program that reads and writes a tile of it. Here the
memory guard, which sees every access before it is made, hands each access's byte range over
(`touch`): the inputs are put back there, once per replay, and the results that were there are
kept to be put back at the end (`finish`).
"""

from __future__ import annotations

import bisect

import numpy as np

from kernel_nb.engine.memory import Memory
from kernel_nb.engine.snapshot import InputSnapshot


class RestoreOnTouch:
    """Inputs put back range by range as replays reach them; results back at the end.

    A replay touches a few tiles: the byte ranges are kept as sorted lists of [lo, hi), not
    masks the size of the memory."""

    def __init__(self, memories: list[Memory], inputs: InputSnapshot) -> None:
        """`memories` in window order (a memory's window is its index), `inputs` the same way."""
        if any(m.window != i for i, m in enumerate(memories)):
            raise ValueError("memories must be in window order")
        self.memories = memories
        self.inputs = inputs
        # a memory not filled yet, or filled read-only, was never written: it holds its inputs,
        # and a replay that writes there writes a copy (see `finish`)
        self._unfilled = [m.lazy or m.frozen for m in memories]
        # per memory, the launch's results where a replay went: (lo, their bytes), and their ranges
        self._results: dict[int, list[tuple[int, np.ndarray]]] = {}
        self._held: dict[int, list[tuple[int, int]]] = {}
        self._fresh: dict[int, list[tuple[int, int]]] = {}  # per memory, ranges put back in this replay
        self._written: set[int] = set()  # memories not filled before that a replay wrote

    def begin(self) -> None:
        """A replay starts from the inputs: nothing of it is put back yet."""
        self._fresh = {}

    def touch(self, window: int, lo: int, hi: int, writes: bool) -> None:
        """The replay is about to access bytes [lo, hi) of memory `window`'s copy (`writes`: and
        perhaps write them)."""
        memory = self.memories[window]
        lo, hi = max(lo, 0), min(hi, memory.size)
        if self._unfilled[window]:
            if writes:
                self._written.add(window)
            return
        if hi <= lo:
            return
        fresh = self._fresh.setdefault(window, [])
        todo = _missing(lo, hi, fresh)
        if not todo:
            return  # put back already: what is there now is the replay's
        copy = memory.copy
        held = self._held.setdefault(window, [])
        results = self._results.setdefault(window, [])
        inputs = self.inputs[window]
        for a, b in todo:
            for c, d in _missing(a, b, held):  # the launch's results, not a replay's
                results.append((c, copy[c:d].copy()))
                _add(held, c, d)
            copy[a:b] = inputs[a:b]
            _add(fresh, a, b)

    def finish(self) -> None:
        """Put the launch's results back where the replays went; a memory the launch never
        filled holds its inputs again."""
        for window, results in self._results.items():
            copy = self.memories[window].copy
            for lo, saved in results:
                copy[lo : lo + saved.size] = saved
        for window in self._written:
            memory = self.memories[window]
            if memory.inputs is not None:  # frozen before, a replay wrote a copy of it
                memory.unwrite()
            elif not memory.lazy:  # a replay filled it to write to it
                memory.arena[...] = memory.read()


def _missing(lo: int, hi: int, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of [lo, hi) that none of `ranges` (sorted, disjoint) covers."""
    out, at = [], lo
    for a, b in ranges[max(0, bisect.bisect_right(ranges, (lo, lo)) - 1) :]:
        if a >= hi:
            break
        if b <= at:
            continue
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < hi:
        out.append((at, hi))
    return out


def _add(ranges: list[tuple[int, int]], lo: int, hi: int) -> None:
    """Add [lo, hi) to `ranges` (sorted, disjoint), merging what it meets."""
    at = bisect.bisect_left(ranges, (lo, lo))
    if at and ranges[at - 1][1] >= lo:
        at -= 1
    end = at
    while end < len(ranges) and ranges[end][0] <= hi:
        lo, hi = min(lo, ranges[end][0]), max(hi, ranges[end][1])
        end += 1
    ranges[at:end] = [(lo, hi)]
