"""GPU-faithful numerics, checked against values measured on an NVIDIA H200 (fixtures/gpu_numerics.npz,
made by tests/gpu/make_numerics_fixtures.py), and Triton's stock behaviour with numerics="stock"."""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine import triton_compat
from tests.engine import numerics_kernels as nk

GPU = np.load(Path(__file__).parent / "fixtures" / "gpu_numerics.npz")
INT_TYPES = {
    "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32,
}  # fmt: skip
FLOAT8 = {"fp8e4nv": (tl.float8e4nv, ml_dtypes.float8_e4m3fn), "fp8e5": (tl.float8e5, ml_dtypes.float8_e5m2)}


def _cast(values, dst, out_dtype, **options):
    out = np.zeros(values.size, out_dtype)
    with kernel_nb.interpret(**options) as session:
        nk.cast_kernel[(1,)](values, out, values.size, DST=dst, BLOCK=256)
    return out, session.trace[0]


@pytest.mark.parametrize("name", sorted(INT_TYPES))
def test_float_to_int_casts_match_the_gpu(name):
    out, _ = _cast(GPU["specials"], INT_TYPES[name], np.dtype(name))
    np.testing.assert_array_equal(out, GPU[f"cast_{name}"])


def test_stock_numerics_keep_tritons_wrapping_casts():
    out, _ = _cast(GPU["specials"][:3], tl.int32, np.int32, numerics="stock")  # 1e10, NaN, inf
    assert out.tolist() == [-(2**31)] * 3


def test_undefined_casts_are_reported_in_both_modes():
    values = np.array([1.5, np.nan, 1e10, 2.0], np.float32)
    for numerics in ("gpu", "stock"):
        _, launch = _cast(values, tl.int32, np.int32, numerics=numerics)
        [finding] = [f for f in launch.findings if f.kind == "undefined_cast"]
        assert (
            finding.elements.tolist() == [1, 2]
            and finding.line == nk.cast_kernel.fn.__code__.co_firstlineno + 4
        )
        assert finding.message == (
            f"cast_kernel:{finding.line} pid=(0,0,0): float-to-int32 cast of NaN or out-of-range values in 2 "
            "lanes [1, 2] (first: nan); NVIDIA GPUs saturate (NaN -> 0), other backends and C leave the "
            "result undefined"
        )


def test_in_range_casts_report_nothing():
    _, launch = _cast(np.array([1.5, -2.5, 100.0], np.float32), tl.int32, np.int32)
    assert launch.findings == []


@pytest.mark.parametrize("name", ["bf16", "fp8e4nv", "fp8e5"])
def test_conversions_round_like_the_gpu(name):
    values = GPU["convert_inputs"]
    if name == "bf16":
        dst, stored = tl.bfloat16, ml_dtypes.bfloat16
    else:
        dst, stored = FLOAT8[name]
    out, _ = _cast(values, dst, stored)
    bits = np.uint16 if np.dtype(stored).itemsize == 2 else np.uint8
    np.testing.assert_array_equal(out.view(bits), GPU[f"convert_{name}"].view(bits))


def test_fp32_to_bf16_rounds_to_nearest_even_where_stock_truncates():
    x = np.array([1 + 0.75 * 2**-7], np.float32)  # between bf16 neighbours 1 and 1 + 2^-7
    faithful, _ = _cast(x, tl.bfloat16, ml_dtypes.bfloat16)
    stock, _ = _cast(x, tl.bfloat16, ml_dtypes.bfloat16, numerics="stock")
    assert float(faithful[0]) == 1 + 2**-7 and float(stock[0]) == 1.0


def test_bf16_arithmetic_matches_the_gpu_bit_for_bit():
    a = GPU["bf16_a"].view(ml_dtypes.bfloat16)
    b = GPU["bf16_b"].view(ml_dtypes.bfloat16)
    results = [np.zeros(256, ml_dtypes.bfloat16) for _ in range(3)]
    with kernel_nb.interpret() as session:
        nk.bf16_math_kernel[(1,)](a, b, *results, 256, BLOCK=256)
    for label, got in zip(("add", "mul", "exp"), results):
        np.testing.assert_array_equal(
            got.view(np.uint16), GPU[f"bf16_{label}"].view(np.uint16), err_msg=label
        )
    # records of bf16 values hold the numbers, not the interpreter's raw bits
    total = session.trace[0].value(0, "total")
    np.testing.assert_array_equal(total, results[0].astype(np.float32))


PRECISIONS = [("tf32", 2e-6), ("tf32x3", 1e-6), ("ieee", 1e-6), ("bf16x3", 1e-6), ("bf16x6", 1e-6)]


def needs_precision(precision):
    if precision not in triton_compat.dot_input_precisions():
        pytest.skip(f"triton {triton.__version__}'s tl.dot has no input_precision={precision!r}")


@pytest.mark.parametrize("precision, tolerance", PRECISIONS)
def test_dot_honours_input_precision(precision, tolerance):
    needs_precision(precision)
    if f"dot_{precision}" not in GPU:
        pytest.skip(f"fixtures/gpu_numerics.npz has no {precision} dot (made before it was measured)")
    a, b = GPU["dot_a"], GPU["dot_b"]
    c = np.zeros((64, 64), np.float32)
    with kernel_nb.interpret():
        nk.dot_kernel[(1,)](a, b, c, N=64, PRECISION=precision)
    gpu = GPU[f"dot_{precision}"]
    reference = a.astype(np.float64) @ b
    scale = np.linalg.norm(reference)
    # the GPU and the interpreter differ only by fp32 summation order
    assert np.linalg.norm(c - gpu) / scale < tolerance
    if precision == "tf32":
        assert np.linalg.norm(c - reference) / scale > 1e-4  # tf32's error is really there


@pytest.mark.parametrize("precision", [p for p, _ in PRECISIONS])
def test_split_precisions_keep_infinities_where_the_gpu_does(precision):
    needs_precision(precision)
    if f"dot_special_{precision}" not in GPU:
        pytest.skip(f"fixtures/gpu_numerics.npz has no {precision} dot of infinities")
    a, b = GPU["dot_special_a"], GPU["dot_special_b"]
    c = np.zeros((64, 64), np.float32)
    with kernel_nb.interpret():
        nk.dot_kernel[(1,)](a, b, c, N=64, PRECISION=precision)
    gpu = GPU[f"dot_special_{precision}"]
    np.testing.assert_array_equal(np.isnan(c), np.isnan(gpu))
    np.testing.assert_array_equal(np.isinf(c) * np.sign(c), np.isinf(gpu) * np.sign(gpu))
    finite = np.isfinite(gpu)
    assert np.abs(c[finite] - gpu[finite]).max() / np.abs(gpu[finite]).max() < 1e-5


@pytest.mark.skipif(
    "bf16x6" not in triton_compat.dot_input_precisions(), reason="this Triton has no bf16 split dots"
)
def test_bf16_split_dots_are_close_to_fp32():
    a, b = GPU["dot_a"], GPU["dot_b"]
    reference = a.astype(np.float64) @ b
    scale = np.linalg.norm(reference)
    errors = {}
    for precision in ("bf16x3", "bf16x6"):
        c = np.zeros((64, 64), np.float32)
        with kernel_nb.interpret():
            nk.dot_kernel[(1,)](a, b, c, N=64, PRECISION=precision)
        errors[precision] = np.linalg.norm(c - reference) / scale
    # three bf16 products reach about 2**-16 relative error, six about fp32's 2**-24
    assert 1e-7 < errors["bf16x3"] < 1e-4 and errors["bf16x6"] < 1e-6


def test_default_dot_is_tf32_and_stock_is_exact():
    a, b = GPU["dot_a"], GPU["dot_b"]
    faithful, stock = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    with kernel_nb.interpret():
        nk.default_dot_kernel[(1,)](a, b, faithful, N=64)
    with kernel_nb.interpret(numerics="stock"):
        nk.default_dot_kernel[(1,)](a, b, stock, N=64)
    reference = a.astype(np.float64) @ b
    scale = np.linalg.norm(reference)
    assert np.linalg.norm(faithful - GPU["dot_tf32"]) / scale < 2e-6
    assert np.linalg.norm(stock - reference) / scale < 1e-6


@triton.jit
def bf16_scan_kernel(x_ptr, scan_ptr, sum_ptr, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                     REVERSE: tl.constexpr):  # fmt: skip
    # tl.cumsum's and tl.sum's own combine, without the bf16 -> fp32 promotion of triton < 3.7 (the
    # GPU's values were measured with a plain `a + b` combine, the same arithmetic, on triton 3.6)
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(scan_ptr + offs, tl.associative_scan(x, AXIS, tl.standard._sum_combine, reverse=REVERSE))
    total = tl.reduce(x, AXIS, tl.standard._sum_combine)
    if AXIS == 0:
        tl.store(sum_ptr + tl.arange(0, N), total)
    else:
        tl.store(sum_ptr + tl.arange(0, M), total)


@pytest.mark.parametrize("case", range(4))
def test_bf16_scans_and_sums_round_like_the_gpus(case):
    """Each step of a bf16 scan or reduction is rounded on the GPU, in a tree: the error against the
    exact sums grows like the GPU's (the order inside a tree follows the GPU's layout, which is not
    modelled; a long reduction's first steps inside a thread are, so its error is the GPU's or less)."""
    if f"bf16_scan{case}_x" not in GPU:
        pytest.skip("fixtures/gpu_numerics.npz has no bf16 scans")
    m, n, axis, reverse = (int(v) for v in GPU[f"bf16_scan{case}_how"])
    x = GPU[f"bf16_scan{case}_x"].view(ml_dtypes.bfloat16)
    scan, total = np.zeros_like(x), np.zeros(n if axis == 0 else m, ml_dtypes.bfloat16)
    with kernel_nb.interpret():
        bf16_scan_kernel[(1,)](x, scan, total, M=m, N=n, AXIS=axis, REVERSE=bool(reverse))
    exact = x.astype(np.float64)
    exact_scan = np.flip(np.cumsum(np.flip(exact, axis), axis), axis) if reverse else np.cumsum(exact, axis)
    for ours, gpu, reference in (
        (scan, GPU[f"bf16_scan{case}_scan"], exact_scan),
        (total, GPU[f"bf16_scan{case}_sum"], exact.sum(axis)),
    ):
        gpu = gpu.view(ml_dtypes.bfloat16).astype(np.float64)
        ours_error = np.sqrt(np.mean((ours.astype(np.float64) - reference) ** 2))
        gpu_error = np.sqrt(np.mean((gpu - reference) ** 2))
        assert ours_error <= 2.5 * gpu_error, (ours_error, gpu_error)
        if ours is scan:
            assert ours_error >= 0.4 * gpu_error, (ours_error, gpu_error)  # rounded at each step too
