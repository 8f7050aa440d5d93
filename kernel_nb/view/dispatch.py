"""Routing of the browser's requests to the payload builders; failures become error replies."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kernel_nb.trace import Trace
from kernel_nb.view import protocol as p
from kernel_nb.view.compare import artifact_reply, compare_reply
from kernel_nb.view.maps import buffer_reply, footprint_reply
from kernel_nb.view.payloads import RequestError, program_reply, value_reply

Answer = tuple[p.Reply, list[bytes]]
Handler = Callable[[Trace, Any], Answer]


def _no_buffers(build: Callable[[Trace, Any], p.Reply]) -> Handler:
    return lambda trace, request: (build(trace, request), [])


# Each request type's reply builder; a builder that sends no binary buffers is wrapped to send none.
HANDLERS: dict[str, Handler] = {
    "program": _no_buffers(program_reply),
    "value": value_reply,
    "footprint": footprint_reply,
    "buffer": buffer_reply,
    "compare": compare_reply,
    "artifact": _no_buffers(artifact_reply),
}


def answer(trace: Trace, request: dict[str, Any]) -> Answer:
    """Answer one request from the browser; problems become an `ErrorReply`, never an exception."""
    rid = int(request.get("id", 0))
    try:
        kind = request.get("type")
        handler = HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            raise RequestError(f"unknown request type {kind!r}")
        return handler(trace, request)
    except (RequestError, KeyError, IndexError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
        return {"type": "error", "id": rid, "message": str(message)}, []


def reply_bytes(reply: p.Reply, buffers: list[bytes]) -> int:
    """What one reply weighs on the websocket (JSON text plus binary buffers)."""
    return len(json.dumps(reply)) + sum(len(b) for b in buffers)
