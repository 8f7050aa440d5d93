"""Reads of poisoned memory (`kernel_nb.poison`, `Options.poison`) before any program wrote it."""

from __future__ import annotations

import numpy as np

from kernel_nb.checks.describe import elements_of
from kernel_nb.checks.observations import Observations, Site
from kernel_nb.trace.coordinates import Layout


def read(
    observations: Observations,
    site: Site,
    *,
    arg: str,
    elements: np.ndarray,
    layout: Layout | None = None,
) -> None:
    """A load of `elements` of poisoned `arg` that nothing has written yet (`layout`: the
    argument's, to name n-D elements by index)."""
    observations.add(
        "uninitialised_read",
        "error",
        site,
        arg=arg,
        elements=elements,
        # worded only for the observation a group shows: naming n-D elements sorts them
        detail=lambda: (
            f"reads {elements_of(arg, elements, layout)} before any program wrote them "
            f"({arg} holds uninitialised memory)"
        ),
    )
