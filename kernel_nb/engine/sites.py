"""The places a kernel's values are recorded, found by one walk over a function's body.

The interpreter's rewrite records a value at each of these sites and the GPU probe logs one at
each of the same sites, so a statement the one records is a statement the other logs by
construction: both are a `SiteWalker`, and only say what to put after a site and around a loop.

A site is an argument of the function, a name an assignment binds (`x = ...`, `a, b = ...`,
`x: T = ...`), the name of an augmented assignment (`acc += ...`) and a `for` loop's variables.
Statements under `if`, `for`, `while`, `with` and `try` bodies are walked; the handlers and the
`finally` of a `try` are not (Triton's compiler has no exceptions).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernel_nb.engine.ast_nodes import walk


@dataclass(frozen=True)
class Site:
    """One recorded value.

    Attributes:
        name: the name bound.
        line: the file line of the statement (of the `def` for an argument).
        kind: "arg", "assign", "augassign" or "loop".
        reads: the expression the value is computed from (for `acc += x` the whole `acc + x`);
            None for an argument or a loop variable.
        node: the statement (or `def`) the site belongs to, whose location code put after it takes.
    """

    name: str
    line: int
    kind: str
    node: ast.AST = field(compare=False, repr=False)
    reads: ast.expr | None = None


def argument_sites(fdef: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Site]:
    """The function's arguments, in order: a program's records start with its inputs."""
    return [Site(a.arg, fdef.lineno, "arg", fdef) for a in fdef.args.args + fdef.args.kwonlyargs]


def assignment_sites(stmt: ast.stmt) -> list[Site]:
    """The sites a simple statement makes (none for a statement that binds nothing)."""
    if isinstance(stmt, ast.Assign):
        names = [n for target in stmt.targets for n in target_names(target)]
        return [Site(n, stmt.lineno, "assign", stmt, stmt.value) for n in names]
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        fused = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
        return [Site(stmt.target.id, stmt.lineno, "augassign", stmt, fused)]
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
        return [Site(stmt.target.id, stmt.lineno, "assign", stmt, stmt.value)]
    return []


def loop_sites(stmt: ast.For | ast.While) -> list[Site]:
    """A `for` loop's variables, recorded at the top of every iteration."""
    if not isinstance(stmt, ast.For):
        return []
    return [Site(n, stmt.lineno, "loop", stmt) for n in target_names(stmt.target)]


def ends_early(stmt: ast.For | ast.While) -> bool:
    """Whether a loop's iteration may end before the end of its body (a break, continue or
    return in it): then not every iteration makes every site of its body."""
    return any(isinstance(n, (ast.Break, ast.Continue, ast.Return)) for n in walk(stmt))


def target_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in target_names(element)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


class SiteWalker:
    """Walks a body in execution order and puts `after(site)` behind every site.

    Subclasses say what a site becomes (`after`), what goes before a statement (`before`) and may
    wrap loops (`loop`, which by default puts the loop variables' sites at the top of the body).
    """

    def after(self, site: Site) -> list[ast.stmt]:
        raise NotImplementedError

    def before(self, stmt: ast.stmt) -> list[ast.stmt]:
        return []

    def block(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            out.extend(self.before(stmt))
            out.extend(self.statement(stmt))
        return out

    def statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt)
        if isinstance(stmt, ast.If):
            stmt.body = self.block(stmt.body)
            stmt.orelse = self.block(stmt.orelse)
            return [stmt]
        if isinstance(stmt, (ast.With, ast.Try)):
            stmt.body = self.block(stmt.body)
            return [stmt]
        return [stmt, *(s for site in assignment_sites(stmt) for s in self.after(site))]

    def loop(self, stmt: ast.For | ast.While) -> list[ast.stmt]:
        head = [s for site in loop_sites(stmt) for s in self.after(site)]
        stmt.body = head + self.block(stmt.body)
        stmt.orelse = self.block(stmt.orelse)
        return [stmt]

    def loop_head(self, stmt: ast.For | ast.While) -> list[ast.stmt]:
        """The loop variables' sites, for a subclass's own `loop`."""
        return [s for site in loop_sites(stmt) for s in self.after(site)]
