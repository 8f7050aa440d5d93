"""Each test kernel interpreted by the engine, against a numpy reference."""

import inspect

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.errors import KernelMemoryError
from tests.engine import kernels as k


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_vector_add(rng):
    n = 1000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    np.testing.assert_array_equal(out, x + y)
    assert len(session.trace) == 1 and session.trace[0].grid == (4, 1, 1)


def test_fused_softmax(rng):
    rows, cols = 37, 100
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret():
        k.softmax_kernel[(rows,)](out, x, x.strides[0] // 4, out.strides[0] // 4, cols, BLOCK=128)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-7)


def test_matmul_with_k_loop(rng):
    M, N, K = 48, 40, 70
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.zeros((M, N), np.float32)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    with kernel_nb.interpret() as session:
        k.matmul_kernel[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)
    launch = session.trace[0]
    assert launch.grid == (3, 3, 1)
    acc = launch.records((1, 2), name="acc")
    # one record for the initialisation, then one per K iteration (70 / 16 → 5 iterations)
    assert [r.iteration for r in acc] == [(), (0,), (1,), (2,), (3,), (4,)]


def test_layer_norm_forward(rng):
    rows, n = 9, 300
    x = rng.standard_normal((rows, n), dtype=np.float32)
    w, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    y = np.zeros_like(x)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    with kernel_nb.interpret():
        k.layer_norm_fwd[(rows,)](x, y, w, b, mean, rstd, n, n, 1e-5, BLOCK=128)
    ref_mean = x.mean(axis=1)
    ref_rstd = 1 / np.sqrt(x.var(axis=1) + 1e-5)
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rstd, ref_rstd, rtol=1e-4)
    np.testing.assert_allclose(y, (x - ref_mean[:, None]) * ref_rstd[:, None] * w + b, rtol=1e-4, atol=1e-4)


def test_causal_flash_attention_forward(rng):
    heads, seq, d = 2, 64, 16
    q, kk, v = (rng.standard_normal((heads, seq, d), dtype=np.float32) for _ in range(3))
    out = np.zeros_like(q)
    scale = 1 / np.sqrt(d)
    with kernel_nb.interpret() as session:
        k.causal_attention_fwd[(seq // 16, heads)](
            q, kk, v, out, seq, float(scale), D=d, BLOCK_M=16, BLOCK_N=16
        )
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), kk) * scale
    s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = np.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    launch = session.trace[0]
    # the loop bound depends on the program id: program m runs m + 1 iterations
    for m in range(4):
        iterations = {r.iteration for r in launch.records((m, 1), name="qk")}
        assert iterations == {(i,) for i in range(m + 1)}


def test_kernel_calling_a_jit_helper(rng):
    n = 100
    x = rng.random(n, dtype=np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.helper_kernel[(1,)](x, out, n, 3.0, BLOCK=128)
    np.testing.assert_allclose(out, x * np.float32(3.0) + np.float32(1.0))
    launch = session.trace[0]
    scaled = launch.records(0, name="scaled")
    assert len(scaled) == 1
    assert scaled[0].call_path == (
        "_scale_shift:" + str(launch.records(0, name="y")[0] and _line_of(launch, "y")),
    )
    assert launch.statements[scaled[0].stmt].function == "_scale_shift"
    assert "_scale_shift" in launch.sources


def _line_of(launch, name):
    return next(s.line for s in launch.statements if s.name == name)


def test_reduce_with_custom_combine_fn(rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    out = np.zeros(4, np.float32)
    with kernel_nb.interpret() as session:
        k.max_abs_kernel[(4,)](x, out, BLOCK=64)
    np.testing.assert_array_equal(out, x[np.arange(4), np.abs(x).argmax(axis=1)])
    # Triton's reduction calls the combine function element by element, outside the kernel's
    # statement flow: the reduction's result is what gets recorded
    [m] = session.trace[0].records(2, name="m")
    assert m.shape == () and m.value == out[2]


def test_cumsum(rng):
    x = rng.integers(-50, 50, size=(3, 128)).astype(np.int32)
    out = np.zeros_like(x)
    with kernel_nb.interpret():
        k.cumsum_kernel[(3,)](x, out, BLOCK=128)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))


def test_atomics(rng):
    n, bins = 1000, 16
    x = rng.integers(0, 1000, size=n).astype(np.int32)
    hist, total, biggest = np.zeros(bins, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    with kernel_nb.interpret() as session:
        k.histogram_kernel[(triton.cdiv(n, 128),)](x, hist, total, biggest, n, BINS=bins, BLOCK=128)
    np.testing.assert_array_equal(hist, np.bincount(x % bins, minlength=bins))
    assert total[0] == x.sum() and biggest[0] == x.max()
    kinds = [e.kind for e in session.trace[0].program(0).events]
    assert kinds == ["load", "atomic_add", "atomic_add", "atomic_max"]


def _philox_rand(seed: int, offsets: np.ndarray) -> np.ndarray:
    c0 = offsets.astype(np.uint32)
    c1 = c2 = c3 = np.zeros_like(c0)
    k0, k1 = np.uint32(seed & 0xFFFFFFFF), np.uint32(seed >> 32)
    a, b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        _c0, _c2 = c0, c2
        c0 = ((b * _c2.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32) ^ c1 ^ k0
        c2 = ((a * _c0.astype(np.uint64)) >> np.uint64(32)).astype(np.uint32) ^ c3 ^ k1
        c1 = (b * _c2.astype(np.uint64)).astype(np.uint32)
        c3 = (a * _c0.astype(np.uint64)).astype(np.uint32)
        k0 = np.uint32((int(k0) + 0x9E3779B9) & 0xFFFFFFFF)
        k1 = np.uint32((int(k1) + 0xBB67AE85) & 0xFFFFFFFF)
    x = c0.view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)


def test_rand_matches_philox():
    n = 300
    out = np.zeros(n, np.float32)
    with kernel_nb.interpret():
        k.rand_kernel[(triton.cdiv(n, 128),)](out, 1234, n, BLOCK=128)
    np.testing.assert_array_equal(out, _philox_rand(1234, np.arange(n)))
    assert out.min() >= 0 and out.max() < 1


def test_float_scalar_is_fp32(rng):
    n = 200
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    expected = np.float32(0.1) * x + y
    with kernel_nb.interpret() as session:
        k.axpy_kernel[(2,)](x, y, n, 0.1, BLOCK=128)
    np.testing.assert_array_equal(y, expected)
    alpha = session.trace[0].records(0, name="alpha")[0]
    assert alpha.dtype == "fp32"


@pytest.mark.parametrize("grid", [(4, 3), (4, 3, 2)])
def test_2d_and_3d_grids(grid):
    gx, gy = grid[0], grid[1]
    gz = grid[2] if len(grid) == 3 else 1
    out = np.zeros((gz, gy, gx), np.int32)
    with kernel_nb.interpret() as session:
        k.grid3d_kernel[grid](out, GX=gx, GY=gy)
    zz, yy, xx = np.meshgrid(np.arange(gz), np.arange(gy), np.arange(gx), indexing="ij")
    np.testing.assert_array_equal(out, xx + 10 * yy + 100 * zz + 1000 * gx)
    assert len(session.trace[0].programs) == gx * gy * gz


@pytest.mark.parametrize(
    "dtype",
    [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
     np.uint32, np.uint64, np.bool_, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2],
)  # fmt: skip
def test_copy_every_dtype(dtype, rng):
    n = 300
    src = (rng.random(n) * 8).astype(dtype)
    dst = np.zeros(n, dtype)
    with kernel_nb.interpret() as session:
        k.copy_kernel[(3,)](src, dst, n, BLOCK=128)
    np.testing.assert_array_equal(dst.view(np.uint8), src.view(np.uint8))
    assert session.trace[0].args[0].dtype == np.dtype(dtype).name


def test_strided_view(rng):
    base = rng.random((10, 24), dtype=np.float32)
    view = base[1::2, ::3]  # 5 x 8, strides (48, 3) elements
    dst = np.zeros((5, 8), np.float32)
    before = base.copy()
    with kernel_nb.interpret():
        k.strided_copy_kernel[(5,)](view, dst, 5, 8, view.strides[0] // 4, view.strides[1] // 4, BLOCK=8)
    np.testing.assert_array_equal(dst, view)
    np.testing.assert_array_equal(base, before)


def test_aliased_arguments_share_memory(rng):
    n = 100
    x = rng.random(n, dtype=np.float32)
    expected = np.float32(2.0) * x + x
    with kernel_nb.interpret():
        k.axpy_kernel[(1,)](x, x, n, 2.0, BLOCK=128)
    np.testing.assert_array_equal(x, expected)


def test_tuple_argument(rng):
    n = 50
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros_like(a)
    with kernel_nb.interpret():
        k.tuple_kernel[(1,)]((a, b), out, n, BLOCK=64)
    np.testing.assert_array_equal(out, a * b)


def test_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    x, y = torch.rand(300), torch.rand(300)
    out = torch.zeros(300)
    with kernel_nb.interpret():
        k.add_kernel[(3,)](x, y, out, 300, BLOCK=128)
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_every_program_adds_to_a_shared_counter(rng, dtype):
    x = rng.standard_normal(8).astype(np.float32).astype(dtype)
    acc = np.zeros(2, dtype)
    with kernel_nb.interpret():
        k.shared_counter_kernel[(5,)](x, acc, BLOCK=8)
    expected = np.zeros(2, dtype)
    for _program in range(5):
        for lane in range(8):  # one add after another, each rounded to the element type
            expected[lane % 2] = (np.float32(expected[lane % 2]) + np.float32(x[lane])).astype(dtype)
    np.testing.assert_array_equal(acc, expected)


def test_bf16_scans_and_reductions_combine_values_not_bits(rng):
    x = rng.standard_normal((3, 32)).astype(np.float32).astype(ml_dtypes.bfloat16)
    scan = np.zeros_like(x)
    top, bottom = np.zeros(3, ml_dtypes.bfloat16), np.zeros(3, ml_dtypes.bfloat16)
    with kernel_nb.interpret():
        k.scan_and_reduce_kernel[(3,)](x, scan, top, bottom, BLOCK=32)
    # triton before 3.7 promotes a bf16 cumsum to fp32 (one rounding at the end); later versions
    # scan in bf16 as the GPU does: at strides 1, 2, 4, ..., each step rounded to bf16
    promoted = "_promote_bfloat16_to_float32" in inspect.getsource(tl.standard.cumsum.fn)
    expected = np.zeros_like(x)
    for row in range(3):
        if promoted:
            expected[row] = np.cumsum(x[row].astype(np.float32)).astype(ml_dtypes.bfloat16)
            continue
        values = [np.float32(v) for v in x[row]]
        shift = 1
        while shift < 32:
            values = values[:shift] + [
                np.float32(ml_dtypes.bfloat16(values[i - shift] + values[i])) for i in range(shift, 32)
            ]
            shift *= 2
        expected[row] = np.array(values, np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(scan, expected)
    np.testing.assert_array_equal(top, x.max(axis=1))
    np.testing.assert_array_equal(bottom, x.min(axis=1))


def test_tensor_descriptors_made_in_the_kernel(rng):
    x = rng.standard_normal((20, 24)).astype(np.float32)
    out = np.zeros_like(x)
    with kernel_nb.interpret() as session:
        k.descriptor_scale_kernel[(3, 2)](x, out, 20, 24, BLOCK_M=8, BLOCK_N=16)
    np.testing.assert_array_equal(out, 2 * x)
    launch = session.trace[0]
    last = launch.program((2, 1, 0)).events  # the corner block: 4 of its 8 rows, 8 of its 16 columns
    assert [(e.kind, e.arg, e.active) for e in last] == [("load", "src_ptr", 32), ("store", "dst_ptr", 32)]
    assert launch.buffers["dst_ptr"].writes.min() == 1 and launch.buffers["dst_ptr"].writes.max() == 1


def test_a_descriptor_larger_than_its_array_is_refused(rng):
    x = rng.standard_normal((16, 16)).astype(np.float32)
    out = np.zeros_like(x)
    with pytest.raises(KernelMemoryError) as info:
        with kernel_nb.interpret():
            k.descriptor_scale_kernel[(3, 1)](x, out, 24, 16, BLOCK_M=8, BLOCK_N=16)  # 24 rows of 16
    lines, first = inspect.getsourcelines(k.descriptor_scale_kernel.fn)
    line = first + next(i for i, text in enumerate(lines) if "src.load" in text)
    # the block of rows 16..23 is wholly past x, yet the fault is the descriptor's shape, not a mask
    assert str(info.value) == (
        f"descriptor_scale_kernel:{line} pid=(2,0,0): descriptor load of src_ptr reads src_ptr[16:24, 0:16] "
        "but src_ptr has shape (16, 16) (128 of 128 active lanes out of bounds); the tensor descriptor's "
        "shape (24, 16) (block (8, 16), strides (16, 1)) reaches past src_ptr: it masks its blocks by that "
        "shape alone, which must lie within src_ptr"
    )
    assert not out.any()  # the programs that ran stored nothing: the launch failed


def test_a_descriptor_that_reaches_past_its_array_in_part_names_its_shape(rng):
    x = rng.standard_normal((20, 16)).astype(np.float32)
    with pytest.raises(KernelMemoryError) as info:
        with kernel_nb.interpret():
            k.descriptor_scale_kernel[(3, 1)](x, np.zeros_like(x), 24, 16, BLOCK_M=8, BLOCK_N=16)
    assert str(info.value).split(": ", 1)[1] == (
        "descriptor load of src_ptr reads src_ptr[20:24, 0:16] but src_ptr has shape (20, 16) (64 of 128 "
        "active lanes out of bounds); the tensor descriptor's shape (24, 16) (block (8, 16), strides "
        "(16, 1)) reaches past src_ptr: it masks its blocks by that shape alone, which must lie within src_ptr"
    )
