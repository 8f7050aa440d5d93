"""A pytest plugin that runs Triton's own language tests with every launch interpreted by kernel_nb.

    pytest -p conformance.plugin -m interpreter --device cpu test/unit/language/

Triton's tests decide their skips and expected errors through
`triton._internal_testing.is_interpreter()`, which reads TRITON_INTERPRET. Here TRITON_INTERPRET is
unset, so `@triton.jit` makes plain JITFunctions (as in a user's notebook), and the plugin makes
`is_interpreter()` answer True before the test modules import it; each test then runs inside
`kernel_nb.interpret()` with its default options, as a user's cell under ``%%tkernel interpret`` does
(``--kernel-nb-shadow``: with the fp64 shadow, which must leave every result as it is).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

# The tests' skips for what Triton's own interpreter cannot do in bf16; --lift-bf16-skips lets the
# cases through (only cases whose id names bf16), to measure kernel_nb on them.
BF16_SKIPS = (
    "bfloat16 is not supported in the interpreter",
    "Only test atomic bfloat16/float16 ops on GPU",
    "input_precision bf16x3 is not supported in the interpreter",
    "input_precision bf16x6 is not supported in the interpreter",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--lift-bf16-skips",
        action="store_true",
        help="run the bf16 cases the tests skip because Triton's interpreter lacks bf16",
    )
    parser.addoption(
        "--kernel-nb-shadow",
        action="store_true",
        help="interpret with the fp64 shadow (shadow='fp64'): the real results must stay the same",
    )


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("TRITON_INTERPRET", "0") == "1":
        raise pytest.UsageError(
            "conformance.plugin runs kernels through kernel_nb: unset TRITON_INTERPRET "
            "(with it set, @triton.jit makes Triton's own InterpretedFunction)"
        )
    import triton._internal_testing as testing

    testing.is_interpreter = lambda: True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[Any]:
    with _bf16_skips_lifted(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    import kernel_nb

    shadow = "fp64" if item.config.getoption("--kernel-nb-shadow") else None
    with _bf16_skips_lifted(item), kernel_nb.interpret(shadow=shadow):
        yield


@contextlib.contextmanager
def _bf16_skips_lifted(item: pytest.Item) -> Iterator[None]:
    if not item.config.getoption("--lift-bf16-skips") or not ("bfloat16" in item.name or "bf16" in item.name):
        yield
        return
    skip = pytest.skip

    def lifted(reason: str = "", *args: Any, **kwargs: Any) -> None:
        if str(reason) not in BF16_SKIPS:
            skip(reason, *args, **kwargs)

    pytest.skip = lifted  # type: ignore[assignment]
    try:
        yield
    finally:
        pytest.skip = skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # test_core's patch_kernel exec's a kernel's source when is_interpreter() says so: an
    # InterpretedFunction needs no source file, a JITFunction does (triton.jit refuses the exec'd
    # function). Kernels here are JITFunctions, so patch_kernel takes the compiler's branch, which
    # edits the source with JITFunction._unsafe_update_src.
    for module in {getattr(item, "module", None) for item in items} - {None}:
        if hasattr(module, "patch_kernel"):
            module.patch_kernel = _patch_jit_kernel


def _patch_jit_kernel(template: Any, to_replace: dict[str, str]) -> Any:
    import triton

    kernel = triton.JITFunction(template.fn)
    src = kernel.src
    for key, value in to_replace.items():
        src = src.replace(key, value)
    kernel._unsafe_update_src(src)
    return kernel
