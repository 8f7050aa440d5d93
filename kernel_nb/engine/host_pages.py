"""Whether a stretch of host memory may be written: the process's own page mappings.

A numpy array says so itself (`flags.writeable`); a torch tensor has no such flag, yet one made
from a read-only `np.memmap` lies on pages that a write kills the process on. The mappings tell.
"""

from __future__ import annotations

from pathlib import Path

_MAPS = Path("/proc/self/maps")


def writable(lo: int, hi: int) -> bool:
    """Whether every page of host memory [lo, hi) is mapped writable (True where the system does
    not say: only Linux lists its mappings)."""
    if hi <= lo:
        return True
    try:
        text = _MAPS.read_text()
    except OSError:
        return True
    covered = lo
    for line in text.splitlines():  # in address order
        span, _, rest = line.partition(" ")
        first, _, last = span.partition("-")
        start, end = int(first, 16), int(last, 16)
        if end <= covered:
            continue
        if start > covered or rest[1:2] != "w":
            return False  # a hole in the mappings or a read-only page
        covered = end
        if covered >= hi:
            return True
    return False
