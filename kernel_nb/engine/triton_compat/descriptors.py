"""Tensor descriptors and `tl.dot_scaled` across versions: the interpreter's checks as the GPU
makes them, and dot_scaled's operands as 3.9's interpreter prepares them, on every version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language as tl

from kernel_nb.engine.triton_compat.interpreter import interp, semantic
from kernel_nb.engine.triton_compat.versions import require, triton_version


class _Format(str):
    """A dot_scaled format name that is also what the compiler hands the semantic before 3.9 (a
    constexpr, read through `.value`), since the interpreter passes the bare string."""

    @property
    def value(self) -> str:
        return str(self)


def patch_dot_scaled_formats() -> Callable[[], None]:
    semantic_cls = type(semantic())
    native = getattr(semantic_cls, "dot_scaled", None)
    if native is None:
        return lambda: None

    def dot_scaled(
        self: Any,
        lhs: Any,
        lhs_scale: Any,
        lhs_format: Any,
        rhs: Any,
        rhs_scale: Any,
        rhs_format: Any,
        *rest: Any,
        **kwargs: Any,
    ) -> Any:
        lhs_format, rhs_format = (_Format(f) if isinstance(f, str) else f for f in (lhs_format, rhs_format))
        return native(self, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, *rest, **kwargs)

    semantic_cls.dot_scaled = dot_scaled

    def undo() -> None:
        semantic_cls.dot_scaled = native

    return undo


def patch_descriptor_strides() -> Callable[[], None]:
    """Before 3.6 the interpreter asks a descriptor's strides in elements to be multiples of 16; the
    GPU (TMA) asks it of their bytes, as 3.6 on does: a 24-column fp32 array is fine on the GPU."""
    handle = getattr(interp, "TensorDescHandle", None)
    if handle is None or triton_version() >= (3, 6):
        return lambda: None
    native = handle.validate

    def validate(self: Any) -> None:
        itemsize = self.base.dtype.element_ty.primitive_bitwidth // 8
        assert self.base.data.item() % 16 == 0, "base must be 16-byte aligned"
        assert len(self.strides) == self.ndim
        assert len(self.block_shape) == self.ndim
        assert self.ndim >= 1, "descriptor cannot be 0 dimensional"
        for stride in self.strides[:-1]:
            assert stride.data.item() * itemsize % 16 == 0, "stride must be 16-byte aligned"
        assert self.strides[-1].data.item() == 1, "last dim must be contiguous"

    handle.validate = validate

    def undo() -> None:
        handle.validate = native

    return undo


def implicit_convert(value: Any) -> Any:
    """Triton's own conversion, for argument kinds kernel_nb passes through (descriptors)."""
    undo = patch_descriptor_strides()  # a host descriptor is checked here, outside the launch's patches
    try:
        return require(interp, "_implicit_cvt")(value)
    finally:
        undo()


def dot_scaled_operand(
    value: Any,
    scale: Any,
    fmt: Any,
    k_pack: bool,
    compute: Any,
    is_rhs: bool,
    decode: Callable[[Any], np.ndarray],
) -> np.ndarray:
    """An operand of the builder's `create_dot_scaled` as float32, scaled, as 3.9's interpreter
    prepares it, with fp8 values decoded by `decode(handle)` instead of the interpreter's upcast
    (which reads e5m2 subnormals as zero). Written here rather than borrowed, since the interpreter
    has no dot_scaled before 3.9 while the language (and the GPU) has it from 3.4."""
    from triton._C.libtriton import ir

    if fmt == ir.ScaleDotElemTypeTY.E2M1:
        axis = (-2 if k_pack else -1) if is_rhs else (-1 if k_pack else -2)
        data = np.moveaxis(_e2m1_to_f32(np.moveaxis(value.data, axis, -1)), -1, axis)
    else:
        data = decode(value)
    if scale is None:
        return data
    factor = data.shape[-2 if is_rhs else -1] // scale.data.shape[-1]
    scales = np.repeat(_e8m0_to_f32(scale, compute), factor, axis=-1)
    return data * (np.swapaxes(scales, -1, -2) if is_rhs else scales)


# e2m1 magnitudes by their low three bits (OCP MX), two values a byte, the low nibble first
_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)


def _e2m1_to_f32(packed: np.ndarray) -> np.ndarray:
    nibbles = np.empty((*packed.shape[:-1], packed.shape[-1] * 2), dtype=np.uint8)
    nibbles[..., 0::2] = packed & np.uint8(0x0F)
    nibbles[..., 1::2] = packed >> np.uint8(4)
    magnitude = _E2M1[nibbles & np.uint8(0x07)]
    return np.where((nibbles & np.uint8(0x08)) != 0, -magnitude, magnitude)


def _e8m0_to_f32(scale: Any, compute: Any) -> np.ndarray:
    """e8m0 scale bytes as the float32 powers of two they stand for; byte 255 is NaN, and with a
    bf16 computation byte 0 is 2**-127 (a float32 subnormal), as the GPU's emulation makes them."""
    data = scale.data
    bits = data.view(np.uint8).astype(np.int32) << 23
    is_int = scale.dtype.is_int()
    if compute == tl.bfloat16 and is_int:
        bits = np.maximum(bits, 0x00400000)
    values = bits.view(np.float32)
    if is_int:
        values = np.where(np.isinf(values), np.float32(np.nan), values)
    return values


def dot_scaled_compute_type(lhs_format: Any, rhs_format: Any) -> Any:
    """The type the interpreter (and the GPU's emulation) upcasts dot_scaled operands to."""
    from triton._C.libtriton import ir

    return tl.float16 if ir.ScaleDotElemTypeTY.FP16 in (lhs_format, rhs_format) else tl.bfloat16


def descriptor_layout(desc: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A device-side tensor descriptor's shape, strides (in elements) and block shape, as one
    program sees them (the first program's, for a batch)."""

    def first(handle: Any) -> int:
        return int(np.asarray(handle.data).reshape(-1)[0])

    return (
        tuple(first(h) for h in desc.shape),
        tuple(first(h) for h in desc.strides),
        tuple(int(b) for b in desc.block_shape),
    )


def tensor_descriptor_type() -> Any:
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return None
    return TensorDescriptor
