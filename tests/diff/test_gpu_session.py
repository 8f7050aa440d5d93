"""The GPU sessions' logic on the CPU: a fake GPU side, IR compiled for a target, clear errors."""

import sys

import numpy as np
import pytest
import triton.language as tl

import kernel_nb
import kernel_nb.gpu as gpu
from kernel_nb.engine import triton_compat
from kernel_nb.gpu.runner import GpuLaunch
from tests.engine import kernels as k
from tests.machine import FakeMachine


def fake_gpu(perturb=None, fail=False):
    """A launcher that computes add_kernel with numpy, optionally off somewhere, instead of on a GPU."""
    calls = []

    def launcher(run, kernel, grid, args, kwargs, index):
        calls.append(index)
        if fail:
            args[2][:] = -7.0  # a partial write, then a failure
            raise gpu.GpuLaunchError("add_kernel: the compiled launch failed", kernel="add_kernel")
        x, y, out, n = args
        out[:n] = x[:n] + y[:n]
        if perturb is not None:
            perturb(out)
        return GpuLaunch(index, "add_kernel", (4, 1, 1), "fake GPU", 0.0)

    launcher.calls = calls
    return launcher


def _inputs():
    x = np.arange(1000, dtype=np.float32)
    return x, np.ones(1000, np.float32), np.zeros(1000, np.float32)


def _bump(out):
    out[600] += 1.0


@pytest.mark.parametrize(("keep", "expected"), [("gpu", 602.0), ("cpu", 601.0)])
def test_compare_finds_the_program_and_keeps_one_side(keep, expected):
    x, y, out = _inputs()
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare", keep=keep), launcher=fake_gpu(_bump))
    with session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    comparison = session.trace[0].comparison
    assert comparison is not None and not comparison.ok
    buffer = comparison.buffers[0]
    assert (buffer.arg, buffer.mismatches, buffer.positions.tolist(), buffer.writers) == (
        "out_ptr",
        1,
        [600],
        [((2, 0, 0), 1)],
    )
    assert comparison.verdict() == (
        "#0 add_kernel: MISMATCH in out_ptr: 1 of 1000 out of tolerance (fp32: rtol 1e-05, atol 0.001); "
        "max abs 1 at [600], max rel 0.00166, max 16384 ulp; written by pid (2,0,0)"
    )
    assert [b.arg for b in comparison.buffers] == ["out_ptr"]  # inputs were not written
    assert out[600] == expected and out[599] == 600.0
    assert comparison.kept == keep and session.gpu[0].device == "fake GPU"


def test_compare_with_overrides_only_some_launches_and_autotune():
    x, y, out = _inputs()
    launcher = fake_gpu(lambda o: o.__setitem__(5, o[5] + 1e-4))
    options = kernel_nb.Options(launch=1)
    session = gpu.GpuSession(options, gpu.GpuOptions(mode="compare", atol=1e-3, rtol=0.0), launcher=launcher)
    with session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert launcher.calls == [0, 1] and len(session.trace) == 1
    tolerance = session.trace[0].comparison.buffers[0].tolerance
    assert (tolerance.rtol, tolerance.atol, tolerance.reason) == (0.0, 1e-3, "fp32, overridden")
    assert session.trace[0].comparison.ok


def test_failed_gpu_side_restores_the_inputs():
    x, y, out = _inputs()
    out[:] = 3.0
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=fake_gpu(fail=True))
    with pytest.raises(gpu.GpuLaunchError), session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, 3.0)
    assert len(session.trace) == 1 and session.trace[0].comparison is None


def test_an_interpreter_error_is_raised_after_the_gpu_side_ran_with_the_arrays_as_they_were():
    out = np.full(100, 5.0, np.float32)
    launcher = fake_gpu()
    with (
        pytest.raises(kernel_nb.KernelMemoryError),
        gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=launcher),
    ):
        k.add_kernel_no_mask[(1,)](out, out, out, 100, BLOCK=128)
    assert launcher.calls == [0]
    np.testing.assert_array_equal(out, 5.0)


def test_sessions_restore_triton_and_refuse_nesting():
    run_before = triton_compat.JIT_FUNCTION.run
    language = dict(vars(tl))
    with gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=fake_gpu()):
        with pytest.raises(RuntimeError, match="cannot be nested"), kernel_nb.interpret():
            pass
    with kernel_nb.interpret(), pytest.raises(RuntimeError, match="cannot be nested"):
        with gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=fake_gpu()):
            pass
    assert triton_compat.JIT_FUNCTION.run is run_before and dict(vars(tl)) == language


def test_interpret_with_ir_compiles_for_a_target_without_a_gpu():
    x, y, out = _inputs()
    with gpu.interpret_with_ir(target="cuda:80") as session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(out, x + 1)
    artifacts = session.trace[0].artifacts
    assert artifacts.target == "cuda:80" and not artifacts.compiled_for_launch
    assert list(artifacts.stages)[:4] == ["ttir", "ttgir", "llir", "ptx"]
    assert ".target sm_80" in artifacts.stages["ptx"]
    assert "tt.divisibility = 16" in artifacts.stages["ttir"]  # specialised like the JIT would
    assert artifacts.metadata["num_warps"] == 4
    assert "sass" in artifacts.stages or "sass" in artifacts.missing


def test_compile_for_target_on_its_own():
    x = np.ones(64, np.float32)
    artifacts = gpu.compile_for_target(k.add_kernel, (x, x, x, 64), {"BLOCK": 64, "num_warps": 2}, sass=False)
    assert artifacts.target == "cuda:90" and artifacts.metadata["num_warps"] == 2
    assert artifacts.missing == {"sass": "not asked for"}
    with pytest.raises(gpu.CompileError, match="add_kernel: compiling for cuda:90 failed"):
        gpu.compile_for_target(k.add_kernel, (x, x, x, 64), {"BLOCK": 48})


def test_options_are_validated():
    with pytest.raises(ValueError, match="keep must be 'gpu' or 'cpu', got 'both'"):
        gpu.GpuOptions(keep="both")
    with pytest.raises(ValueError, match="cannot read target 'sm90'"):
        gpu.GpuOptions(target="sm90")
    with pytest.raises(ValueError, match="atol must be a finite number >= 0"):
        gpu.GpuOptions(atol=-1.0)


def test_a_driver_that_does_not_start_is_a_clear_message(monkeypatch, tmp_path):
    FakeMachine(init_status=999).install(monkeypatch, tmp_path)
    with pytest.raises(
        gpu.GpuUnavailableError, match=r"^the CUDA driver does not start \(CUDA_ERROR_UNKNOWN"
    ):
        gpu.compare().__enter__()
    assert not getattr(triton_compat.JIT_FUNCTION.run, "__kernel_nb_session__", False)


def test_gpu_package_imports_without_jupyter():
    import subprocess

    code = (
        "import sys; sys.modules.update(IPython=None, ipywidgets=None, anywidget=None)\n"
        "import kernel_nb.gpu, kernel_nb.compare\n"
        "assert not [m for m in sys.modules if m.startswith(('IPython', 'ipywidgets', 'anywidget')) and sys.modules[m]]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_reinterpreted_arguments_compile_with_their_new_type():
    from triton.runtime.jit import TensorWrapper

    wrapper = TensorWrapper.__new__(TensorWrapper)
    wrapper.base, wrapper.dtype = np.zeros(64, np.int8), tl.float8e5
    artifacts = gpu.compile_for_target(k.copy_kernel, (wrapper, wrapper, 64), {"BLOCK": 64}, sass=False)
    assert "!tt.ptr<f8E5M2>" in artifacts.stages["ttir"]


def test_a_lost_context_refuses_compare_before_the_interpreter_runs(monkeypatch):
    from tests.gpu import fake_cupy

    cupy = fake_cupy.install(monkeypatch)
    cupy.lose()
    x, y, out = _inputs()
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"))
    with pytest.raises(gpu.CudaContextLost) as caught, session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert caught.value.earlier and str(caught.value).startswith(
        "add_kernel: the CUDA context of GPU 0 is gone since an earlier launch faulted (cudaErrorIllegalAddress"
    )
    assert len(session.trace) == 0 and not out.any()


def test_a_gpu_side_that_loses_the_context_restores_host_arrays_and_keeps_its_error():
    lost = gpu.CudaContextLost("add_kernel", 0, "cudaErrorIllegalAddress: x", earlier=False)

    def launcher(run, kernel, grid, args, kwargs, index):
        args[2][:] = -7.0
        raise lost

    x, y, out = _inputs()
    out[:] = 3.0
    with pytest.raises(gpu.CudaContextLost) as caught:
        with gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=launcher):
            k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert caught.value is lost
    np.testing.assert_array_equal(out, 3.0)


def test_restoring_after_a_lost_context_leaves_device_memory_alone():
    from kernel_nb.engine.arrays import Region
    from kernel_nb.gpu.arguments import describe
    from kernel_nb.gpu.session import restore_after

    host = np.full(8, 3.0, np.float32)
    arguments = describe(k.copy_kernel.fn, (host, host, 8), {"BLOCK": 8})
    saved = arguments.snapshot()
    host[:] = -7.0
    # device memory of the lost context, at an address no allocation has: it must not be written
    arguments.regions.append(Region("cuda:0", 1 << 20, (1 << 20) + 8))
    saved.append(np.zeros(8, np.uint8))
    restore_after(arguments, saved, gpu.CudaContextLost("copy_kernel", 0, "x", earlier=False))
    np.testing.assert_array_equal(host, 3.0)


def test_compare_runs_the_gpu_side_when_the_interpreter_fails_and_raises_with_the_arrays_unchanged():
    x, y, out = _inputs()
    out[:] = 7.0
    launcher = fake_gpu()
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=launcher)
    with pytest.raises(kernel_nb.KernelMemoryError) as info, session:
        k.add_kernel_no_mask[(4,)](x, y, out, 1000, BLOCK=256)  # the last program reads past x
    assert launcher.calls == [0]
    assert (out == 7.0).all()
    launch = session.trace[0]
    assert launch.status == "error"
    comparison = launch.comparison
    assert comparison is not None and not comparison.ok
    assert comparison.cpu_error == info.value.message
    [buffer] = comparison.buffers
    assert (buffer.arg, buffer.written_by) == ("out_ptr", "gpu")
    np.testing.assert_array_equal(buffer.gpu[:1000], x + y)
    assert (
        comparison.verdict()
        == f"#0 add_kernel_no_mask: the interpreter failed ({info.value.message}); the GPU ran it and wrote out_ptr"
    )


def test_compare_says_so_when_both_sides_fail():
    x, y, out = _inputs()
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=fake_gpu(fail=True))
    with pytest.raises(kernel_nb.KernelMemoryError), session:
        k.add_kernel_no_mask[(4,)](x, y, out, 1000, BLOCK=256)
    assert (out == 0.0).all()
    comparison = session.trace[0].comparison
    assert comparison.gpu_error == "add_kernel: the compiled launch failed"
    assert comparison.verdict().endswith("; the GPU failed too: add_kernel: the compiled launch failed")


@pytest.mark.parametrize("mode", ["gpu", "compare"])
def test_a_kernel_made_under_triton_interpret_is_refused_by_the_gpu_side_before_anything_runs(mode):
    # what @triton.jit makes while TRITON_INTERPRET=1: the stock interpreter's function only
    from triton.runtime.interpreter import InterpretedFunction

    interpreted = InterpretedFunction(k.add_kernel.fn)
    x, y, out = _inputs()
    launcher = fake_gpu()
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode=mode), launcher=launcher)
    with pytest.raises(kernel_nb.LaunchArgumentError) as raised, session:
        interpreted[(4,)](x, y, out, 1000, BLOCK=256)
    assert str(raised.value).startswith(
        "add_kernel: TRITON_INTERPRET=1 was set when @triton.jit made this kernel"
    )
    assert launcher.calls == [] and session.trace.launches == [] and not out.any()
