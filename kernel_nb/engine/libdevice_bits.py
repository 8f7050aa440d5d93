"""libdevice's integer and bit functions, reinterpretations and float classification, on numpy.

Each is exact and follows the PTX instruction libdevice compiles to (clz, popc, brev, prmt, mul.hi,
mul24 via bfe, sad, bfind): wrap-around integer arithmetic, no undefined cases.
"""

from __future__ import annotations

import numpy as np

U32, U64 = np.uint32, np.uint64
_M1 = [U64(0x5555555555555555), U64(0x3333333333333333), U64(0x0F0F0F0F0F0F0F0F)]


def unsigned(x: np.ndarray) -> np.ndarray:
    """The same bits as an unsigned integer of the same width."""
    return x.view(U32 if x.dtype.itemsize == 4 else U64)


def popc(x: np.ndarray) -> np.ndarray:
    v = unsigned(x).astype(U64)
    v = v - ((v >> U64(1)) & _M1[0])
    v = (v & _M1[1]) + ((v >> U64(2)) & _M1[1])
    v = (v + (v >> U64(4))) & _M1[2]
    return ((v * U64(0x0101010101010101)) >> U64(56)).astype(np.int32)


def clz(x: np.ndarray) -> np.ndarray:
    """Leading zeros: 32 (or 64) minus the bit length, from fp64's exact exponent of 32-bit halves."""
    v = unsigned(x).astype(U64)
    bits = 8 * x.dtype.itemsize
    high, low = (v >> U64(32)), (v & U64(0xFFFFFFFF))
    _, e_high = np.frexp(high.astype(np.float64))  # exact: < 2**32
    _, e_low = np.frexp(low.astype(np.float64))
    length = np.where(high != 0, 32 + e_high, e_low)  # frexp(0) gives exponent 0
    return (bits - length).astype(np.int32)


def brev(x: np.ndarray) -> np.ndarray:
    v = unsigned(x).astype(U64)
    for shift, mask in ((1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
                        (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)):  # fmt: skip
        m, s = U64(mask), U64(shift)
        v = ((v >> s) & m) | ((v & m) << s)
    if x.dtype.itemsize == 4:
        v = v >> U64(32)
        return v.astype(U32).view(x.dtype)
    return v.view(x.dtype)


def ffs(x: np.ndarray) -> np.ndarray:
    """1 + index of the lowest set bit, 0 for 0."""
    v = unsigned(x).astype(U64)
    lowest = v & (~v + U64(1))
    return np.where(v == 0, 0, 64 - clz(lowest.view(np.int64))).astype(np.int32)


def byte_perm(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """prmt.b32 x, y, s & 0x7777: byte n of the result is byte (s >> 4n) & 7 of y:x."""
    pool = (unsigned(y).astype(U64) << U64(32)) | unsigned(x).astype(U64)
    sel = unsigned(s).astype(U64)
    out = np.zeros(pool.shape, dtype=U64)
    for n in range(4):
        index = (sel >> U64(4 * n)) & U64(7)
        byte = (pool >> (index * U64(8))) & U64(0xFF)
        out |= byte << U64(8 * n)
    return out.astype(U32).view(np.int32)


def mulhi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The high half of the full product (mul.hi.{s,u}{32,64})."""
    if x.dtype.itemsize == 4:
        wide = np.int64 if x.dtype == np.int32 else U64
        return ((x.astype(wide) * y.astype(wide)) >> wide(32)).astype(x.dtype)
    hi = _umul64hi(unsigned(x), unsigned(y))
    if x.dtype == np.int64:
        # signed high half = unsigned high half - (x < 0 ? y : 0) - (y < 0 ? x : 0), mod 2**64
        hi = hi - np.where(x < 0, unsigned(y), U64(0)) - np.where(y < 0, unsigned(x), U64(0))
    return hi.view(x.dtype)


def _umul64hi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    mask = U64(0xFFFFFFFF)
    a0, a1, b0, b1 = a & mask, a >> U64(32), b & mask, b >> U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    middle = (p00 >> U64(32)) + (p01 & mask) + (p10 & mask)
    return p11 + (p01 >> U64(32)) + (p10 >> U64(32)) + (middle >> U64(32))


def mul24(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Low 32 bits of the product of the low 24 bits (sign-extended for int32, as bfe.s32 does)."""
    if x.dtype == np.int32:
        a = (x.astype(np.int64) << 40) >> 40
        b = (y.astype(np.int64) << 40) >> 40
    else:
        a, b = x.astype(np.int64) & 0xFFFFFF, y.astype(np.int64) & 0xFFFFFF
    return ((a * b) & 0xFFFFFFFF).astype(U32).view(x.dtype)


def sad(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """sad.{s,u}32: z + |x - y| (the difference taken exactly), wrapped to 32 bits."""
    diff = np.abs(x.astype(np.int64) - y.astype(np.int64))
    total = (diff + unsigned(z).astype(np.int64)) & 0xFFFFFFFF
    return total.astype(U32).view(np.int32 if x.dtype == np.int32 else U32)


def hadd(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(x + y) >> 1 without overflow: (x & y) + ((x ^ y) >> 1), arithmetic shift for int32."""
    return ((x & y) + ((x ^ y) >> x.dtype.type(1))).astype(x.dtype)


def rhadd(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(x + y + 1) >> 1 without overflow: (x | y) - ((x ^ y) >> 1)."""
    return ((x | y) - ((x ^ y) >> x.dtype.type(1))).astype(x.dtype)


def iabs(x: np.ndarray) -> np.ndarray:
    """abs.s32/s64: |INT_MIN| wraps to INT_MIN."""
    return np.where(x < 0, (~x) + x.dtype.type(1), x).astype(x.dtype)


def hiloint2double(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    bits = (unsigned(hi).astype(U64) << U64(32)) | unsigned(lo).astype(U64)
    return bits.view(np.float64)


def double2hiint(x: np.ndarray) -> np.ndarray:
    return (x.view(U64) >> U64(32)).astype(U32).view(np.int32)


def double2loint(x: np.ndarray) -> np.ndarray:
    return (x.view(U64) & U64(0xFFFFFFFF)).astype(U32).view(np.int32)


def isnan(x: np.ndarray) -> np.ndarray:
    return np.isnan(x).astype(np.int32)


def isinf(x: np.ndarray) -> np.ndarray:
    return np.isinf(x).astype(np.int32)


def isfinite(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x).astype(np.int32)


def signbit(x: np.ndarray) -> np.ndarray:
    return np.signbit(x).astype(np.int32)
