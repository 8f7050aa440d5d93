"""Launching a probed kernel variant on the GPU and reading back what its chosen programs logged."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernel_nb.compare import Probe, compare_program, uses_tf32_dots
from kernel_nb.compare.drift import probe_drift
from kernel_nb.engine import triton_compat
from kernel_nb.gpu import device as gpu_device
from kernel_nb.gpu.arguments import Arguments, DevicePointer, Staged, describe, stage
from kernel_nb.gpu.grid import resolve_grid
from kernel_nb.gpu.instrument import PROBE, ProbedKernel, ProgramLog, instrument, read_log
from kernel_nb.gpu.runner import GpuLaunchError, RunFunction, interrupted_as_launch
from kernel_nb.numerics import numpy_dtype
from kernel_nb.trace import Divergence, Launch, Pid


@dataclass
class ProbeRun:
    """What one launch of a probed variant logged.

    Attributes:
        logs: per chosen program, its log entries.
        addresses: per array argument (as `Launch.buffers` names it), the address of its element 0
            in the memory the variant ran on, and its element size: pointers are logged as
            addresses and turned into element offsets with these. Empty: read from the log
            (`addresses_from_log`).
        tf32: the compiled variant has fp32 dots that the GPU runs in tf32.
        outputs: per array argument, its span after the variant ran (None when not read back).
        duration_s: wall time, compile included.
    """

    logs: dict[Pid, ProgramLog]
    addresses: dict[str, tuple[int, int]]
    tf32: bool = False
    outputs: dict[str, np.ndarray] | None = field(default=None, repr=False)
    duration_s: float = 0.0


def run_probed(
    run: RunFunction,
    probed: ProbedKernel,
    grid: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    device: int = 0,
) -> ProbeRun:
    """Launch `probed` on `device` with the launch's arguments and a fresh probe buffer.

    Host arrays are staged into fresh device buffers and not written back, so they keep their values;
    CuPy and torch device arrays are written in place, as a launch would write them.

    Args:
        run: Triton's own `JITFunction.run`.

    Raises:
        GpuUnavailableError: no usable GPU.
        CudaContextLost: a sticky CUDA error, from this launch or an earlier one.
        GpuLaunchError: the variant did not compile or its launch failed.
        LaunchInterrupted: Ctrl-C.
    """
    fn = triton_compat.innermost_jit(probed.original).fn
    arguments = describe(fn, args, kwargs)
    sizes = resolve_grid(fn.__name__, grid, arguments.meta())
    started = time.perf_counter()
    with interrupted_as_launch(fn.__name__), gpu_device.device_scope(device, fn.__name__) as cupy:
        staged = stage(arguments, device)
        buffer = cupy.zeros(probed.layout.total_bytes, dtype=cupy.uint8)
        probe = DevicePointer(int(buffer.data.ptr), np.dtype(np.uint8), buffer)
        try:
            compiled = run(
                probed.kernel, *staged.args, grid=sizes, warmup=False, **{**staged.kwargs, PROBE: probe}
            )
            gpu_device.wait(cupy)
        except gpu_device.GpuUnavailableError:
            raise
        except Exception as exc:
            raise GpuLaunchError(
                f"{fn.__name__}: the probed variant failed on {gpu_device.describe(device)}: {type(exc).__name__}: {exc}",
                kernel=fn.__name__,
            ) from exc
        data = buffer.get()
        outputs = {leaf.name: _span(leaf, staged, arguments) for leaf in arguments.distinct_leaves()}
    ttir = str(compiled.asm.get("ttir", "")) if hasattr(compiled, "asm") else ""
    return ProbeRun(
        logs=read_log(probed.layout, data),
        addresses=device_addresses(arguments, staged),
        tf32=uses_tf32_dots(ttir),
        outputs=outputs,
        duration_s=time.perf_counter() - started,
    )


def device_addresses(arguments: Arguments, staged: Staged) -> dict[str, tuple[int, int]]:
    """Per array argument: the address its element 0 had in the launch, and its element size."""
    bases = {id(region): int(buffer.data.ptr) for region, buffer in staged.buffers}
    out = {}
    for leaf in arguments.leaves:
        region = arguments.region_of(leaf)
        address = bases[id(region)] + leaf.ptr - region.lo if id(region) in bases else leaf.ptr
        out[leaf.name] = (address, leaf.dtype.itemsize)
    return out


def host_addresses(arguments: Arguments) -> dict[str, tuple[int, int]]:
    """`device_addresses` for a variant that ran on the caller's own arrays (interpreted, in tests)."""
    return {leaf.name: (leaf.ptr, leaf.dtype.itemsize) for leaf in arguments.leaves}


def _span(leaf: Any, staged: Staged, arguments: Arguments) -> np.ndarray:
    region = arguments.region_of(leaf)
    for staged_region, buffer in staged.buffers:
        if staged_region is region:
            return region.span(leaf, buffer.get())
    return region.span(leaf, region.read())


# prober(run, probed, grid, args, kwargs) -> ProbeRun; the default launches on the session's device.
Prober = Callable[[RunFunction, ProbedKernel, Any, tuple[Any, ...], dict[str, Any]], ProbeRun]


def locate_divergence(
    launch: Launch,
    kernel: Any,
    grid: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    pids: tuple[Pid, ...],
    *,
    run: RunFunction,
    prober: Prober,
    device: str = "",
    rtol: float | None = None,
    atol: float | None = None,
    sources_dir: str | Path | None = None,
    plain: Mapping[str, np.ndarray] | None = None,
) -> Divergence:
    """Instrument `kernel` for `pids`, run the variant with `prober`, and compare with `launch`'s records.

    A failure to instrument or run the variant is reported in the result's `error`, not raised: the
    launch itself has already run on both sides. `sources_dir`: where the variant's source files
    go (see `kernel_nb.gpu.generated`); `plain`: per buffer, its span after the plain compiled run,
    which the variant's outputs are checked against.
    """
    try:
        probed = instrument(kernel, launch, pids, directory=sources_dir)
        result = prober(run, probed, grid, args, kwargs)
    except Exception as exc:  # the statement comparison is extra: the cell goes on without it
        return Divergence(launch.index, launch.kernel, device, error=f"{type(exc).__name__}: {exc}")
    fp_fusion = kwargs.get("enable_fp_fusion", True) is not False
    return analyse(
        launch, probed, result, device=device, rtol=rtol, atol=atol, plain=plain, fp_fusion=fp_fusion
    )


def analyse(
    launch: Launch,
    probed: ProbedKernel,
    result: ProbeRun,
    *,
    device: str = "",
    rtol: float | None = None,
    atol: float | None = None,
    plain: Mapping[str, np.ndarray] | None = None,
    fp_fusion: bool = True,
) -> Divergence:
    """Compare what a probed run logged with the interpreter's records of the same programs, and
    what it wrote with what the plain compiled run wrote (`plain`, per buffer; `fp_fusion`: both
    were compiled with it, Triton's default)."""
    facts = probed.facts
    probe = Probe(
        storage={stmt: point.storage for stmt, point in probed.layout.points.items()},
        sources={stmt: f.sources for stmt, f in facts.items()},
        operands={stmt: f.operands for stmt, f in facts.items()},
        skipped=probed.skipped,
        addresses=result.addresses or addresses_from_log(launch, result.logs),
        tf32=result.tf32,
        expressions={stmt: f.expression for stmt, f in facts.items()},
    )
    notes = []
    programs = []
    for pid in probed.layout.pids:
        if not launch.programs[pid].kept:
            notes.append(
                f"pid {pid}: its values were not kept and were replayed from the launch's inputs, "
                "so it does not see what other programs wrote"
            )
        log = result.logs[pid]
        records = launch.program(pid).records
        programs.append(
            compare_program(
                launch, pid, records, log.entries, probe, rtol=rtol, atol=atol, overflow=log.overflow
            )
        )
    drift = probe_drift(plain, result.outputs) if plain is not None and result.outputs is not None else []
    if drift:
        notes.append(
            "the probed variant wrote other values than the plain compiled run ("
            + "; ".join(d.text() for d in drift)
            + "): logging the statements changed how the compiler scheduled them, so the GPU values "
            "above are the probed run's, which can differ from the plain run's in these last bits"
            + (
                "; `--exact-probe` (GpuOptions(exact_probe=True)) compiles both without fp fusion, "
                "which keeps the compiler from contracting them differently"
                if fp_fusion
                else ", even without fp fusion"
            )
        )
    return Divergence(
        launch.index, launch.kernel, device, programs, tf32=result.tf32, notes=notes, probe_drift=tuple(drift)
    )


def addresses_from_log(launch: Launch, logs: dict[Pid, ProgramLog]) -> dict[str, tuple[int, int]]:
    """Argument addresses read from the log itself: a kernel's pointer argument is logged on entry.

    For a variant that ran where the caller cannot see the addresses (interpreted on copies of the
    arrays); arguments inside tuples and descriptors are not logged on entry and are left out.
    """
    itemsizes = {a.name: numpy_dtype(a.dtype).itemsize for a in launch.args if a.kind == "buffer"}
    out: dict[str, tuple[int, int]] = {}
    for pid, log in logs.items():
        logged: dict[int, bytes] = {}
        for stmt, raw in log.entries:
            logged.setdefault(stmt, raw)
        for record in launch.programs[pid].records:
            statement = launch.statements[record.stmt]
            if statement.kind != "arg" or record.call_path or statement.name not in itemsizes:
                continue
            if record.pointer_arg == statement.name and record.stmt in logged:
                address = int(np.frombuffer(logged[record.stmt], np.int64, 1)[0])
                out.setdefault(statement.name, (address, itemsizes[statement.name]))
    return out
