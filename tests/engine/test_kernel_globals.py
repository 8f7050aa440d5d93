"""What a kernel's source reads from its module, described as data for a standalone reproducer."""

import numpy as np
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice
from triton.language.extra.libdevice import tanh

from kernel_nb.engine.kernel_globals import kernel_globals
from tests.trace import repro_kernels
from tests.trace.repro_kernels import _shifted_sqrt

BLOCK_ROWS = tl.constexpr(4)
EPS = 1e-6
NAME = "rows"
NOTHING = None
OFFSET = 1.0  # repro_kernels._shifted_sqrt reads a global OFFSET too, tl.constexpr(4.0)
TABLE = np.arange(4)
float32 = "not tl.float32"  # a module global with the name of an attribute the kernel reads


@triton.jit
def _scaled(x):
    return x * EPS + tanh(x)


@triton.jit
def reads_everything_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK) * BLOCK_ROWS
    x = tl.load(x_ptr + offsets).to(tl.float32)
    y = _scaled(libdevice.exp(x)) + cuda_libdevice.log(x)
    tl.store(x_ptr + offsets, y + triton.cdiv(BLOCK, 2))


@triton.jit
def reads_two_offsets_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets) + OFFSET
    tl.store(x_ptr + offsets, _shifted_sqrt(x))


@triton.jit
def reads_a_user_module_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, repro_kernels._shifted_sqrt(tl.load(x_ptr + offsets)))


@triton.jit
def reads_an_array_kernel(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + TABLE[0])


def _closure_kernel():
    scale = 3.0

    @triton.jit
    def scaled_kernel(x_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) * scale + len(NAME) + (NOTHING is None))

    return scaled_kernel


def test_modules_imports_constants_constexprs_and_helpers_are_described():
    assert kernel_globals(reads_everything_kernel.fn) == {
        "BLOCK_ROWS": ("constexpr", 4),
        "EPS": ("value", 1e-6),
        "_scaled": ("jit", "_scaled"),
        "cuda_libdevice": ("module", "triton.language.extra.cuda.libdevice"),
        "libdevice": ("module", "triton.language.extra.libdevice"),
        "tanh": ("from", ("triton.language.extra.libdevice", "tanh")),
        "tl": ("module", "triton.language"),
        "triton": ("module", "triton"),
    }


def test_helpers_are_followed_into_their_modules():
    described = kernel_globals(repro_kernels.shifted_sqrt_kernel.fn)
    assert described == {
        "OFFSET": ("constexpr", 4.0),
        "SCALE": ("constexpr", 2.0),
        "_shifted_sqrt": ("jit", "_shifted_sqrt"),
        "tl": ("module", "triton.language"),
    }


def test_a_name_two_modules_give_different_meanings_is_unsupported():
    described = kernel_globals(reads_two_offsets_kernel.fn)
    assert described["OFFSET"] == (
        "unsupported",
        "OFFSET is 1.0 in tests.engine.test_kernel_globals but tl.constexpr(4.0) in tests.trace.repro_kernels; "
        "rename one of them",
    )
    assert described["_shifted_sqrt"] == ("jit", "_shifted_sqrt")
    assert described["tl"] == ("module", "triton.language")


def test_what_no_file_can_recreate_is_unsupported():
    assert kernel_globals(reads_an_array_kernel.fn)["TABLE"] == ("unsupported", "array([0, 1, 2, 3])")
    # a helper read through the user's module: the module would have to be imported
    assert kernel_globals(reads_a_user_module_kernel.fn)["repro_kernels"] == (
        "unsupported",
        "module tests.trace.repro_kernels, the user's code: import what the kernel uses of it by name",
    )


def test_closure_variables_are_described_and_builtins_are_not():
    assert kernel_globals(_closure_kernel().fn) == {
        "NAME": ("value", "rows"),
        "NOTHING": ("value", None),
        "scale": ("value", 3.0),
        "tl": ("module", "triton.language"),
    }
