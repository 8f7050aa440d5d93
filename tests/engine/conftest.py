"""Every engine test runs under both execution strategies: the serial reference and "auto"
(batched where it applies)."""

import pytest

import kernel_nb


@pytest.fixture(autouse=True, params=["auto", "serial"])
def strategy(request, monkeypatch):
    """Make `kernel_nb.interpret()` default to this strategy for the test."""
    if request.module.__name__.endswith("test_strategies") and request.param == "serial":
        pytest.skip("compares the two strategies itself")
    original = kernel_nb.interpret

    def interpret(options=None, **overrides):
        if options is None and "strategy" not in overrides:
            overrides["strategy"] = request.param
        return original(options, **overrides)

    monkeypatch.setattr(kernel_nb, "interpret", interpret)
    return request.param
