"""What a kernel's source reads from its module, as plain data.

A standalone test of a launch (`trace/reproducer`) carries the kernel's source but none of the
user's modules, so it must recreate every global the source reads: an import, a constant, a
`tl.constexpr`, or another @triton.jit function whose source travels with the launch. Each is
described by a tag and plain data:

    ("module", "triton.language")                          import triton.language as <name>
    ("from", ("triton.language.extra.libdevice", "tanh"))  from ... import tanh as <name>
    ("value", 2.0)                                          <name> = 2.0
    ("constexpr", 128)                                      <name> = tl.constexpr(128)
    ("jit", "_scaled")                                      the helper's source, by function name
    ("unsupported", "...")                                  what cannot be recreated, and why

Modules and names imported from them are described only where they are installed code (Triton, the
standard library, site-packages): the user's own modules stay behind, and only their @triton.jit
functions, read by name, travel as source.

The names are those the bytecode loads as globals (LOAD_GLOBAL, LOAD_NAME) of the kernel and of
every @triton.jit helper it reaches through its globals, and the free variables of their closures
(a kernel defined inside a function): attribute names (`x.to`, `tl.float32`) are not globals,
even where a module happens to define one of the same name.
"""

from __future__ import annotations

import dis
import functools
import sys
import sysconfig
import types
from collections.abc import Iterator
from typing import Any

import triton.language as tl

from kernel_nb.engine import triton_compat

Global = tuple[str, Any]

_PLAIN = (bool, int, float, str, type(None))
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


def kernel_globals(fn: types.FunctionType) -> dict[str, Global]:
    """Describe every global the kernel's source and its helpers' sources read.

    Args:
        fn: the kernel's Python function (`jit.fn` of a `triton.JITFunction`).

    Returns:
        Global name → (tag, data), sorted by name; see the module's docstring for the tags. A
        name that two functions read from different modules with different meanings is
        ("unsupported", ...): one standalone file cannot give it both.
    """
    found: dict[str, Global] = {}
    read_in: dict[str, str] = {}  # name → the module whose meaning `found` holds
    for function in jit_functions(fn):
        module = str(function.__module__)
        for name, value in _reads(function):
            described = _described(value)
            if name not in found:
                found[name], read_in[name] = described, module
            elif found[name][0] != "unsupported" and repr(found[name]) != repr(described):
                found[name] = (
                    "unsupported",
                    f"{name} is {_shown(found[name])} in {read_in[name]} but {_shown(described)} "
                    f"in {module}; rename one of them",
                )
    return dict(sorted(found.items()))


def jit_functions(fn: types.FunctionType) -> list[types.FunctionType]:
    """The kernel's function, then those of the @triton.jit helpers it reaches through its globals
    that `kernel_globals` describes as "jit" (the sources a standalone file carries), each once."""
    found: list[types.FunctionType] = []
    pending = [fn]
    while pending:
        function = pending.pop(0)
        if function in found:
            continue
        found.append(function)
        for _, value in _reads(function):
            if _described(value)[0] == "jit":
                helper = triton_compat.jit_source_function(value)
                if isinstance(helper, types.FunctionType):
                    pending.append(helper)
    return found


def _described(value: Any) -> Global:
    try:
        return _describe(value)
    except Exception as exc:  # an object whose attributes raise cannot travel either
        return ("unsupported", f"a {type(value).__name__} ({type(exc).__name__}: {exc})")


def _reads(fn: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of each global and closure variable `fn`'s code reads."""
    for name in _global_names(fn.__code__):
        if name in fn.__globals__:
            yield name, fn.__globals__[name]
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            yield name, cell.cell_contents
        except ValueError:  # an empty cell: the enclosing function has not assigned it yet
            yield name, _Unassigned(name)


@functools.lru_cache(maxsize=512)
def _global_names(code: types.CodeType) -> tuple[str, ...]:
    """The global names a code object and those nested in it read, sorted: read off the bytecode
    once per code object, not at every launch (the values are looked up each time)."""
    names: set[str] = set()
    codes = [code]
    while codes:
        made = codes.pop()
        names.update(str(i.argval) for i in dis.get_instructions(made) if i.opname in _GLOBAL_LOADS)
        codes.extend(c for c in made.co_consts if isinstance(c, types.CodeType))
    return tuple(sorted(names))


class _Unassigned:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<closure variable {self.name} not assigned>"


def _describe(value: Any) -> Global:
    if isinstance(value, types.ModuleType):
        if sys.modules.get(value.__name__) is not value:
            return ("unsupported", f"module {value.__name__}, which is not importable under that name")
        if not _library(value.__name__):
            return (
                "unsupported",
                f"module {value.__name__}, the user's code: import what the kernel uses of it by name",
            )
        return ("module", value.__name__)
    if isinstance(value, tl.constexpr):
        inner = value.value
        if type(inner) in _PLAIN:
            return ("constexpr", inner)
        return ("unsupported", repr(value))
    if type(value) in _PLAIN:
        return ("value", value)
    if isinstance(value, triton_compat.JIT_TYPES):
        function = triton_compat.jit_source_function(value)
        if not str(function.__module__).startswith("triton."):
            return ("jit", function.__name__)
        return _importable(function, value)
    return _importable(value, value)


def _importable(named: Any, value: Any) -> Global:
    """("from", (module, name)) when `named`'s module and name lead back to `value`."""
    module_name = getattr(named, "__module__", None)
    name = getattr(named, "__qualname__", None)
    module = sys.modules.get(module_name) if isinstance(module_name, str) else None
    if module is None or not isinstance(name, str) or "." in name:
        return ("unsupported", repr(value))
    if not _library(str(module_name)):
        return ("unsupported", f"{name} of {module_name}, the user's code")
    there = getattr(module, name, None)
    # Triton's own modules may hold a stand-in while a session patches them (libdevice's stubs)
    if there is value or (there is not None and str(module_name).startswith("triton.")):
        return ("from", (module_name, name))
    return ("unsupported", repr(value))


def _library(module_name: str) -> bool:
    """Whether a module is installed code (Triton, the standard library, site-packages), which a
    standalone file may import, rather than the user's own, which it carries instead."""
    top = module_name.partition(".")[0]
    if top == "triton" or top in sys.stdlib_module_names:
        return True
    file = getattr(sys.modules.get(module_name), "__file__", None)
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    return file is not None and any(str(file).startswith(path) for path in installed)


def _shown(described: Global) -> str:
    tag, data = described
    if tag == "module":
        return f"module {data}"
    if tag == "from":
        return f"{data[0]}.{data[1]}"
    if tag == "jit":
        return f"@triton.jit {data}"
    if tag in ("value", "constexpr"):
        return repr(data) if tag == "value" else f"tl.constexpr({data!r})"
    return str(data)
