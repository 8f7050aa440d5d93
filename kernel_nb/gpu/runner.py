"""One launch compiled by Triton and run on the GPU, on the caller's arrays."""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from triton.errors import TritonError

from kernel_nb.engine import triton_compat
from kernel_nb.errors import LaunchInterrupted
from kernel_nb.gpu import device as gpu_device
from kernel_nb.gpu.arguments import describe, stage
from kernel_nb.gpu.compile import artifacts_of
from kernel_nb.gpu.grid import resolve_grid
from kernel_nb.trace import Artifacts

# JITFunction.run as Triton defines it: run(kernel, *args, grid=..., warmup=..., **kwargs)
RunFunction = Callable[..., Any]


class GpuLaunchError(TritonError):
    """A compiled launch failed (compile error, launch error, a fault on the device).

    The caller's host arrays are unchanged: results are copied back only after a successful launch.
    """

    def __init__(self, message: str, *, kernel: str) -> None:
        super().__init__(message)
        self.message = message
        self.kernel = kernel


@dataclass
class GpuLaunch:
    """One launch as the GPU ran it.

    Attributes:
        index: position among the session's launches.
        kernel: the kernel's name.
        grid: the grid, padded to three axes (None when the grid could not be read before the launch).
        device: the GPU, in words.
        duration_s: wall time of the launch, staging and copies included (the first launch compiles).
        artifacts: the compiled kernel's IR.
    """

    index: int
    kernel: str
    grid: tuple[int, int, int] | None
    device: str
    duration_s: float
    artifacts: Artifacts | None = field(default=None, repr=False)


@dataclass
class GpuTrace:
    """The launches of a `%%tkernel gpu` cell (or a `kernel_nb.gpu.run()` block)."""

    launches: list[GpuLaunch] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.launches)

    def __getitem__(self, index: int) -> GpuLaunch:
        return self.launches[index]

    def summary(self) -> str:
        lines = [f"{'#':>2}  {'kernel':<24} {'grid':<14} {'time':>9}  device"]
        for launch in self.launches:
            grid = "x".join(map(str, launch.grid)) if launch.grid else "?"
            lines.append(
                f"{launch.index:>2}  {launch.kernel:<24} {grid:<14} {launch.duration_s * 1000:>7.1f}ms  {launch.device}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        rows = []
        for launch in self.launches:
            grid = "×".join(map(str, launch.grid)) if launch.grid else "?"
            stages = ""
            if launch.artifacts is not None:
                stages = "".join(
                    f"<details><summary>{html.escape(name.upper())}</summary><pre style='max-height:24em;overflow:auto'>"
                    f"{html.escape(text)}</pre></details>"
                    for name, text in launch.artifacts.stages.items()
                )
            cells = (launch.index, launch.kernel, grid, f"{launch.duration_s * 1000:.1f} ms", launch.device)
            rows.append(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + f"<td>{stages}</td></tr>"
            )
        head = "".join(f"<th>{h}</th>" for h in ("#", "kernel", "grid", "time", "device", "compiled"))
        return f'<table class="kernel-nb-gpu"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def launch_on_gpu(
    run: RunFunction,
    kernel: Any,
    grid: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    index: int,
    device: int = 0,
    sass: bool = True,
) -> GpuLaunch:
    """Compile and run `kernel[grid](*args, **kwargs)` on `device`; host arrays get the results.

    Args:
        run: Triton's own `JITFunction.run` (the session replaces the class attribute).

    Raises:
        ArgumentError: an argument the device cannot take, or a result for a read-only array.
        GridError: a grid CUDA cannot launch.
        GpuUnavailableError: no usable GPU.
        CudaContextLost: a sticky CUDA error, from this launch or an earlier one.
        GpuLaunchError: Triton or the device failed; host arrays are unchanged.
        LaunchInterrupted: Ctrl-C; host arrays are unchanged.
    """
    fn = triton_compat.innermost_jit(kernel).fn
    started = time.perf_counter()
    with interrupted_as_launch(fn.__name__):
        arguments = describe(fn, args, kwargs)
        sizes = resolve_grid(fn.__name__, grid, arguments.meta())
        with gpu_device.device_scope(device, fn.__name__) as cupy:
            name = gpu_device.describe(device)
            staged = stage(arguments, device)
            try:
                compiled = run(kernel, *staged.args, grid=sizes, warmup=False, **staged.kwargs)
                gpu_device.wait(cupy)
            except gpu_device.GpuUnavailableError:
                raise
            except Exception as exc:
                raise GpuLaunchError(
                    f"{fn.__name__}: the compiled launch on {name} failed; the arrays are unchanged: "
                    f"{type(exc).__name__}: {exc}",
                    kernel=fn.__name__,
                ) from exc
            staged.commit(fn.__name__)
    duration = time.perf_counter() - started
    artifacts = (
        artifacts_of(compiled, sass=sass) if compiled is not None and hasattr(compiled, "asm") else None
    )
    return GpuLaunch(index, fn.__name__, sizes, name, duration, artifacts)


@contextmanager
def interrupted_as_launch(kernel: str) -> Iterator[None]:
    """Ctrl-C during a compiled launch, as `LaunchInterrupted`.

    The host arrays are unchanged: results reach them only in `Staged.commit`, which undoes its
    writes when interrupted. A kernel still running on the device runs on; device arrays hold
    whatever it has written.
    """
    try:
        yield
    except LaunchInterrupted:
        raise
    except KeyboardInterrupt:
        raise LaunchInterrupted(
            f"{kernel}: interrupted during the GPU launch; the host arrays are unchanged",
            kernel=kernel,
            pid=None,
        ) from None
