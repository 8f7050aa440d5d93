"""What the programs of a launch took, remembered for the next launch of the same kernel with the
same grid, arguments and options.

A batched launch sizes its batches by what one program's values took (`BatchRecorder.program_bytes`).
With nothing measured yet, it runs a small first batch to measure (`PROBE_BATCH`): a batch costs
the same Python work whatever its size, about 5 ms for a vector add of a few statements, so a probe
is a batch's time added to the launch. A launch made again, a cell run again or a kernel launched
in a loop, starts instead from what the last such launch measured. That is an estimate only: a
program whose values take more (a data-dependent loop that runs longer) still cuts its batch, as
every batch after the first is cut (see `BatchRecorder._measure`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from kernel_nb.options import Options
from kernel_nb.trace import ArgumentInfo

_LIMIT = 256  # kernels remembered; the least recently launched goes first


@dataclass(frozen=True)
class ProgramBytes:
    """What one program took: its values' bytes per statement, and the most summary bytes a batch
    made for it."""

    values: dict[int, int]
    summary_peak: int


_MEASURED: OrderedDict[Hashable, ProgramBytes] = OrderedDict()


def launch_key(
    code: Any, grid: tuple[int, ...], args: Sequence[ArgumentInfo], options: Options, precise: bool
) -> Hashable:
    """What a launch's programs' sizes depend on: the kernel as it runs (`code`: its rewritten
    code object, one per source), the grid, every argument's type, shape, strides and scalar value,
    and the options."""
    return (code, tuple(grid), tuple(_argument(a) for a in args), options, precise)


def _argument(info: ArgumentInfo) -> Hashable:
    value = info.value
    if not isinstance(value, (int, float, bool, str, type(None))):
        value = repr(value)  # a constexpr of another type (a tl.dtype, a tuple): by what it shows
    return (info.name, info.kind, info.dtype, info.shape, info.strides, value)


def remembered(key: Hashable) -> ProgramBytes | None:
    found = _MEASURED.get(key)
    if found is not None:
        _MEASURED.move_to_end(key)
    return found


def remember(key: Hashable, measured: ProgramBytes) -> None:
    _MEASURED[key] = measured
    _MEASURED.move_to_end(key)
    if len(_MEASURED) > _LIMIT:
        _MEASURED.popitem(last=False)


def forget() -> None:
    """Forget every measurement (a launch then measures its programs as a process's first does)."""
    _MEASURED.clear()
