"""Races between the programs of one launch: reads of what another program wrote, and writes of
a different value over another program's write. Programs of a launch run in no guaranteed order
on the GPU, so either makes the result depend on the schedule. Atomics are ordered and never race.
"""

from __future__ import annotations

import numpy as np

from kernel_nb.checks.describe import elements_of
from kernel_nb.checks.observations import Observations, Site
from kernel_nb.trace import Pid
from kernel_nb.trace.coordinates import Layout


def read_after_write(
    observations: Observations,
    site: Site,
    *,
    arg: str,
    elements: np.ndarray,
    other: Pid,
    layout: Layout | None = None,
) -> None:
    """A plain load of `elements` that program `other` stored earlier in the launch (`layout`:
    the argument's, to name n-D elements by index)."""
    observations.add(
        "race_read_after_write",
        "warning",
        site,
        arg=arg,
        elements=elements,
        # worded only for the observation a group shows: naming n-D elements sorts them
        detail=lambda: (
            f"reads {elements_of(arg, elements, layout)} that program "
            f"({other[0]},{other[1]},{other[2]}) wrote earlier in this launch; programs of one "
            f"launch run in no guaranteed order on the GPU"
        ),
    )


def conflicting_write(
    observations: Observations,
    site: Site,
    *,
    arg: str,
    elements: np.ndarray,
    other: Pid,
    layout: Layout | None = None,
) -> None:
    """A plain store of `elements` that program `other` also stored, with a different value."""
    observations.add(
        "race_write",
        "error",
        site,
        arg=arg,
        elements=elements,
        detail=lambda: (
            f"writes {elements_of(arg, elements, layout)} that program "
            f"({other[0]},{other[1]},{other[2]}) also wrote, with a different value; the result "
            f"depends on which program the GPU runs last"
        ),
    )
