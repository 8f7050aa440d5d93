"""view.payloads and view.precision on a launch run with an fp64 shadow, and on one without."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from shadowed import gram_trace, line_of

from kernel_nb.trace import COMPANION_KINDS, Finding, Trace
from kernel_nb.view import TraceViewer, dispatch, findings, payloads
from kernel_nb.view.export import reply_table, request_key


@pytest.fixture(scope="module")
def gram() -> Trace:
    return gram_trace()


def ask(trace: Trace, **request: Any) -> tuple[dict[str, Any], list[bytes]]:
    reply, buffers = dispatch.answer(trace, {"id": 3, **request})
    json.dumps(reply, allow_nan=False)
    return dict(reply), buffers


def floats(reply: dict[str, Any], buffer: bytes) -> np.ndarray:
    dtype = np.float32 if reply["format"] == "f4" else np.float64
    return np.frombuffer(buffer, dtype=dtype).reshape(reply["view_shape"])


def worst(trace: Trace, name: str) -> tuple[float, float]:
    """The largest total and own error of a variable over every program, from its values."""
    launch = trace[0]
    errors = [launch.precision(pid, name) for pid in range(launch.num_programs)]
    return max(float(e.ulps.max()) for e in errors), max(float(e.own_ulps.max()) for e in errors)


def test_companion_statements_are_not_listed(gram: Trace) -> None:
    launch = gram[0]
    meta = payloads.viewer_meta(gram)["launches"][0]
    json.dumps(meta, allow_nan=False)
    assert meta["shadow"] == "fp64"
    assert not {s["kind"] for s in meta["statements"]} & set(COMPANION_KINDS)
    listed = [s["id"] for s in meta["statements"]]
    assert listed == [s.id for s in launch.statements if s.of is None]
    assert len(launch.statements) == 4 * len(listed)


def test_each_float_statement_carries_its_worst_errors_over_all_programs(gram: Trace) -> None:
    by_name = {s["name"]: s for s in payloads.viewer_meta(gram)["launches"][0]["statements"]}
    for name in ("x", "y", "na", "nb", "g", "d"):
        ulps, own = worst(gram, name)
        assert by_name[name]["precision"] == {
            "dtype": "fp32",
            "ulps": ulps,
            "own_ulps": own,
            "nonfinite": 0,
            "own_nonfinite": 0,
        }, name
    g, d = by_name["g"]["precision"], by_name["d"]["precision"]
    assert g is not None and d is not None
    # the tf32 dot makes its error itself; the cancellation carries it and adds little of its own
    assert g["ulps"] == g["own_ulps"] and 1e2 < (g["own_ulps"] or 0) < 1e5
    assert (d["ulps"] or 0) > 1e6 and (d["own_ulps"] or 0) < (d["ulps"] or 0) / 1e3
    # loads are exact; integers, pointers and arguments have no float value to compare
    assert by_name["x"]["precision"]["ulps"] == 0.0  # type: ignore[index]
    for name in ("x_ptr", "M", "pid", "rows", "cols", "ys"):
        assert by_name[name]["precision"] is None, name


def test_worst_errors_count_the_programs_kept_as_aggregates(gram: Trace) -> None:
    # one program's summaries fit; the other two fold into per-statement aggregates
    folded = gram_trace(summary_bytes=20_000)
    assert folded[0].aggregated == 2 and len(folded[0].programs) == 1
    statements = payloads.viewer_meta(folded)["launches"][0]["statements"]
    expected = payloads.viewer_meta(gram)["launches"][0]["statements"]
    assert [s["precision"] for s in statements] == [s["precision"] for s in expected]
    # the dot's worst rounding is in program (1, 0, 0), one of the folded ones
    assert list(folded[0].programs) == [(0, 0, 0)]
    g = next(s for s in statements if s["name"] == "g")["precision"]
    assert g is not None and (g["own_ulps"] or 0) > folded[0].precision(0, "g").own_ulps.max()


def test_worst_errors_are_the_same_read_from_columns_or_from_records(gram: Trace) -> None:
    # the batched strategy keeps a batch's summaries as columns until a program is looked at;
    # the serial one makes records as it goes
    assert gram[0].strategy == "batched"
    fresh = gram_trace()
    assert all(p.records.pending() is not None for p in fresh[0].programs.values())  # type: ignore[attr-defined]
    columns = payloads.viewer_meta(fresh)["launches"][0]["statements"]
    for pid in fresh[0].programs:  # every record made
        list(fresh[0].programs[pid].records)
    made = payloads.viewer_meta(fresh)["launches"][0]["statements"]
    serial = payloads.viewer_meta(gram_trace(strategy="serial"))["launches"][0]["statements"]
    assert serial == made == columns


def test_records_list_the_indices_of_their_companions(gram: Trace) -> None:
    launch = gram[0]
    reply, _ = ask(gram, type="program", launch=0, pid=[1, 0, 0])
    program = launch.programs[(1, 0, 0)]
    assert reply["truncated"] == 0
    assert [r["index"] for r in reply["records"]] == [
        i for i, r in enumerate(program.records) if launch.statements[r.stmt].of is None
    ]
    for entry in reply["records"]:
        stmt = launch.statements[entry["stmt"]]
        if entry["dtype"] == "fp32":
            i = entry["index"]
            assert entry["companions"] == [i + 1, i + 2, i + 3], stmt.name
            assert [program.records[c].stmt for c in entry["companions"]] == list(launch.companions(stmt.id))
        else:
            assert entry["companions"] == [], stmt.name


def test_companion_values_are_asked_for_as_any_record(gram: Trace) -> None:
    launch = gram[0]
    reply, _ = ask(gram, type="program", launch=0, pid=[2, 0, 0])
    d = next(r for r in reply["records"] if launch.statements[r["stmt"]].name == "d")
    expected = launch.precision(2, "d")
    where = {"type": "value", "launch": 0, "pid": [2, 0, 0], "source": "record"}
    value, (data,) = ask(gram, **where, index=d["index"])
    at = f"d (gram_distances:{line_of(launch, 'd')})"
    assert value["label"] == at
    shadow, error, own = (ask(gram, **where, index=i) for i in d["companions"])
    assert [r["label"] for r, _ in (shadow, error, own)] == [
        f"{at}: fp64 shadow",
        f"{at}: error against the fp64 shadow, in ulps",
        f"{at}: error of its own arithmetic, in ulps",
    ]
    assert (shadow[0]["dtype"], shadow[0]["format"], error[0]["dtype"], own[0]["dtype"]) == (
        "fp64",
        "f8",
        "fp32",
        "fp32",
    )
    assert {r["view_shape"] == value["view_shape"] for r, _ in (shadow, error, own)} == {True}
    np.testing.assert_array_equal(floats(value, data), expected.value)
    np.testing.assert_array_equal(floats(shadow[0], shadow[1][0]), expected.shadow)
    np.testing.assert_array_equal(floats(error[0], error[1][0]), expected.ulps)
    np.testing.assert_array_equal(floats(own[0], own[1][0]), expected.own_ulps)


def test_views_pick_real_records_only(gram: Trace) -> None:
    launch = gram[0]
    d = next(s.id for s in launch.statements if s.name == "d" and s.of is None)
    # the view opens on the last shaped real value, never on an error of it
    assert payloads.default_selection(gram) == (0, [0, 0, 0], d, [])
    assert TraceViewer(gram).select(pid=1, name="d").stmt == d
    finding = Finding(
        "nan_origin", "warning", "d", 0, (1, 0, 0), launch.statements[d].file, line_of(launch, "d")
    )
    assert findings.target_of(launch, finding) == {"pid": [1, 0, 0], "stmt": d, "iteration": []}


def test_an_offline_page_holds_the_companions_of_every_record(gram: Trace) -> None:
    table = reply_table(gram)
    reply = table.replies[request_key({"type": "program", "launch": 0, "pid": [0, 0, 0]})].reply
    companions = [c for r in reply["records"] for c in r["companions"]]
    assert len(companions) == 3 * 6
    for index in companions:
        key = request_key(
            {
                "type": "value",
                "launch": 0,
                "pid": [0, 0, 0],
                "source": "record",
                "index": index,
                "field": "values",
            }
        )
        assert table.replies[key].reply["type"] == "value"


def test_a_launch_without_a_shadow_carries_no_precision(add_trace: Trace) -> None:
    meta = payloads.viewer_meta(add_trace)["launches"][0]
    assert meta["shadow"] is None
    assert [s["precision"] for s in meta["statements"]] == [None] * 11
    assert [s["id"] for s in meta["statements"]] == list(range(11))
    reply, _ = ask(add_trace, type="program", launch=0, pid=[3, 0, 0])
    assert len(reply["records"]) == 15
    assert {tuple(r["companions"]) for r in reply["records"]} == {()}
