"""The names a failing source line reads: the error's location is a line, and what it loads or
stores through says which argument was at fault."""

from __future__ import annotations

import ast
import linecache

MEMORY_CALLS = {"load", "store", "atomic_cas", "atomic_xchg"}
MEMORY_CALLS |= {f"atomic_{op}" for op in ("add", "max", "min", "and", "or", "xor")}


def names_on_line(file: str | None, line: int | None) -> tuple[set[str], set[str]]:
    """(names in the pointers of the line's loads, stores and atomics; every name on the line), both
    empty when the line cannot be read or parsed on its own."""
    text = linecache.getline(file, line).strip() if file and line else ""
    try:
        tree = ast.parse(text.rstrip(":") if text.endswith(":") else text)
    except SyntaxError:
        return set(), set()
    pointers = {
        node.id
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in MEMORY_CALLS
        and call.args
        for node in ast.walk(call.args[0])
        if isinstance(node, ast.Name)
    }
    return pointers, {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
