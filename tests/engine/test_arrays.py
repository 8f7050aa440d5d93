"""The interpreter and the GPU side see a launch's arrays the same way: both take them from
`engine.arrays`, so `Launch.buffers` names, dtypes and shapes are the GPU side's leaves."""

import importlib.util
from typing import NamedTuple

import numpy as np
import pytest
import triton
import triton.language as tl
from triton.runtime.jit import TensorWrapper

import kernel_nb
from kernel_nb.engine import arrays
from kernel_nb.engine.args import bind
from kernel_nb.gpu.arguments import describe

HAS_TORCH = importlib.util.find_spec("torch") is not None


@triton.jit
def one_kernel(a):
    pass


@triton.jit
def two_kernel(a, b):
    pass


class Pair(NamedTuple):
    first: object
    second: object


def _reinterpreted(array, dtype):
    wrapper = TensorWrapper.__new__(TensorWrapper)
    wrapper.base, wrapper.dtype = array, dtype
    return wrapper


def _numpy_cases():
    base = np.arange(64, dtype=np.float32)
    same = np.zeros(16, np.int16)
    return {
        "numpy": (two_kernel, (np.ones(8, np.float32), np.zeros((3, 5), np.int64))),
        "strided view": (one_kernel, (np.zeros((6, 8), np.float16)[::2, 1::3],)),
        "views of one base": (two_kernel, (base[:40], base[24:])),
        "the same array twice": (two_kernel, (same, same)),
        "tuple": (two_kernel, ((np.ones(4, np.uint8), np.ones(2, np.int32)), np.ones(3, np.float64))),
        "named tuple": (one_kernel, (Pair(np.ones(4, np.int8), (np.ones(5, np.float32), 7)),)),
        "reinterpreted": (two_kernel, (_reinterpreted(np.ones(4, np.int8), tl.uint8), np.ones(2, np.bool_))),
        "reinterpreted to another size": (
            one_kernel,
            (_reinterpreted(np.arange(8, dtype=np.int32), tl.int16),),
        ),
        "reinterpreted as fp8e4b15": (one_kernel, (_reinterpreted(np.ones(4, np.int8), tl.float8e4b15),)),
    }


def _torch_cases():
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    base = torch.arange(48, dtype=torch.float32)
    return {
        "torch": (two_kernel, (torch.ones(8, dtype=torch.bfloat16), torch.zeros((4, 4), dtype=torch.int32))),
        "torch views of one base": (two_kernel, (base[:30], base.view(6, 8)[2:, ::2])),
        "descriptor": (
            two_kernel,
            (
                TensorDescriptor.from_tensor(torch.zeros(16, 8), [16, 8]),
                torch.ones(3, dtype=torch.float8_e5m2),
            ),
        ),
    }


def _cases():
    cases = _numpy_cases()
    if HAS_TORCH:
        cases |= _torch_cases()
    return cases


@pytest.mark.parametrize("case", list(_cases()))
def test_the_interpreter_and_the_gpu_side_describe_the_same_arrays(case):
    kernel, args = _cases()[case]
    gpu = describe(kernel.fn, args, {})
    host = bind(kernel.fn, args, {})
    with kernel_nb.interpret() as session:
        kernel[(1,)](*args)
    launch = session.trace[0]

    assert list(launch.buffers) == [leaf.name for leaf in gpu.leaves] == [b.name for b in host.buffers]
    for leaf, buffer in zip(gpu.leaves, host.buffers):
        assert launch.buffers[leaf.name].shape == leaf.shape == buffer.shape
        assert launch.buffers[leaf.name].size == (leaf.hi - leaf.lo) // leaf.dtype.itemsize == buffer.size
        assert (buffer.dtype, buffer.strides, buffer.element) == (leaf.dtype, leaf.strides, leaf.element)
    for info in launch.args:
        if info.kind == "buffer":
            leaf = next(leaf for leaf in gpu.leaves if leaf.name == info.name)
            assert info.dtype == str(leaf.element or leaf.dtype)
    host_groups = sorted(sorted(b.name for b in host.buffers if b.memory is m) for m in host.memories)
    assert host_groups == sorted(sorted(leaf.name for leaf in region.leaves) for region in gpu.regions)


def test_overlapping_arrays_share_one_region_and_distinct_ones_do_not():
    base = np.arange(64, dtype=np.float32)
    other = np.zeros(4, np.float32)
    leaves = arrays.leaves(two_kernel.fn, (base[:40], base[24:]), {})
    assert [[leaf.name for leaf in r.leaves] for r in arrays.regions(leaves)] == [["a", "b"]]
    leaves = arrays.leaves(two_kernel.fn, (base, other), {})
    assert len(arrays.regions(leaves)) == 2


def test_refusals_name_the_argument():
    with pytest.raises(
        arrays.ArgumentError,
        match=r"^argument a: numpy dtype complex64 has no Triton equivalent; pass x\.view\(np\.float32\), "
        r"its real and imaginary parts$",
    ):
        arrays.leaves(one_kernel.fn, (np.zeros(2, np.complex64),), {})
    pointer = _reinterpreted(np.zeros(2, np.float32), tl.pointer_type(tl.float32))
    with pytest.raises(
        arrays.ArgumentError,
        match=r"^argument a: triton.reinterpret as pointer<fp32>, which is not an element type$",
    ):
        arrays.leaves(one_kernel.fn, (pointer,), {})
    with pytest.raises(
        arrays.ArgumentError,
        match=r"^argument a: Opaque is not supported; pass a numpy array, a torch tensor or a CuPy array$",
    ):
        arrays.leaves(one_kernel.fn, (type("Opaque", (), {"data_ptr": lambda self: 0})(),), {})


@pytest.mark.skipif(not HAS_TORCH, reason="torch dtypes")
def test_torch_dtypes_taken_are_those_with_a_triton_element_type():
    import torch

    taken = {
        str(dtype).removeprefix("torch.")
        for dtype in vars(torch).values()
        if isinstance(dtype, torch.dtype) and str(dtype).removeprefix("torch.") in arrays.TORCH_TYPES
    }
    assert taken == {
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    }  # fmt: skip
    with pytest.raises(
        arrays.ArgumentError,
        match=r"^argument a: torch dtype torch.complex64 has no Triton equivalent; pass "
        r"torch\.view_as_real\(x\), its real and imaginary parts$",
    ):
        arrays.leaves(one_kernel.fn, (torch.zeros(2, dtype=torch.complex64),), {})
    with pytest.raises(arrays.ArgumentError, match=r"^argument a: torch dtype torch.float8_e4m3fnuz has no"):
        arrays.leaves(one_kernel.fn, (torch.zeros(2, dtype=torch.float8_e4m3fnuz),), {})


@pytest.mark.skipif(not HAS_TORCH, reason="torch tensors")
def test_torch_tensors_without_strided_host_or_cuda_memory_are_refused():
    import torch

    cases = [
        (
            torch.ones(4, device="meta"),
            "argument a: a torch tensor on the meta device has no data; pass a CPU or CUDA tensor",
        ),
        (
            torch.ones(4).to_sparse(),
            "argument a: a torch tensor of layout sparse_coo has no strided memory; pass x.to_dense()",
        ),
    ]
    for tensor, message in cases:
        with pytest.raises(arrays.ArgumentError) as info:
            arrays.leaves(one_kernel.fn, (tensor,), {})
        assert str(info.value) == message


def test_numpy_arrays_of_no_triton_dtype_are_refused_with_what_to_pass():
    cases = [
        (np.array(["a"]), "argument a: numpy dtype <U1 has no Triton equivalent; pass an array of numbers"),
        (
            np.zeros(2, np.longdouble),
            f"argument a: numpy dtype {np.dtype(np.longdouble)} has no Triton equivalent; convert it to one "
            "Triton has (x.astype(np.float32), x.to(torch.float32))",
        ),
    ]
    for value, message in cases:
        with pytest.raises(arrays.ArgumentError) as info:
            arrays.leaves(one_kernel.fn, (value,), {})
        assert str(info.value) == message


def test_a_big_endian_array_is_described_in_native_order_and_marked_swapped():
    (leaf,) = arrays.leaves(one_kernel.fn, (np.zeros(3, ">f4"),), {})
    assert leaf.dtype == np.dtype("=f4")
    assert leaf.byteswapped


def test_overlapping_arrays_of_different_byte_orders_are_refused():
    base = np.zeros(8, ">i4")
    with pytest.raises(arrays.ArgumentError) as info:
        arrays.regions(arrays.leaves(two_kernel.fn, (base, base.view("<i4")), {}))
    assert str(info.value) == (
        "argument b: shares memory with argument a in another byte order; pass native copies "
        "(x.astype(x.dtype.newbyteorder('=')))"
    )
