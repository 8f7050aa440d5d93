"""Kernel arguments → host buffers the interpreter can run on, and back.

Every array argument (numpy, torch CPU/CUDA, CuPy) is copied into a private host buffer; the
kernel runs on the copies and the copies are written back only when the launch succeeds. Arguments
whose memory overlaps (an in-place kernel given the same array twice, views of one base) share one
buffer, so the kernel sees the aliasing it would see on the GPU. Torch and CuPy are used only when
the caller already imported them.

Why one module: the description of each argument kind
(numpy, torch, CuPy, triton.reinterpret, descriptors, tuples) and the grouping of overlapping
arrays into one host buffer both build the `Memory` and `BufferArg` records defined here, and
`bind` is the one caller of all of it.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from kernel_nb.engine import triton_compat
from kernel_nb.poison import PoisonedArray, poison_value
from kernel_nb.trace import ArgumentInfo


@dataclass(eq=False)
class Memory:
    """One region of caller memory and its private host copy.

    `read` gives the caller's memory (a view of host memory, or a fresh host copy of device
    memory) to fill the copy from; `write` puts a buffer back. The copy's address range is what the
    kernel's pointers point into.
    """

    space: str  # "host", "torch:cuda:0", "cupy:0" ...
    lo: int  # caller address range [lo, hi)
    hi: int
    read: Callable[[], np.ndarray]
    write: Callable[[np.ndarray], None]
    copy: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint8))

    @cached_property
    def base(self) -> int:
        """Host address of the copy (fixed once the copy is made)."""
        return int(self.copy.ctypes.data)


@dataclass(eq=False)
class BufferArg:
    """One array argument, bound to its region of a `Memory` copy.

    Attributes:
        name: the kernel parameter (with ".i" for tuple elements).
        dtype: numpy element dtype (ml_dtypes for bf16/fp8).
        shape, strides: in elements.
        offset: byte offset of the argument's data pointer inside the memory copy.
        span_lo, span_hi: byte range of the argument's elements inside the copy.
        memory: the shared `Memory`.
    """

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    span_lo: int
    span_hi: int
    memory: Memory
    poisoned: bool = False
    # the Triton element type, where `dtype` is only its storage (fp8e4b15, which numpy cannot name)
    element: Any = None

    @property
    def ptr(self) -> int:
        return self.memory.base + self.offset

    @property
    def lo(self) -> int:
        return self.memory.base + self.span_lo

    @property
    def hi(self) -> int:
        return self.memory.base + self.span_hi

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def size(self) -> int:
        """Elements in the span (for a contiguous array: its size)."""
        return (self.span_hi - self.span_lo) // self.itemsize

    @property
    def origin(self) -> int:
        """Element offset of the data pointer within the span (non-zero for negative strides)."""
        return (self.offset - self.span_lo) // self.itemsize

    def span_view(self) -> np.ndarray:
        """The span of the copy as a 1-D array of the argument's dtype."""
        raw = self.memory.copy[self.span_lo : self.span_hi]
        return raw.view(self.dtype)

    @property
    def tl_dtype(self) -> Any:
        """The element type the kernel's pointer has."""
        return self.element if self.element is not None else triton_compat.TL_DTYPES[self.dtype.name]

    def info(self) -> ArgumentInfo:
        dtype = str(self.dtype) if self.element is None else str(self.element)
        return ArgumentInfo(self.name, "buffer", dtype, self.shape, self.strides)


class HostPointer:
    """What the kernel receives for an array argument: an address in the host copy and a dtype."""

    def __init__(self, arg: BufferArg) -> None:
        self.arg = arg
        self.dtype = arg.dtype

    def data_ptr(self) -> int:
        return self.arg.ptr


class ArgumentError(TypeError):
    """An argument kernel_nb cannot pass to an interpreted kernel."""


@dataclass
class BoundArguments:
    """A launch's arguments, bound to host buffers."""

    values: dict[str, Any]  # kernel parameter → what the interpreted function receives
    buffers: list[BufferArg]
    memories: list[Memory]
    infos: list[ArgumentInfo]
    originals: dict[str, Any]  # parameter → what the caller passed (for the grid callable)

    def snapshot(self) -> list[np.ndarray]:
        return [m.copy.copy() for m in self.memories]

    def restore(self, snapshot: list[np.ndarray]) -> None:
        for memory, saved in zip(self.memories, snapshot):
            memory.copy[...] = saved

    def poison(self, names: tuple[str, ...]) -> None:
        """Fill the named arguments' copies with the poison value and mark them uninitialised.

        Raises:
            ArgumentError: a name that is not an array argument of the kernel.
        """
        known = {b.name: b for b in self.buffers}
        for name in names:
            if name not in known:
                raise ArgumentError(f"poison: {name!r} is not an array argument (arrays: {', '.join(known)})")
            arg = known[name]
            arg.span_view()[...] = poison_value(arg.dtype)
            arg.poisoned = True

    def commit(self, written: Callable[[str], bool] | None = None) -> None:
        """Write the copies back to the caller's memory, with Ctrl-C held until the copy is complete:
        every copy, or those holding an argument that `written` says the launch wrote (or that was
        poisoned: its copy differs from the caller's memory from the start)."""
        with _deferred_interrupt():
            for memory in self.memories:
                if written is not None and not any(
                    b.poisoned or written(b.name) for b in self.buffers if b.memory is memory
                ):
                    continue  # only read: the caller's memory already holds it
                memory.write(memory.copy)


def bind(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> BoundArguments:
    """Bind the caller's arguments to the kernel's parameters and copy arrays to host buffers.

    Raises:
        ArgumentError: an argument of a kind the interpreter cannot take, or a missing argument.
    """
    import inspect

    signature = inspect.signature(fn)
    params = signature.parameters
    try:
        bound = signature.bind(*args, **{k: v for k, v in kwargs.items() if k in params})
    except TypeError as exc:
        raise ArgumentError(f"{fn.__name__}: {exc}") from None
    bound.apply_defaults()
    constexprs = triton_compat.constexpr_names(fn)
    regions: list[
        tuple[str, Any, tuple[str, int, int], Callable[[], np.ndarray], Callable[[np.ndarray], None]]
    ] = []
    described: dict[str, tuple[Any, Any]] = {}
    for name, value in bound.arguments.items():
        if name in constexprs:
            continue
        for path, leaf in _leaves(name, value):
            array = _describe_array(path, leaf)
            if array is not None:
                described[path] = (leaf, array)
                regions.append((path, leaf, array.region, array.read, array.write))
    memories = _group(regions)
    buffers: dict[str, BufferArg] = {}
    for path, (leaf, array) in described.items():
        space, lo, hi = array.region
        memory = next(m for m in memories if m.space == space and m.lo <= lo and hi <= m.hi)
        buffers[path] = BufferArg(
            name=path,
            dtype=array.dtype,
            shape=array.shape,
            strides=array.strides,
            offset=array.ptr - memory.lo,
            span_lo=array.region[1] - memory.lo,
            span_hi=array.region[2] - memory.lo,
            memory=memory,
            poisoned=isinstance(leaf, PoisonedArray),
            element=array.element,
        )
    values: dict[str, Any] = {}
    infos: list[ArgumentInfo] = []
    for name, value in bound.arguments.items():
        if name in constexprs:
            values[name] = value
            infos.append(ArgumentInfo(name, "constexpr", value=triton_compat.unwrap_constexpr(value)))
            continue
        values[name] = _convert(name, value, buffers)
        infos.append(_info(name, value, buffers))
    return BoundArguments(values, list(buffers.values()), memories, infos, dict(bound.arguments))


@dataclass
class _Array:
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # elements
    ptr: int
    region: tuple[str, int, int]  # (space, lo, hi) in the caller's address space
    read: Callable[[], np.ndarray]
    write: Callable[[np.ndarray], None]
    element: Any = None  # see BufferArg.element


def _leaves(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, tuple) and not hasattr(value, "data_ptr"):
        for i, item in enumerate(value):
            yield from _leaves(f"{name}.{i}", item)
    else:
        descriptor = triton_compat.tensor_descriptor_type()
        if descriptor is not None and isinstance(value, descriptor):
            yield from _leaves(f"{name}.base", value.base)
        else:
            yield name, value


def _span(ptr: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    if any(s == 0 for s in shape):
        return ptr, ptr
    lo = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0) * itemsize
    hi = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) * itemsize + itemsize
    return lo, hi


def _host_region(lo: int, hi: int) -> tuple[Callable[[], np.ndarray], Callable[[np.ndarray], None]]:
    def view() -> np.ndarray:
        if hi == lo:
            return np.empty(0, np.uint8)
        return np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))

    def read() -> np.ndarray:
        return view()  # the caller copies it into the arena

    def write(data: np.ndarray) -> None:
        target = view()
        changed = target != data
        if changed.any():  # a read-only input stays untouched
            target[changed] = data[changed]

    return read, write


def _describe_array(path: str, value: Any) -> _Array | None:
    if isinstance(value, triton_compat.TENSOR_WRAPPER):
        return _describe_reinterpreted(path, value)
    if isinstance(value, np.ndarray):
        dtype = value.dtype
        if dtype.name not in triton_compat.TL_DTYPES:
            raise ArgumentError(f"argument {path}: numpy dtype {dtype} has no Triton equivalent")
        strides = tuple(s // dtype.itemsize for s in value.strides)
        if any(s % dtype.itemsize for s in value.strides):
            raise ArgumentError(
                f"argument {path}: strides {value.strides} are not multiples of the item size"
            )
        ptr = int(value.ctypes.data)
        lo, hi = _span(ptr, value.shape, strides, dtype.itemsize)
        read, write = _host_region(lo, hi)
        return _Array(dtype, value.shape, strides, ptr, ("host", lo, hi), read, write)
    module = type(value).__module__.split(".")[0]
    if module == "torch" and "torch" in sys.modules:
        return _describe_torch(path, value)
    if module == "cupy" and "cupy" in sys.modules:
        return _describe_cupy(path, value)
    if hasattr(value, "data_ptr") and not isinstance(value, HostPointer):
        raise ArgumentError(
            f"argument {path}: {type(value).__name__} is not supported; pass a numpy array, a torch tensor or a CuPy array"
        )
    return None


def _describe_reinterpreted(path: str, wrapper: Any) -> _Array:
    """`triton.reinterpret(array, dtype)`: the array's memory, its elements read as `dtype`."""
    base = _describe_array(f"{path} (reinterpreted)", wrapper.base)
    if base is None:
        raise ArgumentError(f"argument {path}: triton.reinterpret of a {type(wrapper.base).__name__}")
    dtype, element = triton_compat.storage_of(wrapper.dtype)
    if dtype is None:
        raise ArgumentError(
            f"argument {path}: triton.reinterpret as {wrapper.dtype}, which is not an element type"
        )
    shape, strides = base.shape, base.strides
    if dtype.itemsize != base.dtype.itemsize:
        # the same bytes counted in elements of the new size, as the compiled kernel's pointer counts them
        nbytes = base.region[2] - base.region[1]
        contiguous = strides == _contiguous_strides(shape)
        if not contiguous or nbytes % dtype.itemsize:
            raise ArgumentError(
                f"argument {path}: triton.reinterpret from {base.dtype} to {wrapper.dtype} changes the element "
                "size of a non-contiguous array"
            )
        shape, strides = (nbytes // dtype.itemsize,), (1,)
    return _Array(dtype, shape, strides, base.ptr, base.region, base.read, base.write, element)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _describe_torch(path: str, t: Any) -> _Array:
    import torch

    dtype = torch_dtype(path, t.dtype)
    shape, strides = tuple(t.shape), tuple(t.stride())
    ptr = int(t.data_ptr())
    lo, hi = _span(ptr, shape, strides, dtype.itemsize)
    if t.device.type == "cpu":
        read, write = _host_region(lo, hi)
        return _Array(dtype, shape, strides, ptr, ("host", lo, hi), read, write)
    storage = t.untyped_storage()
    base = int(storage.data_ptr())
    nbytes = int(storage.nbytes())
    whole = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage, 0, (nbytes,), (1,))

    def read_device() -> np.ndarray:
        return whole[lo - base : hi - base].cpu().numpy().copy()

    def write_device(data: np.ndarray) -> None:
        whole[lo - base : hi - base].copy_(torch.from_numpy(np.ascontiguousarray(data)))

    return _Array(dtype, shape, strides, ptr, (f"torch:{t.device}", lo, hi), read_device, write_device)


def _describe_cupy(path: str, a: Any) -> _Array:
    import cupy

    dtype = np.dtype(a.dtype)
    strides = tuple(s // dtype.itemsize for s in a.strides)
    ptr = int(a.data.ptr)
    lo, hi = _span(ptr, tuple(a.shape), strides, dtype.itemsize)
    device = a.device.id

    def read() -> np.ndarray:
        out = np.empty(hi - lo, np.uint8)
        if hi > lo:
            with cupy.cuda.Device(device):
                cupy.cuda.runtime.memcpy(out.ctypes.data, lo, hi - lo, cupy.cuda.runtime.memcpyDeviceToHost)
        return out

    def write(data: np.ndarray) -> None:
        data = np.ascontiguousarray(data)
        if hi > lo:
            with cupy.cuda.Device(device):
                cupy.cuda.runtime.memcpy(lo, data.ctypes.data, hi - lo, cupy.cuda.runtime.memcpyHostToDevice)

    return _Array(dtype, tuple(a.shape), strides, ptr, (f"cupy:{device}", lo, hi), read, write)


def torch_dtype(path: str, dtype: Any) -> np.dtype:
    """The numpy dtype (ml_dtypes for bf16/fp8) of a torch dtype.

    Raises:
        ArgumentError: a dtype Triton has no equivalent of.
    """
    import ml_dtypes

    name = str(dtype).removeprefix("torch.")
    special = {
        "bfloat16": ml_dtypes.bfloat16,
        "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
        "float8_e5m2": ml_dtypes.float8_e5m2,
        "bool": np.bool_,
    }
    try:
        return np.dtype(special.get(name, name))
    except TypeError:
        raise ArgumentError(f"argument {path}: torch dtype {dtype} has no Triton equivalent") from None


def _group(regions: list[tuple[str, Any, tuple[str, int, int], Any, Any]]) -> list[Memory]:
    """Merge overlapping caller regions into one Memory each and copy them to the host.

    The copies are laid out in one arena, in argument order, each followed by a gap at least its own
    size: a pointer that runs past the end of an array lands next to that array (the guard names it),
    and the layout, hence every address-derived record, is the same from run to run.
    """
    by_space: dict[str, list[tuple[int, int, Any, Any, int]]] = {}
    for rank, (_path, _leaf, (space, lo, hi), read, write) in enumerate(regions):
        by_space.setdefault(space, []).append((lo, hi, read, write, rank))
    groups: list[tuple[int, str, int, int, list[tuple[int, int, Any, Any]]]] = []
    for space, spans in by_space.items():
        spans.sort(key=lambda s: s[0])
        merged: list[list[Any]] = []
        for lo, hi, read, write, rank in spans:
            if merged and lo < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
                merged[-1][2].append((lo, hi, read, write))
                merged[-1][3] = min(merged[-1][3], rank)
            else:
                merged.append([lo, hi, [(lo, hi, read, write)], rank])
        groups.extend((rank, space, lo, hi, members) for lo, hi, members, rank in merged)
    groups.sort(key=lambda g: g[0])
    slots = [_align(hi - lo) + max(_align(hi - lo), _MIN_GAP) for _, _, lo, hi, _ in groups]
    arena = np.zeros(sum(slots) + 64, np.uint8)  # untouched gap pages are never committed
    offset = (-arena.ctypes.data) % 64
    memories = []
    for (_, space, lo, hi, members), slot in zip(groups, slots):
        memories.append(_memory(space, lo, hi, members, arena[offset : offset + (hi - lo)]))
        offset += slot
    return memories


_MIN_GAP = 4096


def _align(n: int) -> int:
    return (n + 63) // 64 * 64


def _memory(
    space: str, lo: int, hi: int, members: list[tuple[int, int, Any, Any]], copy: np.ndarray
) -> Memory:
    if len(members) == 1:
        read, write = members[0][2], members[0][3]
    elif space == "host":
        read, write = _host_region(lo, hi)
    else:
        # several device views of one allocation: read each member into its place, write each back
        def read() -> np.ndarray:
            out = np.zeros(hi - lo, np.uint8)
            for m_lo, m_hi, m_read, _ in members:
                out[m_lo - lo : m_hi - lo] = m_read()
            return out

        def write(data: np.ndarray) -> None:
            for m_lo, m_hi, _, m_write in members:
                m_write(data[m_lo - lo : m_hi - lo])

    copy[...] = read()
    return Memory(space, lo, hi, read, write, copy)


def _convert(name: str, value: Any, buffers: dict[str, BufferArg]) -> Any:
    if name in buffers:
        arg = buffers[name]
        return triton_compat.pointer_tensor(arg.ptr, arg.tl_dtype)
    if value is None:
        return None
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return triton_compat.scalar_tensor(value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, tuple) and not hasattr(value, "data_ptr"):
        return triton_compat.make_tuple(
            value, (_convert(f"{name}.{i}", item, buffers) for i, item in enumerate(value))
        )
    descriptor = triton_compat.tensor_descriptor_type()
    if descriptor is not None and isinstance(value, descriptor):
        base = buffers[f"{name}.base"]
        host = descriptor(
            HostPointer(base), value.shape, value.strides, value.block_shape, *_descriptor_extra(value)
        )
        return triton_compat.implicit_convert(host)
    return value


def _descriptor_extra(value: Any) -> list[Any]:
    return [getattr(value, attr) for attr in ("padding", "round_f32_to_tf32") if hasattr(value, attr)]


def _info(name: str, value: Any, buffers: dict[str, BufferArg]) -> ArgumentInfo:
    if name in buffers:
        return buffers[name].info()
    if value is None:
        return ArgumentInfo(name, "none")
    if isinstance(value, (bool, int, float, np.generic)):
        dtype = "fp32" if isinstance(value, (float, np.floating)) else type(value).__name__
        return ArgumentInfo(
            name, "scalar", dtype, value=value.item() if isinstance(value, np.generic) else value
        )
    if isinstance(value, tuple):
        return ArgumentInfo(
            name, "tuple", value=tuple(_info(f"{name}.{i}", v, buffers).value for i, v in enumerate(value))
        )
    return ArgumentInfo(name, "other", value=repr(value))


@contextmanager
def _deferred_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pending:
            raise KeyboardInterrupt
