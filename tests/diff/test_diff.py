"""The tolerance policy and the buffer comparison, on the CPU, with figures measured on an H200."""

import ml_dtypes
import numpy as np
import pytest

from kernel_nb import compare
from kernel_nb.compare import buffers as compare_buffers

# Measured on an NVIDIA H200 (triton 3.6), tests/gpu/test_gpu_runner.py:
# 256^3 fp32 tl.dot against an fp64 product, as max|diff| / max|reference|.
TF32_DOT_ERROR = 8.041e-4
IEEE_DOT_ERROR = 5.929e-7
# tl.exp on [-20, 20], interpreter against GPU: 15 ulp, relative 9.631e-7.
EXP_MAX_REL = 9.631e-7


def test_defaults_per_dtype():
    assert compare.default_tolerance(np.int32) == compare.EXACT
    assert compare.default_tolerance(np.bool_) == compare.EXACT
    assert compare.default_tolerance(np.float32).rtol == 1e-5
    assert compare.default_tolerance(np.float32, tf32=True) is compare.TF32
    assert compare.default_tolerance(np.float16, tf32=True).rtol == 2e-3
    assert compare.default_tolerance(ml_dtypes.bfloat16).rtol == 1.6e-2
    assert compare.default_tolerance(ml_dtypes.float8_e4m3fn).atol == 2.0**-9
    with pytest.raises(ValueError, match="no tolerance policy for dtype complex64"):
        compare.default_tolerance(np.complex64)


def test_overrides_and_validation():
    t = compare.tolerance_for(np.float32, tf32=True, atol=0.5)
    assert (t.rtol, t.atol, t.atol_of_max, t.reason) == (5e-3, 0.5, 0.0, "fp32 with tf32 dots, overridden")
    assert compare.tolerance_for(np.int8, rtol=0.1).rtol == 0.1
    with pytest.raises(ValueError, match="rtol must be a finite number >= 0, got -1"):
        compare.Tolerance(rtol=-1, atol=0)
    assert compare.TF32.describe() == "rtol 0.005, atol 1e-05 + 0.005·max|cpu|"
    assert compare.EXACT.describe() == "rtol 0, atol 0"


def test_measured_tf32_error_fits_the_policy_and_ieee_the_strict_one():
    assert IEEE_DOT_ERROR < TF32_DOT_ERROR / 1000
    assert TF32_DOT_ERROR < compare.TF32.atol_of_max < 10 * TF32_DOT_ERROR
    assert compare.default_tolerance(np.float32).rtol > EXP_MAX_REL


def _tf32_like(exact, error, rng):
    return (exact + rng.uniform(-1, 1, exact.shape) * error * np.abs(exact).max()).astype(np.float32)


def test_a_tf32_sized_error_passes_under_tf32_and_fails_plain_fp32():
    rng = np.random.default_rng(0)
    exact = (rng.standard_normal((64, 64)) @ rng.standard_normal((64, 64))).astype(np.float32)
    gpu = _tf32_like(exact, TF32_DOT_ERROR, rng)
    before = np.zeros_like(exact).reshape(-1)
    relaxed = compare.compare_buffer("c", before, exact.reshape(-1), gpu.reshape(-1), tolerance=compare.TF32)
    strict = compare.compare_buffer("c", before, exact.reshape(-1), gpu.reshape(-1))
    assert relaxed is not None and relaxed.ok
    assert strict is not None and strict.mismatches > 0
    worse = compare.compare_buffer(
        "c",
        before,
        exact.reshape(-1),
        _tf32_like(exact, 20 * TF32_DOT_ERROR, rng).reshape(-1),
        tolerance=compare.TF32,
    )
    assert worse is not None and not worse.ok


def test_ulp_distance():
    f32 = np.float32
    one = np.array([1.0], f32)
    assert compare.ulp_distance(one, np.nextafter(one, f32(2))).tolist() == [1]
    assert compare.ulp_distance(np.array([0.0], f32), np.array([-0.0], f32)).tolist() == [0]
    tiny = np.array([1e-45], f32)
    assert compare.ulp_distance(tiny, -tiny).tolist() == [2]
    assert compare.ulp_distance(np.array([1.0, 2.0]), np.array([1.0, 2.0])).tolist() == [0, 0]
    bf = np.array([1.0], ml_dtypes.bfloat16)
    assert compare.ulp_distance(bf, np.array([1.0078125], ml_dtypes.bfloat16)).tolist() == [1]
    e4 = np.array([1.0, -1.0], ml_dtypes.float8_e4m3fn)
    assert compare.ulp_distance(e4, np.array([1.125, -1.25], ml_dtypes.float8_e4m3fn)).tolist() == [1, 2]
    with pytest.raises(ValueError, match="one dtype"):
        compare.ulp_distance(one, one.astype(np.float64))


def test_ulp_histogram_buckets():
    labels = compare.ulp_bucket_labels()
    assert labels[:6] == ["0", "1", "2", "3-4", "5-8", "9-16"] and labels[-1] == "> 16777216"
    hist = compare.ulp_histogram(np.array([0, 0, 1, 3, 4, 5, 2**30], np.uint64))
    assert len(hist) == len(labels) == len(compare.ULP_EDGES)
    assert hist[:5] == [2, 1, 0, 2, 1] and hist[-1] == 1


def test_nan_inf_mismatches_writers_and_exact_line():
    cpu = np.array([1.0, 2.0, np.nan, np.inf, np.nan, -np.inf, 5.0, 7.0], np.float32)
    gpu = cpu.copy()
    gpu[[2, 3, 6]] = [1.0, -np.inf, 6.0]
    last_writer = np.array([0, 0, 1, 1, 2, 2, 3, -1])
    compared = compare.compare_buffer(
        "out",
        np.zeros_like(cpu),
        cpu,
        gpu,
        shape=(2, 4),
        last_writer=last_writer,
        pid_of=lambda i: (i % 2, i // 2, 0),
    )
    assert compared is not None
    assert (compared.nan_mismatches, compared.inf_mismatches, compared.mismatches) == (1, 1, 3)
    assert compared.positions.tolist() == [2, 3, 6]
    assert compared.writers == [((1, 0, 0), 2), ((1, 1, 0), 1)]
    assert compared.index(6) == (1, 2)
    assert compared.line() == (
        "out: 3 of 8 out of tolerance (fp32: rtol 1e-05, atol 8e-06); max abs 1 at [1, 2], max rel 0.2, max 2097152 ulp; "
        "NaN mismatches 1, Inf mismatches 1; written by pid (1,0,0), (1,1,0)"
    )


def test_integers_are_exact_and_unwritten_buffers_are_skipped():
    before = np.zeros(4, np.int32)
    cpu = np.array([1, 2, 3, 4], np.int32)
    gpu = np.array([1, 2, 3, 5], np.int32)
    compared = compare.compare_buffer("hist", before, cpu, gpu, last_writer=np.array([-1, -1, -1, -1]))
    assert compared is not None and compared.mismatches == 1 and compared.max_ulp == 1
    assert compared.writers == [(None, 1)]
    assert compared.line().endswith("max 1 ulp; 1 not written by the interpreter")
    assert compare.compare_buffer("x", cpu, cpu, cpu) is None
    wide = np.array([0, 2**64 - 1], np.uint64)
    assert compare.compare_buffer("u", np.ones(2, np.uint64), wide, wide[::-1].copy()).max_ulp == 2**64 - 1
    only_gpu = compare.compare_buffer("y", before, before, gpu)
    assert (
        only_gpu is not None
        and only_gpu.written_by == "gpu"
        and only_gpu.line().endswith("(only the GPU wrote it)")
    )
    same_value = compare.compare_buffer("z", before, before, before, cpu_writes=np.ones(4, np.int32))
    assert same_value is not None and same_value.ok and same_value.written_by == "cpu"


def test_comparison_verdicts():
    before = np.zeros(3, np.float32)
    ok = compare.compare_buffer("out", before, np.ones(3, np.float32), np.ones(3, np.float32))
    bad = compare.compare_buffer("acc", before, np.ones(3, np.float32), np.array([1, 1, 2], np.float32))
    assert ok is not None and bad is not None
    assert compare.Comparison(0, "k", "GPU 0", [ok]).verdict() == "#0 k: MATCH (out); max 0 ulp, max abs 0"
    verdict = compare.Comparison(1, "k", "GPU 0", [ok, bad]).verdict()
    assert verdict == (
        "#1 k: MISMATCH in acc: 1 of 3 out of tolerance (fp32: rtol 1e-05, atol 2e-06); max abs 1 at [2], "
        "max rel 1, max 8388608 ulp"
    )
    assert (
        compare.Comparison(2, "k", "GPU 0", []).verdict()
        == "#2 k: nothing to compare (neither side wrote a buffer)"
    )


def test_uses_tf32_dots():
    # TTIR lines as Triton 3.9 writes them for tl.dot on fp32 and fp16 blocks
    dot = "%4 = tt.dot %a_8, %b_12, %cst{} : tensor<32x32x{}> * tensor<32x32x{}> -> tensor<32x32xf32> loc(#loc1)"
    assert compare.uses_tf32_dots(dot.format(", inputPrecision = tf32", "f32", "f32"))
    assert not compare.uses_tf32_dots(dot.format("", "f32", "f32"))
    assert not compare.uses_tf32_dots(dot.format(", inputPrecision = tf32x3", "f32", "f32"))
    assert not compare.uses_tf32_dots(dot.format(", inputPrecision = ieee", "f32", "f32"))
    # an fp16 dot carries the default attribute too, but its products are exact on the GPU
    assert not compare.uses_tf32_dots(dot.format(", inputPrecision = tf32", "f16", "f16"))
    assert not compare.uses_tf32_dots(dot.format(", inputPrecision = tf32", "bf16", "bf16"))


def test_a_buffer_of_several_chunks_is_judged_as_one():
    rng = np.random.default_rng(3)
    size = 3 * compare_buffers.CHUNK + 17
    before = np.zeros(size, np.float32)
    cpu = rng.standard_normal(size).astype(np.float32)
    gpu = cpu.copy()
    gpu[::5] = np.nextafter(gpu[::5], np.float32(np.inf))  # 1 ulp apart in every chunk
    far = [10, compare_buffers.CHUNK + 3, 2 * compare_buffers.CHUNK + 9, size - 1]
    gpu[far] += np.float32(1.0)
    gpu[far[1]] += np.float32(2.0)  # the largest difference, in the second chunk
    cpu[7] = gpu[7] = np.nan  # equal NaNs: no distance, no mismatch
    gpu[compare_buffers.CHUNK + 1] = np.nan  # a NaN on one side only
    compared = compare.compare_buffer("y", before, cpu, gpu)
    assert compared.positions.tolist() == sorted([*far, compare_buffers.CHUNK + 1])
    assert compared.mismatches == 5
    assert compared.max_abs_at == far[1]
    assert compared.max_abs == pytest.approx(3.0, rel=1e-3)
    assert compared.nan_mismatches == 1
    ulp = compare.ulp_distance(cpu, gpu)
    counted = ~(np.isnan(cpu) | np.isnan(gpu))
    assert compared.ulp_hist == compare.ulp_histogram(ulp[counted])
    assert compared.max_ulp == int(ulp[counted].max())


def _reference(cpu, gpu, tolerance):
    """compare_buffer's verdicts computed plainly, element by element in float64."""
    c, g = cpu.astype(np.float64), gpu.astype(np.float64)
    c_nan, g_nan = np.isnan(c), np.isnan(g)
    finite = np.isfinite(c) & np.isfinite(g)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(g - c), 0.0)
    floor = tolerance.floor(cpu)
    nan_mismatch = c_nan != g_nan
    inf_mismatch = ~finite & ~(c_nan | g_nan) & (c != g)
    out = (diff > floor + tolerance.rtol * np.abs(c)) | nan_mismatch | inf_mismatch
    counted = finite | (~(c_nan | g_nan) & (c == g))
    ulp = compare.ulp_distance(cpu, gpu)[counted]
    return (
        np.flatnonzero(out),
        compare.ulp_histogram(ulp),
        int(ulp.max(initial=0)),
        float(diff.max(initial=0)),
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("every", [1, 3, 50])  # most elements differ (whole chunks), or few (gathered)
def test_every_chunk_path_gives_the_plain_verdicts(dtype, every):
    rng = np.random.default_rng(every)
    size = 2 * compare_buffers.CHUNK + 101
    cpu = (rng.standard_normal(size) * 10).astype(dtype)
    gpu = cpu.copy()
    steps = rng.integers(1, 40, size)[::every]
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    gpu.view(bits)[::every] += steps.astype(bits)  # 1 to 39 ulp up (away from zero)
    gpu[[5, 70000]] = np.inf
    cpu[[9, 70000]] = np.nan
    gpu[[9, 11]] = np.nan
    cpu[12] = gpu[12] = -np.inf
    compared = compare.compare_buffer("y", np.zeros_like(cpu), cpu, gpu)
    positions, histogram, max_ulp, max_abs = _reference(cpu, gpu, compared.tolerance)
    assert compared.positions.tolist() == positions.tolist()
    assert compared.ulp_hist == histogram
    assert compared.max_ulp == max_ulp
    assert compared.max_abs == pytest.approx(max_abs)
    assert compared.nan_mismatches == 2 and compared.inf_mismatches == 1


def test_chunks_compared_on_threads_give_the_verdicts_of_one_pass(monkeypatch):
    rng = np.random.default_rng(11)
    size = 9 * compare_buffers.CHUNK + 5
    cpu = rng.standard_normal(size).astype(np.float32)
    gpu = cpu.copy()
    gpu[::2] = np.nextafter(gpu[::2], np.float32(np.inf))
    gpu[rng.integers(0, size, 40)] += np.float32(0.5)
    gpu[[3, 8 * compare_buffers.CHUNK]] = np.nan
    monkeypatch.setattr(compare_buffers, "_WORKERS", 1)
    one = compare.compare_buffer("y", np.zeros_like(cpu), cpu, gpu)
    monkeypatch.setattr(compare_buffers, "_WORKERS", 4)
    monkeypatch.setattr(compare_buffers, "_CHUNKS_PER_WORKER", 1)
    threaded = compare.compare_buffer("y", np.zeros_like(cpu), cpu, gpu)
    assert threaded.positions.tolist() == one.positions.tolist() and one.mismatches > 40
    for field in ("max_abs", "max_abs_at", "max_rel", "max_ulp", "ulp_hist", "nan_mismatches"):
        assert getattr(threaded, field) == getattr(one, field), field
