"""The serial strategy is the reference: every test kernel, run both ways from identical inputs, must
give identical outputs, records, memory events and findings; and the batched strategy must really be
the one that ran where it applies."""

import ml_dtypes
import numpy as np
import pytest
import triton.language as tl

import kernel_nb
from tests.engine import detector_kernels as dk
from tests.engine import kernels as k
from tests.engine import numerics_kernels as nk

COMPARES_STRATEGIES = True  # (see conftest.strategy)

rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


M, N, K = 48, 40, 70
SEQ, D = 64, 16

# name → (inputs, launch(inputs), what the "auto" run must use: "batched" keeping track by ranges,
# "batched per-element" keeping track per element, or "serial")
SCENARIOS = {
    "vector_add": (lambda: [f32(1000), f32(1000), np.zeros(1000, np.float32)],
                   lambda a: k.add_kernel[(4,)](*a, 1000, BLOCK=256), "batched"),
    "softmax": (lambda: [np.zeros((37, 100), np.float32), f32(37, 100)],
                lambda a: k.softmax_kernel[(37,)](a[0], a[1], 100, 100, 100, BLOCK=128), "batched"),
    "matmul": (lambda: [f32(M, K), f32(K, N), np.zeros((M, N), np.float32)],
               lambda a: k.matmul_kernel[(3, 3)](*a, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16),
               "batched"),
    "matmul_full_tiles": (lambda: [f32(64, 48), f32(48, 32), np.zeros((64, 32), np.float32)],
                          lambda a: k.matmul_kernel[(4, 2)](*a, 64, 32, 48, 48, 1, 32, 1, 32, 1,
                                                            BLOCK_M=16, BLOCK_N=16, BLOCK_K=16), "batched"),
    "masked_loop": (lambda: [np.abs(f32(6, 96)) - 0.5, np.zeros(12, np.float32), np.zeros(6, np.int32),
                             np.zeros((6, 8), np.float32)],
                    lambda a: k.triangle_kernel[(6,)](*a, 96, BLOCK=16), "batched"),
    "nested_masked_loops": (lambda: [f32(5, 80), np.zeros((5, 16), np.float32)],
                            lambda a: k.nested_triangle_kernel[(5,)](*a, 80, BLOCK=16), "batched"),
    "masked_loop_atomics": (lambda: [f32(4, 64), np.zeros(64, np.float32)],
                            lambda a: k.triangle_atomic_kernel[(4,)](*a, 64, BLOCK=16), "batched per-element"),
    "fresh_each_iteration": (lambda: [np.zeros(5 * 16, np.float32)],
                             lambda a: k.fresh_each_iteration_kernel[(5,)](a[0], BLOCK=16), "batched"),
    "branch_in_masked_loop": (lambda: [f32(6 * 16), np.zeros(6 * 16, np.float32)],
                              lambda a: k.branch_in_masked_loop_kernel[(6,)](*a, BLOCK=16), "batched"),
    "tuple_in_masked_loop": (lambda: [f32(5 * 16), np.zeros(5 * 16, np.float32)],
                             lambda a: k.tuple_in_masked_loop_kernel[(5,)](*a, BLOCK=16), "batched"),
    "overflow_in_masked_loop": (lambda: [np.zeros(4 * 8, np.int32)],
                                lambda a: k.overflow_in_masked_loop_kernel[(4,)](a[0], BLOCK=8), "batched"),
    "layer_norm": (lambda: [f32(9, 300), np.zeros((9, 300), np.float32), f32(300), f32(300),
                            np.zeros(9, np.float32), np.zeros(9, np.float32)],
                   lambda a: k.layer_norm_fwd[(9,)](*a, 300, 300, 1e-5, BLOCK=128), "batched"),
    "flash_attention": (lambda: [f32(2, SEQ, D), f32(2, SEQ, D), f32(2, SEQ, D), np.zeros((2, SEQ, D), np.float32)],
                        lambda a: k.causal_attention_fwd[(SEQ // 16, 2)](*a, SEQ, 0.25, D=D, BLOCK_M=16, BLOCK_N=16),
                        "batched"),
    # x^T tiles read as columns: masked lanes inside x (its last rows), or past its end
    "transposed_tile": (lambda: [f32(80, 16), np.zeros(5 * 16 * 16, np.float32)],
                        lambda a: k.transposed_tile_kernel[(5,)](*a, 70, COLS=16, BLOCK=16), "batched"),
    "transposed_tile_past_the_end": (lambda: [f32(70, 16), np.zeros(5 * 16 * 16, np.float32)],
                                     lambda a: k.transposed_tile_kernel[(5,)](*a, 70, COLS=16, BLOCK=16),
                                     "batched"),
    "helper": (lambda: [f32(300), np.zeros(300, np.float32)],
               lambda a: k.helper_kernel[(3,)](*a, 300, 3.0, BLOCK=128), "batched"),
    "custom_reduce": (lambda: [f32(4, 64), np.zeros(4, np.float32)],
                      lambda a: k.max_abs_kernel[(4,)](*a, BLOCK=64), "batched"),
    "cumsum": (lambda: [rng.integers(-50, 50, (3, 128)).astype(np.int32), np.zeros((3, 128), np.int32)],
               lambda a: k.cumsum_kernel[(3,)](*a, BLOCK=128), "batched"),
    "atomics": (lambda: [rng.integers(0, 1000, 1000).astype(np.int32), np.zeros(16, np.int32),
                         np.zeros(1, np.int32), np.zeros(1, np.int32)],
                lambda a: k.histogram_kernel[(8,)](*a, 1000, BINS=16, BLOCK=128), "batched per-element"),
    "shared_counter": (lambda: [f32(8), np.zeros(2, np.float32)],
                       lambda a: k.shared_counter_kernel[(5,)](*a, BLOCK=8), "batched per-element"),
    "bf16_shared_counter": (lambda: [f32(8).astype(ml_dtypes.bfloat16), np.zeros(2, ml_dtypes.bfloat16)],
                            lambda a: k.shared_counter_kernel[(5,)](*a, BLOCK=8), "batched per-element"),
    "bf16_scan_and_reduce": (lambda: [f32(3, 32).astype(ml_dtypes.bfloat16), np.zeros((3, 32), ml_dtypes.bfloat16),
                                      np.zeros(3, ml_dtypes.bfloat16), np.zeros(3, ml_dtypes.bfloat16)],
                             lambda a: k.scan_and_reduce_kernel[(3,)](*a, BLOCK=32), "batched"),
    "tensor_descriptor": (lambda: [f32(20, 24), np.zeros((20, 24), np.float32)],
                          lambda a: k.descriptor_scale_kernel[(3, 2)](*a, 20, 24, BLOCK_M=8, BLOCK_N=16), "batched"),
    "rand": (lambda: [np.zeros(300, np.float32)], lambda a: k.rand_kernel[(3,)](a[0], 1234, 300, BLOCK=128), "batched"),
    "axpy_in_place": (lambda: [f32(200)], lambda a: k.axpy_kernel[(2,)](a[0], a[0], 200, 2.0, BLOCK=128), "batched"),
    "grid_3d": (lambda: [np.zeros((2, 3, 4), np.int32)], lambda a: k.grid3d_kernel[(4, 3, 2)](a[0], GX=4, GY=3),
                "batched"),
    "bf16_copy": (lambda: [f32(300).astype(ml_dtypes.bfloat16), np.zeros(300, ml_dtypes.bfloat16)],
                  lambda a: k.copy_kernel[(3,)](*a, 300, BLOCK=128), "batched"),
    "strided": (lambda: [f32(10, 24)[1::2, ::3], np.zeros((5, 8), np.float32)],
                lambda a: k.strided_copy_kernel[(5,)](a[0], a[1], 5, 8, 48, 3, BLOCK=8), "batched"),
    "tuple": (lambda: [f32(50), f32(50), np.zeros(50, np.float32)],
              lambda a: k.tuple_kernel[(1,)]((a[0], a[1]), a[2], 50, BLOCK=64), "batched"),
    "bf16_math": (lambda: [f32(256).astype(ml_dtypes.bfloat16), f32(256).astype(ml_dtypes.bfloat16),
                           *(np.zeros(256, ml_dtypes.bfloat16) for _ in range(3))],
                  lambda a: nk.bf16_math_kernel[(1,)](*a, 256, BLOCK=256), "batched"),
    "tf32_dot": (lambda: [f32(32, 32), f32(32, 32), np.zeros((32, 32), np.float32)],
                 lambda a: nk.default_dot_kernel[(1,)](*a, N=32), "batched"),
    "cast": (lambda: [np.array([1e10, np.nan, 3.5, -2.5], np.float32), np.zeros(4, np.int32)],
             lambda a: nk.cast_kernel[(1,)](*a, 4, DST=tl.int32, BLOCK=4), "batched"),
    "nan_origin": (lambda: [np.linspace(-1, 1, 256, dtype=np.float32), np.zeros(256, np.float32)],
                   lambda a: dk.log_kernel[(2,)](*a, 256, BLOCK=128), "batched"),
    "masked_row_nan": (lambda: [np.ones((3, 16), np.float32), np.zeros((3, 16), np.float32)],
                       lambda a: dk.masked_row_softmax[(3,)](*a, 16, 0, BLOCK=16), "batched"),
    "int_overflow": (lambda: [np.zeros(1024, np.float32)],
                     lambda a: dk.scaled_offsets_kernel[(1,)](a[0], a[0], 1024, SCALE=4_000_000, BLOCK=1024),
                     "batched"),
    "uncovered": (lambda: [f32(1000), f32(1000), np.zeros(1000, np.float32)],
                  lambda a: k.add_kernel[(3,)](*a, 1000, BLOCK=256), "batched"),
    "uninitialised": (lambda: [f32(100), kernel_nb.poison(np.empty(100, np.float32))],
                      lambda a: dk.accumulate_kernel[(1,)](*a, 100, BLOCK=128), "batched per-element"),
    "stencil": (lambda: [f32(300), np.zeros(300, np.float32)],
                lambda a: k.stencil_kernel[(3,)](*a, 300, BLOCK=128), "batched per-element"),
    "columns_in_place": (lambda: [f32(20, 6)], lambda a: k.scale_columns_kernel[(6,)](a[0], 20, 6, BLOCK=32),
                         "batched per-element"),
    "shared_read_twice": (lambda: [f32(5, 40), f32(40), np.zeros((5, 40), np.float32)],
                          lambda a: k.twice_shared_kernel[(5,)](*a, 40, BLOCK=64), "batched per-element"),
    "partial_alias": (lambda: [f32(150), np.zeros(100, np.float32)],
                      lambda a: k.add_kernel[(2,)](a[0][:100], a[0][50:], a[1], 100, BLOCK=64),
                      "batched per-element"),
    "pointer_cast": (lambda: [f32(100), np.zeros(100, np.float32)],
                     lambda a: k.bytes_view_kernel[(4,)](*a, 100, BLOCK=128), "batched"),
    "write_race": (lambda: [np.zeros(64, np.int32)], lambda a: dk.racy_write_kernel[(3,)](a[0], BLOCK=64), "serial"),
    # 2-D tiles whose rows overlap their neighbours': told apart element by element, then serial
    "tile_write_race": (lambda: [np.zeros((16, 48), np.int32)],
                        lambda a: dk.overlapping_tiles_kernel[(2, 2)](a[0], STRIDE=48, ROWS=8, COLS=32, STEP=16),
                        "serial"),
    "read_after_write": (lambda: [np.ones(128, np.float32), np.zeros(128, np.float32)],
                         lambda a: dk.carry_kernel[(4,)](*a, BLOCK=32), "serial"),
    "prints": (lambda: [np.arange(8, dtype=np.float32)], lambda a: k.print_kernel[(2,)](a[0], BLOCK=4), "serial"),
}  # fmt: skip


def _run(name, strategy):
    make, launch, _ = SCENARIOS[name]
    global rng
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    arrays = make()
    with kernel_nb.interpret(strategy=strategy) as session:
        launch(arrays)
    return arrays, session.trace[0]


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_serial_and_batched_agree(name, capsys):
    serial_arrays, serial = _run(name, "serial")
    auto_arrays, auto = _run(name, "auto")
    expected = SCENARIOS[name][2]
    assert auto.strategy == expected.split()[0], auto.strategy_note
    assert ("per-element" in auto.strategy_note) == expected.endswith("per-element"), auto.strategy_note
    for s_arr, a_arr in zip(serial_arrays, auto_arrays):
        assert np.array_equal(
            np.ascontiguousarray(s_arr).view(np.uint8), np.ascontiguousarray(a_arr).view(np.uint8)
        )
    assert serial.statements == auto.statements
    assert list(serial.programs) == list(auto.programs)
    for pid, sp in serial.programs.items():
        ap = auto.programs[pid]
        assert sp.kept == ap.kept
        assert len(sp.records) == len(ap.records)
        for sr, ar in zip(sp.records, ap.records):
            assert (sr.stmt, sr.seq, sr.call_path, sr.iteration, sr.dtype, sr.shape, sr.pointer_arg) == (
                ar.stmt,
                ar.seq,
                ar.call_path,
                ar.iteration,
                ar.dtype,
                ar.shape,
                ar.pointer_arg,
            ), (pid, auto.statements[sr.stmt])
            assert sr.summary == ar.summary or (
                sr.summary.size == ar.summary.size and np.isnan(sr.summary.mean)
            )
            assert _same(sr.value, ar.value), (pid, auto.statements[sr.stmt])
        assert len(sp.events) == len(ap.events)
        for se, ae in zip(sp.events, ap.events):
            assert (se.kind, se.seq, se.line, se.arg, se.active, se.lo, se.hi) == (
                ae.kind,
                ae.seq,
                ae.line,
                ae.arg,
                ae.active,
                ae.lo,
                ae.hi,
            )
            for field in ("indices", "mask", "values", "before"):
                assert _same(getattr(se, field), getattr(ae, field)), field
    for name_, sb in serial.buffers.items():
        ab = auto.buffers[name_]
        for field in ("reads", "writes", "last_writer"):
            assert np.array_equal(getattr(sb, field), getattr(ab, field)), (name_, field)
    assert [(f.kind, f.severity, f.message, f.pid, f.line, f.arg) for f in serial.findings] == [
        (f.kind, f.severity, f.message, f.pid, f.line, f.arg) for f in auto.findings
    ]
    for sf, af in zip(serial.findings, auto.findings):
        assert _same(sf.elements, af.elements)


def test_a_small_budget_keeps_the_same_programs_both_ways():
    x = np.arange(64 * 16, dtype=np.float32)
    kept = {}
    for strategy in ("serial", "auto"):
        with kernel_nb.interpret(strategy=strategy, budget_bytes=5000) as session:
            k.add_kernel[(16,)](x, x, np.zeros_like(x), x.size, BLOCK=64)
        launch = session.trace[0]
        kept[strategy] = ([p for p, prog in launch.programs.items() if prog.kept], launch.kept_bytes)
    assert kept["serial"] == kept["auto"] and 0 < len(kept["serial"][0]) < 16


def test_a_small_budget_keeps_the_same_programs_both_ways_in_a_narrowed_loop():
    """The budget runs out after the first program, which finishes the loop first: the iterations
    that run on the other programs alone keep no values and stay batched."""
    kept = {}
    for strategy in ("serial", "auto"):
        global rng
        rng = np.random.default_rng(3)
        arrays = SCENARIOS["flash_attention"][0]()
        with kernel_nb.interpret(strategy=strategy, budget_bytes=3000) as session:
            SCENARIOS["flash_attention"][1](arrays)
        launch = session.trace[0]
        assert launch.strategy == ("serial" if strategy == "serial" else "batched"), launch.strategy_note
        kept[strategy] = ([p for p, prog in launch.programs.items() if prog.kept], launch.kept_bytes)
    assert kept["serial"] == kept["auto"] and kept["serial"][0] == [(0, 0, 0)]


def test_out_of_bounds_error_is_the_serial_one():
    x = np.ones(1000, np.float32)
    messages = {}
    for strategy in ("serial", "auto"):
        with (
            kernel_nb.interpret(strategy=strategy) as session,
            pytest.raises(kernel_nb.KernelMemoryError) as info,
        ):
            k.add_kernel_no_mask[(8,)](x, x, np.zeros_like(x), 1000, BLOCK=128)
        messages[strategy] = str(info.value)
        assert session.trace[0].strategy == "serial"
    assert messages["serial"] == messages["auto"]


@pytest.mark.parametrize(
    ("name", "groups"), [("flash_attention", 1), ("masked_loop", 1), ("masked_loop_atomics", 4)]
)
def test_loops_whose_trip_count_differs_run_as_one_batch(name, groups, monkeypatch):
    """Programs whose loop runs a different number of times stay in one batch, the programs that
    are done masked; an atomic in such a loop splits the batch by trip count."""
    from kernel_nb.engine.batched import BatchedRun

    runs = []
    original = BatchedRun._run_group

    def counted(self, stock, kernel, values, pids, rows=None):
        runs.append(list(pids))
        return original(self, stock, kernel, values, pids, rows)

    monkeypatch.setattr(BatchedRun, "_run_group", counted)
    _run(name, "auto")
    assert len(runs) == 1 + (groups if groups > 1 else 0)


@pytest.mark.parametrize("name", ["vector_add", "softmax", "flash_attention", "matmul_full_tiles"])
def test_tiled_accesses_make_no_index_per_lane(name, monkeypatch):
    """Loads, stores, their bookkeeping and their records move whole runs of a tile (masked tails
    included, and tiles read down their columns, as attention reads K transposed): a program
    offset plus tl.arange is known as such, so no (programs, lanes) index array is made. Nor for
    a matmul's store, whose programs' ranges overlap (a band of rows each) while their runs do
    not, or its reads of tiles that several programs share."""
    from kernel_nb.engine.batched import access as batched_access

    made = []
    index = batched_access.Access.index
    monkeypatch.setattr(batched_access.Access, "index", lambda self: made.append(1) or index(self))
    serial_arrays, _ = _run(name, "serial")
    auto_arrays, auto = _run(name, "auto")
    assert auto.strategy == "batched" and not auto.strategy_note
    assert made == []
    for s_arr, a_arr in zip(serial_arrays, auto_arrays):
        assert np.array_equal(s_arr, a_arr)


def test_pointer_blocks_keep_their_tile_form_through_shape_operations(monkeypatch):
    """`base + offs_m[:, None] * D + offs_d[None, :]` (expand_dims, broadcasting, a product with a
    number that is the same in every program) stays a tile at a per-program place: the batch makes
    no address per lane for its loads, stores or records."""
    from kernel_nb.engine.batched import tiles as batched_tiles

    made = []
    addresses = batched_tiles.Addresses.made
    monkeypatch.setattr(batched_tiles.Addresses, "made", lambda self: made.append(1) or addresses(self))
    serial_arrays, _ = _run("flash_attention", "serial")
    auto_arrays, auto = _run("flash_attention", "auto")
    assert auto.strategy == "batched" and not auto.strategy_note
    assert made == []
    for s_arr, a_arr in zip(serial_arrays, auto_arrays):
        assert np.array_equal(s_arr, a_arr)


def test_a_masked_loop_keeps_only_the_values_that_outlive_an_iteration(monkeypatch):
    """Programs a masked loop is done with keep their values of the names read after the loop or
    carried into the next iteration; names made afresh in every iteration are not merged."""
    from kernel_nb.engine.batched.recorder import BatchRecorder

    merged = set()
    original = BatchRecorder.loop_merge

    def seen(self, saved, names, assigned):
        merged.update(assigned)
        return original(self, saved, names, assigned)

    monkeypatch.setattr(BatchRecorder, "loop_merge", seen)
    _, auto = _run("flash_attention", "auto")
    assert auto.strategy == "batched"
    assert merged == {"m_i", "l_i", "acc"}


@pytest.mark.parametrize(
    ("name", "held"),
    [("flash_attention", [6, 4, 2]), ("masked_loop", [5, 4, 3, 2, 1] * 2), ("tuple_in_masked_loop", [4])],
)
def test_a_masked_loop_runs_each_iteration_on_the_programs_still_running(name, held, monkeypatch):
    """With range bookkeeping, the iterations of a loop whose trip count differs hold the rows of
    the programs still running only (2 programs of flash attention's 8 in its last iteration).
    A loop that reads per-program values in a tuple gives that up and masks the others instead."""
    from kernel_nb.engine.batched.guard import BatchGuard

    widths = []
    hold = BatchGuard.hold
    monkeypatch.setattr(BatchGuard, "hold", lambda self, at: widths.append(at) or hold(self, at))
    _, auto = _run(name, "auto")
    assert auto.strategy == "batched" and not auto.strategy_note
    assert [at.size for at in widths if at is not None] == held
    assert widths[-1] is None  # every program's rows again after the loop
