"""The recorder that instrumented kernels call: statement values, loop iterations, helper call paths.

Full values are kept for the selected programs while the launch's capture budget lasts; every
program keeps summaries. The budget is checked as a program runs, not only when it starts: a
program starts keeping values while the bytes kept before it are under the budget, and one whose
values would take the launch past twice the budget (or the budget and `CUT_SLACK`, if more) is
cut (`cut_at`): its values are dropped, it is replayed when looked at, and no program after it
keeps values. The rewritten code calls a `FunctionProbe` (one per function per launch),
which numbers its function's statements into the launch's statement table.
"""

from __future__ import annotations

import bdb
import dataclasses
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.checks import Observations, Site, nonfinite
from kernel_nb.engine import triton_compat
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.rewrite import LocalStatement
from kernel_nb.trace import COMPANION_KINDS, Pid, ProgramTrace, Record, Statement, Summary

if TYPE_CHECKING:
    from kernel_nb.engine.shadow import ShadowRun
    from kernel_nb.options import Options

COMPANIONS = COMPANION_KINDS


# what the program that reaches a small budget may keep past it: a budget of a few KiB (set to
# have programs replayed) still keeps an ordinary first program whole
CUT_SLACK = 1 << 20


@dataclass
class _Frame:
    label: str
    loops: list[int] = field(default_factory=list)
    # per local name: (holds NaN, holds Inf) after its last assignment
    nonfinite: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # bools, or per-program arrays


class Recorder:
    """Collects one launch's records, program by program."""

    def __init__(
        self,
        options: Options,
        addresses: AddressMap,
        *,
        statements: list[Statement],
        order_of: Callable[[Pid], int],
        observations: Observations | None = None,
        on_iteration: Callable[[], None] | None = None,
    ) -> None:
        """
        Args:
            addresses: turns pointer values into element offsets of the argument they point into.
            statements: the launch's statements, which the records refer to by number.
            order_of: a program's place in the launch order.
            observations: where detectors' observations go (None: detection is off).
            on_iteration: called at every loop iteration.
        """
        self.options = options
        self.capture = options.capture
        self.budget = options.budget_bytes
        self.kept_bytes = 0
        self.kept_before = 0  # kept_bytes when the running program started
        self.spent = False  # a program was cut: the budget keeps no more programs
        self.forced = False
        self.addresses = addresses
        self.program = ProgramTrace((0, 0, 0))
        self.keep = False
        self.seq: Any = 0
        self.frames: list[_Frame] = [_Frame("")]
        self.selected: set[Pid] | None = None if options.pids == "all" else set(options.pids)
        self.statements = statements
        # what the rewrite knows of each statement, by number (the run registers functions into it)
        self.statement_info: list[LocalStatement] = []
        self.observations = observations
        self.order_of = order_of
        self.on_iteration = on_iteration

    def begin(self, pid: Pid, *, force_keep: bool = False) -> ProgramTrace:
        """Start recording a program; its values are kept if selected and the budget allows."""
        selected = self.selected is None or pid in self.selected
        self.check_budget()  # the last program's last events
        open_budget = not self.spent and self.kept_bytes < self.budget
        self.keep = force_keep or (self.capture and selected and open_budget)
        self.forced = force_keep
        self.kept_before = self.kept_bytes
        self.program = ProgramTrace(pid, kept=self.keep)
        self.seq = 0
        self.frames = [_Frame("")]
        return self.program

    def cut_at(self) -> int:
        """The kept bytes past which the running program is cut (see the module's docstring)."""
        return self.budget + max(self.budget, CUT_SLACK)

    def check_budget(self, more: int = 0) -> None:
        """Cut the running program if keeping `more` bytes of it would pass `cut_at`: its values
        go, it is no longer kept, and the budget keeps no program after it."""
        program = self.program
        if not program.kept or self.forced or self.kept_bytes + more <= self.cut_at():
            return
        for record in program.records:
            record.value = None
        for event in program.events:
            event.indices = event.mask = event.values = event.before = None
        program.kept = self.keep = False
        self.kept_bytes = self.kept_before
        self.spent = True

    def lane_rows(
        self, bad: np.ndarray
    ) -> Iterator[tuple[Pid, int, np.ndarray, Callable[[Any], np.ndarray]]]:
        """For each program with flagged lanes: its pid, its order, the lanes, and a function giving
        that program's part of an array shaped like `bad` (flattened)."""
        lanes = np.flatnonzero(np.asarray(bad).reshape(-1))
        if lanes.size:
            pid = self.program.pid
            yield pid, self.order_of(pid), lanes, lambda a: np.asarray(a).reshape(-1)

    def next_seq(self) -> Any:
        self.seq += 1
        return self.seq - 1

    @property
    def iteration(self) -> tuple[int, ...]:
        return tuple(count for frame in self.frames for count in frame.loops)

    @property
    def call_path(self) -> tuple[str, ...]:
        return tuple(frame.label for frame in self.frames[1:])

    def record(self, stmt: int, value: Any) -> None:
        extracted = self._extract(value)
        if extracted is None:
            return
        self._record_data(stmt, *extracted)

    def _record_data(
        self, stmt: int, data: np.ndarray, dtype: str, shape: tuple[int, ...], pointer_arg: str | None
    ) -> None:
        record = Record(
            stmt=stmt,
            seq=self.next_seq(),
            call_path=self.call_path,
            iteration=self.iteration,
            dtype=dtype,
            shape=shape,
            summary=Summary.of(data),
            pointer_arg=pointer_arg,
        )
        if self.keep:
            self.check_budget(data.nbytes)
        if self.keep:
            record.value = np.array(data, copy=True)
            self.kept_bytes += record.value.nbytes
        self.program.records.append(record)
        if self.observations is not None and self.statement_info[stmt].kind not in COMPANIONS:
            self._trace_nonfinite(stmt, data, record.summary)

    def repeat(self, stmt: int, after: int) -> bool:
        """Record again what the last record, of statement `after`, recorded, as statement `stmt`
        (one value that two statements hold, shared); False (nothing done) when the last record is
        not `after`'s."""
        records = self.program.records
        if not records or records[-1].stmt != after:
            return False
        last = records[-1]
        if last.value is not None:
            self.check_budget(last.value.nbytes)
            self.kept_bytes += last.value.nbytes
        records.append(dataclasses.replace(last, stmt=stmt, seq=self.next_seq()))
        return True

    def running_rows(self, data: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """`data`, a value of shape `shape` as the running programs hold it, as the programs
        that ran its statement hold it, and how many programs each of what is returned stands
        for (the batched strategy: the rows of the programs a masked loop still runs; a value one
        row holds for every program, that row, standing for all of them)."""
        return data, 1

    def record_companions(
        self, first: int, values: list[tuple[np.ndarray, str]], shape: tuple[int, ...]
    ) -> None:
        """Records of `values` (each an array of the running programs' values of shape `shape`,
        and its type's name) as statements `first`, `first + 1`, ... (a shadow's companions of a
        record: see engine/shadow.py), made for programs whose values are kept only: a program
        past the budget is replayed when looked at, companions and all. An array that is the one
        before it is recorded once, for both statements."""
        if not self.keep:
            return
        for i, (data, dtype) in enumerate(values):
            if not (i and data is values[i - 1][0] and self.repeat(first + i, after=first + i - 1)):
                self._record_values(first + i, data, dtype, shape)

    def _record_values(self, stmt: int, data: np.ndarray, dtype: str, shape: tuple[int, ...]) -> None:
        self._record_data(
            stmt, data.reshape(shape) if data.size == int(np.prod(shape)) else data, dtype, shape, None
        )

    def _trace_nonfinite(self, stmt: int, data: np.ndarray, summary: Summary) -> None:
        """Report the statement where NaN (or Inf) first appears from operands that had none."""
        info = self.statement_info[stmt]
        frame = self.frames[-1]
        has_nan, has_inf = summary.nan > 0, summary.inf > 0
        if (has_nan or has_inf) and info.kind in ("assign", "augassign"):
            seen = [frame.nonfinite.get(name, (False, False)) for name in info.operands]
            assert self.observations is not None
            pid = self.program.pid
            statement = self.statements[stmt]
            nonfinite.origin(
                self.observations,
                Site(pid, self.order_of(pid), statement.file, statement.line),
                assignment(info),
                data,
                operand_nan=any(n for n, _ in seen),
                operand_inf=any(i for _, i in seen),
            )
        frame.nonfinite[info.name] = (has_nan, has_inf)

    def _extract(self, value: Any) -> tuple[np.ndarray, str, tuple[int, ...], str | None] | None:
        if triton_compat.is_tensor(value):
            data = triton_compat.tensor_data(value)
            if not isinstance(data, np.ndarray):
                return None
            shape = triton_compat.tensor_shape(value)
            data = data.reshape(shape) if data.size == int(np.prod(shape)) else data
            type_name = triton_compat.tensor_type_name(value)
            if triton_compat.is_pointer_tensor(value):
                offsets, arg = self.addresses.offsets(data)
                return offsets, type_name, shape, arg
            if numerics.is_bits_float(type_name):  # kept as raw bits by the interpreter
                data = numerics.decode(data, type_name)
            return data, type_name, shape, None
        value = triton_compat.unwrap_constexpr(value)
        if isinstance(value, (bool, np.bool_)):
            return np.asarray(value, dtype=np.bool_), "int1", (), None
        if isinstance(value, (int, np.integer)):
            dtype = "int32" if -(2**31) <= int(value) < 2**31 else "int64"
            return np.asarray(value, dtype=np.int32 if dtype == "int32" else np.int64), dtype, (), None
        if isinstance(value, (float, np.floating)):
            return np.asarray(value, dtype=np.float32), "fp32", (), None
        return None

    def loop_enter(self, sites: tuple[int, ...] = ()) -> None:
        """A loop begins; `sites`: the statements each of its iterations records (see
        batched/loops_ahead.py), none where that is not known."""
        self.frames[-1].loops.append(-1)

    def loop_next(self) -> None:
        self.frames[-1].loops[-1] += 1
        if self.on_iteration is not None:
            self.on_iteration()

    def loop_exit(self) -> None:
        self.frames[-1].loops.pop()

    def loop_range(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """What `for x in fn(*args, **kwargs)` iterates over (fn: range or tl.range)."""
        return fn(*args, **kwargs)

    def loop_snapshot(self, names: dict[str, Any], needed: tuple[str, ...]) -> Any:
        """Called at the top of each iteration of a range loop with the function's names and
        those of them that `loop_narrow` and `loop_merge` may ask for (see BatchRecorder)."""
        return None

    def loop_narrow(self, saved: Any, names: tuple[str, ...]) -> dict[str, Any] | None:
        """Called after `loop_snapshot`: values to assign to the names the body reads, if any."""
        return None

    def loop_merge(
        self, saved: Any, names: dict[str, Any], assigned: tuple[str, ...]
    ) -> dict[str, Any] | None:
        """Called at the end of each iteration of a range loop: values to assign back, if any."""
        return None

    def push_call(self, label: str) -> None:
        self.frames.append(_Frame(label))

    def pop_call(self) -> None:
        self.frames.pop()


class FunctionProbe:
    """What one rewritten function calls; maps its statement numbers into the launch's table."""

    def __init__(
        self,
        recorder: Recorder,
        offset: int,
        breakpoint_hit: Callable[[int], bool],
        debugger: Callable[[], Any],
        *,
        shadow: ShadowRun | None = None,
        companions: int = 0,
    ) -> None:
        """`shadow`: the launch's fp64 shadow (None: none), whose companion records of the
        function's statement i are statements `companions + len(COMPANIONS) * i` on."""
        self._recorder = recorder
        self._offset = offset
        self._shadow = shadow
        self._companions = companions
        self._breakpoint_hit = breakpoint_hit
        self._debugger = debugger
        self.loop_next = recorder.loop_next
        self.loop_exit = recorder.loop_exit
        self.snapshot = recorder.loop_snapshot
        self.narrow = recorder.loop_narrow
        self.merge = recorder.loop_merge

    def loop_enter(self, sites: tuple[int, ...] = ()) -> None:
        self._recorder.loop_enter(tuple(self._offset + s for s in sites))

    def range(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._recorder.loop_range(fn, args, kwargs)

    def record(self, stmt: int, value: Any) -> None:
        if not self._recorder.capture:
            return
        shadow = self._shadow
        if shadow is None:
            self._recorder.record(self._offset + stmt, value)
        elif not shadow.inside:  # a shadow's own run of a helper (a reduction's combine) records nothing
            self._recorder.record(self._offset + stmt, value)
            shadow.record(
                self._recorder, self._offset + stmt, self._companions + len(COMPANIONS) * stmt, value
            )

    def brk(self, line: int) -> None:
        if not self._breakpoint_hit(line):
            return
        # The prompt opens right here, at the statement's line in the kernel's frame; the
        # debugger's own set_trace would first stop inside Triton's call of the statement.
        frame = sys._getframe(1)
        debugger = self._debugger()
        debugger.reset()
        outer: Any = frame
        while outer is not None:
            outer.f_trace = debugger.trace_dispatch
            debugger.botframe = outer
            outer = outer.f_back
        debugger.interaction(frame, None)
        if debugger.quitting:
            raise bdb.BdbQuit
        if debugger.stoplineno == -1:  # "continue": no tracing for the rest of the launch
            outer = frame
            while outer is not None:
                outer.f_trace = None
                outer = outer.f_back
        else:  # "next", "step", "until": trace from here on, as pdb would
            sys.settrace(debugger.trace_dispatch)


def assignment(info: LocalStatement) -> nonfinite.Assignment:
    """The facts of a statement that the NaN/Inf origin detector needs."""
    return nonfinite.Assignment(info.name, info.loads, info.makes_inf)
