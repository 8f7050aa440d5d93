"""The viewer's static fallback: a PNG of the current view for nbconvert, GitHub and plain terminals."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from kernel_nb.trace import Trace
from kernel_nb.view.plot import draw_value


def render_png(
    trace: Trace, launch: int, pid: tuple[int, ...], stmt: int, iteration: tuple[int, ...], dpi: int = 80
) -> bytes:
    """The selected record of the selected program as a heatmap, or a line saying why there is none."""
    # Figure + Agg directly: pyplot would register the figure with the notebook's inline backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 3.4), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    draw_selected(ax, *_selected(trace, launch, pid, stmt, iteration))
    out = io.BytesIO()
    figure.savefig(out, format="png")
    return out.getvalue()


def draw_selected(ax: Any, value: np.ndarray | None, title: str) -> None:
    """An array as a heatmap; a scalar as its number (a 1x1 heatmap says nothing); no value as the reason."""
    if value is not None and np.ndim(value) > 0:
        draw_value(ax, value, title)
        return
    ax.set_axis_off()
    text = title if value is None else f"{title}\n= {np.asarray(value).item()!r}"
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)


def _selected(trace: Trace, launch_index: int, pid: tuple[int, ...], stmt: int, iteration: tuple[int, ...]):  # type: ignore[no-untyped-def]
    if not 0 <= launch_index < len(trace):
        return None, "kernel_nb: empty trace"
    launch = trace[launch_index]
    key = (*pid, 0, 0, 0)[:3]
    head = f"{launch.kernel} grid={launch.grid} pid={key}"
    if key not in launch.programs:
        return None, f"{head}: this program did not run"
    if stmt < 0:
        return None, f"{head}: no recorded value selected"
    try:
        program = launch.program(key)
    except Exception as error:  # a failing replay must not break the notebook's display
        return None, f"{head}: cannot replay this program ({error})"
    records = [r for r in program.records if r.stmt == stmt and (not iteration or r.iteration == iteration)]
    if not records or records[-1].value is None:
        return None, f"{head}: no value kept for statement {stmt}"
    record = records[-1]
    s = launch.statements[stmt]
    title = f"{head} {s.name} ({s.function}:{s.line})"
    if record.iteration:
        title += f" iteration {record.iteration}"
    findings = len(launch.findings)
    if findings:
        title += f" — {findings} finding{'s' * (findings != 1)}"
    return record.value, f"{title}\n{record.dtype}{list(record.shape)}"
