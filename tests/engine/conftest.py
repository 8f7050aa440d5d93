"""Every engine test runs under both execution strategies: the serial reference and "auto"
(batched where it applies)."""

import pytest

import kernel_nb


@pytest.fixture(autouse=True, params=["auto", "serial"])
def strategy(request, monkeypatch):
    """Make `kernel_nb.interpret()` default to this strategy for the test."""
    if getattr(request.module, "COMPARES_STRATEGIES", False) and request.param == "serial":
        pytest.skip("compares the two strategies itself")
    original = kernel_nb.interpret

    def interpret(options=None, **overrides):
        if options is None and "strategy" not in overrides:
            overrides["strategy"] = request.param
        return original(options, **overrides)

    monkeypatch.setattr(kernel_nb, "interpret", interpret)
    return request.param


@pytest.fixture(autouse=True)
def nothing_measured():
    """Each test's launches start with nothing measured, as in a fresh process: what a launch
    made again assumes of its programs is tested where it is made again (see batched/measured)."""
    from kernel_nb.engine.batched import measured

    measured.forget()
    yield
    measured.forget()


@pytest.fixture
def copies(monkeypatch):
    """The arrays the batched recorder copies values of kept programs into, as the launch makes them."""
    from kernel_nb.engine.batched import recorder

    made, copied = recorder._copied, []
    monkeypatch.setattr(recorder, "_copied", lambda rows, at: copied.append(made(rows, at)) or copied[-1])
    return copied
