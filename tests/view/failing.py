"""A hand-built failed launch of add_kernel: program (1, 1, 0) stopped in loop iteration (2,) at
line 19, after the programs before it ran; its error is the first finding, as the engine puts it."""

from __future__ import annotations

from conftest import FILE, add_launch

from kernel_nb.trace import LAUNCH_ERROR, Finding, Launch, Trace

FAILING_PID = (1, 1, 0)
FAILING_LINE = 19
MESSAGE = "add_kernel:19 pid=(1,1,0): tl.load of x_ptr reads elements [60, 64) but x_ptr has 60"


def failed_launch() -> Launch:
    launch = add_launch(grid=(4, 2, 1))
    stop = launch.linear(FAILING_PID)
    launch.programs = {pid: p for pid, p in launch.programs.items() if launch.linear(pid) <= stop}
    failing = launch.programs[FAILING_PID]
    # it recorded up to the loop variable of iteration 2 (statement 6, k), then failed
    last = next(i for i, r in enumerate(failing.records) if r.stmt == 6 and r.iteration == (2,))
    del failing.records[last + 1 :]
    failing.events = [e for e in failing.events if e.kind == "load"]
    launch.status, launch.error = "error", MESSAGE
    launch.findings = [
        Finding(
            LAUNCH_ERROR,
            "error",
            f"KernelMemoryError: {MESSAGE}",
            0,
            FAILING_PID,
            FILE,
            FAILING_LINE,
            "x_ptr",
            iteration=(2,),
        ),
        *launch.findings[:1],  # the NaN that program (3, 0, 0) loaded
    ]
    launch.replayer = None  # a failed launch replays nothing
    return launch


def failed_trace() -> Trace:
    return Trace([failed_launch()])
