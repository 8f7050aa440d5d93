"""A stand-in launch for collectors and detectors that read only a launch's name and index."""

from dataclasses import dataclass

from kernel_nb.checks import Site


@dataclass
class NamedLaunch:
    kernel: str = "k"
    index: int = 0


def site(pid=(0, 0, 0), line=7, order=None):
    return Site(pid, pid[0] if order is None else order, "k.py", line)
