"""NaN and Inf origins: the statement that makes them, not the ones that carry them on."""

import inspect

import numpy as np
import triton
import triton.language as tl

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


def test_lanes_of_a_2d_value_are_named_by_index():
    tile = np.full((4, 4), 1.0)
    tile[1, 2:] = np.nan
    [made] = _origin(COMPUTED, tile)
    assert (
        made.message
        == "k:7 pid=(0,0,0): y becomes NaN here, from operands that hold no NaN: 2 of 16 lanes [1, 2:4]"
    )
    assert made.elements.tolist() == [6, 7]  # the lanes' numbers stay flat
    tile = np.full((4, 4), 1.0)
    tile[[0, 3], [0, 3]] = np.inf
    [inf] = _origin(COMPUTED, tile)
    assert inf.message.endswith("2 of 16 lanes [0, 0], [3, 3]")


@triton.jit
def sqrt_tile_kernel(x_ptr, out_ptr, N: tl.constexpr):
    at = tl.program_id(0) * N * N + tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + at)
    y = tl.sqrt(x - 1.0)
    tl.store(out_ptr + at, y)


def test_a_nan_made_in_a_2d_tile_names_its_lanes_and_its_clean_twin(interpret):
    x = np.full((2, 4, 4), 2.0, np.float32)
    x[:, 1, 2:] = 0.0  # sqrt(-1)
    with interpret() as session:
        sqrt_tile_kernel[(2,)](x, np.zeros_like(x), N=4)
    [finding] = session.trace[0].findings
    line = inspect.getsourcelines(sqrt_tile_kernel.fn)[1] + 4
    assert finding.message == (
        f"sqrt_tile_kernel:{line} pid=(0,0,0): y becomes NaN here, from operands that hold no NaN: 2 of 16 "
        "lanes [1, 2:4] (in 2 programs; the first shown)"
    )
    with interpret() as session:
        sqrt_tile_kernel[(2,)](np.full((2, 4, 4), 2.0, np.float32), np.zeros_like(x), N=4)
    assert session.trace[0].findings == []
