"""Routing of the browser's requests to the payload builders; failures become error replies."""

from __future__ import annotations

import json
from typing import Any, cast

from kernel_nb.trace import Trace
from kernel_nb.view import protocol as p
from kernel_nb.view.compare import artifact_reply, compare_reply
from kernel_nb.view.maps import buffer_reply, footprint_reply
from kernel_nb.view.payloads import RequestError, program_reply, value_reply


def answer(trace: Trace, request: dict[str, Any]) -> tuple[p.Reply, list[bytes]]:
    """Answer one request from the browser; problems become an `ErrorReply`, never an exception."""
    rid = int(request.get("id", 0))
    try:
        kind = request.get("type")
        if kind == "program":
            return program_reply(trace, cast(p.ProgramRequest, request)), []
        if kind == "value":
            return value_reply(trace, cast(p.ValueRequest, request))
        if kind == "footprint":
            return footprint_reply(trace, cast(p.FootprintRequest, request))
        if kind == "buffer":
            return buffer_reply(trace, cast(p.BufferRequest, request))
        if kind == "compare":
            return compare_reply(trace, cast(p.CompareRequest, request))
        if kind == "artifact":
            return artifact_reply(trace, cast(p.ArtifactRequest, request)), []
        raise RequestError(f"unknown request type {kind!r}")
    except (RequestError, KeyError, IndexError, ValueError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
        return {"type": "error", "id": rid, "message": str(message)}, []


def reply_bytes(reply: p.Reply, buffers: list[bytes]) -> int:
    """What one reply weighs on the websocket (JSON text plus binary buffers)."""
    return len(json.dumps(reply)) + sum(len(b) for b in buffers)
