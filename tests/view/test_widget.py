"""TraceViewer's Python side: state traits, the request handler, the PNG in its bundle."""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np
import pytest

from kernel_nb.trace import Trace
from kernel_nb.view import TraceViewer

PNG = b"\x89PNG\r\n\x1a\n"


class Sent:
    """Captures what the widget sends to the browser."""

    def __init__(self, viewer: TraceViewer) -> None:
        self.messages: list[tuple[dict[str, Any], list[bytes]]] = []
        viewer.send = lambda content, buffers=None: self.messages.append((content, list(buffers or [])))


def request(viewer: TraceViewer, content: dict[str, Any]) -> None:
    """Deliver a custom message the way the comm does."""
    viewer._handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


def test_state_holds_metadata_and_selection(add_trace: Trace) -> None:
    viewer = TraceViewer(add_trace)
    assert (viewer.launch, viewer.pid, viewer.stmt, viewer.iteration) == (0, [0, 0, 0], 10, [])
    state = viewer.get_state()
    assert "export default" in state["_esm"] and ".knb" in state["_css"]
    synced = json.dumps(
        {k: state[k] for k in ("meta", "launch", "pid", "stmt", "iteration")}, allow_nan=False
    )
    assert len(synced) < 10_000
    assert len(viewer.meta["launches"]) == 2


def test_a_launch_alone_is_shown_as_a_trace(add_trace: Trace) -> None:
    viewer = TraceViewer(add_trace[1])
    assert len(viewer.trace) == 1 and viewer.meta["launches"][0]["grid"] == [8, 1, 1]


def test_requests_are_answered_with_buffers(add_trace: Trace) -> None:
    viewer = TraceViewer(add_trace)
    sent = Sent(viewer)
    request(viewer, {"type": "program", "id": 11, "launch": 0, "pid": [2, 1, 0]})
    request(
        viewer, {"type": "value", "id": 12, "launch": 0, "pid": [2, 1, 0], "source": "record", "index": 12}
    )
    request(viewer, {"type": "program", "id": 13, "launch": 0, "pid": [7, 7, 0]})
    (program, none), (value, buffers), (error, _) = sent.messages
    assert program["id"] == 11 and len(program["records"]) == 15 and none == []
    assert value["id"] == 12 and value["view_shape"] == [4, 8]
    np.testing.assert_array_equal(
        np.frombuffer(buffers[0], np.float32).reshape(4, 8), add_trace[0].value((2, 1, 0), "tile")
    )
    assert error == {
        "type": "error",
        "id": 13,
        "message": "add_kernel: program (7, 7, 0) did not run (grid (4, 2, 1))",
    }


def test_select_moves_the_view(add_trace: Trace) -> None:
    viewer = TraceViewer(add_trace).select(pid=(3, 1), name="acc", iteration=(1,))
    assert (viewer.pid, viewer.stmt, viewer.iteration) == ([3, 1, 0], 7, [1])
    with pytest.raises(KeyError, match="recorded no 'nope'"):
        viewer.select(name="nope")


def test_bundle_has_widget_and_png(add_trace: Trace) -> None:
    viewer = TraceViewer(add_trace).select(pid=(1, 1), name="tile")
    data, _ = viewer._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == viewer.model_id
    assert base64.b64decode(data["image/png"]).startswith(PNG)


def test_png_of_a_replayed_program(add_trace: Trace) -> None:
    viewer = TraceViewer(add_trace)
    viewer.launch, viewer.pid, viewer.stmt = 1, [5, 0, 0], 10
    assert not add_trace[1].programs[(5, 0, 0)].kept
    assert viewer.to_png().startswith(PNG)
    assert add_trace[1].programs[(5, 0, 0)].kept


def test_empty_trace() -> None:
    viewer = TraceViewer(Trace())
    assert viewer.meta == {"launches": []} and viewer.stmt == -1
    assert viewer.to_png().startswith(PNG)
