"""What a comparison with the GPU found, as plain data: per buffer, and statement by statement.

`kernel_nb.compare` computes these; here they are values that a `Launch` holds, a saved trace
carries and the viewer reads, with the text they print as.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from kernel_nb.numerics import is_float
from kernel_nb.trace.records import Pid

Status = Literal["match", "precision", "diverge", "missing", "skipped"]
# Upper bounds of the ULP-distance histogram's buckets: 0, 1, 2, 3-4, 5-8, ..., 2^23+1 - 2^24, more.
ULP_EDGES: tuple[float, ...] = (0, 1, *(2**k for k in range(1, 25)), math.inf)
# Values shown per differing statement in text.
SHOWN = 6


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    """How far the GPU may be from the interpreter, per element.

    Attributes:
        rtol: relative part, times |cpu|.
        atol: absolute floor.
        atol_of_max: added to the floor, times the largest finite |cpu| of the buffer.
        reason: what the numbers account for (shown with every verdict).
    """

    rtol: float
    atol: float
    atol_of_max: float = 0.0
    reason: str = ""

    def __post_init__(self) -> None:
        for name in ("rtol", "atol", "atol_of_max"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")

    def floor(self, reference: np.ndarray) -> float:
        """The absolute part for a buffer whose CPU values are `reference`."""
        if not self.atol_of_max or not is_float(reference.dtype):
            return float(self.atol)
        values = reference if reference.dtype.kind == "f" else reference.astype(np.float32)
        largest = max(float(values.max(initial=0.0)), -float(values.min(initial=0.0)))
        if not math.isfinite(largest):  # a NaN or an Inf among them: the finite ones alone
            largest = np.max(np.abs(values), where=np.isfinite(values), initial=0.0)
        return float(self.atol + self.atol_of_max * float(largest))

    def describe(self) -> str:
        parts = [f"rtol {_num(self.rtol)}", f"atol {_num(self.atol)}"]
        if self.atol_of_max:
            parts[-1] += f" + {_num(self.atol_of_max)}·max|cpu|"
        return ", ".join(parts)


@dataclass
class BufferComparison:
    """One buffer of one launch, CPU against GPU, over the argument's memory span.

    Element offsets (`positions`, `max_abs_at`) index the span, as `BufferMap` and `Launch.snapshot` do.

    Attributes:
        arg: the kernel argument.
        dtype: numpy name of the element type.
        shape: the argument's shape.
        tolerance: the tolerance applied; `atol` is the resolved absolute floor.
        written_by: which side changed or wrote the buffer: "both", "cpu" or "gpu".
        size: elements compared.
        mismatches: elements out of tolerance (NaN/Inf mismatches included).
        positions: their offsets (at most `kernel_nb.compare.buffers.MAX_POSITIONS`).
        max_abs: largest absolute difference over elements both sides have finite.
        max_rel: largest relative difference over those of them whose CPU value is not zero.
        max_abs_at: offset of the largest absolute difference (-1 when there is none).
        max_ulp: largest ULP distance (units for integers) over elements finite on both sides or equal.
        ulp_hist: counts per bucket of `ULP_EDGES`.
        nan_mismatches: elements NaN on exactly one side.
        inf_mismatches: elements infinite on one side and not equal on the other (no NaN involved).
        writers: (pid, count): the CPU program that last wrote mismatching elements, most first;
            pid None counts mismatching elements no CPU program wrote.
        cpu, gpu: the span after the launch on each side.
        relaxed: (a second tolerance, how many elements it judged) where some elements of the
            buffer were judged by another rule than `tolerance` (those a tf32 dot's stores wrote).
    """

    arg: str
    dtype: str
    shape: tuple[int, ...]
    tolerance: Tolerance
    written_by: Literal["both", "cpu", "gpu"]
    size: int
    mismatches: int
    positions: np.ndarray
    max_abs: float
    max_rel: float
    max_abs_at: int
    max_ulp: int
    ulp_hist: list[int]
    nan_mismatches: int
    inf_mismatches: int
    writers: list[tuple[Pid | None, int]]
    cpu: np.ndarray = field(repr=False)
    gpu: np.ndarray = field(repr=False)
    relaxed: tuple[Tolerance, int] | None = None

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    def rules(self) -> list[tuple[str, int]]:
        """(rule, elements it judged) of this buffer."""
        relaxed = getattr(self, "relaxed", None)
        if relaxed is None:
            return [(self.tolerance.reason or self.tolerance.describe(), self.size)]
        rule, count = relaxed
        return [
            (self.tolerance.reason or self.tolerance.describe(), self.size - count),
            (rule.reason or rule.describe(), count),
        ]

    def index(self, offset: int) -> tuple[int, ...]:
        """An element offset as an index of the argument's shape (the offset itself when it has no such index)."""
        if self.shape and math.prod(self.shape) == self.size and 0 <= offset < self.size:
            return tuple(int(i) for i in np.unravel_index(offset, self.shape))
        return (offset,)

    def line(self) -> str:
        """One line: the buffer's verdict with its figures."""
        where = _index_text(self.index(self.max_abs_at)) if self.max_abs_at >= 0 else "—"
        text = (
            f"{self.arg}: {self.mismatches} of {self.size} out of tolerance "
            f"({self.tolerance.reason}: {self.tolerance.describe()}); max abs {_num(self.max_abs)} at {where}, "
            f"max rel {_num(self.max_rel)}, max {self.max_ulp} ulp"
        )
        relaxed = getattr(self, "relaxed", None)
        if relaxed is not None:
            text += f"; {relaxed[1]} of its elements under {relaxed[0].reason}: {relaxed[0].describe()}"
        if self.nan_mismatches or self.inf_mismatches:
            text += f"; NaN mismatches {self.nan_mismatches}, Inf mismatches {self.inf_mismatches}"
        if self.writers:
            named = [w for w in self.writers if w[0] is not None]
            if named:
                pids = ", ".join(f"({p[0]},{p[1]},{p[2]})" for p, _ in named[:3] if p is not None)
                more = f" and {len(named) - 3} more" if len(named) > 3 else ""
                text += f"; written by pid {pids}{more}"
            unwritten = sum(n for p, n in self.writers if p is None)
            if unwritten:
                text += f"; {unwritten} not written by the interpreter"
        if self.written_by != "both":
            text += f" (only the {self.written_by.upper()} wrote it)"
        return text


@dataclass
class Comparison:
    """A launch run interpreted and compiled from identical inputs, buffer by buffer.

    Attributes:
        launch: the launch's index in its trace.
        kernel: the kernel's name.
        device: the GPU it ran on, in words.
        buffers: every buffer that either side wrote.
        tf32: the compiled kernel has fp32 dots in tf32 (the fp32 policy was relaxed for it).
        kept: whose results the cell went on with: "gpu" or "cpu".
        cpu_error: the interpreter's error when it failed on the launch: `buffers` then hold what
            the GPU wrote against the inputs (the interpreter wrote nothing), and the cell failed.
        gpu_error: the compiled side's error when it failed too.
        seconds: wall time of each step: "interpret", "gpu" (the compiled launch, compile and
            copies included), "diff" (the buffer comparison), "divergence" (the probed run and its
            analysis) where it ran.
        fp_fusion: the compiled side contracted a*b+c into fmas (Triton's default); False when
            it was compiled with ``enable_fp_fusion=False`` (by the caller, or ``exact_probe``).
    """

    launch: int
    kernel: str
    device: str
    buffers: list[BufferComparison]
    tf32: bool = False
    kept: Literal["gpu", "cpu"] = "gpu"
    cpu_error: str | None = None
    gpu_error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    fp_fusion: bool = True

    def rules(self) -> str:
        """Which tolerance rule applied to how many elements, e.g.
        "fp32 with tf32 dots (...): 256 elements (c_ptr); fp32 (...): 16 elements (norm_ptr)"."""
        groups: dict[str, list[tuple[str, int]]] = {}
        for buffer in self.buffers:
            for reason, count in buffer.rules():
                groups.setdefault(reason, []).append((buffer.arg, count))
        return "; ".join(
            f"{reason}: {sum(n for _, n in group)} elements ({', '.join(arg for arg, _ in group)})"
            for reason, group in groups.items()
        )

    def timing(self) -> str:
        """Where the launch's comparison spent its time, e.g. "interpret 0.21 s, gpu 0.03 s, diff 0.04 s"."""
        return ", ".join(f"{step} {value:.3g} s" for step, value in self.seconds.items())

    @property
    def ok(self) -> bool:
        return self.cpu_error is None and all(b.ok for b in self.buffers)

    @property
    def mismatching(self) -> list[BufferComparison]:
        return [b for b in self.buffers if not b.ok]

    def verdict(self) -> str:
        """One line per launch: MATCH or MISMATCH, naming the buffers that differ."""
        head = f"#{self.launch} {self.kernel}"
        if self.cpu_error is not None:
            gpu = (
                f"the GPU failed too: {self.gpu_error}"
                if self.gpu_error is not None
                else f"the GPU ran it and wrote {', '.join(b.arg for b in self.buffers) or 'nothing'}"
            )
            return f"{head}: the interpreter failed ({self.cpu_error}); {gpu}"
        if not self.buffers:
            return f"{head}: nothing to compare (neither side wrote a buffer)"
        if self.ok:
            worst = max(self.buffers, key=lambda b: b.max_ulp)
            names = ", ".join(b.arg for b in self.buffers)
            return f"{head}: MATCH ({names}); max {worst.max_ulp} ulp, max abs {_num(max(b.max_abs for b in self.buffers))}"
        bad = self.mismatching
        return f"{head}: MISMATCH in " + "; ".join(b.line() for b in bad)

    def report(self) -> str:
        """The verdict, then one line per buffer compared."""
        lines = [self.verdict(), *(f"  {b.line()}" for b in self.buffers)]
        if self.tf32 and self.buffers:
            lines.append(f"  tolerances: {self.rules()}")
        if not getattr(self, "fp_fusion", True):
            lines.append("  (the GPU side was compiled without fp fusion: enable_fp_fusion=False)")
        return "\n".join(lines)


def ulp_bucket_labels() -> list[str]:
    """Labels of `ULP_EDGES`' buckets: "0", "1", "2", "3-4", ..., "> 16777216"."""
    labels = ["0", "1", "2"]
    for k in range(2, 25):
        labels.append(f"{2 ** (k - 1) + 1}-{2**k}")
    labels.append(f"> {2**24}")
    return labels


@dataclass
class StatementDiff:
    """One record of one program: the interpreter's value against the GPU's.

    Attributes:
        stmt, seq, call_path, iteration, dtype, shape: as in the interpreter's `Record`.
        line, name, function: the statement.
        status: see `kernel_nb.compare.statements`.
        reason: why that status: the tolerance, the source of the rounding, what differs.
        size: elements of the value.
        mismatches: elements beyond the dtype's tolerance (NaN/Inf mismatches included).
        lanes: their flat indices (at most `kernel_nb.compare.statements.MAX_LANES`).
        max_abs: largest |gpu - cpu| over elements finite on both sides.
        max_ulp: largest ULP distance (units for integers) over elements finite on both sides.
        cpu, gpu: the values (None where there is none to compare).
        source: the statement's line of source.
    """

    stmt: int
    seq: int
    line: int
    name: str
    function: str
    call_path: tuple[str, ...]
    iteration: tuple[int, ...]
    dtype: str
    shape: tuple[int, ...]
    status: Status
    reason: str = ""
    size: int = 0
    mismatches: int = 0
    lanes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    max_abs: float = 0.0
    max_ulp: int = 0
    cpu: np.ndarray | None = field(default=None, repr=False)
    gpu: np.ndarray | None = field(default=None, repr=False)
    source: str = ""

    def where(self) -> str:
        """ "line 14, `acc`, iteration (2,)" with the helper call path when there is one."""
        text = f"line {self.line} ({self.function}), `{self.name}`"
        if self.iteration:
            text += f", iteration {_tuple(self.iteration)}"
        if self.call_path:
            text += f", called from {' > '.join(self.call_path)}"
        return text

    def lane_text(self, limit: int = SHOWN) -> str:
        """The first differing lanes with the CPU and GPU values there."""
        if self.cpu is None or self.gpu is None or not self.lanes.size:
            return ""
        shown = self.lanes[:limit]
        cpu, gpu = np.asarray(self.cpu).reshape(-1), np.asarray(self.gpu).reshape(-1)
        index = [_lane(int(i), self.shape) for i in shown]
        more = f" (+{self.mismatches - shown.size} more)" if self.mismatches > shown.size else ""
        return (
            f"lanes {', '.join(index)}{more}; CPU {', '.join(_value(cpu[i]) for i in shown)}; "
            f"GPU {', '.join(_value(gpu[i]) for i in shown)}"
        )


@dataclass
class ProgramDivergence:
    """Every record of one chosen program, compared.

    Attributes:
        pid: the program.
        statements: one entry per interpreter record, in execution order.
        extra: values the GPU logged after the interpreter's last record.
        overflow: the GPU logged more than its probe region holds (the rest was dropped).
    """

    pid: Pid
    statements: list[StatementDiff]
    extra: int = 0
    overflow: bool = False

    @property
    def first(self) -> StatementDiff | None:
        """The first real divergence, in execution order."""
        return next((s for s in self.statements if s.status == "diverge"), None)

    @property
    def first_difference(self) -> StatementDiff | None:
        """The first statement beyond the dtype's tolerance, expected precision included."""
        return next((s for s in self.statements if s.status in ("diverge", "precision")), None)

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("match", "precision", "diverge", "missing", "skipped"), 0)
        for s in self.statements:
            out[s.status] += 1
        return out


@dataclass(frozen=True)
class Drift:
    """One buffer a probed variant wrote differently from the plain compiled run."""

    arg: str
    differing: int
    size: int
    max_abs: float
    max_ulp: int

    def text(self) -> str:
        return (
            f"{self.arg}: {self.differing} of {self.size} elements differ "
            f"(max abs {self.max_abs:.3g}, max {self.max_ulp} ulp)"
        )


@dataclass
class Divergence:
    """Where a launch's chosen programs first compute something else on the GPU than in the interpreter.

    Attributes:
        launch: the launch's index in its trace.
        kernel: the kernel's name.
        device: the GPU the probed variant ran on.
        programs: one per chosen program.
        tf32: the probed kernel ran fp32 dots in tf32.
        notes: what the reader should know (replayed programs, a nondeterministic GPU result, ...).
        error: why there is no comparison, when the probed run could not be made.
        probe_drift: the buffers the probed variant wrote differently from the plain compiled run
            (see `kernel_nb.compare.drift`); empty when they agree or were not compared.
    """

    launch: int
    kernel: str
    device: str = ""
    programs: list[ProgramDivergence] = field(default_factory=list)
    tf32: bool = False
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    probe_drift: tuple[Drift, ...] = ()

    @property
    def first(self) -> tuple[Pid, StatementDiff] | None:
        """The earliest real divergence over the chosen programs (by execution order, then pid)."""
        found = [(p.first.seq, p.pid, p.first) for p in self.programs if p.first is not None]
        if not found:
            return None
        _, pid, statement = min(found, key=lambda f: (f[0], f[1]))
        return pid, statement

    def report(self) -> str:
        """The first divergence (or why there is none), then one line per chosen program."""
        head = f"#{self.launch} {self.kernel}"
        if self.error is not None:
            return f"{head}: no statement comparison: {self.error}"
        lines = []
        first = self.first
        if first is None:
            pids = ", ".join(_tuple(p.pid) for p in self.programs)
            lines.append(f"{head}: no divergence in pid {pids}")
        else:
            pid, s = first
            text = f"{head}: first divergence in pid {_tuple(pid)} at {s.where()}: {s.reason}"
            if s.lane_text():
                text += f"; {s.lane_text()}"
            lines.append(text)
            if s.source:
                lines.append(f"    {s.line} | {s.source.strip()}")
        for p in self.programs:
            counts = p.counts()
            parts = [f"{counts['match']} match"]
            if counts["precision"]:
                expected = next(s for s in p.statements if s.status == "precision")
                parts.append(
                    f"{counts['precision']} within expected precision (first: {expected.where()}, {expected.reason})"
                )
            parts.extend(f"{counts[k]} {k}" for k in ("diverge", "missing", "skipped") if counts[k])
            if p.extra:
                parts.append(f"the GPU logged {p.extra} more")
            if p.overflow:
                parts.append("the GPU's log overflowed")
            lines.append(f"  pid {_tuple(p.pid)}: {len(p.statements)} statements: " + ", ".join(parts))
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def table(self, pid: Pid | None = None) -> str:
        """Every statement of one chosen program (the first by default): status, where, figures."""
        program = self.programs[0] if pid is None else next(p for p in self.programs if p.pid == pid)
        rows = [
            f"pid {_tuple(program.pid)}",
            f"{'seq':>5}  {'status':<9} {'where':<48} {'differ':>9} {'max |diff|':>10}  reason",
        ]
        for s in program.statements:
            rows.append(
                f"{s.seq:>5}  {s.status:<9} {s.where()[:48]:<48} {s.mismatches:>4}/{s.size:<4} {_value(s.max_abs):>10}  {s.reason}"
            )
        return "\n".join(rows)

    def __repr__(self) -> str:
        return self.report()


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3g}"


def _index_text(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _lane(flat: int, shape: tuple[int, ...]) -> str:
    if len(shape) <= 1:
        return str(flat)
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


def _value(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    value = float(x)
    if value == 0 or not math.isfinite(value):
        return str(value) if not math.isfinite(value) else "0"
    return f"{value:.6g}"


def _tuple(values: tuple[int, ...]) -> str:
    return "(" + ",".join(str(v) for v in values) + (",)" if len(values) == 1 else ")")
