"""Shrink a failing launch to a small one that fails the same way (`minimize`)."""

from kernel_nb.minimize.failure import MISMATCH, Failure
from kernel_nb.minimize.search import DEFAULT_TIME_LIMIT_S, Minimized, minimize
from kernel_nb.minimize.spec import CannotRelaunch, LaunchSpec

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "MISMATCH",
    "CannotRelaunch",
    "Failure",
    "LaunchSpec",
    "Minimized",
    "minimize",
]
