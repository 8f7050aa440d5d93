"""The compiled kernel's artifacts (TTIR, TTGIR, LLIR, PTX, SASS), from a GPU launch or without a GPU.

Triton compiles for a CUDA target on any machine: `compile_for_target` specialises the kernel on a
launch's arguments the way `JITFunction.run` does (types, 16-byte alignment, integers equal to 1)
and compiles it, so `%%tkernel interpret --ir` shows what the GPU would run. The Triton names that
takes are in the engine's compat layer (`triton_compat.compile_source`).
"""

from __future__ import annotations

import re
from typing import Any

from kernel_nb.engine import triton_compat
from kernel_nb.gpu import device as gpu_device
from kernel_nb.gpu.arguments import describe, stage
from kernel_nb.trace import Artifacts

STAGES = ("ttir", "ttgir", "llir", "ptx")
# The metadata worth a glance; the rest is Triton's bookkeeping.
METADATA = ("name", "num_warps", "num_stages", "num_ctas", "shared", "maxnreg")
_TARGET = re.compile(r"(cuda|hip):(\w+)")
DEFAULT_TARGET = "cuda:90"


class CompileError(RuntimeError):
    """The kernel did not compile for the target; the message is Triton's."""


def artifacts_of(compiled: Any, *, sass: bool = True, for_launch: bool = True) -> Artifacts:
    """The text of every stage of a `CompiledKernel` (what `JITFunction.run` returns)."""
    asm = compiled.asm
    target = compiled.metadata.target
    artifacts = Artifacts(
        target=f"{target.backend}:{target.arch}",
        stages={stage: str(asm[stage]) for stage in STAGES if stage in asm},
        metadata={
            key: _plain(getattr(compiled.metadata, key))
            for key in METADATA
            if hasattr(compiled.metadata, key)
        },
        compiled_for_launch=for_launch,
    )
    if not sass:
        artifacts.missing["sass"] = "not asked for"
    elif "cubin" not in asm:
        artifacts.missing["sass"] = f"no cubin for target {artifacts.target}"
    else:
        try:
            artifacts.stages["sass"] = asm["sass"]  # Triton runs cuobjdump on the cubin
        except Exception as exc:  # cuobjdump missing or failing: the other stages still stand
            artifacts.missing["sass"] = (
                f"cuobjdump failed or is missing ({type(exc).__name__}: {exc})".strip()
            )
    return artifacts


def parse_target(text: str) -> Any:
    """ "cuda:90" → Triton's GPUTarget (warp size 32 for CUDA, 64 for HIP).

    Raises:
        ValueError: not a target.
    """
    match = _TARGET.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"cannot read target {text!r}: use cuda:CAPABILITY, e.g. cuda:90 or cuda:80")
    backend, arch = match.groups()
    if backend == "cuda":
        if not arch.isdigit():
            raise ValueError(f"target {text!r}: a CUDA capability is a number such as 90")
        return triton_compat.gpu_target("cuda", int(arch), 32)
    return triton_compat.gpu_target("hip", arch, 64)


def compile_for_target(
    kernel: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    target: str = DEFAULT_TARGET,
    *,
    sass: bool = True,
) -> Artifacts:
    """Compile `kernel[grid](*args, **kwargs)` for `target` without running it (no GPU needed).

    Raises:
        GpuUnavailableError: this Triton has no backend for the target.
        CompileError: Triton could not compile the kernel for the target.
    """
    import triton

    jit = triton_compat.innermost_jit(kernel)
    staged = stage(describe(jit.fn, args, kwargs), device=None)
    gpu_target = parse_target(target)
    gpu_device.require(need="compile", target=gpu_target.backend)
    source, options = triton_compat.compile_source(jit, staged.args, staged.kwargs, gpu_target)
    try:
        compiled = triton.compile(source, target=gpu_target, options=options)
    except Exception as exc:
        raise CompileError(f"{jit.fn.__name__}: compiling for {target} failed: {exc}") from exc
    return artifacts_of(compiled, sass=sass, for_launch=False)


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)
