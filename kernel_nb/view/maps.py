"""Access maps: which elements of a buffer one program, or the whole launch, touched."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from kernel_nb.trace import Trace
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
) -> tuple[p.MapReply, list[bytes]]:
    size = int(codes.size)
    rows, cols = _grid_of(shape, size)
    flat = np.zeros(rows * cols, dtype=np.uint8)
    flat[:size] = codes  # a wrapped last row is padded; the browser leaves offsets past `size` blank
    grid = flat.reshape(rows, cols)
    step = reduction_steps(rows, cols, p.MAX_MAP_CELLS, p.MAX_SIDE)
    note = ""
    if step != [1, 1]:
        # The largest code is the most alarming one, so a reduced block shows its worst element.
        grid = block_reduce(grid, step, np.maximum)
        note = f"reduced {step[0]}×{step[1]}: each cell shows its block's most notable state"
    reply: p.MapReply = {
        "type": cast(Any, kind),
        "id": rid,
        "arg": arg,
        "shape": list(shape),
        "size": size,
        "grid": [rows, cols],
        "view_shape": list(grid.shape),
        "step": step,
        "legend": legend,
        "counts": [int(c) for c in np.bincount(codes, minlength=len(legend))[: len(legend)]],
        "oob": oob,
        "note": note,
    }
    return reply, [np.ascontiguousarray(grid).tobytes()]


def footprint_reply(trace: Trace, request: p.FootprintRequest) -> tuple[p.MapReply, list[bytes]]:
    """Which elements of one buffer this program loaded and stored (active lanes only)."""
    launch = launch_at(trace, request["launch"])
    pid = program_key(launch, request["pid"])
    arg = request["arg"]
    buffer = launch.buffers[arg]
    program = with_values(launch, pid)
    codes = np.zeros(buffer.size, dtype=np.uint8)
    for event in program.events:
        if event.arg != arg or event.indices is None:
            continue
        offsets = np.asarray(event.indices).reshape(-1)
        if event.mask is not None:
            offsets = offsets[np.broadcast_to(event.mask, event.indices.shape).reshape(-1)]
        offsets = offsets[(offsets >= 0) & (offsets < buffer.size)].astype(np.int64)
        bit = 1 if event.kind == "load" else 2 if event.kind == "store" else 3
        codes[offsets] |= bit
    linear = launch.linear(pid)
    oob = [[*pid, line, first] for lin, line, first in buffer.oob if lin == linear][:50]
    return _map_reply("footprint", request["id"], arg, buffer.shape, codes, FOOTPRINT_LEGEND, oob)


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
