"""What a function's syntax reads and binds, for the rewrite: names read, assigned and carried
from one loop iteration into the next, functions called, and what a recorded expression shows.
Read off the syntax tree, not the text: a commented-out call is no call."""

from __future__ import annotations

import ast
from collections import Counter

from kernel_nb.engine.ast_nodes import walk
from kernel_nb.engine.sites import target_names


def name_facts(fdef: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], Counter[str], set[str]]:
    """From one walk of a function: the names of the functions its body calls (`f(...)` and
    `m.f(...)` give "f"), how often its body reads each name (`reads`), and its parameters and
    every name it binds."""
    called: set[str] = set()
    counts: Counter[str] = Counter()
    args = fdef.args
    bound = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    bound.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for stmt in fdef.body:
        for node in walk(stmt):
            _count_read(node, counts)
            if isinstance(node, ast.Name):
                if not isinstance(node.ctx, ast.Load):
                    bound.add(node.id)
            elif isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name):
                    called.add(func.id)
                elif isinstance(func, ast.Attribute):
                    called.add(func.attr)
    return called, counts, bound


def reads(body: list[ast.stmt]) -> Counter[str]:
    """How often the statements read each name (`x += 1` reads x)."""
    counts: Counter[str] = Counter()
    for stmt in body:
        for node in walk(stmt):
            _count_read(node, counts)
    return counts


def _count_read(node: ast.AST, counts: Counter[str]) -> None:
    """Count the names `node` itself reads: a name loaded, an augmented assignment's target."""
    if isinstance(node, ast.Name):
        if isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
    elif isinstance(node, ast.AugAssign):
        counts.update(target_names(node.target))


def binding_order(body: list[ast.stmt]) -> list[tuple[set[str], set[str]]]:
    """Per statement of a loop body, in order: the names it reads first, and the names it then
    binds (only a plain assignment binds here: any other statement that names a variable counts
    as reading it, the conservative side for `carried`)."""
    order: list[tuple[set[str], set[str]]] = []
    for stmt in body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            read = names_read(stmt.value).union(*(names_read(t) for t in targets))
            order.append((read, {t.id for t in targets if isinstance(t, ast.Name)}))
        else:
            order.append(({n.id for n in walk(stmt) if isinstance(n, ast.Name)}, set()))
    return order


def carried(order: list[tuple[set[str], set[str]]], name: str) -> bool:
    """Whether an iteration of a loop body (its `binding_order`) may read `name` before assigning
    it (conservatively: unless a plain assignment at the top of the body that does not read it
    comes first)."""
    for read, bound in order:
        if name in read:
            return True
        if name in bound:
            return False
    return True


def names_read(expr: ast.expr) -> set[str]:
    return {n.id for n in walk(expr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def expression_facts(expr: ast.expr) -> tuple[tuple[str, ...], bool, bool]:
    """What a recorded expression shows, from one walk: the names it reads (sorted); whether it
    makes an infinity on purpose (float("inf"), math.inf, a literal 1e999, a load's other=); and
    whether it calls a load."""
    names: set[str] = set()
    makes_inf = loads = False
    for node in walk(expr):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                names.add(node.id)
        elif isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, str):
                makes_inf = makes_inf or value.strip().lstrip("+-").lower() in ("inf", "infinity")
            elif isinstance(value, float):
                makes_inf = makes_inf or value in (float("inf"), float("-inf"))
        elif isinstance(node, ast.Attribute):
            makes_inf = makes_inf or node.attr == "inf"
        elif isinstance(node, ast.keyword):
            makes_inf = makes_inf or node.arg == "other"
        elif isinstance(node, ast.Call):
            func = node.func
            loads = (
                loads or (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "load"
            )
    return tuple(sorted(names)), makes_inf, loads
