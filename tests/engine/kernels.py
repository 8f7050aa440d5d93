"""Test kernels, defined in a module of their own (launches of kernels from other modules must work)."""

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
def add_kernel_no_mask(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    y = tl.load(y_ptr + offsets)
    tl.store(out_ptr + offsets, x + y)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row_start = in_ptr + row * in_row_stride
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    row_vals = tl.load(row_start + cols, mask=mask, other=-float("inf"))
    row_max = tl.max(row_vals, axis=0)
    numerator = tl.exp(row_vals - row_max)
    denominator = tl.sum(numerator, axis=0)
    softmax = numerator / denominator
    tl.store(out_ptr + row * out_row_stride + cols, softmax, mask=mask)


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k * BLOCK_K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k * BLOCK_K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def layer_norm_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    _mean = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        a = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def causal_attention_fwd(
    Q, K, V, Out, seq_len, sm_scale, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    base = head * seq_len * D
    q = tl.load(Q + base + offs_m[:, None] * D + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    hi = (start_m + 1) * BLOCK_M
    for start_n in range(0, hi, BLOCK_N):
        k = tl.load(K + base + (start_n + offs_n)[None, :] * D + offs_d[:, None])
        qk = tl.dot(q, k, input_precision="ieee") * sm_scale
        qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.exp(qk - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + (start_n + offs_n)[:, None] * D + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + base + offs_m[:, None] * D + offs_d[None, :], acc)


@triton.jit
def _scale_shift(x, scale, shift):
    scaled = x * scale
    shifted = scaled + shift
    return shifted


@triton.jit
def helper_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = _scale_shift(x, scale, 1.0)
    tl.store(out_ptr + offsets, y, mask=mask)


@triton.jit
def _pick_larger_magnitude(a, b):
    bigger = tl.abs(a) > tl.abs(b)
    return tl.where(bigger, a, b)


@triton.jit
def max_abs_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    m = tl.reduce(x, 0, _pick_larger_magnitude)
    tl.store(out_ptr + pid, m)


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    c = tl.cumsum(x, axis=0)
    tl.store(out_ptr + offsets, c)


@triton.jit
def histogram_kernel(x_ptr, hist_ptr, total_ptr, max_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0)
    tl.atomic_add(hist_ptr + x % BINS, 1, mask=mask)
    tl.atomic_add(total_ptr, tl.sum(tl.where(mask, x, 0), axis=0))
    tl.atomic_max(max_ptr, tl.max(tl.where(mask, x, 0), axis=0))


@triton.jit
def rand_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r = tl.rand(seed, offsets)
    tl.store(out_ptr + offsets, r, mask=offsets < n)


@triton.jit
def axpy_kernel(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    scaled = alpha * x
    tl.store(y_ptr + offsets, scaled + y, mask=mask)


@triton.jit
def grid3d_kernel(out_ptr, GX: tl.constexpr, GY: tl.constexpr):
    x = tl.program_id(0)
    y = tl.program_id(1)
    z = tl.program_id(2)
    nx = tl.num_programs(0)
    value = x + 10 * y + 100 * z + 1000 * nx
    tl.store(out_ptr + (z * GY + y) * GX + x, value)


@triton.jit
def assert_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    tl.device_assert(x >= 0, "x must be non-negative")


@triton.jit
def print_kernel(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK))
    tl.device_print("x", x)
    print("program", pid)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


@triton.jit
def strided_copy_kernel(src_ptr, dst_ptr, rows, cols, src_stride_r, src_stride_c, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    mask = c < cols
    v = tl.load(src_ptr + row * src_stride_r + c * src_stride_c, mask=mask)
    tl.store(dst_ptr + row * cols + c, v, mask=mask)


@triton.jit
def tuple_kernel(ptrs, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    a = tl.load(ptrs[0] + offsets, mask=mask)
    b = tl.load(ptrs[1] + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * b, mask=mask)


@triton.jit
def slow_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr, STEPS: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    acc = x
    for _i in range(STEPS):
        acc = acc * 0.5 + x
    tl.store(out_ptr + offsets, acc)


@triton.jit
def stencil_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    left = tl.load(x_ptr + offsets - 1, mask=(offsets >= 1) & (offsets < n), other=0.0)
    middle = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    right = tl.load(x_ptr + offsets + 1, mask=offsets + 1 < n, other=0.0)
    tl.store(out_ptr + offsets, left + middle + right, mask=offsets < n)


@triton.jit
def scale_columns_kernel(x_ptr, rows, cols, BLOCK: tl.constexpr):
    # program c scales column c in place: every program's range spans the others'
    col = tl.program_id(0)
    offsets = tl.arange(0, BLOCK) * cols + col
    mask = tl.arange(0, BLOCK) < rows
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(x_ptr + offsets, x * (col + 1.0), mask=mask)


@triton.jit
def twice_shared_kernel(x_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # every program reads all of w, twice
    cols = tl.arange(0, BLOCK)
    row = tl.program_id(0)
    w = tl.load(w_ptr + cols, mask=cols < n)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n)
    w_again = tl.load(w_ptr + cols, mask=cols < n)
    tl.store(out_ptr + row * n + cols, x * w + w_again, mask=cols < n)


@triton.jit
def bytes_view_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # copies float32 elements as their bytes through an int8 pointer
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = x_ptr.to(tl.pointer_type(tl.int8))
    dst = out_ptr.to(tl.pointer_type(tl.int8))
    raw = tl.load(src + offsets, mask=offsets < n * 4)
    tl.store(dst + offsets, raw, mask=offsets < n * 4)


@triton.jit
def _row_sum(x_ptr, row, stride, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(0, n, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n, other=0.0)
    return tl.sum(acc, 0)


@triton.jit
def triangle_kernel(x_ptr, out_ptr, counts_ptr, trace_ptr, n, BLOCK: tl.constexpr):
    # program r sums row r up to column r * BLOCK: the loop's trip count grows with the program id
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    steps = 0
    last = 0.0
    for start in range(0, (row + 1) * BLOCK, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0)
        scaled = tl.log(x)  # NaN for negative x: reported only by the programs still looping
        for _j in range(2):  # a uniform loop inside
            acc += x
        last = tl.sum(scaled, 0)
        tl.store(trace_ptr + row * 8 + steps + tl.arange(0, 2), tl.sum(acc, 0) + tl.zeros([2], tl.float32))
        steps += 1
    tl.store(out_ptr + row, tl.sum(acc, 0) + last)
    tl.store(counts_ptr + row, steps)
    tl.store(out_ptr + tl.num_programs(0) + row, _row_sum(x_ptr, row, n, (row + 1) * BLOCK, BLOCK))


@triton.jit
def triangle_atomic_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, (row + 1) * BLOCK, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        tl.atomic_add(total_ptr + cols, tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0))


@triton.jit
def nested_triangle_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # both loops' trip counts depend on the program id
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, (row + 1) * BLOCK, BLOCK):
        for again in range(0, row % 3 + 1):
            cols = start + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * n + cols, mask=cols < n, other=0.0) * (again + 1)
    tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), acc)


@triton.jit
def fresh_each_iteration_kernel(out_ptr, BLOCK: tl.constexpr):
    # `total` is made afresh in every iteration and read after the loop only by `+=`: the record
    # of that statement shows each program's own last value
    pid = tl.program_id(0)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(pid + 1):
        total = tl.zeros([BLOCK], dtype=tl.float32) + i
    total += 1.0
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float32) + pid)


@triton.jit
def branch_in_masked_loop_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # the programs still running disagree on an `if` inside a loop whose trip count differs (all
    # agree in the first iteration, which every program runs)
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(pid + 1):
        if pid * i % 3 == 1:
            acc += tl.load(x_ptr + offsets)
        else:
            acc -= 1.0
    tl.store(out_ptr + offsets, acc)


@triton.jit
def tuple_in_masked_loop_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # the loop reads per-program values held in a tuple
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    pair = (tl.load(x_ptr + offsets), pid)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(pid + 1):
        acc += pair[0] * (i + pair[1])
    tl.store(out_ptr + offsets, acc)


@triton.jit
def overflow_in_masked_loop_kernel(out_ptr, BLOCK: tl.constexpr):
    # int32 products overflow only in the programs that loop long enough
    pid = tl.program_id(0)
    value = tl.full([BLOCK], 7, tl.int32) + tl.arange(0, BLOCK)
    for _ in range(2 * pid + 1):
        value = value * 1000
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), value)


@triton.jit
def shared_counter_kernel(x_ptr, acc_ptr, BLOCK: tl.constexpr):
    # pointers and values the same in every program: each program still adds its own share
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.atomic_add(acc_ptr + offsets % 2, x)


@triton.jit
def scan_and_reduce_kernel(x_ptr, scan_ptr, max_ptr, min_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(scan_ptr + offsets, tl.cumsum(x, axis=0))
    tl.store(max_ptr + pid, tl.max(x, axis=0))
    tl.store(min_ptr + pid, tl.min(x, axis=0))


@triton.jit
def descriptor_scale_kernel(src_ptr, dst_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # blocks past the edges of the M x N arrays are padded on load and cut on store
    src = tl.make_tensor_descriptor(src_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    dst = tl.make_tensor_descriptor(dst_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    row, col = tl.program_id(0) * BLOCK_M, tl.program_id(1) * BLOCK_N
    tile = src.load([row, col])
    dst.store([row, col], tile * 2.0)


@triton.jit
def transposed_tile_kernel(x_ptr, out_ptr, rows, COLS: tl.constexpr, BLOCK: tl.constexpr):
    # a block of x's rows read down its columns (x^T, as attention reads K), rows past `rows` masked
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.arange(0, COLS)
    t = tl.load(x_ptr + r[None, :] * COLS + c[:, None], mask=r[None, :] < rows, other=-1.0)
    block = tl.program_id(0) * COLS * BLOCK + c[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    tl.store(out_ptr + block, t * 2.0)


@triton.jit
def store_twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x, mask=mask)
    tl.store(out_ptr + offsets, x * 2, mask=mask)


@triton.jit
def counted_loop_kernel(trips_ptr, out_ptr):
    """A loop whose trip count the data sets: two records per iteration (the loop variable, acc)."""
    pid = tl.program_id(0)
    acc = pid * 0.0
    for _i in range(tl.load(trips_ptr + pid)):
        acc += 1.0
    tl.store(out_ptr + pid, acc)
