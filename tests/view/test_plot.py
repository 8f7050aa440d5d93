"""kernel_nb.view.plot and the static PNG: matplotlib heatmaps in the viewer's colours."""

from __future__ import annotations

import importlib
import io

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from matplotlib.figure import Figure

from kernel_nb.trace import Trace
from kernel_nb.view import plot
from kernel_nb.view.plot import NAN_COLOR, NEGINF_COLOR, POSINF_COLOR
from kernel_nb.view.static import render_png


def drawn(ax: object) -> np.ndarray:
    return np.asarray(ax.images[0].get_array())  # type: ignore[attr-defined]


def rgb(hex_color: str) -> list[float]:
    return [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]


def test_plot_1d_marks_nan_and_inf(add_trace: Trace) -> None:
    ax = plot(add_trace, (1, 1), "output", ax=Figure().add_subplot())
    image = drawn(ax)
    assert image.shape[:2] == (1, 8)
    np.testing.assert_allclose(image[0, 1, :3], rgb(POSINF_COLOR))
    np.testing.assert_allclose(image[0, 5, :3], rgb(NEGINF_COLOR))
    assert ax.get_title().startswith("add_kernel pid=(1, 1) output (line 22)")
    ax = plot(add_trace[0], 3, "x", ax=Figure().add_subplot())
    np.testing.assert_allclose(drawn(ax)[0, 3, :3], rgb(NAN_COLOR))


def test_plot_2d_3d_and_iterations(add_trace: Trace) -> None:
    assert drawn(plot(add_trace, 2, "tile", ax=Figure().add_subplot())).shape[:2] == (4, 8)
    ax = plot(add_trace, 2, "cube", ax=Figure().add_subplot())
    assert drawn(ax).shape[:2] == (3, 4) and "[slice (0,)]" in ax.get_title()
    ax = plot(add_trace, 2, "acc", iteration=(1,), ax=Figure().add_subplot())
    assert "iteration (1,)" in ax.get_title()


def test_plot_replays_and_creates_its_figure(add_trace: Trace) -> None:
    ax = plot(add_trace[1], 5, "x")
    assert ax.figure is not None and add_trace[1].programs[(5, 0, 0)].kept
    import matplotlib.pyplot as plt

    plt.close("all")


def test_plot_unknown_name(add_trace: Trace) -> None:
    with pytest.raises(KeyError, match="no launch of the trace recorded 'nope'"):
        plot(add_trace, 0, "nope")


def test_static_png_says_why_when_nothing_is_drawn(add_trace: Trace) -> None:
    for pid, stmt in (((9, 9, 0), 3), ((0, 0, 0), -1)):
        png = render_png(add_trace, 0, pid, stmt, ())
        image = matplotlib.image.imread(io.BytesIO(png))
        assert image.shape[0] > 100


def test_the_palette_the_viewer_gets_is_the_colormap_plot_draws_with(add_trace):
    import matplotlib
    from matplotlib.colors import to_hex

    # kernel_nb.view re-exports the function plot(), which hides the module of the same name
    plot_module = importlib.import_module("kernel_nb.view.plot")
    from kernel_nb.view import TraceViewer

    cmap = matplotlib.colormaps[plot_module.CMAP]
    stops = len(plot_module.CMAP_STOPS)
    assert list(plot_module.CMAP_STOPS) == [to_hex(cmap(i / (stops - 1))) for i in range(stops)]
    errors = matplotlib.colormaps[plot_module.ERROR_CMAP]
    stops = len(plot_module.ERROR_STOPS)
    assert list(plot_module.ERROR_STOPS) == [to_hex(errors(i / (stops - 1))) for i in range(stops)]
    assert TraceViewer(add_trace).meta["palette"] == {
        "colormap": list(plot_module.CMAP_STOPS),
        "nan": plot_module.NAN_COLOR,
        "posinf": plot_module.POSINF_COLOR,
        "neginf": plot_module.NEGINF_COLOR,
        "masked": plot_module.MASKED_COLOR,
        "errormap": list(plot_module.ERROR_STOPS),
    }
