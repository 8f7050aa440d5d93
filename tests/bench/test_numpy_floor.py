"""The numpy floor computes what the bench kernels compute, at the bench's --quick sizes."""

import numpy as np
import pytest

import kernel_nb
from bench.bench_engine import CASES, build_case


@pytest.mark.parametrize("strategy", ["auto", "serial"])
@pytest.mark.parametrize("name", CASES)
def test_floor_matches_the_kernel(name, strategy):
    case = build_case(name, quick=True)
    expected = case.floor()
    with kernel_nb.interpret(strategy=strategy):
        case.launch()
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(expected) == len(case.outputs)
    for output, want in zip(case.outputs, expected, strict=True):
        np.testing.assert_allclose(case.inputs[output], want, rtol=1e-4, atol=1e-4, err_msg=output)
