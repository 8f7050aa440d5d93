"""Statement by statement: where the GPU's values first leave the interpreter's, and whether that is rounding.

A probed GPU run logs the values of a few programs' statements in execution order (see
`kernel_nb.gpu.instrument`). Here they are lined up with the interpreter's records of the same
programs and each record gets a status:

| status | meaning |
| --- | --- |
| match | within the tolerance policy of `kernel_nb.diff` for the value's dtype |
| precision | beyond it, within a looser bound, and the value comes from something the GPU rounds differently: a tf32 dot, a reduction, an a*b+c the GPU contracts to an fma, approximate math, or an operand that already differed that way |
| diverge | beyond that: a real divergence (NaN/Inf on one side only, integers that differ, a different control flow) |
| missing | the GPU logged no value for it (its log ended, or control flow diverged before) |
| skipped | not logged on the GPU (a type the probe does not store, a helper called indirectly) |

The looser bound is `kernel_nb.diff.TF32` for a value that a tf32 dot feeds, else ten times the
dtype's tolerance. Plain data and numpy, like `kernel_nb.diff`: nothing here imports Triton or CuPy.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import ml_dtypes
import numpy as np

from kernel_nb import diff
from kernel_nb.trace import Launch, Pid, Record

Status = Literal["match", "precision", "diverge", "missing", "skipped"]
# Lanes listed per statement, and values shown for them in text.
MAX_LANES = 4096
SHOWN = 6
RELAXED_FACTOR = 10.0

_FLOATS: dict[str, Any] = {
    "fp16": np.float16,
    "fp32": np.float32,
    "fp64": np.float64,
    "bf16": ml_dtypes.bfloat16,
    "fp8e4nv": ml_dtypes.float8_e4m3fn,
    "fp8e5": ml_dtypes.float8_e5m2,
}
_STORAGE: dict[str, Any] = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}


@dataclass(frozen=True)
class Probe:
    """What the alignment needs to know about the probed run (see `kernel_nb.gpu.instrument`).

    Attributes:
        storage: per logged statement id, the numpy dtype name its elements were stored as.
        sources: per statement id, what its expression does that the GPU rounds differently.
        operands: per statement id, the names it reads.
        skipped: per statement id, why it was not logged.
        addresses: per array argument, (address of element 0 in the probed run, element size).
        tf32: the probed kernel ran its fp32 dots in tf32.
    """

    storage: dict[int, str]
    sources: dict[int, tuple[str, ...]]
    operands: dict[int, tuple[str, ...]]
    skipped: dict[int, str]
    addresses: dict[str, tuple[int, int]]
    tf32: bool = False


@dataclass
class StatementDiff:
    """One record of one program: the interpreter's value against the GPU's.

    Attributes:
        stmt, seq, call_path, iteration, dtype, shape: as in the interpreter's `Record`.
        line, name, function: the statement.
        status: see the module docstring.
        reason: why that status: the tolerance, the source of the rounding, what differs.
        size: elements of the value.
        mismatches: elements beyond the dtype's tolerance (NaN/Inf mismatches included).
        lanes: their flat indices (at most MAX_LANES).
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
    """

    launch: int
    kernel: str
    device: str = ""
    programs: list[ProgramDivergence] = field(default_factory=list)
    tf32: bool = False
    notes: list[str] = field(default_factory=list)
    error: str | None = None

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


def compare_program(
    launch: Launch,
    pid: Pid,
    records: list[Record],
    entries: Iterable[tuple[int, bytes]],
    probe: Probe,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    overflow: bool = False,
) -> ProgramDivergence:
    """Line a program's GPU log up with its interpreter records and classify each record.

    Args:
        launch: the interpreted launch (for statements and sources).
        pid: the program.
        records: its records with values (`launch.program(pid).records`).
        entries: (statement id, raw bytes) the GPU logged, in execution order.
        probe: what the probed run stored and how.
        rtol, atol: override the policy's tolerance (as ``--rtol`` / ``--atol``).
        overflow: the GPU's log was cut short.
    """
    # The n-th value the GPU logged for a statement goes with the n-th record of it: the compiler may
    # reorder a loop's statements (software pipelining), but not how often each one runs.
    pending: dict[int, deque[bytes]] = defaultdict(deque)
    for stmt, raw in entries:
        pending[stmt].append(raw)
    cpu_counts = Counter(r.stmt for r in records)
    gpu_counts = {stmt: len(values) for stmt, values in pending.items()}
    last = {r.stmt: r.seq for r in records}
    seen: Counter[int] = Counter()
    live: dict[tuple[tuple[str, ...], str], str] = {}  # (call path, name) → why it may differ
    out: list[StatementDiff] = []
    for record in records:
        s = _blank(launch, record)
        stmt = record.stmt
        seen[stmt] += 1
        ran = f"the GPU ran line {s.line} {gpu_counts.get(stmt, 0)} times, the interpreter {cpu_counts[stmt]}"
        if stmt not in probe.storage:
            s.status = "skipped"
            s.reason = probe.skipped.get(stmt, "not logged on the GPU (its function is not called directly)")
        elif not pending[stmt]:
            s.status = "missing"
            s.reason = "the GPU's log overflowed before it" if overflow else "the GPU logged no value for it"
            if not overflow and seen[stmt] == gpu_counts.get(stmt, 0) + 1:  # the first the GPU did not run
                s.status, s.reason = "diverge", f"control flow: {ran}"
        else:
            gpu = decode(pending[stmt].popleft(), record, probe)
            if gpu is None:
                s.status, s.reason = "skipped", f"points outside every argument ({record.dtype})"
            else:
                _classify(s, record, gpu, probe, live, rtol, atol)
            if record.seq == last[stmt] and pending[stmt] and not overflow:
                s.status, s.reason = (
                    "diverge",
                    f"control flow: {ran}" + (f"; its values: {s.reason}" if s.reason else ""),
                )
        out.append(s)
    extra = sum(len(values) for values in pending.values())
    return ProgramDivergence(pid, out, extra=extra, overflow=overflow)


def decode(raw: bytes, record: Record, probe: Probe) -> np.ndarray | None:
    """A logged value in the interpreter's representation (pointers as element offsets, bf16 as fp32)."""
    storage = np.dtype(_STORAGE.get(probe.storage[record.stmt], probe.storage[record.stmt]))
    count = math.prod(record.shape)
    data = np.frombuffer(raw, dtype=storage, count=count).reshape(record.shape)
    if record.dtype.startswith("pointer<"):
        if record.pointer_arg is None or record.pointer_arg not in probe.addresses:
            return None
        base, itemsize = probe.addresses[record.pointer_arg]
        return (data.astype(np.int64) - base) // itemsize
    if record.dtype == "int1":
        return data != 0
    if record.dtype in ("bf16", "fp8e4nv", "fp8e5"):
        return data.astype(np.float32)  # bf16 / fp8: the interpreter records them decoded to fp32
    return data.copy()


def _blank(launch: Launch, record: Record) -> StatementDiff:
    statement = launch.statements[record.stmt]
    source = launch.sources.get(statement.function)
    text = ""
    if source is not None:
        lines = source.text.splitlines()
        at = statement.line - source.first_line
        text = lines[at] if 0 <= at < len(lines) else ""
    return StatementDiff(
        stmt=record.stmt,
        seq=record.seq,
        line=statement.line,
        name=statement.name,
        function=statement.function,
        call_path=record.call_path,
        iteration=record.iteration,
        dtype=record.dtype,
        shape=record.shape,
        status="match",
        source=text,
    )


def _classify(
    s: StatementDiff,
    record: Record,
    gpu: np.ndarray,
    probe: Probe,
    live: dict[tuple[tuple[str, ...], str], str],
    rtol: float | None,
    atol: float | None,
) -> None:
    cpu = np.asarray(record.value) if record.value is not None else None
    s.size = int(gpu.size)
    s.gpu = gpu
    key = (record.call_path, s.name)
    if cpu is None or cpu.shape != gpu.shape:
        s.status, s.reason = "skipped", "the interpreter kept no value for it"
        return
    s.cpu = cpu
    origins = _origins(record, probe, live)
    floating = record.dtype in _FLOATS
    if floating:
        strict = diff.tolerance_for(np.dtype(_FLOATS[record.dtype]).name, rtol=rtol, atol=atol)
        out, special, distance, ulp = _float_differences(cpu, gpu, strict)
    else:
        strict = diff.EXACT
        wide_c, wide_g = cpu.astype(np.int64), gpu.astype(np.int64)
        out = wide_c != wide_g
        special = np.zeros(cpu.shape, bool)
        distance = np.abs(wide_g - wide_c).astype(np.float64)
        ulp = distance
    lanes = np.flatnonzero(out.reshape(-1))
    s.mismatches, s.lanes = int(lanes.size), lanes[:MAX_LANES]
    s.max_abs = float(distance.max()) if distance.size else 0.0
    s.max_ulp = int(ulp.max()) if ulp.size else 0
    what = f"{strict.reason}: {strict.describe()}" if floating else "exact"
    if not lanes.size:
        s.status, s.reason = "match", f"within {what}"
        live.pop(key, None)
        return
    beyond = f"{lanes.size} of {s.size} lanes beyond {what}"
    if floating and origins and not special.any():
        relaxed = _relaxed(record, strict, origins, probe.tf32)
        loose, _, _, _ = _float_differences(cpu, gpu, relaxed)
        if not loose.any():
            s.status = "precision"
            s.reason = f"{beyond}, within {relaxed.reason} ({relaxed.describe()}): {origins[0]}"
            live[key] = origins[0]
            return
        beyond += f", and beyond {relaxed.reason} ({relaxed.describe()}) that {origins[0]} explains"
    elif special.any():
        beyond += f" ({int(special.sum())} NaN/Inf on one side only)"
    elif origins:
        beyond += (
            f"; its operands differ only by rounding ({origins[0]}), but an integer or bool result may not"
        )
    s.status, s.reason = "diverge", beyond
    live[key] = "diverged"


def _origins(record: Record, probe: Probe, live: dict[tuple[tuple[str, ...], str], str]) -> list[str]:
    """Why this value may differ by rounding: its own expression, then operands that already did."""
    statement_sources = probe.sources.get(record.stmt, ())
    found = [f"{source} here" for source in statement_sources]
    names = probe.operands.get(record.stmt, ())
    frame = record.call_path
    for name in names:
        why = live.get((frame, name))
        if why is not None and why != "diverged":
            found.append(why if why.startswith("from ") else f"from `{name}`: {why}")
    if not names and frame and not statement_sources:
        # a helper's argument: the caller's values that differed by rounding flow in
        caller = frame[:-1]
        found.extend(
            f"from the caller's `{n}`: {w}"
            for (path, n), w in live.items()
            if path == caller and w != "diverged"
        )
    return found


def _relaxed(record: Record, strict: diff.Tolerance, origins: list[str], tf32: bool) -> diff.Tolerance:
    if tf32 and record.dtype == "fp32" and any("tf32 dot" in o for o in origins):
        return replace(
            diff.TF32,
            rtol=max(diff.TF32.rtol, strict.rtol),
            atol=max(diff.TF32.atol, strict.atol),
            atol_of_max=max(diff.TF32.atol_of_max, strict.atol_of_max),
        )
    return diff.Tolerance(
        rtol=strict.rtol * RELAXED_FACTOR,
        atol=strict.atol * RELAXED_FACTOR,
        atol_of_max=strict.atol_of_max * RELAXED_FACTOR,
        reason=f"{RELAXED_FACTOR:g}x the {strict.reason} tolerance",
    )


def _float_differences(
    cpu: np.ndarray, gpu: np.ndarray, tolerance: diff.Tolerance
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-tolerance lanes, lanes NaN/Inf on one side only, |diff| and ULP distance (0 where not finite)."""
    c, g = cpu.astype(np.float64), gpu.astype(np.float64)
    c_nan, g_nan = np.isnan(c), np.isnan(g)
    special = (c_nan != g_nan) | ((np.isinf(c) | np.isinf(g)) & ~(c_nan | g_nan) & (c != g))
    finite = np.isfinite(c) & np.isfinite(g)
    with np.errstate(invalid="ignore", over="ignore"):
        distance = np.where(finite, np.abs(g - c), 0.0)
    floor = tolerance.floor(cpu)
    out = special | (finite & (distance > floor + tolerance.rtol * np.abs(np.where(finite, c, 0.0))))
    ulp = np.where(finite, diff.ulp_distance(cpu.astype(gpu.dtype), gpu), 0)
    return out, special, distance, ulp


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
