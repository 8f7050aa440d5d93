"""Grid axes against the program ids a kernel reads: an axis of one program read while an output
stays partly unwritten, and an axis of several programs never read."""

import numpy as np
import triton
import triton.language as tl

from kernel_nb.checks import program_id_reads
from kernel_nb.trace import SourceInfo
from tests.engine import kernels as k


@triton.jit
def _column_block(BLOCK: tl.constexpr):
    return tl.program_id(axis=1) * BLOCK + tl.arange(0, BLOCK)


@triton.jit
def tile_copy_kernel(src_ptr, dst_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = _column_block(BLOCK)
    mask = cols < n_cols
    tl.store(dst_ptr + row * n_cols + cols, tl.load(src_ptr + row * n_cols + cols, mask=mask), mask=mask)


def _line(kernel, offset):
    return kernel.fn.__code__.co_firstlineno + offset


def test_an_axis_of_one_program_read_in_a_helper_and_its_clean_twin(interpret):
    src = np.arange(4 * 64, dtype=np.float32).reshape(4, 64)
    with interpret() as session:
        tile_copy_kernel[(4,)](src, np.zeros_like(src), 64, BLOCK=16)
    [uncovered, finding] = session.trace[0].findings
    assert uncovered.kind == "uncovered"
    line = _line(_column_block, 2)
    assert finding.message == (
        f"tile_copy_kernel:{line}: tl.program_id(1) is read, but the grid (4, 1, 1) has 1 program on "
        "axis 1 (y): every program sees 0 there, and dst_ptr stays partly unwritten; launch a grid "
        "with axis 1 (e.g. (x, triton.cdiv(n, BLOCK)))"
    )
    assert (finding.kind, finding.severity, finding.line, finding.arg) == (
        "unused_grid_axis",
        "warning",
        line,
        "dst_ptr",
    )
    dst = np.zeros_like(src)
    with interpret() as session:
        tile_copy_kernel[(4, 4)](src, dst, 64, BLOCK=16)
    assert session.trace[0].findings == []
    np.testing.assert_array_equal(dst, src)


def test_an_axis_of_one_program_that_covers_everything_is_not_a_finding(interpret):
    src = np.arange(4 * 16, dtype=np.float32).reshape(4, 16)
    with interpret() as session:
        tile_copy_kernel[(4,)](src, np.zeros_like(src), 16, BLOCK=16)
    assert session.trace[0].findings == []


def test_an_axis_never_read_and_its_clean_twin(interpret):
    n = 1000
    x = np.ones(n, np.float32)
    with interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256), 3)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
    [finding] = session.trace[0].findings
    assert finding.message == (
        "add_kernel: the grid has 3 programs on axis 1 (y), but the kernel never reads "
        "tl.program_id(1): programs that differ only in axis 1 write the same elements, so the work "
        "is done 3 times; read tl.program_id(1) in the offsets or launch 1 program on axis 1"
    )
    assert (finding.kind, finding.line) == ("unused_grid_axis", _line(k.add_kernel, 0))
    with interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256),)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
        k.grid3d_kernel[(2, 3, 4)](np.zeros(24, np.int32), GX=2, GY=3)
    assert [launch.findings for launch in session.trace] == [[], []]


def test_reads_are_found_with_their_axes_and_lines():
    text = "def f(a):\n    x = tl.program_id(0)\n    y = tl.program_id(axis=2)\n    z = tl.program_id(a)\n"
    reads = program_id_reads(SourceInfo("f", "f.py", 10, text))
    assert reads == [(0, "f.py", 11), (2, "f.py", 12), (None, "f.py", 13)]
