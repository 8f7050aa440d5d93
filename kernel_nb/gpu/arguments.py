"""A launch's array arguments on the GPU: host arrays staged into CuPy memory, device arrays as they are.

numpy arrays and torch CPU tensors are copied into CuPy device buffers, the kernel receives a
`DevicePointer` into them, and after the launch the results are copied back into the same host
memory (only the bytes that changed, so read-only inputs stay untouched). Arguments whose memory
overlaps (an in-place kernel given one array twice, views of one base) share one device buffer, so
the kernel sees the aliasing it would see with device arrays. CuPy arrays are wrapped in a
`DevicePointer` (CuPy has no `data_ptr()`); torch CUDA tensors are passed unchanged.
"""

from __future__ import annotations

import ctypes
import dataclasses
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb.engine import triton_compat
from kernel_nb.engine.args import torch_dtype

# Fake device addresses for compiling without a GPU: aligned like a fresh CuPy allocation (256 bytes).
_FAKE_BASE = 1 << 40
_FAKE_STRIDE = 1 << 34


class DevicePointer:
    """What a compiled kernel receives for an array in device memory: an address and a dtype (numpy's,
    or a Triton element type for a reinterpreted array).

    Triton reads only `data_ptr()` and `dtype` (whose `str()` names the element type); `owner`
    keeps the memory alive while the launch runs.
    """

    def __init__(self, address: int, dtype: Any, owner: Any = None) -> None:
        self.address = address
        self.dtype = dtype
        self.owner = owner

    def data_ptr(self) -> int:
        return self.address

    def __repr__(self) -> str:
        return f"DevicePointer(0x{self.address:x}, {self.dtype})"


@dataclass(eq=False)
class ArrayLeaf:
    """One array argument (a tuple element or a descriptor's base counts as one).

    Attributes:
        name: the kernel parameter, with ".i" for tuple elements and ".base" for descriptors,
            as the interpreter's `Launch.buffers` names it.
        dtype: numpy element dtype (ml_dtypes for bf16/fp8).
        shape, strides: in elements.
        ptr: address of element 0 in the caller's memory.
        lo, hi: the byte range the elements span.
        space: "host" or "cuda:N".
        value: what the caller passed.
    """

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    ptr: int
    lo: int
    hi: int
    space: str
    value: Any
    element: Any = None  # the Triton element type of a triton.reinterpret argument


@dataclass(eq=False)
class Region:
    """A stretch of the caller's memory covered by one or more overlapping leaves."""

    space: str
    lo: int
    hi: int
    leaves: list[ArrayLeaf] = field(default_factory=list)

    @property
    def device(self) -> int | None:
        return None if self.space == "host" else int(self.space.split(":")[1])

    def read(self) -> np.ndarray:
        """A copy of the region's bytes."""
        out = np.empty(self.hi - self.lo, np.uint8)
        if self.hi == self.lo:
            return out
        if self.device is None:
            out[...] = _host_view(self.lo, self.hi)
        else:
            _memcpy(self.device, out.ctypes.data, self.lo, out.nbytes, to_host=True)
        return out

    def write(self, data: np.ndarray) -> None:
        """Put bytes back; in host memory only those that differ."""
        data = np.ascontiguousarray(data).view(np.uint8)
        if self.hi == self.lo:
            return
        if self.device is None:
            target = _host_view(self.lo, self.hi)
            changed = target != data
            if changed.any():
                target[changed] = data[changed]
        else:
            _memcpy(self.device, self.lo, data.ctypes.data, data.nbytes, to_host=False)

    def span(self, leaf: ArrayLeaf, data: np.ndarray) -> np.ndarray:
        """A leaf's elements within bytes of this region, as a 1-D array of its dtype."""
        return data[leaf.lo - self.lo : leaf.hi - self.lo].view(leaf.dtype)


@dataclass
class Arguments:
    """A launch's arguments, bound to the kernel's parameters, with their array leaves and regions."""

    bound: inspect.BoundArguments
    extra: dict[str, Any]  # launch options that are not parameters (num_warps, ...)
    leaves: list[ArrayLeaf]
    regions: list[Region]

    def region_of(self, leaf: ArrayLeaf) -> Region:
        return next(r for r in self.regions if leaf in r.leaves)

    def snapshot(self) -> list[np.ndarray]:
        return [r.read() for r in self.regions]

    def restore(self, saved: list[np.ndarray]) -> None:
        for region, data in zip(self.regions, saved):
            region.write(data)

    def distinct_leaves(self) -> list[ArrayLeaf]:
        """Leaves without repeats: one array passed twice is compared once, under its first name."""
        seen: set[tuple[str, int, int, str]] = set()
        out = []
        for leaf in self.leaves:
            key = (leaf.space, leaf.lo, leaf.hi, leaf.dtype.name)
            if key not in seen and leaf.hi > leaf.lo:
                seen.add(key)
                out.append(leaf)
        return out


def describe(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
    """Bind a launch's arguments and find every array among them.

    Raises:
        TypeError: the arguments do not fit the kernel's parameters, or an array type is unsupported.
    """
    signature = inspect.signature(fn)
    params = signature.parameters
    try:
        bound = signature.bind(*args, **{k: v for k, v in kwargs.items() if k in params})
    except TypeError as exc:
        raise TypeError(f"{fn.__name__}: {exc}") from None
    constexprs = triton_compat.constexpr_names(fn)
    leaves = [
        leaf
        for name, value in bound.arguments.items()
        if name not in constexprs
        for path, item in _leaves(name, value)
        if (leaf := _describe(path, item)) is not None
    ]
    return Arguments(bound, {k: v for k, v in kwargs.items() if k not in params}, leaves, _group(leaves))


@dataclass
class Staged:
    """Arguments rewritten for a compiled launch, and the device buffers behind the host arrays."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    buffers: list[tuple[Region, Any]]  # host region → its CuPy buffer

    def commit(self) -> None:
        """Copy every staged buffer back to the caller's host memory (after the launch completed)."""
        for region, buffer in self.buffers:
            region.write(buffer.get())


def stage(arguments: Arguments, device: int | None) -> Staged:
    """Copy host arrays into fresh CuPy buffers on `device` and point the kernel at them.

    With `device` None nothing is allocated: host arrays get fake addresses aligned like CuPy's,
    enough to compile the kernel (Triton specialises on pointer alignment) but not to run it.
    """
    buffers: list[tuple[Region, Any]] = []
    bases: dict[int, tuple[int, Any]] = {}
    for i, region in enumerate(arguments.regions):
        if region.space != "host":
            continue
        if device is None:
            bases[id(region)] = (_FAKE_BASE + i * _FAKE_STRIDE, None)
            continue
        import cupy

        buffer = cupy.asarray(region.read())
        buffers.append((region, buffer))
        bases[id(region)] = (int(buffer.data.ptr), buffer)
    replaced: dict[str, Any] = {}
    for leaf in arguments.leaves:
        region = arguments.region_of(leaf)
        if region.space == "host":
            base, owner = bases[id(region)]
            replaced[leaf.name] = DevicePointer(
                base + leaf.ptr - region.lo, leaf.element or leaf.dtype, owner
            )
        elif type(leaf.value).__module__.split(".")[0] == "cupy":
            replaced[leaf.name] = DevicePointer(leaf.ptr, leaf.element or leaf.dtype, leaf.value)
        else:
            replaced[leaf.name] = leaf.value
    bound = arguments.bound
    rebuilt = inspect.BoundArguments(bound.signature, bound.arguments.copy())
    for name, value in bound.arguments.items():
        rebuilt.arguments[name] = _substitute(name, value, replaced)
    return Staged(rebuilt.args, {**rebuilt.kwargs, **arguments.extra}, buffers)


def _leaves(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, tuple) and not hasattr(value, "data_ptr"):
        for i, item in enumerate(value):
            yield from _leaves(f"{name}.{i}", item)
    elif _is_descriptor(value):
        yield from _leaves(f"{name}.base", value.base)
    else:
        yield name, value


def _substitute(name: str, value: Any, replaced: dict[str, Any]) -> Any:
    if name in replaced:
        return replaced[name]
    if isinstance(value, tuple) and not hasattr(value, "data_ptr"):
        items = [_substitute(f"{name}.{i}", item, replaced) for i, item in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if _is_descriptor(value) and f"{name}.base" in replaced and dataclasses.is_dataclass(value):
        return dataclasses.replace(value, base=replaced[f"{name}.base"])  # type: ignore[type-var]
    return value


def _is_descriptor(value: Any) -> bool:
    descriptor = triton_compat.tensor_descriptor_type()
    return descriptor is not None and isinstance(value, descriptor)


def _describe(path: str, value: Any) -> ArrayLeaf | None:
    if isinstance(value, triton_compat.TENSOR_WRAPPER):
        return _reinterpreted(path, value)
    if isinstance(value, np.ndarray):
        return _leaf(path, value, value.dtype, value.shape, value.strides, int(value.ctypes.data), "host")
    module = type(value).__module__.split(".")[0]
    if module == "cupy" and "cupy" in sys.modules:
        space = f"cuda:{value.device.id}"
        return _leaf(
            path, value, np.dtype(value.dtype), value.shape, value.strides, int(value.data.ptr), space
        )
    if module == "torch" and "torch" in sys.modules:
        dtype = torch_dtype(path, value.dtype)
        strides = tuple(s * dtype.itemsize for s in value.stride())
        space = "host" if value.device.type == "cpu" else f"cuda:{value.device.index or 0}"
        return _leaf(path, value, dtype, tuple(value.shape), strides, int(value.data_ptr()), space)
    if isinstance(value, DevicePointer):
        return None
    if hasattr(value, "data_ptr"):
        raise TypeError(
            f"argument {path}: {type(value).__name__} is not supported; pass a numpy array, a torch tensor or a CuPy array"
        )
    return None


def _reinterpreted(path: str, wrapper: Any) -> ArrayLeaf:
    """triton.reinterpret(array, dtype): the array's memory, its elements of type `dtype`; passed on
    as it is where it lives on the device, else staged and pointed to with that type."""
    base = _describe(path, wrapper.base)
    dtype, element = triton_compat.storage_of(wrapper.dtype)
    if base is None or dtype is None:
        raise TypeError(
            f"argument {path}: triton.reinterpret of {type(wrapper.base).__name__} as {wrapper.dtype}"
        )
    shape: tuple[int, ...] = base.shape
    strides: tuple[int, ...] = base.strides
    if dtype.itemsize != base.dtype.itemsize:
        shape, strides = ((base.hi - base.lo) // dtype.itemsize,), (1,)
    return dataclasses.replace(
        base, dtype=dtype, shape=shape, strides=strides, value=wrapper, element=element or wrapper.dtype
    )


def _leaf(
    path: str, value: Any, dtype: np.dtype, shape: Any, byte_strides: Any, ptr: int, space: str
) -> ArrayLeaf:
    if dtype.name not in triton_compat.TL_DTYPES:
        raise TypeError(f"argument {path}: dtype {dtype} has no Triton equivalent")
    if any(s % dtype.itemsize for s in byte_strides):
        raise TypeError(f"argument {path}: strides {tuple(byte_strides)} are not multiples of the item size")
    shape = tuple(int(n) for n in shape)
    strides = tuple(int(s) // dtype.itemsize for s in byte_strides)
    if any(n == 0 for n in shape):
        lo = hi = ptr
    else:
        lo = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0) * dtype.itemsize
        hi = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) * dtype.itemsize + dtype.itemsize
    return ArrayLeaf(path, dtype, shape, strides, ptr, lo, hi, space, value)


def _group(leaves: list[ArrayLeaf]) -> list[Region]:
    regions: list[Region] = []
    for leaf in sorted(leaves, key=lambda leaf: (leaf.space, leaf.lo)):
        last = regions[-1] if regions else None
        if last is not None and last.space == leaf.space and leaf.lo < last.hi:
            last.hi = max(last.hi, leaf.hi)
            last.leaves.append(leaf)
        else:
            regions.append(Region(leaf.space, leaf.lo, leaf.hi, [leaf]))
    return regions


def _host_view(lo: int, hi: int) -> np.ndarray:
    return np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))


def _memcpy(device: int, dst: int, src: int, nbytes: int, *, to_host: bool) -> None:
    import cupy

    kind = cupy.cuda.runtime.memcpyDeviceToHost if to_host else cupy.cuda.runtime.memcpyHostToDevice
    with cupy.cuda.Device(device):
        cupy.cuda.runtime.memcpy(dst, src, nbytes, kind)
