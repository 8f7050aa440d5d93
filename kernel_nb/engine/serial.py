"""The serial strategy: run a launch's programs one after another on the CPU, recording everything.

`SerialRun` is also the base of the batched strategy's run, which shares its parts' wiring, its
helper calls and its error reports.
"""

from __future__ import annotations

import io
import linecache
import signal
import sys
import threading
from collections.abc import Callable, Collection
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_nb import checks
from kernel_nb.checks import Observations
from kernel_nb.checks.state import AccessState
from kernel_nb.engine import triton_compat
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.args import BoundArguments
from kernel_nb.engine.arith import ArithmeticHooks
from kernel_nb.engine.failing_line import names_on_line
from kernel_nb.engine.guard import MemoryGuard, frame_locator
from kernel_nb.engine.interrupts import InterruptWatch
from kernel_nb.engine.patches import interpreter_scope
from kernel_nb.engine.recorder import FunctionProbe, Recorder
from kernel_nb.engine.rewrite import LocalStatement, RewriteCache, RewrittenFunction
from kernel_nb.engine.shadow import COMPANIONS, ShadowRun
from kernel_nb.engine.waiting import Deadlock, Turns
from kernel_nb.errors import KernelCompileError, KernelDeadlockError, KernelError, LaunchInterrupted
from kernel_nb.options import Options
from kernel_nb.trace import Launch, Pid, SourceInfo, Statement

# programs that wait for each other take turns in threads of their own, one per program
MAX_TURNS = 1 << 16


@dataclass
class SerialRun:
    """One run of a launch's programs (or a replay of one of them), with the parts that record it."""

    fn: Callable[..., Any]
    launch: Launch
    bound: BoundArguments
    options: Options
    rewrites: RewriteCache
    interrupts: InterruptWatch
    replay: bool = False
    replay_pid: Pid | None = None  # the program a replay is for (programs in turns all run again)
    codes: set[Any] = field(default_factory=set)
    functions: dict[Any, Callable[..., Any]] = field(default_factory=dict)

    def dismantle(self) -> None:
        """Drop what the finished run's parts hold of each other and of the launch: they refer to
        one another, and as a cycle they would keep the launch's arrays until a garbage collection
        rather than until the launch is let go of."""
        for part in (self, self.guard, self.recorder, self.arith, self.shadow):
            if part is None:
                continue
            part.__dict__.clear()

    def __post_init__(self) -> None:
        self.locate = frame_locator(self.codes)
        self.addresses = AddressMap(self.bound.buffers)
        self.observations = Observations()
        self.detect = self.options.detect and not self.replay
        # a kernel that may wait for another program runs its programs in turns
        self.turns = Turns(self.locate, self.codes) if self.rewrites.waits(self.fn) else None
        self.recorder, self.guard = self._parts()
        self.shadow = (
            ShadowRun(
                self.addresses, lambda name: self.launch.snapshot[name], tf32=self.options.numerics == "gpu"
            )
            if self.options.shadow and self.options.capture
            else None
        )
        self.arith = ArithmeticHooks(
            self.recorder,
            self.locate,
            self.observations,
            faithful=self.options.numerics == "gpu",
            detect=self.detect,
        )

    def _parts(self) -> tuple[Recorder, MemoryGuard]:
        """The strategy's recorder and memory guard, built with each other."""
        observations = self.observations if self.detect else None
        recorder = Recorder(
            self.options,
            self.addresses,
            statements=self.launch.statements,
            order_of=self.launch.linear,
            observations=observations,
        )
        guard = MemoryGuard(
            self.launch,
            self.addresses,
            recorder,
            self.locate,
            state=self._state(),
            update_maps=not self.replay,
            observations=observations,
            turns=self.turns,
        )
        return recorder, guard

    def _state(self, aliases: dict[str, str] | None = None) -> AccessState:
        """The launch's race and initialisation state: nothing written yet; poisoned buffers are
        watched only with detection on."""
        buffers = self.bound.buffers
        poisoned = [b.name for b in buffers if b.poisoned] if self.detect else []
        return AccessState({b.name: b.size for b in buffers}, poisoned, aliases=aliases)

    def function(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` rewritten and bound to this launch (user functions instrumented, Triton's own not)."""
        if fn in self.functions:
            return self.functions[fn]
        user = not fn.__module__.startswith("triton.")
        instrument = user and self.options.capture
        rewritten = self.rewrites.rewritten(fn, instrument=instrument)
        offset = self._register(rewritten) if user else 0
        probe = FunctionProbe(
            self.recorder,
            offset,
            self._breakpoint_hit,
            self.options.debugger,
            shadow=self.shadow,
            companions=offset + len(rewritten.statements),
        )
        bound = rewritten.bind(fn.__globals__, probe)
        if user:
            self.codes.add(bound.__code__)
        self.functions[fn] = bound
        return bound

    def _register(self, rewritten: RewrittenFunction) -> int:
        statements = self.launch.statements
        if self.replay:
            known = [s for s in statements if s.function == rewritten.name and s.file == rewritten.file]
            if known:
                return known[0].id
        offset = len(statements)
        locals_ = list(rewritten.statements)
        count = len(locals_)
        if self.shadow is not None:  # each statement's companions follow the function's statements
            locals_ += [
                LocalStatement(s.line, s.name, kind) for s in rewritten.statements for kind in COMPANIONS
            ]
        self.recorder.statement_info.extend(locals_)
        for i, local in enumerate(locals_):
            of = None if i < count else offset + (i - count) // len(COMPANIONS)
            statements.append(
                Statement(offset + i, rewritten.file, local.line, local.name, rewritten.name, local.kind, of)
            )
        self.launch.sources.setdefault(
            rewritten.name, SourceInfo(rewritten.name, rewritten.file, rewritten.first_line, rewritten.source)
        )
        return offset

    def _breakpoint_hit(self, line: int) -> bool:
        wanted = self.options.break_pid
        return wanted is None or wanted == self.recorder.program.pid

    def call(self, jit_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        fn = jit_fn.fn
        if fn not in self.functions:
            self.rewrites.note_source(jit_fn)
        target = self.function(fn)
        if fn.__module__.startswith("triton."):
            return target(*args, **kwargs)
        _, line = self.locate()
        self.recorder.push_call(f"{fn.__name__}:{line}")
        try:
            return target(*args, **kwargs)
        finally:
            self.recorder.pop_call()

    def run(self, order: Collection[Pid]) -> None:
        launch = self.launch
        progress = self.options.progress
        if self.turns is not None and len(order) > MAX_TURNS:
            raise ValueError(
                f"{launch.kernel}: grid {launch.grid} has {len(order)} programs that may wait for each "
                f"other; at most {MAX_TURNS} can take turns (each runs in a thread of its own): launch "
                "a smaller grid"
            )
        tee = _Tee(sys.stdout)
        sys.stdout = tee
        # pdb's "continue" installs its own Ctrl-C handler; a breakpoint must not leave it behind
        sigint = signal.getsignal(signal.SIGINT) if _main_thread() else None
        pid: Pid | None = None
        try:
            with (
                interpreter_scope(self.call) as b,
                self.guard.installed(b),
                self.arith.installed(b),
                self.shadow.installed(b) if self.shadow is not None else nullcontext(),
            ):
                kernel = self.function(self.fn)
                values = self.bound.values
                triton_compat.set_grid(b, launch.grid)

                def run_program(program_id: Pid) -> None:
                    nonlocal pid
                    pid = program_id
                    triton_compat.set_program(b, program_id)
                    wanted = not self.replay or program_id == self.replay_pid
                    program = self.recorder.begin(program_id, force_keep=self.replay and wanted)
                    tee.parts = []
                    try:
                        kernel(**values)
                    finally:
                        program.stdout = "".join(tee.parts)
                        if self.replay:
                            if wanted:
                                launch.programs[program_id] = program
                        else:
                            launch.add_program(program, self.options.summary_bytes)

                if self.turns is None:
                    for done, program_id in enumerate(order):
                        run_program(program_id)
                        if progress is not None:
                            _report_progress(progress, done + 1, len(order))
                else:
                    self._take_turns(run_program, tee, order, progress)
        except Deadlock as stuck:
            error = self._deadlock(stuck)
            self._fail(error)
            raise error from None
        except _CallbackError as failed:
            raise failed.error from None
        except KernelError as error:
            self._fail(error)
            raise
        except KeyboardInterrupt:
            raise self._interrupted(self._running(pid)) from None
        except Exception as exc:
            pid = self._running(pid)
            if self.interrupts.seen:  # Ctrl-C that a library turned into an error of its own
                raise self._interrupted(pid) from None
            file, line = _kernel_frame(exc, self.codes)
            where = f"{launch.kernel}:{line}" if line else launch.kernel
            pid_text = "" if pid is None else f" pid=({pid[0]},{pid[1]},{pid[2]})"
            kind = KernelCompileError if _compile_time(exc, self.codes) else KernelError
            wrapped = kind(
                f"{where}{pid_text}: {type(exc).__name__}: {exc}{_arguments_on_line(launch, file, line)}",
                kernel=launch.kernel,
                file=file,
                line=line,
                pid=pid,
            )
            self._fail(wrapped)
            raise wrapped from exc
        finally:
            sys.stdout = tee.target
            if not self.replay:
                checks.finish(launch, self.observations)
            if sigint is not None and signal.getsignal(signal.SIGINT) is not sigint:
                signal.signal(signal.SIGINT, sigint)

    def _running(self, started: Pid | None) -> Pid | None:
        """The program that was running: with turns, the one whose state is in place (the last to
        start may be waiting while an earlier one fails)."""
        return self.recorder.program.pid if self.turns is not None and started is not None else started

    def _take_turns(
        self,
        run_program: Callable[[Pid], None],
        tee: _Tee,
        order: Collection[Pid],
        progress: Callable[[int, int], None] | None,
    ) -> None:
        """Run the programs in turns (see `waiting.Turns`): each turn's recorder, prints and program
        id are put aside while the others run."""
        assert self.turns is not None
        recorder, b = self.recorder, triton_compat.builder()

        def save() -> Any:
            return (
                recorder.program,
                recorder.keep,
                recorder.kept_before,
                recorder.seq,
                recorder.frames,
                tee.parts,
            )

        def restore(state: Any) -> None:
            program, keep, before, recorder.seq, recorder.frames, tee.parts = state
            recorder.program, recorder.keep, recorder.kept_before = program, keep, before
            triton_compat.set_program(b, recorder.program.pid)

        report = None if progress is None else (lambda done: _report_progress(progress, done, len(order)))
        try:
            self.turns.run(list(order), run_program, save, restore, report)
        finally:
            if not self.replay:  # a replay's turns are the launch's again
                self._note_turns(self.turns.turns)

    def _note_turns(self, turns: list[Any]) -> None:
        self.launch.turns = [(t.pid, t.line) for t in turns]
        waited = sum(t.line is not None for t in turns)
        if waited:
            self.launch.strategy_note = f"programs took turns: {waited} waited for another program" + (
                "" if waited == 1 else "s"
            )

    def _deadlock(self, stuck: Deadlock) -> KernelError:
        launch = self.launch
        shown = [
            f"({p[0]},{p[1]},{p[2]}) at line {line}" for p, (_file, line) in list(stuck.waiting.items())[:6]
        ]
        more = f" and {len(stuck.waiting) - 6} more" if len(stuck.waiting) > 6 else ""
        first_pid, (file, line) = next(iter(stuck.waiting.items()))
        return KernelDeadlockError(
            f"{launch.kernel}:{line}: deadlock: {len(stuck.waiting)} program"
            f"{'s' * (len(stuck.waiting) != 1)} wait for memory that no program of the launch will "
            f"write ({', '.join(shown)}{more}; {stuck.finished} finished); on the GPU they would spin "
            "forever",
            kernel=launch.kernel,
            file=file or None,
            line=line or None,
            pid=first_pid,
        )

    def _interrupted(self, pid: Pid | None) -> LaunchInterrupted:
        self.interrupts.hold_rest()  # the undoing that follows must not be cut short by another press
        launch = self.launch
        launch.status, launch.error = "interrupted", "interrupted"
        return LaunchInterrupted(
            f"{launch.kernel}: interrupted at pid={pid}; the arrays are unchanged",
            kernel=launch.kernel,
            pid=pid,
            launch=launch,
        )

    def _fail(self, error: KernelError) -> None:
        self.launch.status, self.launch.error = "error", error.message
        error.launch = self.launch
        if error.file and error.line and error.source_line is None:
            error.source_line = linecache.getline(error.file, error.line) or None


class _CallbackError(Exception):
    """An error of the caller's progress callback: not the kernel's, so passed on as it is."""

    def __init__(self, error: Exception) -> None:
        self.error = error


def _report_progress(progress: Callable[[int, int], None], done: int, total: int) -> None:
    try:
        progress(done, total)
    except Exception as exc:
        raise _CallbackError(exc) from exc


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Tee(io.TextIOBase):
    """Passes a program's prints through and keeps a copy for its ProgramTrace."""

    def __init__(self, target: Any) -> None:
        self.target = target
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return self.target.write(text)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.target, "isatty", lambda: False)())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", "utf-8")


def _kernel_frame(exc: BaseException, codes: set[Any]) -> tuple[str | None, int | None]:
    found: tuple[str | None, int | None] = (None, None)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


_LANGUAGE = triton_compat.LANGUAGE_DIR
_MACHINERY = (str(Path(__file__).resolve().parents[1]), triton_compat.RUNTIME_DIR)


def _compile_time(exc: BaseException, codes: set[Any]) -> bool:
    """Whether Triton's compiler would have raised `exc` while compiling: it comes from the kernel's
    own Python or from triton.language's checks, not from the interpreter's or kernel_nb's machinery
    (which stand in for the GPU at run time, where a compiled kernel raises nothing)."""
    if isinstance(exc, triton_compat.CompileTimeError):
        return True
    tb, last = exc.__traceback__, None
    while tb is not None:
        file = tb.tb_frame.f_code.co_filename
        if tb.tb_frame.f_code in codes or file.startswith(_LANGUAGE):
            last = True
        elif file.startswith(_MACHINERY):
            last = False
        tb = tb.tb_next
    return bool(last)


def _arguments_on_line(launch: Launch, file: str | None, line: int | None) -> str:
    """The non-array arguments the failing line reads, e.g. "; on this line src_ptr is 7 (an int
    scalar), not an array": a value of the wrong kind fails far from where it was passed. Where the
    line loads or stores, only the arguments in the pointer are named."""
    if not file or not line:
        return ""
    pointers, everything = names_on_line(file, line)
    names = pointers or everything
    shown = [
        f"{info.name} is {info.value!r} ({_kind_text(info)})"
        for info in launch.args
        if info.name in names and info.kind in ("scalar", "none", "other")
    ]
    if not pointers:  # a 0-d array for a scalar: the kernel receives a pointer to it
        shown += [
            f"{info.name} is a 0-d {info.dtype} array, which the kernel receives as a pointer (pass "
            "int(x) or float(x) for a number)"
            for info in launch.args
            if info.name in names and info.kind == "buffer" and info.shape == ()
        ]
    if not shown:
        return ""
    return f"; on this line {', '.join(shown)}" + (", not an array" if pointers else "")


def _kind_text(info: Any) -> str:
    if info.kind == "none":
        return "None"
    if info.kind == "scalar":
        return f"an {info.dtype} scalar" if info.dtype == "int" else f"a {info.dtype} scalar"
    return "not a number or an array"
