"""Element and lane indices as text, the way every finding lists them."""

from __future__ import annotations

import numpy as np


def describe(elements: np.ndarray, limit: int = 6) -> str:
    """ "[3, 4, 9]" or "[3, 4, 9, ... 512 in all]" for element or lane indices."""
    flat = np.asarray(elements).reshape(-1)
    shown = ", ".join(str(int(e)) for e in flat[:limit])
    return f"[{shown}]" if flat.size <= limit else f"[{shown}, ... {flat.size} in all]"


def ranges(elements: np.ndarray) -> str:
    """Contiguous runs as "[lo, hi)" pieces: "[500, 512)" or "[0, 4), [8, 12) and 3 more runs"."""
    flat = np.unique(np.asarray(elements).reshape(-1))
    if flat.size == 0:
        return "[]"
    breaks = np.flatnonzero(np.diff(flat) != 1)
    starts = np.concatenate([[flat[0]], flat[breaks + 1]])
    ends = np.concatenate([flat[breaks], [flat[-1]]]) + 1
    pieces = [f"[{int(s)}, {int(e)})" for s, e in zip(starts[:3], ends[:3])]
    more = f" and {starts.size - 3} more runs" if starts.size > 3 else ""
    return ", ".join(pieces) + more
