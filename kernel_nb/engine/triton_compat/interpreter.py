"""Triton's interpreter (`triton.runtime.interpreter`): its builder, its semantic, its native
loads and stores, and the runtime classes a session replaces methods of."""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import triton.language as tl
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction, TensorWrapper

from kernel_nb.engine.triton_compat.methods import LOAD_METHOD, STORE_METHOD
from kernel_nb.engine.triton_compat.versions import require


def _interpreter_module() -> types.ModuleType:
    import triton.runtime.interpreter as interp

    return interp


interp = _interpreter_module()
TensorHandle = require(interp, "TensorHandle")
InterpreterBuilder = require(interp, "InterpreterBuilder")
# the interpreter's tensor descriptor (3.4+): base pointer, shape, strides, block shape, padding
TensorDescHandle: Any = getattr(interp, "TensorDescHandle", object)

# Where the language's front end and the interpreter's machinery live (to tell their frames apart).
LANGUAGE_DIR = str(Path(str(tl.__file__)).resolve().parent)
RUNTIME_DIR = str(Path(str(interp.__file__)).resolve().parent)

# The public classes whose methods a session replaces (and restores).
JIT_FUNCTION = JITFunction
# What @triton.jit makes while TRITON_INTERPRET=1 (the stock interpreter's kernels and helpers,
# triton.language's own @jit functions included): a session takes over its launches and calls as
# it does a JITFunction's, through a JITFunction of the same function (`jit.as_jit`).
INTERPRETED_FUNCTION: Any = require(interp, "InterpretedFunction")
JIT_TYPES: tuple[Any, ...] = (JITFunction, INTERPRETED_FUNCTION)
# triton 3.4's InterpretedFunction makes its `run` per kernel, in __init__, and launches through a
# __getitem__ of its own that does not call it: a session replaces that __getitem__ there
INTERPRETED_RUN_PER_KERNEL: bool = not hasattr(INTERPRETED_FUNCTION, "run")

# What triton.reinterpret(tensor, dtype) returns: `.base` and `.dtype` (a Triton element type).
TENSOR_WRAPPER = TensorWrapper
AUTOTUNER = Autotuner
# the Autotuner method that times one config by launching it many times (3.4 to 3.9)
AUTOTUNE_BENCH = "_bench"
HEURISTICS = Heuristics


def poll_timeout_ns(timeout: Any) -> int | None:
    """create_atomic_poll's timeout in ns; None for none (3.9 passes an empty ir.value() then, which
    its interpreter mistakes for a timeout)."""
    data = getattr(timeout, "data", None)
    return None if data is None else int(np.asarray(data).reshape(-1)[0])


def plain_load(builder: Any, ptr: Any, mask: Any, rest: tuple[Any, ...]) -> Any:
    """What the interpreter's `create_load(ptr, *rest)` does, with `mask` as its all-true mask: the
    masked load, the other arguments passed on in their order (both 3.6 and 3.9)."""
    return getattr(builder, LOAD_METHOD)(ptr, mask, None, *rest)


def plain_store(builder: Any, ptr: Any, value: Any, mask: Any, rest: tuple[Any, ...]) -> Any:
    """What the interpreter's `create_store(ptr, value, *rest)` does, with `mask` as its all-true
    mask (3.6 passes None for its cache arguments; the masked store ignores them either way)."""
    return getattr(builder, STORE_METHOD)(ptr, value, mask, *rest)


def builder() -> Any:
    """The interpreter's builder instance (one per process; the session hooks its methods)."""
    return require(interp, "interpreter_builder")


def semantic() -> Any:
    """The semantic object that rewritten assignments call `to_tensor` on."""
    return require(interp, "interpreter_semantic")


def np_dtype(tl_dtype: Any) -> np.dtype:
    """numpy dtype the interpreter uses for a Triton element type."""
    return np.dtype(require(interp, "_get_np_dtype")(tl_dtype))


def raw_load(addresses: np.ndarray, mask: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Read elements at host addresses (masked lanes give 0) without going through the builder."""
    from triton._C.libtriton import interpreter as native

    other = np.zeros(addresses.shape, dtype=dtype)
    return native.load(addresses, np.ascontiguousarray(np.broadcast_to(mask, addresses.shape)), other, dtype)


def raw_store(addresses: np.ndarray, values: np.ndarray) -> None:
    """Write elements at host addresses without going through the builder (undoing a batch)."""
    from triton._C.libtriton import interpreter as native

    if addresses.size:
        native.store(
            np.ascontiguousarray(addresses), np.ascontiguousarray(values), np.ones(addresses.shape, bool)
        )


@contextmanager
def builder_as(b: Any, cls: type, **attributes: Any) -> Iterator[Any]:
    """Make the interpreter's builder an instance of `cls` (a subclass) for a while.

    The patched builtins of triton.language hold on to the builder object itself (since 3.6 each
    through a semantic of its own), so the builder changes class in place rather than being replaced.
    """
    previous = b.__class__
    saved = {name: b.__dict__[name] for name in attributes if name in b.__dict__}
    b.__class__ = cls
    for name, value in attributes.items():
        setattr(b, name, value)
    try:
        yield b
    finally:
        b.__class__ = previous
        for name in attributes:
            if name in saved:
                setattr(b, name, saved[name])
            else:
                b.__dict__.pop(name, None)
        b.__dict__.pop("atomic_rows", None)


def rmw_op_name(op: Any) -> str:
    """ "add", "fadd", "max", ... for an atomic RMW op enum."""
    return str(op).split(".")[-1].lower()


def set_debug(b: Any) -> Any:
    """Turn on device_assert in the builder (it is a no-op unless options.debug); returns the old options.

    Triton's int32 overflow sanitizer, which debug mode also enables, stays off: it would raise on
    the wrapping arithmetic of hash-style kernels that compiled code performs without complaint.
    The dot input precisions are the CUDA backend's (bf16x3 and bf16x6 too, where Triton has them),
    since kernel_nb computes each as the GPU does.
    """
    old = b.options
    fields = {f for f in getattr(type(old), "__dataclass_fields__", {})}
    changes: dict[str, Any] = {"debug": True}
    if "sanitize_overflow" in fields:
        changes["sanitize_overflow"] = False
    if "allowed_dot_input_precisions" in fields:
        changes["allowed_dot_input_precisions"] = dot_input_precisions()
    import dataclasses

    b.options = dataclasses.replace(old, **changes)
    return old


def dot_input_precisions() -> tuple[str, ...]:
    """The `tl.dot` input precisions of the CUDA backend that this Triton's language knows
    (bf16x3 and bf16x6 from 3.6 on)."""
    from triton._C.libtriton import ir

    known = {name.lower() for name in ir.INPUT_PRECISION.__members__}
    return tuple(p for p in ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6") if p in known)


def set_grid(b: Any, grid: tuple[int, int, int]) -> None:
    b.set_grid_dim(*grid)


def set_program(b: Any, pid: tuple[int, int, int]) -> None:
    b.set_grid_idx(*pid)


def stock_transformers() -> list[ast.NodeTransformer]:
    """The AST rewrites Triton's interpreter applies to kernel source (assignments made tensors,
    chained comparisons); 3.4 and 3.5 have none."""
    cls = getattr(interp, "ASTTransformer", None)
    return [cls()] if cls is not None else []


def rewrite_globals() -> dict[str, Any]:
    """Names that the stock AST rewrites refer to."""
    names = {"interpreter_semantic": semantic()}
    for extra in ("_InterpreterComparison",):
        if hasattr(interp, extra):
            names[extra] = getattr(interp, extra)
    return names


def is_interpreter_range(fn: Any) -> bool:
    """Whether `fn` is what the interpreter puts in place of tl.range and tl.static_range."""
    return getattr(fn, "__name__", "") == "_new_range" and getattr(fn, "__module__", "") == interp.__name__
