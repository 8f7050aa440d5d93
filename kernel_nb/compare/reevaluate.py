"""A statement recomputed on the CPU from the GPU's own operand values.

A statement whose value differs between the GPU and the interpreter either made the difference
(its own operation computes something else) or carries one that came in through its operands: a
subtraction of two close values turns operand differences within tolerance into a large relative
one. Recomputing the statement from the GPU's operands tells them apart: if the result is the GPU's
within the statement's own tolerance, the operation did what the interpreter does and the difference
came in. Only elementwise expressions are recomputed (arithmetic, comparisons, `tl.where`, min/max,
math functions, casts, broadcasting subscripts); anything else (dots, reductions, loads) answers None
and the statement is judged by its tolerance alone.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.Mod: np.fmod, ast.Pow: np.power, ast.BitAnd: np.bitwise_and, ast.BitOr: np.bitwise_or,
    ast.BitXor: np.bitwise_xor,
}  # fmt: skip
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater, ast.GtE: np.greater_equal,
    ast.Eq: np.equal, ast.NotEq: np.not_equal,
}  # fmt: skip
_CALLS: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt, "abs": np.abs,
    "sin": np.sin, "cos": np.cos, "maximum": np.maximum, "minimum": np.minimum, "where": np.where,
    "fma": lambda a, b, c: a * b + c, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}  # fmt: skip
_FLOAT_TYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


class _NotElementwise(Exception):
    """The expression holds something this module does not recompute."""


def recompute(expression: str, operands: Mapping[str, np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    """`expression` (a statement's right-hand side, as source) evaluated on `operands`, in `dtype`.

    Float operands and constants are taken in `dtype` (the statement's type, which Triton promotes
    its float operands to), so each operation rounds as the GPU's does, without fma contraction.

    Returns:
        The value, or None when the expression is not elementwise or reads a name not in `operands`.
    """
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return None
    evaluator = _Evaluator(operands, np.dtype(dtype))
    try:
        with np.errstate(all="ignore"):
            value = evaluator.eval(tree.body)
    except (_NotElementwise, ValueError, TypeError):
        return None
    return np.asarray(value)


class _Evaluator:
    def __init__(self, operands: Mapping[str, np.ndarray], dtype: np.dtype) -> None:
        self.operands = operands
        self.dtype = dtype
        self.floating = dtype.kind == "f"

    def eval(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            if node.id not in self.operands:
                raise _NotElementwise(node.id)
            return self._typed(np.asarray(self.operands[node.id]))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
            return self._typed(np.asarray(node.value))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return np.negative(self.eval(node.operand))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return _COMPARE[type(node.ops[0])](self.eval(node.left), self.eval(node.comparators[0]))
        if isinstance(node, ast.Subscript):
            return self.eval(node.value)[self._index(node.slice)]
        if isinstance(node, ast.Call):
            return self._call(node)
        raise _NotElementwise(ast.dump(node))

    def _call(self, node: ast.Call) -> Any:
        func = node.func
        if node.keywords:
            raise _NotElementwise("keywords")
        if isinstance(func, ast.Attribute) and func.attr == "to" and len(node.args) == 1:
            arg = node.args[0]
            target = _FLOAT_TYPES.get(arg.attr) if isinstance(arg, ast.Attribute) else None
            if target is None:
                raise _NotElementwise("a cast to a type other than a float")
            return np.asarray(self.eval(func.value)).astype(target)
        # a function of the language (tl.exp, libdevice.exp), not a method of a value (x.exp())
        if isinstance(func, ast.Attribute) and _is_module(func.value):
            name = func.attr
        else:
            name = func.id if isinstance(func, ast.Name) else ""
        if name in _CALLS:
            return _CALLS[name](*(self.eval(a) for a in node.args))
        raise _NotElementwise(name)

    def _index(self, node: ast.expr) -> Any:
        parts = node.elts if isinstance(node, ast.Tuple) else [node]
        out: list[Any] = []
        for part in parts:
            if isinstance(part, ast.Constant) and part.value is None:
                out.append(None)
            elif isinstance(part, ast.Slice) and part.lower is part.upper is part.step is None:
                out.append(slice(None))
            else:
                raise _NotElementwise("index")
        return tuple(out)

    def _typed(self, value: np.ndarray) -> np.ndarray:
        if self.floating and (value.dtype.kind == "f" or value.ndim == 0):
            return value.astype(self.dtype)
        return value


def _is_module(node: ast.expr) -> bool:
    """`tl`, `triton.language`, `tl.math`, `libdevice`: a module path, not a value."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in {"tl", "triton", "libdevice", "math"}


def agrees(local: np.ndarray, gpu: np.ndarray, rtol: float, floor: float) -> bool:
    """The recomputed value is the GPU's within a tolerance (|gpu - local| <= floor + rtol·|local|),
    NaN where the GPU has NaN and the same infinities."""
    if local.shape != gpu.shape:
        try:
            local = np.broadcast_to(local, gpu.shape)
        except ValueError:
            return False
    c, g = local.astype(np.float64), gpu.astype(np.float64)
    same_nan = np.isnan(c) == np.isnan(g)
    close = np.isclose(g, c, rtol=rtol, atol=floor, equal_nan=True) | (np.isinf(c) & (c == g))
    return bool(same_nan.all() and close.all())
