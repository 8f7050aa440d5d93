"""Host arrays staged to the GPU and written back (kernel_nb.gpu.arguments), with CuPy faked: values
the device cannot take are refused naming the kernel and the argument, and the copy back is all or
nothing, read-only arrays and Ctrl-C included."""

import os
import signal

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb.gpu as gpu
from kernel_nb.engine.arrays import ArgumentError, Region
from kernel_nb.errors import LaunchInterrupted
from kernel_nb.gpu.arguments import describe
from tests.engine import kernels as k
from tests.gpu import fake_cupy


@triton.jit
def two_outputs_kernel(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(a_ptr + offsets, 1.0, mask=offsets < n)
    tl.store(b_ptr + offsets, 2.0, mask=offsets < n)


def storing_run(*values):
    """Triton's run as a kernel that stores `values[i]` into every element of pointer argument i."""

    def run(kernel, *args, grid, warmup, **kwargs):
        for pointer, value in zip(args, values):
            if value is not None:
                pointer.owner.array.view(pointer.dtype)[:] = value

    return run


def launch(run, kernel, *args, **kwargs):
    return gpu.launch_on_gpu(run, kernel, (1,), args, kwargs, index=0)


def test_results_come_back_to_host_arrays(monkeypatch):
    fake_cupy.install(monkeypatch)
    a, b = np.zeros(16, np.float32), np.zeros(16, np.float32)
    result = launch(storing_run(1.0, 2.0), two_outputs_kernel, a, b, 16, BLOCK=16)
    assert (result.kernel, result.grid, result.device) == (
        "two_outputs_kernel",
        (1, 1, 1),
        "GPU 0: Fake H200 (sm_90)",
    )
    np.testing.assert_array_equal(a, 1.0)
    np.testing.assert_array_equal(b, 2.0)


@pytest.mark.parametrize("kind", ["memmap", "frombuffer", "flagged"])
def test_a_store_into_a_read_only_array_is_refused_and_nothing_is_written(kind, monkeypatch, tmp_path):
    fake_cupy.install(monkeypatch)
    a = np.zeros(16, np.float32)
    if kind == "memmap":  # its pages are mapped read-only: a write through them would kill the process
        np.full(16, 5.0, np.float32).tofile(tmp_path / "b.bin")
        b = np.memmap(tmp_path / "b.bin", np.float32, mode="r")
    elif kind == "frombuffer":  # the bytes behind an immutable bytes object
        b = np.frombuffer(np.full(16, 5.0, np.float32).tobytes(), np.float32)
    else:
        b = np.full(16, 5.0, np.float32)
        b.setflags(write=False)
    with pytest.raises(ArgumentError) as caught:
        launch(storing_run(1.0, 2.0), two_outputs_kernel, a, b, 16, BLOCK=16)
    assert str(caught.value) == (
        "two_outputs_kernel: the launch stored into b_ptr, a read-only array (flags.writeable is False); "
        "the arrays are unchanged; pass a writable array there, e.g. a copy"
    )
    np.testing.assert_array_equal(a, 0.0)  # the writable output is not written either
    np.testing.assert_array_equal(b, 5.0)


def test_a_read_only_input_and_a_read_only_view_of_a_written_array_are_fine(monkeypatch):
    fake_cupy.install(monkeypatch)
    x = np.arange(16, dtype=np.float32)
    x.setflags(write=False)
    out = np.zeros(16, np.float32)
    launch(storing_run(None, None, 7.0), k.add_kernel, x, x, out, 16, BLOCK=16)
    np.testing.assert_array_equal(out, 7.0)
    base = np.zeros(16, np.float32)
    view = base[:]
    view.setflags(write=False)
    launch(storing_run(1.0, None), two_outputs_kernel, base, view, 16, BLOCK=16)
    np.testing.assert_array_equal(base, 1.0)  # stored through the writable one of the two names


def test_ctrl_c_during_the_copy_back_undoes_it(monkeypatch):
    fake_cupy.install(monkeypatch)
    a, b = np.zeros(16, np.float32), np.zeros(16, np.float32)
    writes = []
    original = Region.write

    def write(region, data):
        writes.append(region.lo)
        original(region, data)
        if len(writes) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # between the first region's write and the second's

    monkeypatch.setattr(Region, "write", write)
    with pytest.raises(LaunchInterrupted) as caught:
        launch(storing_run(1.0, 2.0), two_outputs_kernel, a, b, 16, BLOCK=16)
    assert (
        str(caught.value)
        == "two_outputs_kernel: interrupted during the GPU launch; the host arrays are unchanged"
    )
    assert caught.value.kernel == "two_outputs_kernel" and caught.value.pid is None
    assert len(writes) == 4  # both written, then both undone
    np.testing.assert_array_equal(a, 0.0)
    np.testing.assert_array_equal(b, 0.0)


def test_ctrl_c_while_the_kernel_runs_leaves_the_host_arrays(monkeypatch):
    fake_cupy.install(monkeypatch)
    out = np.full(16, 3.0, np.float32)

    def run(kernel, *args, grid, warmup, **kwargs):
        args[2].owner.array.view(np.float32)[:] = 9.0
        raise KeyboardInterrupt

    with pytest.raises(LaunchInterrupted, match=r"^add_kernel: interrupted during the GPU launch"):
        launch(run, k.add_kernel, out, out, out, 16, BLOCK=16)
    np.testing.assert_array_equal(out, 3.0)


def test_an_error_during_the_copy_back_undoes_it(monkeypatch):
    fake_cupy.install(monkeypatch)
    a, b = np.zeros(16, np.float32), np.zeros(16, np.float32)
    original = Region.write
    calls = []

    def write(region, data):
        calls.append(region.lo)
        if len(calls) == 2:
            raise OSError("the second write fails")
        original(region, data)

    monkeypatch.setattr(Region, "write", write)
    with pytest.raises(OSError, match="the second write fails"):
        launch(storing_run(1.0, 2.0), two_outputs_kernel, a, b, 16, BLOCK=16)
    np.testing.assert_array_equal(a, 0.0)
    np.testing.assert_array_equal(b, 0.0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            [1.0] * 16,
            "add_kernel: argument out_ptr is a list, which a kernel cannot take; pass an array (numpy, torch "
            "or CuPy) for a pointer, or a number for a scalar",
        ),
        (
            "out",
            "add_kernel: argument out_ptr is a str, which a kernel cannot take; pass an array (numpy, torch "
            "or CuPy) for a pointer, or a number for a scalar",
        ),
        (
            2**70,
            "add_kernel: argument out_ptr is 1180591620717411303424, past the 64-bit integers a kernel takes "
            "(-2**63 to 2**64 - 1); pass a smaller value",
        ),
        (
            np.zeros(16, ">f4"),
            "add_kernel: argument out_ptr is a big-endian array (>f4), which the GPU would read byte-swapped; "
            "pass it converted: .astype('<f4')",
        ),
    ],
)
def test_values_the_device_cannot_take_are_refused_naming_the_argument(value, message):
    x = np.ones(16, np.float32)
    with pytest.raises(ArgumentError) as caught:
        describe(k.add_kernel.fn, (x, x, value, 16), {"BLOCK": 16})
    assert str(caught.value) == message


def test_values_triton_takes_pass():
    x = np.ones(16, np.float32)
    for n in (16, np.int32(16), 2**64 - 1, -(2**63), 1.5, True, None):
        describe(k.add_kernel.fn, (x, x, x, n), {"BLOCK": 16})


def test_argument_errors_name_the_kernel():
    x = np.ones(16, np.complex64)
    with pytest.raises(ArgumentError) as caught:
        describe(k.add_kernel.fn, (x, x, x, 16), {"BLOCK": 16})
    assert (
        str(caught.value)
        == "add_kernel: argument x_ptr: numpy dtype complex64 has no Triton equivalent; pass x.view(np.float32), its real and imaginary parts"
    )
    with pytest.raises(
        ArgumentError,
        match=r"^add_kernel: argument n is missing; pass it \(parameters: x_ptr, y_ptr, out_ptr, n, BLOCK\)$",
    ):
        describe(k.add_kernel.fn, (x, x, x), {"BLOCK": 16})
