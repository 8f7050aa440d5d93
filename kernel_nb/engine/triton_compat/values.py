"""Triton values as the interpreter holds them: making them, and reading their data and types."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import triton.language as tl

from kernel_nb.engine.triton_compat.interpreter import TensorHandle, np_dtype


def pointer_tensor(address: int, element: Any) -> Any:
    """A scalar pointer argument as the interpreter represents one."""
    ty = tl.pointer_type(element)
    return tl.tensor(TensorHandle(np.array([address], dtype=np.uint64), ty), ty)


def scalar_tensor(value: bool | int | float) -> Any:
    """A scalar kernel argument. Floats are fp32, as a compiled kernel receives them; integers are
    int32, int64 or uint64 as Triton's launcher types them (the caller checks the range)."""
    if isinstance(value, bool):
        return tl.tensor(TensorHandle(np.array([value], dtype=np.bool_), tl.int1), tl.int1)
    if isinstance(value, float):
        return tl.tensor(TensorHandle(np.array([value], dtype=np.float32), tl.float32), tl.float32)
    # the launcher's types (JITFunction's specialisation), not the language's for constants: an int
    # from 2**31 to 2**32 is an int64 argument, where the language would make a constant uint32
    if -(2**31) <= value < 2**31:
        ty = tl.int32
    elif value >= 2**63:
        ty = tl.uint64
    else:
        ty = tl.int64
    return tl.tensor(TensorHandle(np.array([value], dtype=np_dtype(ty)), ty), ty)


def make_tuple(original: Any, items: Iterable[Any]) -> Any:
    """A tuple argument's converted items, in a tuple of the original's kind: a named tuple keeps its
    class; any other tuple subclass (torch.Size of a tensor's shape) becomes a plain tuple, as the
    compiler sees it, since its class may refuse tensors as items."""
    items = list(items)
    if hasattr(original, "_fields"):
        return type(original)(*items)
    return tuple(items)


def is_value(value: Any) -> bool:
    """A Triton value (a tensor, a tuple of tensors, a descriptor) rather than a Python object."""
    return isinstance(value, tl.core.base_value)


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


def pointer_element_name(handle: Any) -> str:
    """ "fp32", "i8", ... for the elements a pointer handle points to."""
    return str(handle.get_element_ty())


def handle_with_data(handle: Any, data: np.ndarray) -> Any:
    """A handle of `handle`'s type holding `data` (a pointer block moved to other addresses)."""
    return TensorHandle(data, handle.dtype)


def pointer_element_np(handle: Any) -> np.dtype:
    return np_dtype(handle.get_element_ty())


def tensor_with_handle(value: Any, handle: Any) -> Any:
    """A tensor of `value`'s type with `handle` (a TensorHandle, or one of its subclasses)."""
    return tl.core.tensor(handle, value.type)


def unwrap_constexpr(value: Any) -> Any:
    return value.value if isinstance(value, tl.constexpr) else value


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
    "float8_e4m3fnuz": tl.float8e4b8,
    "float8_e5m2fnuz": tl.float8e5b16,
}


def storage_of(element: Any) -> tuple[np.dtype | None, Any]:
    """The numpy dtype an array of Triton element type `element` is held in, and the element type
    itself where numpy has no name for it (fp8e4b15 is held as uint8); (None, None) for a non-element."""
    for name, known in TL_DTYPES.items():
        if known == element:
            try:
                return np.dtype(name), None
            except TypeError:  # an ml_dtypes type, not registered with numpy until imported
                import ml_dtypes

                return np.dtype(getattr(ml_dtypes, name)), None
    if isinstance(element, tl.dtype) and element.is_fp8():
        return np.dtype(np.uint8), element
    return None, None
