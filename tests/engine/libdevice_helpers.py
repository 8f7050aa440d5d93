"""A helper module that imports libdevice functions by name, as library kernels do."""

import triton
import triton.language as tl
from triton.language.extra.libdevice import pow, tanh


@triton.jit
def gelu_tanh(x):
    inner = 0.7978845608028654 * (x + 0.044715 * pow(x, 3.0))
    return 0.5 * x * (1.0 + tanh(inner))


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = gelu_tanh(x)
    tl.store(out_ptr + offsets, y, mask=mask)
