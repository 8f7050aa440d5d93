"""Detector tests that run kernels do so under both execution strategies, as tests/engine does."""

import pytest

import kernel_nb


@pytest.fixture(params=["auto", "serial"])
def interpret(request):
    """`kernel_nb.interpret` with this strategy unless the test names one."""

    def run(**overrides):
        overrides.setdefault("strategy", request.param)
        return kernel_nb.interpret(**overrides)

    return run
