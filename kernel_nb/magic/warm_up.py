"""The viewer's imports, made while the notebook waits for its first ``%%tkernel`` cell.

Every ``%%tkernel`` cell shows a viewer: `kernel_nb.view` (anywidget, ipywidgets) and matplotlib,
which draws the viewer's PNG for notebooks without its JavaScript. The first cell imported them,
0.34 s of the 0.7 s its causal flash attention took, more than the launch itself. ``%load_ext``
starts them on a thread instead, while the user writes the next cell: the first cell finds them
imported, or waits on Python's import lock for the rest (a notebook run at once does the same
work as before, the two threads taking turns).
"""

from __future__ import annotations

import importlib
import threading

MODULES = ("kernel_nb.view", "matplotlib.figure", "matplotlib.backends.backend_agg")

_lock = threading.Lock()
_thread: threading.Thread | None = None


def warm_up() -> threading.Thread:
    """The thread importing `MODULES`, started by the first call."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_import_all, name="kernel_nb warm-up", daemon=True)
            _thread.start()
        return _thread


def _import_all() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # the cell that needs the module imports it again, and says what fails
            return
