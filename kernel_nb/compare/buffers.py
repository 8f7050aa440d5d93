"""CPU / GPU comparison of one buffer of a launch, element by element, in ulps and under a tolerance.

Plain data and numpy: nothing here imports Triton, CuPy or Jupyter, so a comparison can be
computed, saved with its trace and inspected anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from kernel_nb.compare.tolerance import default_tolerance
from kernel_nb.distinct import distinct
from kernel_nb.numerics import is_float
from kernel_nb.trace import ULP_EDGES, BufferComparison, Pid, Tolerance

# Positions kept per buffer, and writers listed per buffer: enough to find the bug, bounded in size.
MAX_POSITIONS = 1 << 20
MAX_WRITERS = 64
# Elements compared at a time (see compare_buffer).
CHUNK = 1 << 16

# An array, or a function that returns it when it is needed (it may cost more than the comparison).
Lazy = np.ndarray | Callable[[], np.ndarray | bool | None] | None


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


def _compare_chunks(
    cpu: np.ndarray,
    gpu: np.ndarray,
    floor: float | np.ndarray,
    rtol: float,
    other: tuple[np.ndarray, float, float] | None = None,
) -> _Stats:
    """The verdicts of flat `cpu` against flat `gpu`, chunk by chunk.

    In chunks, so that every temporary is reused from chunk to chunk instead of page-faulted in
    fresh for the whole buffer. numpy lets go of the GIL inside each operation: a large buffer's
    chunks are split into a few contiguous spans compared on threads, whose verdicts add up in
    order (the same verdicts as one pass). `floor`: one for every element, or per element.
    `other`: (which elements, floor, rtol) of a second rule for some elements.
    """
    starts = list(range(0, cpu.size, CHUNK))
    workers = min(_WORKERS, len(starts) // _CHUNKS_PER_WORKER)

    def span(group: list[int]) -> _Stats:
        stats = _Stats(len(ULP_EDGES))
        for lo in group:
            chunk_floor: float | np.ndarray = (
                floor[lo : lo + CHUNK] if isinstance(floor, np.ndarray) else floor
            )
            chunk_rtol: float | np.ndarray = rtol
            if other is not None and other[0][lo : lo + CHUNK].any():
                which = other[0][lo : lo + CHUNK]
                chunk_floor, chunk_rtol = np.where(which, other[1], floor), np.where(which, other[2], rtol)
            _compare_chunk(cpu[lo : lo + CHUNK], gpu[lo : lo + CHUNK], lo, chunk_floor, chunk_rtol, stats)
        return stats

    if workers < 2:
        return span(starts)
    groups = [list(g) for g in np.array_split(np.asarray(starts), workers)]
    parts = list(_pool().map(span, groups))
    total = parts[0]
    for part in parts[1:]:
        total.positions.extend(part.positions)
        total.histogram += part.histogram
        if part.max_abs > total.max_abs:
            total.max_abs, total.max_abs_at = part.max_abs, part.max_abs_at
        total.max_rel = max(total.max_rel, part.max_rel)
        total.max_ulp = max(total.max_ulp, part.max_ulp)
        total.nan_mismatches += part.nan_mismatches
        total.inf_mismatches += part.inf_mismatches
    return total


_WORKERS = max(1, min(2, os.cpu_count() or 1))  # more contend for the GIL between operations (measured)
# Below this many chunks per thread, a thread's start costs more than it saves.
_CHUNKS_PER_WORKER = 4
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(_WORKERS, thread_name_prefix="kernel-nb-diff")
    return _POOL


def _compare_chunk(
    cpu: np.ndarray,
    gpu: np.ndarray,
    start: int,
    floor: float | np.ndarray,
    rtol: float | np.ndarray,
    total: _Stats,
) -> None:
    """Add one chunk's verdicts (`start`: its first element's offset) to `total`.

    Only elements whose bits differ can be apart. Where few differ, the arithmetic runs on those
    alone and the equal rest counts as 0 ulp (NaNs aside, which have no distance); where many
    differ, it runs on the whole chunk, which costs less than gathering them.
    """
    bits = np.dtype(f"u{cpu.dtype.itemsize}")
    unequal = cpu.view(bits) != gpu.view(bits)
    count = int(np.count_nonzero(unequal))
    floating = is_float(cpu.dtype)
    if count == 0 and not (floating and _nan_count(cpu)):
        total.histogram[0] += cpu.size
        return
    index: np.ndarray | None = None
    # the strictest rule of the chunk: what passes it passes every element's own
    strictest = float(np.min(floor)), float(np.min(rtol))
    if count * 4 > cpu.size and _close_by_ulps(cpu, gpu, start, *strictest, total):
        return
    if count * 4 > cpu.size:
        cpu_d, gpu_d, equal = cpu, gpu, 0
    else:
        index = np.flatnonzero(unequal)
        cpu_d, gpu_d, equal = cpu[index], gpu[index], cpu.size - count
        if isinstance(floor, np.ndarray):
            floor = floor[index]
        if isinstance(rtol, np.ndarray):
            rtol = rtol[index]
        if floating:
            equal -= _nan_count(cpu) - _nan_count(cpu_d)  # equal NaNs have no distance
    if floating:
        c, diff, ulp, flagged = _float_chunk(cpu_d, gpu_d, total)
    else:
        # int64 holds every difference except between uint64 extremes, which saturate
        wide = np.uint64 if cpu.dtype == np.uint64 else np.int64
        ci, gi = cpu_d.astype(wide), gpu_d.astype(wide)
        ulp = np.maximum(ci, gi) - np.minimum(ci, gi)
        diff, c, flagged = ulp.astype(np.float64), ci.astype(np.float64), None
    scale = np.abs(c, out=c)
    bound = scale * rtol
    bound += floor
    out = diff > bound  # NaN and Inf were given a diff of 0: their verdicts are in `flagged`
    total.max_rel = max(total.max_rel, _max_relative(diff, scale, out=bound))
    if diff.size:
        at = int(np.argmax(diff))
        if diff[at] > total.max_abs:
            total.max_abs = float(diff[at])
            total.max_abs_at = start + (at if index is None else int(index[at]))
    if ulp.size:
        total.max_ulp = max(total.max_ulp, int(ulp.max()))
    total.histogram += _histogram(ulp)
    total.histogram[0] += equal
    if flagged is not None:
        out[flagged] = True
    hits = np.flatnonzero(out)
    if hits.size:
        total.positions.append(start + (hits if index is None else index[hits]))


def _close_by_ulps(
    cpu: np.ndarray, gpu: np.ndarray, start: int, floor: float, rtol: float, total: _Stats
) -> bool:
    """A chunk of fp32 or fp16 whose every element is within tolerance by its ulps alone, judged in
    the chunk's own dtype; False (nothing added) when one needs the float64 test below.

    n ulps apart is at most n * 2 * eps * |cpu| for a normal value (the spacing doubles at most
    once on the way), and n * 2 * the smallest subnormal near zero: with n <= rtol / (2 * eps) and
    a floor above the latter, the element passes. Values that close are within a factor of 2 of
    each other, so their difference is exact in their own dtype (Sterbenz), and so are max abs and
    the ulp histogram; max rel is picked in fp32 and computed in float64.
    """
    dtype = cpu.dtype
    if dtype.kind != "f" or dtype.itemsize > 4:
        return False
    info = np.finfo(dtype)
    within = int(rtol / (2 * float(info.eps)))
    if within < 1 or floor < 2 * within * float(info.smallest_subnormal) or _nan_count(cpu):
        return False
    ulp = _ulp(cpu, gpu)  # NaN and Inf against a finite value lie far beyond `within`
    largest = int(ulp.max())
    if largest > within:
        return False
    diff = np.abs(gpu - cpu).astype(np.float32, copy=False)
    at = int(np.argmax(diff))
    if diff[at] > total.max_abs:
        total.max_abs, total.max_abs_at = float(diff[at]), start + at
    scale = np.abs(cpu).astype(np.float32, copy=False)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = diff / scale
    ratio[scale == 0] = 0.0  # no relative difference to a zero (left out, as below)
    top = int(np.argmax(ratio))
    if scale[top] > 0:
        total.max_rel = max(total.max_rel, float(diff[top]) / float(scale[top]))
    total.max_ulp = max(total.max_ulp, largest)
    total.histogram += _histogram(ulp)
    return True


def _max_relative(diff: np.ndarray, scale: np.ndarray, out: np.ndarray) -> float:
    """The largest diff / scale where scale > 0 (a NaN scale excluded), through `out`."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.divide(diff, scale, out=out)
    largest = float(ratio.max(initial=0.0))
    if largest < np.inf:  # neither a zero scale (x/0) nor a NaN one took part: the plain maximum holds
        return largest
    positive = scale > 0
    return float(np.max(ratio, where=positive, initial=0.0))


def _float_chunk(
    cpu: np.ndarray, gpu: np.ndarray, total: _Stats
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """The float64 CPU values, |gpu - cpu|, the ulps to count and the NaN/Inf mismatches of a chunk.

    NaN and Inf are rare: their verdicts are made on them alone, and they get a difference of 0.
    """
    c = cpu.astype(np.float64)
    diff = gpu.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and Inf: judged below
        diff -= c
    np.abs(diff, out=diff)
    ulp = _ulp(cpu, gpu)
    # below fp64 the difference of two finite values cannot overflow: it is finite where both are
    finite = np.isfinite(diff) if cpu.dtype.itemsize < 8 else np.isfinite(cpu) & np.isfinite(gpu)
    if finite.all():
        return c, diff, ulp, None
    special = np.flatnonzero(~finite)
    cs, gs = c[special], gpu[special].astype(np.float64)
    c_nan, g_nan = np.isnan(cs), np.isnan(gs)
    nan_mismatch = c_nan != g_nan
    inf_mismatch = (np.isinf(cs) | np.isinf(gs)) & ~(c_nan | g_nan) & (cs != gs)
    total.nan_mismatches += int(nan_mismatch.sum())
    total.inf_mismatches += int(inf_mismatch.sum())
    diff[special] = 0.0
    counted = np.ones(ulp.shape, bool)
    counted[special] = cs == gs  # ulps to an infinity say nothing
    return c, diff, ulp[counted], special[nan_mismatch | inf_mismatch]


def compare_buffer(
    arg: str,
    before: np.ndarray,
    cpu: np.ndarray,
    gpu: np.ndarray,
    *,
    shape: tuple[int, ...] = (),
    tolerance: Tolerance | None = None,
    cpu_writes: Lazy = None,
    last_writer: Lazy = None,
    pid_of: Callable[[int], Pid] | None = None,
    owned: bool = False,
    relaxed: tuple[np.ndarray, Tolerance] | None = None,
    floors: np.ndarray | None = None,
) -> BufferComparison | None:
    """Compare one buffer's span after the launch on each side.

    Args:
        arg: the argument's name.
        before: the span before the launch (the identical input of both sides).
        cpu, gpu: the span after the interpreted / compiled launch.
        shape: the argument's shape (for indices in messages).
        tolerance: the tolerance; the policy's default for the dtype when None.
        cpu_writes: per element, how many interpreted programs wrote it (`BufferMap.writes`), or
            a function that returns it or whether any did (called only when the values alone
            cannot say).
        last_writer: per element, the linear index of the interpreted program that wrote it last
            (-1: none), or a function that returns it (called only when elements mismatch).
        pid_of: maps a linear program index to its pid (`Launch.pid_of`).
        owned: `cpu` and `gpu` are the caller's to give away (snapshots nobody writes): the
            comparison keeps them as they are instead of copies.
        relaxed: (which elements of the span, a tolerance) judged by that tolerance instead of
            `tolerance` (the elements a tf32 dot's stores wrote, say).
        floors: per element of the span, the absolute tolerance in place of `tolerance`'s floor
            (what an fp64 shadow says the kernel's arithmetic can promise there).

    Returns:
        The comparison, or None when neither side wrote the buffer.
    """
    if not (cpu.shape == gpu.shape == before.shape and cpu.dtype == gpu.dtype == before.dtype):
        raise ValueError(f"{arg}: before, cpu and gpu must have one shape and dtype")
    cpu_changed = _differs(cpu, before)
    gpu_changed = _differs(gpu, before)
    if not cpu_changed:
        writes = _resolve(cpu_writes)
        cpu_wrote = writes is not None and bool(np.asarray(writes).any())
    else:
        cpu_wrote = True
    if not cpu_wrote and not gpu_changed:
        return None
    dtype = cpu.dtype
    tolerance = tolerance or default_tolerance(dtype)
    floor: float | np.ndarray = tolerance.floor(cpu)
    if floors is not None:
        floor = np.ascontiguousarray(floors, dtype=np.float64).reshape(-1)
        if floor.size != cpu.size:
            raise ValueError(f"{arg}: the per-element floors must cover the span")
    flat_cpu, flat_gpu = np.ascontiguousarray(cpu).reshape(-1), np.ascontiguousarray(gpu).reshape(-1)
    other = None
    relaxed_rule: tuple[Tolerance, int] | None = None
    if relaxed is not None:
        which = np.asarray(relaxed[0], bool).reshape(-1)
        if which.size != flat_cpu.size:
            raise ValueError(f"{arg}: the relaxed elements' mask must cover the span")
        rule = relaxed[1]
        other = (which, rule.floor(cpu), rule.rtol)
        shown = replace(rule, atol=other[1], atol_of_max=0.0) if rule.atol_of_max else rule
        relaxed_rule = (shown, int(np.count_nonzero(which)))
    total = _compare_chunks(flat_cpu, flat_gpu, floor, tolerance.rtol, other)
    positions = np.concatenate(total.positions) if total.positions else np.zeros(0, np.int64)
    writers: list[tuple[Pid | None, int]] = []
    writer_of = _resolve(last_writer) if positions.size else None
    if writer_of is not None:
        ids, counts = distinct(np.asarray(writer_of)[positions], return_counts=True)
        order = np.argsort(-counts, kind="stable")
        for i in order[:MAX_WRITERS]:
            linear = int(ids[i])
            pid = pid_of(linear) if linear >= 0 and pid_of is not None else None
            writers.append((pid, int(counts[i])))
    return BufferComparison(
        arg=arg,
        dtype=dtype.name,
        shape=tuple(shape),
        tolerance=replace(tolerance, atol=float(np.max(floor, initial=0.0)), atol_of_max=0.0)
        if tolerance.atol_of_max or floors is not None
        else tolerance,
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
        cpu=cpu if owned else cpu.copy(),
        gpu=gpu if owned else gpu.copy(),
        relaxed=relaxed_rule,
    )


def _resolve(value: Lazy) -> np.ndarray | bool | None:
    return value() if callable(value) else value


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays of one dtype (ml_dtypes included), as uint64.

    Bit patterns are mapped to integers that order like the values, so the distance counts the
    representable numbers between a and b. +0 and -0 are 0 apart. Meaningless where either is NaN.
    """
    if a.dtype != b.dtype:
        raise ValueError(f"ulp_distance needs one dtype, got {a.dtype} and {b.dtype}")
    distance = _ulp(a, b)
    return distance if distance.dtype == np.uint64 else distance.view(np.uint64)


def _ulp(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ulp_distance as int64 below 64-bit floats (the distances fit), as uint64 for them."""
    if a.dtype.itemsize == 8:
        return _ulp_distance_64(a, b)
    signed = np.dtype(f"i{a.dtype.itemsize}")
    shift = signed.type(8 * a.dtype.itemsize - 1)
    magnitude = signed.type(np.iinfo(signed).max)

    def key(x: np.ndarray) -> np.ndarray:
        # sign-magnitude → one ordered line, +0 and -0 on the same point (0): a negative pattern
        # (sign bit set, magnitude m) becomes -m, branch-free and within the signed type
        bits = np.ascontiguousarray(x).view(signed)
        sign = bits >> shift  # -1 where negative, else 0
        k = sign & magnitude
        k ^= bits
        k -= sign
        return k

    distance = key(a).astype(np.int64)
    distance -= key(b)
    return np.abs(distance, out=distance)


def _ulp_distance_64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ulp_distance for 64-bit floats, whose distances need all of uint64."""
    sign = np.uint64(1 << 63)

    def key(x: np.ndarray) -> np.ndarray:
        bits = np.ascontiguousarray(x).view(np.uint64)
        magnitude = bits & (sign - np.uint64(1))
        return np.where(bits & sign, sign - magnitude, sign + magnitude)

    ka, kb = key(a), key(b)
    return np.where(ka > kb, ka - kb, kb - ka)


_EDGES = np.asarray(ULP_EDGES[:-1], dtype=np.float64)
# Up to this many buckets in use, a chunk's histogram is counted edge by edge.
_FEW_BUCKETS = 8


def ulp_histogram(distance: np.ndarray) -> list[int]:
    """Counts of ULP distances per bucket of `ULP_EDGES` (0, 1, 2, 3-4, 5-8, ...)."""
    distance = np.asarray(distance).reshape(-1)
    if distance.dtype == np.uint64 and distance.size and int(distance.max()) < 1 << 63:
        distance = distance.view(np.int64)
    return [int(c) for c in _histogram(distance)]


def _histogram(distance: np.ndarray) -> np.ndarray:
    """`ulp_histogram` as an array, for int64 or uint64 distances."""
    largest = int(distance.max()) if distance.size else 0
    top = int(np.searchsorted(_EDGES, float(largest), side="left"))
    if top < _FEW_BUCKETS:
        # Rounding differences span a few ulps: counting below each edge beats bincount, which
        # slows to a crawl when most elements fall into one bin
        below = [np.count_nonzero(distance <= edge) for edge in ULP_EDGES[:top]]
        out = np.zeros(len(ULP_EDGES), np.int64)
        out[:top] = np.diff(below, prepend=0)
        out[top] = distance.size - (below[-1] if below else 0)
        return out
    # bucket of d >= 1: 1 + bit_length(d - 1) (1 → 1, 2 → 2, 3..4 → 3, 5..8 → 4, ...), read from
    # the exponent of d - 1; past 2**53 the float rounds, but those fall in the last bucket anyway
    _, exponent = np.frexp(distance.astype(np.float64) - 1.0)
    exponent += 1
    exponent[distance == 0] = 0
    np.minimum(exponent, len(ULP_EDGES) - 1, out=exponent)
    return np.bincount(exponent, minlength=len(ULP_EDGES)).astype(np.int64)


def _differs(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1)
    word = np.dtype(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else np.dtype(np.uint8)
    return not np.array_equal(a.view(word), b.view(word))


def _nan_count(x: np.ndarray) -> int:
    if x.dtype.kind != "f":  # ml_dtypes' bf16 / fp8: numpy's isnan after a widening that keeps NaN
        x = x.astype(np.float32)
    return int(np.count_nonzero(np.isnan(x)))
