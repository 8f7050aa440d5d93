"""The fuzz cases: `generate(seed, count)` gives the floor (cases every run includes: each failure
the project knows of, and memory pressure under small budgets) and `count` cases drawn from the
families with a generator seeded with `seed`."""

from __future__ import annotations

import random
from dataclasses import replace

from tests.fuzz.expect import OK, Case, Draft, Outcome, either, fails
from tests.fuzz.families import FAMILIES
from tests.fuzz.pools import MiB

__all__ = ["Case", "generate", "with_id_prefix"]

_COPY = [("src_ptr", 'data("float32", 300)'), ("dst_ptr", 'data("float32", 300, start=500)'), ("n", "300")]
_COPIED = '{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], 300), "src_ptr": S["src_ptr"]}'


def _floor() -> list[Draft]:
    block = [("BLOCK", "128")]
    auto = [("strategy", '"auto"')]
    return [
        Draft("floor", "copy_kernel", list(_COPY), "(3,)", OK, block, auto, _COPIED, notes="a launch that works"),
        Draft("floor", "copy_kernel", [_COPY[0], ("dst_ptr", 'memmap(data("float32", 300, start=500), "r")'), _COPY[2]], "(3,)",
              fails("dst_ptr"), block, auto, notes="read-only memmap as output"),
        Draft("floor", "address_load_kernel", [_COPY[1], ("address", "2**64 - 2"), _COPY[2]], "(3,)", fails(), block, auto,
              notes="a pointer within an item of 2**64"),
        Draft("floor", "copy_kernel", [_COPY[0], ("dst_ptr", 'frombytes(data("float32", 300, start=500))'), _COPY[2]], "(3,)",
              fails("dst_ptr"), block, auto),
        Draft("floor", "shifted_store_kernel", [*_COPY, ("shift", "-2048")], "(3,)", fails("dst_ptr"), block, auto,
              notes="a store through dst that may land in src"),
        Draft("floor", "copy_kernel", [("src_ptr", 'big_endian(data("float32", 300))'), _COPY[1], _COPY[2]], "(3,)",
              either("src_ptr", stock=False), block, auto, _COPIED),
        Draft("floor", "block_range_kernel", list(_COPY), "(3,)", fails(), block, auto),
        Draft("floor", "block_index_kernel", list(_COPY), "(3,)", fails(), block, auto),
        Draft("floor", "misaligned_load_kernel", [*_COPY, ("byte_shift", "2")], "(3,)", fails("src_ptr"), block, auto),
        Draft("floor", "count_kernel", [("counter_ptr", "np.zeros(1, np.int32)")], "(2.5,)", fails("grid"), options=auto),
        Draft("floor", "count_kernel", [("counter_ptr", "np.zeros(1, np.int32)")], '"8"', fails("grid"), options=auto),
        Draft("floor", "count_kernel", [("counter_ptr", "np.zeros(1, np.int32)")], "None", fails("grid"), options=auto),
        Draft("floor", "copy_kernel", list(_COPY), "(3,)", fails("BLOKC"), [*block, ("BLOKC", "3")], auto),
        Draft("floor", "copy_kernel", [("src_ptr", "[1.0, 2.0]"), _COPY[1], _COPY[2]], "(3,)", fails("src_ptr"), block, auto),
        Draft("floor", "copy_kernel", [_COPY[0], _COPY[1], ("n", "2**70")], "(3,)", fails("n"), block, auto),
        Draft("floor", "copy_kernel", [("src_ptr", "torch.zeros(300, dtype=torch.complex64)"), _COPY[1], _COPY[2]], "(3,)",
              fails("src_ptr"), block, auto),
        Draft("floor", "copy_kernel", [("src_ptr", 'torch.empty(300, device="meta")'), _COPY[1], _COPY[2]], "(3,)",
              fails("src_ptr"), block, auto),
        Draft("floor", "shifted_load_kernel", [*_COPY, ("shift", "10**9")], "(3,)", fails("src_ptr"), block, auto,
              notes="far out of bounds names the pointer's own argument"),
        Draft("floor", "endless_for_kernel", [("dst_ptr", 'data("float32", 64)'), ("n", "2**62")], "(1,)",
              kwargs=[("BLOCK", "64")], options=auto, interrupts=(0.5, 0.52), expect="interrupt", timeout=30,
              notes="double Ctrl-C"),
        # memory pressure under a small budget
        Draft("memory", "many_statements_kernel",
              [("x_ptr", f'data("float32", {1 << 23})'), ("out_ptr", f"np.zeros({1 << 23}, np.float32)"), ("n", str(1 << 23))],
              f"({(1 << 23) // 1024},)", Outcome(stock=False), [("BLOCK", "1024")], [("budget_bytes", str(MiB))],
              f'{{"out_ptr": many_statements(S["x_ptr"], {1 << 23})}}', memory=True, timeout=240,
              notes="2**23 elements x 30 statements, 1 MiB budget"),
        Draft("memory", "many_statements_kernel",
              [("x_ptr", f'data("float32", {1 << 20})'), ("out_ptr", f"np.zeros({1 << 20}, np.float32)"), ("n", str(1 << 20))],
              "(1,)", Outcome(stock=False), [("BLOCK", str(1 << 20))], [("budget_bytes", str(16 * MiB))],
              f'{{"out_ptr": many_statements(S["x_ptr"], {1 << 20})}}', memory=True, timeout=120,
              notes="one program of BLOCK=2**20, 16 MiB budget"),
        Draft("memory", "many_statements_kernel",
              [("x_ptr", f'data("float32", {1 << 20})'), ("out_ptr", f"np.zeros({1 << 20}, np.float32)"), ("n", str(1 << 20))],
              "(16,)", Outcome(stock=False), [("BLOCK", str(1 << 16))], [("budget_bytes", str(MiB)), ("strategy", '"serial"')],
              f'{{"out_ptr": many_statements(S["x_ptr"], {1 << 20})}}', memory=True, timeout=120,
              notes="serial, 1 MiB budget"),
        Draft("memory", "noop_kernel", [("dst_ptr", 'data("float32", 4)')], "(2**31 - 1,)", fails("grid"),
              options=[("budget_bytes", str(MiB))], interrupts=(4.0,), expect="interrupt_or_error", memory=True, timeout=60,
              notes="2**31-1 programs, interrupted after 4 s unless refused"),
    ]  # fmt: skip


def generate(seed: int, count: int) -> list[Case]:
    """The floor, then `count` cases drawn with a generator seeded with `seed`."""
    rng = random.Random(seed)
    drafts = _floor()
    functions, weights = zip(*FAMILIES)
    for _ in range(count):
        drafts.append(rng.choices(functions, weights)[0](rng))
    return [draft.case(i) for i, draft in enumerate(drafts)]


def with_id_prefix(cases: list[Case], prefix: str) -> list[Case]:
    return [replace(case, id=f"{prefix}{case.id}") for case in cases]
