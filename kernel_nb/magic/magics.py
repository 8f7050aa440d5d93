"""The ``%%tkernel`` cell magic and the ``%tkernel`` line magic.

The magic is a thin layer over the public API: it turns flags into `kernel_nb.Options` (see
`kernel_nb.magic.flags`), runs the cell inside `kernel_nb.interpret`, binds the `Trace` to ``_tk``
(and ``--name``) and displays it.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from IPython.core.debugger import Pdb
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import parse_argstring

import kernel_nb
from kernel_nb.errors import KernelError
from kernel_nb.magic import cell as cells
from kernel_nb.magic import cell_viewers, flags, gpu_modes, minimizing, recording
from kernel_nb.minimize import Minimized
from kernel_nb.options import Options
from kernel_nb.progress import Progress
from kernel_nb.trace import Trace


@magics_class
class TKernelMagics(Magics):
    """``%%tkernel`` and ``%tkernel``; the defaults set by ``%tkernel FLAGS`` live on the instance.

    Attributes:
        kept: every default a cell starts from (`kernel_nb.magic.flags.Defaults`).
    """

    def __init__(self, shell: InteractiveShell | None = None) -> None:
        super().__init__(shell)
        # Without nosigint, pdb's `continue` takes over Ctrl-C, and the stop button would drop into the
        # debugger instead of ending the launch.
        self.kept = flags.Defaults(Options(debugger=functools.partial(Pdb, nosigint=True)))

    @property
    def defaults(self) -> Options:
        """The `Options` a cell starts from before its own flags apply."""
        return self.kept.options

    @defaults.setter
    def defaults(self, options: Options) -> None:
        self.kept = dataclasses.replace(self.kept, options=options)

    @property
    def quiet(self) -> bool:
        """Whether cells display nothing unless they say otherwise."""
        return bool(self.kept.magic["quiet"])

    @flags.with_flags
    @line_cell_magic
    def tkernel(self, line: str, cell: str | None = None) -> Any:
        """Run the cell's Triton launches through kernel_nb and show what each program computed.

        ``%%tkernel interpret --pids 0:4 --name tr`` on top of a cell is, in plain Python::

            import kernel_nb
            options = kernel_nb.Options(pids=kernel_nb.options.parse_pids("0:4"))
            with kernel_nb.interpret(options) as session:
                ...  # the cell
            _tk = tr = session.trace
            display(kernel_nb.TraceViewer(_tk))

        ``_tk`` is bound also when the cell fails, to what the launches recorded until then. A
        launch that fails shows the viewer open at its error (the first finding of the failed
        launch: program, line, loop iteration) above the error, whose last line says where the
        recording is. The value of the cell's last expression, if any, is the cell's output, as
        without the magic.

        ``%tkernel FLAGS`` makes FLAGS the defaults of later cells; ``%tkernel`` shows them and
        ``%tkernel --reset`` forgets them.

        ``%tkernel minimize [N]`` shrinks launch N of ``_tk`` (the last that failed by default)
        to a small launch that fails the same way, shown in the viewer and bound to ``_tkmin``:
        `kernel_nb.minimize` (see `kernel_nb.magic.minimizing`).

        ``%%tkernel record [--kernel NAME] [--every K] [--max N]`` runs the cell as usual and
        captures its launches into ``_tkrec``, each of which ``_tkrec[i].replay()`` interprets on
        the CPU: `kernel_nb.record` (see `kernel_nb.magic.recording`).

        ``gpu``, ``compare`` and ``interpret --ir`` are `kernel_nb.gpu.run`, `kernel_nb.gpu.compare`
        and `kernel_nb.gpu.interpret_with_ir`; `kernel_nb.magic.gpu_modes` shows the plain Python.
        """
        __tracebackhide__ = True
        if cell is not None and line.split(maxsplit=1)[:1] == ["record"]:
            assert self.shell is not None
            return recording.run(self.shell, line.split(maxsplit=1)[1] if " " in line.strip() else "", cell)
        if cell is None and line.split(maxsplit=1)[:1] == ["minimize"]:
            shell = self.shell
            assert shell is not None
            result = minimizing.run(shell, line.split(maxsplit=1)[1] if " " in line.strip() else "")
            if not self.quiet:
                cell_viewers.VIEWERS.show(_viewer(Trace([result.launch]), _first_error(result)))
            return None
        args = parse_argstring(self.tkernel, line)
        if cell is None:
            if line.strip():
                self.kept = flags.new_defaults(args, self.kept)
            else:
                print(flags.describe_defaults(self.kept))
            return None
        if args.reset:
            raise UsageError("--reset belongs to the line magic: write %tkernel --reset on its own line")
        options = flags.cell_options(args, self.kept)
        mode = args.mode or "interpret"
        quiet = flags.quiet_of(args, self.kept)
        if args.name is not None and not args.name.isidentifier():
            raise UsageError(f"--name takes a variable name, got {args.name!r}")
        gpu = flags.cell_gpu_options(mode, args, self.kept)
        shell = self.shell
        assert shell is not None
        progress = None if quiet or mode == "gpu" else Progress()
        options = dataclasses.replace(options, progress=progress)
        if mode == "interpret" and not flags.ir_of(args, self.kept):
            session = kernel_nb.interpret(options)
            try:
                value = cells.run_in(shell, session, cell, progress, lambda: session.trace, args.name)
            except KernelError as error:
                _show_failure(error, session.trace, args.name, quiet=quiet)
                raise
            if not quiet:
                cell_viewers.VIEWERS.show(_viewer(session.trace))
            return value
        gpu_session = gpu_modes.session_for(options, gpu)
        try:
            value = cells.run_in(
                shell, gpu_session, cell, progress, lambda: gpu_modes.result_of(gpu_session, mode), args.name
            )
        except KernelError as error:
            if mode in ("interpret", "compare"):  # interpret --ir, compare: the interpreted launch failed
                if mode == "compare" and not quiet:
                    gpu_modes.print_reports(gpu_session)  # what the GPU made of the failed launch
                _show_failure(error, gpu_session.trace, args.name, quiet=quiet)
            raise
        if not quiet:
            if mode == "interpret":
                cell_viewers.VIEWERS.show(_viewer(gpu_session.trace))
            else:
                gpu_modes.show(gpu_session, mode)
        return value


def _show_failure(error: KernelError, trace: Trace, name: str | None, *, quiet: bool) -> None:
    """Before the error's traceback: the viewer, open at the failure; and the traceback's last line
    says where the recording is. (The cell still fails: the error is raised on.)"""
    at = cells.failed_launch(error, trace)
    if at is None:
        return
    if not quiet:
        cell_viewers.VIEWERS.show(_viewer(trace, at))
    cells.note_recording(error, at, name, viewer=not quiet)


def _first_error(result: Minimized) -> tuple[int, int]:
    """Where the viewer of a minimized launch opens: at the finding that was kept."""
    return 0, next(i for i, f in enumerate(result.launch.findings) if f is result.finding)


def _viewer(trace: Trace, finding: tuple[int, int] | None = None) -> object:
    """The trace's viewer, at a finding (launch, index) if given."""
    try:
        from kernel_nb.view import TraceViewer
        from kernel_nb.view.state import Selection
    except ImportError:
        return trace  # the trace's own HTML table and text summary
    if finding is None:
        return TraceViewer(trace)
    return TraceViewer(trace, selection=Selection.at_finding(trace, *finding))
