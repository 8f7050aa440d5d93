"""What Triton's compiler refuses in a kernel's control flow, checked as the rewritten kernel runs:
the interpreter itself would take a block as true, or take one lane of it as a loop bound."""

from __future__ import annotations

import math
from typing import Any

from kernel_nb.engine import triton_compat


def condition(value: Any) -> Any:
    """An `if` or `while` condition, refused as Triton's compiler refuses it when it is a block of
    more than one element (the interpreter takes every such block as true). Only the kernel's own
    statements are checked: triton.language's Python takes the truth of blocks on purpose.

    Raises:
        CompileTimeError: the condition is such a block.
    """
    if triton_compat.is_tensor(value) and value.type.is_block():
        shape = [int(n) for n in value.type.shape]  # a tl.tuple in triton 3.6
        if math.prod(shape) > 1:
            raise triton_compat.CompileTimeError(
                f"Boolean value of Tensor with more than one value is ambiguous (a block of shape {shape}); "
                "reduce it first (tl.max, tl.min) or test a scalar"
            )
    return value


def loop_bound(value: Any, role: str) -> Any:
    """A range loop's bound or step, refused as Triton's compiler refuses it when it is a block
    (the interpreter would take one lane of it); `role` is "lower bound", "upper bound" or "step".

    Raises:
        CompileTimeError: the bound is a block of more than one element.
    """
    if triton_compat.is_tensor(value) and value.type.is_block():
        raise triton_compat.CompileTimeError(f"For {role} must be a scalar, got {value.type}")
    return value
