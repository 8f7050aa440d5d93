"""Standalone HTML of a viewer that works offline: no kernel, no network, no CDN.

The page runs the viewer's own ESM (js/viewer.js), unchanged, against a stand-in for the anywidget
model (js/offline.js) that answers each request from a table of replies computed here with
`dispatch.answer`, exactly as the live widget answers them. The table holds what a reader can ask
for: each launch's buffer maps, comparisons and IR stages, and per program its summary, the value
of every record (with, for a shadow run, its fp64 shadow and errors) and memory event (lanes and
offsets) and its access maps. A byte budget bounds it: the selected program comes first, then each
launch's programs in pid order until one no longer fits; requests outside the table get the
viewer's error reply, saying to open the notebook in Jupyter. Other axes of a value of rank >= 3
are left out for the same reason.
"""

from __future__ import annotations

import base64
import html
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kernel_nb.trace import Launch, Trace
from kernel_nb.view import dispatch, static
from kernel_nb.view import protocol as p
from kernel_nb.view.assets import asset
from kernel_nb.view.state import Selection, viewer_meta

DEFAULT_MAX_BYTES = 8 * 1024 * 1024
MISSING = "not in this offline export; open the notebook in Jupyter"


class Shown(Protocol):
    """A view of a trace at a selection, such as a `TraceViewer`."""

    @property
    def trace(self) -> Trace: ...

    @property
    def selection(self) -> Selection: ...


Source = Trace | Launch | Shown


@dataclass(frozen=True)
class Canned:
    """One request's reply as the page embeds it: JSON, and each binary buffer in base64."""

    reply: dict[str, Any]
    buffers: list[str]

    @property
    def size(self) -> int:
        """Bytes it adds to the page."""
        return len(json.dumps(self.reply)) + sum(len(b) for b in self.buffers)


@dataclass
class ReplyTable:
    """The replies an offline page can give, keyed by `request_key`, and what they cover.

    Attributes:
        replies: the canned replies.
        programs: per launch (position in the trace), the programs whose replies are all there.
        size: bytes the replies add to the page.
    """

    replies: dict[str, Canned] = field(default_factory=dict)
    programs: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    size: int = 0


def request_key(request: dict[str, Any]) -> str:
    """The key of a request without its `id`: js/offline.js builds the same text from what the viewer sends."""
    body = {k: v for k, v in request.items() if k != "id"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _resolve(source: Source, selection: Selection | None) -> tuple[Trace, Selection]:
    if isinstance(source, Launch):
        source = Trace(launches=[source])
    if isinstance(source, Trace):
        return source, Selection.first(source) if selection is None else selection
    return source.trace, source.selection if selection is None else selection


def _state(trace: Trace, selection: Selection) -> dict[str, Any]:
    """The widget state the page starts from, as the live widget syncs it."""
    return {"meta": viewer_meta(trace), **selection.traits()}


def reply_table(
    source: Source, selection: Selection | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> ReplyTable:
    """Compute the replies an offline page embeds for a trace shown at a selection.

    Args:
        source: a trace or launch, or a view of one (a `TraceViewer`: its trace and selection).
        selection: what the page opens on; None: the view's, or what a new viewer would show.
        max_bytes: budget for the replies. The selected program's summary and selected value are
            kept whatever their size, so that the page opens on what the viewer shows.

    Returns:
        The table, and which programs it covers.
    """
    trace, chosen = _resolve(source, selection)
    return _table(trace, _state(trace, chosen), max_bytes)


def export_html(
    source: Source, selection: Selection | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> str:
    """A self-contained HTML fragment showing the viewer, interactive without a kernel.

    It inlines the viewer's ESM and CSS, the widget state and the replies of `reply_table`, and
    shows the static PNG until the script has drawn the viewer (or in place of it, without JavaScript).
    Several fragments can share a page.

    Args:
        source: a trace or launch, or a view of one (a `TraceViewer`: its trace and selection).
        selection: what the page opens on (see `reply_table`).
        max_bytes: budget for the embedded replies (see `reply_table`).

    Returns:
        HTML to put inside a page's body.
    """
    trace, chosen = _resolve(source, selection)
    state = _state(trace, chosen)
    table = _table(trace, state, max_bytes)
    png_bytes = static.render_png(trace, chosen.launch, chosen.pid, chosen.stmt, chosen.iteration)
    png = base64.b64encode(png_bytes).decode("ascii")
    payload = {
        "esm": asset("viewer.js"),
        "state": state,
        "replies": {k: {"reply": c.reply, "buffers": c.buffers} for k, c in table.replies.items()},
        "missing": MISSING,
    }
    # In a <script> element only "</script" and "<!--" end or derail it; "\u003c" is "<" to JSON.
    data = json.dumps(payload, separators=(",", ":")).replace("<", "\\u003c")
    css = asset("viewer.css").replace("</", "<\\/")
    js = asset("offline.js").replace("</script", "<\\/script")
    note = html.escape(_coverage_note(trace, table), quote=False)
    return (
        f'<div class="knb-offline" id="knb-offline-{uuid.uuid4().hex[:12]}">\n'
        f"<style>{css}</style>\n"
        f'<div class="knb-offline-note" style="font: 12px system-ui, sans-serif; color: #6b6b6b;">{note}</div>\n'
        f'<div class="knb-offline-view"><img class="knb-offline-fallback" alt="kernel_nb viewer (static)" '
        f'src="data:image/png;base64,{png}"></div>\n'
        f'<script type="application/json" data-knb-offline>{data}</script>\n'
        f'<script type="module">{js}</script>\n'
        "</div>"
    )


def page_html(
    source: Source,
    selection: Selection | None = None,
    *,
    title: str = "kernel_nb",
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """`export_html` as a whole page (see `TraceViewer.to_html`)."""
    return (
        f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        '<link rel="icon" href="data:,"></head>\n'
        f'<body style="margin: 12px;">\n{export_html(source, selection, max_bytes=max_bytes)}\n</body></html>\n'
    )


def write_page(
    source: Source,
    path: str | Path,
    selection: Selection | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> str:
    """Write `page_html` to `path` and return it."""
    text = page_html(source, selection, title=Path(path).stem, max_bytes=max_bytes)
    Path(path).write_text(text, encoding="utf-8")
    return text


def _table(trace: Trace, state: dict[str, Any], max_bytes: int) -> ReplyTable:
    table = ReplyTable()
    launches: list[p.LaunchMeta] = state["meta"].get("launches", [])
    if not launches:
        return table

    def fits(unit: dict[str, Canned]) -> bool:
        cost = sum(c.size for c in unit.values())
        if table.size + cost > max_bytes:
            return False
        table.replies.update(unit)
        table.size += cost
        return True

    chosen = state["launch"] if 0 <= state["launch"] < len(launches) else 0
    order = [chosen, *(i for i in range(len(launches)) if i != chosen)]
    selected = (chosen, tuple(state["pid"]))
    if selected[1] in trace[chosen].programs:
        unit = _program_unit(trace, launches[chosen], selected[1])
        if not fits(unit):
            # Too big for the budget: keep what the page opens on, the summary and the selected value.
            kept = _opening(unit, launches[chosen], selected[1], state["stmt"], state["iteration"])
            table.replies.update(kept)
            table.size += sum(c.size for c in kept.values())
        else:
            table.programs.setdefault(chosen, []).append(selected[1])
    for i in order:
        for request in _launch_requests(launches[i]):
            fits({request_key(request): _canned(trace, request)})
    for i in order:
        launch = trace[i]
        for pid in sorted(launch.programs, key=launch.linear):
            if (i, pid) == selected:
                continue
            if not fits(_program_unit(trace, launches[i], pid)):
                break
            table.programs.setdefault(i, []).append(pid)
    return table


def _canned(trace: Trace, request: dict[str, Any]) -> Canned:
    reply, buffers = dispatch.answer(trace, {"id": 0, **request})
    body = {k: v for k, v in reply.items() if k != "id"}
    try:
        json.dumps(body, allow_nan=False)
    except ValueError:  # one NaN would make the whole page's JSON unreadable
        body = {
            "type": "error",
            "message": "this reply holds NaN and cannot be embedded; open the notebook in Jupyter",
        }
        buffers = []
    return Canned(body, [base64.b64encode(b).decode("ascii") for b in buffers])


def _launch_requests(meta: p.LaunchMeta) -> list[dict[str, Any]]:
    """The requests of a launch that no program selects: all programs' access maps, comparisons, IR."""
    index = meta["index"]
    requests: list[dict[str, Any]] = [
        {"type": "buffer", "launch": index, "arg": b["arg"]} for b in meta["buffers"]
    ]
    comparison = meta.get("comparison")
    if comparison:
        requests += [{"type": "compare", "launch": index, "arg": b["arg"]} for b in comparison["buffers"]]
    artifacts = meta.get("artifacts")
    if artifacts:
        requests += [{"type": "artifact", "launch": index, "stage": s} for s in artifacts["stages"]]
    return requests


def _program_unit(trace: Trace, meta: p.LaunchMeta, pid: tuple[int, ...]) -> dict[str, Canned]:
    """Every reply about one program, as the viewer asks for them (the request bodies of js/viewer.js)."""
    where = {"launch": meta["index"], "pid": list(pid)}
    program_request = {"type": "program", **where}
    program = _canned(trace, program_request)
    unit = {request_key(program_request): program}
    if program.reply["type"] != "program":
        return unit
    requests: list[dict[str, Any]] = [
        {"type": "value", **where, "source": "record", "index": index, "field": "values"}
        for r in program.reply["records"]
        for index in (r["index"], *r["companions"])
    ]
    requests += [
        {"type": "value", **where, "source": "event", "index": e["index"], "field": f}
        for e in program.reply["events"]
        for f in ("values", "indices")
    ]
    requests += [{"type": "footprint", **where, "arg": b["arg"]} for b in meta["buffers"]]
    for request in requests:
        unit[request_key(request)] = _canned(trace, request)
    return unit


def _opening(
    unit: dict[str, Canned], meta: p.LaunchMeta, pid: tuple[int, ...], stmt: int, iteration: list[int]
) -> dict[str, Canned]:
    """The replies the viewer needs to draw its first view: the program's summary and the selected record."""
    where = {"launch": meta["index"], "pid": list(pid)}
    program_key = request_key({"type": "program", **where})
    kept = {program_key: unit[program_key]}
    records = unit[program_key].reply.get("records", [])
    # As the viewer picks: the record of this statement and iteration, else its last, else the last shaped one.
    of_stmt = [r for r in records if r["stmt"] == stmt]
    chosen = next((r for r in of_stmt if r["iteration"] == list(iteration)), of_stmt[-1] if of_stmt else None)
    if chosen is None:
        shaped = [r for r in records if r["shape"]] or records
        chosen = shaped[-1] if shaped else None
    if chosen is not None:
        for index in (chosen["index"], *chosen["companions"]):  # a shadow run's errors are drawn beside it
            value_key = request_key(
                {"type": "value", **where, "source": "record", "index": index, "field": "values"}
            )
            kept[value_key] = unit[value_key]
    return kept


def _coverage_note(trace: Trace, table: ReplyTable) -> str:
    partial = [
        f"{launch.kernel} (launch {i}): {len(table.programs.get(i, []))} of {len(launch.programs)} programs"
        for i, launch in enumerate(trace)
        if len(table.programs.get(i, [])) < len(launch.programs)
    ]
    if not partial:
        return "kernel_nb offline view: every program's values are in this page."
    return (
        f"kernel_nb offline view: {'; '.join(partial)} are in this page (the first ones in pid order and the "
        "selected one); open the notebook in Jupyter for the others."
    )
