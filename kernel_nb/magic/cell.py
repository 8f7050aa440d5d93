"""Running a ``%%tkernel`` cell's body in the user's namespace, inside a session, and binding ``_tk``;
what a cell whose launch failed shows besides the error."""

from __future__ import annotations

import ast
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from kernel_nb.errors import KernelError, LaunchInterrupted
from kernel_nb.progress import Progress
from kernel_nb.trace import Trace


class CellInterrupted(LaunchInterrupted):
    """A `LaunchInterrupted` as the cell shows it: one line instead of the engine's frames."""

    def _render_traceback_(self) -> list[str]:
        return [self.message]


def interrupted_message(exc: LaunchInterrupted) -> str:
    where = "" if exc.pid is None else " at pid ({},{},{})".format(*exc.pid)
    return f"interrupted: {exc.kernel}{where}, arrays unchanged"


def run_in(
    shell: InteractiveShell,
    session: AbstractContextManager[Any],
    cell: str,
    progress: Progress | None,
    result: Callable[[], object],
    name: str | None,
) -> Any:
    """Run the cell inside a session; whatever happens, bind `result()` (the trace) to _tk and `name`.

    Returns:
        The value of the cell's trailing expression, or None.

    Raises:
        CellInterrupted: the launch was interrupted (Ctrl-C, the stop button).
    """
    __tracebackhide__ = True
    try:
        with session:
            return run_cell(shell, cell)
    except LaunchInterrupted as exc:
        raise CellInterrupted(
            interrupted_message(exc), kernel=exc.kernel, pid=exc.pid, launch=exc.launch
        ) from exc
    finally:
        if progress is not None:
            progress.close()
        bind(shell, result(), name)


def failed_launch(error: KernelError, trace: object) -> tuple[int, int] | None:
    """The failed launch's place in the cell's trace and its error's finding, (launch, finding);
    None where the error recorded no launch of that trace (an argument the launch refused)."""
    launch = error.launch
    if not isinstance(trace, Trace) or launch is None or launch not in trace.launches:
        return None
    return trace.launches.index(launch), 0


def note_recording(error: KernelError, at: tuple[int, int], name: str | None, *, viewer: bool) -> None:
    """Add to the error's traceback the one line that says where the recording is.

    IPython shows a KernelError's own traceback (`KernelError._render_traceback_`), which ends
    with the error's notes; `__notes__` is set directly, as `add_note` does on Python 3.11+.
    """
    names = "_tk" if name is None else f"_tk and {name}"
    launch, finding = at
    line = (
        f"kernel_nb: the launch's recording is in {names} (its error is _tk[{launch}].findings[{finding}])"
        + ("; the viewer above opens at the failure" if viewer else "")
    )
    error.__notes__ = [*getattr(error, "__notes__", []), line]


def run_cell(shell: InteractiveShell, cell: str) -> Any:
    """Execute the cell body in the user namespace; return the value of a trailing expression.

    Exceptions propagate (no traceback is printed here), so the cell fails as a whole.
    """
    __tracebackhide__ = True
    # The magic line and the blank lines IPython strips come back as empty lines, so that the
    # line numbers of tracebacks and of --break are those the editor shows for this cell.
    source = "\n" * (1 + _leading_blank_lines(cell)) + shell.transform_cell(cell)
    filename = shell.compile.cache(source, shell.execution_count, raw_code=cell)
    module = shell.compile.ast_parse(source, filename)
    last = module.body.pop() if module.body and isinstance(module.body[-1], ast.Expr) else None
    exec(shell.compile(module, filename, "exec"), shell.user_global_ns, shell.user_ns)
    if last is None:
        return None
    expression = ast.Expression(last.value)
    return eval(shell.compile(expression, filename, "eval"), shell.user_global_ns, shell.user_ns)


def bind(shell: InteractiveShell, result: object, name: str | None) -> None:
    """Bind a cell's result to ``_tk`` and, with ``--name``, to that name too."""
    shell.user_ns["_tk"] = result
    if name is not None:
        shell.user_ns[name] = result


def _leading_blank_lines(cell: str) -> int:
    count = 0
    for text in cell.splitlines():
        if text.strip():
            break
        count += 1
    return count
