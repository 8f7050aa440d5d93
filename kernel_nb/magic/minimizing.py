"""``%tkernel minimize [N]``: shrink launch N of the last ``%%tkernel`` cell (`kernel_nb.minimize`).

In plain Python::

    result = kernel_nb.minimize(_tk[N], keep=KIND, time_limit=SECONDS)
    _tkmin = result
    display(kernel_nb.TraceViewer(kernel_nb.Trace([result.launch])))
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from kernel_nb.minimize import DEFAULT_TIME_LIMIT_S, Minimized, minimize
from kernel_nb.trace import LAUNCH_ERROR, Launch

RESULT_NAME = "_tkmin"


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(
        prog="%tkernel minimize",
        description="Shrink a failing launch of the last %%tkernel cell (_tk) to a small one that fails "
        "the same way; the result is bound to _tkmin (and --name).",
        exit_on_error=False,
    )
    made.add_argument(
        "launch", nargs="?", type=int, help="the launch's index in _tk (default: the last that failed)"
    )
    made.add_argument(
        "--keep", help="the finding kind to keep (default: the launch's error, else its first finding)"
    )
    made.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT_S,
        help="seconds to search (default %(default)s)",
    )
    made.add_argument("--name", help="a variable to bind the result to, besides _tkmin")
    return made


def run(shell: InteractiveShell, line: str) -> Minimized:
    """Parse the line, minimize the launch, bind the result.

    Raises:
        UsageError: a bad line, no ``%%tkernel`` cell ran yet, no such launch, or a launch that
            does not fail.
    """
    try:
        args = parser().parse_args(shlex.split(line))
    except (argparse.ArgumentError, SystemExit) as exc:
        raise UsageError(
            f"%tkernel minimize [N] [--keep KIND] [--time-limit S] [--name VAR]: {exc}"
        ) from None
    if args.name is not None and not args.name.isidentifier():
        raise UsageError(f"--name takes a variable name, got {args.name!r}")
    launches = _launches(shell.user_ns.get("_tk"))
    launch = _chosen(launches, args.launch)
    try:
        result = minimize(launch, args.keep, time_limit=args.time_limit)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    shell.user_ns[RESULT_NAME] = result
    if args.name is not None:
        shell.user_ns[args.name] = result
    return result


def _launches(trace: Any) -> list[Launch]:
    launches = getattr(trace, "launches", None)
    if not isinstance(launches, list) or not launches:
        raise UsageError(
            "%tkernel minimize shrinks a launch of the last %%tkernel cell, and _tk holds none yet"
        )
    return launches


def _chosen(launches: list[Launch], index: int | None) -> Launch:
    if index is not None:
        if not -len(launches) <= index < len(launches):
            raise UsageError(f"_tk has launches 0 to {len(launches) - 1}, not {index}")
        return launches[index]
    failed = [launch for launch in launches if _fails(launch)]
    if not failed:
        raise UsageError(
            "no launch in _tk failed or made a finding of severity error; name one (%tkernel minimize N) "
            "and what to keep (--keep KIND)"
        )
    return failed[-1]


def _fails(launch: Launch) -> bool:
    return any(f.kind == LAUNCH_ERROR or f.severity == "error" for f in launch.findings)
