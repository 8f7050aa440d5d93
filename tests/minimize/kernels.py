"""Kernels with planted bugs for minimize's tests, each with the launch that shows it."""

from __future__ import annotations

import contextlib

import numpy as np
import triton
import triton.language as tl

import kernel_nb
from kernel_nb.trace import Launch


@triton.jit
def add_unmasked_x(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def add_masked(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


@triton.jit
def overlapping_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * (BLOCK // 2) + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + pid, mask=mask)


@triton.jit
def row_log_sum(x_ptr, out_ptr, stride_row, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=1.0)
    logs = tl.log(x)
    total = tl.sum(tl.where(mask, logs, 0.0), axis=0)
    tl.store(out_ptr + row, total)


@triton.jit
def column_sums(x_ptr, out_ptr, n_rows, stride_row, stride_col, BLOCK: tl.constexpr):
    col = tl.program_id(0)
    rows = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + rows * stride_row + col * stride_col, mask=rows < n_rows)
    tl.store(out_ptr + col, tl.sum(x, axis=0))


@triton.jit
def histogram_without_atomics(x_ptr, counts_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    bins = tl.minimum((x * BINS).to(tl.int32), BINS - 1)
    counts = tl.load(counts_ptr + bins, mask=mask)
    tl.store(counts_ptr + bins, counts + 1, mask=mask)


def interpreted(launch: callable) -> Launch:
    """The launch `launch()` makes, interpreted (failed or not)."""
    with kernel_nb.interpret() as session, contextlib.suppress(kernel_nb.KernelError):
        launch()
    return session.trace[-1]


def out_of_bounds_at_the_last_program(n: int = 4096 * 64 + 7, grid_function: bool = False) -> Launch:
    rng = np.random.default_rng(0)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    grid = (
        (lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)) if grid_function else (triton.cdiv(n, 1024),)
    )
    return interpreted(lambda: add_unmasked_x[grid](x, y, out, n, BLOCK=1024))


def race_between_neighbours(n: int = 1 << 14) -> Launch:
    x, out = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
    return interpreted(lambda: overlapping_copy[(triton.cdiv(n, 128),)](x, out, n, BLOCK=256))


def nan_from_one_row(rows: int = 512, cols: int = 700, bad: tuple[int, int] = (300, 17)) -> Launch:
    x = np.random.default_rng(1).random((rows, cols), dtype=np.float32) + 0.5
    x[bad] = -2.0
    out = np.zeros(rows, np.float32)
    return interpreted(lambda: row_log_sum[(rows,)](x, out, cols, cols, BLOCK=1024))


def histogram_race(programs: int = 64, block: int = 64) -> Launch:
    n = programs * block
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    counts = np.zeros(16, np.int32)
    return interpreted(lambda: histogram_without_atomics[(programs,)](x, counts, n, BINS=16, BLOCK=block))
