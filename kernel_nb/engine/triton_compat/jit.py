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

from kernel_nb.engine.triton_compat.interpreter import INTERPRETED_FUNCTION, JIT_TYPES

_TWIN = "__kernel_nb_jit__"


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


def own_source(jit: Any) -> tuple[list[str], int] | None:
    """The lines of a JITFunction's function as it read them when decorated, and the file line
    they start on (`inspect.getsourcelines` then: the source of the code that runs, even where the
    file changed since); None before 3.5, which keeps no copy."""
    raw, start = getattr(jit, "raw_src", None), getattr(jit, "starting_line_number", None)
    if not isinstance(raw, list) or not isinstance(start, int):
        return None
    return raw, start


def innermost_jit(kernel: Any) -> Any:
    """The JITFunction under a kernel (through autotune and heuristics wrappers; see `as_jit`)."""
    fn = kernel
    while not isinstance(fn, JIT_TYPES):
        fn = fn.fn
    return as_jit(fn)


def interpreted_only(kernel: Any) -> bool:
    """Whether a kernel was made while TRITON_INTERPRET=1: Triton holds only its stock
    interpreter's version, which no GPU runs."""
    fn = kernel
    while not isinstance(fn, JIT_TYPES):
        fn = fn.fn
    return isinstance(fn, INTERPRETED_FUNCTION)


def as_jit(fn: Any) -> Any:
    """A JITFunction for a @triton.jit object: itself, or for the stock interpreter's function
    (TRITON_INTERPRET=1) a JITFunction of the same Python function and decorator options, made
    once and kept on it."""
    if not isinstance(fn, INTERPRETED_FUNCTION):
        return fn
    twin = fn.__dict__.get(_TWIN)
    if twin is None:
        accepted = inspect.signature(JITFunction.__init__).parameters
        options = {k: v for k, v in getattr(fn, "kwargs", {}).items() if k in accepted}
        twin = fn.__dict__[_TWIN] = JITFunction(fn.fn, **options)
    return twin


def constexpr_names(fn: Callable[..., Any]) -> set[str]:
    names = set()
    for name, annotation in inspect.get_annotations(fn).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if annotation is tl.constexpr or "constexpr" in str(text):
            names.add(name)
    return names
