"""The GPU modes of ``%%tkernel``: ``gpu``, ``compare`` and ``interpret --ir``.

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

from IPython.display import Image, display

from kernel_nb.gpu.runner import GpuTrace
from kernel_nb.gpu.session import GpuOptions, GpuSession
from kernel_nb.magic.cell_viewers import VIEWERS
from kernel_nb.options import Options
from kernel_nb.trace import Trace


def session_for(options: Options, gpu: GpuOptions) -> GpuSession:
    """The session a ``gpu``, ``compare`` or ``interpret --ir`` cell runs in."""
    return GpuSession(options, gpu)


def result_of(session: GpuSession, mode: str) -> Trace | GpuTrace:
    """What the cell binds to ``_tk``: the GPU launches in ``gpu`` mode, else the interpreted trace."""
    return session.gpu if mode == "gpu" else session.trace


def print_reports(session: GpuSession) -> None:
    """Per compared launch: its verdict, and where its chosen programs first diverge."""
    for launch in session.trace:
        if launch.comparison is not None:
            print(launch.comparison.verdict())
        if launch.divergence is not None:
            print(launch.divergence.report())


def show(session: GpuSession, mode: str) -> None:
    """Display a finished cell: the GPU launches, or per launch a verdict, the viewer and mismatch figures."""
    if mode == "gpu":
        display(session.gpu)
        return
    from kernel_nb.view import TraceViewer
    from kernel_nb.view.compare import comparison_png

    print_reports(session)
    VIEWERS.show(TraceViewer(session.trace))
    for launch in session.trace:
        if launch.comparison is not None and not launch.comparison.ok:
            display(Image(data=comparison_png(launch), format="png"))
