"""The viewers a notebook cell showed: when the cell runs again, those of its last run are closed.

Jupyter replaces a cell's outputs when the cell runs again, but the widgets they showed stay open
in the kernel, and a viewer holds its launch's trace (the values kept up to the budget, the input
copies). Each run again of a causal flash attention cell held 32 MiB more for as long as the
kernel lived. The old viewers are shown nowhere any more: closed, their traces go, unless the user
kept a name for one. Frontends that say which cell runs (JupyterLab, Notebook 7, VS Code send its
id) get this; elsewhere viewers stay open as before.
"""

from __future__ import annotations

import weakref
from typing import Any

from IPython.display import display


class CellViewers:
    """Per cell id, the viewers its last run showed."""

    def __init__(self) -> None:
        self._running: str | None = None
        self._shown: dict[str, list[weakref.ref[Any]]] = {}

    def pre_run_cell(self, info: Any) -> None:
        """IPython's pre_run_cell event: a cell starts; the viewers of its last run are closed."""
        cell = getattr(info, "cell_id", None)
        self._running = cell
        for ref in self._shown.pop(cell, []) if cell is not None else []:
            viewer = ref()
            if viewer is not None:
                viewer.close()

    def show(self, viewer: Any) -> None:
        """Display `viewer` (a TraceViewer, or a trace where the viewer cannot be made) as the
        running cell's."""
        display(viewer)
        close = getattr(viewer, "close", None)
        if self._running is not None and callable(close):
            self._shown.setdefault(self._running, []).append(weakref.ref(viewer))


VIEWERS = CellViewers()
