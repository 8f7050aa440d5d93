"""What the refusal of an out-of-bounds access can tell beyond its elements: which lanes left the
argument, and, where every active lane did, what made the offsets (a mask cannot be the fault).

The facts are read off what is at hand when the access is refused: the pointer block's lanes (the
steps a tile's axes take), the argument's strides, and the source text of the access's pointer
expression with the kernel's scalar arguments it multiplies by. Nothing is inferred beyond that.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable, Iterator

import numpy as np

from kernel_nb.trace import ArgumentInfo, SourceInfo
from kernel_nb.trace.coordinates import blocks_text

FOLLOWED = 3  # names of the pointer expression followed to their assignment, at most


def lanes_text(out: np.ndarray) -> str:
    """The lanes set in `out` (the pointer block's shape) as indices of the block: "lanes[104:128]"
    or "lanes[28:32, 0:32]"; "" for a scalar access."""
    if out.ndim == 0:
        return ""
    return blocks_text("lanes", np.argwhere(out), noun="lanes")


def tile_steps(addresses: np.ndarray, itemsize: int) -> tuple[int, ...] | None:
    """The elements each axis of a pointer block of more than one axis moves by, where every lane is
    the first plus these steps (None: one axis, or no such form)."""
    if addresses.ndim < 2 or 0 in addresses.shape:
        return None
    values = addresses.astype(np.int64)
    first = values[(0,) * values.ndim]
    steps = []
    for axis, extent in enumerate(values.shape):
        at = [0] * values.ndim
        at[axis] = min(1, extent - 1)
        steps.append(int(values[tuple(at)] - first))
    grid = np.indices(values.shape).reshape(values.ndim, -1).T
    if (first + grid @ np.array(steps, np.int64) != values.reshape(-1)).any():
        return None
    if any(step % itemsize for step in steps):
        return None
    return tuple(step // itemsize for step in steps)


def block_past_the_end(addresses: np.ndarray, active: np.ndarray, itemsize: int, lo: int, size: int) -> bool:
    """Whether an access is one run of consecutive elements, every lane active, wholly past the
    argument's end (its first element `lo`, the argument's `size`): the block of a program past
    the data, which a mask bound too large lets through as readily as wrong offsets make it."""
    if addresses.ndim != 1 or addresses.size < 2 or not np.all(active) or lo < size:
        return False
    return bool((np.diff(addresses.astype(np.int64)) == itemsize).all())


def offsets_hint(
    arg: str,
    shape: tuple[int, ...],
    strides: tuple[int, ...],
    steps: tuple[int, ...] | None,
    terms: list[str],
) -> str:
    """What follows "the offsets are wrong, not the mask": the pointer's terms, the steps they make
    the tile take, and, for an n-D argument, its strides, as far as each is known ("" if none)."""
    moves = None if steps is None else f"step the tile's axes by ({', '.join(map(str, steps))}) elements"
    if terms and moves:
        said = f"{' and '.join(terms)} {moves}"
    elif terms:
        said = f"the offsets come from {' and '.join(terms)}"
    else:
        said = "" if moves is None else f"the offsets {moves}"
    if len(shape) < 2:
        return f": {said}" if said else ""
    real = f"{arg}'s strides are ({', '.join(map(str, strides))})"
    if not said:
        return f"; {real}"
    return f": {said}, while {real}; check which stride goes with which index"


def swapped_strides_hint(
    arg: str, strides: tuple[int, ...], steps: tuple[int, ...] | None, terms: Callable[[], list[str]]
) -> str:
    """When only some lanes are out of bounds the mask is the first suspect, but a tile whose axes
    step by the argument's strides in another order (a transpose's strides passed swapped) puts
    lanes out as well: then say so too ("" when the steps are the strides, or no permutation of them).
    A tile read transposed on purpose steps so as well, hence "or", not a verdict."""
    if steps is None or len(steps) != len(strides) or len(strides) < 2 or tuple(steps) == tuple(strides):
        return ""
    if sorted(abs(s) for s in steps) != sorted(abs(s) for s in strides):
        return ""
    said = terms()
    by = f"{' and '.join(said)} step" if said else "the offsets step"
    return (
        f"; or the offsets: {by} the tile's axes by ({', '.join(map(str, steps))}) elements while {arg}'s strides "
        f"are ({', '.join(map(str, strides))}); unless the tile is read transposed on purpose, check which "
        "stride goes with which index"
    )


def pointer_terms(
    sources: dict[str, SourceInfo], file: str, line: int, op: str, args: list[ArgumentInfo]
) -> list[str]:
    """The terms `index * stride` of the pointer the load, store or atomic on `line` takes, where a
    factor is a scalar argument of the kernel: "`offs_m[:, None] * stride_xm` (stride_xm = 1)"
    (`op`: "load", "store", "atomic_add", ...).
    A pointer named by a variable is followed to its latest assignment before `line`."""
    scalars = {
        a.name: a.value
        for a in args
        if a.kind in ("scalar", "constexpr") and isinstance(a.value, (int, np.integer))
    }
    found = _function_at(sources, file, line)
    if found is None or not scalars:
        return []
    text, tree, first = found
    row = line - first + 1  # the line in the parsed text
    calls = [c for c in _accesses(tree) if c.lineno <= row <= (c.end_lineno or c.lineno)]
    if not calls:
        return []
    # `tl.store(p, tl.load(q))`: the call of the refused operation, where its name tells
    call = next((c for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == op), calls[0])
    pointer = (
        call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "pointer"), None)
    )
    terms: list[str] = []
    for term in _terms(tree, pointer, row, FOLLOWED):
        names = sorted({n.id for n in ast.walk(term) if isinstance(n, ast.Name) and n.id in scalars})
        if not names:
            continue
        values = ", ".join(f"{name} = {int(scalars[name])}" for name in names)
        terms.append(f"`{ast.get_source_segment(text, term) or ast.unparse(term)}` ({values})")
    return terms


def _function_at(sources: dict[str, SourceInfo], file: str, line: int) -> tuple[str, ast.Module, int] | None:
    for source in sources.values():
        if source.file != file or not source.first_line <= line < source.first_line + source.text.count("\n"):
            continue
        text = textwrap.dedent(source.text)
        try:
            return text, ast.parse(text), source.first_line
        except SyntaxError:
            return None
    return None


def _accesses(tree: ast.Module) -> Iterator[ast.Call]:
    """The calls of tl.load, tl.store and atomics, outer calls first."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in ("load", "store") or name.startswith("atomic_"):
                yield node


def _terms(tree: ast.Module, node: ast.expr | None, row: int, follow: int) -> Iterator[ast.expr]:
    """The products among the added terms of `node`, variables followed `follow` deep."""
    if node is None:
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        yield from _terms(tree, node.left, row, follow)
        yield from _terms(tree, node.right, row, follow)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        yield node
    elif isinstance(node, ast.Name) and follow:
        yield from _terms(tree, _assigned(tree, node.id, row), row, follow - 1)


def _assigned(tree: ast.Module, name: str, row: int) -> ast.expr | None:
    """The value of the latest plain assignment to `name` before `row`."""
    latest: ast.Assign | None = None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and node.lineno < row
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            and (latest is None or node.lineno > latest.lineno)
        ):
            latest = node
    return None if latest is None else latest.value
