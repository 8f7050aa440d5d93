"""CPU / GPU comparison of one buffer of a launch, element by element, in ulps and under a tolerance.

Plain data and numpy: nothing here imports Triton, CuPy or Jupyter, so a comparison can be
computed, saved with its trace and inspected anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from kernel_nb.compare.tolerance import default_tolerance
from kernel_nb.numerics import is_float
from kernel_nb.trace import ULP_EDGES, BufferComparison, Pid, Tolerance

# Positions kept per buffer, and writers listed per buffer: enough to find the bug, bounded in size.
MAX_POSITIONS = 1 << 20
MAX_WRITERS = 64
# Elements compared at a time (see compare_buffer).
CHUNK = 1 << 16


@dataclass
class _Stats:
    """What the chunks of a buffer found, added up."""

    buckets: int
    positions: list[np.ndarray] = field(default_factory=list)
    max_abs: float = 0.0
    max_abs_at: int = -1
    max_rel: float = 0.0
    max_ulp: int = 0
    nan_mismatches: int = 0
    inf_mismatches: int = 0
    histogram: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.histogram = np.zeros(self.buckets, np.int64)


def _compare_chunk(
    cpu: np.ndarray, gpu: np.ndarray, start: int, floor: float, rtol: float, total: _Stats
) -> None:
    """Add one chunk's verdicts (`start`: its first element's offset) to `total`.

    Only elements whose bits differ can be apart: the arithmetic runs on those alone, and the equal
    rest counts as 0 ulp (NaNs aside, which have no distance).
    """
    bits = np.dtype(f"u{cpu.dtype.itemsize}")
    differing = np.flatnonzero(cpu.view(bits) != gpu.view(bits))
    cpu_d, gpu_d = cpu[differing], gpu[differing]
    equal = cpu.size - differing.size
    if is_float(cpu.dtype):
        c, g = cpu_d.astype(np.float64), gpu_d.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.abs(g - c)
            finite = np.isfinite(c) & np.isfinite(g)
        nan_mismatch = np.zeros(c.shape, bool)
        inf_mismatch = np.zeros(c.shape, bool)
        counted = finite.copy()
        special = np.flatnonzero(~finite)  # NaN and Inf are rare: their verdicts are made on them alone
        cs, gs = c[special], g[special]
        c_nan, g_nan = np.isnan(cs), np.isnan(gs)
        nan_mismatch[special] = c_nan != g_nan
        inf_mismatch[special] = (np.isinf(cs) | np.isinf(gs)) & ~(c_nan | g_nan) & (cs != gs)
        diff[special] = 0.0
        counted[special] = cs == gs  # ulps to an infinity say nothing
        ulp = ulp_distance(cpu_d, gpu_d)[counted]
        equal -= _nan_count(cpu) - int(c_nan.sum())
    else:
        # int64 holds every difference except between uint64 extremes, which saturate
        wide = np.uint64 if cpu.dtype == np.uint64 else np.int64
        ci, gi = cpu_d.astype(wide), gpu_d.astype(wide)
        ulp = (np.maximum(ci, gi) - np.minimum(ci, gi)).astype(np.uint64)
        diff = ulp.astype(np.float64)
        c, finite = ci.astype(np.float64), np.ones(ci.shape, bool)
        nan_mismatch = inf_mismatch = np.zeros(ci.shape, bool)
    scale = np.abs(c)
    bound = scale * rtol
    bound += floor
    out = (diff > bound) & finite
    out |= nan_mismatch | inf_mismatch
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = diff / scale
    total.max_rel = max(total.max_rel, float(np.max(ratio, where=finite & (scale > 0), initial=0.0)))
    if diff.size:
        at = int(np.argmax(diff))
        if diff[at] > total.max_abs:
            total.max_abs, total.max_abs_at = float(diff[at]), start + int(differing[at])
    if ulp.size:
        total.max_ulp = max(total.max_ulp, int(ulp.max()))
    total.histogram += ulp_histogram(ulp)
    total.histogram[0] += equal
    total.nan_mismatches += int(nan_mismatch.sum())
    total.inf_mismatches += int(inf_mismatch.sum())
    if out.any():
        total.positions.append(start + differing[out])


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
    floor = tolerance.floor(cpu)
    flat_cpu, flat_gpu = np.ascontiguousarray(cpu).reshape(-1), np.ascontiguousarray(gpu).reshape(-1)
    # In chunks, so that every temporary is reused from chunk to chunk instead of page-faulted in
    # fresh for the whole buffer; the verdicts of the chunks add up.
    total = _Stats(len(ULP_EDGES))
    for lo in range(0, flat_cpu.size, CHUNK):
        _compare_chunk(flat_cpu[lo : lo + CHUNK], flat_gpu[lo : lo + CHUNK], lo, floor, tolerance.rtol, total)
    positions = np.concatenate(total.positions) if total.positions else np.zeros(0, np.int64)
    writers: list[tuple[Pid | None, int]] = []
    if positions.size and last_writer is not None:
        ids, counts = np.unique(np.asarray(last_writer)[positions], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        for i in order[:MAX_WRITERS]:
            linear = int(ids[i])
            pid = pid_of(linear) if linear >= 0 and pid_of is not None else None
            writers.append((pid, int(counts[i])))
    return BufferComparison(
        arg=arg,
        dtype=dtype.name,
        shape=tuple(shape),
        tolerance=replace(tolerance, atol=floor, atol_of_max=0.0) if tolerance.atol_of_max else tolerance,
        written_by="both" if cpu_wrote and gpu_changed else "cpu" if cpu_wrote else "gpu",
        size=int(cpu.size),
        mismatches=int(positions.size),
        positions=positions[:MAX_POSITIONS],
        max_abs=total.max_abs,
        max_rel=total.max_rel,
        max_abs_at=total.max_abs_at,
        max_ulp=total.max_ulp,
        ulp_hist=[int(c) for c in total.histogram],
        nan_mismatches=total.nan_mismatches,
        inf_mismatches=total.inf_mismatches,
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
    if dtype.itemsize == 8:
        return _ulp_distance_64(a, b)
    signed = np.dtype(f"i{dtype.itemsize}")
    lowest = np.iinfo(signed).min

    def key(x: np.ndarray) -> np.ndarray:
        # sign-magnitude → one ordered line, +0 and -0 on the same point (0); it fits the signed type
        bits = np.ascontiguousarray(x).view(signed)
        return np.where(bits < 0, lowest - bits, bits).astype(signed)

    ka, kb = key(a), key(b)
    # the distance is below 2**(8*itemsize): the wrapped difference read unsigned is exact
    with np.errstate(over="ignore"):
        wrapped = np.where(ka >= kb, ka - kb, kb - ka)
    return wrapped.view(np.dtype(f"u{dtype.itemsize}")).astype(np.uint64)


def _ulp_distance_64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ulp_distance for 64-bit floats, whose distances need all of uint64."""
    sign = np.uint64(1 << 63)

    def key(x: np.ndarray) -> np.ndarray:
        bits = np.ascontiguousarray(x).view(np.uint64)
        magnitude = bits & (sign - np.uint64(1))
        return np.where(bits & sign, sign - magnitude, sign + magnitude)

    ka, kb = key(a), key(b)
    return np.where(ka > kb, ka - kb, kb - ka)


def ulp_histogram(distance: np.ndarray) -> list[int]:
    """Counts of ULP distances per bucket of `ULP_EDGES` (0, 1, 2, 3-4, 5-8, ...)."""
    edges = np.asarray(ULP_EDGES[:-1], dtype=np.float64)
    distance = np.asarray(distance).reshape(-1)
    small = distance < 64  # most distances: counted directly, then folded into their buckets
    counts = np.bincount(distance[small].astype(np.intp), minlength=64)
    buckets = np.searchsorted(edges, np.arange(64, dtype=np.float64), side="left")
    out = np.bincount(buckets, weights=counts, minlength=len(ULP_EDGES)).astype(np.int64)
    large = distance[~small]
    if large.size:
        out += np.bincount(
            np.searchsorted(edges, large.astype(np.float64), side="left"), minlength=len(ULP_EDGES)
        )
    return [int(c) for c in out]


def _differs(a: np.ndarray, b: np.ndarray) -> bool:
    return bool((np.ascontiguousarray(a).view(np.uint8) != np.ascontiguousarray(b).view(np.uint8)).any())


def _nan_count(x: np.ndarray) -> int:
    if x.dtype.kind != "f":  # ml_dtypes' bf16 / fp8: numpy's isnan after a widening that keeps NaN
        x = x.astype(np.float32)
    return int(np.count_nonzero(np.isnan(x)))
