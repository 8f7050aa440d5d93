"""The static fallback: what a notebook without the widget's JavaScript shows."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from kernel_nb.view import static


def test_a_scalar_is_its_number_and_an_array_a_heatmap() -> None:
    ax = Figure().add_subplot()
    static.draw_selected(ax, np.array(3, np.int32), "k pid=(0, 0, 0) s")
    assert [t.get_text() for t in ax.texts] == ["k pid=(0, 0, 0) s\n= 3"] and not ax.images
    ax = Figure().add_subplot()
    static.draw_selected(ax, np.arange(4, dtype=np.float32).reshape(2, 2), "k pid=(0, 0, 0) a")
    assert len(ax.images) == 1


def test_no_value_says_why() -> None:
    ax = Figure().add_subplot()
    static.draw_selected(ax, None, "k: this program did not run")
    assert [t.get_text() for t in ax.texts] == ["k: this program did not run"]
