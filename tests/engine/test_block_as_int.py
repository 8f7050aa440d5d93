"""A block where Python wants an int or a truth value (`range(block)`, `a_tuple[block]`, `if block:`):
refused as the compiler refuses it, in both strategies, instead of silently taking one lane."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb


@triton.jit
def range_of_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
    bounds = tl.load(x_ptr + tl.arange(0, BLOCK))
    acc = 0
    for _i in range(bounds):
        acc += 1
    tl.store(out_ptr, acc)


@triton.jit
def range_from_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
    starts = tl.load(x_ptr + tl.arange(0, BLOCK))
    acc = 0
    for _i in tl.range(starts, 10):
        acc += 1
    tl.store(out_ptr, acc)


@triton.jit
def tuple_at_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
    picks = tl.load(x_ptr + tl.arange(0, BLOCK))
    table = (1, 2, 3, 4)
    tl.store(out_ptr, table[picks - 3])


@triton.jit
def range_of_scalar(x_ptr, out_ptr, BLOCK: tl.constexpr):
    n = tl.load(x_ptr + 1)
    acc = 0
    for _i in range(n):
        acc += 1
    tl.store(out_ptr, acc)


_LINE = {fn: fn.starting_line_number for fn in (range_of_block, range_from_block, tuple_at_block)}


@pytest.mark.parametrize(
    ("kernel", "line", "message"),
    [
        (range_of_block, 4, "CompileTimeError: For upper bound must be a scalar, got <['4'], int32>"),
        (range_from_block, 4, "CompileTimeError: For lower bound must be a scalar, got <['4'], int32>"),
        (
            tuple_at_block,
            4,
            "CompileTimeError: a block of shape [4] cannot be used as an int (a range bound, an index, "
            "int()); only scalars can: reduce it first (tl.max, tl.sum) or use a scalar",
        ),
    ],
)
def test_a_block_used_as_an_int_is_a_compile_error(kernel, line, message):
    x = np.array([3, 5, 7, 9], np.int32)
    out = np.zeros(1, np.int32)
    with pytest.raises(kernel_nb.KernelError) as info, kernel_nb.interpret():
        kernel[(2,)](x, out, BLOCK=4)
    name = kernel.fn.__name__
    assert str(info.value) == f"{name}:{_LINE[kernel] + line} pid=(0,0,0): {message}"
    assert isinstance(info.value, triton.CompilationError)
    assert out[0] == 0


def test_a_scalar_bound_still_runs():
    x = np.array([3, 5, 7, 9], np.int32)
    out = np.zeros(1, np.int32)
    with kernel_nb.interpret():
        range_of_scalar[(2,)](x, out, BLOCK=4)
    assert out[0] == 5


@triton.jit
def if_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
    values = tl.load(x_ptr + tl.arange(0, BLOCK))
    if values > 4:
        tl.store(out_ptr, 1)


def test_a_block_used_as_a_condition_is_a_compile_error():
    x = np.array([3, 5, 7, 9], np.int32)
    out = np.zeros(1, np.int32)
    with pytest.raises(kernel_nb.KernelError) as info, kernel_nb.interpret():
        if_block[(2,)](x, out, BLOCK=4)
    assert str(info.value) == (
        f"if_block:{if_block.starting_line_number + 3} pid=(0,0,0): CompileTimeError: Boolean value of "
        "Tensor with more than one value is ambiguous (a block of shape [4]); reduce it first (tl.max, "
        "tl.min) or test a scalar"
    )
    assert isinstance(info.value, triton.CompilationError)
    assert out[0] == 0
