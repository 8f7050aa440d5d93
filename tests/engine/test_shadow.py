"""The fp64 shadow run: values, errors, own errors and references, in both strategies."""

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb import numerics
from kernel_nb.trace import COMPANION_KINDS
from tests.engine import shadow_kernels as k

M, N, D, BM = 40, 16, 16, 16


def _points(seed=0):
    rng = np.random.default_rng(seed)
    x = (10 + rng.random((M, D))).astype(np.float32)
    y = (x[:N] + 0.01 * rng.standard_normal((N, D))).astype(np.float32)
    return x, y


def _true_distances(x, y):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    return ((x64[:, None, :] - y64[None, :, :]) ** 2).sum(-1)


def _gram(kernel=k.gram_distances, **options):
    x, y = _points()
    out = np.zeros((M, N), np.float32)
    with kernel_nb.interpret(shadow="fp64", **options) as session:
        kernel[(triton.cdiv(M, BM),)](x, y, out, M, N=N, D=D, BM=BM)
    return session.trace[0], out, _true_distances(x, y)


def test_the_reference_of_a_cancelling_kernel_is_the_true_result():
    launch, out, true = _gram()
    reference = launch.reference("out_ptr")
    assert reference.shape == out.shape and reference.dtype == np.float64
    # on the pairs of points close to each other, the kernel's own result is off by far more
    # than their distances
    near = true < 0.01
    assert near.sum() == N
    assert (np.abs(out - true)[near] > 100 * true[near]).all()
    # the fp64 shadow computes the same formula in fp64: off only by fp64 cancellation
    assert np.abs(reference - true).max() < 1e-9


def test_errors_are_attributed_to_the_statement_that_makes_them():
    launch, _, _ = _gram()
    g, d, na = (launch.precision(1, name) for name in ("g", "d", "na"))
    # the tf32 dot: its operands are exact loads, the error is its own (about 2**-11 relative)
    assert np.array_equal(g.ulps, g.own_ulps)
    assert 1e2 < g.own_ulps.max() < 1e5
    assert 1e-5 < g.relative.max() < 1e-3
    # the cancelling statement carries the dot's error, and adds its own fp32 rounding only
    assert d.ulps.max() > 1e6
    assert d.own_ulps.max() < d.ulps.max() / 1e3
    # a sum of squares in fp32 loses under an ulp
    assert na.ulps.max() < 4
    # the absolute error, against the true distances
    assert d.absolute.max() > 1.0


def test_a_clean_twin_stays_within_a_few_ulps():
    launch, out, true = _gram(kernel=k.centered_distances)
    assert np.allclose(out, true, rtol=1e-5)
    d = launch.precision(0, "d")
    assert d.ulps.max() < 64
    assert np.abs(launch.reference("out_ptr") - true).max() < 1e-12


def test_shadow_values_follow_fp64_arithmetic():
    n, block = 300, 128
    rng = np.random.default_rng(1)
    x = rng.uniform(0.5, 2.0, n).astype(np.float32)
    y = rng.uniform(0.5, 2.0, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.chain[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    launch = session.trace[0]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    s64 = x64 * y64 + x64 / y64
    e64 = np.exp(s64 * np.float64(np.float32(0.01))) + np.log1p(x64)
    for pid in range(3):
        lanes = slice(pid * block, min(n, (pid + 1) * block))
        count = lanes.stop - lanes.start
        s = launch.precision(pid, "s")
        assert np.allclose(s.shadow[:count], s64[lanes], rtol=1e-15)
        assert s.ulps.max() <= 1.5  # two fp32 roundings
        # the bf16 cast: the shadow passes through it, the rounding is the cast's own error
        h = launch.precision(pid, "h")
        assert h.dtype == "bf16"
        assert np.array_equal(h.shadow, s.shadow)
        assert h.own_ulps.max() <= 0.5
        real = np.asarray(h.value[:count], np.float64)
        expected = s64[lanes].astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
        assert np.array_equal(real, expected)
        # exp and libdevice's log1p in fp64 on the shadow
        e = launch.precision(pid, "e")
        assert np.allclose(e.shadow[:count], e64[lanes], rtol=1e-14)
        # an integer converted to fp32 is exact in the shadow
        f = launch.precision(pid, "f")
        offs = np.arange(pid * block, (pid + 1) * block)
        assert np.array_equal(f.shadow, (offs * 3 + 1).astype(np.float64))
        # the reduction, in fp64 over the shadows
        total = launch.precision(pid, "total")
        assert total.shadow.shape == ()
        assert np.isclose(float(total.shadow), e64[lanes].sum(), rtol=1e-14)
    reference = launch.reference("out_ptr")
    assert np.allclose(reference, e64, rtol=1e-14)


def test_integer_values_and_masks_get_no_companions():
    n = 64
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.chain[(1,)](x, x, out, n, BLOCK=64)
    launch = session.trace[0]
    program = launch.program(0)
    shadowed = {
        launch.statements[r.stmt].name for r in program.records if launch.statements[r.stmt].kind == "shadow"
    }
    assert {"x", "y", "s", "h", "back", "e", "total", "f"} <= shadowed
    assert not shadowed & {"offs", "mask", "k", "x_ptr", "n"}
    # every statement has one companion of each kind, at its place; its float records are
    # followed by theirs
    for stmt in launch.statements:
        if stmt.kind in COMPANION_KINDS:
            continue
        ids = launch.companions(stmt.id)
        assert tuple(launch.statements[i].kind for i in ids) == COMPANION_KINDS
        assert all(
            launch.statements[i].line == stmt.line and launch.statements[i].name == stmt.name for i in ids
        )
    records = program.records
    for i, record in enumerate(records):
        if launch.statements[record.stmt].name == "s" and launch.statements[record.stmt].kind == "assign":
            assert tuple(r.stmt for r in records[i + 1 : i + 4]) == launch.companions(record.stmt)


def test_values_and_records_by_name_are_the_real_ones():
    launch, _, _ = _gram()
    assert launch.value(0, "d").dtype == np.float32
    assert all(launch.statements[r.stmt].kind not in COMPANION_KINDS for r in launch.records(0, name="d"))


def test_loops_whose_trip_counts_differ_keep_their_shadows():
    rows, stride, block = 6, 512, 64
    rng = np.random.default_rng(3)
    x = rng.uniform(1.0, 1.01, (rows, stride)).astype(np.float32)
    lens = np.array([512, 64, 300, 0, 129, 448], np.int32)
    out = np.zeros(rows, np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.ragged_sum[(rows,)](x, lens, out, STRIDE=stride, BLOCK=block, ACC=tl.bfloat16)
    launch = session.trace[0]
    reference = launch.reference("out_ptr")
    exact = np.array([x[r, : lens[r]].astype(np.float64).sum() for r in range(rows)])
    assert np.allclose(reference, exact, rtol=1e-14)
    # the bf16 accumulator loses: the real sums are off by far more than fp32 would be
    assert np.abs(out - exact).max() > 0.1
    # the statement rounds twice (the cast of the block to bf16, the bf16 addition); the
    # accumulator carries the roundings of the iterations before it
    acc = launch.precision(0, "acc")
    assert acc.dtype == "bf16" and acc.own_ulps.max() <= 1.0
    assert acc.ulps.max() > acc.own_ulps.max()
    first = launch.precision(0, "acc", iteration=(0,))
    assert np.array_equal(first.ulps, first.own_ulps)


def test_both_strategies_compute_the_same_shadow():
    results = []
    for strategy in ("auto", "serial"):
        launch, out, _ = _gram(strategy=strategy)
        results.append((launch, out))
    (auto, out_a), (serial, out_s) = results
    assert np.array_equal(out_a, out_s)
    assert np.array_equal(auto.reference("out_ptr"), serial.reference("out_ptr"))
    for pid in range(3):
        for name in ("g", "d", "na"):
            a, s = auto.precision(pid, name), serial.precision(pid, name)
            assert np.array_equal(a.shadow, s.shadow) and np.array_equal(a.own_ulps, s.own_ulps)


def test_companions_are_kept_under_the_budget_and_replayed_past_it():
    budget = 24 << 10
    launch, _, _ = _gram(budget_bytes=budget)
    kept = [pid for pid, p in launch.programs.items() if p.kept]
    assert kept and len(kept) < 3
    assert launch.kept_bytes <= 2 * budget + (1 << 20)
    # a program past the budget is replayed with its shadow when looked at, and its errors count
    # toward the statement's largest all the same
    last = launch.pid_of(2)
    assert last not in kept
    d = launch.precision(last, "d")
    assert d.ulps.max() > 1e6 and d.own_ulps.max() < d.ulps.max()
    (stmt,) = {
        s.id
        for s in launch.statements
        if s.name == "d" and s.kind not in COMPANION_KINDS and s.id in launch.errors
    }
    worst = [launch.precision(launch.pid_of(i), "d") for i in range(3)]
    assert np.isclose(launch.errors[stmt].ulps, max(w.ulps.max() for w in worst), rtol=1e-6)
    assert np.isclose(launch.errors[stmt].own, max(w.own_ulps.max() for w in worst), rtol=1e-6)


def test_programs_past_the_budget_make_no_companion_records():
    n, block = 64 * 200, 64
    x = np.linspace(0.5, 2.0, n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    with kernel_nb.interpret(shadow="fp64", budget_bytes=32 << 10) as session:
        k.chain[(triton.cdiv(n, block),)](x, x[::-1].copy(), out, n, BLOCK=block)
    launch = session.trace[0]
    companions = {s.id for s in launch.statements if s.kind in COMPANION_KINDS}
    with_companions = [
        pid for pid, p in launch.programs.items() if any(r.stmt in companions for r in p.records)
    ]
    kept = [pid for pid, p in launch.programs.items() if p.kept]
    assert kept and len(with_companions) < len(launch.programs) // 2
    # every kept program has them, and the statements' largest errors count every program
    assert set(kept) <= set(with_companions)
    last = launch.pid_of(launch.num_programs - 1)
    assert last not in with_companions
    s_stmt = next(r.stmt for r in launch.programs[last].records if launch.statements[r.stmt].name == "s")
    assert launch.statements[s_stmt].kind not in COMPANION_KINDS
    replayed = [launch.precision(launch.pid_of(i), "s").own_ulps.max() for i in range(launch.num_programs)]
    assert launch.errors[s_stmt].own == pytest.approx(max(replayed), rel=1e-6)


def test_a_buffer_nothing_stored_into_is_its_inputs():
    launch, _, _ = _gram()
    x, _ = _points()
    assert np.array_equal(launch.reference("x_ptr"), x.astype(np.float64))
    with pytest.raises(KeyError):
        launch.reference("M")


def test_without_a_shadow_there_is_no_reference():
    x, y = _points()
    out = np.zeros((M, N), np.float32)
    with kernel_nb.interpret() as session:
        k.gram_distances[(3,)](x, y, out, M, N=N, D=D, BM=BM)
    launch = session.trace[0]
    assert not any(s.kind in COMPANION_KINDS for s in launch.statements)
    with pytest.raises(ValueError, match="shadow"):
        launch.reference("out_ptr")
    with pytest.raises(ValueError, match="shadow"):
        launch.precision(0, "d")


def test_ulps_are_the_spacing_of_the_type():
    values = np.array([1.0, 0.013, 0.0, 3e38, 1e-40, -2.5])
    assert np.array_equal(
        numerics.ulp(values, "fp32"), np.abs(np.spacing(values.astype(np.float32))).astype(np.float64)
    )
    bf = np.array([1.0, 0.013, 300.0])
    assert np.array_equal(
        numerics.ulp(bf, "bf16"), np.spacing(bf.astype(ml_dtypes.bfloat16)).astype(np.float64)
    )
    half = np.array([1.0, 0.001, 60000.0])
    assert np.array_equal(numerics.ulp(half, "fp16"), np.spacing(half.astype(np.float16)).astype(np.float64))


@pytest.mark.parametrize(
    ("name", "kind", "bits"), [("fp32", np.float32, 23), ("fp16", np.float16, 10), ("fp64", np.float64, 52)]
)
def test_the_ulps_of_numpys_types_agree_with_its_spacing_across_binades(name, kind, bits):
    rng = np.random.default_rng(1)
    info = np.finfo(kind)
    exponents = rng.integers(int(info.minexp) - bits, int(info.maxexp), 20_000)
    values = (rng.uniform(1, 2, exponents.size) * 2.0 ** exponents.astype(np.float64)).astype(kind)
    values = np.concatenate([values, -values, np.array([0, info.smallest_subnormal, info.tiny], kind)])
    with np.errstate(over="ignore"):
        expected = np.spacing(np.abs(values))
    top = np.abs(values) >= 2.0 ** (int(info.maxexp) - 1)
    # np.spacing overflows in the highest binade; its spacing is 2**(emax - bits) all the same
    expected[top] = 2.0 ** (int(info.maxexp) - 1 - bits)
    assert np.array_equal(numerics.ulp(values, name), expected)
    specials = numerics.ulp(np.array([np.inf, -np.inf, np.nan], kind), name)
    assert np.isnan(specials).all()
    assert numerics.ulp(np.array(1.0), name) == info.eps  # a 0-d array, as a statement's scalar


def test_operations_that_round_nothing_add_no_error_of_their_own():
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 2.0, 64).astype(np.float32)
    y = rng.uniform(0.5, 2.0, 64).astype(np.float32)
    out = np.zeros(64, np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.exact_ops[(1,)](x, y, out, BLOCK=64)
    launch = session.trace[0]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    p, q = x64 * y64, x64 / y64
    shadows = {
        "top": np.maximum(p, q),
        "picked": np.where(x > y, p, q),
        "whole": p,  # a condition true in every lane: the first operand as it is
        "clipped": np.maximum(p, 0.0),
        "m": q.max(),
        "larger": np.maximum(x64, y64),
        "twice": np.maximum(x64, y64) * 3.0,
    }
    for name, shadow in shadows.items():
        got = launch.precision(0, name)
        assert np.array_equal(got.shadow, shadow), name
        spacing = numerics.ulp(got.value, "fp32")
        assert np.allclose(got.ulps, np.abs(got.value - shadow) / spacing, rtol=1e-6, atol=0), name
    # the maximum, the select and the reduction only pass their operands' errors on
    for name in ("top", "picked", "m", "larger"):
        assert not launch.precision(0, name).own_ulps.any(), name
    assert launch.precision(0, "top").ulps.max() > 0
    # the product by 1.0 in the statement is exact: the select adds nothing either
    whole = launch.precision(0, "whole")
    assert np.array_equal(whole.ulps, launch.precision(0, "p").ulps) and not whole.own_ulps.any()
    # a product rounded within the statement is the statement's own error
    clipped = launch.precision(0, "clipped")
    assert np.array_equal(clipped.own_ulps, clipped.ulps) and clipped.own_ulps.max() > 0
    # from exact operands, all of a statement's error is its own
    twice = launch.precision(0, "twice")
    assert np.array_equal(twice.own_ulps, twice.ulps)
    stmt = {s.name: s.id for s in launch.statements if s.kind not in COMPANION_KINDS}
    assert launch.errors[stmt["top"]].own == 0 and launch.errors[stmt["top"]].ulps > 0


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_booleans_made_from_floats_have_no_shadow(dtype):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(64).astype(dtype)
    y = np.where(np.arange(64) % 3 == 0, x, rng.standard_normal(64).astype(dtype))
    less, nonzero = np.zeros(64, np.bool_), np.zeros(64, np.bool_)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.compares[(1,)](x, y, less, nonzero, BLOCK=64)
    assert np.array_equal(less, x < y) and np.array_equal(nonzero, x != y)
    launch = session.trace[0]
    stmt = {s.name: s.id for s in launch.statements if s.kind not in COMPANION_KINDS}
    assert stmt["less"] not in launch.errors and stmt["nonzero"] not in launch.errors
    assert stmt["x"] in launch.errors  # the floats themselves are followed


# -- findings ---------------------------------------------------------------------------------------


def _precision_findings(launch):
    return [f for f in launch.findings if f.kind == "precision_loss"]


def _line_of(kernel, text):
    import inspect

    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_a_cancellation_is_reported_with_the_dot_that_brings_its_error():
    launch, _, _ = _gram()
    found = _precision_findings(launch)
    d_line, g_line = _line_of(k.gram_distances, "d = na"), _line_of(k.gram_distances, "g = tl.dot")
    assert [f.line for f in found] == [d_line, g_line]
    cancels, dot = found
    assert "cancels" in cancels.message and f"`g` (line {g_line}, a tf32 dot) brings 100%" in cancels.message
    assert "absolute error on values of" in cancels.message and cancels.arg == "out_ptr"
    assert 'input_precision="ieee"' in cancels.message
    assert "runs as tf32" in dot.message and 'input_precision="ieee"' in dot.message
    assert all(f.severity == "warning" and f.elements is not None and f.elements.size for f in found)


def test_the_centered_twin_has_no_precision_finding():
    launch, _, _ = _gram(kernel=k.centered_distances)
    assert _precision_findings(launch) == []


@pytest.mark.parametrize("precision", ["tf32", "ieee"])
def test_a_tf32_dot_that_dominates_an_output_is_reported_and_its_ieee_twin_is_not(precision):
    rng = np.random.default_rng(5)
    a = rng.uniform(0.5, 1.5, (32, 64)).astype(np.float32)
    b = rng.uniform(0.5, 1.5, (64, 32)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.matmul[(1,)](a, b, c, M=32, N=32, K=64, PRECISION=precision)
    found = _precision_findings(session.trace[0])
    if precision == "ieee":
        assert found == []
        assert np.allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-6)
    else:
        assert len(found) == 1 and found[0].line == _line_of(k.matmul, "c = tl.dot")
        assert "runs as tf32" in found[0].message and "it reaches `c_ptr`" in found[0].message


@pytest.mark.parametrize("acc", [tl.bfloat16, tl.float32])
def test_a_bf16_accumulation_that_loses_half_its_bits_is_reported_and_its_fp32_twin_is_not(acc):
    rows, stride, block = 3, 9600, 16
    x = np.random.default_rng(2).uniform(1.0, 1.01, (rows, stride)).astype(np.float32)
    lens = np.array([9600, 8000, 3000], np.int32)
    out = np.zeros(rows, np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.ragged_sum[(rows,)](x, lens, out, STRIDE=stride, BLOCK=block, ACC=acc)
    found = _precision_findings(session.trace[0])
    if acc == tl.float32:
        assert found == []
    else:
        assert len(found) == 1 and found[0].line == _line_of(k.ragged_sum, "acc += v")
        assert "accumulates in bf16" in found[0].message and "more than half its bits" in found[0].message


def test_no_detection_no_precision_findings():
    launch, _, _ = _gram(detect=False)
    assert _precision_findings(launch) == []


def test_float_atomics_update_the_reference_as_they_update_the_buffer():
    n, block = 1000, 128
    x = np.random.default_rng(4).uniform(0.0, 1.0, n).astype(np.float32)
    out = np.zeros(2, np.float32)
    with kernel_nb.interpret(shadow="fp64") as session:
        k.split_sum[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
    reference = session.trace[0].reference("out_ptr")
    x64 = x.astype(np.float64)
    parts = [x64[i : i + block].sum() for i in range(0, n, block)]
    assert np.isclose(reference[0], x64.sum(), rtol=1e-14)
    assert abs(out[0] - reference[0]) < 1e-3
    # tl.atomic_max of floats works on their bits, which the shadow does not follow: the
    # reference holds the launch's own result there, and says nothing more
    assert reference[1] == out[1] == np.float32(max(parts))


def test_a_bit_trick_on_a_float_starts_a_shadow_of_its_own_and_leaves_the_result_alone():
    x = np.linspace(-3, 3, 32).astype(ml_dtypes.float8_e4m3fn)
    results = []
    for shadow in (None, "fp64"):
        out = np.zeros(32, ml_dtypes.float8_e4m3fn)
        with kernel_nb.interpret(shadow=shadow) as session:
            k.abs_fp8[(1,)](x, out, BLOCK=32)
        results.append(out.view(np.uint8).copy())
    assert np.array_equal(results[0], results[1])
    y = session.trace[0].precision(0, "y")
    assert np.array_equal(y.shadow, np.abs(x.astype(np.float64))) and y.ulps.max() == 0
