"""A launch's array arguments on the GPU: host arrays staged into CuPy memory, device arrays as they are.

The arrays are those `engine.arrays` finds, as the interpreter finds them. numpy arrays and torch
CPU tensors are copied into CuPy device buffers, the kernel receives a `DevicePointer` into them,
and after the launch the results are copied back into the same host memory (only the bytes that
changed, so read-only inputs stay untouched). Arguments whose memory overlaps (an in-place kernel
given one array twice, views of one base) share one device buffer, so the kernel sees the aliasing
it would see with device arrays. CuPy arrays are wrapped in a `DevicePointer` (CuPy has no
`data_ptr()`); torch CUDA tensors are passed unchanged.

The copy back is all or nothing: every result is fetched from the device first, a result that
would change a read-only array (a read-only `np.memmap`, `np.frombuffer` of bytes, an array
marked read-only) refuses the whole copy, and Ctrl-C during the writes undoes them, so a failed
or interrupted launch leaves the caller's arrays bit-identical. Values the device cannot take
(big-endian arrays, lists and strings, integers past 64 bits) are refused before staging, naming
the kernel and the argument.
"""

from __future__ import annotations

import dataclasses
import inspect
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb.engine import arrays, triton_compat
from kernel_nb.engine.arrays import ArgumentError, ArrayLeaf, Pointer, Region

__all__ = ["Arguments", "ArrayLeaf", "DevicePointer", "Region", "Staged", "describe", "stage"]

# Fake device addresses for compiling without a GPU: aligned like a fresh CuPy allocation (256 bytes).
_FAKE_BASE = 1 << 40
_FAKE_STRIDE = 1 << 34
# What no kernel parameter takes (Triton fails to specialise them, with no argument named).
_NOT_ARGUMENTS = (list, dict, set, frozenset, str, bytes, bytearray, complex)
_INT_RANGE = (-(2**63), 2**64)  # int64 and uint64 together


class DevicePointer(Pointer):
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


@dataclass
class Arguments:
    """A launch's arguments, bound to the kernel's parameters, with their array leaves and regions."""

    bound: inspect.BoundArguments
    extra: dict[str, Any]  # launch options that are not parameters (num_warps, ...)
    leaves: list[ArrayLeaf]
    regions: list[Region]
    kernel: str = "kernel"

    def meta(self) -> dict[str, Any]:
        """The arguments by name as Triton gives them to a grid callable: defaults filled in, launch
        options (num_warps, ...) beside them."""
        filled = inspect.BoundArguments(self.bound.signature, self.bound.arguments.copy())
        filled.apply_defaults()
        return {**filled.arguments, **self.extra}

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
        ArgumentError: the arguments do not fit the kernel's parameters, or a value the device
            cannot take (an unsupported array type or dtype, a big-endian array, a list or string,
            an integer past 64 bits); the message names the kernel and the argument.
    """
    kernel = fn.__name__
    try:
        bound = arrays.parameters(fn, args, kwargs)
        leaves = arrays.leaves_of(fn, bound.arguments)
    except ArgumentError as exc:
        raise _naming(kernel, exc) from None
    constexprs = triton_compat.constexpr_names(fn)
    for name, value in bound.arguments.items():
        if name not in constexprs:
            for path, item in arrays.walk(name, value):
                _check_value(kernel, path, item)
    for leaf in leaves:
        if leaf.byteswapped:  # the leaf's dtype is the native one; the caller's is the other order
            caller = leaf.dtype.newbyteorder(">" if leaf.dtype.byteorder in ("<", "=") else "<")
            raise ArgumentError(
                f"{kernel}: argument {leaf.name} is a big-endian array ({caller.str}), which the GPU "
                f"would read byte-swapped; pass it converted: .astype('{leaf.dtype.newbyteorder('<').str}')"
            )
    params = inspect.signature(fn).parameters
    extra = {k: v for k, v in kwargs.items() if k not in params}
    return Arguments(bound, extra, leaves, arrays.regions(leaves), kernel)


def _naming(kernel: str, error: ArgumentError) -> ArgumentError:
    text = str(error)
    return error if text.startswith(f"{kernel}:") else ArgumentError(f"{kernel}: {text}")


def _check_value(kernel: str, path: str, value: Any) -> None:
    if isinstance(value, _NOT_ARGUMENTS):
        raise ArgumentError(
            f"{kernel}: argument {path} is a {type(value).__name__}, which a kernel cannot take; pass an "
            "array (numpy, torch or CuPy) for a pointer, or a number for a scalar"
        )
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_RANGE[0] <= value < _INT_RANGE[1]:
        raise ArgumentError(
            f"{kernel}: argument {path} is {value}, past the 64-bit integers a kernel takes "
            "(-2**63 to 2**64 - 1); pass a smaller value"
        )


@dataclass
class Staged:
    """Arguments rewritten for a compiled launch, and the device buffers behind the host arrays."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    buffers: list[tuple[Region, Any]]  # host region → its CuPy buffer

    def commit(self, kernel: str) -> None:
        """Copy every staged buffer back to the caller's host memory (after the launch completed):
        all of them, or, on an error or Ctrl-C, none.

        Raises:
            ArgumentError: the launch changed a read-only array; nothing was written.
            KeyboardInterrupt: Ctrl-C during the copy; what was written is undone.
        """
        results = [(region, buffer.get()) for region, buffer in self.buffers]  # nothing written yet
        changes = []
        for region, data in results:
            before = region.read()
            changed = before != data
            if changed.any():
                _refuse_read_only(kernel, region, changed)
                changes.append((region, before, data))
        with _held_interrupt() as held:
            written: list[tuple[Region, np.ndarray]] = []
            try:
                for region, before, data in changes:
                    written.append((region, before))
                    region.write(data)
            except BaseException:
                _undo(written)
                raise
            if held:
                _undo(written)


def _undo(written: list[tuple[Region, np.ndarray]]) -> None:
    for region, before in reversed(written):
        region.write(before)


def _refuse_read_only(kernel: str, region: Region, changed: np.ndarray) -> None:
    """Raise when changed bytes lie only under read-only leaves (no writable view of them was passed)."""
    writable = np.zeros(changed.size, bool)
    for leaf in region.leaves:
        if _writable(leaf):
            writable[leaf.lo - region.lo : leaf.hi - region.lo] = True
    stray = changed & ~writable
    if not stray.any():
        return
    first = region.lo + int(np.argmax(stray))
    leaf = next((leaf for leaf in region.leaves if leaf.lo <= first < leaf.hi), region.leaves[0])
    raise ArgumentError(
        f"{kernel}: the launch stored into {leaf.name}, a read-only array (flags.writeable is False); "
        "the arrays are unchanged; pass a writable array there, e.g. a copy"
    )


def _writable(leaf: ArrayLeaf) -> bool:
    flags = getattr(leaf.array, "flags", None)
    return bool(getattr(flags, "writeable", True)) if isinstance(leaf.array, np.ndarray) else True


@contextmanager
def _held_interrupt() -> Iterator[list[int]]:
    """Hold Ctrl-C for the body; yields the list of held signals, then raises KeyboardInterrupt for them.

    A handler of its own, not the one in place: the body must not be cut between two writes.
    """
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


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
            replaced[leaf.name] = DevicePointer(base + leaf.ptr - region.lo, leaf.pointer_type, owner)
        elif type(leaf.value).__module__.split(".")[0] == "cupy":
            replaced[leaf.name] = DevicePointer(leaf.ptr, leaf.pointer_type, leaf.value)
        else:
            replaced[leaf.name] = leaf.value
    bound = arguments.bound
    rebuilt = inspect.BoundArguments(bound.signature, bound.arguments.copy())
    for name, value in bound.arguments.items():
        rebuilt.arguments[name] = _substitute(name, value, replaced)
    return Staged(rebuilt.args, {**rebuilt.kwargs, **arguments.extra}, buffers)


def _substitute(name: str, value: Any, replaced: dict[str, Any]) -> Any:
    if name in replaced:
        return replaced[name]
    if arrays.is_tuple(value):
        items = [_substitute(f"{name}.{i}", item, replaced) for i, item in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if arrays.is_descriptor(value) and f"{name}.base" in replaced and dataclasses.is_dataclass(value):
        return dataclasses.replace(value, base=replaced[f"{name}.base"])  # type: ignore[type-var]
    return value
