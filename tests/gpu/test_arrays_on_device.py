"""Device arrays are described once for both sides: torch CUDA tensors and CuPy arrays give the
interpreter's `Launch.buffers` and the GPU side's leaves the same names, dtypes, shapes and
groups of shared memory."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine.args import bind
from kernel_nb.gpu.arguments import describe
from tests.engine.test_arrays import _reinterpreted, one_kernel, two_kernel

CASES = [
    "torch cuda",
    "torch cuda views of one base",
    "cupy",
    "torch and cupy over the same memory",
    "reinterpreted cupy",
]


def _cases():
    import cupy
    import torch

    base = torch.arange(64, dtype=torch.float32, device="cuda")
    shared = cupy.arange(32, dtype=cupy.int32)
    return {
        "torch cuda": (two_kernel, (torch.ones(8, dtype=torch.bfloat16, device="cuda"), base)),
        "torch cuda views of one base": (two_kernel, (base[:40], base.view(8, 8)[3:, ::2])),
        "cupy": (two_kernel, (cupy.ones((3, 4), cupy.float16), cupy.zeros(5, cupy.int64))),
        "torch and cupy over the same memory": (two_kernel, (shared, torch.as_tensor(shared, device="cuda"))),
        "reinterpreted cupy": (one_kernel, (_reinterpreted(cupy.ones(6, cupy.int8), tl.uint8),)),
    }


@pytest.mark.parametrize("case", CASES)
def test_device_arrays_are_described_alike_on_both_sides(case):
    kernel, args = _cases()[case]
    gpu = describe(kernel.fn, args, {})
    host = bind(kernel.fn, args, {})
    with kernel_nb.interpret() as session:
        kernel[(1,)](*args)
    launch = session.trace[0]
    assert list(launch.buffers) == [leaf.name for leaf in gpu.leaves] == [b.name for b in host.buffers]
    for leaf, buffer in zip(gpu.leaves, host.buffers):
        assert launch.buffers[leaf.name].shape == leaf.shape == buffer.shape
        assert (buffer.dtype, buffer.strides, buffer.element) == (leaf.dtype, leaf.strides, leaf.element)
        assert leaf.space == "cuda:0"
    host_groups = sorted(sorted(b.name for b in host.buffers if b.memory is m) for m in host.memories)
    assert host_groups == sorted(sorted(leaf.name for leaf in region.leaves) for region in gpu.regions)


@triton.jit
def write_then_read_kernel(whole, tail):
    offsets = tl.arange(0, 8)
    tl.store(tail + offsets, (offsets + 1).to(tl.float32))
    tl.store(whole + offsets, tl.load(whole + 8 + offsets))


def test_a_torch_tensor_and_a_cupy_array_over_the_same_memory_alias_in_the_interpreter():
    import cupy
    import torch

    whole = cupy.zeros(16, cupy.float32)
    tail = torch.as_tensor(whole, device="cuda")[8:]
    with kernel_nb.interpret():
        write_then_read_kernel[(1,)](whole, tail)
    expected = np.arange(1, 9, dtype=np.float32)
    np.testing.assert_array_equal(cupy.asnumpy(whole), np.concatenate([expected, expected]))
