"""What a machine lacks for a compiled launch, found in the order a user can act on (kernel_nb.gpu.device)."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb.gpu as gpu
import kernel_nb.gpu.device as gpu_device
from kernel_nb.engine import triton_compat
from tests.engine import kernels as k
from tests.gpu import fake_cupy
from tests.machine import FakeDriver, FakeMachine, has_nvidia_gpu

INSTEAD = (
    "%%tkernel interpret runs the same cell on the CPU, and %%tkernel interpret --ir also shows the "
    "TTIR, TTGIR, LLIR and PTX the GPU would run"
)


def missing_on(machine: FakeMachine, monkeypatch, tmp_path, **kwargs):
    machine.install(monkeypatch, tmp_path)
    return gpu_device.find_missing(**kwargs)


def test_no_gpu_comes_first_even_without_cupy(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(pci_gpus=0, driver=False, cupy="missing"), monkeypatch, tmp_path)
    assert found == gpu_device.Missing(
        "gpu",
        "no NVIDIA GPU on this machine: %%tkernel gpu and %%tkernel compare run the compiled kernel on one; "
        + INSTEAD,
    )


def test_a_gpu_without_its_driver(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(driver=False, cupy="missing"), monkeypatch, tmp_path)
    assert found is not None and found.piece == "driver"
    assert found.message == (
        "this machine has an NVIDIA GPU but no CUDA driver loads (libcuda.so.1: cannot open shared object "
        "file: No such file or directory): install the NVIDIA driver (nvidia-smi then lists the GPU); "
        "until then " + INSTEAD
    )


def test_a_driver_that_does_not_start(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(init_status=999), monkeypatch, tmp_path)
    assert found is not None and found.piece == "driver"
    assert found.message.startswith("the CUDA driver does not start (CUDA_ERROR_UNKNOWN (999)): check the")


def test_a_driver_that_sees_no_device(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    found = missing_on(FakeMachine(init_status=100), monkeypatch, tmp_path)
    assert found is not None and found.piece == "gpu"
    assert found.message.startswith("the CUDA driver sees no GPU (CUDA_VISIBLE_DEVICES='' hides them?)")


def test_cupy_missing_names_the_wheel_for_the_drivers_cuda(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(driver_version=13000, cupy="missing"), monkeypatch, tmp_path)
    assert found == gpu_device.Missing(
        "cupy",
        "CuPy is not installed: %%tkernel gpu and %%tkernel compare run kernels on CuPy device arrays; "
        'pip install "kernel-nb[gpu]" (CuPy for CUDA 12), or the wheel for this driver: '
        "pip install cupy-cuda13x (this driver's CUDA is 13.0)",
    )


def test_cupy_that_does_not_load(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(cupy="broken"), monkeypatch, tmp_path)
    assert found == gpu_device.Missing(
        "cupy",
        "CuPy is installed but does not load (RuntimeError: CuPy failed to load libnvrtc.so.13: cannot open "
        "shared object file); install the CuPy wheel that matches the driver: pip install cupy-cuda12x "
        "(this driver's CUDA is 12.4)",
    )


def test_cupy_built_for_a_newer_cuda_than_the_driver(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(cupy="old-driver"), monkeypatch, tmp_path)
    assert found == gpu_device.Missing(
        "cupy",
        "CuPy does not run on this driver (RuntimeError: cudaErrorInsufficientDriver: CUDA driver version is "
        "insufficient): the driver supports CUDA 12.4; install the CuPy wheel for it: pip install cupy-cuda12x",
    )


def test_a_device_number_past_the_last(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(capabilities=(90, 80)), monkeypatch, tmp_path, device=2)
    assert found == gpu_device.Missing("device", "--device 2: this machine has 2 CUDA devices (0 to 1)")


def test_a_triton_that_cannot_launch(monkeypatch, tmp_path):
    found = missing_on(FakeMachine(triton_driver=False), monkeypatch, tmp_path)
    assert found is not None and found.piece == "triton"
    assert "finds no GPU driver it can launch on (RuntimeError: 0 active drivers" in found.message


def test_everything_present(monkeypatch, tmp_path):
    assert missing_on(FakeMachine(capabilities=(90, 80)), monkeypatch, tmp_path, device=1) is None
    assert gpu_device.capability(1) == 80


def test_compiling_needs_only_a_backend(monkeypatch, tmp_path):
    # no GPU, no driver, no CuPy: --ir still compiles
    assert (
        missing_on(
            FakeMachine(pci_gpus=0, driver=False, cupy="missing"), monkeypatch, tmp_path, need="compile"
        )
        is None
    )
    monkeypatch.setattr("triton.backends.backends", {})
    found = gpu_device.find_missing(need="compile")
    assert found is not None and found.piece == "triton"
    assert (
        "cannot compile for cuda: its nvidia backend is not installed (backends here: none)" in found.message
    )


@pytest.mark.parametrize("entry", ["run", "compare", "divergence"])
def test_every_session_says_the_first_missing_piece_and_changes_nothing(entry, monkeypatch, tmp_path):
    FakeMachine(cupy="missing").install(monkeypatch, tmp_path)
    x = np.ones(100, np.float32)
    out = np.zeros(100, np.float32)
    with pytest.raises(gpu.GpuUnavailableError) as caught:
        with getattr(gpu, entry)():
            k.add_kernel[(1,)](x, x, out, 100, BLOCK=128)
    assert caught.value.missing == "cupy" and str(caught.value).startswith("CuPy is not installed")
    assert 'pip install "kernel-nb[gpu]"' in str(caught.value)
    assert caught.value._render_traceback_() == [f"GpuUnavailableError: {caught.value}"]
    assert not out.any()
    assert not getattr(triton_compat.JIT_FUNCTION.run, "__kernel_nb_session__", False)


def test_the_device_functions_say_it_too(monkeypatch, tmp_path):
    FakeMachine(pci_gpus=0, driver=False, cupy="missing").install(monkeypatch, tmp_path)
    x = np.ones(100, np.float32)
    with pytest.raises(gpu.GpuUnavailableError, match=r"^no NVIDIA GPU on this machine"):
        gpu.launch_on_gpu(
            triton_compat.JIT_FUNCTION.run, k.add_kernel, (1,), (x, x, x, 100), {"BLOCK": 128}, index=0
        )


@pytest.mark.skipif(has_nvidia_gpu(), reason="this machine has an NVIDIA GPU")
def test_the_real_message_on_this_machine_without_a_gpu():
    assert gpu_device.find_missing() == gpu_device.Missing(
        "gpu",
        "no NVIDIA GPU on this machine: %%tkernel gpu and %%tkernel compare run the compiled kernel on one; "
        + INSTEAD,
    )
    assert gpu_device.capability(0) is None


# A CUDA context lost to a sticky error, with CuPy faked (tests.gpu.fake_cupy); the real fault runs
# in tests/gpu/test_context_lost.py.

LOST_NOW = (
    "far_store_kernel: the launch faulted on GPU 0 (cudaErrorIllegalAddress: an illegal memory access was "
    "encountered) and the CUDA context is gone: a sticky error fails every later CUDA call in this process; "
    "restart the Python process (in Jupyter: restart the kernel) to use the GPU again, and run the cell "
    "with %%tkernel interpret to find the bad access"
)
LOST_EARLIER = (
    "add_kernel: the CUDA context of GPU 0 is gone since an earlier launch faulted (cudaErrorIllegalAddress: "
    "an illegal memory access was encountered): a sticky error fails every later CUDA call in this process; "
    "restart the Python process (in Jupyter: restart the kernel) to use the GPU again, and run the cell "
    "with %%tkernel interpret to find the bad access"
)


@triton.jit
def far_store_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets + (1 << 40), 1.0, mask=offsets < n)


def faulting_run(cupy, error=fake_cupy.ILLEGAL_ADDRESS):
    """Triton's run as a kernel that faults: the launch returns, the device holds the error."""

    def run(kernel, *args, grid, warmup, **kwargs):
        cupy.lose(error)

    return run


def test_a_fault_in_the_launch_says_the_context_is_gone_and_later_launches_say_so_too(monkeypatch):
    cupy = fake_cupy.install(monkeypatch)
    out = np.full(64, 3.0, np.float32)
    with pytest.raises(gpu.CudaContextLost) as first:
        gpu.launch_on_gpu(faulting_run(cupy), far_store_kernel, (1,), (out, 64), {"BLOCK": 64}, index=0)
    assert str(first.value) == LOST_NOW and not first.value.earlier
    assert first.value._render_traceback_() == [f"CudaContextLost: {LOST_NOW}"]
    assert isinstance(first.value.__cause__, gpu.GpuLaunchError)  # what met it first, kept as the cause
    np.testing.assert_array_equal(out, 3.0)
    x = np.ones(64, np.float32)
    calls, staged = [], len(cupy.buffers)
    with pytest.raises(gpu.CudaContextLost) as later:
        gpu.launch_on_gpu(
            lambda *a, **kw: calls.append(a), k.add_kernel, (1,), (x, x, out, 64), {"BLOCK": 64}, index=1
        )
    assert str(later.value) == LOST_EARLIER and later.value.earlier and later.value.missing == "context"
    assert calls == [] and len(cupy.buffers) == staged  # refused before staging anything
    np.testing.assert_array_equal(out, 3.0)


def test_the_error_that_meets_the_lost_context_first_does_not_matter(monkeypatch):
    cupy = fake_cupy.install(monkeypatch)

    def run(kernel, *args, grid, warmup, **kwargs):
        cupy.lose()
        raise RuntimeError("Triton Error [CUDA]: an illegal memory access was encountered")

    x = np.ones(64, np.float32)
    with pytest.raises(gpu.CudaContextLost, match=r"^add_kernel: the launch faulted on GPU 0 "):
        gpu.launch_on_gpu(run, k.add_kernel, (1,), (x, x, x, 64), {"BLOCK": 64}, index=0)
    with pytest.raises(gpu.CudaContextLost) as caught:  # a device scope of any caller says the same
        with gpu_device.device_scope(0, "add_kernel"):
            pass
    assert str(caught.value) == LOST_EARLIER


def test_a_launch_error_that_is_not_sticky_stays_a_launch_error(monkeypatch):
    cupy = fake_cupy.install(monkeypatch)

    def run(kernel, *args, grid, warmup, **kwargs):
        raise fake_cupy.CUDARuntimeError(*fake_cupy.INVALID_VALUE)

    x = np.ones(64, np.float32)
    with pytest.raises(gpu.GpuLaunchError) as caught:
        gpu.launch_on_gpu(run, k.add_kernel, (1,), (x, x, x, 64), {"BLOCK": 64}, index=0)
    assert str(caught.value) == (
        "add_kernel: the compiled launch on GPU 0: Fake H200 (sm_90) failed; the arrays are unchanged: "
        "CUDARuntimeError: cudaErrorInvalidValue: invalid argument"
    )
    assert cupy.sticky is None and gpu_device.sticky_error(cupy, 0) is None


def test_a_lost_context_is_not_taken_for_a_missing_piece(monkeypatch, tmp_path):
    FakeMachine().install(monkeypatch, tmp_path)
    import sys

    runtime = sys.modules["cupy"].cuda.runtime

    def lost():
        raise fake_cupy.CUDARuntimeError(*fake_cupy.ILLEGAL_ADDRESS)

    monkeypatch.setattr(runtime, "getDeviceCount", lost)
    assert gpu_device.find_missing() is None  # the launch says what happened, naming its kernel
    monkeypatch.setattr(FakeDriver, "cuInit", lambda self, flags: fake_cupy.ILLEGAL_ADDRESS[0])
    assert gpu_device.find_missing() is None

    def mismatched():
        raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    monkeypatch.setattr(runtime, "getDeviceCount", mismatched)
    found = gpu_device.find_missing()
    assert found is not None and found.piece == "cupy"


def test_entering_a_session_leaves_tritons_launcher_to_the_first_launch(monkeypatch, tmp_path):
    FakeMachine(triton_driver=False).install(monkeypatch, tmp_path)
    asked = []
    real = gpu_device._triton_launcher_missing
    monkeypatch.setattr(gpu_device, "_triton_launcher_missing", lambda: asked.append(1) or real())
    x = np.ones(100, np.float32)
    out = np.zeros(100, np.float32)
    with gpu.run():
        assert asked == []  # no torch import, no CUDA start for a cell that launches nothing
    with pytest.raises(gpu.GpuUnavailableError) as caught, gpu.run():
        k.add_kernel[(1,)](x, x, out, 100, BLOCK=128)
    assert asked and caught.value.missing == "triton"
    assert not out.any()
