"""Trace → payload extraction: metadata, lazy per-program replies, binary views, message sizes."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from conftest import FILE, add_launch, big_value_launch

from kernel_nb.trace import ArgumentInfo, Launch, MemoryEvent, ProgramTrace, Record, Summary, Trace
from kernel_nb.view import dispatch, maps, payloads, protocol

CAP = 10 * 1024 * 1024  # the websocket's message limit


def ask(trace: Trace, **request: Any) -> tuple[dict[str, Any], list[bytes]]:
    reply, buffers = dispatch.answer(trace, {"id": 7, **request})
    json.dumps(reply, allow_nan=False)  # what Jupyter's JSON packer demands
    return dict(reply), buffers


def floats(reply: dict[str, Any], buffer: bytes) -> np.ndarray:
    dtype = np.float32 if reply["format"] == "f4" else np.float64
    return np.frombuffer(buffer, dtype=dtype).reshape(reply["view_shape"])


def test_meta_is_small_json_without_program_data(add_trace: Trace) -> None:
    meta = payloads.viewer_meta(add_trace)
    text = json.dumps(meta, allow_nan=False)
    first = meta["launches"][0]
    assert [launch["grid"] for launch in meta["launches"]] == [[4, 2, 1], [8, 1, 1]]
    assert [s["name"] for s in first["statements"]][:3] == ["pid", "offsets", "mask"]
    assert first["sources"][0]["first_line"] == 10
    assert {
        b["arg"]: (b["never_written"], b["written_more_than_once"], b["oob"]) for b in first["buffers"]
    } == {
        "x_ptr": (0, 0, 1),
        "y_ptr": (0, 0, 0),
        "out_ptr": (2, 2, 0),
    }
    assert [f["kind"] for f in first["findings"]] == ["nan_origin", "out_of_bounds"]
    assert first["findings"][1]["pid"] == [3, 1, 0]
    assert "records" not in text and len(text) < 8_000


def test_program_reply_lists_summaries_in_order(add_trace: Trace) -> None:
    reply, buffers = ask(add_trace, type="program", launch=0, pid=[3, 0, 0])
    assert buffers == []
    assert reply["type"] == "program" and reply["id"] == 7 and reply["kept"]
    assert len(reply["records"]) == 15 and len(reply["events"]) == 3
    acc = [r["iteration"] for r in reply["records"] if r["stmt"] == 7]
    assert acc == [[0], [1], [2]]
    x = next(r for r in reply["records"] if r["stmt"] == 3)
    assert x["shape"] == [8] and x["summary"]["nan"] == 1
    load = reply["events"][0]
    assert (load["kind"], load["arg"], load["active"], load["lanes"], load["lo"], load["hi"]) == (
        "load",
        "x_ptr",
        8,
        8,
        24,
        32,
    )


def test_program_reply_does_not_replay(add_trace: Trace) -> None:
    calls: list[tuple[int, int, int]] = []
    launch = add_trace[1]
    replay = launch.replayer
    assert replay is not None
    launch.replayer = lambda pid: calls.append(pid) or replay(pid)
    reply, _ = ask(add_trace, type="program", launch=1, pid=[1, 0, 0])
    assert not reply["kept"] and len(reply["records"]) == 15 and calls == []


def test_value_1d(add_trace: Trace) -> None:
    reply, (data,) = ask(add_trace, type="value", launch=0, pid=[1, 0, 0], source="record", index=1)
    assert (reply["view_shape"], reply["shape"], reply["axes"], reply["step"]) == ([1, 8], [8], [0], [1, 1])
    assert reply["format"] == "f4" and not reply["has_mask"] and reply["note"] == ""
    assert reply["label"] == "offsets (add_kernel:13)"
    np.testing.assert_array_equal(floats(reply, data)[0], np.arange(8, 16))
    assert sum(reply["hist"]["counts"]) == 8


def test_value_2d(add_trace: Trace) -> None:
    reply, (data,) = ask(add_trace, type="value", launch=0, pid=[2, 0, 0], source="record", index=12)
    expected = add_trace[0].value((2, 0, 0), "tile")
    assert reply["view_shape"] == [4, 8] and reply["dtype"] == "fp32"
    np.testing.assert_array_equal(floats(reply, data), expected)


def test_value_3d_slices_along_chosen_axes(add_trace: Trace) -> None:
    cube = add_trace[0].value((1, 1, 0), "cube")
    base = {"type": "value", "launch": 0, "pid": [1, 1, 0], "source": "record", "index": 13}
    reply, (data,) = ask(add_trace, **base)
    assert (reply["axes"], reply["at"], reply["view_shape"]) == ([1, 2], [0, 0, 0], [3, 4])
    np.testing.assert_array_equal(floats(reply, data), cube[0])
    reply, (data,) = ask(add_trace, **base, axes=[0, 2], at=[0, 2, 0])
    np.testing.assert_array_equal(floats(reply, data), cube[:, 2, :])
    reply, (data,) = ask(add_trace, **base, axes=[2, 0], at=[0, 1, 0])
    np.testing.assert_array_equal(floats(reply, data), cube[:, 1, :].T)
    reply, buffers = ask(add_trace, **base, axes=[1, 1])
    assert reply["type"] == "error" and "distinct" in reply["message"] and buffers == []


def test_event_values_carry_the_mask(add_trace: Trace) -> None:
    reply, (data, mask) = ask(add_trace, type="value", launch=0, pid=[3, 1, 0], source="event", index=0)
    assert reply["has_mask"] and reply["label"] == "load of x_ptr (line 15): values"
    np.testing.assert_array_equal(np.frombuffer(mask, np.uint8), [1, 1, 1, 1, 0, 0, 0, 0])
    reply, (data, mask) = ask(
        add_trace, type="value", launch=0, pid=[3, 1, 0], source="event", index=0, field="indices"
    )
    np.testing.assert_array_equal(floats(reply, data)[0], np.arange(56, 64))


def test_nan_and_inf_reach_the_browser(add_trace: Trace) -> None:
    reply, (data,) = ask(add_trace, type="value", launch=0, pid=[1, 1, 0], source="record", index=14)
    values = floats(reply, data)[0]
    assert np.isposinf(values[1]) and np.isneginf(values[5])
    assert reply["summary"]["inf"] == 2 and reply["summary"]["nan"] == 0


def test_value_of_a_dropped_program_replays_it(add_trace: Trace) -> None:
    launch = add_trace[1]
    assert not launch.programs[(1, 0, 0)].kept
    reply, (data,) = ask(add_trace, type="value", launch=1, pid=[1, 0, 0], source="record", index=3)
    np.testing.assert_array_equal(floats(reply, data)[0], [4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5])
    assert launch.programs[(1, 0, 0)].kept  # Launch.program keeps the replayed values


def test_dropped_program_without_replayer_says_why(add_trace: Trace) -> None:
    add_trace[1].replayer = None
    reply, _ = ask(add_trace, type="value", launch=1, pid=[3, 0, 0], source="record", index=3)
    assert reply["type"] == "error" and "were not kept" in reply["message"]


def test_bad_requests_become_error_replies(add_trace: Trace) -> None:
    assert (
        ask(add_trace, type="program", launch=5, pid=[0, 0, 0])[0]["message"]
        == "no launch 5 (the trace has 2)"
    )
    assert ask(add_trace, type="program", launch=0, pid=[9, 0, 0])[0]["message"] == (
        "add_kernel: program (9, 0, 0) did not run (grid (4, 2, 1))"
    )
    assert ask(add_trace, type="nonsense")[0]["message"] == "unknown request type 'nonsense'"


def test_footprint_of_one_program(add_trace: Trace) -> None:
    reply, (codes,) = ask(add_trace, type="footprint", launch=0, pid=[3, 1, 0], arg="out_ptr")
    drawn = np.frombuffer(codes, np.uint8)
    assert reply["legend"] == maps.FOOTPRINT_LEGEND and reply["grid"] == [1, 62]
    np.testing.assert_array_equal(np.flatnonzero(drawn), [56, 57, 58, 59])
    assert set(drawn[56:60]) == {2} and reply["counts"] == [58, 0, 4, 0]
    reply, (codes,) = ask(add_trace, type="footprint", launch=0, pid=[3, 1, 0], arg="x_ptr")
    assert reply["counts"] == [56, 4, 0, 0] and reply["oob"] == [[3, 1, 0, 15, 64]]


def test_buffer_map_over_all_programs(add_trace: Trace) -> None:
    reply, (codes,) = ask(add_trace, type="buffer", launch=0, arg="out_ptr")
    drawn = np.frombuffer(codes, np.uint8)
    assert reply["counts"] == [0, 0, 58, 2, 2]
    np.testing.assert_array_equal(np.flatnonzero(drawn == 3), [60, 61])
    np.testing.assert_array_equal(np.flatnonzero(drawn == 4), [4, 5])
    reply, (codes,) = ask(add_trace, type="buffer", launch=0, arg="x_ptr")
    assert reply["counts"] == [0, 60, 0, 0, 0]


def test_1024_squared_value_is_sent_whole_as_float32() -> None:
    trace = Trace([big_value_launch((1024, 1024))])
    reply, buffers = ask(trace, type="value", launch=0, pid=[0, 0, 0], source="record", index=0)
    assert reply["step"] == [1, 1] and reply["format"] == "f4" and reply["note"] == ""
    assert sum(len(b) for b in buffers) == 4 * 1024 * 1024
    assert dispatch.reply_bytes(reply, buffers) < CAP // 2
    value = trace[0].programs[(0, 0, 0)].records[0].value
    assert value is not None
    np.testing.assert_array_equal(floats(reply, buffers[0]), value)


def test_larger_values_are_reduced_with_a_note_and_keep_specials() -> None:
    trace = Trace([big_value_launch((2048, 4096))])
    reply, (data,) = ask(trace, type="value", launch=0, pid=[0, 0, 0], source="record", index=0)
    assert len(data) <= protocol.MAX_VALUE_BYTES and reply["shape"] == [2048, 4096]
    rows, cols = reply["view_shape"]
    assert rows * cols <= 1024 * 1024 and reply["step"] == [2, 4]
    assert reply["note"] == "reduced 2×4 (block means) to fit one message"
    assert np.isnan(floats(reply, data)[0, 0])  # the block holding NaN (and ±Inf) stays NaN


def test_long_strip_is_reduced_to_max_side() -> None:
    trace = Trace([big_value_launch((100_000,))])
    reply, _ = ask(trace, type="value", launch=0, pid=[0, 0, 0], source="record", index=0)
    assert reply["view_shape"][0] == 1 and reply["view_shape"][1] <= protocol.MAX_SIDE


def test_large_integers_are_sent_as_float64() -> None:
    launch = big_value_launch((4,))
    value = np.array([0, 1, 2**40, 3], dtype=np.int64)
    launch.programs[(0, 0, 0)].records[0] = Record(0, 0, (), (), "i64", (4,), Summary.of(value), value)
    reply, (data,) = ask(Trace([launch]), type="value", launch=0, pid=[0, 0, 0], source="record", index=0)
    assert reply["format"] == "f8" and floats(reply, data)[0, 2] == 2**40


def big_grid_trace() -> Trace:
    launch = add_launch(grid=(4096, 1, 1), n=4096 * 8 - 5, keep=lambda p: p < 4)
    return Trace([launch])


def test_4096_program_launch_stays_small() -> None:
    trace = big_grid_trace()
    meta = json.dumps(payloads.viewer_meta(trace), allow_nan=False)
    assert len(meta) < 8_000
    sizes = [
        dispatch.reply_bytes(*dispatch.answer(trace, request))
        for request in (
            {"type": "program", "id": 1, "launch": 0, "pid": [4000, 0, 0]},
            {"type": "value", "id": 2, "launch": 0, "pid": [4000, 0, 0], "source": "record", "index": 14},
            {"type": "footprint", "id": 3, "launch": 0, "pid": [4000, 0, 0], "arg": "out_ptr"},
            {"type": "buffer", "id": 4, "launch": 0, "arg": "out_ptr"},
        )
    ]
    assert max(sizes) < 64 * 1024, sizes
    reply, (codes,) = dispatch.answer(trace, {"type": "buffer", "id": 4, "launch": 0, "arg": "x_ptr"})
    assert reply["type"] == "buffer" and reply["grid"] == [32, 1024] and len(codes) == 32 * 1024


def test_huge_buffer_map_is_reduced() -> None:
    launch = Launch(index=0, kernel="k", grid=(1, 1, 1), args=[])
    size = 4096 * 4096
    from kernel_nb.trace import BufferMap

    writes = np.ones(size, np.int32)
    writes[5] = 0
    launch.buffers["a"] = BufferMap(
        "a", size, (4096, 4096), np.zeros(size, np.int32), writes, np.zeros(size, np.int64)
    )
    launch.programs[(0, 0, 0)] = ProgramTrace((0, 0, 0), kept=True)
    reply, (codes,) = dispatch.answer(Trace([launch]), {"type": "buffer", "id": 1, "launch": 0, "arg": "a"})
    assert reply["type"] == "buffer" and len(codes) <= protocol.MAX_MAP_CELLS and reply["step"] == [4, 4]
    assert np.frombuffer(codes, np.uint8)[1] == 3  # the block holding element 5 shows "never written"


def _event_launch() -> Launch:
    launch = Launch(
        0,
        "rows",
        (1, 1, 1),
        [
            ArgumentInfo("x_ptr", "buffer", "fp32", (8, 64), (64, 1)),
            ArgumentInfo("y_ptr", "buffer", "fp32", (512,), (1,)),
        ],
    )
    row = np.arange(192, 256)
    kept = MemoryEvent("load", 0, FILE, 3, "x_ptr", 64, 192, 256, indices=row, mask=np.ones(64, bool))
    scattered = MemoryEvent(
        "load", 1, FILE, 4, "x_ptr", 2, 3, 130, indices=np.array([3, 129]), mask=np.ones(2, bool)
    )
    unkept = MemoryEvent("store", 2, FILE, 5, "x_ptr", 64, 192, 256)
    flat = MemoryEvent("store", 3, FILE, 6, "y_ptr", 64, 192, 256)
    none = MemoryEvent("load", 4, FILE, 7, "x_ptr", 0, 0, 0)
    launch.programs[(0, 0, 0)] = ProgramTrace((0, 0, 0), events=[kept, scattered, unkept, flat, none])
    return launch


def test_the_events_table_names_elements_of_an_nd_argument_by_index() -> None:
    reply, _ = ask(Trace([_event_launch()]), type="program", launch=0, pid=[0, 0, 0])
    assert [e["elements"] for e in reply["events"]] == [
        "[3, 0:64]",  # the lanes kept: the box they fill
        "[0, 3] … [2, 1]",  # not a box: the lowest and highest element
        "[3, 0] … [3, 63]",  # lanes not kept
        "[192, 256)",  # a 1-D argument keeps its flat range
        "[0, 0)",  # no active lane (the viewer shows a dash)
    ]


def loop_launch() -> Launch:
    """One program of a loop over two rows of a (100, 8) buffer: load row k, store row 50 + k; then one more load."""
    from kernel_nb.trace import BufferMap, MemoryEvent, SourceInfo, Statement

    source = "def loop_kernel(a):\n    for k in range(2):\n        r = tl.load(a + k)\n        tl.store(a + 50 + k, r)\n    o = tl.load(a + 90)\n"
    launch = Launch(
        index=0,
        kernel="loop_kernel",
        grid=(1, 1, 1),
        args=[],
        statements=[
            Statement(0, "/tmp/k.py", 11, "k", "loop_kernel", "loop"),
            Statement(1, "/tmp/k.py", 12, "r", "loop_kernel", "assign"),
            Statement(2, "/tmp/k.py", 14, "o", "loop_kernel", "assign"),
        ],
        sources={"loop_kernel": SourceInfo("loop_kernel", "/tmp/k.py", 10, source)},
    )
    program = ProgramTrace((0, 0, 0), kept=True)
    seq = 0

    def record(stmt: int, iteration: tuple[int, ...]) -> None:
        nonlocal seq
        value = np.zeros(8, np.float32)
        program.records.append(Record(stmt, seq, (), iteration, "fp32", (8,), Summary.of(value), value))
        seq += 1

    def event(kind: str, row: int, line: int) -> None:
        nonlocal seq
        indices = np.arange(row * 8, row * 8 + 8, dtype=np.int64)
        mask = np.ones(8, bool)
        program.events.append(
            MemoryEvent(kind, seq, "/tmp/k.py", line, "a", 8, row * 8, row * 8 + 8, indices, mask)
        )
        seq += 1

    for k in range(2):
        record(0, (k,))  # the loop counter comes first in every iteration
        event("load", k, 12)
        record(1, (k,))
        event("store", 50 + k, 13)  # at the end of the body: the next record is the next counter, or o
    event("load", 90, 14)  # after the loop
    record(2, ())
    launch.programs[(0, 0, 0)] = program
    size = 800
    launch.buffers["a"] = BufferMap(
        "a", size, (100, 8), np.zeros(size, np.int32), np.zeros(size, np.int32), np.zeros(size, np.int64)
    )
    return launch


def touched_rows(reply: dict[str, Any], codes: bytes) -> dict[int, int]:
    """Row of the view → its code, for rows that hold a nonzero code."""
    first, _ = reply["window"]
    grid = np.frombuffer(codes, np.uint8).reshape(-1, reply["view_shape"][1])
    return {first + r: int(grid[r].max()) for r in range(grid.shape[0]) if grid[r].any()}


def test_footprint_sends_only_the_rows_the_program_touched() -> None:
    trace = Trace([loop_launch()])
    reply, (codes,) = ask(trace, type="footprint", launch=0, pid=[0, 0, 0], arg="a")
    assert reply["view_shape"] == [100, 8] and reply["window"] == [0, 91] and len(codes) == 91 * 8
    assert touched_rows(reply, codes) == {0: 1, 1: 1, 50: 2, 51: 2, 90: 1}
    assert reply["counts"] == [800 - 40, 24, 16, 0]


def test_footprint_of_one_loop_iteration() -> None:
    trace = Trace([loop_launch()])
    reply, (codes,) = ask(trace, type="footprint", launch=0, pid=[0, 0, 0], arg="a", iteration=[1])
    assert reply["window"] == [1, 52] and touched_rows(reply, codes) == {1: 1, 51: 2}
    assert reply["counts"] == [800 - 16, 8, 8, 0]
    program = trace[0].programs[(0, 0, 0)]
    assert maps.event_iterations(trace[0], program) == [(0,), (0,), (1,), (1,), ()]


def test_footprint_of_a_program_that_touched_nothing() -> None:
    trace = Trace([loop_launch()])
    reply, (codes,) = ask(trace, type="footprint", launch=0, pid=[0, 0, 0], arg="a", iteration=[7])
    assert reply["window"] == [0, 0] and codes == b"" and reply["counts"] == [800, 0, 0, 0]


def test_footprint_of_a_large_buffer_is_a_few_rows() -> None:
    launch = add_launch(grid=(4096, 1, 1), n=4096 * 8 - 5, keep=lambda p: p < 2)
    trace = Trace([launch])
    reply, (codes,) = ask(trace, type="footprint", launch=0, pid=[1, 0, 0], arg="x_ptr")
    assert reply["grid"] == [32, 1024] and reply["window"] == [0, 1] and len(codes) == 1024
    np.testing.assert_array_equal(np.flatnonzero(np.frombuffer(codes, np.uint8)), np.arange(8, 16))
