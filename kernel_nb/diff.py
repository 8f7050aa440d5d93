"""CPU / GPU comparison of a launch's buffers under an explicit, dtype-aware tolerance policy.

Plain data and numpy: nothing here imports Triton, CuPy or Jupyter, so a comparison can be
computed, saved with its trace and inspected anywhere.

The policy (`default_tolerance`), per element, with `cpu` the interpreter's value as reference::

    |gpu - cpu| <= atol + atol_of_max * max|cpu| + rtol * |cpu|

| buffer dtype | rtol | atol | atol_of_max | why |
| --- | --- | --- | --- | --- |
| integers, bool | 0 | 0 | 0 | integer arithmetic is exact on both sides |
| float64 | 1e-7 | 1e-7 | 0 | torch.testing's default; FMA contraction and summation order |
| float32 | 1e-5 | 1e-6 | 1e-6 | FMA contraction, summation order, approximate exp/log on the GPU |
| float32, tf32 dots | 5e-3 | 1e-5 | 5e-3 | fp32 `tl.dot` rounds its inputs to tf32 (10-bit mantissa) on the GPU |
| float16 | 2e-3 | 1e-5 | 1e-3 | 2 ulp of fp16 |
| bfloat16 | 1.6e-2 | 1e-5 | 8e-3 | 2 ulp of bf16 |
| float8 e4m3 / e5m2 | 0.25 / 0.5 | 2^-9 / 2^-16 | 0.125 / 0.25 | 2 ulp; the smallest subnormal |

`atol_of_max` scales the absolute floor with the buffer's magnitude: an output that is a sum of many
products (a dot, a reduction) has absolute rounding errors proportional to its inputs, so elements
that cancel to near zero would fail any purely relative test. An explicit `atol` (``--atol``) replaces
the whole absolute part; an explicit `rtol` (``--rtol``) replaces rtol.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

Pid = tuple[int, int, int]

# Upper bounds of the ULP-distance histogram's buckets: 0, 1, 2, 3-4, 5-8, ..., 2^23+1 - 2^24, more.
ULP_EDGES: tuple[float, ...] = (0, 1, *(2**k for k in range(1, 25)), math.inf)
# Positions kept per buffer, and writers listed per buffer: enough to find the bug, bounded in size.
MAX_POSITIONS = 1 << 20
MAX_WRITERS = 64


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
        if not self.atol_of_max or not _is_float(reference.dtype):
            return float(self.atol)
        values = np.abs(reference.astype(np.float64))
        finite = values[np.isfinite(values)]
        return float(self.atol + self.atol_of_max * (finite.max() if finite.size else 0.0))

    def describe(self) -> str:
        parts = [f"rtol {_num(self.rtol)}", f"atol {_num(self.atol)}"]
        if self.atol_of_max:
            parts[-1] += f" + {_num(self.atol_of_max)}·max|cpu|"
        return ", ".join(parts)


EXACT = Tolerance(rtol=0.0, atol=0.0, reason="integers: exact")
_FLOAT_DEFAULTS: dict[str, Tolerance] = {
    "float64": Tolerance(rtol=1e-7, atol=1e-7, reason="fp64"),
    "float32": Tolerance(rtol=1e-5, atol=1e-6, atol_of_max=1e-6, reason="fp32"),
    "float16": Tolerance(rtol=2e-3, atol=1e-5, atol_of_max=1e-3, reason="fp16: 2 ulp"),
    "bfloat16": Tolerance(rtol=1.6e-2, atol=1e-5, atol_of_max=8e-3, reason="bf16: 2 ulp"),
    "float8_e4m3fn": Tolerance(rtol=0.25, atol=2.0**-9, atol_of_max=0.125, reason="fp8e4m3: 2 ulp"),
    "float8_e5m2": Tolerance(rtol=0.5, atol=2.0**-16, atol_of_max=0.25, reason="fp8e5m2: 2 ulp"),
}
TF32 = Tolerance(rtol=5e-3, atol=1e-5, atol_of_max=5e-3, reason="fp32 with tf32 dots")


def default_tolerance(dtype: np.dtype | str, *, tf32: bool = False) -> Tolerance:
    """The policy's tolerance for a buffer of `dtype` (see the module docstring).

    Args:
        dtype: the buffer's element type (numpy or ml_dtypes).
        tf32: the kernel has fp32 `tl.dot`s that the GPU runs in tf32 (its default precision).
    """
    dtype = np.dtype(dtype)
    if dtype.kind in "biu":
        return EXACT
    if tf32 and dtype.name == "float32":
        return TF32
    default = _FLOAT_DEFAULTS.get(dtype.name)
    if default is None:
        raise ValueError(f"no tolerance policy for dtype {dtype}; pass rtol and atol")
    return default


def tolerance_for(
    dtype: np.dtype | str, *, tf32: bool = False, rtol: float | None = None, atol: float | None = None
) -> Tolerance:
    """The default tolerance for `dtype`, with the user's overrides applied."""
    tolerance = default_tolerance(dtype, tf32=tf32)
    changes: dict[str, object] = {}
    if rtol is not None:
        changes["rtol"] = rtol
    if atol is not None:
        changes["atol"], changes["atol_of_max"] = atol, 0.0
    if changes:
        tolerance = replace(tolerance, **changes, reason=f"{tolerance.reason}, overridden")  # type: ignore[arg-type]
    return tolerance


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
        positions: their offsets (at most MAX_POSITIONS).
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

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

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
    """

    launch: int
    kernel: str
    device: str
    buffers: list[BufferComparison]
    tf32: bool = False
    kept: Literal["gpu", "cpu"] = "gpu"

    @property
    def ok(self) -> bool:
        return all(b.ok for b in self.buffers)

    @property
    def mismatching(self) -> list[BufferComparison]:
        return [b for b in self.buffers if not b.ok]

    def verdict(self) -> str:
        """One line per launch: MATCH or MISMATCH, naming the buffers that differ."""
        head = f"#{self.launch} {self.kernel}"
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
        return "\n".join([self.verdict(), *(f"  {b.line()}" for b in self.buffers)])


def compare_buffer(
    arg: str,
    before: np.ndarray,
    cpu: np.ndarray,
    gpu: np.ndarray,
    *,
    shape: tuple[int, ...] = (),
    tolerance: Tolerance | None = None,
    cpu_writes: np.ndarray | None = None,
    last_writer: np.ndarray | None = None,
    pid_of: Callable[[int], Pid] | None = None,
) -> BufferComparison | None:
    """Compare one buffer's span after the launch on each side.

    Args:
        arg: the argument's name.
        before: the span before the launch (the identical input of both sides).
        cpu, gpu: the span after the interpreted / compiled launch.
        shape: the argument's shape (for indices in messages).
        tolerance: the tolerance; the policy's default for the dtype when None.
        cpu_writes: per element, how many interpreted programs wrote it (`BufferMap.writes`).
        last_writer: per element, the linear index of the interpreted program that wrote it last (-1: none).
        pid_of: maps a linear program index to its pid (`Launch.pid_of`).

    Returns:
        The comparison, or None when neither side wrote the buffer.
    """
    if not (cpu.shape == gpu.shape == before.shape and cpu.dtype == gpu.dtype == before.dtype):
        raise ValueError(f"{arg}: before, cpu and gpu must have one shape and dtype")
    cpu_changed = _differs(cpu, before)
    gpu_changed = _differs(gpu, before)
    cpu_wrote = cpu_changed or (cpu_writes is not None and bool(np.asarray(cpu_writes).any()))
    if not cpu_wrote and not gpu_changed:
        return None
    dtype = cpu.dtype
    tolerance = tolerance or default_tolerance(dtype)
    nan_mismatch = inf_mismatch = np.zeros(cpu.shape, bool)
    if _is_float(dtype):
        c, g = cpu.astype(np.float64), gpu.astype(np.float64)
        c_nan, g_nan = np.isnan(c), np.isnan(g)
        nan_mismatch = c_nan != g_nan
        either_inf = (np.isinf(c) | np.isinf(g)) & ~(c_nan | g_nan)
        inf_mismatch = either_inf & (c != g)
        finite = np.isfinite(c) & np.isfinite(g)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.where(finite, np.abs(g - c), 0.0)
        ulp = ulp_distance(cpu, gpu)[finite | (c == g)]  # ulps to an infinity say nothing
    else:
        # int64 holds every difference except between uint64 extremes, which saturate
        wide = np.uint64 if dtype == np.uint64 else np.int64
        c, g = cpu.astype(wide), gpu.astype(wide)
        ulp = (np.maximum(c, g) - np.minimum(c, g)).astype(np.uint64)
        diff = ulp.astype(np.float64)
        c, finite = c.astype(np.float64), np.ones(cpu.shape, bool)
    scale = np.abs(c)
    floor = tolerance.floor(cpu)
    out = nan_mismatch | inf_mismatch | (finite & (diff > floor + tolerance.rtol * scale))
    nonzero = finite & (scale > 0)
    rel = diff[nonzero] / scale[nonzero]
    positions = np.flatnonzero(out)
    writers: list[tuple[Pid | None, int]] = []
    if positions.size and last_writer is not None:
        ids, counts = np.unique(np.asarray(last_writer)[positions], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        for i in order[:MAX_WRITERS]:
            linear = int(ids[i])
            pid = pid_of(linear) if linear >= 0 and pid_of is not None else None
            writers.append((pid, int(counts[i])))
    max_at = int(np.argmax(diff)) if diff.size and diff.max() > 0 else -1
    return BufferComparison(
        arg=arg,
        dtype=dtype.name,
        shape=tuple(shape),
        tolerance=replace(tolerance, atol=floor, atol_of_max=0.0) if tolerance.atol_of_max else tolerance,
        written_by="both" if cpu_wrote and gpu_changed else "cpu" if cpu_wrote else "gpu",
        size=int(cpu.size),
        mismatches=int(positions.size),
        positions=positions[:MAX_POSITIONS],
        max_abs=float(diff.max()) if diff.size else 0.0,
        max_rel=float(rel.max()) if rel.size else 0.0,
        max_abs_at=max_at,
        max_ulp=int(ulp.max()) if ulp.size else 0,
        ulp_hist=ulp_histogram(ulp),
        nan_mismatches=int(nan_mismatch.sum()),
        inf_mismatches=int(inf_mismatch.sum()),
        writers=writers,
        cpu=cpu.copy(),
        gpu=gpu.copy(),
    )


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays of one dtype (ml_dtypes included), as uint64.

    Bit patterns are mapped to integers that order like the values, so the distance counts the
    representable numbers between a and b. +0 and -0 are 0 apart. Meaningless where either is NaN.
    """
    dtype = a.dtype
    if dtype != b.dtype:
        raise ValueError(f"ulp_distance needs one dtype, got {a.dtype} and {b.dtype}")
    unsigned = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    sign = np.uint64(1 << (8 * dtype.itemsize - 1))

    def key(x: np.ndarray) -> np.ndarray:
        # sign-magnitude → one ordered line, +0 and -0 on the same point
        bits = np.ascontiguousarray(x).view(unsigned).astype(np.uint64)
        magnitude = bits & (sign - np.uint64(1))
        return np.where(bits & sign, sign - magnitude, sign + magnitude)

    ka, kb = key(a), key(b)
    return np.where(ka > kb, ka - kb, kb - ka)


def ulp_histogram(distance: np.ndarray) -> list[int]:
    """Counts of ULP distances per bucket of `ULP_EDGES` (0, 1, 2, 3-4, 5-8, ...)."""
    edges = np.asarray(ULP_EDGES[:-1], dtype=np.float64)
    buckets = np.searchsorted(edges, np.asarray(distance, dtype=np.float64), side="left")
    return [int(c) for c in np.bincount(buckets.reshape(-1), minlength=len(ULP_EDGES))]


def ulp_bucket_labels() -> list[str]:
    """Labels of `ULP_EDGES`' buckets: "0", "1", "2", "3-4", ..., "> 16777216"."""
    labels = ["0", "1", "2"]
    for k in range(2, 25):
        labels.append(f"{2 ** (k - 1) + 1}-{2**k}")
    labels.append(f"> {2**24}")
    return labels


def uses_tf32_dots(ttir: str) -> bool:
    """Whether a kernel's TTIR has a dot that the GPU runs with tf32 inputs (Triton's fp32 default)."""
    return any(
        "tt.dot" in line and "inputPrecision = tf32" in line and "tf32x3" not in line
        for line in ttir.splitlines()
    )


def _differs(a: np.ndarray, b: np.ndarray) -> bool:
    return bool((np.ascontiguousarray(a).view(np.uint8) != np.ascontiguousarray(b).view(np.uint8)).any())


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _num(x: float) -> str:
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3g}"


def _index_text(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"
