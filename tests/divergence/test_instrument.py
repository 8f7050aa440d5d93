"""The probed variant: generated source, the probe layout, and a compile for a CUDA target (no GPU)."""

import ast

import ml_dtypes
import numpy as np
import pytest

from kernel_nb.gpu.instrument import InstrumentError, instrument, read_log, storage_of
from tests.divergence import kernels as dk
from tests.divergence.support import compile_variant, interpret, probe_on_cpu

RNG = np.random.default_rng(0)


def _rows():
    x = RNG.random((4, 100), dtype=np.float32)
    return dk.rows_kernel, (4,), (x, np.zeros_like(x), 100, 2.0), {"BLOCK": 128, "STEPS": 3}


def _shapes():
    return dk.shapes_kernel, (2,), (np.zeros(8, np.float32),), {"A": 4, "B": 2, "C": 8}


def _dtypes():
    x = (RNG.random(256, dtype=np.float32) * 100).astype(np.float32)
    outs = (
        np.zeros(256, np.float16),
        np.zeros(256, ml_dtypes.bfloat16),
        np.zeros(256, np.int32),
        np.zeros(256, np.uint8),
        np.zeros(256, np.float64),
    )
    return dk.dtypes_kernel, (2,), (x, *outs), {"BLOCK": 128}


def _dot():
    a = RNG.standard_normal((64, 64), dtype=np.float32)
    b = RNG.standard_normal((64, 64), dtype=np.float32)
    return (
        dk.dot_kernel,
        (2, 2),
        (a, b, np.zeros((64, 64), np.float32), 64),
        {"BLOCK": 32, "BLOCK_K": 16, "IEEE": False},
    )


CASES = {"loops and a helper": _rows, "1-D to 3-D values": _shapes, "every dtype": _dtypes, "dots": _dot}


@pytest.mark.parametrize("case", list(CASES))
def test_the_variant_compiles_for_sm90_and_logs_what_the_interpreter_recorded(case):
    kernel, grid, args, kwargs = CASES[case]()
    pid = (1, 1, 0) if len(grid) == 2 else (1, 0, 0)
    launch, probed, divergence = probe_on_cpu(kernel, grid, args, kwargs, [pid])
    artifacts = compile_variant(probed, args, kwargs)
    assert "atom.global" in artifacts.stages["ptx"]
    program = divergence.programs[0]
    assert {s.status for s in program.statements} == {"match"}, divergence.table()
    assert len(program.statements) == len(launch.programs[pid].records)
    assert (program.extra, program.overflow) == (0, False)


def test_helpers_receive_the_probe_and_every_call_path_is_logged():
    kernel, grid, args, kwargs = _rows()
    _, probed, divergence = probe_on_cpu(kernel, grid, args, kwargs, [(2, 0, 0)])
    helper = ast.parse(probed.sources["scale_row"]).body[0]
    assert [a.arg for a in helper.args.args] == ["_tk_probe", "_tk_slot", "x", "factor"]
    assert "_tk_scale_row_0(_tk_probe, _tk_slot, x, factor + step)" in probed.sources["rows_kernel"]
    scaled = [s for s in divergence.programs[0].statements if s.line == dk.LINES["rows_scaled"]]
    assert [(s.iteration, s.call_path, s.status) for s in scaled] == [
        ((i,), (f"scale_row:{dk.LINES['rows_call']}",), "match") for i in range(3)
    ]


def test_layout_types_and_shapes():
    kernel, grid, args, kwargs = _dtypes()
    launch = interpret(kernel, grid, args, kwargs)
    probed = instrument(kernel, launch, [(0, 0, 0), (1, 0, 0)])
    by_name = {launch.statements[p.stmt].name: p for p in probed.layout.points.values()}
    assert {n: by_name[n].storage for n in ("x_ptr", "h", "b", "f8", "i", "w", "small", "d")} == {
        "x_ptr": "int64",
        "h": "float16",
        "b": "bfloat16",
        "f8": "float8_e4m3fn",
        "i": "int32",
        "w": "int64",
        "small": "uint8",
        "d": "float64",
    }
    assert by_name["d"].entry == 8 + 128 * 8 and by_name["x_ptr"].entry == 16
    layout = probed.layout
    assert (layout.pids, layout.linear, layout.header) == (((0, 0, 0), (1, 0, 0)), (0, 1), 256)
    assert layout.total_bytes == 256 + 2 * layout.capacity and layout.capacity % 256 == 0
    assert (storage_of("int1"), storage_of("pointer<fp16>"), storage_of("fp8e4b15")) == (
        "int8",
        "int64",
        None,
    )


def test_read_log_splits_entries_and_flags_an_overflow():
    kernel, grid, args, kwargs = _shapes()
    launch = interpret(kernel, grid, args, kwargs)
    probed = instrument(kernel, launch, [(0, 0, 0)])
    layout = probed.layout
    point = next(iter(layout.points.values()))
    data = np.zeros(layout.total_bytes, np.uint8)
    data[:4].view(np.int32)[0] = layout.capacity + point.entry  # more than the region holds
    region = data[layout.header :]
    for at in range(0, layout.capacity - point.entry + 1, point.entry):
        region[at : at + 4].view(np.int32)[0] = point.stmt
    log = read_log(layout, data)[(0, 0, 0)]
    assert log.overflow and len(log.entries) == layout.capacity // point.entry
    assert all(stmt == point.stmt and len(raw) == point.entry - 8 for stmt, raw in log.entries)


def test_a_program_that_did_not_run_is_refused():
    kernel, grid, args, kwargs = _shapes()
    launch = interpret(kernel, grid, args, kwargs)
    with pytest.raises(InstrumentError, match=r"program \(5, 0, 0\) did not run"):
        instrument(kernel, launch, [(5, 0, 0)])


def test_every_kind_of_site_is_logged_where_the_interpreter_records_it():
    kernel, grid, args, kwargs = (
        dk.sites_kernel,
        (2,),
        (RNG.random(64, dtype=np.float32), np.zeros(64, np.float32)),
        {"BLOCK": 32},
    )
    launch, _, divergence = probe_on_cpu(kernel, grid, args, kwargs, [(1, 0, 0)])
    kinds = {(s.name, s.kind) for s in launch.statements}
    assert {("lo", "assign"), ("hi", "assign"), ("acc", "augassign"), ("i", "loop"), ("y", "assign")} <= kinds
    program = divergence.programs[0]
    assert {s.status for s in program.statements} == {"match"}, divergence.table()
    assert len(program.statements) == len(launch.programs[(1, 0, 0)].records)


def test_a_source_edited_with_unsafe_update_src_is_probed_as_edited():
    import triton

    kernel = triton.JITFunction(dk.sites_kernel.fn)
    kernel._unsafe_update_src(kernel.src.replace("acc += x * i", "acc += x * (i + 1)"))
    x = RNG.random(64, dtype=np.float32)
    _, probed, divergence = probe_on_cpu(
        kernel, (2,), (x, np.zeros(64, np.float32)), {"BLOCK": 32}, [(0, 0, 0)]
    )
    assert "acc += x * (i + 1)" in probed.sources["sites_kernel"]
    assert {s.status for s in divergence.programs[0].statements} == {"match"}, divergence.table()
