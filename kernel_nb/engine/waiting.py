"""Programs that wait for each other: spin loops found in the source, and the turns they take.

A kernel can wait for memory another program of the launch writes: a `while` loop around an atomic
(a lock taken with `atomic_cas`, a split-K semaphore counted with `atomic_add`), around a load of a
flag, or `tl.atomic_poll`. On the GPU the programs run at once; programs run one after another
would spin forever when the waiter runs first. `waits(fn)` finds such loops before a launch runs
(in the kernel and the @triton.jit helpers it calls), and `Turns` lets the programs of a launch take
turns: each runs until it waits, then the next program in order runs, round robin, until all
finish. A program waits when it reads the same memory twice with the same result, nothing written
in between, and the kernel's own variables as they were (a loop that counts is not waiting). When
every program left is waiting and none can change memory any more, that is a deadlock, reported
instead of hanging.
"""

from __future__ import annotations

import ast
import ctypes
import inspect
import sys
import textwrap
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb.engine import triton_compat
from kernel_nb.engine.ast_nodes import walk
from kernel_nb.trace import Pid

_FOUND: dict[tuple[Any, Callable[..., Any]], tuple[int | None, tuple[Any, ...]]] = {}
_FOUND_LIMIT = 256


def _loops_in(
    fn: Callable[..., Any], own: tuple[list[str], int] | None
) -> tuple[int | None, tuple[Any, ...]]:
    """The first `while` line of `fn` (or of atomic_poll's use) and the user helpers it names, with
    their JITFunctions; `own`: fn's lines as its JITFunction read them (see `own_source`)."""
    key = (fn.__code__, fn)
    found = _FOUND.get(key)
    if found is None:
        found = _FOUND[key] = _find_loops(fn, own)
        if len(_FOUND) > _FOUND_LIMIT:
            del _FOUND[next(iter(_FOUND))]
    return found


def _find_loops(
    fn: Callable[..., Any], own: tuple[list[str], int] | None
) -> tuple[int | None, tuple[Any, ...]]:
    try:
        text = inspect.getsource(fn) if own is None else "".join(own[0])
        tree = ast.parse(textwrap.dedent(text))
    except (OSError, TypeError, SyntaxError):
        return None, ()
    start = fn.__code__.co_firstlineno - 1
    line = None
    helpers = []
    for node in walk(tree):
        if isinstance(node, ast.While | ast.Attribute):
            if line is None and (isinstance(node, ast.While) or node.attr == "atomic_poll"):
                line = node.lineno + start
        elif isinstance(node, ast.Name):
            value = fn.__globals__.get(node.id)
            if isinstance(value, triton_compat.JIT_TYPES) and not value.fn.__module__.startswith("triton."):
                helpers.append(value)
    return line, tuple(helpers)


def waits(fn: Callable[..., Any], own: tuple[list[str], int] | None = None) -> str | None:
    """Where `fn` (or a helper it calls) may wait for another program, in words; None if it cannot.
    `own`: fn's lines as its JITFunction read them, if known."""
    seen: set[Any] = set()
    pending = [(fn, own)]
    while pending:
        current, lines = pending.pop()
        if current.__code__ in seen:
            continue
        seen.add(current.__code__)
        line, helpers = _loops_in(current, lines)
        if line is not None:
            return f"{current.__name__}:{line} loops until memory changes (programs may wait for each other)"
        pending.extend((helper.fn, triton_compat.own_source(helper)) for helper in helpers)
    return None


def _variables(codes: set[Any]) -> bytes:
    """The values of the variables of every kernel and helper frame running now, as bytes."""
    parts = []
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code in codes:
            for name, value in frame.f_locals.items():
                handle = getattr(value, "handle", None)
                data = getattr(handle, "data", None)
                if isinstance(data, np.ndarray):
                    parts.append(name.encode() + data.tobytes())
                elif isinstance(value, int | float | bool):
                    parts.append(f"{name}={value!r}".encode())
        frame = frame.f_back  # type: ignore[assignment]
    return b"\0".join(parts)


class Deadlock(Exception):
    """Every program left waits for memory that none of them will write."""

    def __init__(self, waiting: dict[Pid, tuple[str, int]], finished: int) -> None:
        super().__init__("deadlock")
        self.waiting = waiting
        self.finished = finished


class _Cancelled(BaseException):
    """Ends a program's thread when the launch stops (an error elsewhere, Ctrl-C)."""


@dataclass
class Turn:
    """One turn of a program: it ran until it finished or waited (at `line`)."""

    pid: Pid
    waited: bool
    line: int | None = None


@dataclass
class _Program:
    pid: Pid
    thread: threading.Thread | None = None
    go: threading.Event = field(default_factory=threading.Event)
    state: Any = None  # what the launch keeps of it while it is not running (see Turns.run)
    polls: dict[Any, tuple[int, bytes, bytes]] = field(default_factory=dict)  # site → what it saw
    error: BaseException | None = None
    done: bool = False
    waiting_at: tuple[str, int] | None = None
    cancelled: bool = False


class Turns:
    """Runs a launch's programs in turns, each in a thread of its own that holds the only turn.

    The memory guard calls `polled` after every load and atomic and `changed` after every write that
    changed memory; `locate()` says where the running program is; `codes` are the kernel's and its
    helpers' code objects, whose variables tell a waiting loop from one that makes progress.
    """

    def __init__(self, locate: Callable[[], tuple[str, int]], codes: set[Any]) -> None:
        self.locate = locate
        self.codes = codes
        self.run_program: Callable[[Pid], None] = lambda pid: None
        self.save: Callable[[], Any] = lambda: None
        self.restore: Callable[[Any], None] = lambda state: None
        self.changes = 0
        self.turns: list[Turn] = []
        self._current: _Program | None = None
        self._back = threading.Event()

    # -- called from the running program's thread --------------------------------------------------

    def changed(self) -> None:
        self.changes += 1

    def polled(self, site: Any, values: Any) -> None:
        """A load or atomic of the running program returned `values`: the second identical poll of
        a site, with no memory written and the kernel's variables unchanged since the first, is a
        wait, and gives the turn away."""
        program = self._current
        if program is None:
            return
        data = values.tobytes() if hasattr(values, "tobytes") else repr(values).encode()
        seen = (self.changes, data, _variables(self.codes))
        if program.polls.get(site) != seen:
            program.polls[site] = seen
            return
        program.waiting_at = self.locate()
        self._give_turn_away(program)
        program.waiting_at = None

    def _give_turn_away(self, program: _Program) -> None:
        program.state = self.save()
        self._back.set()
        program.go.wait()
        program.go.clear()
        if program.cancelled:
            raise _Cancelled
        self.restore(program.state)
        self._current = program

    # -- called from the launch's thread -----------------------------------------------------------

    def run(
        self,
        order: list[Pid],
        run_program: Callable[[Pid], None],
        save: Callable[[], Any],
        restore: Callable[[Any], None],
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Run every program of `order` to its end, in turns.

        `run_program(pid)` runs one program to its end in the calling thread; `save()` and
        `restore(state)` move the launch's per-program state (recorder, builder, prints) out of the
        way and back when programs take turns.

        Raises:
            Deadlock: the programs left all wait and none can write.
            the first exception a program raised (the others are stopped first).
        """
        self.run_program, self.save, self.restore = run_program, save, restore
        programs = {pid: _Program(pid) for pid in order}
        queue = deque(order)
        finished = 0
        quiet: set[Pid] = set()  # programs that waited since memory last changed
        try:
            while queue:
                program = programs[queue.popleft()]
                before = self.changes
                self._take(program)
                if program.error is not None:
                    raise program.error
                if program.done:
                    finished += 1
                    quiet.clear()
                    self.turns.append(Turn(program.pid, False))
                    if progress is not None:
                        progress(finished)
                    continue
                line = program.waiting_at[1] if program.waiting_at else None
                self.turns.append(Turn(program.pid, True, line))
                if self.changes != before:
                    quiet.clear()
                quiet.add(program.pid)
                queue.append(program.pid)
                started_all = all(programs[p].thread is not None for p in queue)
                if started_all and quiet >= set(queue):
                    waiting = {p: programs[p].waiting_at or ("", 0) for p in queue}
                    raise Deadlock(waiting, finished)
        finally:
            self._stop(programs)

    def _take(self, program: _Program) -> None:
        """Give `program` the turn and wait until it finishes or waits."""
        self._back.clear()
        self._current = program
        if program.thread is None:
            program.thread = threading.Thread(
                target=self._body, args=(program,), name=f"kernel_nb program {program.pid}", daemon=True
            )
            program.thread.start()
        else:
            program.go.set()
        self._back.wait()
        self._current = None

    def _body(self, program: _Program) -> None:
        try:
            self.run_program(program.pid)
            program.done = True
        except _Cancelled:
            return
        except BaseException as exc:  # handed to the launch's thread, which raises it
            program.error = exc
        finally:
            if not program.cancelled:
                program.state = None
                self._back.set()

    def _stop(self, programs: dict[Pid, _Program]) -> None:
        """End every program thread that is still alive (waiting, or running when Ctrl-C came)."""
        for program in programs.values():
            thread = program.thread
            if thread is None or not thread.is_alive():
                continue
            program.cancelled = True
            if program is self._current and thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(thread.ident), ctypes.py_object(_Cancelled)
                )
            program.go.set()
        for program in programs.values():
            if program.thread is not None:
                program.thread.join(timeout=10)
        self._current = None
