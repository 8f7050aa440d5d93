"""`@triton.jit` objects: the function under them, its constexpr parameters, and the source
`_unsafe_update_src` gave it."""

from __future__ import annotations

import inspect
import re
import textwrap
import types
from collections.abc import Callable
from typing import Any

import triton.language as tl
from triton.runtime.jit import JITFunction


def jit_source_function(jit_fn: Any) -> Callable[..., Any]:
    """The Python function under a @triton.jit (or autotune/heuristics) object."""
    fn = jit_fn
    while not isinstance(fn, types.FunctionType):
        fn = fn.fn
    return fn


def updated_source(jit: Any) -> tuple[str, int] | None:
    """The source a JITFunction was given by `_unsafe_update_src`, and the file line its `def` is on;
    None while it compiles its function's own source."""
    src, raw = getattr(jit, "src", None), getattr(jit, "raw_src", None)
    if raw is None:  # before 3.5 the JITFunction keeps no copy of its function's lines
        try:
            raw = inspect.getsourcelines(jit.fn)[0]
        except (OSError, TypeError, AttributeError):
            return None
    if not isinstance(src, str):
        return None
    own = textwrap.dedent("".join(raw))
    found = re.search(r"^def\s+\w+\s*\(", own, re.MULTILINE)
    if found is None or src == own[found.start() :]:
        return None
    return src, int(jit.starting_line_number) + own[: found.start()].count("\n")


def innermost_jit(kernel: Any) -> Any:
    fn = kernel
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def constexpr_names(fn: Callable[..., Any]) -> set[str]:
    names = set()
    for name, annotation in inspect.get_annotations(fn).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if annotation is tl.constexpr or "constexpr" in str(text):
            names.add(name)
    return names
