"""The viewer's static fallback: a PNG of the current view for nbconvert, GitHub and plain terminals."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from kernel_nb.trace import Trace
from kernel_nb.view import precision
from kernel_nb.view.plot import draw_error, draw_value


def render_png(
    trace: Trace, launch: int, pid: tuple[int, ...], stmt: int, iteration: tuple[int, ...], dpi: int = 80
) -> bytes:
    """The selected record of the selected program as a heatmap, or a line saying why there is none."""
    # Figure + Agg directly: pyplot would register the figure with the notebook's inline backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    value, title, error = _selected(trace, launch, pid, stmt, iteration)
    figure = Figure(figsize=(7 if error is None else 12, 3.4), dpi=dpi, layout="constrained")
    FigureCanvasAgg(figure)
    draw_selected(figure.add_subplot(1, 1 if error is None else 2, 1), value, title)
    if error is not None:  # with an fp64 shadow, its error beside the value, as the viewer shows it
        draw_error(figure.add_subplot(1, 2, 2), error, "error against the fp64 shadow, in ulps")
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
    """The selected value, its title, and its error against the fp64 shadow (None: none)."""
    if not 0 <= launch_index < len(trace):
        return None, "kernel_nb: empty trace", None
    launch = trace[launch_index]
    key = (*pid, 0, 0, 0)[:3]
    head = f"{launch.kernel} grid={launch.grid} pid={key}"
    if key not in launch.programs:
        return None, f"{head}: this program did not run", None
    if stmt < 0:
        return None, f"{head}: no recorded value selected", None
    try:
        program = launch.program(key)
    except Exception as error:  # a failing replay must not break the notebook's display
        return None, f"{head}: cannot replay this program ({error})", None
    at = [
        i
        for i, r in enumerate(program.records)
        if r.stmt == stmt and (not iteration or r.iteration == iteration)
    ]
    if not at or program.records[at[-1]].value is None:
        return None, f"{head}: no value kept for statement {stmt}", None
    record = program.records[at[-1]]
    companions = precision.companion_records(program.records, at[-1], launch.companions(stmt) or None)
    ulps = program.records[companions[1]].value if companions else None
    s = launch.statements[stmt]
    title = f"{head} {s.name} ({s.function}:{s.line})"
    if record.iteration:
        title += f" iteration {record.iteration}"
    findings = len(launch.findings)
    if findings:
        title += f" — {findings} finding{'s' * (findings != 1)}"
    return record.value, f"{title}\n{record.dtype}{list(record.shape)}", ulps
