"""What users pass: the pools fuzz cases draw their inputs from, each with what must come of it.

A new kind of input goes into a pool here; `families` turns the pools into launches.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from tests.fuzz.expect import OK, Draft, Outcome, either, fails

STANDARD = ["float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]  # fmt: skip
ML = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]
DTYPES = STANDARD + ML
ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}  # fmt: skip
MiB = 1 << 20

# ---- arrays: (kind, expression template, outcome as input, outcome as output) ----------------------


def array_kind(
    rng: random.Random, dtype: str, role: str, name: str
) -> tuple[str, Callable[[str], str], Outcome]:
    """An array of `dtype` in one of the ways users hold arrays; the expression wraps data `d`."""
    big = ITEMSIZE[dtype] > 1
    standard = dtype in STANDARD
    kinds: list[tuple[str, Callable[[str], str], Outcome, Outcome]] = [
        ("numpy", lambda d: d, OK, OK),
        ("read-only", lambda d: f"readonly({d})", OK, fails(name)),
        ("memmap r", lambda d: f'memmap({d}, "r")', OK, fails(name)),
        ("memmap r+", lambda d: f'memmap({d}, "r+")', OK, OK),
        ("memmap c", lambda d: f'memmap({d}, "c")', OK, OK),
        ("frombuffer(bytes)", lambda d: f"frombytes({d})", OK, fails(name)),
        ("view into a buffer", lambda d: f"inside({d}, {rng.choice([1, 5, 64])})", OK, OK),
        ("torch", lambda d: f"torch_of({d})", OK, OK),
        ("masked array", lambda d: f"np.ma.masked_array({d}, mask=False)", Outcome(stock=False), Outcome(stock=False)),
    ]  # fmt: skip
    if big and standard:
        kinds.append(
            (
                "big-endian",
                lambda d: f"big_endian({d})",
                either(name, stock=False),
                either(name, stock=False),
            )
        )
    if big:
        kinds.append(("misaligned", lambda d: f"misaligned({d})", fails(name), fails(name)))
    if dtype.startswith("float") and dtype in STANDARD:
        kinds.append(("torch requires_grad", lambda d: f"torch_of({d}, requires_grad=True)", OK, OK))
    weights = [14] + [1] * (len(kinds) - 1)  # mostly plain arrays: one odd input per case reads best
    kind, wrap, as_input, as_output = rng.choices(kinds, weights)[0]
    return kind, wrap, as_input if role == "in" else as_output


# Values that are not arrays a kernel can take, passed for a pointer parameter.
BAD_POINTERS = [
    "[1.0, 2.0, 3.0]",
    '"src"',
    "None",
    "{}",
    "7",
    'address(data("float32", 8))',
    "np.float32(1.0)",
    "np.zeros(300, np.complex64)",
    "structured(300)",
    "objects(300)",
    'np.array(["a"] * 300)',
    'np.zeros(300, "datetime64[s]")',
    "np.zeros(300, np.longdouble)",
    "np.zeros(300, ml_dtypes.int4)",
    "np.zeros(300, np.float32).tolist()",
    "bytearray(1200)",
    "memoryview(bytearray(1200))",
    "torch.zeros(300, dtype=torch.complex64)",
    'torch.empty(300, device="meta")',
    "torch.zeros(300).to_sparse()",
    "torch.quantize_per_tensor(torch.zeros(300), 0.1, 0, torch.quint8)",
    "torch.float32",
    "tl.float32",
    "np.float32",
    "lambda: 0",
    "Ellipsis",
    '(data("float32", 300), data("float32", 300))',
]


# n for a copy of `size` elements: (expression, its value for the mask `offs < n`, or None: not a number)
def n_values(size: int) -> list[tuple[str, float | None, str]]:
    return [
        (f"{size}", size, "int"),
        (f"{size - 1}", size - 1, "int"),
        ("0", 0, "int"),
        ("-5", -5, "int"),
        (f"{size + 1}", size + 1, "int"),
        (f"{2 * size}", 2 * size, "int"),
        ("2**31 - 1", 2**31 - 1, "int"),
        ("2**31", 2**31, "int"),
        ("2**62", 2**62, "int"),
        ("2**63 - 1", 2**63 - 1, "int"),
        ("2**63", 2**63, "int"),
        ("2**64 - 1", 2**64 - 1, "int"),
        (f"np.int32({size})", size, "int"),
        (f"np.int64({size})", size, "int"),
        (f"np.uint64({size})", size, "int"),
        ("True", 1, "loose"),
        (f"float({size})", size, "loose"),
        (f"{size} - 0.5", size - 0.5, "loose"),
        ('float("nan")', math.nan, "loose"),
        ('float("inf")', math.inf, "loose"),
        ("2**64", None, "bad"),
        ("2**70", None, "bad"),
        ("-2**63 - 1", None, "bad"),
        ("-2**70", None, "bad"),
        (f'"{size}"', None, "bad"),
        ("None", None, "bad"),
        (f"[{size}]", None, "bad"),
        (f"{size}j", None, "bad"),
        (f"Decimal({size})", None, "bad"),
        (f"Fraction({size}, 1)", None, "bad"),
        (f"np.array({size})", None, "bad"),
        (f"torch.tensor({size})", None, "bad"),
        (f"np.complex64({size})", None, "bad"),
    ]


def masked_count(value: float, covered: int) -> int:
    """How many of the offsets 0..covered-1 pass `offs < value`."""
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return covered if value > 0 else 0
    return max(0, min(math.ceil(value), covered))


ALPHAS = [
    ("2.0", OK), ("0.5", OK), ("-1.0", OK), ("3", OK), ("np.float32(2.0)", OK), ("np.float64(0.5)", OK),
    ("2**40", OK), ("True", either("alpha")), ("1e39", either("alpha")), ('float("nan")', either("alpha")),
    ("np.float16(0.5)", either("alpha")), ("np.int8(-2)", either("alpha")),
    ('"two"', fails("alpha")), ("None", fails("alpha")), ("[2.0]", fails("alpha")), ("2j", fails("alpha")),
    ('Decimal("2")', fails("alpha")), ("2**70", fails("alpha")), ("np.array(2.0)", fails("alpha")),
    ("torch.tensor(2.0)", fails("alpha")), ("-2**64", fails("alpha")),
]  # fmt: skip


# keyword mistakes on copy_kernel(src_ptr, dst_ptr, n, BLOCK): how to change the call, and what must come of it
def apply_keyword_mistake(draft: Draft, size: int, block: int, choice: str) -> Outcome:
    """Make the mistake `choice` in the call `draft` makes; what must come of it."""
    args, kwargs = draft.args, draft.kwargs
    if choice == "missing n":
        del args[2]
        return fails("n")
    if choice == "missing BLOCK":
        kwargs.clear()
        return fails("BLOCK")
    if choice == "BLOKC for BLOCK":
        kwargs[:] = [("BLOKC", str(block))]
        return fails("BLOKC", "BLOCK")
    if choice == "BLOKC besides BLOCK":
        kwargs.append(("BLOKC", "3"))
        return fails("BLOKC")
    if choice == "unknown keyword":
        kwargs.append(("bogus", "1"))
        return fails("bogus")
    if choice == "num_warp":
        kwargs.append(("num_warp", "4"))
        return fails("num_warp")
    if choice == "launch options":
        kwargs.extend([("num_warps", "4"), ("num_stages", "3")])
        return OK
    if choice == "debug":
        kwargs.append(("debug", "True"))
        return OK
    if choice == "n twice":
        kwargs.append(("n", str(size)))
        return fails("n")
    if choice == "all by keyword":
        kwargs[:0] = args
        args.clear()
        return OK
    if choice == "extra positional":
        args.append(("extra", "5"))
        return fails()
    if choice == "src for src_ptr":
        kwargs[:0] = [("src" if name == "src_ptr" else name, expr) for name, expr in args]
        args.clear()
        return fails("src", "src_ptr")
    if choice == "BLOCK positional":
        args.append(kwargs.pop(0))
        return OK
    if choice == "BLOCK as constexpr":
        kwargs[0] = ("BLOCK", f"tl.constexpr({block})")
        return OK
    raise AssertionError(choice)


KEYWORD_MISTAKES = [
    "missing n", "missing BLOCK", "BLOKC for BLOCK", "BLOKC besides BLOCK", "unknown keyword", "num_warp",
    "launch options", "debug", "n twice", "all by keyword", "extra positional", "src for src_ptr",
    "BLOCK positional", "BLOCK as constexpr",
]  # fmt: skip

BLOCKS = [
    ("100", fails()), ("0", fails()), ("-128", fails()), ('"128"', fails()), ("128.0", fails()),
    ("None", fails()), ("2**21", fails()), ("np.int64(128)", either("BLOCK")), ("1", OK),
]  # fmt: skip


GRIDS_OK: list[tuple[str, Callable[[int], int]]] = [
    ("({g},)", lambda g: g), ("[{g}]", lambda g: g), ("{g}", lambda g: g), ("({g}, 2)", lambda g: 2 * g),
    ("({g}, 2, 3)", lambda g: 6 * g), ("(np.int64({g}),)", lambda g: g), ("(np.int32({g}), np.uint8(2))", lambda g: 2 * g),
    ("lambda meta: ({g},)", lambda g: g), ("lambda meta: {g}", lambda g: g), ("lambda meta: [{g}, 2]", lambda g: 2 * g),
    ("({g}, 1, 1)", lambda g: g), ("(0,)", lambda g: 0), ("({g}, 0, 2)", lambda g: 0),
]  # fmt: skip
GRIDS_EITHER: list[tuple[str, Callable[[int], int]]] = [
    ("np.array([{g}])", lambda g: g), ("(True,)", lambda g: 1), ("(torch.tensor({g}),)", lambda g: g),
]  # fmt: skip
GRIDS_BAD = [
    "(2.5,)", "2.5", '"8"', '("8",)', "None", "(-1,)", "({g}, -2)", "()", "(1, 1, 1, 1)", "(({g},),)", "{{4}}",
    '{{"x": 4}}', "(None,)", "(np.float64(2.0),)", "(1 + 2j,)", "(2**31,)", "(1, 2**16)", "(2**64,)",
    "lambda meta: meta['BLOKC']", "lambda: (1,)", "lambda meta: None", "lambda meta: '8'", "lambda meta: (2.5,)",
    "lambda meta: 1 // 0", "lambda meta: (x for x in [1])", "RaisingGrid()", "lambda meta: (-3,)",
]  # fmt: skip


SHIFTS = ["{n}", "-1", "-{block}", "10**6", "-10**6", "2**31", "-2**31", "2**40", "-2**40", "2**61", "-(2**61)",
          "-1024", "-2048", "-4096", "1024", "4096", "{arena}"]  # fmt: skip


ADDRESSES = ["0", "8", "4096", "2**64 - 4", "2**64 - 8", "2**63", "-8", "-4096", "2**47", "2**48 + 4096",
             'address(data("float32", 300))']  # fmt: skip
ROUNDTRIP_SHIFTS = ["300", "-1", "10**6", "2**61", "-(2**61)", "2**62 - 1", "-(2**62) + 1"]


RAISING = ["undefined_name_kernel", "device_assert_kernel", "static_assert_kernel", "shape_mismatch_kernel",
           "huge_tensor_kernel", "block_range_kernel", "block_index_kernel"]  # fmt: skip
