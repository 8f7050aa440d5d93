"""Every use of Triton's private interpreter API, in one place.

Supported: triton 3.4 to 3.9. A name missing from the installed Triton raises
`UnsupportedTritonError` naming the supported range, instead of an AttributeError deep in a launch.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner, Heuristics
from triton.runtime.jit import JITFunction, TensorWrapper

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
# the interpreter's tensor descriptor (3.4+): base pointer, shape, strides, block shape, padding
TensorDescHandle: Any = getattr(_interp, "TensorDescHandle", object)

# Where the language's front end and the interpreter's machinery live (to tell their frames apart).
LANGUAGE_DIR = str(Path(str(tl.__file__)).resolve().parent)
RUNTIME_DIR = str(Path(str(_interp.__file__)).resolve().parent)

# The public classes whose methods a session replaces (and restores).
JIT_FUNCTION = JITFunction
# What triton.reinterpret(tensor, dtype) returns: `.base` and `.dtype` (a Triton element type).
TENSOR_WRAPPER = TensorWrapper
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
ATOMIC_POLL_METHOD = "create_atomic_poll"  # 3.9: tl.atomic_poll


def poll_timeout_ns(timeout: Any) -> int | None:
    """create_atomic_poll's timeout in ns; None for none (3.9 passes an empty ir.value() then, which
    its interpreter mistakes for a timeout)."""
    data = getattr(timeout, "data", None)
    return None if data is None else int(np.asarray(data).reshape(-1)[0])


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
    The dot input precisions are the CUDA backend's (bf16x3 and bf16x6 too, where Triton has them),
    since kernel_nb computes each as the GPU does.
    """
    old = b.options
    fields = {f for f in getattr(type(old), "__dataclass_fields__", {})}
    changes: dict[str, Any] = {"debug": True}
    if "sanitize_overflow" in fields:
        changes["sanitize_overflow"] = False
    if "allowed_dot_input_precisions" in fields:
        changes["allowed_dot_input_precisions"] = dot_input_precisions()
    import dataclasses

    b.options = dataclasses.replace(old, **changes)
    return old


def dot_input_precisions() -> tuple[str, ...]:
    """The `tl.dot` input precisions of the CUDA backend that this Triton's language knows
    (bf16x3 and bf16x6 from 3.6 on)."""
    from triton._C.libtriton import ir

    known = {name.lower() for name in ir.INPUT_PRECISION.__members__}
    return tuple(p for p in ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6") if p in known)


def set_grid(b: Any, grid: tuple[int, int, int]) -> None:
    b.set_grid_dim(*grid)


def set_program(b: Any, pid: tuple[int, int, int]) -> None:
    b.set_grid_idx(*pid)


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
    patch = _require(_interp, "_patch_lang")

    def stub() -> None:
        pass

    stub_globals = {"tl": tl, "core": tl.core}
    probe = types.FunctionType(stub.__code__, stub_globals, "kernel_nb_language_probe")
    scope = patch(probe)
    _patch_index(tl.tensor)
    if extern is not None:
        _patch_libdevice(extern)
    restore = getattr(scope, "restore", None)
    undo_strides = _patch_descriptor_strides()
    undo_formats = _patch_dot_scaled_formats()

    def undo() -> None:
        undo_formats()
        undo_strides()
        if callable(restore):
            restore()

    return undo


class _Format(str):
    """A dot_scaled format name that is also what the compiler hands the semantic before 3.9 (a
    constexpr, read through `.value`), since the interpreter passes the bare string."""

    @property
    def value(self) -> str:
        return str(self)


def _patch_dot_scaled_formats() -> Callable[[], None]:
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


def _patch_descriptor_strides() -> Callable[[], None]:
    """Before 3.6 the interpreter asks a descriptor's strides in elements to be multiples of 16; the
    GPU (TMA) asks it of their bytes, as 3.6 on does: a 24-column fp32 array is fine on the GPU."""
    handle = getattr(_interp, "TensorDescHandle", None)
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


def libdevice_modules() -> tuple[types.ModuleType, types.ModuleType]:
    """triton.language.extra.libdevice (the stubs) and its CUDA implementation."""
    import importlib

    return importlib.import_module(LIBDEVICE_STUBS), importlib.import_module(LIBDEVICE_CUDA)


def _patch_libdevice(extern: Extern) -> None:
    """Make libdevice calls run: as the compiler does, the stub module's functions become the CUDA
    module's (`core.extern` functions), which are given the interpreter's semantic like the rest of
    the language; their `extern_elementwise` dispatch computes each symbol with `extern`."""
    stubs, cuda = libdevice_modules()
    for name, member in list(vars(cuda).items()):
        if tl.core.is_builtin(member):
            setattr(cuda, name, _with_semantic(member))
    for name, member in list(vars(stubs).items()):
        if isinstance(member, types.FunctionType) and member.__module__ == LIBDEVICE_STUBS:
            setattr(stubs, name, getattr(cuda, name, _no_cuda_function(name)))
    dispatch = tl.core.dispatch

    def dispatch_here(func: Any, lib_name: Any, lib_path: Any, args: Any, table: Any, *rest: Any) -> Any:
        def call(lib: Any, path: Any, symbol: str, handles: list[Any], ir_type: Any, pure: Any) -> Any:
            # the interpreter's IR types are Triton dtypes; before 3.5 dispatch is handed a shape,
            # not the result type, so the IR type is the one place that names the element
            element = getattr(ir_type, "scalar", ir_type)
            data = [np.asarray(h.data) for h in handles]
            return TensorHandle(extern(symbol, data, element), element)

        return dispatch(call, lib_name, lib_path, args, table, *rest)

    tl.core.dispatch = dispatch_here


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
    spaces.extend(libdevice_modules())
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
    undo = _patch_descriptor_strides()  # a host descriptor is checked here, outside the launch's patches
    try:
        return _require(_interp, "_implicit_cvt")(value)
    finally:
        undo()


def make_tuple(original: Any, items: Iterable[Any]) -> Any:
    """A tuple argument's converted items, in a tuple of the original's kind: a named tuple keeps its
    class; any other tuple subclass (torch.Size of a tensor's shape) becomes a plain tuple, as the
    compiler sees it, since its class may refuse tensors as items."""
    items = list(items)
    if hasattr(original, "_fields"):
        return type(original)(*items)
    return tuple(items)


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


def pointer_element_np(handle: Any) -> np.dtype:
    return np_dtype(handle.get_element_ty())


def jit_source_function(jit_fn: Any) -> Callable[..., Any]:
    """The Python function under a @triton.jit (or autotune/heuristics) object."""
    fn = jit_fn
    while not isinstance(fn, types.FunctionType):
        fn = fn.fn
    return fn


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


def updated_source(jit: Any) -> tuple[str, int] | None:
    """The source a JITFunction was given by `_unsafe_update_src`, and the file line its `def` is on;
    None while it compiles its function's own source."""
    src, raw = getattr(jit, "src", None), getattr(jit, "raw_src", None)
    if raw is None:  # before 3.5 the JITFunction keeps no copy of its function's lines
        try:
            raw = inspect.getsourcelines(jit.fn)[0]
        except (OSError, TypeError, AttributeError):
            return None
    if not isinstance(src, str):
        return None
    own = textwrap.dedent("".join(raw))
    found = re.search(r"^def\s+\w+\s*\(", own, re.MULTILINE)
    if found is None or src == own[found.start() :]:
        return None
    return src, int(jit.starting_line_number) + own[: found.start()].count("\n")


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
    "float8_e4m3fnuz": tl.float8e4b8,
    "float8_e5m2fnuz": tl.float8e5b16,
}


def storage_of(element: Any) -> tuple[np.dtype | None, Any]:
    """The numpy dtype an array of Triton element type `element` is held in, and the element type
    itself where numpy has no name for it (fp8e4b15 is held as uint8); (None, None) for a non-element."""
    import ml_dtypes

    for name, known in TL_DTYPES.items():
        if known == element:
            return np.dtype(getattr(ml_dtypes, name, name)), None
    if isinstance(element, tl.dtype) and element.is_fp8():
        return np.dtype(np.uint8), element
    return None, None
