"""kernel_nb: a Jupyter-native debugger for Triton kernels.

Plain Python::

    import kernel_nb
    with kernel_nb.interpret() as session:
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    launch = session.trace[0]
    launch.value((3, 0, 0), "offsets")

In a notebook: ``%load_ext kernel_nb`` then ``%%tkernel interpret`` on top of a cell.
"""

from __future__ import annotations

from typing import Any

from kernel_nb.errors import (
    KernelAssertionError,
    KernelError,
    KernelMemoryError,
    LaunchArgumentError,
    LaunchInterrupted,
)
from kernel_nb.minimize import Minimized, minimize
from kernel_nb.options import Options
from kernel_nb.poison import poison
from kernel_nb.record import RecordedLaunch, Recording, record
from kernel_nb.session import Session, interpret
from kernel_nb.trace import (
    ArgumentInfo,
    BufferMap,
    Finding,
    Launch,
    MemoryEvent,
    ProgramTrace,
    Record,
    Statement,
    Summary,
    Trace,
)

__all__ = [
    "ArgumentInfo",
    "BufferMap",
    "Finding",
    "KernelAssertionError",
    "KernelError",
    "KernelMemoryError",
    "Launch",
    "LaunchArgumentError",
    "LaunchInterrupted",
    "MemoryEvent",
    "Minimized",
    "Options",
    "ProgramTrace",
    "Record",
    "RecordedLaunch",
    "Recording",
    "Session",
    "Statement",
    "Summary",
    "Trace",
    "TraceViewer",
    "interpret",
    "load_ipython_extension",
    "minimize",
    "plot",
    "poison",
    "record",
    "unload_ipython_extension",
]

# Jupyter-facing names are imported on first use so that the engine runs without Jupyter packages.
_LAZY = {
    "TraceViewer": "kernel_nb.view",
    "plot": "kernel_nb.view",
    "load_ipython_extension": "kernel_nb.magic",
    "unload_ipython_extension": "kernel_nb.magic",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'kernel_nb' has no attribute {name!r}")
