"""Lining the GPU's log up with the interpreter's records, and telling rounding from divergence.

The "GPU" here is the probed variant interpreted with other options: GPU numerics against stock
ones (NaN casts, tf32 dots), programs in reverse order (a race), or a log edited by hand.
"""

import numpy as np
import pytest

import kernel_nb
import kernel_nb.gpu as gpu
from kernel_nb.compare import Probe, compare_program
from kernel_nb.engine import Engine
from kernel_nb.gpu.instrument import PROBE, read_log
from kernel_nb.gpu.probe import ProbeRun, addresses_from_log
from kernel_nb.gpu.runner import GpuLaunch
from tests.divergence import kernels as dk
from tests.divergence.support import interpret, probe_on_cpu


def _nan_inputs():
    x = np.where(np.arange(256) % 7 == 0, np.nan, np.arange(256)).astype(np.float32)
    return (x, np.zeros(256, np.int32)), {"BLOCK": 128}


def test_nan_to_int_cast_diverges_on_the_cast_with_lanes_and_values():
    args, kwargs = _nan_inputs()
    _, _, divergence = probe_on_cpu(
        dk.nan_cast_kernel, (2,), args, kwargs, [(1, 0, 0)], cpu={"numerics": "stock"}
    )
    pid, first = divergence.first
    assert (pid, first.name, first.line, first.status) == ((1, 0, 0), "n", dk.LINES["nan_cast"], "diverge")
    assert first.lanes.tolist() == [i for i in range(128) if (128 + i) % 7 == 0]
    assert divergence.report().splitlines() == [
        f"#0 nan_cast_kernel: first divergence in pid (1,0,0) at line {dk.LINES['nan_cast']} (nan_cast_kernel), `n`: "
        "18 of 128 lanes beyond exact; lanes 5, 12, 19, 26, 33, 40 (+12 more); "
        "CPU -2147483648, -2147483648, -2147483648, -2147483648, -2147483648, -2147483648; GPU 0, 0, 0, 0, 0, 0",
        f"    {dk.LINES['nan_cast']} | n = y.to(tl.int32)",
        "  pid (1,0,0): 7 statements: 6 match, 1 diverge",
    ]


def test_the_same_numerics_on_both_sides_report_no_divergence():
    args, kwargs = _nan_inputs()
    _, _, divergence = probe_on_cpu(dk.nan_cast_kernel, (2,), args, kwargs, [(0, 0, 0), (1, 0, 0)])
    assert divergence.first is None
    assert divergence.report() == (
        "#0 nan_cast_kernel: no divergence in pid (0,0,0), (1,0,0)\n"
        "  pid (0,0,0): 7 statements: 7 match\n"
        "  pid (1,0,0): 7 statements: 7 match"
    )


def test_a_race_diverges_on_the_load_that_reads_another_programs_block():
    args = (np.zeros(512, np.float32), np.zeros(512, np.float32), 3)
    _, _, divergence = probe_on_cpu(
        dk.race_kernel, (4,), args, {"BLOCK": 128}, [(1, 0, 0)], gpu={"order": "reverse"}
    )
    _, first = divergence.first
    assert (first.name, first.line, first.mismatches) == ("left", dk.LINES["race_left"], 128)
    assert "fma" not in first.reason  # address arithmetic is not a rounding source
    assert float(first.cpu[0]) == 1.875 and float(first.gpu[0]) == 0.0


def test_a_tf32_dot_against_exact_fp32_is_expected_precision_not_a_divergence():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((64, 64), dtype=np.float32), rng.standard_normal((64, 64), dtype=np.float32))
    args += (np.zeros((64, 64), np.float32), 64)
    kwargs = {"BLOCK": 32, "BLOCK_K": 16, "IEEE": False}
    _, _, divergence = probe_on_cpu(
        dk.dot_kernel, (2, 2), args, kwargs, [(1, 1, 0)], cpu={"numerics": "stock"}
    )
    program = divergence.programs[0]
    assert divergence.first is None
    first = program.first_difference
    assert (first.status, first.name, first.line, first.iteration) == (
        "precision",
        "acc",
        dk.LINES["dot_tf32"],
        (0,),
    )
    assert first.reason.endswith(
        "within fp32 with tf32 dots (rtol 0.005, atol 1e-05 + 0.005·max|cpu|): tf32 dot here"
    )
    assert program.counts() == {"match": 25, "precision": 4, "diverge": 0, "missing": 0, "skipped": 0}


def _rows_log():
    x = np.random.default_rng(1).random((4, 100), dtype=np.float32)
    args, kwargs = (x, np.zeros_like(x), 100, 2.0), {"BLOCK": 128, "STEPS": 3}
    launch = interpret(dk.rows_kernel, (4,), args, kwargs)
    probed = kernel_nb.gpu.instrument(dk.rows_kernel, launch, [(0, 0, 0)])
    probe = np.zeros(probed.layout.total_bytes, np.uint8)
    with kernel_nb.interpret(kernel_nb.Options(capture=False, detect=False)):
        probed.kernel[(4,)](x, np.zeros_like(x), 100, 2.0, **kwargs, **{PROBE: probe})
    logs = read_log(probed.layout, probe)
    facts = probed.facts
    info = Probe(
        storage={s: p.storage for s, p in probed.layout.points.items()},
        sources={s: f.sources for s, f in facts.items()},
        operands={s: f.operands for s, f in facts.items()},
        skipped=probed.skipped,
        addresses=addresses_from_log(launch, logs),
    )
    return launch, logs[(0, 0, 0)].entries, info


def test_a_reordered_loop_still_lines_up_but_a_shorter_one_diverges_where_it_stops():
    launch, entries, info = _rows_log()
    records = launch.program((0, 0, 0)).records
    # software pipelining moves a loop's loads ahead of its other statements: order alone may differ
    swapped = list(entries)
    swapped[10], swapped[11] = swapped[11], swapped[10]
    assert compare_program(launch, (0, 0, 0), records, swapped, info).first is None
    # the GPU left the loop after two iterations: the first statement it did not run diverges
    step = next(s.id for s in launch.statements if s.name == "step")
    cut = [i for i, (stmt, _) in enumerate(entries) if stmt == step][2]
    program = compare_program(launch, (0, 0, 0), records, entries[:cut], info)
    first = program.first
    assert (first.name, first.iteration, first.status) == ("step", (2,), "diverge")
    assert first.reason == f"control flow: the GPU ran line {first.line} 2 times, the interpreter 3"
    # and one that ran once more diverges on the interpreter's last run of that statement
    program = compare_program(launch, (0, 0, 0), records, [*entries, entries[-1]], info)
    assert (program.first.name, program.extra) == ("total", 1)


def test_a_bf16_rounding_difference_within_tolerance_matches_and_a_nan_diverges():
    launch, entries, info = _rows_log()
    records = launch.program((0, 0, 0)).records
    total = next(s.id for s in launch.statements if s.name == "total")
    at = next(i for i, (stmt, _) in enumerate(entries) if stmt == total)
    value = np.frombuffer(entries[at][1], np.float32, 1)[0]
    for changed, status in ((value * (1 + 2e-6), "match"), (np.float32(np.nan), "diverge")):
        edited = list(entries)
        edited[at] = (total, np.float32(changed).tobytes() + entries[at][1][4:])
        program = compare_program(launch, (0, 0, 0), records, edited, info)
        assert next(s for s in program.statements if s.stmt == total).status == status
    assert "1 NaN/Inf on one side only" in program.first.reason


def _cpu_prober(options):
    """Runs the probed variant in the interpreter (inside a session, so through the engine itself)."""

    def prober(run, probed, grid, args, kwargs):
        probe = np.zeros(probed.layout.total_bytes, np.uint8)
        engine = Engine(kernel_nb.Options(capture=False, detect=False, **options))
        engine.launch(probed.kernel, grid, args, {**kwargs, PROBE: probe}, 0)
        return ProbeRun(read_log(probed.layout, probe), {})

    return prober


def _nan_launcher(run, kernel, grid, args, kwargs, index):
    x, out = args
    with np.errstate(invalid="ignore"):
        out[:] = np.where(np.isnan(x), 0, (x * 2)).astype(np.int32) + 1
    return GpuLaunch(index, "nan_cast_kernel", (2, 1, 1), "fake GPU", 0.0)


def test_compare_sessions_locate_the_divergence_of_the_writer_of_a_mismatch_and_show_it():
    args, kwargs = _nan_inputs()
    session = gpu.GpuSession(
        kernel_nb.Options(numerics="stock"),
        gpu.GpuOptions(mode="compare"),
        launcher=_nan_launcher,
        prober=_cpu_prober({}),
    )
    with session:
        dk.nan_cast_kernel[(2,)](*args, **kwargs)
    launch = session.trace[0]
    assert not launch.comparison.ok
    pid, first = launch.divergence.first
    assert (pid, first.line) == ((0, 0, 0), dk.LINES["nan_cast"])
    assert args[1][7] == 1  # the cell goes on with the GPU's results
    pytest.importorskip("anywidget", reason="the viewer's payload needs the notebook packages")
    from kernel_nb.view.compare import with_comparisons
    from kernel_nb.view.payloads import viewer_meta

    meta = with_comparisons(viewer_meta(session.trace), session.trace)["launches"][0]["divergence"]
    assert meta["first"] == {"pid": [0, 0, 0], "seq": first.seq}
    row = next(r for r in meta["programs"][0]["rows"] if r["seq"] == first.seq)
    assert (row["status"], row["lanes"], row["cpu"], row["gpu"]) == (
        "diverge",
        [0, 7, 14, 21],
        ["-2147483648"] * 4,
        ["0"] * 4,
    )
    assert meta["report"] == launch.divergence.report()


def test_no_divergence_run_without_a_prober_or_when_switched_off():
    args, kwargs = _nan_inputs()
    for session in (
        gpu.GpuSession(
            kernel_nb.Options(numerics="stock"), gpu.GpuOptions(mode="compare"), launcher=_nan_launcher
        ),
        gpu.GpuSession(
            kernel_nb.Options(numerics="stock"),
            gpu.GpuOptions(mode="compare", divergence=False),
            launcher=_nan_launcher,
            prober=_cpu_prober({}),
        ),
    ):
        with session:
            dk.nan_cast_kernel[(2,)](*args, **kwargs)
        assert session.trace[0].divergence is None


def test_a_failed_probe_is_reported_not_raised():
    args, kwargs = _nan_inputs()

    def broken(run, probed, grid, a, k):
        raise RuntimeError("no room on the device")

    session = gpu.GpuSession(
        kernel_nb.Options(pids=((1, 0, 0),)),
        gpu.GpuOptions(mode="compare"),
        launcher=_nan_launcher,
        prober=broken,
    )
    with session:
        dk.nan_cast_kernel[(2,)](*args, **kwargs)
    divergence = session.trace[0].divergence
    assert (
        divergence.report()
        == "#0 nan_cast_kernel: no statement comparison: RuntimeError: no room on the device"
    )
