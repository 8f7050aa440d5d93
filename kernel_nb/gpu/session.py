"""GPU sessions: intercept launches like `Session` and run them compiled, compared, or with their IR.

* "gpu": every launch is compiled by Triton and run on the GPU, host arrays staged through CuPy.
* "compare": every launch runs interpreted and compiled from identical inputs; the buffers are
  compared (`kernel_nb.compare`) and the cell goes on with one side's results.
  With `GpuOptions.divergence`, a probed variant of the kernel also logs some programs' statement
  values on the GPU, and `Launch.divergence` says where they first leave the interpreter's.
* "interpret": every launch is interpreted, and the kernel is also compiled for a CUDA target (no GPU
  needed) so its IR can be read next to the trace.

Compiling happens only between interpreted launches: the engine restores `triton.language` after
each, and a compile in the middle of one would see the interpreter's patched namespaces.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kernel_nb.engine import triton_compat
from kernel_nb.errors import KernelError, LaunchArgumentError
from kernel_nb.gpu import device as gpu_device
from kernel_nb.gpu.arguments import Arguments, describe
from kernel_nb.gpu.compile import DEFAULT_TARGET, compile_for_target, parse_target
from kernel_nb.gpu.grid import check_pids, resolve_grid
from kernel_nb.gpu.launch_diff import compare_launch
from kernel_nb.gpu.probe import Prober, locate_divergence, run_probed
from kernel_nb.gpu.runner import GpuLaunch, GpuTrace, RunFunction, launch_on_gpu
from kernel_nb.options import Options
from kernel_nb.session import Session
from kernel_nb.trace import Comparison, Launch, Pid, as_pid

Mode = Literal["gpu", "compare", "interpret"]
Keep = Literal["gpu", "cpu"]
ToleranceRule = Literal["dtype", "shadow"]

# launcher(run, kernel, grid, args, kwargs, index) -> GpuLaunch; the default runs on the device.
Launcher = Callable[[RunFunction, Any, Any, tuple[Any, ...], dict[str, Any], int], GpuLaunch]
# Programs whose statements a compared launch checks on the GPU when none are chosen with `pids`.
MAX_DIVERGENCE_PIDS = 4


@dataclass(frozen=True, kw_only=True)
class GpuOptions:
    """How a GPU session runs launches.

    Attributes:
        mode: "gpu", "compare" or "interpret" (see the module docstring).
        device: the CUDA device (``--device``).
        keep: in "compare" mode, whose results the caller's arrays hold afterwards (``--keep``).
        rtol, atol: override the tolerance policy of `kernel_nb.compare` for every buffer.
        tolerance: in "compare" mode, "dtype" (the default) judges each buffer by the policy of its
            dtype; "shadow" runs the interpreter with an fp64 shadow (`Options.shadow`) and judges
            each element the shadow stored by what the kernel's own arithmetic can promise there:
            the GPU may be `SHADOW_FACTOR` times as far from the interpreter as the interpreter is
            from the fp64 reference (and a few ulps in any case).
        target: in "interpret" mode, the target the IR is compiled for, e.g. "cuda:80"; None: the
            GPU's own when there is one, else cuda:90.
        sass: also disassemble the cubin (needs cuobjdump, which Triton ships).
        divergence: in "compare" mode, also run a probed variant of the kernel that logs the
            statement values of some programs on the GPU, and find the first statement where they
            leave the interpreter's (`Launch.divergence`). None (the default): when `Options.pids`
            names programs (those), or when a buffer mismatches (the program that wrote its first
            mismatching element); True: always (program (0, 0, 0) when nothing else says which);
            False: never.
        sources_dir: where the probed variants' source files are written and kept; None (the
            default): a directory of this process, ``kernel-nb-XXXXXXXX`` in the temp directory,
            removed when the process exits.
        exact_probe: in "compare" mode, compile the plain launch and the probed variant without
            fp fusion (``enable_fp_fusion=False``, ``--exact-probe``). Logging a value gives it a
            second use, which changes which a*b+c the compiler contracts into an fma; without
            contraction the variant computes what the plain kernel computes, so the statement
            values explain the compared run bit for bit. The comparison then judges the kernel
            compiled without fusion, and says so. The variant's outputs are checked against the
            plain run's either way.
    """

    mode: Mode = "gpu"
    device: int = 0
    keep: Keep = "gpu"
    rtol: float | None = None
    atol: float | None = None
    tolerance: ToleranceRule = "dtype"
    target: str | None = None
    sass: bool = True
    divergence: bool | None = None
    sources_dir: str | Path | None = None
    exact_probe: bool = False

    def __post_init__(self) -> None:
        if self.mode not in ("gpu", "compare", "interpret"):
            raise ValueError(f"mode must be 'gpu', 'compare' or 'interpret', got {self.mode!r}")
        if self.keep not in ("gpu", "cpu"):
            raise ValueError(f"keep must be 'gpu' or 'cpu', got {self.keep!r}")
        if not isinstance(self.device, int) or self.device < 0:
            raise ValueError(f"device must be a CUDA device number >= 0, got {self.device!r}")
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and 0 <= value < float("inf")):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.tolerance not in ("dtype", "shadow"):
            raise ValueError(f"tolerance must be 'dtype' or 'shadow', got {self.tolerance!r}")
        if self.target is not None:
            parse_target(self.target)


class GpuSession(Session):
    """Runs every Triton launch made inside it according to `GpuOptions.mode`.

    Like `kernel_nb.Session`, whose interception it shares, it intercepts `JITFunction.run` and
    `Autotuner.run` (an autotuned kernel runs the config `Options.autotune_config` picks, on both
    sides, without benchmarking) and restores Triton exactly on exit. `Options.launch` limits the
    mode to one launch; the others run on the GPU ("gpu", "compare") or as Triton would ("interpret").

    Attributes:
        trace: the interpreted launches ("compare", "interpret"), with `comparison` and `artifacts`.
        gpu: the compiled launches ("gpu", "compare").
    """

    def __init__(
        self,
        options: Options | None = None,
        gpu: GpuOptions | None = None,
        *,
        launcher: Launcher | None = None,
        prober: Prober | None = None,
    ) -> None:
        options = options or Options()
        self.gpu_options = gpu or GpuOptions()
        if self.gpu_options.tolerance == "shadow" and options.shadow is None:
            options = dataclasses.replace(options, shadow="fp64")  # the tolerances come from it
        super().__init__(options)
        self.gpu = GpuTrace()
        self._launcher = launcher or self._device_launcher
        # a session with its own launcher has no device to probe on unless it brings a prober too
        self._prober = prober or (self._device_prober if launcher is None else None)

    def __enter__(self) -> GpuSession:
        # fail before the cell runs, not in its middle; but what needs torch imported or CUDA started
        # (Triton's launcher) waits for a launch, which a cell may never make
        if self.gpu_options.mode == "interpret":
            gpu_device.require(need="compile", target=self._target().split(":")[0])
        elif self._launcher == self._device_launcher:
            gpu_device.require(self.gpu_options.device, need="device")
        super().__enter__()
        return self

    def _on_launch(
        self, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], selected: bool
    ) -> Any:
        mode = self.gpu_options.mode
        if triton_compat.interpreted_only(kernel):
            name = triton_compat.innermost_jit(kernel).fn.__name__
            raise LaunchArgumentError(
                f"{name}: TRITON_INTERPRET=1 was set when @triton.jit made this kernel, so Triton holds "
                "only its interpreter's version of it, which no GPU runs: unset TRITON_INTERPRET before "
                "importing triton to compile it (kernel_nb interprets plain kernels itself)",
                kernel=name,
            )
        if mode == "interpret":
            if not selected:
                return self._run_as_triton(kernel, grid, args, kwargs)
            launch = self._interpret(kernel, grid, args, kwargs)
            launch.artifacts = compile_for_target(
                kernel, args, kwargs, self._target(), sass=self.gpu_options.sass
            )
            return None
        arguments = describe(triton_compat.innermost_jit(kernel).fn, args, kwargs)
        # the GPU's grid rules and a selection outside the grid fail here, before the interpreter runs
        sizes = resolve_grid(arguments.kernel, grid, arguments.meta())
        if selected:
            check_pids(arguments.kernel, self.options.pids, sizes)
        self._check_context(arguments)
        if mode == "compare" and selected and self.gpu_options.exact_probe:
            kwargs = {**kwargs, "enable_fp_fusion": False}
        if mode == "gpu" or not selected:
            self.gpu.launches.append(
                self._launcher(self._triton_run, kernel, grid, args, kwargs, len(self.gpu))
            )
            return None
        self._compare(arguments, kernel, grid, args, kwargs)
        return None

    def _compare(
        self, arguments: Arguments, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        """Interpret, restore the inputs, run compiled, compare; leave the kept side's results.

        When the interpreter fails, the compiled side still runs from the same inputs, so that the
        failed launch shows what the GPU made of them; then the interpreter's error is raised with
        the arrays as they were.
        """
        before = arguments.snapshot()
        clock = time.perf_counter()
        try:
            launch = self._interpret(kernel, grid, args, kwargs)
        except KernelError as error:
            if error.launch is not None:
                self._compare_failed(error.launch, arguments, kernel, grid, args, kwargs, before, error)
            raise
        seconds = {"interpret": time.perf_counter() - clock}
        cpu = arguments.snapshot()
        arguments.restore(before)
        clock = time.perf_counter()
        try:
            gpu_launch = self._launcher(self._triton_run, kernel, grid, args, kwargs, len(self.gpu))
        except BaseException as failure:
            # the failed side leaves nothing behind, the other is dropped too
            restore_after(arguments, before, failure)
            raise
        self.gpu.launches.append(gpu_launch)
        gpu = arguments.snapshot()
        seconds["gpu"] = time.perf_counter() - clock
        clock = time.perf_counter()
        launch.artifacts = gpu_launch.artifacts
        launch.comparison = compare_launch(launch, arguments, before, cpu, gpu, gpu_launch, self.gpu_options)
        seconds["diff"] = time.perf_counter() - clock
        launch.comparison.seconds = seconds
        launch.comparison.fp_fusion = kwargs.get("enable_fp_fusion", True) is not False
        pids = divergence_pids(launch, self.options, self.gpu_options)
        if pids and self._prober is not None:
            clock = time.perf_counter()
            arguments.restore(before)
            try:
                launch.divergence = locate_divergence(
                    launch,
                    kernel,
                    grid,
                    args,
                    kwargs,
                    pids,
                    run=self._triton_run,
                    prober=self._prober,
                    device=gpu_launch.device,
                    rtol=self.gpu_options.rtol,
                    atol=self.gpu_options.atol,
                    sources_dir=self.gpu_options.sources_dir,
                    plain={buffer.arg: buffer.gpu for buffer in launch.comparison.buffers},
                )
            except BaseException as failure:
                restore_after(arguments, gpu, failure)
                raise
            arguments.restore(gpu)
            seconds["divergence"] = time.perf_counter() - clock
        if self.gpu_options.keep == "cpu":
            arguments.restore(cpu)

    def _compare_failed(
        self,
        launch: Launch,
        arguments: Arguments,
        kernel: Any,
        grid: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        before: list[Any],
        error: KernelError,
    ) -> None:
        """The GPU side of a launch the interpreter failed on: its outputs against the inputs, kept
        on the launch's comparison; the caller's arrays are put back either way."""
        try:
            gpu_launch = self._launcher(self._triton_run, kernel, grid, args, kwargs, len(self.gpu))
        except Exception as failure:  # the GPU fails too: the interpreter's error says more
            restore_after(arguments, before, failure)
            launch.comparison = Comparison(
                launch.index, launch.kernel, "", [], cpu_error=error.message, gpu_error=str(failure)
            )
            return
        self.gpu.launches.append(gpu_launch)
        gpu = arguments.snapshot()
        arguments.restore(before)
        launch.artifacts = gpu_launch.artifacts
        comparison = compare_launch(launch, arguments, before, before, gpu, gpu_launch, self.gpu_options)
        comparison.cpu_error = error.message
        comparison.fp_fusion = kwargs.get("enable_fp_fusion", True) is not False
        launch.comparison = comparison

    def _check_context(self, arguments: Arguments) -> None:
        """Refuse the launch on a lost CUDA context before anything reads device arrays (the
        snapshot, the interpreter), whose reads would meet CUDA's raw error instead.

        Without CuPy loaded and without device arrays nothing here touches the device: the
        launcher's own device scope asks.
        """
        on_device = any(region.space != "host" for region in arguments.regions)
        if self._launcher == self._device_launcher and ("cupy" in sys.modules or on_device):
            gpu_device.check_context(self.gpu_options.device, arguments.kernel)

    def _device_launcher(
        self,
        run: RunFunction,
        kernel: Any,
        grid: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        index: int,
    ) -> GpuLaunch:
        return launch_on_gpu(
            run,
            kernel,
            grid,
            args,
            kwargs,
            index=index,
            device=self.gpu_options.device,
            sass=self.gpu_options.sass,
        )

    def _device_prober(
        self, run: RunFunction, probed: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        return run_probed(run, probed, grid, args, kwargs, device=self.gpu_options.device)

    def _target(self) -> str:
        if self.gpu_options.target is not None:
            return self.gpu_options.target
        own = gpu_device.capability(self.gpu_options.device)
        return DEFAULT_TARGET if own is None else f"cuda:{own}"


def restore_after(arguments: Arguments, saved: list[Any], failure: BaseException) -> None:
    """Put the caller's arrays back after a failed GPU side, without hiding why it failed.

    A lost CUDA context takes the device memory with it: device arrays cannot be written back, and
    trying would replace the error that says so with CUDA's raw one.
    """
    lost = isinstance(failure, gpu_device.CudaContextLost)
    for region, data in zip(arguments.regions, saved):
        if not (lost and region.space != "host"):
            region.write(data)


def divergence_pids(launch: Launch, options: Options, gpu: GpuOptions) -> tuple[Pid, ...]:
    """The programs whose statements a compared launch checks on the GPU (see `GpuOptions.divergence`)."""
    if gpu.divergence is False or launch.status != "ok" or not launch.statements:
        return ()
    if options.pids != "all":
        return tuple(p for p in options.pids if p in launch.programs)[:MAX_DIVERGENCE_PIDS]
    comparison = launch.comparison
    if comparison is not None and not comparison.ok:
        writers = [pid for b in comparison.mismatching for pid, _ in b.writers if pid is not None]
        if writers:
            return (writers[0],)
    if gpu.divergence:
        return ((0, 0, 0),) if (0, 0, 0) in launch.programs else ()
    return ()


def run(options: Options | None = None, **gpu: Any) -> GpuSession:
    """A session that compiles and runs every Triton launch made inside it on the GPU.

    Args:
        options: `Options` (only `launch` and `autotune_config` matter here).
        **gpu: fields of `GpuOptions` (`device=1`).

    Returns:
        The session, a context manager; `session.gpu` holds the launches.

    Raises:
        GpuUnavailableError: on entering, when there is no usable GPU (the message says what is missing).
    """
    return GpuSession(options, GpuOptions(**{**gpu, "mode": "gpu"}))


def compare(options: Options | None = None, **gpu: Any) -> GpuSession:
    """A session that runs every launch interpreted and on the GPU from identical inputs, and compares.

    Args:
        options: the interpreter's `Options`.
        **gpu: fields of `GpuOptions`: `device`, `keep` ("gpu" or "cpu"), `tolerance` ("dtype" or
            "shadow"), `rtol`, `atol`.

    Returns:
        The session; `session.trace[i].comparison` holds each launch's `kernel_nb.trace.Comparison`.

    Raises:
        GpuUnavailableError: on entering, when there is no usable GPU.
    """
    return GpuSession(options, GpuOptions(**{**gpu, "mode": "compare"}))


def divergence(options: Options | None = None, *, pids: Any = None, **gpu: Any) -> GpuSession:
    """A compare session that also finds, statement by statement, where chosen programs first diverge.

    Args:
        options: the interpreter's `Options`.
        pids: the programs to check, e.g. ``[(1, 0, 0)]`` (default: `options.pids`, else the program
            that wrote the first mismatching element, else program (0, 0, 0)).
        **gpu: fields of `GpuOptions`: `device`, `keep`, `rtol`, `atol`.

    Returns:
        The session; `session.trace[i].divergence` holds each launch's `kernel_nb.trace.Divergence`.

    Raises:
        GpuUnavailableError: on entering, when there is no usable GPU.
    """
    options = options or Options()
    if pids is not None:
        options = dataclasses.replace(options, pids=tuple(as_pid(p) for p in pids))
    return GpuSession(options, GpuOptions(**{**gpu, "mode": "compare", "divergence": True}))


def interpret_with_ir(options: Options | None = None, **gpu: Any) -> GpuSession:
    """`kernel_nb.interpret`, plus each launch's kernel compiled for a CUDA target (no GPU needed).

    `session.trace[i].artifacts` holds the IR (TTIR, TTGIR, LLIR, PTX, SASS).
    """
    return GpuSession(options, GpuOptions(**{**gpu, "mode": "interpret"}))
