"""NaN and Inf origins: the statement that makes them, not the ones that carry them on."""

import numpy as np

from kernel_nb.checks import Observations, nonfinite
from tests.checks.helpers import NamedLaunch, site
from tests.engine import detector_kernels as dk

COMPUTED = nonfinite.Assignment("y", loads=False, makes_inf=False)


def _origin(statement, value, *, operand_nan=False, operand_inf=False, observations=None):
    observations = Observations() if observations is None else observations
    nonfinite.origin(
        observations, site(), statement, np.asarray(value), operand_nan=operand_nan, operand_inf=operand_inf
    )
    return observations.findings(NamedLaunch())


def test_a_computed_nan_is_an_error_a_loaded_one_a_warning():
    [made] = _origin(COMPUTED, [1.0, np.nan])
    assert (made.kind, made.severity) == ("nan_origin", "error")
    assert (
        made.message
        == "k:7 pid=(0,0,0): y becomes NaN here, from operands that hold no NaN: 1 of 2 lanes [1]"
    )
    [loaded] = _origin(nonfinite.Assignment("x", loads=True, makes_inf=False), [np.nan])
    assert (loaded.severity, loaded.message) == (
        "warning",
        "k:7 pid=(0,0,0): x loads NaN from memory: 1 of 1 lanes [0]",
    )


def test_carried_values_and_deliberate_infs_are_not_origins():
    assert _origin(COMPUTED, [np.nan], operand_nan=True) == []
    assert _origin(nonfinite.Assignment("s", loads=False, makes_inf=True), [-np.inf]) == []
    [inf] = _origin(COMPUTED, [np.inf])
    assert (inf.kind, inf.severity) == ("inf_origin", "warning")
    assert "(an Inf among them" in _origin(COMPUTED, [np.nan], operand_inf=True)[0].message


def test_a_program_reports_its_first_origin_only():
    observations = Observations()
    _origin(COMPUTED, [np.nan], observations=observations)
    assert (
        len(
            _origin(
                nonfinite.Assignment("z", loads=False, makes_inf=False), [np.nan], observations=observations
            )
        )
        == 1
    )


def test_log_of_negatives_and_its_clean_twin(interpret):
    x = np.linspace(-1, 1, 256, dtype=np.float32)
    with interpret() as session:
        dk.log_kernel[(2,)](x, np.zeros_like(x), 256, BLOCK=128)
    assert [f.kind for f in session.trace[0].findings] == ["nan_origin"]
    with interpret() as session:
        dk.log_kernel_clean[(2,)](x, np.zeros_like(x), 256, BLOCK=128)
    assert session.trace[0].findings == []
