"""``%%tkernel record``: the cell runs as usual (compiled on the GPU, or under the stock
interpreter) and its chosen launches are captured (`kernel_nb.record`).

In plain Python::

    with kernel_nb.record(kernel=NAME, every=K, max_launches=N) as recording:
        ...  # the cell
    _tkrec = recording
    display(recording)  # the table of what was captured

``_tkrec[i].replay()`` then interprets launch i on the CPU and compares it with what ran.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display

from kernel_nb.magic.cell import run_cell
from kernel_nb.record import DEFAULT_BUDGET, record

RESULT_NAME = "_tkrec"


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        prog="%%tkernel record",
        description="Run the cell as usual and capture its launches; the recording is bound to _tkrec.",
        exit_on_error=False,
    )
    made.add_argument("--kernel", help="capture only this kernel's launches (by name)")
    made.add_argument("--every", type=int, default=1, help="capture every K-th launch (default 1)")
    made.add_argument("--max", type=int, default=None, help="capture at most N launches")
    made.add_argument(
        "--budget-mib",
        type=float,
        default=DEFAULT_BUDGET / 2**20,
        help="the most MiB the captured arrays may take (default %(default)s)",
    )
    made.add_argument("--name", help="a variable to bind the recording to, besides _tkrec")
    made.add_argument("--quiet", action="store_true", help="show no table")
    return made


def run(shell: InteractiveShell, line: str, cell: str) -> Any:
    """Run the cell under a record block; bind and show the recording whatever happens.

    Returns:
        The value of the cell's trailing expression, or None.

    Raises:
        UsageError: a bad line.
    """
    __tracebackhide__ = True
    try:
        args = parser().parse_args(shlex.split(line))
        if args.name is not None and not args.name.isidentifier():
            raise argparse.ArgumentError(None, f"--name takes a variable name, got {args.name!r}")
        session = record(
            args.kernel, every=args.every, max_launches=args.max, budget_bytes=int(args.budget_mib * 2**20)
        )
    except (argparse.ArgumentError, SystemExit, ValueError) as exc:
        raise UsageError(
            f"%%tkernel record [--kernel NAME] [--every K] [--max N] [--budget-mib M] [--name VAR]: {exc}"
        ) from None
    try:
        with session:
            return run_cell(shell, cell)
    finally:
        shell.user_ns[RESULT_NAME] = session.recording
        if args.name is not None:
            shell.user_ns[args.name] = session.recording
        if not args.quiet:
            display(session.recording)
