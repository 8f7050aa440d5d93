"""A launch's array arguments, described once for the interpreter and for the GPU.

Every array a kernel receives (a numpy array, a torch CPU or CUDA tensor, a CuPy array, each of
them also as a tuple element, a named-tuple field, a tensor descriptor's base or the memory of
`triton.reinterpret`) becomes one `ArrayLeaf`: its name as `Launch.buffers` names it, its element
type, shape, strides and the bytes it spans in the caller's memory. `regions` groups the leaves
whose bytes overlap, so that both the interpreter's host copies and the GPU's staged copies give
the kernel the aliasing it would see on the device. Torch and CuPy are used only when the caller
already imported them.
"""

from __future__ import annotations

import ctypes
import difflib
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb.engine import host_pages, triton_compat
from kernel_nb.numerics import NUMPY_TYPES

# torch dtype name → Triton's name of the type. torch's fnuz fp8 types (fp8e4b8, fp8e5b16) are not
# taken: the interpreter has never accepted torch tensors of them.
TORCH_TYPES: dict[str, str] = {
    NUMPY_TYPES.numpy_name(name): name for name in NUMPY_TYPES if name not in ("fp8e4b8", "fp8e5b16")
}


class ArgumentError(TypeError):
    """An argument kernel_nb cannot pass to a kernel."""


class Pointer:
    """What a kernel receives in place of an array: an address and a dtype.

    A pointer is already an argument as a launch passes it on, not an array to describe again.
    """

    dtype: Any

    def data_ptr(self) -> int:
        raise NotImplementedError


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
        space: the address space of that memory: "host" or "cuda:N".
        library: whose array holds it: "numpy", "torch" or "cupy".
        value: what the caller passed (the `triton.reinterpret` wrapper, for one).
        array: the numpy, torch or CuPy array whose memory it is.
        element: the Triton element type where `dtype` is only its storage (fp8e4b15, which numpy
            cannot name); None otherwise.
        writeable: the caller's memory may be written (False: a read-only numpy array, a read-only
            memmap, the bytes behind `np.frombuffer(b)`, a tensor on read-only pages).
        byteswapped: the caller's elements are in the other byte order (a numpy ">f4" array);
            `dtype` is then the native one the kernel computes in, and copies swap their bytes.
    """

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    ptr: int
    lo: int
    hi: int
    space: str
    library: str
    value: Any
    array: Any
    element: Any = None
    writeable: bool = True
    byteswapped: bool = False

    @property
    def device(self) -> int | None:
        return None if self.space == "host" else int(self.space.split(":")[1])

    @property
    def pointer_type(self) -> Any:
        """The element type a compiled kernel's pointer to this leaf gets: a reinterpreted leaf's
        Triton type, else the numpy dtype."""
        if isinstance(self.value, triton_compat.TENSOR_WRAPPER):
            return self.element or self.value.dtype
        return self.dtype


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
            out[...] = host_bytes(self.lo, self.hi)
        else:
            _memcpy(self.device, out.ctypes.data, self.lo, out.nbytes, to_host=True)
        return out

    def write(self, data: np.ndarray) -> None:
        """Put bytes back; in host memory only those that differ, so a read-only input stays untouched."""
        data = np.ascontiguousarray(data).view(np.uint8)
        if self.hi == self.lo:
            return
        if self.device is None:
            target = host_bytes(self.lo, self.hi)
            changed = target != data
            if changed.any():
                target[changed] = data[changed]
        else:
            _memcpy(self.device, self.lo, data.ctypes.data, data.nbytes, to_host=False)

    def span(self, leaf: ArrayLeaf, data: np.ndarray) -> np.ndarray:
        """A leaf's elements within bytes of this region, as a 1-D array of its dtype."""
        return data[leaf.lo - self.lo : leaf.hi - self.lo].view(leaf.dtype)


def parameters(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> inspect.BoundArguments:
    """The caller's arguments bound to the kernel's parameters (launch options that are not
    parameters, such as num_warps, left out).

    Raises:
        ArgumentError: the arguments do not fit the parameters, or a keyword is neither a parameter
            nor a launch option (Triton's launcher refuses it too).
    """
    signature = inspect.signature(fn)
    params = signature.parameters
    names = list(params)
    listed = f"(parameters: {', '.join(names)})"
    options = triton_compat.launch_option_names()
    for key in kwargs:
        if key not in params and key not in options:
            close = difflib.get_close_matches(key, [*names, *sorted(options)], n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ArgumentError(
                f"keyword {key} is neither a parameter nor a launch option; {hint}pass a parameter "
                f"({', '.join(names)}) or a launch option such as num_warps"
            )
    try:
        return signature.bind(*args, **{k: v for k, v in kwargs.items() if k in params})
    except TypeError as exc:
        raise ArgumentError(_misfit(params, args, kwargs, listed) or str(exc)) from None


def _misfit(
    params: Mapping[str, inspect.Parameter], args: tuple[Any, ...], kwargs: dict[str, Any], listed: str
) -> str | None:
    """Why arguments do not bind to the parameters, in the kernel's terms."""
    names = list(params)
    if len(args) > len(names):
        return f"{len(args)} positional arguments for {len(names)} parameters; pass at most {len(names)} {listed}"
    twice = [n for n in names[: len(args)] if n in kwargs]
    if twice:
        return f"argument {twice[0]} is given by position and by keyword; pass it once {listed}"
    missing = [
        n for n in names[len(args) :] if n not in kwargs and params[n].default is inspect.Parameter.empty
    ]
    if missing:
        which = f"argument {missing[0]} is" if len(missing) == 1 else f"arguments {', '.join(missing)} are"
        return f"{which} missing; pass {'it' if len(missing) == 1 else 'them'} {listed}"
    return None


def leaves(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[ArrayLeaf]:
    """Every array among a launch's arguments, in parameter order.

    Raises:
        ArgumentError: the arguments do not fit the parameters, or an array of a kind or dtype
            kernel_nb cannot pass.
    """
    return leaves_of(fn, parameters(fn, args, kwargs).arguments)


def leaves_of(fn: Callable[..., Any], arguments: dict[str, Any]) -> list[ArrayLeaf]:
    """Every array among bound arguments (constexpr parameters skipped), in parameter order.

    Raises:
        ArgumentError: an array of a kind or dtype kernel_nb cannot pass.
    """
    constexprs = triton_compat.constexpr_names(fn)
    return [
        leaf
        for name, value in arguments.items()
        if name not in constexprs
        for path, item in walk(name, value)
        if (leaf := leaf_of(path, item)) is not None
    ]


def walk(name: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(path, value) for every leaf of an argument: tuple elements as "name.i", a descriptor's base
    as "name.base"."""
    if is_tuple(value):
        for i, item in enumerate(value):
            yield from walk(f"{name}.{i}", item)
    elif is_descriptor(value):
        yield from walk(f"{name}.base", value.base)
    else:
        yield name, value


def is_tuple(value: Any) -> bool:
    """A tuple of arguments (named tuples included), not an array that happens to be a tuple."""
    return isinstance(value, tuple) and not hasattr(value, "data_ptr")


def is_descriptor(value: Any) -> bool:
    descriptor = triton_compat.tensor_descriptor_type()
    return descriptor is not None and isinstance(value, descriptor)


def leaf_of(path: str, value: Any) -> ArrayLeaf | None:
    """The leaf of one argument value; None for a value that is not an array.

    Raises:
        ArgumentError: an array of a kind or dtype kernel_nb cannot pass.
    """
    if isinstance(value, triton_compat.TENSOR_WRAPPER):
        return _reinterpreted(path, value)
    if isinstance(value, np.ndarray):
        if value.dtype.name not in triton_compat.TL_DTYPES:
            raise ArgumentError(_no_equivalent(path, "numpy", value.dtype))
        # a GPU has one byte order: the kernel computes on native copies, swapped back on commit
        dtype = value.dtype if value.dtype.isnative else value.dtype.newbyteorder("=")
        leaf = _leaf(path, value, dtype, value.shape, value.strides, int(value.ctypes.data), "host", "numpy")
        leaf.byteswapped = not value.dtype.isnative
        return leaf
    module = type(value).__module__.split(".")[0]
    if module == "torch" and "torch" in sys.modules:
        _check_torch_memory(path, value)
        dtype = torch_dtype(path, value.dtype)
        strides = tuple(s * dtype.itemsize for s in value.stride())
        space = "host" if value.device.type == "cpu" else f"cuda:{value.device.index or 0}"
        return _leaf(path, value, dtype, tuple(value.shape), strides, int(value.data_ptr()), space, "torch")
    if module == "cupy" and "cupy" in sys.modules:
        dtype = np.dtype(value.dtype)
        if dtype.name not in triton_compat.TL_DTYPES:
            raise ArgumentError(_no_equivalent(path, "CuPy", dtype))
        space = f"cuda:{value.device.id}"
        return _leaf(path, value, dtype, value.shape, value.strides, int(value.data.ptr), space, "cupy")
    if hasattr(value, "data_ptr") and not isinstance(value, Pointer):
        raise ArgumentError(
            f"argument {path}: {type(value).__name__} is not supported; pass a numpy array, a torch tensor or a CuPy array"
        )
    return None


def _no_equivalent(path: str, library: str, dtype: Any) -> str:
    """The refusal of an array whose element type Triton has no equivalent of, with what to pass."""
    text = f"argument {path}: {library} dtype {dtype} has no Triton equivalent"
    kind = getattr(dtype, "kind", None)
    if kind == "c" or "complex" in str(dtype):
        if library == "torch":
            return f"{text}; pass torch.view_as_real(x), its real and imaginary parts"
        half = np.dtype(f"f{np.dtype(dtype).itemsize // 2}").name
        return f"{text}; pass x.view(np.{half}), its real and imaginary parts"
    if kind in ("O", "U", "S", "V", "M", "m"):
        return f"{text}; pass an array of numbers"
    return f"{text}; convert it to one Triton has (x.astype(np.float32), x.to(torch.float32))"


def _check_torch_memory(path: str, tensor: Any) -> None:
    """Refuse torch tensors whose elements are not plain strided memory on the CPU or a GPU."""
    device = tensor.device.type
    if device == "meta":
        raise ArgumentError(
            f"argument {path}: a torch tensor on the meta device has no data; pass a CPU or CUDA tensor"
        )
    if device not in ("cpu", "cuda"):
        raise ArgumentError(
            f"argument {path}: a torch tensor on device {tensor.device} is not supported; pass a CPU or "
            "CUDA tensor (x.cpu())"
        )
    layout = str(tensor.layout).removeprefix("torch.")
    if layout != "strided":
        raise ArgumentError(
            f"argument {path}: a torch tensor of layout {layout} has no strided memory; pass x.to_dense()"
        )


def torch_dtype(path: str, dtype: Any) -> np.dtype:
    """The numpy dtype (ml_dtypes for bf16/fp8) of a torch dtype.

    Raises:
        ArgumentError: a dtype Triton has no equivalent of.
    """
    name = str(dtype).removeprefix("torch.")
    if name not in TORCH_TYPES:
        raise ArgumentError(_no_equivalent(path, "torch", dtype))
    return np.dtype(NUMPY_TYPES[TORCH_TYPES[name]])


def regions(described: list[ArrayLeaf]) -> list[Region]:
    """Group leaves whose bytes overlap within one address space, ordered by space and address."""
    out: list[Region] = []
    for leaf in sorted(described, key=lambda leaf: (leaf.space, leaf.lo)):
        last = out[-1] if out else None
        if last is not None and last.space == leaf.space and leaf.lo < last.hi:
            last.hi = max(last.hi, leaf.hi)
            last.leaves.append(leaf)
        else:
            out.append(Region(leaf.space, leaf.lo, leaf.hi, [leaf]))
    for region in out:
        _check_byte_order(region)
    return out


def _check_byte_order(region: Region) -> None:
    """Overlapping leaves are copied as one region: byte-swapped ones only if all of them are, in
    elements of one size that line up, so that one swap serves every leaf.

    Raises:
        ArgumentError: leaves of another byte order (or misaligned ones) share bytes.
    """
    first = region.leaves[0]
    swapped = [leaf for leaf in region.leaves if leaf.byteswapped]
    if not swapped or len(region.leaves) == 1:
        return
    size = swapped[0].dtype.itemsize
    for leaf in region.leaves:
        if not leaf.byteswapped or leaf.dtype.itemsize != size or (leaf.lo - region.lo) % size:
            other = first if leaf is not first else region.leaves[1]
            raise ArgumentError(
                f"argument {leaf.name}: shares memory with argument {other.name} in another byte order; "
                "pass native copies (x.astype(x.dtype.newbyteorder('=')))"
            )


def swap_itemsize(region: Region) -> int:
    """The element size whose bytes a region's copies swap (0: the region is in native order)."""
    return region.leaves[0].dtype.itemsize if region.leaves[0].byteswapped else 0


def host_bytes(lo: int, hi: int) -> np.ndarray:
    """The host memory [lo, hi) as a writable uint8 array (no copy)."""
    if hi == lo:
        return np.empty(0, np.uint8)
    # (np.ctypeslib would be imported by the first launch for this: 0.7 ms of it)
    return np.frombuffer(memoryview((ctypes.c_uint8 * (hi - lo)).from_address(lo)), np.uint8)


def _reinterpreted(path: str, wrapper: Any) -> ArrayLeaf:
    """`triton.reinterpret(array, dtype)`: the array's memory, its elements read as `dtype`."""
    base = leaf_of(f"{path} (reinterpreted)", wrapper.base)
    if base is None:
        raise ArgumentError(f"argument {path}: triton.reinterpret of a {type(wrapper.base).__name__}")
    if base.byteswapped:
        raise ArgumentError(
            f"argument {path}: triton.reinterpret of an array in non-native byte order; reinterpret a "
            "native copy (x.astype(x.dtype.newbyteorder('=')))"
        )
    dtype, element = triton_compat.storage_of(wrapper.dtype)
    if dtype is None:
        raise ArgumentError(
            f"argument {path}: triton.reinterpret as {wrapper.dtype}, which is not an element type"
        )
    shape, strides = base.shape, base.strides
    if dtype.itemsize != base.dtype.itemsize:
        # the same bytes counted in elements of the new size, as the compiled kernel's pointer counts them
        nbytes = base.hi - base.lo
        if strides != _contiguous_strides(shape) or nbytes % dtype.itemsize:
            raise ArgumentError(
                f"argument {path}: triton.reinterpret from {base.dtype} to {wrapper.dtype} changes the element "
                "size of a non-contiguous array"
            )
        shape, strides = (nbytes // dtype.itemsize,), (1,)
    return ArrayLeaf(
        path,
        dtype,
        shape,
        strides,
        base.ptr,
        base.lo,
        base.hi,
        base.space,
        base.library,
        wrapper,
        base.array,
        element,
        base.writeable,
    )


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _leaf(
    path: str, value: Any, dtype: np.dtype, shape: Any, byte_strides: Any, ptr: int, space: str, library: str
) -> ArrayLeaf:
    if any(s % dtype.itemsize for s in byte_strides):
        raise ArgumentError(
            f"argument {path}: strides {tuple(byte_strides)} are not multiples of the item size"
        )
    shape = tuple(int(n) for n in shape)
    strides = tuple(int(s) // dtype.itemsize for s in byte_strides)
    if any(n == 0 for n in shape):
        lo = hi = ptr
    else:
        lo = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s < 0) * dtype.itemsize
        hi = ptr + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) * dtype.itemsize + dtype.itemsize
    if space != "host":
        writeable = True
    elif library == "numpy":
        writeable = bool(value.flags.writeable)
    else:  # a torch tensor has no flag: its pages tell (one on a read-only memmap is read-only)
        writeable = host_pages.writable(lo, hi)
    return ArrayLeaf(
        path, dtype, shape, strides, ptr, lo, hi, space, library, value, value, writeable=writeable
    )


def _memcpy(device: int, dst: int, src: int, nbytes: int, *, to_host: bool) -> None:
    import cupy

    kind = cupy.cuda.runtime.memcpyDeviceToHost if to_host else cupy.cuda.runtime.memcpyHostToDevice
    with cupy.cuda.Device(device):
        cupy.cuda.runtime.memcpy(dst, src, nbytes, kind)
