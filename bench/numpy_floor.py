"""The bench cases as plain vectorised numpy, fp32: the floor an interpreter of the same kernels is held to.

Each function takes the numpy inputs that `bench.bench_engine.build_case` makes and returns what the
kernel writes, in the order of the case's `outputs`.
"""

from __future__ import annotations

import numpy as np


def vector_add(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return x + y


def softmax(x: np.ndarray) -> np.ndarray:
    numerator = np.exp(x - x.max(axis=1, keepdims=True))
    return numerator / numerator.sum(axis=1, keepdims=True)


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


def layer_norm(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Normalised rows, their means and reciprocal standard deviations."""
    mean = x.mean(axis=1, dtype=np.float32)
    centred = x - mean[:, None]
    var = np.mean(centred * centred, axis=1, dtype=np.float32)
    rstd = (1 / np.sqrt(var + np.float32(eps))).astype(np.float32)
    return centred * rstd[:, None] * w + b, mean, rstd


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """softmax(q @ k.T * scale, keys after the query masked) @ v, head by head: (heads, seq, d)."""
    seq = q.shape[1]
    future = np.triu(np.ones((seq, seq), dtype=bool), k=1)
    out = np.empty_like(q)
    for head in range(q.shape[0]):
        scores = q[head] @ k[head].T * np.float32(scale)
        scores[future] = -np.inf
        out[head] = softmax(scores) @ v[head]
    return out
