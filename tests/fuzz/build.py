"""What a fuzz case's expressions are evaluated with, in the child that runs it: the values users pass
(arrays of every kind, pointers, scalars), the bytes a launch must leave alone, and the results numpy
says a launch must give.

A case names its arguments as Python expressions (`readonly(data("float32", 300))`); `namespace()`
is what they are evaluated in. Everything here runs in a forked child, one case per process, so a
value that crashes the process on use crashes only its case.
"""

from __future__ import annotations

import ctypes
import fractions
import hashlib
import os
import tempfile
from decimal import Decimal
from typing import Any

import ml_dtypes
import numpy as np

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    byte_bounds = np.byte_bounds

ML_DTYPES = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "int4": ml_dtypes.int4,
}


def dtype_of(name: str) -> np.dtype:
    return np.dtype(ML_DTYPES.get(name, name))


def data(dtype: str, n: int, start: int = 0) -> np.ndarray:
    """`n` distinct, exactly representable values of `dtype` (small integers, halves for floats)."""
    dt = dtype_of(dtype)
    index = np.arange(start, start + n, dtype=np.int64)
    if dt == np.bool_:
        return (index % 3 == 0).astype(np.bool_)
    if dt.kind in "iu":
        bits = 8 * dt.itemsize
        span = 1 << min(bits - (dt.kind == "i"), 30)
        return (index % span).astype(dt)
    if dt.itemsize == 1:  # fp8: a few dozen exact values
        return ((index % 29) - 14).astype(np.float32).astype(dt)
    return ((index % 997) * 0.5 - 100.0).astype(np.float32).astype(dt)


def zeros(dtype: str, n: int) -> np.ndarray:
    return np.zeros(n, dtype_of(dtype))


def readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def memmap(a: np.ndarray, mode: str) -> np.memmap:
    """`a` as a memory-mapped file opened with `mode` ("r": a read-only mapping)."""
    fd, path = tempfile.mkstemp(suffix=".bin")
    with os.fdopen(fd, "wb") as f:
        f.write(a.tobytes())
    mapped = np.memmap(path, dtype=a.dtype, mode=mode, shape=a.shape)
    os.unlink(path)  # the mapping outlives the name: no file is left behind
    return mapped


def frombytes(a: np.ndarray) -> np.ndarray:
    """`a`'s values in an array over an immutable `bytes` object."""
    return np.frombuffer(a.tobytes(), dtype=a.dtype)


def big_endian(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder(">"))


def _filled(n: int, value: int, dtype: np.dtype) -> np.ndarray:
    """n copies of `value` as `dtype` (wrapped round for unsigned types)."""
    return np.full(n, value, np.int64).astype(dtype)


def spread(a: np.ndarray, step: int) -> np.ndarray:
    """`a`'s values as a view with stride `step` into a larger buffer (gaps filled with -7)."""
    base = _filled(max(len(a) * step, 1), -7, a.dtype)
    base[::step][: len(a)] = a
    return base[::step][: len(a)]


def backwards(a: np.ndarray) -> np.ndarray:
    """`a`'s values as a view with a negative stride."""
    return a[::-1].copy()[::-1]


def inside(a: np.ndarray, before: int, after: int = 16) -> np.ndarray:
    """`a`'s values as a view that starts `before` elements into a larger buffer."""
    base = _filled(before + len(a) + after, -9, a.dtype)
    base[before : before + len(a)] = a
    return base[before : before + len(a)]


def misaligned(a: np.ndarray) -> np.ndarray:
    """`a`'s values in an array whose data starts one byte past an aligned address."""
    raw = np.zeros(a.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + 1
    out = raw[start : start + a.nbytes].view(a.dtype)
    out[...] = a
    return out


def structured(n: int) -> np.ndarray:
    out = np.zeros(n, dtype=[("x", np.float32), ("y", np.int32)])
    out["x"] = np.arange(n)
    return out


def objects(n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    out[:] = [float(i) for i in range(n)]
    return out


def address(value: Any) -> int:
    """The address of an array's element 0."""
    if isinstance(value, np.ndarray):
        return int(value.ctypes.data)
    return int(value.data_ptr())


def distance(a: Any, b: Any) -> int:
    """How many elements of `a` lie between `a`'s and `b`'s first elements (`a + d` is `b`)."""
    return (address(b) - address(a)) // itemsize(a)


def stride(value: Any, axis: int) -> int:
    """An array's stride along `axis`, in elements."""
    if isinstance(value, np.ndarray):
        return value.strides[axis] // value.dtype.itemsize
    return int(value.stride(axis))


def itemsize(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.dtype.itemsize
    return int(value.element_size())


def torch_of(a: np.ndarray, **kwargs: Any) -> Any:
    """A torch tensor over `a`'s memory (bf16 and fp8 through their bits)."""
    import torch

    special = {
        "bfloat16": (np.int16, torch.bfloat16),
        "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
        "float8_e5m2": (np.uint8, torch.float8_e5m2),
    }
    if a.dtype.name in special:
        bits, dtype = special[a.dtype.name]
        out = torch.from_numpy(a.view(bits)).view(dtype)
    else:
        out = torch.from_numpy(a)
    if kwargs.get("requires_grad"):
        out.requires_grad_(True)
    return out


def as_numpy(value: Any) -> np.ndarray | None:
    """A numpy view or copy of an array's elements, whatever library holds it; None for a non-array."""
    if isinstance(value, np.ndarray):
        return value
    if type(value).__module__.split(".")[0] == "torch":
        import torch

        if value.device.type != "cpu" or value.layout != torch.strided or value.is_quantized:
            return None
        flat = value.detach().reshape(-1).contiguous()
        if flat.dtype.is_complex:
            return None
        name = str(flat.dtype).removeprefix("torch.")
        target = np.dtype(ML_DTYPES.get(name, name)) if name != "bool" else np.dtype(np.bool_)
        raw = flat.view(torch.uint8).numpy() if flat.numel() else np.zeros(0, np.uint8)
        return raw.view(target).reshape(tuple(value.shape))
    base = getattr(value, "base", None)  # triton.reinterpret's wrapper
    if base is not None and hasattr(value, "dtype"):
        return as_numpy(base)
    return None


def arrays_in(value: Any) -> list[Any]:
    """Every array-like object in a value (tuple elements and wrapped bases included)."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in arrays_in(item)]
    if isinstance(value, np.ndarray) or hasattr(value, "data_ptr"):
        return [value]
    base = getattr(value, "base", None)
    if base is not None:
        return arrays_in(base)
    return []


def memory_spans(value: Any) -> list[tuple[int, int]]:
    """The byte ranges of caller memory a launch must leave as they were: the elements' span of each
    array and of the buffer it is a view into."""
    spans = []
    for leaf in arrays_in(value):
        if isinstance(leaf, np.ndarray):
            root = leaf
            while isinstance(root.base, np.ndarray):
                root = root.base
            for a in {id(leaf): leaf, id(root): root}.values():
                if a.size and a.dtype != object:
                    lo, hi = byte_bounds(a)
                    spans.append((int(lo), int(hi)))
        elif _torch_host_memory(leaf):
            storage = leaf.untyped_storage()
            spans.append((int(storage.data_ptr()), int(storage.data_ptr()) + int(storage.nbytes())))
    return spans


def _torch_host_memory(value: Any) -> bool:
    """A torch tensor with elements in host memory (not meta, sparse or quantized)."""
    if type(value).__module__.split(".")[0] != "torch":
        return False
    return (
        value.device.type == "cpu"
        and str(value.layout) == "torch.strided"
        and not value.is_quantized
        and value.numel() > 0
    )


def snapshot(spans: list[tuple[int, int]]) -> list[bytes]:
    return [ctypes.string_at(lo, hi - lo) for lo, hi in spans]


def digest(value: Any) -> str | None:
    """A hash of an array's elements (the same for the same values held by numpy or torch)."""
    array = as_numpy(value)
    if array is None:
        return None
    return hashlib.sha256(np.ascontiguousarray(array).view(np.uint8).tobytes()).hexdigest()[:16]


def same_values(actual: Any, expected: np.ndarray) -> bool:
    """Whether an array holds exactly `expected` (bit for bit, in the array's own dtype)."""
    array = as_numpy(actual)
    if array is None:
        return False
    want = np.asarray(expected).astype(array.dtype).reshape(array.shape)
    return np.ascontiguousarray(array).tobytes() == np.ascontiguousarray(want).tobytes()


def copied(dst: np.ndarray, src: np.ndarray, count: int, shift: int = 0) -> np.ndarray:
    """What `dst` holds after its first `count` elements were loaded from `src[shift:]`."""
    out = np.array(dst, copy=True).reshape(-1)
    flat = np.asarray(src).reshape(-1)
    out[:count] = flat[shift : shift + count].astype(out.dtype)
    return out


def axpy(out: np.ndarray, alpha: Any, x: np.ndarray, y: np.ndarray, count: int) -> np.ndarray:
    result = np.array(out, copy=True)
    with np.errstate(all="ignore"):
        value = np.float32(float(alpha)) * x[:count].astype(np.float32) + y[:count].astype(np.float32)
    result[:count] = value.astype(result.dtype)
    return result


def many_statements(x: np.ndarray, count: int) -> np.ndarray:
    """What many_statements_kernel stores, computed with the same operations in float32."""
    out = np.zeros(len(x), np.float32)
    x = x[:count].astype(np.float32)
    f32 = np.float32
    a = x + f32(1.0)
    b = a * f32(2.0)
    c = b - x
    d = c * f32(0.5)
    e = d + a
    f = e - b
    g = f * f32(3.0)
    h = g + c
    i = h - d
    j = i * f32(0.25)
    k = j + e
    m = k - f
    o = m * f32(2.0)
    p = o + g
    q = p - h
    r = q * f32(0.5)
    s = r + i
    t = s - j
    u = t * f32(2.0)
    v = u + k
    w = v - m
    y = w * f32(0.5)
    z = y + o
    a2 = z - p
    b2 = a2 * f32(2.0)
    c2 = b2 + q
    d2 = c2 - r
    out[:count] = d2 - s + t
    return out


class RaisingGrid:
    """A grid callable that fails as user code fails."""

    def __call__(self, meta: dict[str, Any]) -> Any:
        raise RuntimeError("grid computation failed")


def namespace() -> dict[str, Any]:
    """What a case's expressions are evaluated in."""
    import triton
    import triton.language as tl

    from tests.fuzz import kernels

    names: dict[str, Any] = {
        "np": np,
        "ml_dtypes": ml_dtypes,
        "triton": triton,
        "tl": tl,
        "K": kernels,
        "Decimal": Decimal,
        "Fraction": fractions.Fraction,
        "RaisingGrid": RaisingGrid,
    }
    try:
        import torch

        names["torch"] = torch
    except ImportError:
        pass
    helpers = [data, zeros, readonly, memmap, frombytes, big_endian, spread, backwards, inside, misaligned,
               structured, objects, address, distance, stride, torch_of, copied, axpy, many_statements]  # fmt: skip
    names.update((helper.__name__, helper) for helper in helpers)
    return names
