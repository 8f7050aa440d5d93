"""CPU / GPU comparison of one buffer of a launch, element by element, in ulps and under a tolerance.

Plain data and numpy: nothing here imports Triton, CuPy or Jupyter, so a comparison can be
computed, saved with its trace and inspected anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from kernel_nb.compare.tolerance import default_tolerance
from kernel_nb.numerics import is_float
from kernel_nb.trace import ULP_EDGES, BufferComparison, Pid, Tolerance

# Positions kept per buffer, and writers listed per buffer: enough to find the bug, bounded in size.
MAX_POSITIONS = 1 << 20
MAX_WRITERS = 64


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
    if is_float(dtype):
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


def _differs(a: np.ndarray, b: np.ndarray) -> bool:
    return bool((np.ascontiguousarray(a).view(np.uint8) != np.ascontiguousarray(b).view(np.uint8)).any())
