"""Whether a probed variant computed what the plain compiled kernel computed.

The probe stores statement values to a log, which changes the code the compiler schedules: fma
contraction, instruction order and register pressure can differ, and with them the last bits of
what the variant writes. Its statement values explain the plain run only as far as its outputs are
the plain run's; each buffer that differs is named with how much.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kernel_nb.compare.buffers import ulp_distance
from kernel_nb.numerics import is_float
from kernel_nb.trace import Drift


def probe_drift(plain: Mapping[str, np.ndarray], probed: Mapping[str, np.ndarray]) -> list[Drift]:
    """The buffers (in `plain`'s order) whose bits differ between the plain and the probed run."""
    out = []
    for arg, reference in plain.items():
        other = probed.get(arg)
        if other is None or other.shape != reference.shape or other.dtype != reference.dtype:
            continue
        a, b = np.ascontiguousarray(reference).reshape(-1), np.ascontiguousarray(other).reshape(-1)
        bits = np.dtype(f"u{a.dtype.itemsize}")
        differing = np.flatnonzero(a.view(bits) != b.view(bits))
        if not differing.size:
            continue
        x, y = a[differing], b[differing]
        if is_float(a.dtype):
            with np.errstate(invalid="ignore", over="ignore"):
                gap = np.abs(x.astype(np.float64) - y.astype(np.float64))
            finite = np.isfinite(gap)
            max_abs = float(gap[finite].max()) if finite.any() else float("inf")
            ulp = ulp_distance(x, y)[finite]
            max_ulp = int(ulp.max()) if ulp.size else 0
        else:
            gap = np.abs(x.astype(np.float64) - y.astype(np.float64))
            max_abs, max_ulp = float(gap.max()), int(gap.max())
        out.append(Drift(arg, int(differing.size), int(a.size), max_abs, max_ulp))
    return out
