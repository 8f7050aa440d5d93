"""Which buffers a tf32 dot's result reaches, read off the kernel's source.

The GPU runs an fp32 `tl.dot` at Triton's default precision on tf32 inputs (10-bit mantissas), so
what it feeds may be 1e-3 off the interpreter's exact products; what it does not feed keeps fp32's
own tolerance. A name is fed by a dot when its value comes from one, or from a name that is,
through any assignment (loops included: the walk repeats until nothing changes) and through
helpers that hold a dot or are handed a fed value. A buffer is fed when a store or atomic whose
value is fed writes through a pointer derived from it.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterable, Mapping

from kernel_nb.compare.precision import called_name, default_precision
from kernel_nb.trace import SourceInfo

_WRITES = {"store", "atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
           "atomic_xchg", "atomic_cas"}  # fmt: skip


def dot_fed_buffers(
    sources: Mapping[str, SourceInfo], kernel: str, buffers: Iterable[str]
) -> set[str] | None:
    """The buffer arguments (names of `buffers`, ".i" tuple elements by their parameter) that a
    default-precision dot's result is stored into.

    Returns:
        Those buffers, or None when the source cannot say (no source, a helper that stores, a
        pointer passed on in a way this reading does not follow): then every fp32 buffer counts.
    """
    stores = dot_fed_stores(sources, kernel, buffers)
    return None if stores is None else {name for name, (fed, _) in stores.items() if fed}


def dot_fed_stores(
    sources: Mapping[str, SourceInfo], kernel: str, buffers: Iterable[str]
) -> dict[str, tuple[set[int], set[int]]] | None:
    """Per buffer argument a store or atomic writes (as `dot_fed_buffers` names them), the source
    lines of those writes: (the ones whose value a default-precision dot's result reaches, the
    others). None when the source cannot say (see `dot_fed_buffers`)."""
    trees = {name: _function(info) for name, info in sources.items()}
    fdef = trees.get(kernel)
    if fdef is None:
        return None
    first_line = sources[kernel].first_line
    params = {a.arg for a in fdef.args.args}
    wanted = {b.split(".")[0] for b in buffers}
    helpers_with_dot = _helpers_with_dot(trees)
    if any(_writes_in(tree) for name, tree in trees.items() if name != kernel and tree is not None):
        return None
    fed: set[str] = set()
    derives: dict[str, set[str]] = {p: {p} for p in params}
    for _ in range(len(fdef.body) + 8):  # a fixpoint: each pass can only add names
        before = (len(fed), sum(len(v) for v in derives.values()))
        for node in ast.walk(fdef):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                reads = [node.value] + ([node.target] if isinstance(node, ast.AugAssign) else [])
                is_fed = any(_fed(r, fed, helpers_with_dot) for r in reads)
                roots = set().union(*(_roots(r, derives) for r in reads))
                for name in names:
                    if is_fed:
                        fed.add(name)
                    derives.setdefault(name, set()).update(roots)
            elif isinstance(node, (ast.For, ast.comprehension)):
                for n in ast.walk(node.target):
                    if isinstance(n, ast.Name):
                        derives.setdefault(n.id, set()).update(_roots(node.iter, derives))
        if (len(fed), sum(len(v) for v in derives.values())) == before:
            break
    out: dict[str, tuple[set[int], set[int]]] = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call) and called_name(node.func) in _WRITES:
            pointer, value = _pointer_and_value(node)
            is_fed = value is not None and _fed(value, fed, helpers_with_dot)
            roots = _roots(pointer, derives) & wanted if pointer is not None else set()
            if not roots:
                if is_fed:
                    return None  # a fed store whose buffer this reading cannot name
                continue
            line = first_line + node.lineno - 1
            for root in roots:
                out.setdefault(root, (set(), set()))[0 if is_fed else 1].add(line)
    return out


def _function(info: SourceInfo) -> ast.FunctionDef | None:
    try:
        module = ast.parse(textwrap.dedent(info.text))
    except SyntaxError:
        return None
    return next((n for n in module.body if isinstance(n, ast.FunctionDef)), None)


def _helpers_with_dot(trees: Mapping[str, ast.FunctionDef | None]) -> set[str]:
    direct = {name for name, tree in trees.items() if tree is not None and _has_dot(tree)}
    changed = True
    while changed:  # a helper that calls a helper with a dot has one too
        changed = False
        for name, tree in trees.items():
            if name in direct or tree is None:
                continue
            if any(isinstance(n, ast.Call) and called_name(n.func) in direct for n in ast.walk(tree)):
                direct.add(name)
                changed = True
    return direct


def _has_dot(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call) and called_name(n.func) in ("dot", "dot_scaled") and default_precision(n)
        for n in ast.walk(node)
    )


def _fed(expr: ast.AST, fed: set[str], helpers_with_dot: set[str]) -> bool:
    for n in ast.walk(expr):
        if isinstance(n, ast.Name) and n.id in fed:
            return True
        if isinstance(n, ast.Call):
            called = called_name(n.func)
            if (called in ("dot", "dot_scaled") and default_precision(n)) or called in helpers_with_dot:
                return True
    return False


def _roots(expr: ast.AST, derives: Mapping[str, set[str]]) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            out |= derives.get(n.id, set())
    return out


def _writes_in(tree: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Call) and called_name(n.func) in _WRITES for n in ast.walk(tree))


def _pointer_and_value(call: ast.Call) -> tuple[ast.expr | None, ast.expr | None]:
    """(pointer, value) of tl.store(ptr, value) / tl.atomic_*(ptr, val) / desc.store(offsets, value)."""
    keywords = {k.arg: k.value for k in call.keywords}
    if isinstance(call.func, ast.Attribute) and not _is_language(call.func.value):
        # a method of a descriptor or block pointer: desc.store(offsets, value)
        value = call.args[1] if len(call.args) > 1 else keywords.get("value")
        return call.func.value, value
    pointer = call.args[0] if call.args else keywords.get("pointer")
    at = 2 if called_name(call.func) == "atomic_cas" else 1  # atomic_cas(pointer, cmp, val)
    value = call.args[at] if len(call.args) > at else keywords.get("value", keywords.get("val"))
    return pointer, value


def _is_language(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in {"tl", "triton"}
