"""Trace → viewer payloads: the widget's metadata, program summaries and value views.

Everything here is plain functions over `kernel_nb.trace` objects, so the widget class only
routes messages (`kernel_nb.view.dispatch`) and the tests can check payloads without a browser.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from kernel_nb.trace import Launch, MemoryEvent, ProgramTrace, Record, Summary, Trace
from kernel_nb.trace.coordinates import box_text, layout_of
from kernel_nb.view import precision
from kernel_nb.view import protocol as p

# A program that loops a long time can hold many records; past this the list is cut (with a count).
MAX_ENTRIES = 10_000
MAX_FINDINGS = 200
HIST_BINS = 32


class RequestError(Exception):
    """A request the trace cannot answer; the message goes back to the browser."""


def finite_or_none(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def summary_payload(s: Summary) -> p.SummaryPayload:
    return {
        "min": finite_or_none(s.min),
        "max": finite_or_none(s.max),
        "mean": finite_or_none(s.mean),
        "nan": int(s.nan),
        "inf": int(s.inf),
        "size": int(s.size),
    }


def viewer_meta(trace: Trace) -> p.ViewerMeta:
    """The launch-wide metadata kept in widget state: no per-program data, whatever the grid."""
    return {"launches": [_launch_meta(launch) for launch in trace]}


def _launch_meta(launch: Launch) -> p.LaunchMeta:
    findings: list[p.FindingMeta] = [
        {
            "kind": f.kind,
            "severity": f.severity,
            "message": f.message,
            "pid": list(f.pid) if f.pid is not None else None,
            "file": f.file,
            "line": f.line,
            "arg": f.arg,
            "elements": int(f.elements.size) if f.elements is not None else 0,
        }
        for f in launch.findings[:MAX_FINDINGS]
    ]
    worst = precision.statement_precision(launch)
    return {
        "index": launch.index,
        "kernel": launch.kernel,
        "grid": list(launch.grid),
        "num_programs": launch.num_programs,
        "status": launch.status,
        "error": launch.error,
        "shadow": launch.shadow,
        "statements": [
            {
                "id": s.id,
                "file": s.file,
                "line": s.line,
                "name": s.name,
                "function": s.function,
                "kind": s.kind,
                "precision": worst.get(s.id),
            }
            for s in launch.statements
            if not precision.is_companion(launch, s.id)
        ],
        "sources": [
            {"function": s.function, "file": s.file, "first_line": s.first_line, "text": s.text}
            for s in launch.sources.values()
        ],
        "args": [
            {"name": a.name, "kind": a.kind, "dtype": a.dtype, "shape": list(a.shape)} for a in launch.args
        ],
        "buffers": [
            {
                "arg": b.arg,
                "size": b.size,
                "shape": list(b.shape),
                "written": b.written,
                "never_written": int(b.never_written().size) if b.written else 0,
                "written_more_than_once": int(b.written_more_than_once().size),
                "oob": len(b.oob),
            }
            for b in launch.buffers.values()
        ],
        "findings": findings,
        "findings_total": len(launch.findings),
    }


def default_selection(trace: Trace) -> tuple[int, list[int], int, list[int]]:
    """What the viewer shows first: launch 0, its first program, the last non-scalar value it recorded."""
    if not trace.launches or not trace[0].programs:
        return 0, [0, 0, 0], -1, []
    launch = trace[0]
    pid = (0, 0, 0) if (0, 0, 0) in launch.programs else next(iter(launch.programs))
    records = [r for r in launch.programs[pid].records if not precision.is_companion(launch, r.stmt)]
    shaped = [r for r in records if r.shape] or records
    if not shaped:
        return 0, list(pid), -1, []
    return 0, list(pid), shaped[-1].stmt, list(shaped[-1].iteration)


def launch_at(trace: Trace, index: int) -> Launch:
    if not 0 <= index < len(trace):
        raise RequestError(f"no launch {index} (the trace has {len(trace)})")
    return trace[index]


def program_key(launch: Launch, pid: list[int]) -> tuple[int, int, int]:
    key = (int(pid[0]), int(pid[1]), int(pid[2]))
    if launch.aggregated_only(key):
        raise RequestError(
            f"{launch.kernel}: program {key} kept per-statement aggregates only (past "
            "Options.summary_bytes); launch.program(pid) replays it"
        )
    if key not in launch.programs:
        raise RequestError(f"{launch.kernel}: program {key} did not run (grid {launch.grid})")
    return key


def program_reply(trace: Trace, request: p.ProgramRequest) -> p.ProgramReply:
    """Summaries of one program's records and events; reads no values, so it never replays."""
    launch = launch_at(trace, request["launch"])
    program = launch.programs[program_key(launch, request["pid"])]
    owners = precision.companions_by_statement(launch)
    companions = {c for ids in owners.values() for c in ids}
    records: list[p.RecordEntry] = []
    # without a shadow every record is listed: the first MAX_ENTRIES are all that is looked at
    records_left_out = 0 if companions else max(0, len(program.records) - MAX_ENTRIES)
    for i, r in enumerate(program.records if companions else program.records[:MAX_ENTRIES]):
        if r.stmt in companions:  # listed with the record they follow
            continue
        if len(records) == MAX_ENTRIES:
            records_left_out += 1
            continue
        records.append(
            {
                "index": i,
                "stmt": r.stmt,
                "seq": r.seq,
                "iteration": list(r.iteration),
                "call_path": list(r.call_path),
                "dtype": r.dtype,
                "shape": list(r.shape),
                "summary": summary_payload(r.summary),
                "pointer_arg": r.pointer_arg,
                "companions": precision.companion_records(program.records, i, owners.get(r.stmt)),
            }
        )
    events: list[p.EventEntry] = [
        {
            "index": i,
            "kind": e.kind,
            "seq": e.seq,
            "file": e.file,
            "line": e.line,
            "arg": e.arg,
            "active": e.active,
            "lanes": int(e.mask.size) if e.mask is not None else e.active,
            "lo": e.lo,
            "hi": e.hi,
            "elements": event_elements(launch, e),
        }
        for i, e in enumerate(program.events[:MAX_ENTRIES])
    ]
    left_out = records_left_out + max(0, len(program.events) - MAX_ENTRIES)
    return {
        "type": "program",
        "id": request["id"],
        "launch": launch.index,
        "pid": list(program.pid),
        "kept": program.kept,
        "records": records,
        "events": events,
        "stdout": program.stdout[-20_000:],
        "truncated": left_out,
    }


def event_elements(launch: Launch, event: MemoryEvent) -> str:
    """The elements an access touched, as the events table shows them: "[lo, hi)" of a 1-D
    argument; of an n-D one the box of indices its active lanes fill ("[3, 0:64]", where its lanes
    were kept), else its lowest and highest element ("[3, 0] … [4, 63]")."""
    flat = f"[{event.lo}, {event.hi})"
    layout = layout_of(launch, event.arg) if event.arg is not None else None
    if layout is None or not layout.shaped or not event.active:
        return flat
    if event.indices is not None and event.mask is not None:
        active = np.broadcast_to(np.asarray(event.mask, bool), np.shape(event.indices))
        index = layout.indices(np.asarray(event.indices)[active])
        box = None if index is None else box_text(index)
        if box is not None:
            return box
    ends = layout.indices(np.array([event.lo, event.hi - 1]))
    if ends is None:
        return flat
    first, last = (", ".join(str(int(i)) for i in end) for end in ends)
    return f"[{first}] … [{last}]"


def with_values(launch: Launch, pid: tuple[int, int, int]) -> ProgramTrace:
    program = launch.program(pid)  # replays the program when its values were not kept
    if not program.kept and launch.replayer is None and not _has_values(program):
        raise RequestError(
            f"{launch.kernel}: the values of program {pid} were not kept and this trace cannot replay "
            "them (a loaded trace has no kernel); raise the capture budget to keep them"
        )
    return program


def _has_values(program: ProgramTrace) -> bool:
    return any(r.value is not None for r in program.records) or any(
        e.indices is not None for e in program.events
    )


def value_reply(trace: Trace, request: p.ValueRequest) -> tuple[p.ValueReply, list[bytes]]:
    """One recorded value (or a memory event's lanes) as a 2-D float view, reduced to fit one message."""
    launch = launch_at(trace, request["launch"])
    pid = program_key(launch, request["pid"])
    program = with_values(launch, pid)
    index = int(request["index"])
    mask: np.ndarray | None = None
    if request["source"] == "record":
        record: Record = program.records[index]
        if record.value is None:
            raise RequestError(f"{launch.kernel}: record {index} of program {pid} has no value")
        value = np.asarray(record.value)
        stmt = launch.statements[record.stmt]
        label = f"{stmt.name} ({stmt.function}:{stmt.line})"
        if record.iteration:
            label += f" iteration {tuple(record.iteration)}"
        if precision.is_companion(launch, record.stmt):
            label += f": {precision.COMPANION_LABELS[stmt.kind]}"
        dtype, summary = record.dtype, record.summary
    else:
        event: MemoryEvent = program.events[index]
        field = request.get("field", "values")
        data = getattr(event, field)
        if data is None:
            raise RequestError(
                f"{launch.kernel}: {event.kind} at line {event.line} of program {pid} has no {field}"
            )
        value, mask = np.asarray(data), event.mask
        label = f"{event.kind} of {event.arg or '(no lane active)'} (line {event.line}): {field}"
        dtype, summary = str(value.dtype), Summary.of(value)
    view, axes, at, index_mask = _view2d(value, request.get("axes"), request.get("at"), mask)
    floats, fmt = _as_floats(view)
    rows, cols = floats.shape
    max_cells = p.MAX_VALUE_BYTES // floats.itemsize
    step = reduction_steps(rows, cols, max_cells, p.MAX_SIDE)
    note = ""
    if step != [1, 1]:
        floats = _block_mean(floats, step)
        note = f"reduced {step[0]}×{step[1]} (block means) to fit one message"
        if index_mask is not None:
            index_mask = block_reduce(index_mask, step, np.maximum)
    reply: p.ValueReply = {
        "type": "value",
        "id": request["id"],
        "label": label,
        "dtype": dtype,
        "shape": list(value.shape),
        "axes": axes,
        "at": at,
        "view_shape": list(floats.shape),
        "step": step,
        "format": fmt,
        "has_mask": index_mask is not None,
        "summary": summary_payload(summary),
        "hist": _histogram(value, summary),
        "note": note,
    }
    buffers = [np.ascontiguousarray(floats).tobytes()]
    if index_mask is not None:
        buffers.append(np.ascontiguousarray(index_mask, dtype=np.uint8).tobytes())
    return reply, buffers


def _view2d(
    value: np.ndarray, axes: list[int] | None, at: list[int] | None, mask: np.ndarray | None
) -> tuple[np.ndarray, list[int], list[int], np.ndarray | None]:
    """The 2-D slice drawn: a scalar as 1x1, 1-D as one row, rank ≥ 3 along two chosen axes."""
    ndim = value.ndim
    if mask is not None and mask.shape != value.shape:
        mask = np.broadcast_to(mask, value.shape) if mask.size in (1, value.size) else None
    if ndim == 0:
        return value.reshape(1, 1), [], [], None if mask is None else mask.reshape(1, 1)
    if ndim == 1:
        return value.reshape(1, -1), [0], [0], None if mask is None else mask.reshape(1, -1)
    chosen = list(axes) if axes and len(axes) == 2 else [ndim - 2, ndim - 1]
    if chosen[0] == chosen[1] or not all(0 <= a < ndim for a in chosen):
        raise RequestError(f"axes {chosen} do not name two distinct axes of a rank-{ndim} value")
    where = [0] * ndim if not at or len(at) != ndim else [int(i) for i in at]
    for axis in chosen:
        where[axis] = 0
    for axis, i in enumerate(where):
        if not 0 <= i < value.shape[axis]:
            raise RequestError(f"index {i} is outside axis {axis} of shape {value.shape}")
    index: list[Any] = [slice(None) if axis in chosen else where[axis] for axis in range(ndim)]
    view = value[tuple(index)]
    sliced_mask = None if mask is None else mask[tuple(index)]
    if chosen[0] > chosen[1]:  # indexing keeps axis order; the request asked rows from the later axis
        view = view.T
        sliced_mask = None if sliced_mask is None else sliced_mask.T
    return view, chosen, where, sliced_mask


def _as_floats(view: np.ndarray) -> tuple[np.ndarray, Literal["f4", "f8"]]:
    """float32 unless that would change what the user sees (float64 data, integers past 2**24)."""
    if view.dtype == np.float64:
        return view, "f8"
    if view.dtype.kind in "iu" and view.size and int(np.abs(view.astype(np.int64)).max()) >= 2**24:
        return view.astype(np.float64), "f8"
    return view.astype(np.float32), "f4"


def reduction_steps(rows: int, cols: int, max_cells: int, max_side: int) -> list[int]:
    sr, sc = -(-rows // max_side), -(-cols // max_side)
    while -(-rows // sr) * -(-cols // sc) > max_cells:
        if -(-rows // sr) >= -(-cols // sc):
            sr += 1
        else:
            sc += 1
    return [sr, sc]


def block_reduce(a: np.ndarray, step: list[int], ufunc: np.ufunc) -> np.ndarray:
    rows = ufunc.reduceat(a, np.arange(0, a.shape[0], step[0]), axis=0)
    return ufunc.reduceat(rows, np.arange(0, a.shape[1], step[1]), axis=1)


def _block_mean(a: np.ndarray, step: list[int]) -> np.ndarray:
    # Sums propagate NaN and ±Inf, so a block holding one still shows it after the reduction.
    with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf in one block is NaN, as intended
        sums = block_reduce(a.astype(np.float64), step, np.add)
    counts = block_reduce(np.ones(a.shape, dtype=np.float64), step, np.add)
    return (sums / counts).astype(a.dtype)


def _histogram(value: np.ndarray, summary: Summary) -> p.Histogram:
    lo, hi = finite_or_none(summary.min), finite_or_none(summary.max)
    if lo is None or hi is None:
        return {"counts": [], "lo": lo, "hi": hi}
    flat = value.reshape(-1).astype(np.float64)
    flat = flat[np.isfinite(flat)]
    counts, _ = np.histogram(flat, bins=HIST_BINS, range=(lo, hi if hi > lo else lo + 1))
    return {"counts": [int(c) for c in counts], "lo": lo, "hi": hi}
