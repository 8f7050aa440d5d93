"""What the fp64 shadow measured of one float statement over a whole launch: its largest value
and its largest errors, kept as the launch runs (`Launch.errors`).

Every program and iteration counts, whether or not the capture budget kept its values: the
precision findings and the viewer's gutter read these rather than the records, of which only
the kept programs' carry the shadow's companions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernel_nb.numerics import epsilon, ulp


@dataclass
class StatementErrors:
    """One float statement's values and errors in ulps of its type over every program and
    iteration: the largest finite of each, and how many elements' errors were NaN or infinite
    (the real value or the shadow was, and the other not)."""

    dtype: str = ""
    magnitude: float = 0.0  # the largest |value|
    ulps: float = 0.0  # the largest error against the shadow
    own: float = 0.0  # the largest error of its own arithmetic
    nonfinite: int = 0  # elements whose error against the shadow is NaN or infinite
    own_nonfinite: int = 0
    finite: bool = False  # some error against the shadow was finite
    own_finite: bool = False
    loop: bool = False  # recorded inside a loop
    tf32: bool = False  # a tf32 dot (fp32 operands truncated) made part of its value

    def add(
        self,
        dtype: str,
        real: np.ndarray,
        ulps: np.ndarray,
        own: np.ndarray,
        *,
        loop: bool,
        tf32: bool,
        programs: int = 1,
    ) -> bool:
        """Fold in one record: its values, and its errors in ulps against the shadow and its own,
        each element standing for `programs` programs' (one value they all hold). Whether every
        error of the record is 0."""
        self.dtype = dtype
        self.loop = self.loop or loop
        self.tf32 = self.tf32 or tf32
        self.magnitude = max(self.magnitude, finite_max(real)[0], -finite_min(real))
        if not np.size(ulps):
            return True
        if ulps.strides and not any(ulps.strides):
            self.finite = self.own_finite = True
            return True  # one value for every element: the shadow's own values, exact
        top, nonfinite = finite_max(ulps)
        exact = top == 0 and not nonfinite
        self.ulps = max(self.ulps, top)
        self.nonfinite += nonfinite * programs
        self.finite = self.finite or nonfinite < np.size(ulps)
        if own is not ulps:
            top, nonfinite = finite_max(own)
        self.own = max(self.own, top)
        self.own_nonfinite += nonfinite * programs
        self.own_finite = self.own_finite or nonfinite < np.size(own)
        return exact

    def largest(self, own: bool = False) -> float | None:
        """The largest finite error (None: none was finite)."""
        if not (self.own_finite if own else self.finite):
            return None
        return self.own if own else self.ulps

    def relative_own(self) -> float:
        """The largest own error relative to the value, about."""
        return self.own * epsilon(self.dtype) if self.dtype else 0.0

    def absolute(self) -> float:
        """The largest absolute error, bounded by the ulps at the largest magnitude."""
        if not self.dtype:
            return 0.0
        return self.ulps * float(ulp(np.array(self.magnitude), self.dtype))


def finite_max(values: np.ndarray) -> tuple[float, int]:
    """The largest finite value (0 when there is none) and how many are not finite: one pass
    where every value is finite (NaN carries through max, and reaches an infinity), more where
    one is not."""
    if not values.size:
        return 0.0, 0
    found = float(np.max(values))
    if np.isfinite(found):
        return found, 0
    finite = np.isfinite(values)
    return float(np.max(values, where=finite, initial=0.0)), int(values.size - np.count_nonzero(finite))


def finite_min(values: np.ndarray) -> float:
    """The smallest finite value (0 when there is none)."""
    if not values.size:
        return 0.0
    found = float(np.min(values))
    if np.isfinite(found):
        return found
    return float(np.min(values, where=np.isfinite(values), initial=0.0))
