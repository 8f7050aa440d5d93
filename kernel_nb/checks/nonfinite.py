"""Where NaN and Inf come from: the statement that makes them from operands that held none, not
every statement that carries them on. A program reports its first origin of each only."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernel_nb.checks.describe import lanes_set
from kernel_nb.checks.observations import Observations, Site
from kernel_nb.trace import Severity


@dataclass(frozen=True)
class Assignment:
    """What the detector needs of the statement that assigned the value."""

    name: str  # the name assigned
    loads: bool  # its value comes from memory (tl.load)
    makes_inf: bool  # it writes Inf on purpose (float("-inf") in a tl.where)


def origin(
    observations: Observations,
    site: Site,
    statement: Assignment,
    value: np.ndarray,
    *,
    operand_nan: bool,
    operand_inf: bool,
) -> None:
    """Report a statement as its program's NaN (or Inf) origin, if its operands held none."""
    shaped = np.asarray(value, dtype=np.float64)
    row = shaped.reshape(-1)
    nan = np.isnan(row)
    inf = np.isinf(row)
    if nan.any() and not operand_nan and not observations.seen("nan_origin", site.pid):
        lanes = np.flatnonzero(nan)
        source = (
            "loads NaN from memory"
            if statement.loads
            else "becomes NaN here, from operands that hold no NaN"
            + (" (an Inf among them: inf - inf, 0 * inf or inf / inf)" if operand_inf else "")
        )
        kind, shown = "nan_origin", lanes_set(np.isnan(shaped))
        severity: Severity = "warning" if statement.loads else "error"
    elif (
        inf.any()
        and not (operand_nan or operand_inf or statement.makes_inf)
        and not observations.seen("inf_origin", site.pid)
    ):
        lanes = np.flatnonzero(inf)
        source = "loads Inf from memory" if statement.loads else "overflows to Inf here, from finite operands"
        kind, severity, shown = "inf_origin", "warning", lanes_set(np.isinf(shaped))
    else:
        return
    observations.add(
        kind,
        severity,
        site,
        elements=lanes,
        detail=f"{statement.name} {source}: {lanes.size} of {row.size} lanes {shown}",
    )
