"""A divergence is local: a statement that, fed the GPU's own operands, computes the GPU's value is
not where the GPU went its own way, however far its value is from the interpreter's."""

import copy
from dataclasses import replace

import numpy as np
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.compare.reevaluate import agrees, recompute
from kernel_nb.gpu.instrument import PROBE, instrument, read_log
from kernel_nb.gpu.probe import ProbeRun, addresses_from_log, analyse
from tests.divergence.support import interpret, probe_on_cpu


@triton.jit
def sqdist_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr, D: tl.constexpr):
    r = tl.arange(0, N)
    k = tl.arange(0, D)
    x = tl.load(x_ptr + r[:, None] * D + k[None, :])
    y = tl.load(y_ptr + r[:, None] * D + k[None, :])
    na = tl.sum(x * x, axis=1)
    nb = tl.sum(y * y, axis=1)
    g = tl.dot(x, tl.trans(y))
    d = na[:, None] + nb[None, :] - 2.0 * g
    tl.store(out_ptr + r[:, None] * N + r[None, :], d)


LINE = sqdist_kernel.fn.__code__.co_firstlineno


def _points():
    rng = np.random.default_rng(5)
    x = (10.0 + 0.01 * rng.standard_normal((16, 16))).astype(np.float32)
    y = (10.0 + 0.01 * rng.standard_normal((16, 16))).astype(np.float32)
    return x, y


def test_a_cancellation_after_a_tf32_dot_carries_the_dots_error_and_is_not_the_first_divergence():
    x, y = _points()
    args, kwargs = (x, y, np.zeros((16, 16), np.float32)), {"N": 16, "D": 16}
    _, _, divergence = probe_on_cpu(sqdist_kernel, (1,), args, kwargs, [(0, 0, 0)], cpu={"numerics": "stock"})
    program = divergence.programs[0]
    by_name = {s.name: s for s in program.statements}
    g, d = by_name["g"], by_name["d"]
    assert divergence.first is None
    assert (g.status, g.line) == ("precision", LINE + 8)
    assert g.reason.endswith("tf32 dot here")
    assert (d.status, d.line) == ("precision", LINE + 9)
    assert d.mismatches > 0  # far from the interpreter's exact distances ...
    assert "fed the GPU's own `g`, `na`, `nb`, this line computes the GPU's value" in d.reason
    assert d.reason.endswith("it carries a difference that came in (from `g`: tf32 dot here)")


def test_recompute_follows_the_statements_dtype_and_broadcasting():
    na, nb = np.float32([1.0, 2.0]), np.float32([3.0, 4.0, 5.0])
    g = np.full((2, 3), 0.5, np.float32)
    out = recompute("na[:, None] + nb[None, :] - 2.0 * g", {"na": na, "nb": nb, "g": g}, np.dtype(np.float32))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[3.0, 4.0, 5.0], [4.0, 5.0, 6.0]])
    half = recompute("a * b", {"a": np.float16([3.0]), "b": np.float16([1 / 3])}, np.dtype(np.float16))
    assert half.dtype == np.float16 and half[0] == np.float16(3.0) * np.float16(1 / 3)
    assert (
        recompute("tl.exp(x - m)", {"x": np.float32([1.0]), "m": np.float32([1.0])}, np.dtype(np.float32))[0]
        == 1
    )


def test_recompute_declines_what_is_not_elementwise_or_not_logged():
    values = {"a": np.ones((2, 2), np.float32), "b": np.ones((2, 2), np.float32)}
    assert recompute("tl.dot(a, b)", values, np.dtype(np.float32)) is None
    assert recompute("tl.sum(a, axis=1)", values, np.dtype(np.float32)) is None
    assert recompute("a + c", values, np.dtype(np.float32)) is None
    assert recompute("a.exp()", values, np.dtype(np.float32)) is None


def test_agrees_is_within_the_tolerance_with_nans_in_the_same_places():
    gpu = np.float32([1.0, np.nan, np.inf])
    assert agrees(np.float32([1.0 + 1e-7, np.nan, np.inf]), gpu, 1e-5, 1e-6)
    assert not agrees(np.float32([1.1, np.nan, np.inf]), gpu, 1e-5, 1e-6)
    assert not agrees(np.float32([1.0, 0.0, np.inf]), gpu, 1e-5, 1e-6)


def test_operands_within_tolerance_whose_difference_a_cancellation_magnifies_are_amplified_rounding():
    x, y = _points()
    args, kwargs = (x, y, np.zeros((16, 16), np.float32)), {"N": 16, "D": 16}
    launch = interpret(sqdist_kernel, (1,), args, kwargs, numerics="stock")
    probed = instrument(sqdist_kernel, launch, [(0, 0, 0)])
    log = np.zeros(probed.layout.total_bytes, np.uint8)
    with kernel_nb.interpret(kernel_nb.Options(capture=False, detect=False, numerics="stock")):
        probed.kernel[(1,)](*copy.deepcopy(args), **kwargs, **{PROBE: log})
    logs = read_log(probed.layout, log)
    names = {stmt: launch.statements[stmt].name for stmt, _ in logs[(0, 0, 0)].entries}
    shapes = {r.stmt: r.shape for r in launch.program((0, 0, 0)).records}
    # a GPU whose norms are 1 ulp off the interpreter's (well within fp32's tolerance), and whose
    # distances are computed from them exactly as the line says
    seen, entries = {}, []
    for stmt, raw in logs[(0, 0, 0)].entries:
        floats = names[stmt] in ("na", "nb", "g", "d")
        value = np.frombuffer(raw, np.float32).reshape(shapes[stmt]).copy() if floats else None
        if names[stmt] in ("na", "nb"):
            value = np.nextafter(value, np.float32(np.inf))
        if names[stmt] == "d":
            value = recompute("na[:, None] + nb[None, :] - 2.0 * g", seen, np.dtype(np.float32))
        if value is not None:
            seen[names[stmt]] = value
            raw = value.tobytes()
        entries.append((stmt, raw))
    logs[(0, 0, 0)] = replace(logs[(0, 0, 0)], entries=entries)
    divergence = analyse(launch, probed, ProbeRun(logs, addresses_from_log(launch, logs)))
    by_name = {s.name: s for s in divergence.programs[0].statements}
    assert [by_name[n].status for n in ("na", "nb", "g")] == ["match", "match", "match"]
    d = by_name["d"]
    assert d.status == "precision" and d.mismatches > 0
    assert d.reason.endswith(
        "amplified rounding, the operands match within tolerance and this line magnifies their "
        "differences (a difference of close values, say)"
    )
    assert divergence.first is None


@triton.jit
def bucket_kernel(x_ptr, y_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + r[None, :])
    y = tl.load(y_ptr + r[:, None] * N + r[None, :])
    g = tl.dot(x, y)
    bucket = (g * 1000.0 + 0.5).to(tl.int32)
    tl.store(out_ptr + r[:, None] * N + r[None, :], bucket)


def test_an_integer_statement_is_never_its_own_rounding_and_names_the_tf32_dot_that_flows_in():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((2, 16, 16)).astype(np.float32)
    args, kwargs = (x, y, np.zeros((16, 16), np.int32)), {"N": 16}
    _, _, divergence = probe_on_cpu(bucket_kernel, (1,), args, kwargs, [(0, 0, 0)], cpu={"numerics": "stock"})
    _, first = divergence.first
    assert (first.name, first.status, first.line) == (
        "bucket",
        "diverge",
        bucket_kernel.fn.__code__.co_firstlineno + 6,
    )
    assert first.reason.endswith(
        "; its operands differ by rounding (from `g`: tf32 dot here), which an integer or bool result turns "
        "into a different value"
    )
    assert "fma" not in first.reason
