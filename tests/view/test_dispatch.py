"""kernel_nb.view.dispatch: one handler per request type of the protocol, errors as replies."""

from __future__ import annotations

import typing

from kernel_nb.trace import Trace
from kernel_nb.view import dispatch, protocol


def request_types() -> set[str]:
    return {typing.get_args(typing.get_type_hints(t)["type"])[0] for t in typing.get_args(protocol.Request)}


def test_every_request_type_of_the_protocol_has_one_handler():
    assert (
        set(dispatch.HANDLERS)
        == request_types()
        == {
            "program",
            "value",
            "footprint",
            "buffer",
            "compare",
            "artifact",
        }
    )


def test_an_unknown_type_is_an_error_reply(add_trace: Trace):
    for kind in ("frobnicate", None, 3):
        assert dispatch.answer(add_trace, {"id": 9, "type": kind}) == (
            {"type": "error", "id": 9, "message": f"unknown request type {kind!r}"},
            [],
        )


def test_a_handler_without_buffers_answers_with_none(add_trace: Trace):
    reply, buffers = dispatch.answer(add_trace, {"id": 2, "type": "program", "launch": 0, "pid": [0, 0, 0]})
    assert reply["type"] == "program" and buffers == []
