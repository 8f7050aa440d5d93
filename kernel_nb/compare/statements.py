"""Statement by statement: where the GPU's values first leave the interpreter's, and whether that is rounding.

A probed GPU run logs the values of a few programs' statements in execution order (see
`kernel_nb.gpu.instrument`). Here they are lined up with the interpreter's records of the same
programs and each record gets a status:

| status | meaning |
| --- | --- |
| match | within the tolerance policy of `kernel_nb.compare.tolerance` for the value's dtype |
| precision | beyond it, within a looser bound, and the value comes from something the GPU rounds differently: a tf32 dot, a reduction, an a*b+c the GPU contracts to an fma, approximate math, or an operand that already differed that way ; or beyond any bound, but recomputed on the CPU from the GPU's own operands it is the GPU's value (`kernel_nb.compare.reevaluate`): the difference came in, or rounding of the operands was amplified here |
| diverge | beyond that: a real divergence (NaN/Inf on one side only, integers that differ, a different control flow) |
| missing | the GPU logged no value for it (its log ended, or control flow diverged before) |
| skipped | not logged on the GPU (a type the probe does not store, a helper called indirectly) |

The looser bound is `kernel_nb.compare.tolerance.TF32` for a value that a tf32 dot feeds, else ten
times the dtype's tolerance. Plain data and numpy, like `kernel_nb.compare.buffers`: nothing here
imports Triton or CuPy.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from kernel_nb.compare.buffers import ulp_distance
from kernel_nb.compare.reevaluate import agrees, recompute
from kernel_nb.compare.tolerance import EXACT, TF32, tolerance_for
from kernel_nb.numerics import NUMPY_TYPES, is_float_name, numpy_dtype
from kernel_nb.trace import Launch, Pid, ProgramDivergence, Record, StatementDiff, Tolerance

# Lanes listed per statement.
MAX_LANES = 4096
RELAXED_FACTOR = 10.0

# Triton's names of the float types the policy has a tolerance for.
_FLOATS = frozenset(name for name in NUMPY_TYPES if is_float_name(NUMPY_TYPES.numpy_name(name)))


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
        expressions: per statement id, the source of the expression its value is computed from.
    """

    storage: dict[int, str]
    sources: dict[int, tuple[str, ...]]
    operands: dict[int, tuple[str, ...]]
    skipped: dict[int, str]
    addresses: dict[str, tuple[int, int]]
    tf32: bool = False
    expressions: dict[int, str] = field(default_factory=dict)


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
    # an fp64 shadow's companion records have no GPU counterpart: the GPU computes the real values
    records = [r for r in records if launch.statements[r.stmt].of is None]
    pending: dict[int, deque[bytes]] = defaultdict(deque)
    for stmt, raw in entries:
        pending[stmt].append(raw)
    cpu_counts = Counter(r.stmt for r in records)
    gpu_counts = {stmt: len(values) for stmt, values in pending.items()}
    last = {r.stmt: r.seq for r in records}
    seen: Counter[int] = Counter()
    live: dict[tuple[tuple[str, ...], str], str] = {}  # (call path, name) → why it may differ
    seen_gpu: dict[tuple[tuple[str, ...], str], np.ndarray] = {}  # (call path, name) → its GPU value
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
                _classify(s, record, gpu, probe, live, rtol, atol, seen_gpu)
                seen_gpu[(record.call_path, s.name)] = gpu
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
    storage = numpy_dtype(probe.storage[record.stmt])
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
    seen_gpu: dict[tuple[tuple[str, ...], str], np.ndarray],
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
        strict = tolerance_for(NUMPY_TYPES.numpy_name(record.dtype), rtol=rtol, atol=atol)
        out, special, distance, ulp = _float_differences(cpu, gpu, strict)
    else:
        strict = EXACT
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
    carried = _carried_in(record, gpu, probe, seen_gpu, strict, cpu) if floating else None
    if carried is not None:
        diverged = [n for n in carried if live.get((record.call_path, n)) == "diverged"]
        names = ", ".join(f"`{n}`" for n in (diverged or carried))
        local = f"fed the GPU's own {names}, this line computes the GPU's value within {what}"
        if diverged:
            s.status, s.reason = "diverge", f"{beyond}; {local}: it carries the divergence of {names}"
            live[key] = "diverged"
            return
        s.status = "precision"
        # recomputed without the statement's own rounding, so only what came through operands explains it
        incoming = [why for why in origins if why.startswith("from ")]
        if incoming:
            s.reason = f"{beyond}; {local}: it carries a difference that came in ({incoming[0]})"
        else:
            s.reason = (
                f"{beyond}; {local}: amplified rounding, the operands match within tolerance and this "
                "line magnifies their differences (a difference of close values, say)"
            )
        live[key] = incoming[0] if incoming else f"rounding of {names} amplified at line {s.line}"
        return
    if floating and origins and not special.any():
        beyond += f", and beyond {relaxed.reason} ({relaxed.describe()}) that {origins[0]} explains"
    elif special.any():
        beyond += f" ({int(special.sum())} NaN/Inf on one side only)"
    elif origins:
        beyond += f"; its operands differ by rounding ({origins[0]}), which an integer or bool result turns into a different value"
    s.status, s.reason = "diverge", beyond
    live[key] = "diverged"


def _carried_in(
    record: Record,
    gpu: np.ndarray,
    probe: Probe,
    seen_gpu: dict[tuple[tuple[str, ...], str], np.ndarray],
    strict: Tolerance,
    cpu: np.ndarray,
) -> list[str] | None:
    """The operands whose GPU values, put through this statement on the CPU, give the GPU's value
    within the statement's own tolerance: the statement did not make the difference. None when it
    cannot be recomputed (not elementwise, an operand the GPU did not log) or gives something else."""
    expression = probe.expressions.get(record.stmt)
    names = probe.operands.get(record.stmt, ())
    if not expression or not names:
        return None
    frame = record.call_path
    operands = {n: seen_gpu[(frame, n)] for n in names if (frame, n) in seen_gpu}
    if len(operands) != len(names):
        return None
    local = recompute(expression, operands, np.dtype(NUMPY_TYPES[record.dtype]))
    if local is None or not agrees(local, gpu, strict.rtol, strict.floor(cpu)):
        return None
    return sorted(names)


def _origins(record: Record, probe: Probe, live: dict[tuple[tuple[str, ...], str], str]) -> list[str]:
    """Why this value may differ by rounding: its own expression, then operands that already did."""
    # integer and bool arithmetic is exact: only a float statement's own operation rounds
    statement_sources = probe.sources.get(record.stmt, ()) if record.dtype in _FLOATS else ()
    # a dot at default precision runs in tf32 only on fp32 blocks: the compiled kernel says whether any did
    found = [
        f"{'dot' if source == 'tf32 dot' and not probe.tf32 else source} here" for source in statement_sources
    ]
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
    # a tf32 dot's error, where it flows in, outweighs any rounding of the statement's own
    return sorted(found, key=lambda why: "tf32 dot" not in why)


def _relaxed(record: Record, strict: Tolerance, origins: list[str], tf32: bool) -> Tolerance:
    if tf32 and record.dtype == "fp32" and any("tf32 dot" in o for o in origins):
        return replace(
            TF32,
            rtol=max(TF32.rtol, strict.rtol),
            atol=max(TF32.atol, strict.atol),
            atol_of_max=max(TF32.atol_of_max, strict.atol_of_max),
        )
    return Tolerance(
        rtol=strict.rtol * RELAXED_FACTOR,
        atol=strict.atol * RELAXED_FACTOR,
        atol_of_max=strict.atol_of_max * RELAXED_FACTOR,
        reason=f"{RELAXED_FACTOR:g}x the {strict.reason} tolerance",
    )


def _float_differences(
    cpu: np.ndarray, gpu: np.ndarray, tolerance: Tolerance
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
    ulp = np.where(finite, ulp_distance(cpu.astype(gpu.dtype), gpu), 0)
    return out, special, distance, ulp
