"""triton.language routed to the interpreter (`_patch_lang`), libdevice made to run, and the
namespaces those patches change, for the session to snapshot and restore."""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import triton
import triton.language as tl

from kernel_nb.engine.triton_compat.descriptors import patch_descriptor_strides, patch_dot_scaled_formats
from kernel_nb.engine.triton_compat.interpreter import TensorHandle, interp, semantic
from kernel_nb.engine.triton_compat.type_memo import patch_type_memo
from kernel_nb.engine.triton_compat.versions import require

# extern(symbol, argument arrays, result element type) -> the result array
Extern = Callable[[str, list[np.ndarray], Any], np.ndarray]

# The module the compiler swaps for the backend's libdevice (CUDABackend.get_module_map), and that one.
LIBDEVICE_STUBS = "triton.language.extra.libdevice"

LIBDEVICE_CUDA = "triton.language.extra.cuda.libdevice"


def patch_language(extern: Extern | None = None) -> Callable[[], None]:
    """Route triton.language to the interpreter; returns the function that undoes it.

    `_patch_lang` looks for `tl` / `tl.core` among a function's globals, so it is handed a stub that
    has both. Before 3.6 it returns no scope; the session's namespace snapshot restores those versions.
    With `extern`, libdevice runs too (see `_patch_libdevice`); the snapshot undoes that.
    """
    scope = _patched_language()
    _patch_index(tl.tensor)
    if extern is not None:
        _patch_libdevice(extern)
    restore = getattr(scope, "restore", None)
    undo_strides = patch_descriptor_strides()
    undo_formats = patch_dot_scaled_formats()
    undo_dtypes = _remembered_np_dtypes()
    undo_memo = patch_type_memo()

    def undo() -> None:
        undo_memo()
        undo_dtypes()
        undo_formats()
        undo_strides()
        if callable(restore):
            restore()

    return undo


# What `_patch_lang` set, in order, (object, name, value), and the namespaces' sizes then; None:
# not known yet. It finds the builtins to route by walking every member of five namespaces
# (inspect.getmembers) on every call: 1.2-1.6 ms of each launch, for the same attributes set to
# the same values each time (functions of the member they route and of module globals alone).
_PLAN: tuple[list[tuple[Any, str, Any]], tuple[int, ...]] | None = None


def _patched_language() -> Any:
    """`_patch_lang` of a function that sees `tl` and `tl.core`; returns its scope (None before
    3.6: no scope). From 3.6 on, the attributes it set the first time are set again through a
    scope of its own, while the namespaces hold as many names as they did then."""
    global _PLAN
    sizes = tuple(len(vars(space)) for space in language_namespaces())
    scope_type = getattr(interp, "_LangPatchScope", None)
    if _PLAN is not None and _PLAN[1] == sizes and scope_type is not None:
        scope = scope_type()
        for obj, name, value in _PLAN[0]:
            scope.set_attr(obj, name, value)
        return scope
    patch = require(interp, "_patch_lang")

    def stub() -> None:
        pass

    stub_globals = {"tl": tl, "core": tl.core}
    probe = types.FunctionType(stub.__code__, stub_globals, "kernel_nb_language_probe")
    scope = patch(probe)
    changes = getattr(scope, "_changes", None)
    if isinstance(changes, list) and scope_type is not None:
        # each attribute as it is now: the last value set to it (a name set twice wraps the first)
        _PLAN = [(obj, name, getattr(obj, name)) for obj, name, _ in changes], sizes
    return scope


_ADDRESS = np.dtype(np.uint64)  # the interpreter's pointers, of every pointer type
_NP_DTYPE = "_get_np_dtype"


def _remembered_np_dtypes() -> Callable[[], None]:
    """The interpreter's `_get_np_dtype` answering from a table once it answered for a type: it
    builds its dict of 19 types on every call, and a launch calls it for most operations of every
    batch (10 us a call: 3 ms of a flash attention launch). A block type's answer is its element
    type's. Returns the function that puts the interpreter's own back."""
    original = require(interp, _NP_DTYPE)
    known: dict[Any, np.dtype] = {}

    def np_dtype(tt_dtype: Any) -> np.dtype:
        element = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        if isinstance(element, tl.pointer_type):
            return _ADDRESS
        found = known.get(element)
        if found is None:
            found = known[element] = original(tt_dtype)
        return found

    setattr(interp, _NP_DTYPE, np_dtype)

    def undo() -> None:
        setattr(interp, _NP_DTYPE, original)

    return undo


def libdevice_modules() -> tuple[types.ModuleType, types.ModuleType]:
    """triton.language.extra.libdevice (the stubs) and its CUDA implementation."""
    import importlib

    return importlib.import_module(LIBDEVICE_STUBS), importlib.import_module(LIBDEVICE_CUDA)


# What `_patch_libdevice` sets, (module, name, value before, value set), in order; None: not known
# yet. Each launch set the same 600 attributes to wrappers made afresh (0.25 ms of every launch):
# they are made once, and made again only when a module's members are not those they wrap.
_Plan = list[tuple[types.ModuleType, str, Any, Any]]
_LIBDEVICE_PLAN: tuple[_Plan, tuple[int, int]] | None = None


def _libdevice_plan(stubs: types.ModuleType, cuda: types.ModuleType) -> tuple[_Plan, tuple[int, int]]:
    """What to set, and the sizes of the modules' namespaces it was made for."""
    plan: _Plan = []
    routed: dict[str, Any] = {}
    for name, member in list(vars(cuda).items()):
        if tl.core.is_builtin(member):
            routed[name] = _with_semantic(member)
            plan.append((cuda, name, member, routed[name]))
    for name, member in list(vars(stubs).items()):
        if isinstance(member, types.FunctionType) and member.__module__ == LIBDEVICE_STUBS:
            made = routed.get(name)
            if made is None:
                made = getattr(cuda, name) if hasattr(cuda, name) else _no_cuda_function(name)
            plan.append((stubs, name, member, made))
    return plan, (len(vars(stubs)), len(vars(cuda)))


def _patch_libdevice(extern: Extern) -> None:
    """Make libdevice calls run: as the compiler does, the stub module's functions become the CUDA
    module's (`core.extern` functions), which are given the interpreter's semantic like the rest of
    the language; their `extern_elementwise` dispatch computes each symbol with `extern`."""
    global _LIBDEVICE_PLAN
    stubs, cuda = libdevice_modules()
    known = _LIBDEVICE_PLAN
    if (
        known is None
        or known[1] != (len(vars(stubs)), len(vars(cuda)))
        or not all(vars(module).get(name) is before for module, name, before, _ in known[0])
    ):
        known = _LIBDEVICE_PLAN = _libdevice_plan(stubs, cuda)
    for module, name, _, made in known[0]:
        setattr(module, name, made)
    dispatch = tl.core.dispatch

    def dispatch_here(func: Any, lib_name: Any, lib_path: Any, args: Any, table: Any, *rest: Any) -> Any:
        def call(lib: Any, path: Any, symbol: str, handles: list[Any], ir_type: Any, pure: Any) -> Any:
            # the interpreter's IR types are Triton dtypes; before 3.5 dispatch is handed a shape,
            # not the result type, so the IR type is the one place that names the element
            element = getattr(ir_type, "scalar", ir_type)
            data = [np.asarray(h.data) for h in handles]
            result = TensorHandle(extern(symbol, data, element), element)
            for observe in _EXTERN_OBSERVERS:
                observe(symbol, list(handles), result)
            return result

        return dispatch(call, lib_name, lib_path, args, table, *rest)

    tl.core.dispatch = dispatch_here


# called with (symbol, operand handles, result handle) after each libdevice call (extern_observer)
_EXTERN_OBSERVERS: list[Callable[[str, list[Any], Any], None]] = []


@contextmanager
def extern_observer(observe: Callable[[str, list[Any], Any], None]) -> Iterator[None]:
    """Have `observe` see every libdevice call made meanwhile, after it computed its result."""
    _EXTERN_OBSERVERS.append(observe)
    try:
        yield
    finally:
        _EXTERN_OBSERVERS.remove(observe)


def _with_semantic(member: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("_semantic", None)
        return member(*args, **kwargs, _semantic=semantic())

    call.__name__ = getattr(member, "__name__", "libdevice_function")
    return call


class CompileTimeError(AttributeError):
    """What the compiler would reject, found by a stand-in kernel_nb puts in Triton's place."""


def _no_cuda_function(name: str) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise CompileTimeError(
            f"libdevice.{name} has no CUDA implementation in triton {triton.__version__} "
            f"({LIBDEVICE_CUDA} lacks it): the compiler rejects it too"
        )

    return missing


def libdevice_global(value: Any) -> Any:
    """What the compiler puts in place of a kernel's global: a libdevice stub function imported by
    name (`from triton.language.extra.libdevice import tanh`) becomes the CUDA module's."""
    if isinstance(value, types.FunctionType) and value.__module__ == LIBDEVICE_STUBS:
        stubs, _ = libdevice_modules()
        return getattr(stubs, value.__name__, value)
    return value


def _patch_index(tensor_cls: type) -> None:
    # triton 3.6 uses int(handle.data), which numpy >= 2.4 refuses for a 1-element 1-D array:
    # `range(n)` with a runtime n would raise. The session's snapshot restores the class afterwards.
    # A block of several elements is refused as the compiler refuses it (lane 0 would be silently wrong).
    def index(self: Any) -> int:
        refuse_block_as_int(self)
        return int(np.asarray(self.handle.data).reshape(-1)[0])

    tensor_cls.__index__ = index  # type: ignore[attr-defined]


def refuse_block_as_int(value: Any) -> None:
    """Refuse a block of more than one element where Python wants an int: `range(block)`,
    `a_tuple[block]`, `int(block)`. Triton's compiler takes only scalars there.

    Raises:
        CompileTimeError: the value is such a block.
    """
    shape = [int(n) for n in value.type.shape] if value.type.is_block() else []  # a tl.tuple in 3.6
    if math.prod(shape) > 1:
        raise CompileTimeError(
            f"a block of shape {shape} cannot be used as an int (a range bound, an "
            "index, int()); only scalars can: reduce it first (tl.max, tl.sum) or use a scalar"
        )


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
    spaces.extend(libdevice_modules())
    return spaces


def standard_combines() -> list[tuple[Any, str]]:
    """The combine functions of tl.standard that the interpreter's reductions and scans compute
    with one numpy call, each with what it computes ("sum", "prod", "max", "min", "argmax",
    "argmin"). A list: hashing a JITFunction computes its cache key, which fails mid-launch."""
    kinds = {
        "_sum_combine": "sum",
        "_prod_combine": "prod",
        "_elementwise_max": "max",
        "_elementwise_min": "min",
        "_argmax_combine_tie_break_left": "argmax",
        "_argmax_combine_tie_break_fast": "argmax",
        "_argmin_combine_tie_break_left": "argmin",
        "_argmin_combine_tie_break_fast": "argmin",
    }
    standard = tl.standard
    return [(getattr(standard, name), kind) for name, kind in kinds.items() if hasattr(standard, name)]


def combine_kind(combine_fn: Any) -> str | None:
    """What a combine function of tl.standard computes (see `standard_combines`); None for any
    other function."""
    return next((kind for fn, kind in standard_combines() if fn is combine_fn), None)


def patch_value_reads(
    *,
    index: Callable[[Any], int],
    truth: Callable[[Any], bool],
    transpose: Callable[[Any], Any],
    reduce: Callable[..., Any],
    scan: Callable[..., Any],
) -> None:
    """Redefine the parts of triton.language that read a tensor's values directly: `int(x)` and
    `range(x)`, `if x:`, `x.T`, `tl.reduce` and `tl.associative_scan`. The caller restores them:
    this runs inside the interpreter scope, whose namespace snapshot undoes it."""
    tl.tensor.__index__ = index  # type: ignore[method-assign,assignment]
    tl.tensor.__bool__ = truth  # type: ignore[method-assign,assignment]
    tl.tensor.T = property(transpose)  # type: ignore[misc,assignment]
    for space in (tl, tl.core):
        space.reduce = reduce
        space.associative_scan = scan
