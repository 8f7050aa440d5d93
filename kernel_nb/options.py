"""Options of an interpreted run: a frozen dataclass, validated at construction."""

from __future__ import annotations

import pdb
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

DEFAULT_BUDGET = 64 << 20  # other programs are replayed from the launch's inputs when looked at
DEFAULT_WORKING_SET = 64 << 20
DEFAULT_SUMMARY_BYTES = 256 << 20

PidSelection = Literal["all"] | tuple[tuple[int, int, int], ...]
Order = Literal["serial", "reverse", "shuffle"]
Numerics = Literal["gpu", "stock"]
Strategy = Literal["auto", "serial"]
Shadow = Literal["fp64"]

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_BYTES = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Options:
    """How `kernel_nb.interpret` runs and records launches.

    Attributes:
        pids: programs whose full values are kept: "all" (as far as the budget allows), or a
            tuple of program ids. Summaries are kept for every program either way.
        budget_bytes: bytes of recorded values to keep per launch; programs past it keep summaries.
        working_set_bytes: bytes the values of the programs the batched strategy runs together may
            take (as measured on the programs run so far): it sizes the batches, so that a launch
            holds about budget_bytes + working_set_bytes + its arguments whatever its grid.
        summary_bytes: bytes of summaries (a program's trace, and a summary per statement and
            loop iteration, as Python objects: see trace/aggregates) a launch keeps; the programs
            run after it is reached keep per-statement aggregates only (`Launch.aggregates`) and
            are replayed from the inputs when looked at.
        capture: record statements (False: only memory events, findings and outputs).
        launch: interpret only the N-th launch (0-based) made in the session; others run as usual.
        autotune_config: which config of an @triton.autotune kernel to run (index; no benchmarking).
        breakpoints: kernel source lines (file lines) at which to stop in the debugger.
        break_pid: stop only in this program (None: every program reaching the line).
        debugger: builds the debugger used for `breakpoints`.
        order: the order programs run in ("reverse", "shuffle" expose order dependence).
        seed: the seed of the "shuffle" order.
        progress: called as progress(done, total) while a launch runs.
        numerics: "gpu" computes what an NVIDIA GPU computes (tf32 dots by default, bf16/fp8
            rounded to nearest even, saturating float-to-int casts); "stock" is Triton's interpreter.
        strategy: "auto" runs a launch's programs together where that gives exactly the serial
            result (see engine/batched/) and one by one elsewhere; "serial" always one by one.
        detect: run the bug detectors (NaN/Inf origin, undefined operations, races, coverage,
            uninitialised reads) and put their findings on each launch.
        poison: argument names whose memory counts as uninitialised: filled with NaN (integers:
            their maximum) before the launch, and reads of elements no program wrote are reported.
        shadow: "fp64" also computes every floating-point value in fp64 from the inputs, and
            records per statement the fp64 value and the error of the real one against it, in
            total and of the statement's own arithmetic (see engine/shadow.py); None: no shadow.
            Only a capturing run computes it: its values are records.
    """

    pids: PidSelection = "all"
    budget_bytes: int = DEFAULT_BUDGET
    working_set_bytes: int = DEFAULT_WORKING_SET
    summary_bytes: int = DEFAULT_SUMMARY_BYTES
    capture: bool = True
    launch: int | None = None
    autotune_config: int = 0
    breakpoints: tuple[int, ...] = ()
    break_pid: tuple[int, int, int] | None = None
    debugger: Callable[[], pdb.Pdb] = field(default=pdb.Pdb, compare=False)
    order: Order = "serial"
    seed: int = 0
    progress: Callable[[int, int], None] | None = field(default=None, compare=False)
    numerics: Numerics = "gpu"
    strategy: Strategy = "auto"
    detect: bool = True
    poison: tuple[str, ...] = ()
    shadow: Shadow | None = None

    def __post_init__(self) -> None:
        if self.pids != "all" and (
            not isinstance(self.pids, tuple)
            or not all(
                isinstance(p, tuple) and len(p) == 3 and all(isinstance(i, int) and i >= 0 for i in p)
                for p in self.pids
            )
        ):
            raise ValueError(f"pids must be 'all' or a tuple of (x, y, z) program ids, got {self.pids!r}")
        if not isinstance(self.budget_bytes, int) or self.budget_bytes < 0:
            raise ValueError(f"budget_bytes must be a non-negative int, got {self.budget_bytes!r}")
        for name in ("working_set_bytes", "summary_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative int, got {value!r}")
        if self.launch is not None and (not isinstance(self.launch, int) or self.launch < 0):
            raise ValueError(f"launch must be a non-negative launch index, got {self.launch!r}")
        if self.order not in ("serial", "reverse", "shuffle"):
            raise ValueError(f"order must be 'serial', 'reverse' or 'shuffle', got {self.order!r}")
        if self.strategy not in ("auto", "serial"):
            raise ValueError(f"strategy must be 'auto' or 'serial', got {self.strategy!r}")
        if self.numerics not in ("gpu", "stock"):
            raise ValueError(f"numerics must be 'gpu' or 'stock', got {self.numerics!r}")
        if not isinstance(self.poison, tuple) or not all(isinstance(n, str) for n in self.poison):
            raise ValueError(f"poison must be a tuple of argument names, got {self.poison!r}")
        if self.shadow not in (None, "fp64"):
            raise ValueError(f"shadow must be 'fp64' or None, got {self.shadow!r}")
        if any(not isinstance(line, int) or line <= 0 for line in self.breakpoints):
            raise ValueError(f"breakpoints must be positive line numbers, got {self.breakpoints!r}")


def parse_pids(text: str) -> PidSelection:
    """Parse a program selection as the magic's --pids takes it.

    "all"; "3" (program (3,0,0)); "0:4" (programs 0..3 on axis 0); "1,0,0" (one program id);
    several separated by ";" ("0;5;1,2,0").

    Raises:
        ValueError: the text is not a selection.
    """
    text = text.strip()
    if text == "all":
        return "all"
    pids: list[tuple[int, int, int]] = []
    for part in text.split(";"):
        part = part.strip()
        try:
            if ":" in part:
                start, stop = (int(p) for p in part.split(":"))
                pids.extend((i, 0, 0) for i in range(start, stop))
            else:
                axes = [int(p) for p in part.split(",")]
                if not 1 <= len(axes) <= 3:
                    raise ValueError
                axes += [0] * (3 - len(axes))
                pids.append((axes[0], axes[1], axes[2]))
        except ValueError:
            raise ValueError(
                f"cannot read program selection {part!r}: use 'all', '3', '0:4', '1,0,0' or several joined by ';'"
            ) from None
    return tuple(pids)


def parse_bytes(text: str) -> int:
    """Read a byte count as the magic's ``--budget`` takes it: ``1000000``, ``64K``, ``512M``, ``1.5G`` (binary units).

    Raises:
        ValueError: the text is not a byte count.
    """
    match = _BYTES.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"cannot read byte count {text!r}: use a number with an optional K, M, G or T suffix"
        )
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.upper()])


def format_bytes(count: int) -> str:
    """The shortest spelling of `count` that `parse_bytes` reads back exactly."""
    for unit in ("T", "G", "M", "K"):
        if count and count % _UNITS[unit] == 0:
            return f"{count // _UNITS[unit]}{unit}"
    return str(count)
