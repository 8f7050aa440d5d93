"""What users pass to a launch, and what kernel_nb must make of it: the fuzz cases.

A `Case` is one launch written as Python expressions (evaluated in a child by `build.namespace()`)
with what must come of it: `expect` is "ok" (the launch succeeds and gives `reference`), "error"
(it fails with a clear error naming one of `culprits`), "either" (one or the other), "interrupt"
(it ends as LaunchInterrupted), or "interrupt_or_ok" / "interrupt_or_error".

`generate(seed, count)` draws cases from the pools below with a seeded generator: each case is an
ordinary launch with one or two of its inputs replaced by something hostile. `FLOOR` are cases every
run includes. The pools are the list of what users pass; a new kind of input goes into a pool.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

STANDARD = ["float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]  # fmt: skip
ML = ["bfloat16", "float8_e4m3fn", "float8_e5m2"]
DTYPES = STANDARD + ML
ITEMSIZE = {"float32": 4, "float16": 2, "float64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1}  # fmt: skip
MiB = 1 << 20


@dataclass(frozen=True)
class Case:
    """One launch `kernel[grid](*args, **kwargs)` under `kernel_nb.interpret(Options(**options))`.

    Attributes:
        family: which pool it was drawn from.
        kernel: the kernel's name in tests/fuzz/kernels.py (and in the error messages).
        args, kwargs: (parameter, expression) pairs; an expression may use the values before it by name.
        grid: expression.
        options: keyword arguments of `kernel_nb.Options`, as expressions.
        expect, culprits: see the module docstring; an error must name one of the culprits (the
            kernel alone when there are none).
        reference: expression giving {parameter: the array it must hold after a successful launch};
            `S` holds copies of the arrays as they were before.
        stock: run it under stock TRITON_INTERPRET=1 too; a successful launch must match stock's.
        interrupts: seconds after the launch starts at which SIGINT arrives.
        memory: peak memory is checked against the budget and the arguments.
        timeout: seconds before the child is killed.
    """

    id: str
    family: str
    kernel: str
    args: tuple[tuple[str, str], ...]
    grid: str
    expect: str
    kwargs: tuple[tuple[str, str], ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    culprits: tuple[str, ...] = ()
    reference: str | None = None
    stock: bool = False
    interrupts: tuple[float, ...] = ()
    memory: bool = False
    timeout: float = 60.0
    notes: str = ""

    @property
    def title(self) -> str:
        """The launch as a user would type it."""
        call = ", ".join([e for _, e in self.args] + [f"{k}={e}" for k, e in self.kwargs])
        options = ", ".join(f"{k}={e}" for k, e in self.options)
        text = f"{self.kernel}[{self.grid}]({call})"
        if options:
            text += f" with Options({options})"
        if self.interrupts:
            text += f" interrupted at {self.interrupts} s"
        return text + (f" ({self.notes})" if self.notes else "")

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "kernel": self.kernel,
            "args": list(self.args),
            "kwargs": list(self.kwargs),
            "grid": self.grid,
            "options": list(self.options),
            "reference": self.reference,
            "interrupts": list(self.interrupts),
            "timeout": self.timeout,
        }


@dataclass(frozen=True)
class Outcome:
    """What one input contributes to a case's expectation."""

    expect: str = "ok"
    culprits: tuple[str, ...] = ()
    stock: bool = True

    def __and__(self, other: Outcome) -> Outcome:
        order = {"ok": 0, "either": 1, "error": 2}
        worst = max(self.expect, other.expect, key=order.__getitem__)
        # with an error certain, an input that may be refused may be the one the error names
        accepted = (worst, "either") if worst == "error" else (worst,)
        failing = [o for o in (self, other) if o.expect in accepted]
        if worst == "error" and any(not o.culprits for o in failing if o.expect == "error"):
            # either fault may be the one reported, and one of them (a call that does not bind, a
            # kernel that fails) is described by the kernel's name alone
            return Outcome(worst, (), self.stock and other.stock)
        culprits = tuple(dict.fromkeys(c for o in failing for c in o.culprits))
        return Outcome(worst, culprits, self.stock and other.stock)


OK = Outcome()


def _error(*culprits: str) -> Outcome:
    return Outcome("error", culprits, stock=False)


def _either(*culprits: str, stock: bool = True) -> Outcome:
    return Outcome("either", culprits, stock)


# ---- arrays: (kind, expression template, outcome as input, outcome as output) ----------------------


def array_kind(
    rng: random.Random, dtype: str, role: str, name: str
) -> tuple[str, Callable[[str], str], Outcome]:
    """An array of `dtype` in one of the ways users hold arrays; the expression wraps data `d`."""
    big = ITEMSIZE[dtype] > 1
    standard = dtype in STANDARD
    kinds: list[tuple[str, Callable[[str], str], Outcome, Outcome]] = [
        ("numpy", lambda d: d, OK, OK),
        ("read-only", lambda d: f"readonly({d})", OK, _error(name)),
        ("memmap r", lambda d: f'memmap({d}, "r")', OK, _error(name)),
        ("memmap r+", lambda d: f'memmap({d}, "r+")', OK, OK),
        ("memmap c", lambda d: f'memmap({d}, "c")', OK, OK),
        ("frombuffer(bytes)", lambda d: f"frombytes({d})", OK, _error(name)),
        ("view into a buffer", lambda d: f"inside({d}, {rng.choice([1, 5, 64])})", OK, OK),
        ("torch", lambda d: f"torch_of({d})", OK, OK),
        ("masked array", lambda d: f"np.ma.masked_array({d}, mask=False)", Outcome(stock=False), Outcome(stock=False)),
    ]  # fmt: skip
    if big and standard:
        kinds.append(
            (
                "big-endian",
                lambda d: f"big_endian({d})",
                _either(name, stock=False),
                _either(name, stock=False),
            )
        )
    if big:
        kinds.append(("misaligned", lambda d: f"misaligned({d})", _error(name), _error(name)))
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
    ("2**40", OK), ("True", _either("alpha")), ("1e39", _either("alpha")), ('float("nan")', _either("alpha")),
    ("np.float16(0.5)", _either("alpha")), ("np.int8(-2)", _either("alpha")),
    ('"two"', _error("alpha")), ("None", _error("alpha")), ("[2.0]", _error("alpha")), ("2j", _error("alpha")),
    ('Decimal("2")', _error("alpha")), ("2**70", _error("alpha")), ("np.array(2.0)", _error("alpha")),
    ("torch.tensor(2.0)", _error("alpha")), ("-2**64", _error("alpha")),
]  # fmt: skip


# ---- families --------------------------------------------------------------------------------------


@dataclass
class Draft:
    """A case being put together."""

    family: str
    kernel: str
    args: list[tuple[str, str]]
    grid: str
    outcome: Outcome = field(default_factory=Outcome)
    kwargs: list[tuple[str, str]] = field(default_factory=list)
    options: list[tuple[str, str]] = field(default_factory=list)
    reference: str | None = None
    interrupts: tuple[float, ...] = ()
    memory: bool = False
    timeout: float = 60.0
    notes: str = ""
    expect: str | None = None  # overrides the outcome's ("interrupt", ...)

    def case(self, index: int) -> Case:
        return Case(
            id=f"{index:03d}-{self.family}",
            family=self.family,
            kernel=self.kernel,
            args=tuple(self.args),
            kwargs=tuple(self.kwargs),
            grid=self.grid,
            options=tuple(self.options),
            expect=self.expect or self.outcome.expect,
            culprits=self.outcome.culprits,
            reference=self.reference,
            stock=self.outcome.stock and (self.expect or self.outcome.expect) in ("ok", "either"),
            interrupts=self.interrupts,
            memory=self.memory,
            timeout=self.timeout,
            notes=self.notes,
        )


def _strategy(rng: random.Random) -> list[tuple[str, str]]:
    return [("strategy", rng.choice(['"auto"', '"serial"']))]


def _grid_for(rng: random.Random, programs: int, block: str = "BLOCK", n: str = "n") -> str:
    return rng.choice(
        [
            f"({programs},)",
            f"[{programs}]",
            f"{programs}",
            f"({programs}, 1, 1)",
            f"lambda meta: (triton.cdiv(meta['{n}'], meta['{block}']),)",
            f"(np.int64({programs}),)",
        ]
    )


def _copy_base(rng: random.Random, family: str, *, dtype: str | None = None) -> tuple[Draft, dict]:
    dtype = dtype or rng.choice(DTYPES)
    size = rng.choice([1, 7, 100, 128, 300, 1000])
    block = rng.choice([16, 32, 128, 256])
    src_kind, src_wrap, src_outcome = array_kind(rng, dtype, "in", "src_ptr")
    dst_dtype = dtype
    if rng.random() < 0.2:
        group = next(
            (g for g in (["float32", "float16", "float64"], ["int32", "int64", "int16"]) if dtype in g),
            [dtype],
        )
        dst_dtype = rng.choice(group)
    dst_kind, dst_wrap, dst_outcome = array_kind(rng, dst_dtype, "out", "dst_ptr")
    draft = Draft(
        family,
        "copy_kernel",
        [
            ("src_ptr", src_wrap(f'data("{dtype}", {size})')),
            ("dst_ptr", dst_wrap(f'data("{dst_dtype}", {size}, start=500)')),
            ("n", str(size)),
        ],
        _grid_for(rng, -(-size // block)),
        src_outcome & dst_outcome,
        kwargs=[("BLOCK", str(block))],
        options=_strategy(rng),
        reference=f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {size}), "src_ptr": S["src_ptr"]}}',
    )
    return draft, {"size": size, "block": block, "dtype": dtype, "kinds": (src_kind, dst_kind)}


def copy_arrays(rng: random.Random) -> Draft:
    """A copy between arrays of every dtype held every way; sometimes with an odd n."""
    draft, info = _copy_base(rng, "arrays")
    if rng.random() < 0.35:
        _with_n(rng, draft, info)
    return draft


def _with_n(rng: random.Random, draft: Draft, info: dict) -> None:
    size, block = info["size"], info["block"]
    programs = -(-size // block)
    expr, value, kind = rng.choice(n_values(size))
    draft.args[2] = ("n", expr)
    if draft.grid.startswith("lambda"):
        draft.grid = f"({programs},)"  # the grid must not depend on the n under test
    if kind == "bad":
        draft.outcome = draft.outcome & _error("n")
        draft.reference = None
        return
    assert value is not None
    count = masked_count(value, programs * block)
    if count == 0:
        draft.outcome = Outcome(stock=draft.outcome.stock)  # no lane loads or stores: no array is touched
    if count > size:
        draft.outcome = draft.outcome & _error("src_ptr", "dst_ptr", "n")
        draft.reference = None
        return
    if kind == "loose":
        draft.outcome = draft.outcome & _either("n")
    draft.reference = f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {count}), "src_ptr": S["src_ptr"]}}'


def axpy_scalars(rng: random.Random) -> Draft:
    """out = alpha * x + y with every kind of scalar for alpha and n."""
    size = rng.choice([5, 100, 300, 1000])
    block = rng.choice([32, 128, 256])
    kinds = [
        array_kind(rng, "float32", role, name)
        for role, name in (("in", "x_ptr"), ("in", "y_ptr"), ("out", "out_ptr"))
    ]
    alpha, alpha_outcome = rng.choice(ALPHAS) if rng.random() < 0.7 else ("2.0", OK)
    draft = Draft(
        "scalars",
        "axpy_kernel",
        [
            ("x_ptr", kinds[0][1](f'data("float32", {size})')),
            ("y_ptr", kinds[1][1](f'data("float32", {size}, start=3)')),
            ("out_ptr", kinds[2][1](f'data("float32", {size}, start=700)')),
            ("alpha", alpha),
            ("n", str(size)),
        ],
        _grid_for(rng, -(-size // block)),
        kinds[0][2] & kinds[1][2] & kinds[2][2] & alpha_outcome,
        kwargs=[("BLOCK", str(block))],
        options=_strategy(rng),
    )
    count = size
    if rng.random() < 0.4:
        expr, value, kind = rng.choice(n_values(size))
        draft.args[4] = ("n", expr)
        draft.grid = f"({-(-size // block)},)"
        if kind == "bad":
            draft.outcome = draft.outcome & _error("n")
            count = -1
        elif (count := masked_count(value, -(-size // block) * block)) > size:
            draft.outcome = draft.outcome & _error("x_ptr", "y_ptr", "out_ptr", "n")
            count = -1
        elif kind == "loose":
            draft.outcome = draft.outcome & _either("n")
    if count >= 0 and draft.outcome.expect != "error":
        draft.reference = (
            f'{{"out_ptr": axpy(S["out_ptr"], A["alpha"], S["x_ptr"], S["y_ptr"], {count}), '
            f'"x_ptr": S["x_ptr"], "y_ptr": S["y_ptr"]}}'
        )
    return draft


# keyword mistakes on copy_kernel(src_ptr, dst_ptr, n, BLOCK): how to change the call, and what must come of it
def _keywords(draft: Draft, size: int, block: int, choice: str) -> Outcome:
    args, kwargs = draft.args, draft.kwargs
    if choice == "missing n":
        del args[2]
        return _error("n")
    if choice == "missing BLOCK":
        kwargs.clear()
        return _error("BLOCK")
    if choice == "BLOKC for BLOCK":
        kwargs[:] = [("BLOKC", str(block))]
        return _error("BLOKC", "BLOCK")
    if choice == "BLOKC besides BLOCK":
        kwargs.append(("BLOKC", "3"))
        return _error("BLOKC")
    if choice == "unknown keyword":
        kwargs.append(("bogus", "1"))
        return _error("bogus")
    if choice == "num_warp":
        kwargs.append(("num_warp", "4"))
        return _error("num_warp")
    if choice == "launch options":
        kwargs.extend([("num_warps", "4"), ("num_stages", "3")])
        return OK
    if choice == "debug":
        kwargs.append(("debug", "True"))
        return OK
    if choice == "n twice":
        kwargs.append(("n", str(size)))
        return _error("n")
    if choice == "all by keyword":
        kwargs[:0] = args
        args.clear()
        return OK
    if choice == "extra positional":
        args.append(("extra", "5"))
        return _error()
    if choice == "src for src_ptr":
        kwargs[:0] = [("src" if name == "src_ptr" else name, expr) for name, expr in args]
        args.clear()
        return _error("src", "src_ptr")
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
    ("100", _error()), ("0", _error()), ("-128", _error()), ('"128"', _error()), ("128.0", _error()),
    ("None", _error()), ("2**21", _error()), ("np.int64(128)", _either("BLOCK")), ("1", OK),
]  # fmt: skip


def keywords(rng: random.Random) -> Draft:
    """Missing, extra, misspelt and repeated keywords and constexprs."""
    draft, info = _copy_base(rng, "keywords", dtype=rng.choice(["float32", "int32", "float16"]))
    draft.grid = f"({-(-info['size'] // info['block'])},)"
    if rng.random() < 0.7:
        mistake = rng.choice(KEYWORD_MISTAKES)
        draft.notes = mistake
        draft.outcome = draft.outcome & _keywords(draft, info["size"], info["block"], mistake)
    else:
        block, outcome = rng.choice(BLOCKS)
        draft.kwargs[0] = ("BLOCK", block)
        if block == "1":
            draft.grid = f"({info['size']},)"
        elif block == "np.int64(128)":
            draft.grid = f"({-(-info['size'] // 128)},)"
        draft.outcome = draft.outcome & outcome
    if draft.outcome.expect == "error":
        draft.reference = None
    return draft


# (grid, how many programs it has for g) for the grids a launch takes
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


def grids(rng: random.Random) -> Draft:
    """Every kind of grid, counted by a kernel whose programs each add one."""
    g = rng.randint(1, 5)
    counter = rng.choice(["np.zeros(1, np.int32)", "torch_of(np.zeros(1, np.int32))"])
    pool = rng.choices(["ok", "either", "bad"], [4, 1, 6])[0]
    if pool == "bad":
        draft = Draft("grids", "count_kernel", [("counter_ptr", counter)], rng.choice(GRIDS_BAD).format(g=g),
                      _error("grid"), options=_strategy(rng))  # fmt: skip
        draft.interrupts = (8.0,)  # a grid that runs instead of being refused is stopped, and fails
        return draft
    grid, programs = rng.choice(GRIDS_OK if pool == "ok" else GRIDS_EITHER)
    outcome = OK if pool == "ok" else _either("grid", stock=False)
    return Draft("grids", "count_kernel", [("counter_ptr", counter)], grid.format(g=g), outcome,
                 options=_strategy(rng), reference=f'{{"counter_ptr": np.array([{programs(g)}], np.int32)}}')  # fmt: skip


def bad_pointers(rng: random.Random) -> Draft:
    """Something that is not an array a kernel can take, for a pointer."""
    draft, info = _copy_base(rng, "pointers", dtype="float32")
    draft.args[:2] = [("src_ptr", 'data("float32", 300)'), ("dst_ptr", 'data("float32", 300, start=500)')]
    draft.args[2] = ("n", "300")
    draft.grid = f"({-(-300 // info['block'])},)"
    role = rng.choice(["src_ptr", "dst_ptr"])
    index = 0 if role == "src_ptr" else 1
    draft.args[index] = (role, rng.choice(BAD_POINTERS))
    draft.outcome = _error(role)
    draft.reference = None
    return draft


SHIFTS = ["{n}", "-1", "-{block}", "10**6", "-10**6", "2**31", "-2**31", "2**40", "-2**40", "2**61", "-(2**61)",
          "-1024", "-2048", "-4096", "1024", "4096", "{arena}"]  # fmt: skip


def shifted(rng: random.Random) -> Draft:
    """A load or store moved off its argument: just past, far, negative, into the other argument."""
    load = rng.random() < 0.5
    size = rng.choice([64, 300, 1000])
    block = rng.choice([64, 128])
    origin, other = ("src_ptr", "dst_ptr") if load else ("dst_ptr", "src_ptr")
    # what the arena of host copies puts between the two: a store from dst landing in src's copy
    arena = -(((size * 4 + 63) // 64 * 64) + max((size * 4 + 63) // 64 * 64, 4096)) // 4
    roll = rng.random()
    dst = f'data("float32", {size}, start=500)'
    if roll < 0.1:
        shift, outcome = "0", OK
    elif roll < 0.2:
        shift, outcome = (
            f"distance({origin}, {other})",
            _error(origin),
        )  # where the other array is in the caller's memory
    elif roll < 0.3 and not load:
        dst, shift, outcome = f'inside(data("float32", {size}, start=500), 64)', "-64", _error(origin)
    elif roll < 0.35:
        shift, outcome = "2**62", _either(origin, "shift", stock=False)  # wraps round to the same address
    else:
        shift, outcome = rng.choice(SHIFTS).format(n=size, block=block, arena=arena), _error(origin)
    draft = Draft(
        "shifted",
        "shifted_load_kernel" if load else "shifted_store_kernel",
        [("src_ptr", f'data("float32", {size})'), ("dst_ptr", dst), ("n", str(size)), ("shift", shift)],
        f"({-(-size // block)},)",
        outcome,
        kwargs=[("BLOCK", str(block))],
        options=_strategy(rng),
    )
    if outcome.expect != "error":
        draft.reference = (
            f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {size}), "src_ptr": S["src_ptr"]}}'
        )
    draft.outcome = replace(
        draft.outcome, stock=False
    )  # stock has no guard: a wild pointer is undefined there
    return draft


ADDRESSES = ["0", "8", "4096", "2**64 - 4", "2**64 - 8", "2**63", "-8", "-4096", "2**47", "2**48 + 4096",
             'address(data("float32", 300))']  # fmt: skip
ROUNDTRIP_SHIFTS = ["300", "-1", "10**6", "2**61", "-(2**61)", "2**62 - 1", "-(2**62) + 1"]


def addresses(rng: random.Random) -> Draft:
    """Pointers made from integers: raw addresses, a pointer's own address moved, misaligned bytes."""
    roll = rng.random()
    src, dst = 'data("float32", 300)', 'data("float32", 300, start=500)'
    copy_ref = '{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], %d, shift=%d), "src_ptr": S["src_ptr"]}'
    options = _strategy(rng)
    if roll < 0.35:
        address = rng.choice([*ADDRESSES, "address(dst_ptr)"])
        outcome = _either(stock=False) if address == "address(dst_ptr)" else _error()
        reference = '{"dst_ptr": S["dst_ptr"]}' if address == "address(dst_ptr)" else None
        return Draft("addresses", "address_load_kernel", [("dst_ptr", dst), ("address", address), ("n", "300")],
                     "(3,)", outcome, kwargs=[("BLOCK", "128")], options=options, reference=reference)  # fmt: skip
    if roll < 0.7:
        shift = rng.choice(["0", "2**62", *ROUNDTRIP_SHIFTS])
        outcome = (
            OK if shift == "0" else _either("src_ptr", stock=False) if shift == "2**62" else _error("src_ptr")
        )
        reference = None if outcome.expect == "error" else copy_ref % (300, 0)
        return Draft("addresses", "roundtrip_load_kernel", [("src_ptr", src), ("dst_ptr", dst), ("n", "300"), ("shift", shift)],
                     "(3,)", outcome, kwargs=[("BLOCK", "128")], options=options, reference=reference)  # fmt: skip
    byte_shift = rng.choice([1, 2, 3, 5, 6, 7, -4, 4, 0])
    outcome = OK if byte_shift in (0, 4) else _error("src_ptr")
    count = 299 if byte_shift == 4 else 300
    reference = None if outcome.expect == "error" else copy_ref % (count, byte_shift // 4)
    return Draft("addresses", "misaligned_load_kernel",
                 [("src_ptr", src), ("dst_ptr", dst), ("n", str(count)), ("byte_shift", str(byte_shift))],
                 "(3,)", outcome, kwargs=[("BLOCK", "128")], options=options, reference=reference)  # fmt: skip


def strided(rng: random.Random) -> Draft:
    """Non-contiguous views, negative strides, transposes, and strides that do not fit the array."""
    dtype = rng.choice([*STANDARD, "bfloat16"])
    size = rng.choice([2, 37, 300])
    block = rng.choice([32, 128])
    if rng.random() < 0.3:
        rows, cols = rng.choice([(3, 50), (17, 17), (64, 5)])
        d = f'data("{dtype}", {rows * cols}).reshape({rows}, {cols})'
        src = rng.choice(
            [
                f"np.asfortranarray({d})",
                f"{d}.T.copy().T",
                f"torch_of({d}).T.contiguous().T",
                f"{d}[:, ::-1][:, ::-1]",
            ]
        )
        stock = "torch" in src or "asfortranarray" in src
        return Draft(
            "strided",
            "copy_2d_kernel",
            [("src_ptr", src), ("dst_ptr", f'data("{dtype}", {rows * cols}, start=9).reshape({rows}, {cols})'),
             ("rows", str(rows)), ("cols", str(cols)), ("src_s0", "stride(src_ptr, 0)"), ("src_s1", "stride(src_ptr, 1)"),
             ("dst_s0", "stride(dst_ptr, 0)"), ("dst_s1", "stride(dst_ptr, 1)")],
            f"({-(-rows // 16)}, {-(-cols // 16)})",
            Outcome(stock=stock),
            kwargs=[("BLOCK_R", "16"), ("BLOCK_C", "16")],
            options=_strategy(rng),
            reference=f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {rows * cols}).reshape({rows}, {cols})}}',
        )  # fmt: skip
    step = rng.choice([2, 3])
    d, z = f'data("{dtype}", {size})', f'data("{dtype}", {size}, start=200)'
    views = [
        (f"spread({d}, {step})", str(step), True),
        (f"backwards({d})", "-1", False),
        (f"torch_of(spread({d}, {step}))", str(step), True),
        (f"torch_of(np.ascontiguousarray({d}))", "1", True),
    ]
    src, src_stride, stock = rng.choice(views)
    dst, dst_stride = rng.choice([(z, "1"), (f"spread({z}, {step})", str(step)), (f"backwards({z})", "-1")])
    stock = stock and "backwards" not in dst
    outcome = Outcome(stock=stock)
    if rng.random() < 0.3:
        if src_stride == "-1":
            src_stride, outcome = (
                "1",
                _error("src_ptr"),
            )  # element 0 is at the end of its span: forwards leaves it
        else:
            src_stride, outcome = str(2 * int(src_stride)), _error("src_ptr")
        if size < 2:
            outcome = Outcome(stock=stock)
    draft = Draft(
        "strided",
        "strided_copy_kernel",
        [
            ("src_ptr", src),
            ("dst_ptr", dst),
            ("n", str(size)),
            ("src_stride", src_stride),
            ("dst_stride", dst_stride),
        ],
        f"({-(-size // block)},)",
        outcome,
        kwargs=[("BLOCK", str(block))],
        options=_strategy(rng),
    )
    if outcome.expect != "error":
        draft.reference = (
            f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {size}), "src_ptr": S["src_ptr"]}}'
        )
    return draft


def shapes(rng: random.Random) -> Draft:
    """Zero-size, 0-d and multi-dimensional arrays."""
    lib = rng.choice(["np", "torch"])
    wrap = (lambda e: e) if lib == "np" else (lambda e: f"torch_of({e})")
    roll = rng.choice(["empty", "empty read", "0-d", "0-d read past", "2-D", "empty grid"])
    n, grid, outcome = "0", "(1,)", OK
    if roll.startswith("empty"):
        src, dst = wrap("np.zeros(0, np.float32)"), wrap("np.zeros(0, np.float32)")
        if roll == "empty read":
            n, outcome = "4", _error("src_ptr", "dst_ptr")
        if roll == "empty grid":
            grid = "(0,)"
        count = 0 if outcome.expect == "ok" else -1
    elif roll.startswith("0-d"):
        src, dst = wrap("np.array(3.5, np.float32)"), wrap("np.array(-1.0, np.float32)")
        n, count, outcome = "1", 1, _either("src_ptr", "dst_ptr")
        if roll == "0-d read past":
            n, count, outcome = "2", -1, _error("src_ptr", "dst_ptr")
    else:
        src, dst = (
            wrap('data("float32", 300).reshape(3, 100)'),
            wrap('data("float32", 300, start=5).reshape(3, 100)'),
        )
        n, count, grid = "300", 300, "(3,)"
    draft = Draft("shapes", "copy_kernel", [("src_ptr", src), ("dst_ptr", dst), ("n", n)], grid, outcome,
                  kwargs=[("BLOCK", "128")], options=_strategy(rng))  # fmt: skip
    if count >= 0:
        draft.reference = (
            f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {count}).reshape(np.shape(S["dst_ptr"]))}}'
        )
    return draft


RAISING = ["undefined_name_kernel", "device_assert_kernel", "static_assert_kernel", "shape_mismatch_kernel",
           "huge_tensor_kernel", "block_range_kernel", "block_index_kernel"]  # fmt: skip


def raising(rng: random.Random) -> Draft:
    """Kernels that fail part-way, after earlier programs stored."""
    kernel = rng.choice(RAISING)
    src = rng.choice(
        ['data("float32", 1000)', 'torch_of(data("float32", 1000))', 'readonly(data("float32", 1000))']
    )
    return Draft("raising", kernel, [("src_ptr", src), ("dst_ptr", 'data("float32", 1000, start=3)'), ("n", "1000")],
                 "(8,)", _error(), kwargs=[("BLOCK", "128")], options=_strategy(rng))  # fmt: skip


def interrupts(rng: random.Random) -> Draft:
    """Ctrl-C, once or several times, during a launch that never ends or during a long setup."""
    start = rng.choice([0.3, 0.8, 1.5])
    times = rng.choice([(start,), (start, start + 0.05), (start, start + 0.02, start + 0.04)])
    if rng.random() < 0.75:
        kernel, n = rng.choice([("endless_for_kernel", "2**62"), ("endless_while_kernel", "1")])
        dst = rng.choice(['data("float32", 64)', 'torch_of(data("float32", 64))'])
        return Draft("interrupts", kernel, [("dst_ptr", dst), ("n", n)], rng.choice(["(1,)", "(4,)"]),
                     kwargs=[("BLOCK", "64")], options=_strategy(rng), interrupts=times, expect="interrupt",
                     timeout=30)  # fmt: skip
    size = 1 << 23
    early = round(rng.uniform(0.0005, 0.05), 4)
    draft = Draft(
        "interrupts",
        "copy_kernel",
        [
            ("src_ptr", f'data("float32", {size})'),
            ("dst_ptr", f'data("float32", {size}, start=5)'),
            ("n", str(size)),
        ],
        f"({size // 4096},)",
        Outcome(stock=False),
        kwargs=[("BLOCK", "4096")],
        options=[("strategy", '"auto"')],
        interrupts=(early,) if rng.random() < 0.5 else (early, early + 0.001),
        expect="interrupt_or_ok",
        reference=f'{{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], {size}), "src_ptr": S["src_ptr"]}}',
        timeout=60,
        notes="during setup",
    )
    return draft


def options(rng: random.Random) -> Draft:
    """Options users set with a launch."""
    draft, _ = _copy_base(rng, "options", dtype="float32")
    draft.args[:2] = [("src_ptr", 'data("float32", 300)'), ("dst_ptr", 'data("float32", 300, start=500)')]
    draft.args[2] = ("n", "300")
    draft.kwargs = [("BLOCK", "128")]
    draft.grid = "(3,)"
    draft.reference = '{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], 300), "src_ptr": S["src_ptr"]}'
    settings, outcome = rng.choice(
        [
            ([("pids", "((99, 0, 0),)")], _error("pids")),
            ([("pids", "((0, 5, 0),)")], _error("pids")),
            ([("poison", '("nope",)')], _error("nope")),
            ([("poison", '("dst_ptr",)')], OK),
            ([("budget_bytes", "0")], OK),
            ([("order", '"shuffle"'), ("seed", "3")], OK),
            ([("order", '"reverse"')], OK),
            ([("capture", "False")], OK),
            ([("detect", "False")], OK),
            ([("numerics", '"stock"')], OK),
            ([("pids", "((1, 0, 0),)")], OK),
        ]
    )
    draft.options.extend(settings)
    draft.outcome = outcome
    if outcome.expect == "error":
        draft.reference = None
    return draft


FAMILIES: list[tuple[Callable[[random.Random], Draft], float]] = [
    (copy_arrays, 5),
    (axpy_scalars, 3),
    (keywords, 2.5),
    (grids, 3),
    (bad_pointers, 2.5),
    (shifted, 2.5),
    (addresses, 1.5),
    (strided, 2),
    (shapes, 1),
    (raising, 1),
    (interrupts, 0.5),
    (options, 0.7),
]


# ---- the floor: launches every run includes --------------------------------------------------------

_COPY = [("src_ptr", 'data("float32", 300)'), ("dst_ptr", 'data("float32", 300, start=500)'), ("n", "300")]
_COPIED = '{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], 300), "src_ptr": S["src_ptr"]}'


def _floor() -> list[Draft]:
    block = [("BLOCK", "128")]
    auto = [("strategy", '"auto"')]
    return [
        Draft("floor", "copy_kernel", list(_COPY), "(3,)", OK, block, auto, _COPIED, notes="a launch that works"),
        Draft("floor", "copy_kernel", [_COPY[0], ("dst_ptr", 'memmap(data("float32", 300, start=500), "r")'), _COPY[2]], "(3,)",
              _error("dst_ptr"), block, auto, notes="read-only memmap as output"),
        Draft("floor", "address_load_kernel", [_COPY[1], ("address", "2**64 - 2"), _COPY[2]], "(3,)", _error(), block, auto,
              notes="a pointer within an item of 2**64"),
        Draft("floor", "copy_kernel", [_COPY[0], ("dst_ptr", 'frombytes(data("float32", 300, start=500))'), _COPY[2]], "(3,)",
              _error("dst_ptr"), block, auto),
        Draft("floor", "shifted_store_kernel", [*_COPY, ("shift", "-2048")], "(3,)", _error("dst_ptr"), block, auto,
              notes="a store through dst that may land in src"),
        Draft("floor", "copy_kernel", [("src_ptr", 'big_endian(data("float32", 300))'), _COPY[1], _COPY[2]], "(3,)",
              _either("src_ptr", stock=False), block, auto, _COPIED),
        Draft("floor", "block_range_kernel", list(_COPY), "(3,)", _error(), block, auto),
        Draft("floor", "block_index_kernel", list(_COPY), "(3,)", _error(), block, auto),
        Draft("floor", "misaligned_load_kernel", [*_COPY, ("byte_shift", "2")], "(3,)", _error("src_ptr"), block, auto),
        Draft("floor", "count_kernel", [("counter_ptr", "np.zeros(1, np.int32)")], "(2.5,)", _error("grid"), options=auto),
        Draft("floor", "count_kernel", [("counter_ptr", "np.zeros(1, np.int32)")], '"8"', _error("grid"), options=auto),
        Draft("floor", "count_kernel", [("counter_ptr", "np.zeros(1, np.int32)")], "None", _error("grid"), options=auto),
        Draft("floor", "copy_kernel", list(_COPY), "(3,)", _error("BLOKC"), [*block, ("BLOKC", "3")], auto),
        Draft("floor", "copy_kernel", [("src_ptr", "[1.0, 2.0]"), _COPY[1], _COPY[2]], "(3,)", _error("src_ptr"), block, auto),
        Draft("floor", "copy_kernel", [_COPY[0], _COPY[1], ("n", "2**70")], "(3,)", _error("n"), block, auto),
        Draft("floor", "copy_kernel", [("src_ptr", "torch.zeros(300, dtype=torch.complex64)"), _COPY[1], _COPY[2]], "(3,)",
              _error("src_ptr"), block, auto),
        Draft("floor", "copy_kernel", [("src_ptr", 'torch.empty(300, device="meta")'), _COPY[1], _COPY[2]], "(3,)",
              _error("src_ptr"), block, auto),
        Draft("floor", "shifted_load_kernel", [*_COPY, ("shift", "10**9")], "(3,)", _error("src_ptr"), block, auto,
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
        Draft("memory", "noop_kernel", [("dst_ptr", 'data("float32", 4)')], "(2**31 - 1,)", _error("grid"),
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
