"""The families of fuzz cases: each draws an ordinary launch and replaces one or two of its inputs
with something from the pools."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from tests.fuzz.expect import OK, Draft, Outcome, either, fails
from tests.fuzz.pools import (
    ADDRESSES,
    ALPHAS,
    BAD_POINTERS,
    BLOCKS,
    DTYPES,
    GRIDS_BAD,
    GRIDS_EITHER,
    GRIDS_OK,
    KEYWORD_MISTAKES,
    RAISING,
    ROUNDTRIP_SHIFTS,
    SHIFTS,
    STANDARD,
    apply_keyword_mistake,
    array_kind,
    masked_count,
    n_values,
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
        draft.outcome = draft.outcome & fails("n")
        draft.reference = None
        return
    assert value is not None
    count = masked_count(value, programs * block)
    if count == 0:
        draft.outcome = Outcome(stock=draft.outcome.stock)  # no lane loads or stores: no array is touched
    if count > size:
        draft.outcome = draft.outcome & fails("src_ptr", "dst_ptr", "n")
        draft.reference = None
        return
    if kind == "loose":
        draft.outcome = draft.outcome & either("n")
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
            draft.outcome = draft.outcome & fails("n")
            count = -1
        elif (count := masked_count(value, -(-size // block) * block)) > size:
            draft.outcome = draft.outcome & fails("x_ptr", "y_ptr", "out_ptr", "n")
            count = -1
        elif kind == "loose":
            draft.outcome = draft.outcome & either("n")
    if count >= 0 and draft.outcome.expect != "error":
        draft.reference = (
            f'{{"out_ptr": axpy(S["out_ptr"], A["alpha"], S["x_ptr"], S["y_ptr"], {count}), '
            f'"x_ptr": S["x_ptr"], "y_ptr": S["y_ptr"]}}'
        )
    return draft


def keywords(rng: random.Random) -> Draft:
    """Missing, extra, misspelt and repeated keywords and constexprs."""
    draft, info = _copy_base(rng, "keywords", dtype=rng.choice(["float32", "int32", "float16"]))
    draft.grid = f"({-(-info['size'] // info['block'])},)"
    if rng.random() < 0.7:
        mistake = rng.choice(KEYWORD_MISTAKES)
        draft.notes = mistake
        draft.outcome = draft.outcome & apply_keyword_mistake(draft, info["size"], info["block"], mistake)
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
def grids(rng: random.Random) -> Draft:
    """Every kind of grid, counted by a kernel whose programs each add one."""
    g = rng.randint(1, 5)
    counter = rng.choice(["np.zeros(1, np.int32)", "torch_of(np.zeros(1, np.int32))"])
    pool = rng.choices(["ok", "either", "bad"], [4, 1, 6])[0]
    if pool == "bad":
        draft = Draft("grids", "count_kernel", [("counter_ptr", counter)], rng.choice(GRIDS_BAD).format(g=g),
                      fails("grid"), options=_strategy(rng))  # fmt: skip
        draft.interrupts = (8.0,)  # a grid that runs instead of being refused is stopped, and fails
        return draft
    grid, programs = rng.choice(GRIDS_OK if pool == "ok" else GRIDS_EITHER)
    outcome = OK if pool == "ok" else either("grid", stock=False)
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
    draft.outcome = fails(role)
    draft.reference = None
    return draft


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
            fails(origin),
        )  # where the other array is in the caller's memory
    elif roll < 0.3 and not load:
        dst, shift, outcome = f'inside(data("float32", {size}, start=500), 64)', "-64", fails(origin)
    elif roll < 0.35:
        shift, outcome = "2**62", either(origin, "shift", stock=False)  # wraps round to the same address
    else:
        shift, outcome = rng.choice(SHIFTS).format(n=size, block=block, arena=arena), fails(origin)
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


def addresses(rng: random.Random) -> Draft:
    """Pointers made from integers: raw addresses, a pointer's own address moved, misaligned bytes."""
    roll = rng.random()
    src, dst = 'data("float32", 300)', 'data("float32", 300, start=500)'
    copy_ref = '{"dst_ptr": copied(S["dst_ptr"], S["src_ptr"], %d, shift=%d), "src_ptr": S["src_ptr"]}'
    options = _strategy(rng)
    if roll < 0.35:
        address = rng.choice([*ADDRESSES, "address(dst_ptr)"])
        outcome = either(stock=False) if address == "address(dst_ptr)" else fails()
        reference = '{"dst_ptr": S["dst_ptr"]}' if address == "address(dst_ptr)" else None
        return Draft("addresses", "address_load_kernel", [("dst_ptr", dst), ("address", address), ("n", "300")],
                     "(3,)", outcome, kwargs=[("BLOCK", "128")], options=options, reference=reference)  # fmt: skip
    if roll < 0.7:
        shift = rng.choice(["0", "2**62", *ROUNDTRIP_SHIFTS])
        outcome = (
            OK if shift == "0" else either("src_ptr", stock=False) if shift == "2**62" else fails("src_ptr")
        )
        reference = None if outcome.expect == "error" else copy_ref % (300, 0)
        return Draft("addresses", "roundtrip_load_kernel", [("src_ptr", src), ("dst_ptr", dst), ("n", "300"), ("shift", shift)],
                     "(3,)", outcome, kwargs=[("BLOCK", "128")], options=options, reference=reference)  # fmt: skip
    byte_shift = rng.choice([1, 2, 3, 5, 6, 7, -4, 4, 0])
    outcome = OK if byte_shift in (0, 4) else fails("src_ptr")
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
                fails("src_ptr"),
            )  # element 0 is at the end of its span: forwards leaves it
        else:
            src_stride, outcome = str(2 * int(src_stride)), fails("src_ptr")
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
            n, outcome = "4", fails("src_ptr", "dst_ptr")
        if roll == "empty grid":
            grid = "(0,)"
        count = 0 if outcome.expect == "ok" else -1
    elif roll.startswith("0-d"):
        src, dst = wrap("np.array(3.5, np.float32)"), wrap("np.array(-1.0, np.float32)")
        n, count, outcome = "1", 1, either("src_ptr", "dst_ptr")
        if roll == "0-d read past":
            n, count, outcome = "2", -1, fails("src_ptr", "dst_ptr")
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


def raising(rng: random.Random) -> Draft:
    """Kernels that fail part-way, after earlier programs stored."""
    kernel = rng.choice(RAISING)
    src = rng.choice(
        ['data("float32", 1000)', 'torch_of(data("float32", 1000))', 'readonly(data("float32", 1000))']
    )
    return Draft("raising", kernel, [("src_ptr", src), ("dst_ptr", 'data("float32", 1000, start=3)'), ("n", "1000")],
                 "(8,)", fails(), kwargs=[("BLOCK", "128")], options=_strategy(rng))  # fmt: skip


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
            ([("pids", "((99, 0, 0),)")], fails("pids")),
            ([("pids", "((0, 5, 0),)")], fails("pids")),
            ([("poison", '("nope",)')], fails("nope")),
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
