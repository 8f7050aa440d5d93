"""A store whose mask drops lanes its load kept, leaving elements no program writes; the twin
whose store takes the load's mask."""

import numpy as np
import triton
import triton.language as tl

from tests.engine import kernels as k


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, 2 * x, mask=offsets < n - 1)


@triton.jit
def scale_kernel_clean(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, 2 * x, mask=offsets < n)


@triton.jit
def split_parity_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, x, mask=(offsets < n) & (offsets % 2 == 0))
    tl.store(out_ptr + offsets, -x, mask=(offsets < n) & (offsets % 2 == 1))


def test_a_store_mask_one_short_and_its_clean_twin(interpret):
    x = np.ones(40, np.float32)
    with interpret() as session:
        scale_kernel[(3,)](x, np.zeros(40, np.float32), 40, BLOCK=16)
    findings = session.trace[0].findings
    assert [f.kind for f in findings] == ["uncovered", "store_mask_narrower"]
    finding = findings[1]
    line = scale_kernel.fn.__code__.co_firstlineno + 4
    assert finding.message == (
        f"scale_kernel:{line} pid=(2,0,0): tl.store to out_ptr drops lanes [7] that the tl.load of x_ptr "
        f"at line {line - 1} kept for the same offsets, and no program writes out_ptr elements [39, 40); "
        "give the store the load's mask"
    )
    assert (finding.pid, finding.line, finding.arg, finding.elements.tolist()) == (
        (2, 0, 0),
        line,
        "out_ptr",
        [39],
    )
    out = np.zeros(40, np.float32)
    with interpret() as session:
        scale_kernel_clean[(3,)](x, out, 40, BLOCK=16)
    assert session.trace[0].findings == []
    assert out.tolist() == [2.0] * 40


def test_dropped_lanes_another_store_writes_are_not_findings(interpret):
    out = np.zeros(40, np.float32)
    with interpret() as session:
        split_parity_kernel[(3,)](np.ones(40, np.float32), out, 40, BLOCK=16)
    assert session.trace[0].findings == []
    assert out.tolist() == [1.0, -1.0] * 20


def test_the_repository_kernels_are_not_findings(interpret):
    n = 1000
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    with interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256),)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
        rows = x[:960].reshape(12, 80)
        k.softmax_kernel[(12,)](np.zeros_like(rows), rows, 80, 80, 80, BLOCK=128)
        k.stencil_kernel[(triton.cdiv(n, 128),)](x, np.zeros(n, np.float32), n, BLOCK=128)
    assert [launch.findings for launch in session.trace] == [[], [], []]
