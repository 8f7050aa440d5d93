"""The CPU / GPU comparison and the compiled kernel's IR, for the viewer and as matplotlib figures.

Launch metadata carries only the figures of each comparison (a few hundred bytes per buffer); the
heatmaps travel on request, one buffer at a time, as binary views reduced to fit one message, and so
does each IR stage's text.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from kernel_nb.trace import BufferComparison, Launch, Trace, ulp_bucket_labels
from kernel_nb.view import protocol as p
from kernel_nb.view.divergence import divergence_meta
from kernel_nb.view.payloads import RequestError, block_reduce, finite_or_none, launch_at, reduction_steps
from kernel_nb.view.plot import CMAP, MASKED_COLOR, NAN_COLOR, NEGINF_COLOR, POSINF_COLOR

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Long 1-D buffers are drawn as rows of this many elements (as the access maps are).
WRAP = 1024
MAX_WRITERS = 16
# An IR stage larger than this is cut (a websocket message stays far below its 10 MiB cap).
MAX_TEXT = 4 * 1024 * 1024
# Codes of the mismatch map: the largest wins when cells are reduced, so a mismatch is never hidden.
PADDING, WITHIN, OUTSIDE = 0, 1, 2


def with_comparisons(meta: p.ViewerMeta, trace: Trace) -> p.ViewerMeta:
    """The viewer's metadata with each launch's comparison figures and list of IR stages added."""
    for launch_meta, launch in zip(meta["launches"], trace):
        launch_meta["comparison"] = comparison_meta(launch)
        launch_meta["artifacts"] = artifacts_meta(launch)
        launch_meta["divergence"] = divergence_meta(launch)
    return meta


def comparison_meta(launch: Launch) -> p.ComparisonMeta | None:
    comparison = launch.comparison
    if comparison is None:
        return None
    return {
        "verdict": comparison.verdict(),
        "ok": comparison.ok,
        "device": comparison.device,
        "kept": comparison.kept,
        "tf32": comparison.tf32,
        "ulp_labels": ulp_bucket_labels(),
        "buffers": [_buffer_meta(b) for b in comparison.buffers],
    }


def _buffer_meta(b: BufferComparison) -> p.BufferComparisonMeta:
    return {
        "arg": b.arg,
        "dtype": b.dtype,
        "shape": list(b.shape),
        "size": b.size,
        "ok": b.ok,
        "line": b.line(),
        "mismatches": b.mismatches,
        "max_abs": finite_or_none(b.max_abs),
        "max_rel": finite_or_none(b.max_rel),
        "max_abs_at": list(b.index(b.max_abs_at)) if b.max_abs_at >= 0 else None,
        "max_ulp": b.max_ulp,
        "ulp_hist": b.ulp_hist,
        "nan_mismatches": b.nan_mismatches,
        "inf_mismatches": b.inf_mismatches,
        "rtol": b.tolerance.rtol,
        "atol": b.tolerance.atol,
        "policy": b.tolerance.reason,
        "written_by": b.written_by,
        "writers": [
            {"pid": list(pid) if pid is not None else None, "count": count}
            for pid, count in b.writers[:MAX_WRITERS]
        ],
    }


def artifacts_meta(launch: Launch) -> p.ArtifactsMeta | None:
    artifacts = launch.artifacts
    if artifacts is None:
        return None
    return {
        "target": artifacts.target,
        "stages": list(artifacts.stages),
        "sizes": [len(text) for text in artifacts.stages.values()],
        "missing": dict(artifacts.missing),
        "metadata": {k: v for k, v in artifacts.metadata.items() if v is not None},
        "compiled_for_launch": artifacts.compiled_for_launch,
    }


def _buffer(launch: Launch, arg: str) -> BufferComparison:
    if launch.comparison is None:
        raise RequestError(f"{launch.kernel}: launch {launch.index} was not compared (run %%tkernel compare)")
    for b in launch.comparison.buffers:
        if b.arg == arg:
            return b
    raise RequestError(f"{launch.kernel}: no compared buffer {arg!r}")


def layout(shape: tuple[int, ...], size: int) -> tuple[int, int]:
    """Rows and columns a buffer is drawn in: its own rows when 2-D or more, wrapped rows when long and 1-D."""
    if len(shape) >= 2 and math.prod(shape) == size:
        return size // shape[-1], shape[-1]
    if size <= WRAP:
        return 1, max(size, 1)
    return -(-size // WRAP), WRAP


def compare_reply(trace: Trace, request: p.CompareRequest) -> tuple[p.CompareReply, list[bytes]]:
    """CPU, GPU and |diff| views of one compared buffer, plus its mismatch map, reduced to fit one message."""
    launch = launch_at(trace, request["launch"])
    b = _buffer(launch, request["arg"])
    rows, cols = layout(b.shape, b.size)
    cpu, gpu, diff, codes = _grids(b, rows, cols)
    max_cells = p.MAX_VALUE_BYTES // (3 * 4 + 1)
    step = reduction_steps(rows, cols, max_cells, p.MAX_SIDE)
    note = ""
    if step != [1, 1]:
        cpu, gpu = _block_mean(cpu, step), _block_mean(gpu, step)
        diff = block_reduce(diff, step, np.fmax)
        codes = block_reduce(codes, step, np.maximum)
        note = f"reduced {step[0]}×{step[1]}: values are block means, |diff| block maxima, a block with a mismatch shows it"
    both = np.concatenate([b.cpu.astype(np.float64).reshape(-1), b.gpu.astype(np.float64).reshape(-1)])
    finite = both[np.isfinite(both)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    reply: p.CompareReply = {
        "type": "compare",
        "id": request["id"],
        "arg": b.arg,
        "dtype": b.dtype,
        "shape": list(b.shape),
        "size": b.size,
        "grid": [rows, cols],
        "view_shape": list(cpu.shape),
        "step": step,
        "lo": lo,
        "hi": hi,
        "diff_max": finite_or_none(float(np.nanmax(diff))) if diff.size else None,
        "mismatches": b.mismatches,
        "note": note,
    }
    buffers = [np.ascontiguousarray(a, dtype=np.float32).tobytes() for a in (cpu, gpu, diff)]
    buffers.append(np.ascontiguousarray(codes, dtype=np.uint8).tobytes())
    return reply, buffers


def artifact_reply(trace: Trace, request: p.ArtifactRequest) -> p.ArtifactReply:
    """The text of one IR stage of a launch's compiled kernel."""
    launch = launch_at(trace, request["launch"])
    artifacts = launch.artifacts
    if artifacts is None:
        raise RequestError(
            f"{launch.kernel}: launch {launch.index} has no compiled artifacts (use --ir or compare)"
        )
    stage = request["stage"]
    if stage not in artifacts.stages:
        why = artifacts.missing.get(stage, f"not one of {', '.join(artifacts.stages)}")
        raise RequestError(f"{launch.kernel}: no {stage.upper()}: {why}")
    text = artifacts.stages[stage]
    return {
        "type": "artifact",
        "id": request["id"],
        "stage": stage,
        "target": artifacts.target,
        "text": text[:MAX_TEXT],
        "truncated": max(0, len(text) - MAX_TEXT),
    }


def _grids(
    b: BufferComparison, rows: int, cols: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The buffer as rows x cols float64 grids (CPU, GPU, |diff|) and uint8 mismatch codes, padded at the end."""
    cells = rows * cols
    cpu = np.full(cells, np.nan)
    gpu = np.full(cells, np.nan)
    cpu[: b.size] = b.cpu.astype(np.float64).reshape(-1)
    gpu[: b.size] = b.gpu.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(gpu - cpu)
    diff = np.where(np.isfinite(diff), diff, 0.0)
    codes = np.full(cells, PADDING, np.uint8)
    codes[: b.size] = WITHIN
    codes[b.positions] = OUTSIDE
    return (
        cpu.reshape(rows, cols),
        gpu.reshape(rows, cols),
        diff.reshape(rows, cols),
        codes.reshape(rows, cols),
    )


def _block_mean(a: np.ndarray, step: list[int]) -> np.ndarray:
    # Sums propagate NaN and ±Inf, so a block holding one still shows it after the reduction.
    with np.errstate(invalid="ignore", over="ignore"):
        sums = block_reduce(a, step, np.add)
    counts = block_reduce(np.ones(a.shape), step, np.add)
    return sums / counts


def draw_comparison(axes: list[Axes], b: BufferComparison, title: str = "") -> None:
    """CPU, GPU and |diff| heatmaps of one buffer on three Axes; CPU and GPU share one colour scale.

    |diff| is grey where the element is within tolerance, coloured by size where it is not.
    """
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize, to_rgba

    rows, cols = layout(b.shape, b.size)
    cpu, gpu, diff, codes = _grids(b, rows, cols)
    values = np.concatenate([cpu.reshape(-1), gpu.reshape(-1)])
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    cmap = colormaps[CMAP]
    shared = Normalize(lo, hi if hi > lo else lo + 1)
    top = float(diff[codes == OUTSIDE].max()) if (codes == OUTSIDE).any() else float(diff.max())
    diff_norm = Normalize(0.0, top if top > 0 else 1.0)
    panels = [
        ("CPU (interpreter)", cpu, shared, None),
        ("GPU (compiled)", gpu, shared, None),
        ("|GPU − CPU|", diff, diff_norm, codes),
    ]
    for ax, (name, data, norm, mismatch) in zip(axes, panels):
        rgba = cmap(norm(np.where(np.isfinite(data), data, float(norm.vmin or 0.0))))
        rgba[np.isnan(data)] = to_rgba(NAN_COLOR)
        rgba[data == np.inf] = to_rgba(POSINF_COLOR)
        rgba[data == -np.inf] = to_rgba(NEGINF_COLOR)
        if mismatch is not None:
            rgba[mismatch != OUTSIDE] = to_rgba(MASKED_COLOR)
        rgba[codes == PADDING] = (1.0, 1.0, 1.0, 0.0)
        ax.imshow(rgba, interpolation="nearest", aspect="auto" if rows == 1 else "equal")
        if rows == 1:
            ax.set_yticks([])
        ax.set_title(f"{title}{name}", fontsize=9)
        figure = ax.get_figure()
        if figure is not None:
            figure.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.046, pad=0.04)


def comparison_figure(launch: Launch, args: list[str] | None = None) -> Figure:
    """A figure with one row of CPU / GPU / |diff| heatmaps per mismatching buffer (or per `args`).

    Raises:
        ValueError: the launch was not compared.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if launch.comparison is None:
        raise ValueError(f"{launch.kernel}: launch {launch.index} was not compared (run %%tkernel compare)")
    chosen = [b for b in launch.comparison.buffers if (b.arg in args if args is not None else not b.ok)]
    chosen = chosen or launch.comparison.buffers[:1]
    figure = Figure(figsize=(12, 3.4 * max(1, len(chosen))), dpi=80, layout="constrained")
    FigureCanvasAgg(figure)
    if not chosen:
        ax = figure.add_subplot()
        ax.set_axis_off()
        ax.text(0.5, 0.5, launch.comparison.verdict(), ha="center", va="center", wrap=True)
        return figure
    grid: Any = figure.subplots(len(chosen), 3, squeeze=False)
    for row, b in zip(grid, chosen):
        head = f"#{launch.index} {launch.kernel} {b.arg}: {b.mismatches} of {b.size} out of tolerance\n"
        draw_comparison(list(row), b, head)
    return figure


def comparison_png(launch: Launch, args: list[str] | None = None) -> bytes:
    """`comparison_figure` as PNG bytes (what the magic displays inline)."""
    out = io.BytesIO()
    comparison_figure(launch, args).savefig(out, format="png")
    return out.getvalue()
