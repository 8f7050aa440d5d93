"""Kernel arguments → host buffers the interpreter can run on, and back.

Every array argument (as `engine.arrays` describes it) is bound to its place in a private host
copy of its caller memory (`engine.memory`); the kernel runs on the copies and the copies are
written back only when the launch succeeds. Each region of overlapping arguments (an in-place
kernel given the same array twice, views of one base) shares one copy, so the kernel sees the
aliasing it would see on the GPU. Scalars, tuples and descriptors become what the interpreter takes.
"""

from __future__ import annotations

import decimal
import fractions
import signal
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb.engine import arrays, triton_compat
from kernel_nb.engine.arrays import ArgumentError
from kernel_nb.engine.memory import Memory, copy_regions
from kernel_nb.engine.snapshot import InputSnapshot
from kernel_nb.poison import PoisonedArray, poison_value
from kernel_nb.trace import ArgumentInfo


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

    writeable: bool = True

    @property
    def ptr(self) -> int:
        """The kernel's address of element 0 (in its memory's window)."""
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


class HostPointer(arrays.Pointer):
    """What the kernel receives for an array argument: its address (in its memory's window, see
    memory.WINDOW_BITS) and a dtype."""

    def __init__(self, arg: BufferArg) -> None:
        self.arg = arg
        self.dtype = arg.dtype

    def data_ptr(self) -> int:
        return self.arg.ptr


@dataclass
class BoundArguments:
    """A launch's arguments, bound to host buffers."""

    values: dict[str, Any]  # kernel parameter → what the interpreted function receives
    buffers: list[BufferArg]
    memories: list[Memory]
    infos: list[ArgumentInfo]
    originals: dict[str, Any]  # parameter → what the caller passed (for the grid callable)

    def snapshot(self, only: set[int] | None = None) -> list[np.ndarray | None]:
        """A copy of every memory's copy (or of those whose indices are in `only`, None for the rest)."""
        return [m.copy.copy() if only is None or i in only else None for i, m in enumerate(self.memories)]

    def inputs(self) -> InputSnapshot:
        """The launch's inputs, copied where the launch changes them (see `InputSnapshot`)."""
        poisoned = {
            i for i, m in enumerate(self.memories) if any(b.poisoned for b in self.buffers if b.memory is m)
        }
        return InputSnapshot(self.memories, eager=poisoned)

    def restore(self, snapshot: Sequence[np.ndarray | None]) -> None:
        """Put the memories back as `snapshot` holds them (a None entry: left as it is)."""
        for memory, saved in zip(self.memories, snapshot):
            # a copy not filled yet was never written: filled, it reads the caller's memory,
            # which holds the inputs until the launch commits (and commit fills every copy)
            # nor was a frozen copy (a written one has thawed)
            if saved is None or memory.lazy or memory.frozen or saved is memory.arena:
                continue
            memory.copy[...] = saved

    def written_memories(self, written: Callable[[str], bool]) -> set[int]:
        """Indices of the memories holding an argument that `written` says the launch wrote, or
        that was poisoned (its copy differs from the caller's memory from the start)."""
        return {
            i
            for i, memory in enumerate(self.memories)
            if any(b.poisoned or written(b.name) for b in self.buffers if b.memory is memory)
        }

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

    def commit(
        self, written: Callable[[str], bool] | None = None, inputs: InputSnapshot | None = None
    ) -> None:
        """Write the copies back to the caller's memory, with Ctrl-C held until the copy is complete:
        every copy, or those `written_memories` names (the others were only read: the caller's
        memory already holds them). `inputs` first copies out what the caller's memory held."""
        chosen = set(range(len(self.memories))) if written is None else self.written_memories(written)
        for memory in self.memories:
            # the launch read these where the caller holds them: its private copies keep the
            # inputs from now on, when the caller may change its arrays (see InputSnapshot),
            # read-only (never written, so as the launch read them; shared with other launches
            # of the same bytes)
            memory.freeze()
        with _deferred_interrupt():
            changed = {i for i in chosen if not self.memories[i].read_only}
            if inputs is not None:
                # exchanged with the caller's bytes, a copy comes back holding the inputs
                exchanged = {i for i in changed if inputs.copied(i) is None and self.memories[i].exchange()}
                inputs.before_write_back(changed - exchanged)
                chosen -= exchanged
            for i, memory in enumerate(self.memories):
                if i in chosen:
                    memory.write_back()


def bind(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> BoundArguments:
    """Bind the caller's arguments to the kernel's parameters and copy arrays to host buffers.

    Raises:
        ArgumentError: an argument of a kind the interpreter cannot take, or a missing argument.
    """
    bound = arrays.parameters(fn, args, kwargs)
    bound.apply_defaults()
    constexprs = triton_compat.constexpr_names(fn)
    leaves = arrays.leaves_of(fn, bound.arguments)
    memories, memory_of = copy_regions(leaves)
    buffers: dict[str, BufferArg] = {}
    for leaf in leaves:
        memory = memory_of[leaf.name]
        buffers[leaf.name] = BufferArg(
            name=leaf.name,
            dtype=leaf.dtype,
            shape=leaf.shape,
            strides=leaf.strides,
            offset=leaf.ptr - memory.lo,
            span_lo=leaf.lo - memory.lo,
            span_hi=leaf.hi - memory.lo,
            memory=memory,
            poisoned=isinstance(leaf.value, PoisonedArray),
            element=leaf.element,
            writeable=leaf.writeable,
        )
    values: dict[str, Any] = {}
    infos: list[ArgumentInfo] = []
    for name, value in bound.arguments.items():
        if name in constexprs:
            if isinstance(value, np.generic):  # BLOCK=np.int64(128): the compiler takes its value
                value = value.item()
            values[name] = value
            infos.append(ArgumentInfo(name, "constexpr", value=triton_compat.unwrap_constexpr(value)))
            continue
        values[name] = _convert(name, value, buffers)
        infos.append(_info(name, value, buffers))
    return BoundArguments(values, list(buffers.values()), memories, infos, dict(bound.arguments))


def _convert(name: str, value: Any, buffers: dict[str, BufferArg]) -> Any:
    if name in buffers:
        arg = buffers[name]
        return triton_compat.pointer_tensor(arg.ptr, arg.tl_dtype)
    if value is None:
        return None
    if isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating)):
        return triton_compat.scalar_tensor(_scalar(name, value))
    _check_passable(name, value)
    if arrays.is_tuple(value):
        return triton_compat.make_tuple(
            value, (_convert(f"{name}.{i}", item, buffers) for i, item in enumerate(value))
        )
    if arrays.is_descriptor(value):
        descriptor = triton_compat.tensor_descriptor_type()
        base = buffers[f"{name}.base"]
        host = descriptor(
            HostPointer(base), value.shape, value.strides, value.block_shape, *_descriptor_extra(value)
        )
        return triton_compat.implicit_convert(host)
    return value


# The integers a GPU launch takes: int32, int64, or uint64 from 2**63 on (JITFunction's specialisation).
_INT_RANGE = (-(2**63), 2**64)


def _scalar(name: str, value: Any) -> bool | int | float:
    """A scalar argument as a Python value, checked as Triton's launcher checks it.

    Raises:
        ArgumentError: an integer that does not fit in 64 bits.
    """
    plain = value.item() if isinstance(value, np.generic) else value
    if isinstance(plain, int) and not isinstance(plain, bool) and not _INT_RANGE[0] <= plain < _INT_RANGE[1]:
        raise ArgumentError(
            f"argument {name}: {plain} does not fit in 64 bits; Triton passes integers from -2**63 to "
            "2**64-1 (as int32, int64 or uint64): pass one in that range"
        )
    return plain


# Python values a kernel argument can never be; Triton's launcher refuses them ("failed to
# specialize"), and the interpreter would fail only inside the kernel, far from the cause.
_DATA_KINDS = (
    str,
    bytes,
    bytearray,
    memoryview,
    list,
    dict,
    set,
    frozenset,
    complex,
    decimal.Decimal,
    fractions.Fraction,
    type(Ellipsis),
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    np.generic,
    np.ndarray,
)


def _check_passable(name: str, value: Any) -> None:
    """Refuse an argument value no kernel parameter can take, saying what to pass instead.

    Raises:
        ArgumentError: a str, list, dict, complex number, numpy array of no Triton dtype, ...
    """
    if not isinstance(value, _DATA_KINDS) or triton_compat.is_value(value):
        return
    kind = type(value).__name__
    if isinstance(value, (list, tuple, set, frozenset)):
        remedy = "pass an array (np.asarray(x)) for a pointer, or a tuple"
    elif isinstance(value, (complex, np.complexfloating)):
        remedy = "pass its real and imaginary parts as two floats"
    elif isinstance(value, (decimal.Decimal, fractions.Fraction)):
        remedy = "pass int(x) or float(x)"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        remedy = "pass an array over its bytes, e.g. np.frombuffer(b, np.float32)"
    elif isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        remedy = "make the parameter a tl.constexpr to pass a function or a type"
    else:
        remedy = "pass an int, a float or an array, or make the parameter a tl.constexpr"
    raise ArgumentError(f"argument {name}: a {kind} cannot be passed to a kernel; {remedy}")


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
