"""Matplotlib drawing of recorded values, in the same colours as the interactive viewer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kernel_nb.trace import Launch, Trace
from kernel_nb.view import protocol as p

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# The viewer draws with these colours too: `palette()` sends them in its metadata, so a PNG reads
# like the widget.
CMAP = "viridis"
# CMAP at 9 evenly spaced points, for the viewer's lookup table (it interpolates between them).
CMAP_STOPS = (
    "#440154",
    "#472d7b",
    "#3b528b",
    "#2c728e",
    "#21918c",
    "#28ae80",
    "#5ec962",
    "#addc30",
    "#fde725",
)
# Errors against the fp64 shadow, in ulps, on a log scale: dark where exact, bright where far off.
ERROR_CMAP = "inferno"
ERROR_STOPS = (
    "#000004",
    "#210c4a",
    "#57106e",
    "#8a226a",
    "#bc3754",
    "#e45a31",
    "#f98e09",
    "#f9cb35",
    "#fcffa4",
)
NAN_COLOR = "#ff00ff"
POSINF_COLOR = "#ff3b30"
NEGINF_COLOR = "#1e90ff"
MASKED_COLOR = "#9e9e9e"


def palette() -> p.PaletteMeta:
    """The colours of values, as the viewer's metadata carries them."""
    return {
        "colormap": list(CMAP_STOPS),
        "nan": NAN_COLOR,
        "posinf": POSINF_COLOR,
        "neginf": NEGINF_COLOR,
        "masked": MASKED_COLOR,
        "errormap": list(ERROR_STOPS),
    }


def plot(
    launch_or_trace: Launch | Trace,
    pid: int | tuple[int, ...],
    name: str,
    iteration: tuple[int, ...] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Draw one recorded value as a heatmap (NaN, +Inf and -Inf in their own colours).

    Args:
        launch_or_trace: a launch, or a trace (its first launch that recorded `name`).
        pid: the program id (an int is the x axis).
        name: the variable.
        iteration: loop iteration of the record; the last one recorded when None.
        ax: where to draw; a new figure when None.

    Returns:
        The Axes drawn on.

    Raises:
        KeyError: no launch or program recorded `name` (at that iteration).
    """
    launch = _launch_with(launch_or_trace, name)
    value = launch.value(pid, name, iteration)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 3.2))
    records = [r for r in launch.records(pid, name=name) if iteration is None or r.iteration == iteration]
    record = records[-1]
    stmt = launch.statements[record.stmt]
    title = f"{launch.kernel} pid={_pid_text(pid)} {name} (line {stmt.line})"
    if record.iteration:
        title += f" iteration {record.iteration}"
    draw_value(ax, value, f"{title}\n{record.dtype}{list(record.shape)}")
    return ax


def drawn(value: np.ndarray) -> tuple[np.ndarray, str]:
    """The 2-D array a heatmap of `value` shows (rank ≤ 2 as a matrix, a vector as a one-row
    strip, higher ranks as their first 2-D slice), and what its title says of the slice."""
    data = np.asarray(value)
    note = ""
    if data.ndim > 2:
        note = f"  [slice {(0,) * (data.ndim - 2)}]"
        data = data[(0,) * (data.ndim - 2)]
    return (data.reshape(1, -1) if data.ndim < 2 else data), note


def draw_value(ax: Axes, value: np.ndarray, title: str | None, cax: Axes | None = None) -> None:
    """Heatmap of a value on `ax` (see `drawn`), titled `title` (None: untitled), its colour bar
    on `cax` (None: taken from `ax`'s side, the cells square; given, `ax` is sized for them)."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize, to_rgba

    data, note = drawn(value)
    floats = data.astype(np.float64)
    finite = np.isfinite(floats)
    lo, hi = (float(floats[finite].min()), float(floats[finite].max())) if finite.any() else (0.0, 1.0)
    norm = Normalize(lo, hi if hi > lo else lo + 1)
    cmap = _colormap()
    rgba = cmap(norm(np.where(finite, floats, lo)))
    rgba[np.isnan(floats)] = to_rgba(NAN_COLOR)
    rgba[floats == np.inf] = to_rgba(POSINF_COLOR)
    rgba[floats == -np.inf] = to_rgba(NEGINF_COLOR)
    strip = data.shape[0] == 1
    # given a colour bar's axes, `ax` was sized for the heatmap (see static.py): it fills them
    ax.imshow(rgba, interpolation="nearest", aspect="auto" if strip or cax is not None else "equal")
    if strip:
        ax.set_yticks([])
    if title is not None:
        ax.set_title(title + note, fontsize=9)
    _colorbar(ax, ScalarMappable(norm=norm, cmap=cmap), cax)


def draw_error(ax: Axes, ulps: np.ndarray, title: str, cax: Axes | None = None) -> None:
    """Heatmap of errors in ulps on `ax`, as the viewer's error map draws them: a log scale, dark
    where exact, bright where far off; NaN (an error with no size) in its own colour. Its colour
    bar on `cax` (None: taken from `ax`'s side)."""
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import FuncNorm, to_rgba

    data, note = drawn(np.asarray(ulps, dtype=np.float64))
    title += note
    finite = np.isfinite(data)
    top = float(data[finite].max()) if finite.any() else 0.0
    norm = FuncNorm((np.log1p, np.expm1), vmin=0.0, vmax=max(top, 1.0))
    cmap = colormaps[ERROR_CMAP]
    rgba = cmap(norm(np.where(finite, data, top)))
    rgba[np.isnan(data)] = to_rgba(NAN_COLOR)
    strip = data.shape[0] == 1
    # given a colour bar's axes, `ax` was sized for the heatmap (see static.py): it fills them
    ax.imshow(rgba, interpolation="nearest", aspect="auto" if strip or cax is not None else "equal")
    if strip:
        ax.set_yticks([])
    ax.set_title(f"{title}\nlargest {top:.3g} ulps", fontsize=9)
    bar = _colorbar(ax, ScalarMappable(norm=norm, cmap=cmap), cax)
    if bar is not None:
        # the powers of ten up to the largest error: a log scale reads by its decades
        first = 1 if top >= 100 else 0  # (0 and 1 would overlap on a scale that long)
        decades = [0.0, *(10.0**k for k in range(first, int(np.log10(max(top, 1.0))) + 1))]
        bar.set_ticks(decades, labels=["0", *(f"{d:g}" for d in decades[1:])])


def _colorbar(ax: Axes, mappable: Any, cax: Axes | None) -> Any:
    figure = ax.get_figure()
    if figure is None:
        return None
    if cax is not None:
        return figure.colorbar(mappable, cax=cax)
    return figure.colorbar(mappable, ax=ax, fraction=0.046, pad=0.04)


def _colormap():  # type: ignore[no-untyped-def]
    from matplotlib import colormaps

    return colormaps[CMAP]


def _launch_with(launch_or_trace: Launch | Trace, name: str) -> Launch:
    if isinstance(launch_or_trace, Launch):
        return launch_or_trace
    for launch in launch_or_trace:
        if any(s.name == name for s in launch.statements):
            return launch
    raise KeyError(f"no launch of the trace recorded {name!r}")


def _pid_text(pid: int | tuple[int, ...]) -> str:
    return f"({pid}, 0, 0)" if isinstance(pid, int) else str(tuple(pid))
