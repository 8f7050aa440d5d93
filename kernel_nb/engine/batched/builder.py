"""The interpreter's builder, with every value carrying the programs of a batch along a leading axis.

A value's data has shape (b, *block_shape) where b is the batch size, or 1 for a value that is the
same in every program (constants, tl.arange). Elementwise operations then broadcast as they are;
only the operations that look at shapes (splat, broadcast, expand_dims, reshape, trans, cat,
gather, reductions) and the memory operations are redefined here. Where programs disagree about
control flow (`if` on a value, a loop bound), `Divergence` carries each program's value so that the
batch can be split; operations the batched form does not cover raise `BatchUnsupported`, and the
launch runs serially instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import triton.language as tl

from kernel_nb.engine import triton_compat
from kernel_nb.engine.batched.tiles import (
    AFFINE,
    INTEGER_FORM,
    SPLAT,
    Affine,
    AffinePointers,
    FormIntegers,
    carry_form,
    formed_comparison,
    formed_integers,
    integer_form,
    pointer_origin,
    scaled_form,
    shape_of,
    summed_form,
)

TensorHandle = triton_compat.TensorHandle


class Divergence(Exception):
    """Programs of a batch disagree on a value that decides control flow."""

    def __init__(self, values: np.ndarray) -> None:
        super().__init__("programs of the batch take different paths")
        self.values = values


class BatchUnsupported(Exception):
    """Something the batched strategy does not run exactly; the launch runs serially."""


def batch_rows(data: np.ndarray, batch: int) -> np.ndarray:
    return np.broadcast_to(data, (batch, *data.shape[1:])) if data.shape[0] != batch else data


def leading(*arrays: np.ndarray) -> int:
    return max(a.shape[0] for a in arrays)


def _full(data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`data` broadcast to `shape` as a writeable C-contiguous array (Triton's C++ loads and stores
    take no read-only views)."""
    return np.require(np.broadcast_to(data, shape), requirements=["C", "W"])


class LoopMask:
    """Which programs of a batch a masked loop (one whose trip count differs between them) still
    runs: owned by the batch's run, read by its builder and its language, set by its recorder.

    Attributes:
        active: the programs the loop still runs, where the others are masked (None: all).
        trips: per program, the loop's trip count (None: no masked loop is running).
    """

    def __init__(self) -> None:
        self.active: np.ndarray | None = None
        self.trips: np.ndarray | None = None

    def clear(self) -> None:
        self.active = self.trips = None


class BatchedBuilder(triton_compat.InterpreterBuilder):  # type: ignore[misc,valid-type]
    """Builder for a batch of programs. The interpreter's own builder takes this class for the
    duration of a batch (`triton_compat.builder_as`), with `pids` (one (x, y, z) row per program),
    `grid_dim`, `grid_idx` and the run's `loop_mask` set."""

    pids: np.ndarray
    loop_mask: LoopMask
    atomic_rows: tuple[np.ndarray, np.ndarray]
    pointer_cast: bool  # a pointer was made from an integer or another pointer type

    @staticmethod
    def attributes(pids: np.ndarray, grid: tuple[int, int, int], loop_mask: LoopMask) -> dict[str, Any]:
        return {
            "pids": pids,
            "loop_mask": loop_mask,
            "grid_dim": grid,
            "grid_idx": tuple(int(v) for v in pids[0]),
            "pointer_cast": False,
        }

    # -- pointers --------------------------------------------------------------------------------

    def create_add(self, lhs: Any, rhs: Any) -> Any:
        lazy = formed_integers(summed_form(lhs, rhs), lhs, rhs)
        if lazy is not None:
            return lazy  # (no wrap-around: no overflow for the arithmetic checks to find)
        result = super().create_add(lhs, rhs)
        data = result.data
        if not isinstance(data, np.ndarray) or data.dtype.kind not in "iu" or data.ndim < 2:
            return result
        form = summed_form(lhs, rhs, data.dtype)
        if form is not None and form.lanes.size == data[0].size:
            setattr(result, INTEGER_FORM, form)
        return result

    def create_addptr(self, ptr: Any, offset: Any) -> Any:
        shape = getattr(ptr, AFFINE, None)
        ptr_shape, offset_shape = shape_of(ptr), shape_of(offset)
        same_block = len(ptr_shape) >= 2 and tuple(ptr_shape[1:]) == tuple(offset_shape[1:])
        form = integer_form(offset) if same_block else None
        if form is not None and form.lanes.size == int(np.prod(offset_shape[1:])):
            origin = shape or pointer_origin(ptr, form.lanes.size)
            if origin and origin.lanes.size == form.lanes.size:
                width = max(1, ptr.get_element_ty().primitive_bitwidth // 8)
                base = origin.base + form.base * width
                if form.lanes.any():
                    moved = Affine(base, origin.lanes + form.lanes * width)
                else:  # one step per program (a splat): the same lanes, their derived forms kept
                    moved = origin.moved(base)
                full = np.broadcast_shapes(ptr_shape, offset_shape)
                if moved.base.size in (1, full[0]):
                    return AffinePointers(moved, full, ptr.dtype)
        steps = getattr(offset, SPLAT, None)
        if steps is None and offset.data.size == offset.data.shape[0]:
            steps = offset.data.reshape(-1)
        if not shape or steps is None:
            return self._addptr(ptr, offset, max(1, ptr.get_element_ty().primitive_bitwidth // 8))
        # one step per program: the same tile, moved
        width = max(1, ptr.get_element_ty().primitive_bitwidth // 8)
        step = steps.astype(np.int64) * width
        full = (max(ptr_shape[0], step.size), *ptr_shape[1:])
        base = shape.base + step
        if base.size not in (1, full[0]):
            return self._addptr(ptr, offset, width)
        return AffinePointers(shape.moved(base), full, ptr.dtype)

    @staticmethod
    def _addptr(ptr: Any, offset: Any, width: int) -> Any:
        # as the interpreter computes it (uint64 wrap-around included), with one pass fewer
        moved = np.multiply(offset.data, np.uint64(width), dtype=np.uint64, casting="unsafe")
        fits = moved.shape == np.broadcast_shapes(ptr.data.shape, moved.shape)
        return TensorHandle(np.add(ptr.data, moved, out=moved if fits else None), ptr.dtype)

    # pointers that may not step in whole elements of their argument

    def create_int_to_ptr(self, val: Any, type: Any) -> Any:
        self.pointer_cast = True
        return super().create_int_to_ptr(val, type)

    def create_bitcast(self, src: Any, dst_type: Any) -> Any:
        if np.asarray(src.data).dtype == np.uint64:  # pointers are held as uint64 addresses
            self.pointer_cast = True
        return super().create_bitcast(src, dst_type)

    # -- constants and program ids -----------------------------------------------------------

    def _constant(self, value: Any, dtype: Any, ty: Any) -> Any:
        return TensorHandle(np.array([[value]], dtype=dtype), ty)

    def get_int1(self, value: Any) -> Any:
        return self._constant(value, np.bool_, tl.int1)

    def get_uint8(self, value: Any) -> Any:
        return self._constant(value, np.uint8, tl.uint8)

    def get_int8(self, value: Any) -> Any:
        return self._constant(value, np.int8, tl.int8)

    def get_uint16(self, value: Any) -> Any:
        return self._constant(value, np.uint16, tl.uint16)

    def get_int16(self, value: Any) -> Any:
        return self._constant(value, np.int16, tl.int16)

    def get_uint32(self, value: Any) -> Any:
        return self._constant(value, np.uint32, tl.uint32)

    def get_int32(self, value: Any) -> Any:
        return self._constant(value, np.int32, tl.int32)

    def get_uint64(self, value: Any) -> Any:
        return self._constant(value, np.uint64, tl.uint64)

    def get_int64(self, value: Any) -> Any:
        return self._constant(value, np.int64, tl.int64)

    def get_fp16(self, value: Any) -> Any:
        return self._constant(value, np.float16, tl.float16)

    def get_fp32(self, value: Any) -> Any:
        return self._constant(value, np.float32, tl.float32)

    def get_fp64(self, value: Any) -> Any:
        return self._constant(value, np.float64, tl.float64)

    def get_bf16(self, value: Any) -> Any:
        handle = super().get_bf16(value)
        return TensorHandle(handle.data.reshape(1, 1), handle.dtype)

    def get_null_value(self, type: Any) -> Any:
        handle = super().get_null_value(type)
        return TensorHandle(handle.data.reshape(1, 1), handle.dtype)

    def get_all_ones_value(self, type: Any) -> Any:
        handle = super().get_all_ones_value(type)
        return TensorHandle(handle.data.reshape(1, 1), handle.dtype)

    def create_get_program_id(self, axis: int) -> Any:
        return TensorHandle(self.pids[:, axis : axis + 1].astype(np.int32), tl.int32)

    def create_get_num_programs(self, axis: int) -> Any:
        return TensorHandle(np.array([[self.grid_dim[axis]]], dtype=np.int32), tl.int32)

    def create_make_range(self, ret_ty: Any, start: int, stop: int) -> Any:
        return TensorHandle(np.arange(start, stop, dtype=np.int32)[None, :], tl.int32)

    # -- shapes --------------------------------------------------------------------------------

    def create_expand_dims(self, arg: Any, axis: int) -> Any:
        at = axis + 1 if axis >= 0 else axis
        shape = np.expand_dims(np.empty(shape_of(arg), bool), at).shape
        return carry_form(arg, shape, lambda lanes: lanes, lambda: np.expand_dims(arg.data, at))

    def create_broadcast(self, arg: Any, shape: Any) -> Any:
        full = (shape_of(arg)[0], *shape)
        block = tuple(shape)
        return carry_form(
            arg, full, lambda lanes: np.broadcast_to(lanes, block), lambda: np.broadcast_to(arg.data, full)
        )

    def create_mul(self, lhs: Any, rhs: Any) -> Any:
        if isinstance(lhs, FormIntegers) or isinstance(rhs, FormIntegers):
            dtype = triton_compat.np_dtype(lhs.dtype.scalar)
            lazy = formed_integers(scaled_form(lhs, rhs, dtype), lhs, rhs) if dtype.kind in "iu" else None
            if lazy is not None:
                return lazy
        result = super().create_mul(lhs, rhs)
        data = result.data
        if isinstance(data, np.ndarray) and data.dtype.kind in "iu" and data.ndim >= 2:
            form = scaled_form(lhs, rhs, data.dtype)
            if form is not None and form.lanes.size == data[0].size:
                setattr(result, INTEGER_FORM, form)
        return result

    def create_splat(self, ret_ty: Any, arg: Any) -> Any:
        shape = tuple(ret_ty.shape)
        data = arg.data
        first = data.reshape(data.shape[0], -1)[:, 0]
        dtype = triton_compat.np_dtype(arg.dtype.scalar if hasattr(arg.dtype, "scalar") else arg.dtype)
        one = first.astype(dtype)
        # a read-only view of one value per program: operations make new arrays from it, and the
        # interpreter's native loads and stores get writeable copies (_full)
        full = np.broadcast_to(one.reshape((data.shape[0],) + (1,) * len(shape)), (data.shape[0], *shape))
        result = TensorHandle(full, arg.dtype.scalar)
        setattr(result, SPLAT, one)
        return result

    def create_unsplat(self, arg: Any) -> Any:
        data = arg.data
        return TensorHandle(data.reshape(data.shape[0], -1)[:, :1].copy(), arg.dtype.scalar)

    def create_reshape(self, arg: Any, shape: Any, allow_reorder: Any = False) -> Any:
        full = (shape_of(arg)[0], *shape)
        block = tuple(shape)
        return carry_form(arg, full, lambda lanes: lanes.reshape(block), lambda: arg.data.reshape(full))

    def create_trans(self, arg: Any, perm: Any) -> Any:
        order = tuple(perm)
        full = (shape_of(arg)[0], *(shape_of(arg)[1:][p] for p in order))
        return carry_form(
            arg,
            full,
            lambda lanes: np.transpose(lanes, order),
            lambda: np.transpose(arg.data, (0, *[p + 1 for p in order])),
        )

    def create_cat(self, lhs: Any, rhs: Any) -> Any:
        b = leading(lhs.data, rhs.data)
        return TensorHandle(
            np.concatenate([batch_rows(lhs.data, b), batch_rows(rhs.data, b)], axis=1), lhs.dtype.scalar
        )

    def create_join(self, lhs: Any, rhs: Any) -> Any:
        b = leading(lhs.data, rhs.data)
        return TensorHandle(
            np.stack([batch_rows(lhs.data, b), batch_rows(rhs.data, b)], axis=-1), lhs.dtype.scalar
        )

    def create_gather(self, src: Any, indices: Any, axis: int) -> Any:
        b = leading(src.data, indices.data)
        gathered = np.take_along_axis(batch_rows(src.data, b), batch_rows(indices.data, b), axis=axis + 1)
        return TensorHandle(gathered, src.dtype.scalar)

    def create_histogram(self, data: Any, bins: int, mask: Any) -> Any:
        rows = []
        for r in range(data.data.shape[0]):
            row_mask = (
                None if mask is None else TensorHandle(batch_rows(mask.data, data.data.shape[0])[r], tl.int1)
            )
            rows.append(super().create_histogram(TensorHandle(data.data[r], data.dtype), bins, row_mask).data)
        return TensorHandle(np.stack(rows), tl.int32)

    # -- memory ----------------------------------------------------------------------------------

    def _only_active(self, mask: Any) -> Any:
        active = self.loop_mask.active
        if active is None:
            return mask
        rows = active.reshape((active.size,) + (1,) * (mask.data.ndim - 1))
        return TensorHandle(np.logical_and(mask.data, rows), mask.dtype)

    # tl.load / tl.store without mask=: an all-true mask as a view, so that pointers held as a
    # tile form are not made into addresses for it
    def create_load(self, ptr: Any, *rest: Any) -> Any:
        return triton_compat.plain_load(self, ptr, self._all_lanes(ptr), rest)

    def create_store(self, ptr: Any, value: Any, *rest: Any) -> Any:
        return triton_compat.plain_store(self, ptr, value, self._all_lanes(ptr), rest)

    @staticmethod
    def _all_lanes(ptr: Any) -> Any:
        return TensorHandle(np.broadcast_to(np.True_, shape_of(ptr)), tl.int1)

    def create_masked_load(self, ptrs: Any, mask: Any, other: Any, *rest: Any, **options: Any) -> Any:
        mask = self._only_active(mask)
        b = leading(ptrs.data, mask.data, other.data if other is not None else ptrs.data)
        full = (b, *ptrs.data.shape[1:])
        ptrs = TensorHandle(_full(ptrs.data, full), ptrs.dtype)
        mask = TensorHandle(_full(mask.data, full), mask.dtype)
        if other is not None:
            other = TensorHandle(_full(other.data, full), other.dtype)
        return super().create_masked_load(ptrs, mask, other, *rest, **options)

    def create_masked_store(self, ptrs: Any, value: Any, mask: Any, *rest: Any, **options: Any) -> Any:
        mask = self._only_active(mask)
        b = leading(ptrs.data, value.data, mask.data)
        full = (b, *ptrs.data.shape[1:])
        ptrs = TensorHandle(_full(ptrs.data, full), ptrs.dtype)
        value = TensorHandle(_full(value.data, full), value.dtype)
        mask = TensorHandle(_full(mask.data, full), mask.dtype)
        return super().create_masked_store(ptrs, value, mask, *rest, **options)

    def create_atomic_rmw(self, op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        # program by program, in launch order: each program sees the previous programs' results.
        # Every program of the batch makes its atomic, also where pointer and value are the same in
        # all of them (held once, with a leading axis of 1).
        b = max(leading(ptr.data, val.data, mask.data), len(self.pids))
        return self._per_program(
            b,
            ptr,
            lambda row: super(BatchedBuilder, self).create_atomic_rmw(op, *row, *rest),
            (ptr, val, mask),
        )

    # Tensor descriptors: the interpreter's own methods, over a descriptor that makes one block of
    # pointers per program; its loads and stores go through this builder's (and the guard's) hooks.
    def create_make_tensor_descriptor(
        self, base: Any, shape: Any, strides: Any, block: Any, *rest: Any
    ) -> Any:
        desc = triton_compat.TensorDescHandle(base, shape, strides, block, *rest[1:])
        batched = _BatchedDescriptor(desc)
        batched.validate()
        return batched

    def create_descriptor_load(self, desc: Any, indices: Any, *rest: Any) -> Any:
        return super().create_descriptor_load(_BatchedDescriptor(desc), indices, *rest)

    def create_descriptor_store(self, desc: Any, value: Any, indices: Any, *rest: Any) -> Any:
        return super().create_descriptor_store(_BatchedDescriptor(desc), value, indices, *rest)

    def create_atomic_cas(self, ptr: Any, cmp: Any, val: Any, *rest: Any) -> Any:
        b = max(leading(ptr.data, cmp.data, val.data), len(self.pids))
        return self._per_program(
            b, ptr, lambda row: super(BatchedBuilder, self).create_atomic_cas(*row, *rest), (ptr, cmp, val)
        )

    def _per_program(
        self, b: int, ptr: Any, atomic: Callable[[list[Any]], Any], handles: tuple[Any, ...]
    ) -> Any:
        """Apply an atomic one program at a time; keep each program's element values before and
        after its own atomic in `atomic_rows`, as the serial strategy records them."""
        trips = self.loop_mask.trips
        if trips is not None:
            raise Divergence(trips)  # split by trip count: atomics stay in program order
        dtype = triton_compat.pointer_element_np(ptr)
        out, before, after = [], [], []
        for r in range(b):
            row = [TensorHandle(_full(batch_rows(h.data, b)[r], h.data.shape[1:]), h.dtype) for h in handles]
            everywhere = np.ones(row[0].data.shape, bool)
            before.append(triton_compat.raw_load(row[0].data, everywhere, dtype))
            result = atomic(row)
            after.append(triton_compat.raw_load(row[0].data, everywhere, dtype))
            out.append(result.data)
        self.atomic_rows = (np.stack(before), np.stack(after))
        return TensorHandle(np.stack(out), result.dtype)


# -- tensor descriptors ---------------------------------------------------------------------------


class _BatchedDescriptor(triton_compat.TensorDescHandle):  # type: ignore[misc,valid-type]
    """A tensor descriptor whose base, shape, strides and block offsets may differ per program."""

    def __init__(self, desc: Any) -> None:
        self.__dict__.update(vars(desc))

    def validate(self) -> None:
        itemsize = self.base.dtype.element_ty.primitive_bitwidth // 8
        bad = np.any(_per_program(self.base) % 16 != 0) or np.any(_per_program(self.strides[-1]) != 1)
        for stride in self.strides[:-1]:
            bad = bad or np.any(_per_program(stride) * itemsize % 16 != 0)
        if bad:  # the serial strategy raises the interpreter's own error, with the program's id
            raise BatchUnsupported("a tensor descriptor that fails Triton's checks")

    def materialize_pointers(self, offsets: list[Any]) -> tuple[Any, Any]:
        itemsize = self.base.dtype.element_ty.primitive_bitwidth // 8
        block = list(self.block_shape)
        if np.any(_per_program(offsets[-1]) * itemsize % 16 != 0):
            raise BatchUnsupported("a tensor descriptor block offset that is not 16-byte aligned")
        columns = [self.base, *self.shape, *self.strides, *offsets]
        b = max(_per_program(h).shape[0] for h in columns)
        lead = (-1,) + (1,) * len(block)
        ptrs = np.broadcast_to(_per_program(self.base).astype(np.uint64).reshape(lead), (b, *block))
        masks = np.ones((b, *block), dtype=bool)
        for dim, size in enumerate(block):
            at = [1] * (len(block) + 1)
            at[dim + 1] = size
            start = _per_program(offsets[dim]).astype(np.int64).reshape(lead)
            off = start + np.arange(size, dtype=np.int64).reshape(at)
            stride = _per_program(self.strides[dim]).astype(np.int64).reshape(lead)
            ptrs = ptrs + (itemsize * off * stride).astype(np.uint64)
            masks = masks & (off >= 0) & (off < _per_program(self.shape[dim]).reshape(lead))
        return TensorHandle(np.ascontiguousarray(ptrs), self.base.dtype.scalar), TensorHandle(masks, tl.int1)


def _per_program(handle: Any) -> np.ndarray:
    """A scalar handle's value in each program (length 1 when all programs share it)."""
    data = np.asarray(handle.data)
    return data.reshape(data.shape[0], -1)[:, 0] if data.ndim >= 2 else data.reshape(-1)[:1]


def _refusal(what: str) -> Callable[..., Any]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise BatchUnsupported(what)

    return refuse


for _name in (
    "create_print",
    "create_descriptor_gather",
    "create_descriptor_scatter",
    "create_make_block_ptr",
    "create_advance",
    "create_tensor_pointer_load",
    "create_tensor_pointer_store",
    "create_dot_scaled",
    "create_atomic_poll",
):
    setattr(BatchedBuilder, _name, _refusal(_name.removeprefix("create_")))


def _comparison(name: str, op: Any) -> Callable[..., Any]:
    """The builder's integer comparison `name`, from an operand's IntegerForm where it can."""
    interpreted = getattr(triton_compat.InterpreterBuilder, name)

    def compare(self: Any, lhs: Any, rhs: Any) -> Any:
        made = formed_comparison(lhs, rhs, op)
        return interpreted(self, lhs, rhs) if made is None else made

    compare.__name__ = name
    return compare


for _name, _op in (
    ("create_icmpSLT", np.less),
    ("create_icmpSLE", np.less_equal),
    ("create_icmpSGT", np.greater),
    ("create_icmpSGE", np.greater_equal),
    ("create_icmpULT", np.less),
    ("create_icmpULE", np.less_equal),
    ("create_icmpUGT", np.greater),
    ("create_icmpUGE", np.greater_equal),
    ("create_icmpEQ", np.equal),
    ("create_icmpNE", np.not_equal),
):
    setattr(BatchedBuilder, _name, _comparison(_name, _op))
