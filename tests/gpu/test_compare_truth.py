"""GPU comparisons that tell the truth, on a CUDA device: no false divergence where a line amplifies
rounding, an exact probe on request, tf32 tolerances scoped to the buffers a tf32 dot feeds."""

import numpy as np
import triton
import triton.language as tl

import kernel_nb
import kernel_nb.gpu as gpu
from tests.divergence import kernels as dk
from tests.divergence.test_local import LINE as SQDIST_LINE
from tests.divergence.test_local import sqdist_kernel


@triton.jit
def kldiv_kernel(y_pred, y_true, loss_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + offs
        mask = cols < n_cols
        y = tl.load(y_pred + row * n_cols + cols, mask=mask, other=0.0)
        t = tl.load(y_true + row * n_cols + cols, mask=mask, other=0.0)
        loss = t * (tl.log(tl.maximum(t, eps)) - y)
        total += tl.sum(loss, axis=0)
    tl.store(loss_ptr + row, total)


def test_a_cancellation_after_a_tf32_dot_matches_and_is_not_a_divergence():
    rng = np.random.default_rng(5)
    x = (10.0 + 0.01 * rng.standard_normal((16, 16))).astype(np.float32)
    y = (10.0 + 0.01 * rng.standard_normal((16, 16))).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    with gpu.divergence(pids=[(0, 0, 0)]) as session:
        sqdist_kernel[(1,)](x, y, out, N=16, D=16)
    launch = session.trace[0]
    print(launch.comparison.report(), launch.divergence.report(), sep="\n")
    assert launch.comparison.ok
    divergence = launch.divergence
    assert divergence.error is None and divergence.first is None
    d = next(s for s in divergence.programs[0].statements if s.name == "d")
    assert d.line == SQDIST_LINE + 9 and d.status == "precision"
    assert "fed the GPU's own `g`, `na`, `nb`, this line computes the GPU's value" in d.reason


def _kldiv_inputs():
    rng = np.random.default_rng(0)
    rows, cols = 64, 4096
    target = rng.random((rows, cols)).astype(np.float32)
    target /= target.sum(axis=1, keepdims=True)
    log_pred = np.log(rng.random((rows, cols)).astype(np.float32) + 1e-3)
    return (log_pred, target, np.zeros(rows, np.float32), cols, 1e-10), rows


def test_the_probe_is_checked_against_the_plain_run_and_exact_without_fp_fusion():
    import cupy

    args, rows = _kldiv_inputs()
    device_args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    with gpu.divergence(pids=[(0, 0, 0)]) as session:
        kldiv_kernel[(rows,)](*device_args, BLOCK=1024)
    fused = session.trace[0]
    print(fused.divergence.report())
    # measured on an H200 (triton 3.6): logging `loss` gives its product a second use, and the
    # compiler stops contracting it into the reduction's first add in 8 of the 64 rows
    assert fused.comparison.fp_fusion and fused.divergence.probe_drift
    assert "`--exact-probe`" in fused.divergence.notes[-1]

    device_args = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
    with gpu.divergence(pids=[(0, 0, 0)], exact_probe=True) as session:
        kldiv_kernel[(rows,)](*device_args, BLOCK=1024)
    exact = session.trace[0]
    print(exact.comparison.report(), exact.divergence.report(), sep="\n")
    assert exact.divergence.probe_drift == () and exact.divergence.notes == []
    assert not exact.comparison.fp_fusion
    assert "compiled without fp fusion" in exact.comparison.report()
    assert exact.comparison.ok and exact.divergence.first is None


def _tf32_matmul(numerics, m=512):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, m, m), dtype=np.float32)
    c = np.zeros((m, m), np.float32)
    with gpu.compare(kernel_nb.Options(numerics=numerics), divergence=False) as session:
        dk.dot_kernel[(m // 64, m // 64)](a, b, c, m, BLOCK=64, BLOCK_K=32, IEEE=False)
    comparison = session.trace[0].comparison
    print(comparison.report(), comparison.timing(), sep="\n")
    return comparison


def test_a_tf32_dot_scopes_its_rule_to_the_buffer_it_feeds_and_matches():
    comparison = _tf32_matmul("gpu")
    (c,) = comparison.buffers
    assert comparison.tf32 and comparison.ok
    assert c.tolerance.reason == "fp32 with tf32 dots (a tf32 dot's result is stored into it)"
    assert (
        "tolerances: fp32 with tf32 dots (a tf32 dot's result is stored into it): 262144 elements (c_ptr)"
        in (comparison.report())
    )
    assert set(comparison.seconds) == {"interpret", "gpu", "diff"}
    # the interpreter rounds the dot's inputs to tf32 as the GPU does: only the sums' order differs
    # (measured: 2.2e-4 on values up to ~100, against 0.08 with exact fp32 products)
    assert c.max_abs < 1e-3


def test_the_same_dot_against_exact_fp32_needs_the_tf32_rule():
    comparison = _tf32_matmul("stock")
    (c,) = comparison.buffers
    assert comparison.ok
    assert c.max_abs > 1e-2  # the interpreter's exact products against tf32's
