"""`TraceViewer`: the anywidget that shows a trace; drawing lives in js/viewer.js."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from kernel_nb.trace import Launch, Trace
from kernel_nb.view import dispatch, export, precision, static
from kernel_nb.view.assets import asset
from kernel_nb.view.state import Selection, viewer_meta


class TraceViewer(anywidget.AnyWidget):  # type: ignore[misc]
    """An interactive view of a `Trace`: source, per-program values, memory maps, findings.

    Widget state holds only launch-wide metadata (`meta`) and the current selection; values,
    per-program summaries and access maps are fetched by the browser one request at a time
    (see `kernel_nb.view.protocol`), so a launch of thousands of programs costs nothing until
    a program is looked at. Programs whose values were not kept are replayed on request.

    A trace with a failed launch opens at its error: the failing program, line and loop
    iteration (`Selection.first`). Each finding in the list takes the view to its own.

    Args:
        trace: the trace to show (a single `Launch` is shown as a one-launch trace).
        selection: what the view opens on (e.g. `Selection.at_finding(trace, launch, index)`);
            None: `Selection.first(trace)`. Traits given by keyword (`pid=[3, 0, 0]`) win over it.
    """

    _esm = asset("viewer.js")
    _css = asset("viewer.css")

    meta = traitlets.Dict().tag(sync=True)
    launch = traitlets.Int(0).tag(sync=True)
    pid = traitlets.List(traitlets.Int(), default_value=[0, 0, 0]).tag(sync=True)
    stmt = traitlets.Int(-1).tag(sync=True)  # -1: nothing selected
    iteration = traitlets.List(traitlets.Int(), default_value=[]).tag(sync=True)
    finding = traitlets.Int(-1).tag(sync=True)  # the launch's finding the view was taken to; -1: none

    def __init__(self, trace: Trace | Launch, *, selection: Selection | None = None, **kwargs: Any) -> None:
        self.trace = trace if isinstance(trace, Trace) else Trace(launches=[trace])
        start = Selection.first(self.trace) if selection is None else selection
        super().__init__(meta=dict(viewer_meta(self.trace)), **{**start.traits(), **kwargs})
        self.on_msg(self._on_request)

    def _on_request(self, _widget: object, content: dict[str, Any], _buffers: list[bytes]) -> None:
        reply, buffers = dispatch.answer(self.trace, content)
        self.send(dict(reply), buffers)

    def select(
        self,
        *,
        launch: int | None = None,
        pid: int | tuple[int, ...] | None = None,
        name: str | None = None,
        iteration: tuple[int, ...] | None = None,
    ) -> TraceViewer:
        """Point the view at a launch, program and variable (what a click would do).

        Args:
            launch: launch index.
            pid: program id (an int is the x axis).
            name: variable name; its last record in that program unless `iteration` is given.
            iteration: loop iteration of the record.

        Returns:
            The viewer, for chaining in a notebook cell.

        Raises:
            KeyError: the program did not record `name`.
        """
        with self.hold_sync():
            if launch is not None and launch != self.launch:
                self.launch, self.finding = launch, -1  # the finding marked was of the other launch
            if pid is not None:
                padded = [pid] if isinstance(pid, int) else list(pid)
                self.pid = [*padded, 0, 0, 0][:3]
            if name is not None:
                current = self.trace[self.launch]
                records = [
                    r
                    for r in current.programs[(self.pid[0], self.pid[1], self.pid[2])].records
                    if current.statements[r.stmt].name == name
                    and not precision.is_companion(current, r.stmt)
                    and (iteration is None or r.iteration == tuple(iteration))
                ]
                if not records:
                    raise KeyError(f"{current.kernel}: program {tuple(self.pid)} recorded no {name!r}")
                self.stmt = records[-1].stmt
                self.iteration = list(records[-1].iteration)
        return self

    def show_finding(self, index: int, *, launch: int | None = None) -> TraceViewer:
        """Take the view to a finding, as a click on it in the list does.

        Args:
            index: the finding's position in the launch's findings.
            launch: the launch's position in the trace (default: the one shown).

        Returns:
            The viewer, for chaining in a notebook cell.

        Raises:
            IndexError: no such launch or finding.
        """
        at = Selection.at_finding(self.trace, self.launch if launch is None else launch, index)
        with self.hold_sync():
            for name, value in at.traits().items():
                setattr(self, name, value)
        return self

    @property
    def selection(self) -> Selection:
        """What the view points at now."""
        return Selection(self.launch, tuple(self.pid), self.stmt, tuple(self.iteration), self.finding)

    def to_png(self) -> bytes:
        """The current view as a PNG (what notebooks without the widget's JavaScript show)."""
        return static.render_png(self.trace, self.launch, tuple(self.pid), self.stmt, tuple(self.iteration))

    def to_html(self, path: str | Path | None = None, *, max_bytes: int | None = None) -> str:
        """The viewer as a standalone page that stays interactive offline (no kernel, no network).

        Args:
            path: where to write the page, if anywhere.
            max_bytes: budget for the embedded replies (default `kernel_nb.view.export.DEFAULT_MAX_BYTES`);
                past it, the first programs in pid order and the selected one are in the page.

        Returns:
            The page's HTML.
        """
        budget = export.DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
        if path is None:
            return export.page_html(self.trace, self.selection, max_bytes=budget)
        return export.write_page(self.trace, path, self.selection, max_bytes=budget)

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        data["image/png"] = base64.b64encode(self.to_png()).decode("ascii")
        return data, metadata
