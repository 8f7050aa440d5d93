"""Kernels and helpers shared by the magic's tests."""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]

# The kernels the tests launch, defined in a cell of their own like a user would.
KERNELS = """\
import numpy as np
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)

@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)

@triton.jit
def unmasked_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(out_ptr + offsets, x)

@triton.jit
def shape_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n) + tl.zeros((2 * BLOCK,), tl.float32)
    tl.store(out_ptr + offsets, x, mask=offsets < n)

x = np.arange(1000, dtype=np.float32)
y = np.ones(1000, dtype=np.float32)
out = np.zeros(1000, dtype=np.float32)
"""


def line_of(source: str, text: str, *, first_line: int = 1) -> int:
    """The line number of the first line of `source` containing `text` (the cell's first line is `first_line`)."""
    for number, line in enumerate(source.splitlines(), start=first_line):
        if text in line:
            return number
    raise ValueError(f"{text!r} not in source")


def notebook(*sources: str) -> nbformat.NotebookNode:
    """A notebook of code cells."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return nb


def text_of(cell: nbformat.NotebookNode) -> str:
    """Everything a cell printed or displayed as text, and its error, as one string."""
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("display_data", "execute_result"):
            parts.append(output.data.get("text/plain", ""))
        elif output.output_type == "error":
            parts.append("\n".join(output.traceback))
    return "\n".join(parts)


def errors_of(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [output for output in cell.outputs if output.output_type == "error"]
