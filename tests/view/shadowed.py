"""A launch run with an fp64 shadow, for the viewer's precision tests: `gram_distances` (the engine's
shadow tests' kernel), whose tf32 dot `g` rounds and whose `d = na + nb - 2 g` cancels."""

from __future__ import annotations

from typing import Any

import numpy as np

from kernel_nb.trace import Launch, Trace

M, N, D, BM = 40, 16, 16, 16


def points(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Points far from the origin, and points close to the first N of them."""
    rng = np.random.default_rng(seed)
    x = (10 + rng.random((M, D))).astype(np.float32)
    y = (x[:N] + 0.01 * rng.standard_normal((N, D))).astype(np.float32)
    return x, y


def gram_trace(**options: Any) -> Trace:
    """gram_distances over 3 programs (the last one's rows past M masked), with `shadow="fp64"`."""
    import triton

    import kernel_nb
    from tests.engine.shadow_kernels import gram_distances

    x, y = points()
    out = np.zeros((M, N), np.float32)
    with kernel_nb.interpret(shadow="fp64", **options) as session:
        gram_distances[(triton.cdiv(M, BM),)](x, y, out, M, N=N, D=D, BM=BM)
    return session.trace


def line_of(launch: Launch, name: str) -> int:
    """The source line of the statement assigning `name`."""
    return next(s.line for s in launch.statements if s.name == name and s.of is None)
