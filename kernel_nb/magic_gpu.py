"""The GPU half of ``%%tkernel``: ``gpu``, ``compare`` and ``interpret --ir``.

``%%tkernel compare --rtol 1e-4 --keep cpu`` on top of a cell is, in plain Python::

    import kernel_nb.gpu
    with kernel_nb.gpu.compare(options, rtol=1e-4, keep="cpu") as session:
        ...  # the cell
    _tk = session.trace
    for launch in _tk:
        print(launch.comparison.verdict())
        if launch.divergence is not None:        # with --pids, or when a buffer mismatches
            print(launch.divergence.report())    # the first statement where GPU and CPU diverge
    display(kernel_nb.TraceViewer(_tk))            # with the CPU / GPU comparison area filled
    display(kernel_nb.view.compare.comparison_png(launch))   # per launch with mismatches

``%%tkernel gpu --device 1`` is ``with kernel_nb.gpu.run(device=1) as session: ...`` and binds
``session.gpu`` (a `GpuTrace`) to ``_tk``.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import Image, display

from kernel_nb.gpu.session import GpuOptions, GpuSession
from kernel_nb.options import Options

if TYPE_CHECKING:
    from kernel_nb.magic import TKernelMagics

# Flags that belong to one mode only, and the modes they belong to.
_MODE_FLAGS = {
    "device": ("gpu", "compare"),
    "keep": ("compare",),
    "rtol": ("compare",),
    "atol": ("compare",),
    "target": ("interpret",),
}


def gpu_options(mode: str, args: argparse.Namespace) -> GpuOptions:
    """The cell's `GpuOptions` from its flags.

    Raises:
        UsageError: a flag given to a mode it does not belong to, or a bad value.
    """
    for flag, modes in _MODE_FLAGS.items():
        if getattr(args, flag, None) is not None and mode not in modes:
            where = " or ".join(f"%%tkernel {m}" for m in modes)
            raise UsageError(f"--{flag} belongs to {where}, not to %%tkernel {mode}")
    if args.target is not None and not args.ir:
        raise UsageError("--target picks the target of --ir: write %%tkernel interpret --ir --target cuda:80")
    changes = {
        k: getattr(args, k)
        for k in ("device", "keep", "rtol", "atol", "target")
        if getattr(args, k) is not None
    }
    try:
        return GpuOptions(mode=mode, **changes)  # type: ignore[arg-type]
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_cell(
    magics: TKernelMagics,
    mode: str,
    cell: str,
    options: Options,
    args: argparse.Namespace,
    *,
    quiet: bool,
) -> Any:
    """Run a ``gpu`` or ``compare`` cell; bind and display what it produced. Returns the cell's value."""
    __tracebackhide__ = True
    from kernel_nb.magic import Progress

    progress = None if quiet or mode == "gpu" else Progress()
    session = GpuSession(dataclasses.replace(options, progress=progress), gpu_options(mode, args))
    value = magics._run_in(
        session, cell, progress, lambda: session.gpu if mode == "gpu" else session.trace, args.name
    )
    if not quiet:
        show(session, mode)
    return value


def show(session: GpuSession, mode: str) -> None:
    """Display a finished cell: the GPU launches, or per launch a verdict, the viewer and mismatch figures."""
    if mode == "gpu":
        display(session.gpu)
        return
    from kernel_nb.view import TraceViewer
    from kernel_nb.view.compare import comparison_png

    for launch in session.trace:
        if launch.comparison is not None:
            print(launch.comparison.verdict())
        if launch.divergence is not None:
            print(launch.divergence.report())
    display(TraceViewer(session.trace))
    for launch in session.trace:
        if launch.comparison is not None and not launch.comparison.ok:
            display(Image(data=comparison_png(launch), format="png"))
