"""A failed launch's error as its first finding: what stopped the launch, where, in which program,
argument and loop iteration, next to what the detectors found in the programs that ran before it."""

from __future__ import annotations

from kernel_nb.engine.failing_line import names_on_line
from kernel_nb.engine.recorder import Recorder
from kernel_nb.errors import KernelError
from kernel_nb.trace import LAUNCH_ERROR, Finding, Launch


def failing_iteration(error: KernelError, recorder: Recorder, *, counted: bool) -> tuple[int, ...] | None:
    """The loop iteration the failing program was in, read off the recorder as the error left it.

    The rewritten kernel leaves a loop's counter in place when an exception passes through it, so
    the kernel's own loops are all there; a helper's frame is gone by then, and with it the loops
    of that helper (the iteration is the kernel's). None where the loops were not counted
    (`counted`: the kernel was instrumented) or the recorder holds another program.

    Args:
        error: the launch's error.
        recorder: the failed run's recorder.
        counted: whether the run counted loop iterations.
    """
    if not counted or error.pid is None or recorder.program.pid != error.pid:
        return None
    # -1: a loop entered whose first iteration had not started (its range was being made)
    return tuple(i for i in recorder.iteration if i >= 0)


def put_first(launch: Launch, error: KernelError) -> Finding:
    """Put the error at the head of the launch's findings (once: a second call finds it there).

    Returns:
        The error's finding.
    """
    if launch.findings and launch.findings[0].kind == LAUNCH_ERROR:
        return launch.findings[0]
    finding = Finding(
        kind=LAUNCH_ERROR,
        severity="error",
        message=f"{type(error).__name__}: {error.message}",
        launch=launch.index,
        pid=error.pid,
        file=error.file,
        line=error.line,
        arg=failing_argument(launch, error),
        iteration=error.iteration,
    )
    launch.findings.insert(0, finding)
    return finding


def failing_argument(launch: Launch, error: KernelError) -> str | None:
    """The array argument of the failing access: the one the memory guard refused an access to at
    that program and line, else the only array argument the line's load, store or atomic points
    into; None where there is none or several."""
    if error.pid is None or error.line is None:
        return None
    here = (launch.linear(error.pid), error.line)
    for name, bmap in launch.buffers.items():
        if any((linear, line) == here for linear, line, _ in bmap.oob):
            return name
    arrays = {a.name for a in launch.args if a.kind == "buffer"}
    named = names_on_line(error.file, error.line)[0] & arrays
    return named.pop() if len(named) == 1 else None
