"""Reads of poisoned memory (`kernel_nb.poison`, `Options.poison`) before any program wrote it."""

from __future__ import annotations

import numpy as np

from kernel_nb.checks.describe import describe
from kernel_nb.checks.observations import Observations, Site


def read(observations: Observations, site: Site, *, arg: str, elements: np.ndarray) -> None:
    """A load of `elements` of poisoned `arg` that nothing has written yet."""
    observations.add(
        "uninitialised_read",
        "error",
        site,
        arg=arg,
        elements=elements,
        detail=(
            f"reads {arg} elements {describe(elements)} before any program wrote them "
            f"({arg} holds uninitialised memory)"
        ),
    )
