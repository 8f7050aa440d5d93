"""The kernels the fuzz cases launch: ordinary ones that users' bad arguments are thrown at, and hostile
ones (wild pointers, kernels that raise, never end or allocate hugely).

The module is imported by both children, kernel_nb's and stock TRITON_INTERPRET=1's, so it holds
plain `@triton.jit` kernels only.
"""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@triton.jit
def strided_copy_kernel(src_ptr, dst_ptr, n, src_stride, dst_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs * dst_stride, tl.load(src_ptr + offs * src_stride, mask=mask), mask=mask)


@triton.jit
def copy_2d_kernel(
    src_ptr, dst_ptr, rows, cols, src_s0, src_s1, dst_s0, dst_s1,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):  # fmt: skip
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]
    mask = (r < rows) & (c < cols)
    x = tl.load(src_ptr + r * src_s0 + c * src_s1, mask=mask)
    tl.store(dst_ptr + r * dst_s0 + c * dst_s1, x, mask=mask)


@triton.jit
def count_kernel(counter_ptr):
    """Every program adds one: the counter says how many programs ran."""
    tl.atomic_add(counter_ptr, 1)


@triton.jit
def shifted_load_kernel(src_ptr, dst_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + shift + offs, mask=mask), mask=mask)


@triton.jit
def shifted_store_kernel(src_ptr, dst_ptr, n, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + shift + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def address_load_kernel(dst_ptr, address, n, BLOCK: tl.constexpr):
    """Loads from an address the caller passed as an integer (int_to_ptr)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    ptr = address.to(tl.pointer_type(tl.float32))
    tl.store(dst_ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


@triton.jit
def roundtrip_load_kernel(src_ptr, dst_ptr, n, shift, BLOCK: tl.constexpr):
    """Takes the argument's address as an integer, moves it by `shift` elements and loads from there."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    address = src_ptr.to(tl.int64, bitcast=True) + shift * 4
    ptr = address.to(tl.pointer_type(tl.float32))
    tl.store(dst_ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


@triton.jit
def misaligned_load_kernel(src_ptr, dst_ptr, n, byte_shift, BLOCK: tl.constexpr):
    """Moves a float32 pointer by a byte count: a misaligned load unless the count is a multiple of 4."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    raw = src_ptr.to(tl.pointer_type(tl.uint8), bitcast=True) + byte_shift
    ptr = raw.to(tl.pointer_type(tl.float32), bitcast=True)
    tl.store(dst_ptr + offs, tl.load(ptr + offs, mask=mask), mask=mask)


@triton.jit
def undefined_name_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src_ptr + offs, mask=mask)
    tl.store(dst_ptr + offs, no_such_helper(x), mask=mask)  # noqa: F821


@triton.jit
def device_assert_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src_ptr + offs, mask=mask, other=-1.0)
    tl.device_assert(x < 0, "x must be negative")
    tl.store(dst_ptr + offs, x, mask=mask)


@triton.jit
def static_assert_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK > 4096, "BLOCK must exceed 4096")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


@triton.jit
def shape_mismatch_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    wide = tl.arange(0, 2 * BLOCK)
    x = tl.load(src_ptr + offs, mask=wide < n)
    tl.store(dst_ptr + offs, x, mask=offs < n)


@triton.jit
def huge_tensor_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    """A block of 2**22 elements, past what Triton allows in one tensor (2**20)."""
    acc = tl.zeros((4194304,), dtype=tl.float32)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask) + tl.sum(acc, axis=0), mask=mask)


@triton.jit
def block_range_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    """`range` over a block, which Triton rejects: a loop bound must be a scalar."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src_ptr + offs, mask=mask, other=0).to(tl.int32)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    for _ in range(x):
        acc += 1
    tl.store(dst_ptr + offs, acc.to(tl.float32), mask=mask)


@triton.jit
def block_index_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    """Indexes a block with a block, which Triton rejects."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src_ptr + offs, mask=mask)
    tl.store(dst_ptr + offs, x[offs], mask=mask)


@triton.jit
def endless_for_kernel(dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for _ in range(0, n):
        acc += 1.0
    tl.store(dst_ptr + offs, acc)


@triton.jit
def endless_while_kernel(dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    i = 0
    while i < n:
        i = i * 1  # never grows: the loop does not end
    tl.store(dst_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32) + i)


@triton.jit
def noop_kernel(dst_ptr):
    tl.program_id(0)


@triton.jit
def many_statements_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Thirty statements per program, each a block of BLOCK values to record."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    a = x + 1.0
    b = a * 2.0
    c = b - x
    d = c * 0.5
    e = d + a
    f = e - b
    g = f * 3.0
    h = g + c
    i = h - d
    j = i * 0.25
    k = j + e
    m = k - f
    o = m * 2.0
    p = o + g
    q = p - h
    r = q * 0.5
    s = r + i
    t = s - j
    u = t * 2.0
    v = u + k
    w = v - m
    y = w * 0.5
    z = y + o
    a2 = z - p
    b2 = a2 * 2.0
    c2 = b2 + q
    d2 = c2 - r
    tl.store(out_ptr + offs, d2 - s + t, mask=mask)
