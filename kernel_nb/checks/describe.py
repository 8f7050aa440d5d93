"""Element and lane indices as text, the way every finding lists them: flat for a 1-D argument,
as indices of its shape for an n-D one (`out[3, 0:64]`, see trace/coordinates)."""

from __future__ import annotations

import numpy as np

from kernel_nb.distinct import distinct
from kernel_nb.trace.coordinates import Layout, blocks_text


def describe(elements: np.ndarray, limit: int = 6) -> str:
    """ "[3, 4, 9]" or "[3, 4, 9, ... 512 in all]" for element or lane indices."""
    flat = np.asarray(elements).reshape(-1)
    shown = ", ".join(str(int(e)) for e in flat[:limit])
    return f"[{shown}]" if flat.size <= limit else f"[{shown}, ... {flat.size} in all]"


def ranges(elements: np.ndarray) -> str:
    """Contiguous runs as "[lo, hi)" pieces: "[500, 512)" or "[0, 4), [8, 12) and 3 more runs"."""
    flat = distinct(np.asarray(elements).reshape(-1))
    if flat.size == 0:
        return "[]"
    breaks = np.flatnonzero(np.diff(flat) != 1)
    starts = np.concatenate([[flat[0]], flat[breaks + 1]])
    ends = np.concatenate([flat[breaks], [flat[-1]]]) + 1
    pieces = [f"[{int(s)}, {int(e)})" for s, e in zip(starts[:3], ends[:3])]
    more = f" and {starts.size - 3} more runs" if starts.size > 3 else ""
    return ", ".join(pieces) + more


def elements_of(arg: str, elements: np.ndarray, layout: Layout | None, *, runs: bool = False) -> str:
    """Elements of argument `arg` (offsets from its data pointer): "out[3, 0:64]" where its layout
    has indices for them, else "out elements " and `describe` (`ranges` if `runs`)."""
    shaped = None if layout is None or np.asarray(elements).size == 0 else layout.text(arg, elements)
    if shaped is not None:
        return shaped
    return f"{arg} elements {ranges(elements) if runs else describe(elements)}"


def lanes_set(where: np.ndarray) -> str:
    """The lanes set in `where` (a value's shape): `describe` of their numbers for a 1-D value,
    indices of its shape for an n-D one ("[1, 2:4]")."""
    if where.ndim < 2:
        return describe(np.flatnonzero(where))
    return blocks_text("", np.argwhere(where), noun="lanes")
