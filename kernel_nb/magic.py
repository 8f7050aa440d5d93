"""The ``%%tkernel`` cell magic and the ``%tkernel`` line magic.

The magic is a thin layer over the public API: it turns flags into `kernel_nb.Options`, runs the
cell inside `kernel_nb.interpret`, binds the `Trace` to ``_tk`` (and ``--name``) and displays it.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import re
import time
from collections.abc import Callable
from typing import Any, Protocol

from IPython.core.debugger import Pdb
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

import kernel_nb
from kernel_nb.errors import LaunchInterrupted
from kernel_nb.gpu.session import GpuOptions, GpuSession
from kernel_nb.options import Options, parse_pids
from kernel_nb.trace import Trace

# A launch that ends sooner than this never shows a progress bar.
PROGRESS_DELAY_S = 1.0

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_BYTES = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """Read a byte count as ``--budget`` takes it: ``1000000``, ``64K``, ``512M``, ``1.5G`` (binary units).

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


def _budget(text: str) -> int:
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _pids(text: str) -> Any:
    try:
        return parse_pids(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _one_pid(text: str) -> tuple[int, int, int]:
    pids = _pids(text)
    if pids == "all" or len(pids) != 1:
        raise argparse.ArgumentTypeError(f"--pid takes one program id such as 3 or 1,0,0, got {text!r}")
    return pids[0]


class _Bar(Protocol):
    n: float

    def update(self, n: float) -> object: ...

    def close(self) -> None: ...


def _tqdm_bar(total: int) -> _Bar:
    # Imported here: tqdm.auto picks the widget or the text bar, and most cells never need one.
    from tqdm.auto import tqdm

    bar: _Bar = tqdm(total=total, unit="program", desc="interpreting", leave=False)
    return bar


class Progress:
    """The `Options.progress` callback of a cell: a bar for launches that run longer than `delay` seconds.

    Quick launches, the common case, never create a bar, so their output stays clean.
    """

    def __init__(
        self,
        delay: float = PROGRESS_DELAY_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        new_bar: Callable[[int], _Bar] = _tqdm_bar,
    ) -> None:
        self._delay = delay
        self._clock = clock
        self._new_bar = new_bar
        self._bar: _Bar | None = None
        self._start: float | None = None
        self._done = 0
        self._total = 0

    def __call__(self, done: int, total: int) -> None:
        if self._start is None or done < self._done or total != self._total:
            self.close()  # a new launch
            self._start = self._clock()
            self._total = total
        self._done = done
        if self._bar is None:
            if self._clock() - self._start < self._delay:
                return
            self._bar = self._new_bar(total)
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        """Remove the bar (at the end of a launch or of the cell)."""
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._start = None
        self._done = 0
        self._total = 0


class CellInterrupted(LaunchInterrupted):
    """A `LaunchInterrupted` as the cell shows it: one line instead of the engine's frames."""

    def _render_traceback_(self) -> list[str]:
        return [self.message]


def interrupted_message(exc: LaunchInterrupted) -> str:
    where = "" if exc.pid is None else " at pid ({},{},{})".format(*exc.pid)
    return f"interrupted: {exc.kernel}{where}, arrays unchanged"


@magics_class
class TKernelMagics(Magics):
    """``%%tkernel`` and ``%tkernel``; the defaults set by ``%tkernel FLAGS`` live on the instance.

    Attributes:
        defaults: the `Options` a cell starts from before its own flags apply.
        quiet: whether cells display nothing unless they say otherwise.
    """

    def __init__(self, shell: InteractiveShell | None = None) -> None:
        super().__init__(shell)
        # Without nosigint, pdb's `continue` takes over Ctrl-C, and the stop button would drop into the
        # debugger instead of ending the launch.
        self.defaults = Options(debugger=functools.partial(Pdb, nosigint=True))
        self.quiet = False

    @magic_arguments()
    @argument(
        "mode",
        nargs="?",
        choices=("interpret", "gpu", "compare"),
        help="interpret: run every launch in the cell on the CPU, recording everything (the default); "
        "gpu: run them compiled on the GPU; compare: both, from identical inputs.",
    )
    @argument(
        "--pids",
        type=_pids,
        metavar="SEL",
        help="programs whose values are kept: all, 3, 0:4, 1,0,0, or several joined by ';' (default all).",
    )
    @argument(
        "--budget",
        type=_budget,
        metavar="BYTES",
        help="bytes of values kept per launch, e.g. 512M, 1G, 1000000; programs past it keep summaries.",
    )
    @argument(
        "--no-capture",
        dest="capture",
        action="store_const",
        const=False,
        help="record no statement values, only memory events, findings and outputs.",
    )
    @argument(
        "--launch",
        type=int,
        metavar="N",
        help="interpret only the N-th launch (0-based); others run as usual.",
    )
    @argument(
        "--break",
        dest="breakpoints",
        type=int,
        action="append",
        metavar="LINE",
        help="stop in the debugger at this line of the kernel's source (may be repeated).",
    )
    @argument(
        "--pid",
        dest="break_pid",
        type=_one_pid,
        metavar="PID",
        help="with --break: stop only in this program, e.g. 1,0,0.",
    )
    @argument(
        "--numerics",
        choices=("gpu", "stock"),
        help="gpu: compute what an NVIDIA GPU computes (tf32 dots, bf16/fp8 rounding, saturating casts; "
        "the default); stock: Triton's interpreter as it is.",
    )
    @argument(
        "--poison",
        metavar="ARGS",
        help="comma-separated array arguments to treat as uninitialised: filled with NaN (integers: their "
        "maximum) before the launch; reads of elements nothing wrote are reported.",
    )
    @argument(
        "--order",
        choices=("serial", "reverse", "shuffle"),
        help="the order programs run in; reverse or shuffle expose programs that depend on each other.",
    )
    @argument("--seed", type=int, metavar="N", help="with --order shuffle: the shuffle's seed.")
    @argument(
        "--no-detect",
        dest="detect",
        action="store_const",
        const=False,
        help="run no bug detectors (NaN origin, undefined operations, races, coverage, uninitialised reads).",
    )
    @argument(
        "--serial",
        dest="strategy",
        action="store_const",
        const="serial",
        help="run programs one at a time (the reference), never batched.",
    )
    @argument("--device", type=int, metavar="N", help="gpu, compare: the CUDA device (default 0).")
    @argument(
        "--keep",
        choices=("gpu", "cpu"),
        help="compare: whose results the cell goes on with (default gpu).",
    )
    @argument("--rtol", type=float, metavar="X", help="compare: relative tolerance for every buffer.")
    @argument(
        "--atol",
        type=float,
        metavar="X",
        help="compare: absolute tolerance for every buffer (replaces the scaled one).",
    )
    @argument(
        "--ir",
        action="store_true",
        help="interpret: also compile each kernel for a CUDA target (no GPU needed) and show its IR.",
    )
    @argument(
        "--target",
        metavar="T",
        help="with --ir: the target, e.g. cuda:80 (default: this GPU's, else cuda:90).",
    )
    @argument(
        "--quiet", action="store_const", const=True, help="display nothing (the trace is still bound to _tk)."
    )
    @argument("--name", metavar="NAME", help="also bind the trace to this variable.")
    @argument(
        "--reset", action="store_true", help="line magic only: forget the defaults set by %%tkernel FLAGS."
    )
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

        ``_tk`` is bound also when the cell fails, to what the launches recorded until then. The
        value of the cell's last expression, if any, is the cell's output, as without the magic.

        ``%tkernel FLAGS`` makes FLAGS the defaults of later cells; ``%tkernel`` shows them and
        ``%tkernel --reset`` forgets them.

        ``gpu``, ``compare`` and ``interpret --ir`` are `kernel_nb.gpu.run`, `kernel_nb.gpu.compare`
        and `kernel_nb.gpu.interpret_with_ir`; `kernel_nb.magic_gpu` shows the plain Python.
        """
        __tracebackhide__ = True
        args = parse_argstring(self.tkernel, line)
        if cell is None:
            if line.strip():
                self._set_defaults(args)
            else:
                print(describe_defaults(self.defaults, quiet=self.quiet))
            return None
        if args.reset:
            raise UsageError("--reset belongs to the line magic: write %tkernel --reset on its own line")
        options = self._options(args)
        mode = args.mode or "interpret"
        quiet = self.quiet if args.quiet is None else args.quiet
        if args.name is not None and not args.name.isidentifier():
            raise UsageError(f"--name takes a variable name, got {args.name!r}")
        from kernel_nb import magic_gpu

        gpu = magic_gpu.gpu_options(mode, args)
        if mode == "interpret":
            return self._interpret(cell, options, name=args.name, quiet=quiet, ir=gpu if args.ir else None)
        return magic_gpu.run_cell(self, mode, cell, options, args, quiet=quiet)

    def _interpret(
        self, cell: str, options: Options, *, name: str | None, quiet: bool, ir: GpuOptions | None = None
    ) -> Any:
        __tracebackhide__ = True
        progress = None if quiet else Progress()
        options = dataclasses.replace(options, progress=progress)
        session = kernel_nb.interpret(options) if ir is None else GpuSession(options, ir)
        value = self._run_in(session, cell, progress, lambda: session.trace, name)
        if not quiet:
            display(_viewer(session.trace))
        return value

    def _run_in(
        self,
        session: Any,
        cell: str,
        progress: Progress | None,
        result: Callable[[], object],
        name: str | None,
    ) -> Any:
        """Run the cell inside a session; whatever happens, bind `result()` (the trace) to _tk and `name`."""
        __tracebackhide__ = True
        try:
            with session:
                return self._run_cell(cell)
        except LaunchInterrupted as exc:
            raise CellInterrupted(
                interrupted_message(exc), kernel=exc.kernel, pid=exc.pid, launch=exc.launch
            ) from exc
        finally:
            if progress is not None:
                progress.close()
            self._bind(result(), name)

    def _run_cell(self, cell: str) -> Any:
        """Execute the cell body in the user namespace; return the value of a trailing expression.

        Exceptions propagate (no traceback is printed here), so the cell fails as a whole.
        """
        __tracebackhide__ = True
        shell = self.shell
        assert shell is not None
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

    def _options(self, args: argparse.Namespace) -> Options:
        changes: dict[str, Any] = {
            key: getattr(args, key)
            for key in (
                "pids",
                "capture",
                "launch",
                "break_pid",
                "numerics",
                "order",
                "seed",
                "detect",
                "strategy",
            )
            if getattr(args, key) is not None
        }
        if args.poison is not None:
            changes["poison"] = tuple(name.strip() for name in args.poison.split(",") if name.strip())
        if args.budget is not None:
            changes["budget_bytes"] = args.budget
        if args.breakpoints is not None:
            changes["breakpoints"] = tuple(args.breakpoints)
        if args.break_pid is not None and not changes.get("breakpoints", self.defaults.breakpoints):
            raise UsageError("--pid picks the program that --break stops in: give --break LINE as well")
        try:
            return dataclasses.replace(self.defaults, **changes)
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    def _set_defaults(self, args: argparse.Namespace) -> None:
        if args.mode is not None:
            raise UsageError(
                f"%tkernel {args.mode} needs a cell: write %%tkernel {args.mode} as the cell's first line"
            )
        if args.name is not None:
            raise UsageError("--name names one cell's trace: give it to %%tkernel, not to %tkernel")
        if args.reset:
            self.defaults = Options(debugger=self.defaults.debugger)
            self.quiet = False
        self.defaults = self._options(args)
        if args.quiet is not None:
            self.quiet = args.quiet

    def _bind(self, result: object, name: str | None) -> None:
        assert self.shell is not None
        self.shell.user_ns["_tk"] = result
        if name is not None:
            self.shell.user_ns[name] = result


def describe_defaults(options: Options, *, quiet: bool) -> str:
    """What ``%tkernel`` alone prints: the defaults a ``%%tkernel`` cell starts from."""
    pids = options.pids if options.pids == "all" else ";".join(",".join(map(str, p)) for p in options.pids)
    rows = [
        ("--pids", pids),
        ("--budget", format_bytes(options.budget_bytes)),
        ("--no-capture", "off" if options.capture else "on"),
        ("--launch", "every launch" if options.launch is None else str(options.launch)),
        ("--break", ", ".join(map(str, options.breakpoints)) or "none"),
        ("--pid", "every program" if options.break_pid is None else ",".join(map(str, options.break_pid))),
        ("--quiet", "on" if quiet else "off"),
    ]
    lines = ["%%tkernel defaults (set with %tkernel FLAGS, forget with %tkernel --reset):"]
    lines += [f"  {flag:<13} {value}" for flag, value in rows]
    return "\n".join(lines)


def _viewer(trace: Trace) -> object:
    try:
        from kernel_nb.view import TraceViewer
    except ImportError:
        return trace  # the trace's own HTML table and text summary
    return TraceViewer(trace)


def _leading_blank_lines(cell: str) -> int:
    count = 0
    for text in cell.splitlines():
        if text.strip():
            break
        count += 1
    return count


def load_ipython_extension(ip: InteractiveShell) -> None:
    """Register ``%%tkernel`` and ``%tkernel`` (``%load_ext kernel_nb``); loading twice is harmless."""
    ip.register_magics(TKernelMagics)


def unload_ipython_extension(ip: InteractiveShell) -> None:
    """Remove the magics (``%unload_ext kernel_nb``, and the first half of ``%reload_ext``)."""
    manager = ip.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("tkernel", None)
    manager.registry.pop(TKernelMagics.__name__, None)
