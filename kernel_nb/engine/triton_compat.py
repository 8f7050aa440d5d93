"""Every use of Triton's private interpreter API, in one place.

Supported: triton 3.4 to 3.9. A name missing from the installed Triton raises
`UnsupportedTritonError` naming the supported range, instead of an AttributeError deep in a launch.
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction

SUPPORTED = ((3, 4), (3, 9))


class UnsupportedTritonError(RuntimeError):
    """The installed Triton lacks an interpreter name kernel_nb relies on."""


def triton_version() -> tuple[int, int]:
    major, minor = triton.__version__.split(".")[:2]
    return int(major), int(minor)


def _require(module: Any, name: str) -> Any:
    try:
        return getattr(module, name)
    except AttributeError:
        lo, hi = SUPPORTED
        raise UnsupportedTritonError(
            f"triton {triton.__version__} has no {module.__name__}.{name}; kernel_nb supports triton "
            f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}: pip install 'triton>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}'"
        ) from None


def _interpreter_module() -> types.ModuleType:
    import triton.runtime.interpreter as interp

    return interp


_interp = _interpreter_module()
TensorHandle = _require(_interp, "TensorHandle")
InterpreterBuilder = _require(_interp, "InterpreterBuilder")
InterpreterError = (
    _require(_interp, "InterpreterError") if hasattr(_interp, "InterpreterError") else RuntimeError
)

# The public classes whose methods a session replaces (and restores).
JIT_FUNCTION = JITFunction
AUTOTUNER = Autotuner
HEURISTICS = Heuristics

# Memory operations of the builder; their argument lists differ between versions (cache modifier and
# eviction policy became one cache policy in 3.9), so hooks take them positionally and pass them on.
LOAD_METHOD = "create_masked_load"
STORE_METHOD = "create_masked_store"
ATOMIC_RMW_METHOD = "create_atomic_rmw"
ATOMIC_CAS_METHOD = "create_atomic_cas"
ASSERT_METHOD = "create_assert"
PLAIN_LOAD_METHOD = "create_load"  # tl.load without mask=; calls create_masked_load
PLAIN_STORE_METHOD = "create_store"


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
    return _require(_interp, "interpreter_builder")


def semantic() -> Any:
    """The semantic object that rewritten assignments call `to_tensor` on."""
    return _require(_interp, "interpreter_semantic")


def np_dtype(tl_dtype: Any) -> np.dtype:
    """numpy dtype the interpreter uses for a Triton element type."""
    return np.dtype(_require(_interp, "_get_np_dtype")(tl_dtype))


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
    """
    old = b.options
    fields = {f for f in getattr(type(old), "__dataclass_fields__", {})}
    changes = {"debug": True}
    if "sanitize_overflow" in fields:
        changes["sanitize_overflow"] = False
    import dataclasses

    b.options = dataclasses.replace(old, **changes)
    return old


def set_grid(b: Any, grid: tuple[int, int, int]) -> None:
    b.set_grid_dim(*grid)


def set_program(b: Any, pid: tuple[int, int, int]) -> None:
    b.set_grid_idx(*pid)


def patch_language() -> Callable[[], None]:
    """Route triton.language to the interpreter; returns the function that undoes it.

    `_patch_lang` looks for `tl` / `tl.core` among a function's globals, so it is handed a stub that
    has both. Before 3.6 it returns no scope; the session's namespace snapshot restores those versions.
    """
    patch = _require(_interp, "_patch_lang")

    def stub() -> None:
        pass

    stub_globals = {"tl": tl, "core": tl.core}
    probe = types.FunctionType(stub.__code__, stub_globals, "kernel_nb_language_probe")
    scope = patch(probe)
    _patch_index(tl.tensor)
    restore = getattr(scope, "restore", None)
    return restore if callable(restore) else (lambda: None)


def _patch_index(tensor_cls: type) -> None:
    # triton 3.6 uses int(handle.data), which numpy >= 2.4 refuses for a 1-element 1-D array:
    # `range(n)` with a runtime n would raise. The session's snapshot restores the class afterwards.
    tensor_cls.__index__ = lambda self: int(np.asarray(self.handle.data).reshape(-1)[0])  # type: ignore[attr-defined]


def language_namespaces() -> list[Any]:
    """Modules and classes that `_patch_lang` and helper calls modify, for snapshot and restore."""
    spaces: list[Any] = [tl, tl.core, tl.math, tl.tensor, tl.dtype]
    for owner, name in ((tl.core, "tensor_descriptor_base"), (tl, "condition"), (tl.core, "condition")):
        obj = getattr(owner, name, None)
        if obj is not None and obj not in spaces:
            spaces.append(obj)
    standard = getattr(tl, "standard", None)
    if standard is not None:
        spaces.append(standard)
    return spaces


def stock_transformers() -> list[ast.NodeTransformer]:
    """The AST rewrites Triton's interpreter applies to kernel source (assignments made tensors,
    chained comparisons); 3.4 and 3.5 have none."""
    cls = getattr(_interp, "ASTTransformer", None)
    return [cls()] if cls is not None else []


def rewrite_globals() -> dict[str, Any]:
    """Names that the stock AST rewrites refer to."""
    names = {"interpreter_semantic": semantic()}
    for extra in ("_InterpreterComparison",):
        if hasattr(_interp, extra):
            names[extra] = getattr(_interp, extra)
    return names


def pointer_tensor(address: int, element: Any) -> Any:
    """A scalar pointer argument as the interpreter represents one."""
    ty = tl.pointer_type(element)
    return tl.tensor(TensorHandle(np.array([address], dtype=np.uint64), ty), ty)


def scalar_tensor(value: bool | int | float) -> Any:
    """A scalar kernel argument. Floats are fp32, as a compiled kernel receives them."""
    if isinstance(value, bool):
        return tl.tensor(TensorHandle(np.array([value], dtype=np.bool_), tl.int1), tl.int1)
    if isinstance(value, float):
        return tl.tensor(TensorHandle(np.array([value], dtype=np.float32), tl.float32), tl.float32)
    ty = semantic().to_tensor_type(value) if hasattr(semantic(), "to_tensor_type") else None
    if ty is None:
        ty = tl.int32 if -(2**31) <= value < 2**31 else tl.int64
    return tl.tensor(TensorHandle(np.array([value], dtype=np_dtype(ty)), ty), ty)


def implicit_convert(value: Any) -> Any:
    """Triton's own conversion, for argument kinds kernel_nb passes through (descriptors)."""
    return _require(_interp, "_implicit_cvt")(value)


def make_tuple(original: Any, items: Iterable[Any]) -> Any:
    create = getattr(_interp, "_tuple_create", None)
    items = list(items)
    return create(original, items) if create is not None else tuple(items)


def is_tensor(value: Any) -> bool:
    return isinstance(value, tl.tensor)


def tensor_data(value: Any) -> np.ndarray:
    return value.handle.data


def tensor_type_name(value: Any) -> str:
    """ "fp32", "i32", "pointer<fp16>" for a tensor's element type."""
    scalar = value.type.scalar if hasattr(value.type, "scalar") else value.dtype
    return str(scalar)


def tensor_shape(value: Any) -> tuple[int, ...]:
    ty = value.type
    return tuple(int(s) for s in ty.shape) if getattr(ty, "is_block", lambda: False)() else ()


def is_pointer_tensor(value: Any) -> bool:
    scalar = value.type.scalar if hasattr(value.type, "scalar") else value.dtype
    return bool(scalar.is_ptr())


def pointer_element_itemsize(handle: Any) -> int:
    """Bytes per element a pointer handle's loads and stores move (int1 moves a byte)."""
    element = handle.get_element_ty()
    return max(1, element.primitive_bitwidth // 8)


def pointer_element_np(handle: Any) -> np.dtype:
    return np_dtype(handle.get_element_ty())


def jit_source_function(jit_fn: Any) -> Callable[..., Any]:
    """The Python function under a @triton.jit (or autotune/heuristics) object."""
    fn = jit_fn
    while not isinstance(fn, types.FunctionType):
        fn = fn.fn
    return fn


def innermost_jit(kernel: Any) -> Any:
    fn = kernel
    while not isinstance(fn, JITFunction):
        fn = fn.fn
    return fn


def constexpr_names(fn: Callable[..., Any]) -> set[str]:
    names = set()
    for name, annotation in inspect.get_annotations(fn).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if annotation is tl.constexpr or "constexpr" in str(text):
            names.add(name)
    return names


def tensor_with_handle(value: Any, handle: Any) -> Any:
    """A tensor of `value`'s type with `handle` (a TensorHandle, or one of its subclasses)."""
    return tl.core.tensor(handle, value.type)


def is_interpreter_range(fn: Any) -> bool:
    """Whether `fn` is what the interpreter puts in place of tl.range and tl.static_range."""
    return getattr(fn, "__name__", "") == "_new_range" and getattr(fn, "__module__", "") == _interp.__name__


def unwrap_constexpr(value: Any) -> Any:
    return value.value if isinstance(value, tl.constexpr) else value


def tensor_descriptor_type() -> Any:
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor


TL_DTYPES: dict[str, Any] = {
    "bool": tl.int1,
    "int8": tl.int8,
    "int16": tl.int16,
    "int32": tl.int32,
    "int64": tl.int64,
    "uint8": tl.uint8,
    "uint16": tl.uint16,
    "uint32": tl.uint32,
    "uint64": tl.uint64,
    "float16": tl.float16,
    "float32": tl.float32,
    "float64": tl.float64,
    "bfloat16": tl.bfloat16,
    "float8_e4m3fn": tl.float8e4nv,
    "float8_e5m2": tl.float8e5,
}
