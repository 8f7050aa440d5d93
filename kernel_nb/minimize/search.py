"""`minimize`: from a failing launch, a much smaller launch that fails the same way.

A greedy search: the moves (moves.MOVES) propose smaller launches, smallest first; every one is a
real launch, interpreted, and the first that still fails the same way (failure.Failure) becomes
the launch to shrink further. The moves are tried again from the first after each step, until
none makes the launch smaller or the time is up; the smallest so far is the result either way.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_nb.minimize.failure import MISMATCH, Failure, Keep
from kernel_nb.minimize.moves import MOVES
from kernel_nb.minimize.spec import LaunchSpec
from kernel_nb.options import Options
from kernel_nb.trace import Finding, Launch

DEFAULT_TIME_LIMIT_S = 60.0


@dataclass
class Minimized:
    """What `minimize` found.

    Attributes:
        launch: the smallest launch that fails the same way (interpreted, with its trace).
        finding: that launch's finding that is the failure.
        failure: the failure kept.
        original: the launch it started from.
        grid, arguments: the smallest launch's grid and arguments by name (arrays as numpy).
        steps: what each accepted step changed, in order.
        launches_run: how many launches the search interpreted.
        seconds: how long it took.
        timed_out: it stopped at the time limit (the launch is the smallest found by then).
        interrupted: it stopped at Ctrl-C (the same).
    """

    launch: Launch
    finding: Finding
    failure: Failure
    original: Launch
    grid: tuple[int, int, int]
    arguments: dict[str, Any]
    steps: list[str] = field(default_factory=list)
    launches_run: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    interrupted: bool = False

    def to_pytest(self, path: str | Path) -> tuple[Path, Path]:
        """Write the smallest launch as a standalone test (see `Launch.to_pytest`)."""
        result: tuple[Path, Path] = self.launch.to_pytest(path, finding=self.finding)
        return result

    def summary(self) -> str:
        before, after = self.original, self.launch
        lines = [
            f"{after.kernel}: {self.failure.describe()}, kept from {_size(before)} down to {_size(after)}"
            f" ({self.launches_run} launches, {self.seconds:.1f} s"
            + (", stopped at the time limit" if self.timed_out else "")
            + (", interrupted" if self.interrupted else "")
            + ")",
            *(f"  {step}" for step in self.steps),
            f"  grid {self.grid}; finding: {self.finding.message}",
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()


def minimize(
    launch: Launch,
    keep: Keep = None,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT_S,
    options: Options | None = None,
    compare: dict[str, Any] | None = None,
    progress: Callable[[str], None] | bool = True,
) -> Minimized:
    """Shrink a failing launch: fewer programs, smaller inputs, smaller blocks, simpler values,
    each step a real launch that still fails the same way.

    Args:
        launch: a launch of this session (`session.trace[i]`, `_tk[i]`) that failed or made a
            finding.
        keep: what to keep (see `Failure.of`): by default the launch's error, else its first
            finding; a finding kind ("race_write"); one of its findings; a function of a launch
            that says whether it fails; or "gpu_mismatch": a buffer out of tolerance against the
            GPU, for a launch of a compare session (each launch then runs on the GPU too).
        time_limit: seconds to search; the smallest launch found by then is the result.
        options: the options each launch runs under (by default the defaults, with the launch's
            shadow); progress bars are off.
        compare: for "gpu_mismatch", the fields of `kernel_nb.gpu.GpuOptions` each launch is
            compared under (`rtol`, `atol`, `tolerance`, `device`); by default the defaults.
        progress: where each step is told (a function of a line of text); True prints it.

    Returns:
        The smallest failing launch found, its arguments and the steps to it.

    Raises:
        ValueError: the launch does not fail (nothing to keep), or it cannot be run again (a
            trace loaded from disk, an argument minimize cannot rebuild).
        kernel_nb.gpu.GpuUnavailableError: "gpu_mismatch" on a machine without a usable GPU.
    """
    failure = Failure.of(launch, keep)
    # a mismatch is judged on the GPU: every launch runs there too
    compare = {"divergence": False, **(compare or {})} if failure.kind == MISMATCH else None
    spec = LaunchSpec.of(launch)
    options = dataclasses.replace(
        options or Options(shadow="fp64" if launch.shadow == "fp64" else None), progress=None
    )
    tell = print if progress is True else (progress or (lambda _: None))
    started = time.monotonic()
    deadline = started + time_limit
    best, best_launch = spec, launch
    finding = failure.found_in(launch)
    assert finding is not None  # Failure.of found it there
    steps: list[str] = []
    tried = {spec.key()}
    runs = 0
    timed_out = interrupted = False
    tell(f"minimize {launch.kernel}: keeping {failure.describe()}, from {_size(launch)}")
    improved = True
    while improved and not (timed_out or interrupted):
        improved = False
        for move in MOVES:
            for what, candidate in move(best, finding):
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                if candidate.complexity() >= best.complexity():
                    continue
                key = candidate.key()
                if key in tried:
                    continue
                tried.add(key)
                runs += 1
                try:
                    ran = candidate.run(options, compare)
                    found = None if ran is None else failure.found_in(ran)
                except KeyboardInterrupt:  # Ctrl-C: the smallest launch so far is the result
                    interrupted = True
                    break
                if ran is None or found is None:
                    continue
                best, best_launch, finding = candidate, ran, found
                steps.append(what)
                tell(
                    f"  {what}: still fails, {_size(ran)} ({runs} launches, {time.monotonic() - started:.1f} s)"
                )
                improved = True
                break
            if improved or timed_out or interrupted:
                break
    result = Minimized(
        launch=best_launch,
        finding=finding,
        failure=failure,
        original=launch,
        grid=best.grid,
        arguments=dict(best.values),
        steps=steps,
        launches_run=runs,
        seconds=time.monotonic() - started,
        timed_out=timed_out,
        interrupted=interrupted,
    )
    tell(result.summary())
    return result


def _size(launch: Launch) -> str:
    elements = sum(int(a.size) for a in launch.snapshot.values())
    programs = launch.num_programs
    return f"{programs} program{'s' * (programs != 1)}, {elements} array element{'s' * (elements != 1)}"
