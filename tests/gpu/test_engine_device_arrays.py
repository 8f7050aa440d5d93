"""The CPU engine with device arrays: CuPy arrays and torch CUDA tensors are copied to the host and back."""

import numpy as np
import pytest

import kernel_nb
from tests.engine import kernels as k


def test_cupy_arrays_round_trip():
    import cupy

    x = cupy.arange(1000, dtype=cupy.float32)
    y = cupy.ones(1000, dtype=cupy.float32)
    out = cupy.zeros(1000, dtype=cupy.float32)
    with kernel_nb.interpret() as session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(1000, dtype=np.float32) + 1)
    assert session.trace[0].value(3, "x")[0] == 768


def test_cupy_strided_view_and_failed_launch_leaves_device_memory_alone():
    import cupy

    base = cupy.arange(240, dtype=cupy.float32).reshape(10, 24)
    view = base[1::2, ::3]
    dst = cupy.full((5, 8), -1.0, dtype=cupy.float32)
    with kernel_nb.interpret():
        k.strided_copy_kernel[(5,)](view, dst, 5, 8, view.strides[0] // 4, view.strides[1] // 4, BLOCK=8)
    np.testing.assert_array_equal(cupy.asnumpy(dst), cupy.asnumpy(view))
    out = cupy.full(100, 5.0, dtype=cupy.float32)
    with pytest.raises(kernel_nb.KernelMemoryError), kernel_nb.interpret():
        k.add_kernel_no_mask[(1,)](out, out, out, 100, BLOCK=128)
    np.testing.assert_array_equal(cupy.asnumpy(out), 5.0)


def test_torch_cuda_tensors_round_trip():
    torch = pytest.importorskip("torch")
    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.ones(1000, dtype=torch.bfloat16, device="cuda").float()
    out = torch.zeros(1000, device="cuda")
    with kernel_nb.interpret():
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    assert torch.equal(out.cpu(), torch.arange(1000, dtype=torch.float32) + 1)


def test_torch_cuda_bf16_and_in_place():
    torch = pytest.importorskip("torch")
    x = torch.randn(300, device="cuda").to(torch.bfloat16)
    expected = x.cpu().clone()
    dst = torch.zeros(300, dtype=torch.bfloat16, device="cuda")
    with kernel_nb.interpret():
        k.copy_kernel[(3,)](x, dst, 300, BLOCK=128)
    assert torch.equal(dst.cpu(), expected)
    a = torch.rand(200, device="cuda")
    expected_axpy = (2.0 * a + a).cpu()
    with kernel_nb.interpret():
        k.axpy_kernel[(2,)](a, a, 200, 2.0, BLOCK=128)
    torch.testing.assert_close(a.cpu(), expected_axpy, rtol=0, atol=0)
