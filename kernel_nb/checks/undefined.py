"""Operations whose result the language leaves undefined: signed integer overflow, integer
division or remainder by zero, shifts by at least the bit width, and float → int casts of NaN or
out-of-range values. Each is reported per program with the lanes that did it."""

from __future__ import annotations

import numpy as np

from kernel_nb.checks.describe import describe
from kernel_nb.checks.observations import Observations, Site


def int_overflow(
    observations: Observations, site: Site, lanes: np.ndarray, *, bits: int, symbol: str, exact: int
) -> None:
    """`symbol` ('+', '-', '*') on int`bits` wrapped in `lanes`; `exact` is the first lane's true value."""
    observations.add(
        "int_overflow",
        "warning",
        site,
        elements=lanes,
        detail=(
            f"int{bits} overflow in '{symbol}' in {lanes.size} lanes {describe(lanes)} (exact "
            f"value {exact} wraps); compute offsets in int64, e.g. x.to(tl.int64)"
        ),
    )


def division_by_zero(observations: Observations, site: Site, lanes: np.ndarray, *, remainder: bool) -> None:
    """An integer division (or remainder) with a zero divisor in `lanes`."""
    what = "integer remainder by zero" if remainder else "integer division by zero"
    observations.add(
        "division_by_zero",
        "warning",
        site,
        elements=lanes,
        detail=f"{what} in {lanes.size} lanes {describe(lanes)}",
    )


def shift_overflow(
    observations: Observations, site: Site, lanes: np.ndarray, *, amount: int, bits: int
) -> None:
    """A shift of a `bits`-bit integer by `amount` (the first lane's) outside [0, bits)."""
    observations.add(
        "shift_overflow",
        "warning",
        site,
        elements=lanes,
        detail=(
            f"shift by {amount} of a {bits}-bit integer in {lanes.size} lanes "
            f"{describe(lanes)}; shifts by >= the bit width are undefined"
        ),
    )


def undefined_cast(
    observations: Observations, site: Site, lanes: np.ndarray, *, target: str, first: float
) -> None:
    """A float → `target` cast of NaN or out-of-range values; `first` is the first lane's value."""
    observations.add(
        "undefined_cast",
        "warning",
        site,
        elements=lanes,
        detail=(
            f"float-to-{target} cast of NaN or out-of-range values in {lanes.size} lanes "
            f"{describe(lanes)} (first: {first:g}); NVIDIA GPUs saturate "
            f"(NaN -> 0), other backends and C leave the result undefined"
        ),
    )
