"""A launch's inputs, per memory, copied only where the launch changes them.

Every launch keeps its inputs: a failed batched attempt starts over from them, the masked-fill
detector replays programs from them, and the viewer replays a program whose values were not kept.
Copying every argument up front doubles the launch's memory and faults in as many fresh pages as
the arguments hold, while most arguments are only read.

Until the launch's results are written back, the caller's memory holds the inputs unchanged (the
launch runs on private copies), so a host memory's inputs are read from there; a memory the
batched strategy loaded from is filled read-only first, and that copy holds them (Memory.freeze).
Writing back exchanges a host argument's bytes with its copy, which then holds the inputs
(Memory.exchange); elsewhere it takes a copy of each memory it is about to overwrite first. A
memory the launch did not write keeps its inputs in the private copy itself, which is copied out
only if a later replay, which could write anywhere, is about to run. Device memory (a copy would
have to come over the bus each time) and poisoned arguments (whose copies differ from the
caller's memory from the start) are copied at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from kernel_nb.engine.memory import Memory


class InputSnapshot(Sequence[np.ndarray]):
    """Per memory of a launch (in `BoundArguments.memories` order), its bytes before the launch."""

    def __init__(self, memories: list[Memory], eager: set[int]) -> None:
        """`eager`: indices of memories copied now (see the module docstring)."""
        self._memories = memories
        self._copies: list[np.ndarray | None] = [
            m.copy.copy() if i in eager or m.space != "host" else None for i, m in enumerate(memories)
        ]
        self._committed = False

    def __len__(self) -> int:
        return len(self._memories)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        copy = self._copies[index]
        if copy is not None:
            return copy
        memory = self._memories[index]
        inputs = memory.read_only_inputs
        if inputs is not None:
            return inputs
        # before write-back the caller's memory holds the inputs; after it, an unwritten memory's
        # private copy does (a written one was copied out by `before_write_back`)
        return memory.current() if self._committed else memory.read()

    def __iter__(self) -> Iterator[np.ndarray]:
        return (self[i] for i in range(len(self)))

    def copied(self, index: int) -> np.ndarray | None:
        """The copy of memory `index` made for the snapshot, if one was."""
        return self._copies[index]

    @property
    def copied_bytes(self) -> int:
        return sum(c.nbytes for c in self._copies if c is not None)

    def before_write_back(self, written: set[int]) -> None:
        """The caller's memories `written` are about to be overwritten with the launch's results."""
        for i in written:
            if self._copies[i] is None:
                memory = self._memories[i]
                inputs = memory.read_only_inputs  # a frozen copy, written since, holds them
                self._copies[i] = inputs if inputs is not None else np.array(memory.read())
        self._committed = True

    def materialize(self) -> None:
        """Copy out every input still held elsewhere: a replay is about to write the private copies."""
        for i, copy in enumerate(self._copies):
            if copy is None:
                # read-only inputs stay as they are: a replay's writes go to a copy of them
                inputs = self._memories[i].read_only_inputs
                self._copies[i] = inputs if inputs is not None else np.array(self[i])


class TypedSnapshot(Mapping[str, np.ndarray]):
    """`Launch.snapshot`: per buffer argument, its elements before the launch, read on access."""

    def __init__(self, snapshot: InputSnapshot, spans: dict[str, tuple[int, int, int, np.dtype]]) -> None:
        """`spans`: per argument, (memory index, first byte, end byte, dtype)."""
        self._snapshot, self._spans = snapshot, spans

    def __getitem__(self, name: str) -> np.ndarray:
        index, lo, hi, dtype = self._spans[name]
        return self._snapshot[index][lo:hi].view(dtype)

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def __reduce__(self) -> tuple[Any, ...]:
        # saved as plain arrays: a loaded trace has no memories to read from
        return (dict, ({name: np.array(self[name]) for name in self._spans},))
