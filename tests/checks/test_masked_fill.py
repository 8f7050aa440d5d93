"""Masked loads without other=: filled lanes that reach a reduction, a comparison or a store change
the result (found by running the program again with the lanes set otherwise); loads whose filled
lanes go nowhere, and loads with an explicit other=, are not findings."""

import ml_dtypes
import numpy as np
import triton
import triton.language as tl

from tests.engine import kernels as k


@triton.jit
def row_max_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
    tl.store(out_ptr + row, tl.max(x, axis=0))


@triton.jit
def row_max_kernel_clean(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.max(x, axis=0))


@triton.jit
def count_small_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.atomic_add(out_ptr, tl.sum((x < 0.5).to(tl.int32), axis=0))


@triton.jit
def count_small_kernel_clean(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.atomic_add(out_ptr, tl.sum(((x < 0.5) & (offsets < n)).to(tl.int32), axis=0))


def _line(kernel, offset):
    return kernel.fn.__code__.co_firstlineno + offset


def test_a_max_over_filled_lanes_and_its_clean_twin(interpret):
    x = -np.arange(1, 41, dtype=np.float32).reshape(4, 10)
    out = np.zeros(4, np.float32)
    with interpret() as session:
        row_max_kernel[(4,)](x, out, 10, BLOCK=16)
    [finding] = session.trace[0].findings
    line = _line(row_max_kernel, 4)
    assert finding.message == (
        f"row_max_kernel:{line} pid=(0,0,0): tl.load of x_ptr has no other=: its masked-off lanes "
        "[10, 11, 12, 13, 14, 15] hold 0 here and are undefined on the GPU, and they change the result: "
        f"with them set to inf, out_ptr elements [0] stored at line {line + 1} change; pass other= that "
        "their use ignores (-float('inf') for tl.max, float('inf') for tl.min, 0 for a sum) (checked in "
        "the first 2 programs whose masked loads filled lanes)"
    )
    assert (finding.kind, finding.severity, finding.pid, finding.line, finding.arg) == (
        "masked_fill_used",
        "warning",
        (0, 0, 0),
        line,
        "x_ptr",
    )
    assert finding.elements.tolist() == [10, 11, 12, 13, 14, 15]
    assert out.tolist() == [0.0] * 4  # the interpreter's 0 won: the bug the finding is about
    out = np.zeros(4, np.float32)
    with interpret() as session:
        row_max_kernel_clean[(4,)](x, out, 10, BLOCK=16)
    assert session.trace[0].findings == []
    assert out.tolist() == [-1.0, -11.0, -21.0, -31.0]


def test_a_comparison_of_filled_lanes_counts_them(interpret):
    x = np.full(100, 0.9, np.float32)
    out = np.zeros(1, np.int32)
    with interpret() as session:
        count_small_kernel[(4,)](x, out, 100, BLOCK=32)
    [finding] = session.trace[0].findings
    line = _line(count_small_kernel, 3)
    assert finding.message == (
        f"count_small_kernel:{line} pid=(3,0,0): tl.load of x_ptr has no other=: its masked-off lanes "
        "[4, 5, 6, 7, 8, 9, ... 28 in all] hold 0 here and are undefined on the GPU, and they change the "
        f"result: with them set to inf, out_ptr elements [0] written by atomic_add at line {line + 1} "
        "change; pass other= that their use ignores (-float('inf') for tl.max, float('inf') for tl.min, "
        "0 for a sum) (checked in the first program whose masked loads filled lanes)"
    )
    assert out.tolist() == [28]  # the 28 filled zeros counted as small
    out = np.zeros(1, np.int32)
    with interpret() as session:
        count_small_kernel_clean[(4,)](x, out, 100, BLOCK=32)
    assert session.trace[0].findings == []
    assert out.tolist() == [0]


def test_filled_lanes_that_go_nowhere_and_explicit_others_are_not_findings(interpret):
    n = 1000
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    with interpret() as session:
        k.add_kernel[(triton.cdiv(n, 256),)](x, x, np.zeros(n, np.float32), n, BLOCK=256)
        rows = x[:960].reshape(12, 80)
        k.softmax_kernel[(12,)](np.zeros_like(rows), rows, 80, 80, 80, BLOCK=128)
        a, b = x[: 30 * 20].reshape(30, 20), x[: 20 * 50].reshape(20, 50)
        c = np.zeros((30, 50), np.float32)
        k.matmul_kernel[(2, 4)](a, b, c, 30, 50, 20, 20, 1, 50, 1, 50, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    assert [launch.findings for launch in session.trace] == [[], [], []]


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
    print("row", row)
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@triton.jit
def gather_kernel(idx_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    idx = tl.load(idx_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.load(x_ptr + idx), mask=mask)


@triton.jit
def gather_kernel_clean(idx_ptr, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    idx = tl.load(idx_ptr + offsets, mask=mask, other=0)
    tl.store(out_ptr + offsets, tl.load(x_ptr + idx), mask=mask)


def test_bf16_lanes_are_filled_in_bf16_and_prints_are_not_repeated(interpret, capsys):
    x = np.ones((3, 10), ml_dtypes.bfloat16)
    with interpret() as session:
        row_sum_kernel[(3,)](x, np.zeros(3, ml_dtypes.bfloat16), 10, BLOCK=16)
    [finding] = session.trace[0].findings
    assert "with them set to inf, out_ptr elements [0] stored at line" in finding.message
    assert capsys.readouterr().out == "row [0]\nrow [1]\nrow [2]\n"


def test_the_last_program_is_checked_when_the_launch_kept_only_aggregates(interpret):
    with interpret(summary_bytes=0) as session:
        row_sum_kernel[(3,)](np.ones((3, 10), np.float32), np.zeros(3, np.float32), 10, BLOCK=16)
    launch = session.trace[0]
    [finding] = launch.findings
    assert launch.aggregated == 3 and finding.pid == (2, 0, 0)
    assert finding.message.endswith("(checked in the first program whose masked loads filled lanes)")


def test_a_filled_index_that_reaches_an_address_fails_the_program(interpret):
    idx = np.arange(20, dtype=np.int32)
    with interpret() as session:
        gather_kernel[(2,)](idx, np.ones(20, np.float32), np.zeros(20, np.float32), 20, BLOCK=16)
    [finding] = session.trace[0].findings
    line = _line(gather_kernel, 4)
    # the failure's own text is the memory guard's, quoted whole
    assert finding.message.startswith(
        f"gather_kernel:{line} pid=(1,0,0): tl.load of idx_ptr has no other=: its masked-off lanes "
        "[4, 5, 6, 7, 8, 9, ... 12 in all] hold 0 here and are undefined on the GPU, and they change the "
        f"result: with them set to -2147483648, the program fails (gather_kernel:{line + 1} pid=(1,0,0): "
    )
    assert finding.message.endswith(
        "); pass other= that their use ignores (-float('inf') for tl.max, float('inf') for tl.min, 0 for "
        "a sum) (checked in the first program whose masked loads filled lanes)"
    )
    with interpret() as session:
        gather_kernel_clean[(2,)](idx, np.ones(20, np.float32), np.zeros(20, np.float32), 20, BLOCK=16)
    assert session.trace[0].findings == []


@triton.jit
def counted_sum_kernel(count_ptr, x_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    count = tl.load(count_ptr + row, mask=row < rows)
    acc = 0.0
    for i in range(count):
        acc += tl.load(x_ptr + row * BLOCK + i)
    tl.store(out_ptr + row, acc, mask=row < rows)


def test_a_filled_loop_bound_does_not_run_for_ever(interpret):
    """The program past the rows reads its count from a filled lane: a positive fill runs the loop
    and changes nothing it stores (its store is masked off too), a large one would not end."""
    counts = np.array([2, 3], np.int32)
    out = np.zeros(2, np.float32)
    with interpret() as session:
        counted_sum_kernel[(3,)](counts, np.ones(24, np.float32), out, 2, BLOCK=8)
    assert session.trace[0].findings == []
    assert out.tolist() == [2.0, 3.0]


def _count_replays(monkeypatch):
    from kernel_nb.engine import perturb

    replayed = []
    original = perturb._Replayer.__call__

    def counted(self, pid, *args, **kwargs):
        replayed.append(pid)
        return original(self, pid, *args, **kwargs)

    monkeypatch.setattr(perturb._Replayer, "__call__", counted)
    return replayed


def test_a_last_program_not_kept_is_replayed_only_when_its_loads_left_lanes_out(interpret, monkeypatch):
    replayed = _count_replays(monkeypatch)
    # 64 programs, nothing kept: the last one's lane counts say whether its mask left lanes out
    x = np.random.default_rng(0).random(64 * 128 - 50).astype(np.float32)
    out = np.zeros(1, np.int32)
    with interpret(budget_bytes=0) as session:
        count_small_kernel[(64,)](x, out, x.size, BLOCK=128)
    [finding] = session.trace[0].findings
    assert finding.kind == "masked_fill_used" and finding.pid == (63, 0, 0)
    assert replayed and set(replayed) == {(63, 0, 0)}

    replayed.clear()
    full = np.random.default_rng(0).random(64 * 128).astype(np.float32)
    with interpret(budget_bytes=0) as session:
        count_small_kernel[(64,)](full, out, full.size, BLOCK=128)
    assert session.trace[0].findings == []
    assert replayed == []  # every lane of every load was active: nothing to replay


def test_no_replay_where_every_load_that_leaves_lanes_out_says_other(interpret, monkeypatch):
    replayed = _count_replays(monkeypatch)
    x = np.random.default_rng(0).standard_normal(12 * 128).astype(np.float32)
    rows = x[: 12 * 80].reshape(12, 80)
    with interpret() as session:
        # masked-off lanes at every row's end and in the last blocks, each load with other=
        k.softmax_kernel[(12,)](np.zeros_like(rows), rows, 80, 80, 80, BLOCK=128)
        row_max_kernel_clean[(12,)](x, np.zeros(12, np.float32), 80, BLOCK=128)
        a, b = x[: 30 * 20].reshape(30, 20), x[: 20 * 50].reshape(20, 50)
        c = np.zeros((30, 50), np.float32)
        k.matmul_kernel[(2, 4)](a, b, c, 30, 50, 20, 20, 1, 50, 1, 50, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
        # a load without other= whose mask leaves no lane out fills none either
        row_max_kernel[(12,)](x, np.zeros(12, np.float32), 128, BLOCK=128)
    assert [launch.findings for launch in session.trace] == [[], [], [], []]
    assert replayed == []

    # the same kernel with a lane left out is replayed, and its filled lanes found
    with interpret() as session:
        row_max_kernel[(12,)](x, np.zeros(12, np.float32), 80, BLOCK=128)
    assert replayed
    assert [f.kind for f in session.trace[0].findings] == ["masked_fill_used"]
