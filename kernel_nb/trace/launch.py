"""A launch and a trace of launches: per-program records, save / load, text and HTML summaries."""

from __future__ import annotations

import html
import pickle
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kernel_nb.trace.aggregates import Aggregate, folded_past, held_bytes, held_bytes_each
from kernel_nb.trace.buffer_map import BufferMap
from kernel_nb.trace.columns import RecordBlock
from kernel_nb.trace.compare import Comparison, Divergence
from kernel_nb.trace.program import BatchPrograms, ProgramTable, ProgramTrace
from kernel_nb.trace.records import (
    COMPANION_KINDS,
    ArgumentInfo,
    Artifacts,
    Finding,
    Pid,
    Record,
    SourceInfo,
    Statement,
    as_pid,
)
from kernel_nb.trace.reproducer import write_pytest
from kernel_nb.trace.statement_errors import StatementErrors

_MAGIC = b"kernel_nb-trace\x00"
_FORMAT = 1
# Older saved traces name the comparison classes by the modules that defined them then.
_FORMER_MODULES = {"kernel_nb.diff": "kernel_nb.trace", "kernel_nb.divergence": "kernel_nb.trace"}


@dataclass(frozen=True)
class Precision:
    """One value of one program against the fp64 shadow (`Launch.precision`).

    Attributes:
        name, dtype: the variable and its Triton type.
        value: the value the kernel computed, as fp64.
        shadow: the same value computed in fp64 from the launch's inputs.
        absolute, relative: |value - shadow|, and that over |shadow|.
        ulps: |value - shadow| in units in the last place of `dtype`.
        own_ulps: the error the statement's own arithmetic made, given the values it read, in
            ulps: where it is small and `ulps` large, the error came in with the operands.
    """

    name: str
    dtype: str
    value: np.ndarray
    shadow: np.ndarray
    absolute: np.ndarray
    relative: np.ndarray
    ulps: np.ndarray
    own_ulps: np.ndarray


@dataclass
class Launch:
    """One kernel launch, interpreted.

    Attributes:
        index: position in the trace.
        kernel: the kernel's name.
        grid: the launch grid, padded to three axes.
        args: the arguments, in signature order.
        statements: every recorded place, indexed by `Statement.id`.
        sources: the kernel's and its helpers' source, by function name.
        programs: per program id, what it recorded (summaries for all, values for the kept ones),
            for the programs that ran before the launch held `Options.summary_bytes` of summaries.
        aggregated: how many programs ran after that: their summaries are folded into
            `aggregates`, per statement, and `program` replays them when asked.
        aggregates: per statement id, the aggregated programs' summaries combined.
        summary_bytes: the bytes of summaries `programs` holds (see trace/aggregates).
        buffers: launch-wide access maps per buffer argument.
        findings: what the detectors found; a failed launch's error comes first (kind
            `LAUNCH_ERROR`, with the failing program, line, argument and loop iteration).
        status: "ok", "error" or "interrupted".
        error: the error's message when the launch failed.
        duration_s: wall time of the launch.
        budget_bytes: the capture budget the launch ran under; kept_bytes what it kept.
        snapshot: the launch's buffer arguments as they were before it ran (for replay).
        strategy: "batched" (programs run together) or "serial" (one after another).
        strategy_note: why the serial strategy ran, when it did.
        turns: for programs that wait for each other (spin loops), the turns they took in order:
            (pid, None) for a turn that ran to the program's end, (pid, line) for one that ended
            waiting at that line; empty when programs ran one after another.
        artifacts: the compiled kernel's IR (`%%tkernel compare`, `%%tkernel interpret --ir`).
        shadow: the shadow the launch ran with ("fp64": see `Options.shadow`), or None.
        references: with a shadow, per buffer argument the launch stored floats into, its elements
            in fp64 as the shadow computed them (see `reference`).
        errors: with a shadow, per float statement its largest value and errors over every
            program and iteration, whether its values were kept or not (see StatementErrors).
        kernel_globals: what the kernel's and its helpers' source read from their modules, as
            data (see engine/kernel_globals): a standalone test of the launch carries them
            (`to_pytest`).
        jit, grid_spec: the kernel (its JITFunction) and the grid as the caller gave them (a
            tuple, or a function of the arguments), to launch it again with other arguments
            (`kernel_nb.minimize`); not saved.
        comparison: the launch against its compiled run on the GPU (`%%tkernel compare`).
        divergence: statement by statement, where chosen programs first compute something else on
            the GPU (`%%tkernel compare` with chosen programs or a mismatch).
    """

    index: int
    kernel: str
    grid: Pid
    args: list[ArgumentInfo]
    statements: list[Statement] = field(default_factory=list)
    sources: dict[str, SourceInfo] = field(default_factory=dict)
    programs: MutableMapping[Pid, ProgramTrace] = field(default_factory=ProgramTable)
    aggregated: int = 0
    aggregates: dict[int, Aggregate] = field(default_factory=dict)
    summary_bytes: int = 0
    buffers: dict[str, BufferMap] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    status: Literal["ok", "error", "interrupted"] = "ok"
    error: str | None = None
    duration_s: float = 0.0
    budget_bytes: int = 0
    kept_bytes: int = 0
    snapshot: Mapping[str, np.ndarray] = field(default_factory=dict)
    strategy: str = "serial"
    strategy_note: str = ""
    turns: list[tuple[Pid, int | None]] = field(default_factory=list)
    replayer: Callable[[Pid], ProgramTrace] | None = field(default=None, repr=False, compare=False)
    artifacts: Artifacts | None = field(default=None, repr=False)
    comparison: Comparison | None = field(default=None, repr=False)
    divergence: Divergence | None = field(default=None, repr=False)
    shadow: str | None = None
    references: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    errors: dict[int, StatementErrors] = field(default_factory=dict, repr=False)
    kernel_globals: dict[str, tuple[str, Any]] = field(default_factory=dict, repr=False)
    jit: Any = field(default=None, repr=False, compare=False)
    grid_spec: Any = field(default=None, repr=False, compare=False)

    @property
    def num_programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def linear(self, pid: Pid) -> int:
        """Linear program index, x fastest (the order the serial engine runs programs in)."""
        return pid[0] + self.grid[0] * (pid[1] + self.grid[1] * pid[2])

    def pid_of(self, linear: int) -> Pid:
        gx, gy = self.grid[0], self.grid[1]
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def program(self, pid: int | tuple[int, ...]) -> ProgramTrace:
        """The program's trace, with values: replayed from the snapshot when they were not kept
        (or when only its aggregates were: see `aggregated`).

        Raises:
            KeyError: the program did not run (outside the grid, or the launch failed earlier).
        """
        key = as_pid(pid)
        if self.aggregated_only(key) and self.replayer is not None:
            replayed = self.replayer(key)
            # held by the caller only: the launch's programs stay within their bytes
            self.programs.pop(key, None)
            return replayed
        program = self.programs[key]
        if program.kept or self.replayer is None:
            return program
        replayed = self.replayer(key)
        self.programs[key] = replayed
        return replayed

    def aggregated_only(self, pid: Pid) -> bool:
        """Whether `pid` ran and only its aggregates were kept (every program of a launch that
        finished ran; one past the limit of a launch that stopped early may not have)."""
        inside = all(0 <= p < g for p, g in zip(pid, self.grid)) and pid not in self.programs
        return inside and bool(self.aggregated) and self.status == "ok"

    def add_program(self, program: ProgramTrace, limit: int) -> None:
        """Keep a program that ran: whole while the launch's summaries stay within `limit` bytes,
        else as per-statement aggregates (its values too, if kept, are then dropped: programs
        that record nothing are kept whatever the capture budget, and would grow without end)."""
        cost = held_bytes(len(program.records))
        if self.summary_bytes + cost <= limit:
            self.summary_bytes += cost
            self.programs[program.pid] = program
            return
        self.aggregated += 1
        for record in program.records:
            self._aggregate(record.stmt).add(record.summary)

    def sort_programs(self) -> None:
        """Put the programs in program order, making none."""
        self._program_table().ordered(self.linear)

    def _program_table(self) -> ProgramTable:
        """`programs` as a ProgramTable (a trace saved with a dict of them holds a dict)."""
        if not isinstance(self.programs, ProgramTable):
            self.programs = ProgramTable(self.programs.items())
        return self.programs

    def add_batches(self, batches: list[tuple[BatchPrograms, list[RecordBlock]]], limit: int) -> None:
        """`add_program` for the programs of batches, whose records are the rows of their blocks:
        the aggregated ones fold in a column at a time. The limit goes to the programs in program
        order, also where a divergence split a batch into groups that ran in turn."""
        costs = []
        for programs, blocks in batches:
            counts = np.zeros(len(programs), np.int64)
            for block in blocks:
                counts += 1 if block.rows is None else block.rows
            costs.append(held_bytes_each(counts))

        def order() -> list[tuple[int, int]]:
            taken = [(i, r) for i, (programs, _) in enumerate(batches) for r in range(len(programs))]
            if len(batches) > 1:
                taken.sort(key=lambda at: self.linear(batches[at[0]][0].pids[at[1]]))
            return taken

        self.summary_bytes, folded = folded_past(limit, self.summary_bytes, costs, order)
        table = self._program_table()
        for (programs, blocks), fold in zip(batches, folded):
            if not fold.any():
                table.add_rows(programs)
            else:
                table.add_rows(programs, np.flatnonzero(~fold))
                self.aggregated += int(fold.sum())
                for block in blocks:
                    self._aggregate(block.stmt).add_rows(block, fold)

    def _aggregate(self, stmt: int) -> Aggregate:
        if stmt not in self.aggregates:
            self.aggregates[stmt] = Aggregate(stmt)
        return self.aggregates[stmt]

    def aggregate_text(self) -> str:
        """What the launch kept of its aggregated programs, a line per statement ("" if none)."""
        if not self.aggregated:
            return ""
        lines = [
            f"{self.kernel}: {self.aggregated} of {len(self.programs) + self.aggregated} programs kept "
            "per-statement aggregates only (past Options.summary_bytes); program(pid) replays one"
        ]
        for stmt, aggregate in sorted(self.aggregates.items()):
            statement = self.statements[stmt]
            lines.append(f"  line {statement.line} {aggregate.text(statement.name)}")
        return "\n".join(lines)

    def records(
        self, pid: int | tuple[int, ...], name: str | None = None, line: int | None = None
    ) -> list[Record]:
        """Records of one program, optionally only those of a variable name and/or a line."""
        program = self.program(pid)
        return [r for r in program.records if self._matches(r.stmt, name, line)]

    def value(
        self, pid: int | tuple[int, ...], name: str, iteration: tuple[int, ...] | None = None
    ) -> np.ndarray:
        """The value a variable had after its last assignment (at an iteration, if given).

        Raises:
            KeyError: no such record.
        """
        matches = [r for r in self.records(pid, name=name) if iteration is None or r.iteration == iteration]
        if not matches:
            raise KeyError(f"{self.kernel}: no record of {name!r} in program {as_pid(pid)}")
        value = matches[-1].value
        assert value is not None
        return value

    def statement(self, stmt: int) -> Statement:
        return self.statements[stmt]

    def _matches(self, stmt: int, name: str | None, line: int | None, kind: str | None = None) -> bool:
        s = self.statements[stmt]
        if kind is None and s.kind in COMPANION_KINDS:
            return False
        return (
            (name is None or s.name == name)
            and (line is None or s.line == line)
            and (kind is None or s.kind == kind)
        )

    def companions(self, stmt: int) -> tuple[int, ...]:
        """The ids of statement `stmt`'s shadow companions, in COMPANION_KINDS order (empty
        without a shadow); records of them follow each float record of `stmt` in that order."""
        return tuple(s.id for s in self.statements if s.of == stmt)

    def reference(self, name: str) -> np.ndarray:
        """An fp64 reference for buffer argument `name`: its elements after the launch as the fp64
        shadow computed what was stored (elements nothing stored keep their inputs), shaped as
        the argument. Needs a launch run with `shadow="fp64"`.

        Raises:
            ValueError: the launch ran without a shadow.
            KeyError: `name` is not a buffer argument.
        """
        if self.shadow is None:
            raise ValueError(f"{self.kernel}: the launch ran without a shadow; run it with shadow='fp64'")
        info = next((a for a in self.args if a.name == name and a.kind == "buffer"), None)
        if info is None:
            raise KeyError(f"{self.kernel}: {name!r} is not a buffer argument")
        values = self.references.get(name)
        if values is None:
            values = np.asarray(self.snapshot[name]).astype(np.float64)
        return values.reshape(info.shape) if values.size == int(np.prod(info.shape)) else values

    def precision(
        self, pid: int | tuple[int, ...], name: str, iteration: tuple[int, ...] | None = None
    ) -> Precision:
        """How precise a variable was after its last assignment in a program (at an iteration, if
        given), against the fp64 shadow. Needs a launch run with `shadow="fp64"` and the program's
        values kept (a program past the budget is replayed).

        Raises:
            ValueError: the launch ran without a shadow.
            KeyError: no such record, or the variable is not a float value.
        """
        if self.shadow is None:
            raise ValueError(f"{self.kernel}: the launch ran without a shadow; run it with shadow='fp64'")
        program = self.program(pid)

        def last(kind: str | None) -> Record:
            found = [
                r
                for r in program.records
                if self._matches(r.stmt, name, None, kind) and (iteration is None or r.iteration == iteration)
            ]
            if not found:
                raise KeyError(f"{self.kernel}: no {kind or 'record'} of {name!r} in program {as_pid(pid)}")
            return found[-1]

        record = last(None)
        parts = [last(kind) for kind in COMPANION_KINDS]
        if any(p.stmt - parts[0].stmt != i for i, p in enumerate(parts)) or record.value is None:
            raise KeyError(f"{self.kernel}: {name!r} in program {as_pid(pid)} has no fp64 shadow")
        shadow, ulps, own = (p.value for p in parts)
        assert shadow is not None and ulps is not None and own is not None
        value = np.asarray(record.value, dtype=np.float64)
        with np.errstate(all="ignore"):
            absolute = np.abs(value - shadow)
            relative = np.where(absolute == 0, 0.0, absolute / np.abs(shadow))
        return Precision(name, record.dtype, value, shadow, absolute, relative, ulps, own)

    def to_pytest(self, path: str | Path, finding: Finding | None = None) -> tuple[Path, Path]:
        """Write a standalone pytest file that reproduces the launch's failure, with its inputs beside
        it in an .npz (see `trace.reproducer.write_pytest`).

        Args:
            path: the .py file, or a directory to write `test_<kernel>_repro.py` in.
            finding: the finding to reproduce; by default the first error, else the first finding.

        Returns:
            The test file and the .npz.

        Raises:
            ValueError: no finding, or a part of the launch a standalone file cannot carry.
        """
        return write_pytest(self, path, finding=finding)

    def summary_row(self) -> dict[str, Any]:
        records = sum(len(p.records) for p in self.programs.values())
        records += sum(a.records for a in self.aggregates.values())
        kept = sum(len(p.records) for p in self.programs.values() if p.kept)
        return {
            "kernel": self.kernel,
            "grid": self.grid,
            "programs": len(self.programs) + self.aggregated,
            "aggregated": self.aggregated,
            "records": records,
            "records_kept": kept,
            "time_s": self.duration_s,
            "findings": len(self.findings),
            "status": self.status,
        }

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        # the kernel function and what holds it: not data
        state["replayer"] = state["jit"] = state["grid_spec"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # traces saved before aggregates existed kept every program
        self.__dict__.update(
            {
                "aggregated": 0,
                "aggregates": {},
                "summary_bytes": 0,
                "kernel_globals": {},
                "jit": None,
                "grid_spec": None,
                **state,
            }
        )


@dataclass
class Trace:
    """All launches of one interpreted run (a cell, or a `with kernel_nb.interpret()` block)."""

    launches: list[Launch] = field(default_factory=list)

    def __iter__(self) -> Iterator[Launch]:
        return iter(self.launches)

    def __len__(self) -> int:
        return len(self.launches)

    def __getitem__(self, index: int) -> Launch:
        return self.launches[index]

    @property
    def findings(self) -> list[Finding]:
        return [f for launch in self.launches for f in launch.findings]

    def save(self, path: str | Path) -> None:
        """Write the trace to a file (values, summaries, events, findings, snapshots)."""
        with open(path, "wb") as f:
            f.write(_MAGIC)
            pickle.dump({"format": _FORMAT, "launches": self.launches}, f, protocol=5)

    @staticmethod
    def load(path: str | Path) -> Trace:
        """Read a trace written by `save`. Only load files you trust (the format is pickle).

        Raises:
            ValueError: the file is not a kernel_nb trace.
        """
        with open(path, "rb") as f:
            if f.read(len(_MAGIC)) != _MAGIC:
                raise ValueError(f"{path}: not a kernel_nb trace")
            payload = _Unpickler(f).load()
        if payload.get("format") != _FORMAT:
            raise ValueError(
                f"{path}: trace format {payload.get('format')} is not supported (expected {_FORMAT})"
            )
        return Trace(launches=payload["launches"])

    def summary(self) -> str:
        """A plain-text table: one row per launch, then the findings."""
        header = f"{'#':>2}  {'kernel':<24} {'grid':<14} {'programs':>8} {'records':>9} {'kept':>9} {'time':>8}  findings"
        lines = [header]
        for launch in self.launches:
            row = launch.summary_row()
            grid = "x".join(str(g) for g in row["grid"])
            status = "" if row["status"] == "ok" else f" ({row['status']})"
            lines.append(
                f"{launch.index:>2}  {row['kernel']:<24} {grid:<14} {row['programs']:>8} {row['records']:>9} "
                f"{row['records_kept']:>9} {row['time_s']:>7.3f}s  {row['findings']}{status}"
            )
        for launch in self.launches:
            if launch.aggregated:
                lines.append(f"  [info] {launch.aggregate_text().splitlines()[0]}")
        for finding in self.findings:
            lines.append(f"  [{finding.severity}] {finding.message}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for launch in self.launches:
            r = launch.summary_row()
            grid = "×".join(str(g) for g in r["grid"])
            rows.append(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(str(v))}</td>"
                    for v in (
                        launch.index,
                        r["kernel"],
                        grid,
                        r["programs"],
                        f"{r['records_kept']}/{r['records']}",
                        f"{r['time_s'] * 1000:.1f} ms",
                        r["findings"] if r["status"] == "ok" else f"{r['findings']} ({r['status']})",
                    )
                )
                + "</tr>"
            )
        findings = "".join(
            f"<li><b>{html.escape(f.severity)}</b> {html.escape(f.message)}</li>" for f in self.findings
        )
        head = "".join(
            f"<th>{h}</th>" for h in ("#", "kernel", "grid", "programs", "records kept", "time", "findings")
        )
        return (
            f'<table class="kernel-nb-summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            + (f"<ul>{findings}</ul>" if findings else "")
        )

    def __repr__(self) -> str:
        return self.summary()


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(_FORMER_MODULES.get(module, module), name)
