"""js/protocol.d.ts against kernel_nb/view/protocol.py: the same messages, fields and types."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest

from kernel_nb.view import protocol

DTS = Path(__file__).resolve().parents[2] / "js" / "protocol.d.ts"
INTERFACE = re.compile(r"^export interface (\w+) \{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
FIELD = re.compile(r"^  (\w+)(\??): (.+);$")
UNION = re.compile(r"^export type (\w+) = (.+);$", re.MULTILINE)


def interfaces() -> dict[str, dict[str, tuple[bool, str]]]:
    """Per interface, per field: (optional, type as written)."""
    text = DTS.read_text(encoding="utf-8")
    found = {}
    for name, body in INTERFACE.findall(text):
        fields = {}
        for line in body.splitlines():
            match = FIELD.match(line)
            assert match is not None, f"{name}: cannot read {line!r}"
            fields[match[1]] = (match[2] == "?", match[3])
        found[name] = fields
    return found


def typed_dicts() -> dict[str, type]:
    return {
        name: value
        for name, value in vars(protocol).items()
        if not name.startswith("_") and isinstance(value, type) and typing.is_typeddict(value)
    }


def ts(hint: object) -> str:
    """How a Python annotation reads in TypeScript (unions sorted, so order does not matter)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(sorted(ts(arg) for arg in typing.get_args(hint)))
    if origin is typing.Literal:
        return " | ".join(sorted(f'"{arg}"' for arg in typing.get_args(hint)))
    if origin is list:
        [item] = typing.get_args(hint)
        inner = ts(item)
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if origin is dict:
        key, value = typing.get_args(hint)
        return f"Record<{ts(key)}, {ts(value)}>"
    simple = {
        int: "number",
        float: "number",
        str: "string",
        bool: "boolean",
        type(None): "null",
        object: "unknown",
    }
    if hint in simple:
        return simple[hint]
    assert isinstance(hint, type) and typing.is_typeddict(hint), hint
    return hint.__name__


def normal(written: str) -> str:
    return " | ".join(sorted(part.strip() for part in written.split(" | ")))


def test_every_message_type_is_declared_once_on_each_side():
    assert set(interfaces()) == set(typed_dicts())


@pytest.mark.parametrize("name", sorted(typed_dicts()))
def test_fields_optionality_and_types_agree(name: str):
    cls = typed_dicts()[name]
    hints = typing.get_type_hints(cls)
    expected = {field: (field in cls.__optional_keys__, ts(hint)) for field, hint in hints.items()}
    declared = {
        field: (optional, normal(written)) for field, (optional, written) in interfaces()[name].items()
    }
    assert declared == expected


def test_the_unions_name_the_same_messages():
    text = DTS.read_text(encoding="utf-8")
    unions = {name: sorted(m.strip() for m in members.split("|")) for name, members in UNION.findall(text)}
    assert unions == {
        "Request": sorted(t.__name__ for t in typing.get_args(protocol.Request)),
        "Reply": sorted(t.__name__ for t in typing.get_args(protocol.Reply)),
    }
