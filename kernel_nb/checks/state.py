"""Per-element state that race and uninitialised-read detection keep while a launch runs, apart
from the memory it describes and from the guards that consult it: who last wrote each element
with a plain store, and which elements of a poisoned argument have been written."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class ElementArrays(dict[str, np.ndarray]):
    """Per argument, an int32 per element (-1 to start), made when first used: a launch whose
    accesses never need per-element state does not pay for it."""

    def __init__(self, sizes: dict[str, int], aliases: dict[str, str] | None = None) -> None:
        """
        Args:
            sizes: elements per argument name.
            aliases: per argument, the first argument that is the same memory (it uses that one's
                array); arguments absent here have their own.
        """
        super().__init__()
        self.sizes = sizes
        self.aliases = {name: first for name, first in (aliases or {}).items() if name != first}

    def __missing__(self, name: str) -> np.ndarray:
        first = self.aliases.get(name)
        made = self[name] = self[first] if first is not None else np.full(self.sizes[name], -1, np.int32)
        return made


class AccessState:
    """The state of one launch: `plain_writer` (per element, the linear id of the program that last
    stored it with a plain store; atomics are ordered, so they never race) and `initialised` (per
    poisoned argument, which elements were written)."""

    def __init__(
        self,
        sizes: dict[str, int],
        poisoned: Iterable[str] = (),
        *,
        aliases: dict[str, str] | None = None,
    ) -> None:
        """
        Args:
            sizes: elements per argument name.
            poisoned: the arguments whose reads before a write are reported (none without detection).
            aliases: arguments that are the same memory, as in `ElementArrays`.
        """
        self.plain_writer = ElementArrays(sizes, aliases)
        self.initialised = {name: np.zeros(sizes[name], bool) for name in poisoned}
