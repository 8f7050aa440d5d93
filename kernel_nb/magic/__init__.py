"""``%load_ext kernel_nb``: the ``%%tkernel`` cell magic and the ``%tkernel`` line magic."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell

from kernel_nb.magic.cell_viewers import VIEWERS
from kernel_nb.magic.magics import TKernelMagics
from kernel_nb.magic.warm_up import warm_up

__all__ = ["TKernelMagics", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ip: InteractiveShell) -> None:
    """Register ``%%tkernel`` and ``%tkernel`` (``%load_ext kernel_nb``); loading twice is harmless."""
    ip.register_magics(TKernelMagics)
    if VIEWERS.pre_run_cell not in ip.events.callbacks["pre_run_cell"]:
        ip.events.register("pre_run_cell", VIEWERS.pre_run_cell)
    warm_up()


def unload_ipython_extension(ip: InteractiveShell) -> None:
    """Remove the magics (``%unload_ext kernel_nb``, and the first half of ``%reload_ext``)."""
    manager = ip.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("tkernel", None)
    manager.registry.pop(TKernelMagics.__name__, None)
    if VIEWERS.pre_run_cell in ip.events.callbacks["pre_run_cell"]:
        ip.events.unregister("pre_run_cell", VIEWERS.pre_run_cell)
