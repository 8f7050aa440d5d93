"""The buffers of a compared launch, each judged under the tolerance its values call for.

A fp32 buffer that a tf32 dot's result is stored into gets tf32's rule, the others their dtype's
own; where dot-fed and other stores write one buffer, the rule goes element by element, by which
store wrote them (from the interpreter's memory events).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

import numpy as np

from kernel_nb import numerics
from kernel_nb.compare import compare_buffer, dot_fed_stores, tolerance_for, uses_tf32_dots
from kernel_nb.compare.tolerance import TF32
from kernel_nb.gpu.arguments import Arguments
from kernel_nb.gpu.runner import GpuLaunch
from kernel_nb.trace import Comparison, Launch, Tolerance


class Overrides(Protocol):
    """What a comparison reads of the session's options (`GpuOptions`)."""

    @property
    def rtol(self) -> float | None: ...

    @property
    def atol(self) -> float | None: ...

    @property
    def keep(self) -> Any: ...

    @property
    def tolerance(self) -> str: ...


def compare_launch(
    launch: Launch,
    arguments: Arguments,
    before: list[Any],
    cpu: list[Any],
    gpu: list[Any],
    gpu_launch: GpuLaunch,
    options: Overrides,
) -> Comparison:
    """Compare every buffer of a launch that either side wrote, from region snapshots of each side.

    `options`: the session's `GpuOptions` (its rtol, atol and keep).
    """
    ttir = gpu_launch.artifacts.stages.get("ttir", "") if gpu_launch.artifacts is not None else ""
    tf32 = uses_tf32_dots(ttir)
    leaves = list(arguments.distinct_leaves())
    stores = dot_fed_stores(launch.sources, launch.kernel, [leaf.name for leaf in leaves]) if tf32 else {}
    fed = None if stores is None else {name for name, (lines, _) in stores.items() if lines}
    buffers = []
    for leaf in leaves:
        index = arguments.regions.index(arguments.region_of(leaf))
        region = arguments.regions[index]
        span = [region.span(leaf, data[index]) for data in (before, cpu, gpu)]
        # a launch the interpreter failed on wrote nothing: its partial counts are no writes
        buffer_map = launch.buffers.get(leaf.name) if launch.status == "ok" else None
        tolerance = _scoped(leaf.dtype, tf32, fed, leaf.name, options)
        relaxed = None
        fed_lines, other_lines = (stores or {}).get(leaf.name.split(".")[0], (set(), set()))
        overridden = options.rtol is not None or options.atol is not None
        split = fed_lines and other_lines and np.dtype(leaf.dtype) == np.float32 and not overridden
        if split and buffer_map is not None:
            # dot-fed and other stores write this buffer: the tf32 rule for what the first wrote
            written = _written_at(launch, leaf.name, fed_lines, span[0].size, buffer_map.origin)
            if written is not None:
                relaxed = (
                    written,
                    replace(tolerance, reason=f"{TF32.reason} (the elements a tf32 dot's stores wrote)"),
                )
                own = tolerance_for(leaf.dtype, rtol=options.rtol, atol=options.atol)
                tolerance = replace(own, reason=f"{own.reason} (the elements other stores wrote)")
        floors = None
        if options.tolerance == "shadow" and launch.status == "ok":
            floors = shadow_floors(launch.references.get(leaf.name), span[1])
            if floors is not None:
                relaxed = None
                tolerance = Tolerance(rtol=0.0, atol=0.0, reason=SHADOW_REASON)
        compared = compare_buffer(
            leaf.name,
            *span,
            shape=leaf.shape,
            tolerance=tolerance,
            floors=floors,
            # the interpreter's per-element bookkeeping is settled only if the values alone cannot say
            cpu_writes=_written(buffer_map, span[0].size),
            last_writer=_last_writer(buffer_map, span[0].size),
            pid_of=launch.pid_of,
            owned=True,  # spans of this launch's own snapshots, which are only read from now on
            relaxed=relaxed,
        )
        if compared is not None:
            buffers.append(compared)
    return Comparison(
        launch=launch.index,
        kernel=launch.kernel,
        device=gpu_launch.device,
        buffers=buffers,
        tf32=tf32,
        kept=options.keep,
    )


# With --tolerance shadow, the GPU may be this many times as far from the interpreter as the
# interpreter is from the fp64 reference, and this many ulps of the buffer's type in any case: two
# realisations of the same arithmetic (another summation order, an fma here and there) err by about
# as much, in either direction.
SHADOW_FACTOR = 4.0
SHADOW_ULPS = 4.0
SHADOW_REASON = (
    f"fp64 shadow: per element, {SHADOW_FACTOR:g}x the interpreter's error against the fp64 reference "
    f"(at least {SHADOW_ULPS:g} ulps)"
)
_TRITON_NAMES = {numerics.NUMPY_TYPES.numpy_name(name): name for name in numerics.NUMPY_TYPES}


def shadow_floors(reference: np.ndarray | None, cpu: np.ndarray) -> np.ndarray | None:
    """Per element of a float buffer's span, the absolute tolerance its fp64 `reference` gives
    (None: the shadow stored nothing there, or the buffer holds no floats)."""
    name = _TRITON_NAMES.get(np.dtype(cpu.dtype).name, "")
    if reference is None or reference.size != cpu.size or not name.startswith(("fp", "bf")):
        return None
    values = np.asarray(cpu).astype(np.float64).reshape(-1)
    with np.errstate(all="ignore"):
        error = np.abs(values - reference.reshape(-1))
    error = np.where(np.isfinite(error), error, 0.0)
    return SHADOW_FACTOR * np.maximum(error, SHADOW_ULPS * numerics.ulp(reference.reshape(-1), name))


def _scoped(dtype: Any, tf32: bool, fed: set[str] | None, name: str, options: Overrides) -> Tolerance:
    """The buffer's tolerance: tf32's where a tf32 dot's result is stored into it (every fp32 buffer
    when the source cannot say), the dtype's own elsewhere, saying which and why.

    tf32's also where the interpreter rounds the dot's inputs as the GPU does (numerics="gpu"):
    the sums' order still differs, and a line that cancels (na + nb - 2 * dot) magnifies that far
    beyond fp32's rule, measured on an H200."""
    reached = tf32 and (fed is None or name.split(".")[0] in fed)
    tolerance = tolerance_for(dtype, tf32=reached, rtol=options.rtol, atol=options.atol)
    if np.dtype(dtype) != np.float32 or not tf32:
        return tolerance
    if reached:
        why = "a tf32 dot's result is stored into it" if fed is not None else "the kernel has tf32 dots"
    else:
        why = "no tf32 dot reaches it"
    return replace(tolerance, reason=f"{tolerance.reason} ({why})")


def _written_at(launch: Launch, name: str, lines: set[int], size: int, origin: int) -> np.ndarray | None:
    """Which elements of the argument's span stores and atomics at `lines` wrote, from the launch's
    memory events: exactly where a program's values were kept, else the range its lanes spanned
    (a few elements more, never fewer). None when some program's events are not there."""
    if launch.status != "ok" or len(launch.programs) < launch.num_programs:
        return None
    mask = np.zeros(size, bool)
    for program in launch.programs.values():
        for event in program.events:
            if event.arg != name or event.kind == "load" or event.line not in lines or not event.active:
                continue
            if event.indices is not None and event.mask is not None:
                at = np.asarray(event.indices).reshape(-1)[np.asarray(event.mask).reshape(-1)] + origin
                mask[at[(at >= 0) & (at < size)]] = True
            else:
                mask[max(event.lo + origin, 0) : min(event.hi + origin, size)] = True
    return mask


def _written(buffer_map: Any, size: int) -> Callable[[], bool] | None:
    """A function that says whether the interpreter wrote the buffer (`BufferMap.written`: without
    adding up its per-element counts where the marks can say)."""
    if not _covers(buffer_map, size):
        return None
    return lambda: bool(buffer_map.written)


def _last_writer(buffer_map: Any, size: int) -> Callable[[], np.ndarray] | None:
    """A function that returns `BufferMap.last_writer` (settled only when called)."""
    if not _covers(buffer_map, size):
        return None
    return lambda: buffer_map.last_writer


def _covers(buffer_map: Any, size: int) -> bool:
    # a map covers the argument's span; another size means it describes something else
    return buffer_map is not None and buffer_map.size == size
