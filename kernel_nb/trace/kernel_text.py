"""A kernel as the text of a module: the imports and constants that recreate the globals its
source reads (`Launch.kernel_globals`), its helpers' sources, then its own.

A standalone test of a launch (`reproducer`) and a saved recording (`kernel_nb.record`) carry a
kernel this way, to run it where none of the user's modules are.
"""

from __future__ import annotations

import ast
import json
import math
import textwrap
from collections.abc import Mapping
from typing import Any

from kernel_nb.trace.records import SourceInfo

IMPORTS = ("module", "from")
Global = tuple[str, Any]
# what a module of a kernel alone imports first
MODULE_HEAD = "import triton\nimport triton.language as tl\n"
_MODULE_OWN: dict[str, Global] = {"triton": ("module", "triton"), "tl": ("module", "triton.language")}


def module_text(kernel: str, described: Mapping[str, Global], sources: Mapping[str, SourceInfo]) -> str:
    """The text of a module that defines `kernel` as its own (see the module's docstring).

    Raises:
        ValueError: a global or a source cannot be carried (the message names it).
    """
    text = MODULE_HEAD + globals_block(kernel, described, _MODULE_OWN, "the module")
    return text + "".join("\n\n" + source for _, _, source in function_sources(kernel, described, sources))


def globals_block(kernel: str, described: Mapping[str, Global], own: Mapping[str, Global], owner: str) -> str:
    """The imports and constants that recreate the kernel's globals (helpers: `function_sources`),
    but for those `owner` (a file whose head imports `own`) has already."""
    lines = []
    for name, (tag, data) in sorted(described.items(), key=lambda i: i[1][0] not in IMPORTS):
        if tag == "unsupported" or own.get(name, (tag, data)) != (tag, data):
            why = data if tag == "unsupported" else f"{owner}'s own {name} is {own[name]}"
            raise ValueError(f"{kernel}: global {name} cannot be recreated ({why})")
        if name in own or tag == "jit":
            continue
        if tag == "module":
            parent, _, last = str(data).rpartition(".")
            line = f"from {parent} import {last}" if parent else f"import {data}"
            lines.append(line + ("" if last == name else f" as {name}"))
        elif tag == "from":
            lines.append(f"from {data[0]} import {data[1]}" + ("" if data[1] == name else f" as {name}"))
        else:
            value = literal(data)
            lines.append(f"{name} = tl.constexpr({value})" if tag == "constexpr" else f"{name} = {value}")
    return "\n# what the kernel's source reads from its module\n" + "\n".join(lines) + "\n" if lines else ""


def function_sources(
    kernel: str, described: Mapping[str, Global], sources: Mapping[str, SourceInfo]
) -> list[tuple[str, int, str]]:
    """(file, line of its `def` there, text) of the helpers, then the kernel; a helper
    read under another name than its own is then aliased."""
    helpers = {name: data for name, (tag, data) in described.items() if tag == "jit"}
    out = []
    for function in [*dict.fromkeys(helpers.values()), kernel]:
        info = sources.get(function)
        if info is None:
            raise ValueError(f"{kernel}: no source of {function} was recorded: the launch never called it")
        text = textwrap.dedent(info.text)
        defs = [n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
        # its own decorators are left behind: @triton.jit stands for them
        body = "".join(text.splitlines(keepends=True)[defs[0].lineno - 1 :])
        out.append((info.file, info.first_line + defs[0].lineno - 1, "@triton.jit\n" + body))
    aliases = "".join(f"{name} = {function}\n" for name, function in helpers.items() if name != function)
    return out + ([("", 0, aliases)] if aliases else [])


def literal(value: Any) -> str:
    """Python source for plain data, tuples and dicts of it, and Triton dtypes (`tl.dtype("fp16")`).
    A tuple holding None has none: a buffer inside a tuple argument is recorded as None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if value is None or type(value) in (bool, int, float, str):
        return json.dumps(value) if isinstance(value, str) else repr(value)
    if isinstance(value, tuple) and all(v is not None for v in value):
        items = [literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if type(value).__name__ == "dtype" and type(value).__module__.startswith("triton.language"):
        return f"tl.dtype({json.dumps(value.name)})"
    raise ValueError(f"{value!r} has no literal form")
