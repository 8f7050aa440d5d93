"""What a statement's expression does that the GPU rounds differently from the interpreter.

Read from the kernel's source when its probed variant is generated, and used to tell a difference
that rounding explains (a tf32 dot, a reduction, an a*b+c the GPU contracts to an fma, approximate
math) from a real divergence. Load addresses are left out: their arithmetic is on integers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

# Calls whose results the GPU rounds differently from the interpreter, by the kind of difference.
_REDUCTIONS = {"sum", "cumsum", "cumprod", "reduce", "associative_scan", "xor_sum"}
_ADDRESSING = {"load", "arange", "make_block_ptr", "advance", "multiple_of", "max_contiguous"}
_APPROXIMATE = {
    "exp", "exp2", "log", "log2", "log1p", "expm1", "sin", "cos", "tan", "sqrt", "rsqrt", "tanh",
    "erf", "sigmoid", "softmax", "pow", "div_rn", "fdiv", "fma",
}  # fmt: skip


@dataclass(frozen=True)
class StatementFacts:
    """What a statement's expression does that the GPU may round differently.

    Attributes:
        operands: the names the statement reads.
        sources: "tf32 dot" (a dot at Triton's default precision), "dot", "reduction",
            "fma contraction" (a*b+c) or "approximate math" (exp, sqrt, /, ...).
        expression: the source of the expression (to recompute it: `kernel_nb.compare.reevaluate`).
    """

    operands: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    expression: str = ""


def facts_of(reads: list[ast.expr]) -> StatementFacts:
    """The facts of a statement whose value comes from `reads` (the assigned expression)."""
    operands: set[str] = set()
    sources: set[str] = set()
    for expr in reads:
        for node in _walk_values(expr):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                operands.add(node.id)
            elif isinstance(node, ast.Call):
                called = called_name(node.func)
                if called in ("dot", "dot_scaled"):
                    sources.add("tf32 dot" if default_precision(node) else "dot")
                elif called in _REDUCTIONS:
                    sources.add("reduction")
                elif called in _APPROXIMATE:
                    sources.add("approximate math")
            elif isinstance(node, ast.BinOp):
                if isinstance(node.op, (ast.Add, ast.Sub)) and any(
                    isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult)
                    for side in (node.left, node.right)
                ):
                    sources.add("fma contraction")
                elif isinstance(node.op, ast.Div):
                    sources.add("approximate math")
    expression = ast.unparse(reads[0]) if len(reads) == 1 else ""
    return StatementFacts(tuple(sorted(operands)), tuple(sorted(sources)), expression)


def _walk_values(expr: ast.expr) -> Iterable[ast.AST]:
    """The nodes of an expression, but not the addresses of loads (integer arithmetic, exact on both sides)."""
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Call) and called_name(node.func) in _ADDRESSING:
            stack.append(node.func)
            stack.extend(k.value for k in node.keywords if k.arg == "other")
            continue
        stack.extend(ast.iter_child_nodes(node))


def called_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def default_precision(call: ast.Call) -> bool:
    """A dot that the GPU runs on tf32 inputs when they are fp32 (no ieee / tf32x3 / allow_tf32=False)."""
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg == "input_precision" and isinstance(value, ast.Constant) and value.value != "tf32":
            return False
        if keyword.arg == "allow_tf32" and isinstance(value, ast.Constant) and value.value is False:
            return False
    return True
