"""%%tkernel gpu and compare on a CUDA device: staging, copy-back, artifacts, comparisons."""

import numpy as np
import pytest

import kernel_nb
import kernel_nb.gpu as gpu
from tests.diff import kernels as dk
from tests.engine import kernels as k


def test_numpy_arrays_run_on_the_gpu_and_come_back():
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    out = np.zeros(1000, dtype=np.float32)
    with gpu.run() as session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, x + 1)
    launch = session.gpu[0]
    assert (launch.kernel, launch.grid) == ("add_kernel", (4, 1, 1))
    assert launch.device.startswith("GPU 0: ")
    assert launch.artifacts is not None
    assert list(launch.artifacts.stages)[:4] == ["ttir", "ttgir", "llir", "ptx"]
    assert "ld.global" in launch.artifacts.stages["ptx"]
    assert "sass" in launch.artifacts.stages or "sass" in launch.artifacts.missing


def test_strided_views_aliasing_and_read_only_inputs():
    base = np.arange(240, dtype=np.float32).reshape(10, 24)
    view = base[1::2, ::3]
    dst = np.full((5, 8), -1.0, dtype=np.float32)
    base.setflags(write=False)
    with gpu.run():
        k.strided_copy_kernel[(5,)](view, dst, 5, 8, view.strides[0] // 4, view.strides[1] // 4, BLOCK=8)
    np.testing.assert_array_equal(dst, view)
    a = np.random.default_rng(0).random(200, dtype=np.float32)
    expected = 2.0 * a + a
    with gpu.run():
        k.axpy_kernel[(2,)](a, a, 200, 2.0, BLOCK=128)
    np.testing.assert_allclose(a, expected, rtol=1e-6)


def test_bf16_numpy_cupy_and_torch_arrays():
    import cupy
    import ml_dtypes

    x = np.linspace(-3, 3, 300).astype(ml_dtypes.bfloat16)
    dst = np.zeros(300, dtype=ml_dtypes.bfloat16)
    with gpu.run():
        k.copy_kernel[(3,)](x, dst, 300, BLOCK=128)
    assert (dst.view(np.uint16) == x.view(np.uint16)).all()
    cx = cupy.arange(1000, dtype=cupy.float32)
    cout = cupy.zeros(1000, dtype=cupy.float32)
    with gpu.run():
        k.add_kernel[(4,)](cx, cx, cout, 1000, BLOCK=256)
    np.testing.assert_array_equal(cupy.asnumpy(cout), 2 * np.arange(1000, dtype=np.float32))
    torch = pytest.importorskip("torch")
    tx = torch.arange(1000, dtype=torch.float32, device="cuda")
    tout = torch.zeros(1000, device="cuda")
    with gpu.run():
        k.add_kernel[(4,)](tx, tx, tout, 1000, BLOCK=256)
    assert torch.equal(tout.cpu(), 2 * torch.arange(1000, dtype=torch.float32))


def test_compare_add_matches_and_keeps_either_side():
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    y = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    out = np.zeros(1000, dtype=np.float32)
    with gpu.compare() as session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    comparison = session.trace[0].comparison
    assert comparison.ok
    assert comparison.verdict() == "#0 add_kernel: MATCH (out_ptr); max 0 ulp, max abs 0"
    np.testing.assert_array_equal(out, x + y)
    assert session.trace[0].artifacts.compiled_for_launch


def _dot_inputs(size):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    return a, b


def _dot(a, b, c, ieee):
    size = a.shape[0]
    dk.dot_kernel[(size // 64, size // 64)](
        a, b, c, size, size, size, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, IEEE=ieee
    )


def test_compare_tf32_dot_within_the_policy_and_outside_a_strict_one(capsys):
    a, b = _dot_inputs(128)
    c = np.zeros((128, 128), np.float32)
    with gpu.compare(keep="cpu") as session:
        _dot(a, b, c, False)
    comparison = session.trace[0].comparison
    with capsys.disabled():
        print("\n" + comparison.report())
    assert comparison.tf32 and comparison.ok, comparison.report()
    kept = comparison.buffers[0]
    assert (c.reshape(-1) == kept.cpu).all() and not (c.reshape(-1) == kept.gpu).all()  # the interpreter's
    with gpu.compare(rtol=0.0, atol=0.0) as strict:
        _dot(a, b, c, False)
    bad = strict.trace[0].comparison.buffers[0]
    assert not bad.ok and bad.mismatches > 0
    assert {pid for pid, _ in bad.writers} <= {(i, j, 0) for i in range(2) for j in range(2)}
    assert strict.trace[0].comparison.verdict().startswith("#0 dot_kernel: MISMATCH in c_ptr: ")


def test_measured_tf32_and_ieee_dot_errors(capsys):
    """The figures the tolerance policy rests on (printed; pytest -s shows them)."""
    a, b = _dot_inputs(256)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    figures = {}
    for ieee in (False, True):
        c = np.zeros((256, 256), np.float32)
        with gpu.run():
            _dot(a, b, c, ieee)
        diff = np.abs(c - exact)
        figures["ieee" if ieee else "tf32"] = (
            diff.max() / np.abs(exact).max(),
            (diff / np.abs(exact)).max(),
            np.median(diff / np.abs(exact)),
        )
    with capsys.disabled():
        for name, (rel_max, rel_elem, rel_med) in figures.items():
            print(
                f"\n256^3 fp32 dot, {name}: max|d|/max|ref| {rel_max:.3e}, max elementwise rel {rel_elem:.3e}, median rel {rel_med:.3e}"
            )
    assert figures["tf32"][0] > 10 * figures["ieee"][0]
    from kernel_nb.compare import TF32

    assert figures["tf32"][0] < TF32.atol_of_max


def test_compare_exp_within_fp32_policy(capsys):
    x = np.linspace(-20, 20, 4096, dtype=np.float32)
    out = np.zeros_like(x)
    with gpu.compare() as session:
        dk.exp_kernel[(4,)](x, out, 4096, BLOCK=1024)
    compared = session.trace[0].comparison.buffers[0]
    with capsys.disabled():
        print(f"\nexp fp32 interpreter vs GPU: max {compared.max_ulp} ulp, max rel {compared.max_rel:.3e}")
    assert compared.ok, compared.line()


def test_failed_compile_leaves_arrays_and_says_where():
    x = np.ones(100, np.float32)
    out = np.full(100, 3.0, np.float32)
    with pytest.raises(gpu.GpuLaunchError, match="add_kernel: the compiled launch on GPU 0"), gpu.run():
        k.add_kernel[(1,)](x, x, out, 100, BLOCK=100)  # BLOCK must be a power of two
    np.testing.assert_array_equal(out, 3.0)


def test_missing_device_is_named():
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    with pytest.raises(
        gpu.GpuUnavailableError, match=f"--device {count}: this machine has {count} CUDA device"
    ):
        with gpu.run(device=count):
            pass


def test_ir_compiled_for_the_gpus_own_target():
    x = np.ones(300, np.float32)
    out = np.zeros_like(x)
    with gpu.interpret_with_ir() as session:
        k.add_kernel[(3,)](x, x, out, 300, BLOCK=128)
    import cupy

    assert session.trace[0].artifacts.target == f"cuda:{cupy.cuda.Device(0).compute_capability}"
    np.testing.assert_array_equal(out, 2.0)


def test_a_selection_outside_the_grid_is_an_error_on_the_gpu_side():
    x = np.ones(1000, np.float32)
    out = np.full(1000, 3.0, np.float32)
    message = (
        "add_kernel: pids (9,0,0) are outside the grid (4, 1, 1); choose programs with each axis below the "
        "grid's size on it"
    )
    options = kernel_nb.Options(pids=((9, 0, 0),))
    for session in (gpu.run(options), gpu.compare(options)):
        with pytest.raises(gpu.GridError) as caught, session:
            k.add_kernel[(4,)](x, x, out, 1000, BLOCK=256)
        assert str(caught.value) == message
    np.testing.assert_array_equal(out, 3.0)


def test_grids_and_values_the_gpu_cannot_take_are_refused_before_it():
    x = np.ones(1000, np.float32)
    out = np.full(1000, 3.0, np.float32)
    with pytest.raises(gpu.GridError, match=r"^add_kernel: grid \(2\.5,\) has 2\.5 on axis 0"), gpu.run():
        k.add_kernel[(2.5,)](x, x, out, 1000, BLOCK=256)
    with pytest.raises(gpu.GridError, match=r"^add_kernel: grid \(1, 70000\) has 70000 programs on axis 1"):
        with gpu.run():
            k.add_kernel[(1, 70000)](x, x, out, 1000, BLOCK=256)
    with pytest.raises(TypeError, match=r"^add_kernel: argument out_ptr is a list"), gpu.run():
        k.add_kernel[(4,)](x, x, [0.0] * 1000, 1000, BLOCK=256)
    with pytest.raises(TypeError, match=r"^add_kernel: argument x_ptr is a big-endian array \(>f4\)"):
        with gpu.run():
            k.add_kernel[(4,)](x.astype(">f4"), x, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, 3.0)


def test_a_store_into_a_read_only_memmap_is_refused(tmp_path):
    x = np.ones(1000, np.float32)
    np.full(1000, 3.0, np.float32).tofile(tmp_path / "out.bin")
    out = np.memmap(tmp_path / "out.bin", np.float32, mode="r")
    with pytest.raises(TypeError) as caught, gpu.run():
        k.add_kernel[(4,)](x, x, out, 1000, BLOCK=256)
    assert str(caught.value) == (
        "add_kernel: the launch stored into out_ptr, a read-only array (flags.writeable is False); the arrays "
        "are unchanged; pass a writable array there, e.g. a copy"
    )
    np.testing.assert_array_equal(out, 3.0)
