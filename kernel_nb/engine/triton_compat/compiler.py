"""Triton's compiler and driver, for compiling a kernel for a GPU target without running it.

`compile_source` specialises a kernel on a launch's arguments the way `JITFunction.run` does
(types, 16-byte alignment, integers equal to 1) and returns what `triton.compile` takes. The names
it uses exist from triton 3.4 to 3.9, but for `JITFunction._pack_args` (3.5 on), which
`_compile_inputs` does by hand before it.
"""

from __future__ import annotations

from typing import Any


def gpu_target(backend: str, arch: int | str, warp_size: int) -> Any:
    """Triton's GPUTarget."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget(backend, arch, warp_size)


def backend_names() -> set[str]:
    """The compiler backends this Triton has ("nvidia", "amd").

    Raises:
        Exception: whatever importing Triton's backends raises where it has none.
    """
    from triton.backends import backends

    return set(backends)


# What JITFunction.run itself adds to a launch's keywords, whatever the backend.
_RUN_OPTIONS = frozenset({"debug", "instrumentation_mode", "fpsan_homomorphic_casts"})


def launch_option_names() -> frozenset[str]:
    """The keywords besides a kernel's parameters that a GPU launch accepts: the fields of every
    installed backend's options (CUDAOptions, HIPOptions: num_warps, num_stages, maxnreg, ...);
    JITFunction.run refuses any other keyword (`_pack_args`)."""
    import dataclasses
    import importlib

    names = set(_RUN_OPTIONS)
    for backend in ("nvidia", "amd"):
        try:
            module = importlib.import_module(f"triton.backends.{backend}.compiler")
        except Exception:  # a backend this Triton build does not have
            continue
        for member in vars(module).values():
            if (
                isinstance(member, type)
                and member.__name__.endswith("Options")
                and dataclasses.is_dataclass(member)
            ):
                names.update(f.name for f in dataclasses.fields(member))
    return frozenset(names)


def current_device() -> int:
    """The device Triton's active driver launches on.

    Raises:
        Exception: whatever the driver raises where it finds no GPU.
    """
    from triton.runtime import driver

    return driver.active.get_current_device()


def compile_source(
    jit: Any, args: tuple[Any, ...], kwargs: dict[str, Any], target: Any
) -> tuple[Any, dict[str, Any]]:
    """What `triton.compile` takes for `jit` launched with `args` and `kwargs` (launch options such
    as num_warps among them) on `target`: the source and the options."""
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(target)
    options = dict(kwargs)
    options.setdefault("debug", jit.debug)
    binder = create_function_from_signature(jit.signature, jit.params, backend)
    bound_args, specialization, parsed = binder(*args, **options)
    parsed, signature, constexprs, attrs = _compile_inputs(jit, backend, options, bound_args, specialization)
    return ASTSource(jit, signature, constexprs, attrs), parsed.__dict__


def _compile_inputs(
    jit: Any, backend: Any, options: dict[str, Any], bound_args: Any, specialization: Any
) -> tuple[Any, dict[str, Any], dict[Any, Any], dict[Any, Any]]:
    """The options, signature, constexprs and attributes `JITFunction.run` compiles with."""
    pack = getattr(jit, "_pack_args", None)
    if pack is not None:
        return pack(backend, options, bound_args, specialization, None)
    from triton.runtime.jit import find_paths_if, get_iterable_path  # 3.4: run() does this inline

    parsed = backend.parse_options(options)
    sigvals = [x[0] for x in specialization]
    signature = {param.name: kind for param, kind in zip(jit.params, sigvals)}
    paths = find_paths_if(sigvals, lambda _, val: val == "constexpr")
    constexprs = {path: get_iterable_path(list(bound_args.values()), path) for path in paths}
    attrvals = [x[1] for x in specialization]
    attr_paths = find_paths_if(attrvals, lambda _, x: isinstance(x, str))
    attrs = {k: backend.parse_attr(get_iterable_path(attrvals, k)) for k in attr_paths}
    return parsed, signature, constexprs, attrs
