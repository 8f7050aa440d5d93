"""An uncovered buffer's finding names the stores that write it, in both strategies."""

import numpy as np
import triton
import triton.language as tl

from tests.engine import kernels as k


@triton.jit
def two_stores_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, offsets.to(tl.float32), mask=offsets < n // 2)
    tl.store(out_ptr + offsets, offsets.to(tl.float32), mask=(offsets >= n // 2) & (offsets < n - 4))


@triton.jit
def two_stores_kernel_clean(out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, offsets.to(tl.float32), mask=offsets < n // 2)
    tl.store(out_ptr + offsets, offsets.to(tl.float32), mask=(offsets >= n // 2) & (offsets < n))


def test_the_store_line_is_named(interpret):
    n = 1000
    x = np.ones(n, np.float32)
    with interpret() as session:
        k.add_kernel[(n // 256,)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
    [finding] = session.trace[0].findings
    assert finding.message == (
        "add_kernel: out_ptr elements [768, 1000) (232 of 1000) were never written by the tl.store at "
        "kernels.py:14, though the launch wrote the rest of out_ptr; check the grid covers the whole "
        "buffer and the store mask's bound"
    )
    assert (finding.file, finding.line) == (k.add_kernel.fn.__code__.co_filename, 14)


def test_every_store_of_the_buffer_is_named(interpret):
    with interpret() as session:
        two_stores_kernel[(4,)](np.zeros(64, np.float32), 64, BLOCK=16)
    [finding] = session.trace[0].findings
    first = two_stores_kernel.fn.__code__.co_firstlineno
    assert finding.message == (
        f"two_stores_kernel: out_ptr elements [60, 64) (4 of 64) were never written by the stores at "
        f"test_coverage_sites.py:{first + 3}, test_coverage_sites.py:{first + 4}, though the launch wrote "
        "the rest of out_ptr; check the grid covers the whole buffer and the store mask's bound"
    )
    assert finding.line == first + 3
    with interpret() as session:
        two_stores_kernel_clean[(4,)](np.zeros(64, np.float32), 64, BLOCK=16)
    assert session.trace[0].findings == []
