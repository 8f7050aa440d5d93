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

import numpy as np

from kernel_nb.engine.memory import Memory
from kernel_nb.engine.snapshot import InputSnapshot


class RestoreOnTouch:
    """Inputs put back range by range as replays reach them; results back at the end."""

    def __init__(self, memories: list[Memory], inputs: InputSnapshot) -> None:
        """`memories` in window order (a memory's window is its index), `inputs` the same way."""
        if any(m.window != i for i, m in enumerate(memories)):
            raise ValueError("memories must be in window order")
        self.memories = memories
        self.inputs = inputs
        # a memory not filled yet, or filled read-only, was never written: it holds its inputs,
        # and a replay that writes there writes a copy (see `finish`)
        self._unfilled = [m.lazy or m.frozen for m in memories]
        # per memory, the launch's results where a replay went, and which bytes those are
        self._results: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._span: dict[int, tuple[int, int]] = {}  # per memory, the bytes `_results` spans
        self._fresh: dict[int, np.ndarray] = {}  # per memory, bytes put back in this replay
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
        start, end = self._span.get(window, (lo, hi))
        self._span[window] = (min(start, lo), max(end, hi))
        fresh = self._fresh.get(window)
        if fresh is None:
            fresh = self._fresh[window] = np.zeros(memory.size, bool)
        todo = ~fresh[lo:hi]
        if not todo.any():
            return  # put back already: what is there now is the replay's
        if window not in self._results:
            self._results[window] = (np.empty(memory.size, np.uint8), np.zeros(memory.size, bool))
        saved, held = self._results[window]
        copy = memory.copy
        first = todo & ~held[lo:hi]  # the launch's results, not a replay's
        np.copyto(saved[lo:hi], copy[lo:hi], where=first)
        held[lo:hi] |= first
        np.copyto(copy[lo:hi], self.inputs[window][lo:hi], where=todo)
        fresh[lo:hi] = True

    def finish(self) -> None:
        """Put the launch's results back where the replays went; a memory the launch never
        filled holds its inputs again."""
        for window, (saved, held) in self._results.items():
            lo, hi = self._span[window]
            np.copyto(self.memories[window].copy[lo:hi], saved[lo:hi], where=held[lo:hi])
        for window in self._written:
            memory = self.memories[window]
            if memory.inputs is not None:  # frozen before, a replay wrote a copy of it
                memory.unwrite()
            elif not memory.lazy:  # a replay filled it to write to it
                memory.arena[...] = memory.read()
