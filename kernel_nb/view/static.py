"""The viewer's static fallback: a PNG of the current view for nbconvert, GitHub and plain terminals."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from kernel_nb.trace import Trace
from kernel_nb.view import precision
from kernel_nb.view.plot import draw_error, draw_value, drawn

# the layout, in pixels at 80 dpi (scaled with dpi): room for the title's lines above the heatmaps,
# for tick labels left of and below each, and for its colour bar and that bar's labels right of it
_LINE, _TOP, _LEFT, _BOTTOM, _GAP, _BAR, _BAR_LABELS = 13, 10, 34, 22, 10, 12, 46
_STRIP = 40  # a one-row value's height
_HEIGHT = 3.4  # inches


def render_png(
    trace: Trace, launch: int, pid: tuple[int, ...], stmt: int, iteration: tuple[int, ...], dpi: int = 80
) -> bytes:
    """The selected record of the selected program as a heatmap, or a line saying why there is none."""
    out = io.BytesIO()
    selected_figure(trace, launch, pid, stmt, iteration, dpi).savefig(out, format="png")
    return out.getvalue()


def selected_figure(
    trace: Trace, launch: int, pid: tuple[int, ...], stmt: int, iteration: tuple[int, ...], dpi: int = 80
) -> Any:
    """The figure `render_png` draws.

    The title runs across the top from the left edge, above the heatmap (beside it, with an fp64
    shadow, the value's error): a title over the heatmap alone was cut off at the image's edges.
    Each heatmap keeps square cells, at the left of its half. Placed by fixed margins: a layout
    engine draws the figure once more to measure it, and took half of the PNG's time."""
    # Figure + Agg directly: pyplot would register the figure with the notebook's inline backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    value, title, error = _selected(trace, launch, pid, stmt, iteration)
    width = 7 if error is None else 12
    drawing = value is not None and np.ndim(value) > 0
    lines = title.count("\n") + 1
    height = _HEIGHT
    if drawing and drawn(value)[0].shape[0] == 1:  # a strip: as tall as its title, strip and ticks
        height = (_TOP + lines * _LINE + _STRIP + _BOTTOM + _TOP) / 80
    figure = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(figure)
    scale = dpi / 80
    if not drawing:
        draw_selected(figure.add_axes((0, 0, 1, 1)), value, title)
    else:
        figure.text(4 / (width * 80), 1 - 4 / (height * 80), title + drawn(value)[1],
                    ha="left", va="top", fontsize=9)  # fmt: skip
        room = (width * dpi / (1 if error is None else 2), height * dpi - (_TOP + lines * _LINE) * scale)
        panels = [(value, None)] if error is None else [(value, None), (error, "error")]
        for i, (shown, kind) in enumerate(panels):
            ax, cax = _placed(figure, drawn(shown)[0].shape, i * room[0], room, scale)
            if kind is None:
                draw_value(ax, shown, None, cax)
            else:
                draw_error(ax, shown, "error against the fp64 shadow, in ulps", cax)
    return figure


def _placed(
    figure: Any, shape: tuple[int, ...], x: float, room: tuple[float, float], scale: float
) -> tuple[Any, Any]:
    """Axes for a heatmap of `shape` (rows, columns) and for its colour bar, in the `room` (width,
    height in pixels) whose left edge is at `x`: square cells as large as fit (a one-row strip as
    wide as fits), at the room's top left. The heatmap fills its axes (see `draw_value`)."""
    pixels_w, pixels_h = figure.bbox.width, figure.bbox.height
    width = room[0] - (_LEFT + _GAP + _BAR + _BAR_LABELS) * scale
    height = room[1] - _BOTTOM * scale
    rows, cols = shape
    if rows > 1:  # square cells, unless the heatmap would be thinner than a strip either way
        cell = min(width / cols, height / rows)
        width, height = (
            max(cell * cols, min(width, _STRIP * scale)),
            max(cell * rows, min(height, _STRIP * scale)),
        )
    else:
        height = min(height, _STRIP * scale)
    left, bottom = x + _LEFT * scale, room[1] - height
    ax = figure.add_axes((left / pixels_w, bottom / pixels_h, width / pixels_w, height / pixels_h))
    bar_left = left + width + _GAP * scale
    cax = figure.add_axes(
        (bar_left / pixels_w, bottom / pixels_h, _BAR * scale / pixels_w, height / pixels_h)
    )
    return ax, cax


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
