"""A compiled launch's grid, read before anything reaches the device, and the programs `pids` names in it.

Triton hands the grid to CUDA's launcher as it comes: a float, a string or a size past CUDA's limits
comes back as the launcher's own TypeError or an invalid-argument error with no kernel in it. Here
the grid is read once, the callable form called with the caller's own arguments (as the
interpreter calls it), and every size checked, so the launch gets three plain ints and the user a
line that names the kernel and the grid.
"""

from __future__ import annotations

import numbers
from typing import Any

from kernel_nb.engine import triton_compat
from kernel_nb.options import PidSelection
from kernel_nb.trace import Pid

# CUDA's largest grid: 2**31 - 1 blocks on x, 65535 on y and z.
CUDA_GRID_LIMITS = (2**31 - 1, 65535, 65535)
_AXES = "xyz"
_SHOWN_PIDS = 4


class GridError(ValueError):
    """A grid, or a program selection, that the GPU cannot launch; the message says what to pass."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows this one line instead of a traceback into kernel_nb."""
        return [f"{type(self).__name__}: {self}"]


def resolve_grid(kernel: str, grid: Any, meta: dict[str, Any]) -> Pid:
    """The grid as three program counts.

    Args:
        kernel: the kernel's name, for messages.
        grid: what the launch was given: a tuple or list of 1 to 3 sizes, one int, or a callable
            taking the launch's arguments by name (`meta`) and returning one of those.
        meta: the launch's arguments by parameter name, defaults and launch options included.

    Raises:
        GridError: the callable failed, or the grid is not 1 to 3 integer sizes within CUDA's limits.
    """
    if callable(grid):
        try:
            grid = grid({k: triton_compat.unwrap_constexpr(v) for k, v in meta.items()})
        except Exception as exc:
            raise GridError(
                f"{kernel}: the grid callable raised {type(exc).__name__}: {exc}; it is called with the "
                "kernel's arguments by name (meta['BLOCK']) and must return 1 to 3 sizes"
            ) from exc
    sizes = (grid,) if _is_int(grid) else grid
    if not isinstance(sizes, (tuple, list)) or not 1 <= len(sizes) <= 3:
        raise GridError(
            f"{kernel}: grid {grid!r} is not 1 to 3 sizes; pass a tuple such as "
            "(triton.cdiv(n, BLOCK),), or a callable returning one"
        )
    for axis, size in enumerate(sizes):
        if not _is_int(size):
            raise GridError(
                f"{kernel}: grid {grid!r} has {size!r} on axis {axis}, not an integer; CUDA launches whole "
                "programs: round with triton.cdiv(n, BLOCK)"
            )
        if size < 0:
            raise GridError(f"{kernel}: grid {grid!r} has {size} programs on axis {axis}; sizes must be >= 0")
        if size > CUDA_GRID_LIMITS[axis]:
            raise GridError(
                f"{kernel}: grid {grid!r} has {size} programs on axis {axis} ({_AXES[axis]}), more than CUDA "
                f"launches there ({CUDA_GRID_LIMITS[axis]}); put the extra programs on axis 0, which "
                f"takes up to {CUDA_GRID_LIMITS[0]}"
            )
    padded = [int(size) for size in sizes] + [1, 1]
    return (padded[0], padded[1], padded[2])


def check_pids(kernel: str, pids: PidSelection, grid: Pid) -> None:
    """Refuse a program selection that names programs the grid does not launch.

    Raises:
        GridError: some of `pids` lie outside `grid`.
    """
    if pids == "all":
        return
    outside = [pid for pid in pids if any(p >= g for p, g in zip(pid, grid))]
    if not outside:
        return
    shown = ", ".join(f"({x},{y},{z})" for x, y, z in outside[:_SHOWN_PIDS])
    more = f" and {len(outside) - _SHOWN_PIDS} more" if len(outside) > _SHOWN_PIDS else ""
    raise GridError(
        f"{kernel}: pids {shown}{more} are outside the grid {grid}; choose programs with each axis "
        "below the grid's size on it"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
