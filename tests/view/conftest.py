"""Hand-built traces for the viewer tests: they exercise the view without running the engine."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

try:
    import kernel_nb  # noqa: F401
except ImportError:
    # The view needs only kernel_nb.trace: a checkout whose engine does not import still tests it.
    sys.path.insert(0, str(ROOT))
    package = types.ModuleType("kernel_nb")
    package.__path__ = [str(ROOT / "kernel_nb")]
    sys.modules["kernel_nb"] = package

from kernel_nb.trace import (  # noqa: E402
    ArgumentInfo,
    BufferMap,
    Finding,
    Launch,
    MemoryEvent,
    ProgramTrace,
    Record,
    SourceInfo,
    Statement,
    Summary,
    Trace,
)

FILE = "/tmp/kernels.py"
SOURCE = """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    acc = tl.zeros((BLOCK,), tl.float32)
    for k in range(3):
        acc += x * k
    tile = (tl.arange(0, 4)[:, None] + pid) * x[None, :]
    cube = tl.reshape(tl.arange(0, 24), (2, 3, 4)) + pid
    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)
"""
FIRST_LINE = 10
# name, line, kind: the statements the engine would record for SOURCE.
STATEMENTS = [
    ("pid", 12, "assign"),
    ("offsets", 13, "assign"),
    ("mask", 14, "assign"),
    ("x", 15, "assign"),
    ("y", 16, "assign"),
    ("acc", 17, "assign"),
    ("k", 18, "loop"),
    ("acc", 19, "augassign"),
    ("tile", 20, "assign"),
    ("cube", 21, "assign"),
    ("output", 22, "assign"),
]
BLOCK = 8


def inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    x = (np.arange(n, dtype=np.float32) * 0.5).astype(np.float32)
    y = np.sin(np.arange(n, dtype=np.float32)).astype(np.float32)
    if n > 45:
        x[27] = np.nan  # program 3 sees a NaN, program 5 a +Inf and a -Inf
        x[41] = np.inf
        y[45] = -np.inf
    return x, y


def run_program(pid: tuple[int, int, int], grid: tuple[int, int, int], n: int, keep: bool) -> ProgramTrace:
    """What the engine would record for one program of add_kernel (values dropped unless `keep`)."""
    x_all, y_all = inputs(n)
    p = pid[0] + pid[1] * grid[0]
    offsets = (p * BLOCK + np.arange(BLOCK)).astype(np.int32)
    mask = offsets < n
    safe = np.where(mask, offsets, 0)
    x = np.where(mask, x_all[safe], 0).astype(np.float32)
    y = np.where(mask, y_all[safe], 0).astype(np.float32)
    values: list[tuple[int, tuple[int, ...], str, np.ndarray]] = [
        (0, (), "i32", np.array(p, dtype=np.int32)),
        (1, (), "i32", offsets),
        (2, (), "i1", mask),
        (3, (), "fp32", x),
        (4, (), "fp32", y),
        (5, (), "fp32", np.zeros(BLOCK, np.float32)),
    ]
    acc = np.zeros(BLOCK, np.float32)
    for k in range(3):
        with np.errstate(invalid="ignore"):  # inf * 0, as the kernel computes it
            acc = (acc + x * k).astype(np.float32)
        values += [(6, (k,), "i32", np.array(k, dtype=np.int32)), (7, (k,), "fp32", acc.copy())]
    values += [
        (8, (), "fp32", ((np.arange(4)[:, None] + p) * x[None, :]).astype(np.float32)),
        (9, (), "i32", (np.arange(24).reshape(2, 3, 4) + p).astype(np.int32)),
        (10, (), "fp32", (x + y).astype(np.float32)),
    ]
    program = ProgramTrace(pid=pid, kept=keep)
    seq = 0
    for stmt, iteration, dtype, value in values:
        program.records.append(
            Record(
                stmt=stmt,
                seq=seq,
                call_path=(),
                iteration=iteration,
                dtype=dtype,
                shape=value.shape,
                summary=Summary.of(value),
                value=value if keep else None,
            )
        )
        seq += 1
        if stmt in (3, 4):  # the loads happen on these lines
            program.events.append(
                _event(
                    "load",
                    seq,
                    15 if stmt == 3 else 16,
                    "x_ptr" if stmt == 3 else "y_ptr",
                    offsets,
                    mask,
                    value,
                    keep,
                )
            )
            seq += 1
    out = (x + y).astype(np.float32)
    program.events.append(_event("store", seq, 23, "out_ptr", offsets, mask, out, keep))
    return program


def _event(
    kind: str,
    seq: int,
    line: int,
    arg: str,
    offsets: np.ndarray,
    mask: np.ndarray,
    values: np.ndarray,
    keep: bool,
) -> MemoryEvent:
    active = offsets[mask]
    return MemoryEvent(
        kind=kind,
        seq=seq,
        file=FILE,
        line=line,
        arg=arg,
        active=int(mask.sum()),
        lo=int(active.min()) if active.size else 0,
        hi=int(active.max()) + 1 if active.size else 0,
        indices=offsets.astype(np.int64) if keep else None,
        mask=mask.copy() if keep else None,
        values=values.copy() if keep else None,
        before=np.zeros_like(values) if keep and kind == "store" else None,
    )


def add_launch(
    grid: tuple[int, int, int] = (4, 2, 1),
    n: int = 60,
    keep: Callable[[int], bool] = lambda p: True,
    index: int = 0,
) -> Launch:
    """A vector-add launch; programs for which `keep(linear)` is false keep summaries only and are replayed."""
    size_out = n + 2  # two trailing elements nobody writes
    launch = Launch(
        index=index,
        kernel="add_kernel",
        grid=grid,
        args=[
            ArgumentInfo("x_ptr", "buffer", "fp32", (n,), (1,)),
            ArgumentInfo("y_ptr", "buffer", "fp32", (n,), (1,)),
            ArgumentInfo("out_ptr", "buffer", "fp32", (size_out,), (1,)),
            ArgumentInfo("n", "scalar", "i32", value=n),
            ArgumentInfo("BLOCK", "constexpr", value=BLOCK),
        ],
        statements=[
            Statement(i, FILE, line, name, "add_kernel", kind)
            for i, (name, line, kind) in enumerate(STATEMENTS)
        ],
        sources={"add_kernel": SourceInfo("add_kernel", FILE, FIRST_LINE, SOURCE)},
    )
    sizes = {"x_ptr": n, "y_ptr": n, "out_ptr": size_out}
    maps = {
        a: (np.zeros(s, np.int32), np.zeros(s, np.int32), np.full(s, -1, np.int64)) for a, s in sizes.items()
    }
    for linear in range(launch.num_programs):
        pid = launch.pid_of(linear)
        full = run_program(pid, grid, n, keep=True)
        for event in full.events:
            assert event.indices is not None and event.mask is not None and event.arg is not None
            active = event.indices[event.mask]
            reads, writes, last = maps[event.arg]
            if event.kind == "load":
                reads[active] += 1
            else:
                writes[active] += 1
                last[active] = linear
        launch.programs[pid] = full if keep(linear) else run_program(pid, grid, n, keep=False)
    for arg, (reads, writes, last) in maps.items():
        launch.buffers[arg] = BufferMap(arg, sizes[arg], (sizes[arg],), reads, writes, last)
    launch.buffers["out_ptr"].writes[[4, 5]] += 1  # as if a second program wrote them too
    launch.buffers["x_ptr"].oob.append((7, 15, 64))
    launch.findings = [
        Finding(
            "nan_origin",
            "warning",
            "add_kernel:15 pid=(3, 0, 0): x is NaN at lane 3 (loaded from x_ptr[27])",
            index,
            (3, 0, 0),
            FILE,
            15,
            "x_ptr",
            np.array([3]),
        ),
        Finding(
            "out_of_bounds",
            "error",
            "add_kernel:15 pid=(3, 1, 0): tl.load of x_ptr reads element 64 but x has 60; add mask=offsets < n",
            index,
            (3, 1, 0),
            FILE,
            15,
            "x_ptr",
            np.array([64]),
        ),
    ]
    launch.replayer = lambda pid: run_program(pid, grid, n, keep=True)
    return launch


def big_value_launch(shape: tuple[int, ...]) -> Launch:
    """One program recording one large fp32 value (with NaN and ±Inf in it)."""
    value = np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    flat = value.reshape(-1)
    flat[:3] = [np.nan, np.inf, -np.inf]
    program = ProgramTrace(pid=(0, 0, 0), kept=True)
    program.records.append(Record(0, 0, (), (), "fp32", shape, Summary.of(value), value))
    return Launch(
        index=0,
        kernel="big_kernel",
        grid=(1, 1, 1),
        args=[],
        statements=[Statement(0, FILE, 11, "acc", "big_kernel", "assign")],
        sources={"big_kernel": SourceInfo("big_kernel", FILE, 10, "def big_kernel():\n    acc = ...\n")},
        programs={(0, 0, 0): program},
    )


@pytest.fixture
def add_trace() -> Trace:
    """Two launches of add_kernel; the second keeps only summaries for odd programs."""
    return Trace([add_launch(), add_launch(grid=(8, 1, 1), keep=lambda p: p % 2 == 0, index=1)])


@pytest.fixture
def artifacts() -> Path:
    path = ROOT / "test-artifacts"
    path.mkdir(exist_ok=True)
    return path
