"""What the interpreter now runs, compared with the GPU launch by launch (%%tkernel compare):
bf16 scans, reductions and atomics, split-precision dots, reinterpreted arguments, libdevice,
programs that wait for each other."""

import ml_dtypes
import numpy as np
import pytest
import triton
import triton.language as tl
from triton.runtime.jit import TensorWrapper

import kernel_nb.gpu as gpu
import kernel_nb.gpu.device as gpu_device
from tests.engine import kernels as k
from tests.engine import libdevice_helpers as helpers
from tests.engine import numerics_kernels as nk
from tests.engine import waiting_kernels as wk
from tests.engine.test_libdevice_calls import erf_kernel, norm_kernel

rng = np.random.default_rng(11)


def compared(launch):
    """Run `launch()` under gpu.compare(); the comparison of its only launch, with a line printed."""
    with gpu.compare() as session:
        launch()
    comparison = session.trace[0].comparison
    print(comparison.verdict())
    return comparison


def test_nothing_is_missing_on_a_gpu_machine():
    assert gpu_device.find_missing() is None
    assert gpu_device.capability(0) is not None and gpu_device.capability(0) >= 70


def test_bf16_scans_and_reductions():
    x = rng.standard_normal((3, 32)).astype(np.float32).astype(ml_dtypes.bfloat16)
    outs = [np.zeros_like(x), np.zeros(3, ml_dtypes.bfloat16), np.zeros(3, ml_dtypes.bfloat16)]
    comparison = compared(lambda: k.scan_and_reduce_kernel[(3,)](x, *outs, BLOCK=32))
    assert comparison.ok, comparison.verdict()


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_every_program_adds_to_a_shared_counter(dtype):
    x = rng.standard_normal(8).astype(np.float32).astype(dtype)
    acc = np.zeros(2, dtype)
    comparison = compared(lambda: k.shared_counter_kernel[(5,)](x, acc, BLOCK=8))
    assert comparison.ok, comparison.verdict()


@pytest.mark.parametrize("precision", ["bf16x3", "bf16x6", "tf32x3"])
def test_split_precision_dots(precision):
    a, b = rng.standard_normal((64, 64), np.float32), rng.standard_normal((64, 64), np.float32)
    c = np.zeros((64, 64), np.float32)
    comparison = compared(lambda: nk.dot_kernel[(1,)](a, b, c, N=64, PRECISION=precision))
    assert comparison.ok, comparison.verdict()


def test_reinterpreted_arguments():
    @triton.jit
    def abs_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.abs(tl.load(x_ptr + offsets)))

    def reinterpreted(array, dtype):
        wrapper = TensorWrapper.__new__(TensorWrapper)
        wrapper.base, wrapper.dtype = array, dtype
        return wrapper

    bits = np.arange(256, dtype=np.uint8)
    bits[(bits & 0x7F) >= 0x78] = 0
    bits = bits.view(np.int8)
    out = np.zeros_like(bits)
    comparison = compared(
        lambda: abs_kernel[(1,)](reinterpreted(bits, tl.float8e5), reinterpreted(out, tl.float8e5), BLOCK=256)
    )
    assert comparison.ok, comparison.verdict()
    np.testing.assert_array_equal(out.view(np.uint8), bits.view(np.uint8) & 0x7F)


def test_libdevice_functions():
    x = np.linspace(-3, 3, 200, dtype=np.float32)
    out = np.zeros_like(x)
    assert compared(lambda: norm_kernel[(1,)](x, out, 200, BLOCK=256)).ok
    y = np.linspace(-4, 4, 300, dtype=np.float32)
    gelu = np.zeros_like(y)
    assert compared(lambda: helpers.gelu_kernel[(3,)](y, gelu, 300, BLOCK=128)).ok
    z = np.linspace(-2, 2, 64, dtype=np.float32)
    assert compared(lambda: erf_kernel[(1,)](z, np.zeros_like(z), BLOCK=64)).ok


def test_programs_that_wait_for_each_other():
    a = np.arange(1000, dtype=np.float32)
    partial, out, count = np.zeros(4, np.float32), np.zeros(1, np.float32), np.zeros(1, np.int32)
    comparison = compared(lambda: wk.split_k_kernel[(4,)](a, partial, out, count, 1000, SPLIT=4, BLOCK=256))
    assert comparison.ok, comparison.verdict()
    x = np.ones(8 * 16, np.float32)
    total, next_ticket, serving = (np.zeros(1, dt) for dt in (np.float32, np.int32, np.int32))
    comparison = compared(lambda: wk.ticket_lock_kernel[(8,)](x, total, next_ticket, serving, BLOCK=16))
    assert comparison.ok, comparison.verdict()
