"""The trace viewer: an anywidget for notebooks, a PNG fallback, and matplotlib plots."""

from kernel_nb.view.plot import plot
from kernel_nb.view.widget import TraceViewer

__all__ = ["TraceViewer", "plot"]
