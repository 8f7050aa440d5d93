"""The first statement where GPU and CPU diverge, on a CUDA device: planted bugs and a clean kernel."""

import numpy as np

import kernel_nb
import kernel_nb.gpu as gpu
from tests.divergence import kernels as dk


def _first(session):
    divergence = session.trace[0].divergence
    assert divergence is not None and divergence.error is None, divergence
    print(divergence.report())
    return divergence


def test_race_between_programs_is_located_on_the_load():
    buf = np.zeros(4 * 128, np.float32)
    out = np.zeros(4 * 128, np.float32)
    with gpu.divergence(pids=[(1, 0, 0)]) as session:
        dk.race_kernel[(4,)](buf, out, 20000, BLOCK=128)
    divergence = _first(session)
    pid, first = divergence.first
    assert (pid, first.name, first.line, first.status) == (
        (1, 0, 0),
        "left",
        dk.LINES["race_left"],
        "diverge",
    )
    assert first.mismatches == 128 and float(first.gpu[0]) == 0.0 and float(first.cpu[0]) != 0.0


def test_nan_to_int_cast_is_located_on_the_cast():
    x = np.where(np.arange(256) % 7 == 0, np.nan, np.arange(256)).astype(np.float32)
    out = np.zeros(256, np.int32)
    with gpu.divergence(kernel_nb.Options(numerics="stock"), pids=[(1, 0, 0)]) as session:
        dk.nan_cast_kernel[(2,)](x, out, BLOCK=128)
    divergence = _first(session)
    _, first = divergence.first
    assert (first.name, first.line) == ("n", dk.LINES["nan_cast"])
    nan_lanes = np.flatnonzero(np.isnan(x[128:]))
    assert first.lanes.tolist() == nan_lanes.tolist()
    assert set(first.gpu.reshape(-1)[nan_lanes].tolist()) == {0}
    assert set(first.cpu.reshape(-1)[nan_lanes].tolist()) == {-(2**31)}


def _dot_inputs():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 64), dtype=np.float32)
    b = rng.standard_normal((64, 64), dtype=np.float32)
    return a, b, np.zeros((64, 64), np.float32)


def test_tf32_dot_against_exact_fp32_is_expected_precision_on_the_dot():
    a, b, c = _dot_inputs()
    with gpu.divergence(kernel_nb.Options(numerics="stock"), pids=[(1, 1, 0)]) as session:
        dk.dot_kernel[(2, 2)](a, b, c, 64, BLOCK=32, BLOCK_K=16, IEEE=False)
    divergence = _first(session)
    assert divergence.tf32 and divergence.first is None
    program = divergence.programs[0]
    first = program.first_difference
    assert (first.status, first.name, first.line, first.iteration) == (
        "precision",
        "acc",
        dk.LINES["dot_tf32"],
        (0,),
    )
    assert "tf32 dot" in first.reason


def test_clean_kernels_report_no_divergence():
    a, b, c = _dot_inputs()
    with gpu.divergence(pids=[(1, 1, 0)]) as session:
        dk.dot_kernel[(2, 2)](a, b, c, 64, BLOCK=32, BLOCK_K=16, IEEE=True)
    divergence = _first(session)
    assert divergence.first is None
    assert session.trace[0].comparison.ok
    x = np.random.default_rng(1).random((4, 100), dtype=np.float32)
    out = np.zeros_like(x)
    with gpu.divergence(pids=[(0, 0, 0), (3, 0, 0)]) as session:
        dk.rows_kernel[(4,)](x, out, 100, 2.0, BLOCK=128, STEPS=3)
    divergence = _first(session)
    assert divergence.first is None
    assert {s.status for p in divergence.programs for s in p.statements} <= {"match", "precision"}
    # the NaN cast with GPU numerics (saturating casts) agrees with the device
    x = np.where(np.arange(256) % 7 == 0, np.nan, np.arange(256)).astype(np.float32)
    with gpu.divergence(pids=[(1, 0, 0)]) as session:
        dk.nan_cast_kernel[(2,)](x, np.zeros(256, np.int32), BLOCK=128)
    assert _first(session).first is None


def test_every_dtype_and_shape_is_logged_and_matches():
    import ml_dtypes

    x = (np.random.default_rng(2).random(256, dtype=np.float32) * 100).astype(np.float32)
    outs = (
        np.zeros(256, np.float16),
        np.zeros(256, ml_dtypes.bfloat16),
        np.zeros(256, np.int32),
        np.zeros(256, np.uint8),
        np.zeros(256, np.float64),
    )
    with gpu.divergence(pids=[(1, 0, 0)]) as session:
        dk.dtypes_kernel[(2,)](x, *outs, BLOCK=128)
        dk.shapes_kernel[(2,)](np.zeros(8, np.float32), A=4, B=2, C=8)
    for launch in session.trace:
        divergence = launch.divergence
        print(divergence.report())
        assert divergence.error is None and divergence.first is None
        statuses = {s.status for s in divergence.programs[0].statements}
        assert statuses <= {"match", "precision"}, divergence.table()


def test_a_mismatch_picks_the_writer_and_the_report_reaches_the_magic_text():
    buf = np.zeros(4 * 128, np.float32)
    out = np.zeros(4 * 128, np.float32)
    with gpu.compare() as session:
        dk.race_kernel[(4,)](buf, out, 20000, BLOCK=128)
    launch = session.trace[0]
    assert not launch.comparison.ok
    divergence = launch.divergence
    assert divergence is not None and divergence.first is not None
    print(launch.comparison.verdict())
    print(divergence.report())
    assert divergence.first[1].line == dk.LINES["race_left"]
