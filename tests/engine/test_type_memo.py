"""Block types and tensors made while a launch runs equal those Triton's own constructors make,
memoised or not, and Triton's constructors are back once the launch ends."""

import numpy as np
import pytest
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.engine.patches import routed_language

core = tl.core
BLOCK_INIT = core.block_type.__dict__["__init__"]
TENSOR_INIT = core.tensor.__dict__["__init__"]


def _triton_block(element_ty, shape):
    made = object.__new__(core.block_type)
    BLOCK_INIT(made, element_ty, shape)
    return made


def _triton_tensor(handle, ty):
    made = object.__new__(core.tensor)
    TENSOR_INIT(made, handle, ty)
    return made


def _plain(value):
    """An attribute as comparable data (Triton tuples and constexprs by their values)."""
    if isinstance(value, (core.tuple, list, tuple)):
        return tuple(_plain(v) for v in value)
    return getattr(value, "value", value)


def _same_block(made, element_ty, shape):
    want = _triton_block(element_ty, shape)
    assert set(vars(made)) == set(vars(want))
    for name in vars(want):
        if name == "element_ty":
            assert made.element_ty is element_ty  # the caller's own type, not an equal one
        else:
            assert _plain(getattr(made, name)) == _plain(getattr(want, name)), name
    assert made == want and str(made) == str(want)


def test_block_types_made_again_equal_tritons_own():
    pointers = [
        tl.pointer_type(tl.float32),
        tl.pointer_type(tl.float32, const=True),
        tl.pointer_type(tl.float32, address_space=3),
        tl.pointer_type(tl.pointer_type(tl.int8)),
    ]
    with routed_language():
        assert core.block_type.__dict__["__init__"] is not BLOCK_INIT  # the memo's, while it runs
        for element_ty in [tl.float32, tl.int1, tl.float16, *pointers]:
            for shape in ([64, 64], [64], [1, 128], [tl.constexpr(16), 4], core.tuple([32, 8])):
                for _ in range(3):  # the first made by Triton's constructor, the others from it
                    _same_block(core.block_type(element_ty, shape), element_ty, shape)
        # what Triton's own constructor refuses (this version's), it still refuses, seen before
        # or not; what it takes, it still takes
        for odd in ((1, 128), [3], [0]):
            try:
                _triton_block(tl.float32, odd)
                refused = None
            except (AssertionError, ValueError, TypeError) as why:
                refused = type(why)
            for _ in range(2):
                if refused is None:
                    _same_block(core.block_type(tl.float32, odd), tl.float32, odd)
                else:
                    with pytest.raises(refused):
                        core.block_type(tl.float32, odd)
        # equal pointer types that differ in constness or address space stay apart
        kinds = {str(core.block_type(p, [8])) for p in pointers}
        assert len(kinds) == len({str(_triton_block(p, [8])) for p in pointers})
        for p in pointers:
            assert core.block_type(p, [8]).element_ty is p
            assert core.block_type(p, [8]) == _triton_block(p, [8])


def test_tensors_made_again_equal_tritons_own():
    with routed_language():
        for element_ty in (tl.float32, tl.pointer_type(tl.int32)):
            for shape in ([64, 32], [8]):
                for i in range(3):
                    ty = core.block_type(element_ty, shape)
                    made = core.tensor(i, ty)
                    want = _triton_tensor(i, ty)
                    assert set(vars(made)) == set(vars(want))
                    assert made.handle == i and made.type is ty and made.dtype is want.dtype
                    assert _plain(made.shape) == _plain(want.shape) == tuple(shape)
                    assert _plain(made.numel) == _plain(want.numel) == int(np.prod(shape))
                    assert isinstance(made.shape[0], core.constexpr)
        scalar = core.tensor("h", tl.float32)  # a scalar's type is no block: Triton's constructor
        assert scalar.shape == () and scalar.dtype is tl.float32


def test_tritons_constructors_are_back_after_a_launch():
    @triton.jit
    def double(x, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x + offs, tl.load(x + offs, mask=offs < n) * 2, mask=offs < n)

    x = np.arange(100, dtype=np.float32)
    with kernel_nb.interpret():
        double[(4,)](x, 100, BLOCK=32)
    np.testing.assert_array_equal(x, np.arange(100, dtype=np.float32) * 2)
    assert core.block_type.__dict__["__init__"] is BLOCK_INIT
    assert core.tensor.__dict__["__init__"] is TENSOR_INIT
