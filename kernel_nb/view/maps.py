"""Access maps: which elements of a buffer one program, or the whole launch, touched."""

from __future__ import annotations

import bisect
import math
from typing import Any, cast

import numpy as np

from kernel_nb.trace import Launch, ProgramTrace, Trace
from kernel_nb.view import protocol as p
from kernel_nb.view.payloads import block_reduce, launch_at, program_key, reduction_steps, with_values

FOOTPRINT_LEGEND = ["untouched", "loaded", "stored", "loaded and stored"]
BUFFER_LEGEND = ["untouched", "read only", "written once", "never written", "written by several programs"]
# Long 1-D buffers are drawn as rows of this many elements rather than as one unreadable strip.
WRAP = 1024


def _grid_of(shape: tuple[int, ...], size: int) -> tuple[int, int]:
    """How a buffer is laid out for drawing: its own rows when 2-D or more, wrapped rows when long and 1-D."""
    if len(shape) >= 2 and math.prod(shape) == size:
        return size // shape[-1], shape[-1]
    if size <= WRAP:
        return 1, max(size, 1)
    return -(-size // WRAP), WRAP


def _map_reply(
    kind: str,
    rid: int,
    arg: str,
    shape: tuple[int, ...],
    codes: np.ndarray,
    legend: list[str],
    oob: list[list[int]],
    *,
    size: int | None = None,
    start: int = 0,
) -> tuple[p.MapReply, list[bytes]]:
    """A map of `size` elements of which `codes` covers [start, start + codes.size); the rest is untouched.

    Only the rows of the drawn view that hold `codes` travel (`window`): one program's footprint
    in a large buffer is a few rows, and a whole-buffer map per pid is what made the pid slider slow.
    """
    size = int(codes.size) if size is None else size
    rows, cols = _grid_of(shape, size)
    step = reduction_steps(rows, cols, p.MAX_MAP_CELLS, p.MAX_SIDE)
    view_rows, view_cols = -(-rows // step[0]), -(-cols // step[1])
    if codes.size:
        first = (start // cols) // step[0]
        last = ((start + codes.size - 1) // cols) // step[0] + 1
    else:
        first = last = 0
    base = first * step[0] * cols
    flat = np.zeros((last - first) * step[0] * cols, dtype=np.uint8)
    # a wrapped last row is padded; the browser leaves offsets past `size` blank
    flat[start - base : start - base + codes.size] = codes
    grid = flat.reshape(-1, cols)
    note = ""
    if step != [1, 1]:
        # The largest code is the most alarming one, so a reduced block shows its worst element.
        if grid.size:
            grid = block_reduce(grid, step, np.maximum)
        note = f"reduced {step[0]}×{step[1]}: each cell shows its block's most notable state"
    counts = np.bincount(codes, minlength=len(legend))[: len(legend)]
    counts[0] += size - codes.size  # elements outside the covered range are untouched (code 0)
    reply: p.MapReply = {
        "type": cast(Any, kind),
        "id": rid,
        "arg": arg,
        "shape": list(shape),
        "size": size,
        "grid": [rows, cols],
        "view_shape": [view_rows, view_cols],
        "step": step,
        "legend": legend,
        "counts": [int(c) for c in counts],
        "oob": oob,
        "note": note,
        "window": [first, last],
    }
    return reply, [np.ascontiguousarray(grid).tobytes()]


def _loop_bodies(launch: Launch) -> list[tuple[str, int, int]]:
    """(file, first line, last line) of every loop's body, read off the source's indentation."""
    bodies = []
    for source in launch.sources.values():
        lines = source.text.splitlines()
        for stmt in launch.statements:
            at = stmt.line - source.first_line
            if stmt.kind != "loop" or stmt.file != source.file or not 0 <= at < len(lines):
                continue
            indent = len(lines[at]) - len(lines[at].lstrip())
            last = at
            for i in range(at + 1, len(lines)):
                text = lines[i]
                if text.strip() and len(text) - len(text.lstrip()) <= indent:
                    break
                if text.strip():
                    last = i
            bodies.append((source.file, source.first_line + at + 1, source.first_line + last))
    return bodies


def event_iterations(launch: Launch, program: ProgramTrace) -> list[tuple[int, ...]]:
    """The loop iteration each memory event of `program` ran in, read off the records around it.

    Events carry no iteration of their own. A loop records its counter first in every iteration,
    so an event belongs with the record before it, unless the record after it is shallower: the
    loop was left in between, and how many loops the event is inside is read off its line.
    """
    seqs = [r.seq for r in program.records]
    bodies: list[tuple[str, int, int]] | None = None
    out = []
    for event in program.events:
        at = bisect.bisect_left(seqs, event.seq)
        before = program.records[at - 1].iteration if at > 0 else ()
        after = program.records[at].iteration if at < len(seqs) else ()
        if len(after) < len(before):
            bodies = _loop_bodies(launch) if bodies is None else bodies
            depth = sum(f == event.file and lo <= event.line <= hi for f, lo, hi in bodies)
            before = before[: max(len(after), min(depth, len(before)))]
        out.append(before)
    return out


def footprint_reply(trace: Trace, request: p.FootprintRequest) -> tuple[p.MapReply, list[bytes]]:
    """Which elements of one buffer this program loaded and stored (active lanes only).

    With `iteration`, only the accesses made in that loop iteration (and the loops inside it).
    """
    launch = launch_at(trace, request["launch"])
    pid = program_key(launch, request["pid"])
    arg = request["arg"]
    buffer = launch.buffers[arg]
    program = with_values(launch, pid)
    wanted = tuple(request.get("iteration") or ())
    iterations = event_iterations(launch, program) if wanted else [()] * len(program.events)
    touched: list[tuple[np.ndarray, int]] = []
    for event, iteration in zip(program.events, iterations, strict=True):
        if event.arg != arg or event.indices is None or iteration[: len(wanted)] != wanted:
            continue
        offsets = np.asarray(event.indices).reshape(-1)
        if event.mask is not None:
            offsets = offsets[np.broadcast_to(event.mask, event.indices.shape).reshape(-1)]
        offsets = offsets[(offsets >= 0) & (offsets < buffer.size)].astype(np.int64)
        touched.append((offsets, 1 if event.kind == "load" else 2 if event.kind == "store" else 3))
    nonempty = [offsets for offsets, _ in touched if offsets.size]
    lo = min((int(o.min()) for o in nonempty), default=0)
    hi = max((int(o.max()) + 1 for o in nonempty), default=0)
    codes = np.zeros(hi - lo, dtype=np.uint8)
    for offsets, bit in touched:
        codes[offsets - lo] |= bit
    linear = launch.linear(pid)
    oob = [[*pid, line, first] for lin, line, first in buffer.oob if lin == linear][:50]
    return _map_reply(
        "footprint",
        request["id"],
        arg,
        buffer.shape,
        codes,
        FOOTPRINT_LEGEND,
        oob,
        size=buffer.size,
        start=lo,
    )


def buffer_reply(trace: Trace, request: p.BufferRequest) -> tuple[p.MapReply, list[bytes]]:
    """One buffer over all programs: read, written once, never written, written by several programs."""
    launch = launch_at(trace, request["launch"])
    buffer = launch.buffers[request["arg"]]
    codes = np.zeros(buffer.size, dtype=np.uint8)
    codes[buffer.reads > 0] = 1
    codes[buffer.writes == 1] = 2
    if buffer.written:
        codes[buffer.writes == 0] = 3
    codes[buffer.writes > 1] = 4
    oob = [[*launch.pid_of(lin), line, first] for lin, line, first in buffer.oob[:50]]
    return _map_reply("buffer", request["id"], buffer.arg, buffer.shape, codes, BUFFER_LEGEND, oob)
