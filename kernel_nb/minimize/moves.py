"""The ways a launch is made smaller: its sizes, its grid, its block sizes and its values.

Each move yields (what it changed, the smaller launch), smallest first: the search keeps the first
that still fails the same way, so that one size takes one pass. A size is a value the arguments
share (`spec.iter_symbols`): changing it changes every int argument that holds it and every
dimension of a C-contiguous array that has it (the array cut to its leading part), and strides the
kernel is given follow the arrays' new layout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from kernel_nb.minimize.spec import LaunchSpec, base_of, iter_symbols
from kernel_nb.trace import Finding

Move = Iterator[tuple[str, LaunchSpec]]


def smaller_sizes(v: int) -> list[int]:
    """Sizes to try instead of `v`, smallest first: small numbers, `v` halved again and again (and
    one more), and each power of two with `v`'s remainder modulo it (a size that is no multiple of
    a block stays none)."""
    out = {1, 2, 3, 4}
    power = 1
    while power < v:
        out.update((v // power, v // power + 1, power + v % power))
        power *= 2
    return sorted(c for c in out if 1 <= c < v)


def shrink_sizes(spec: LaunchSpec, finding: Finding) -> Move:
    """Each size made smaller; arrays cut to the part that holds the element the finding names,
    or that its program reads (where each program along a grid axis takes an equal share of the
    size: rows, blocks), else to their leading part, else to their trailing part."""
    for size in iter_symbols(spec):
        for smaller in smaller_sizes(size):
            for start in _starts(spec, finding, size, smaller):
                changed = _resized(spec, size, smaller, start)
                if changed is not None:
                    yield changed


def _starts(spec: LaunchSpec, finding: Finding, size: int, smaller: int) -> list[int]:
    starts = [
        min(max(at - shift, 0), size - smaller)
        for at in _named(spec, finding, size)
        for shift in (0, smaller - 1)
    ]
    pid = finding.pid
    if pid is not None:
        for axis, programs in enumerate(spec.grid):
            if programs > 1:
                share = -(-size // programs)
                starts.append(min(pid[axis] * share, size - smaller))
    starts += [0, size - smaller]
    return list(dict.fromkeys(starts))


def _named(spec: LaunchSpec, finding: Finding, size: int) -> list[int]:
    """Where along a dimension of `size` the first element a finding names lies, in its argument
    (a C-contiguous array): the indices of that element along each such dimension."""
    array = spec.arrays().get(finding.arg or "")
    elements = finding.elements
    if array is None or elements is None or not np.size(elements) or not array.flags.c_contiguous:
        return []
    first = int(np.ravel(elements)[0])
    if not 0 <= first < array.size:
        return []
    index = np.unravel_index(first, array.shape)
    return [int(i) for i, d in zip(index, array.shape) if d == size]


def shrink_grid(spec: LaunchSpec, finding: Finding) -> Move:
    """The axes no argument gives (see spec's module docstring), on their own."""
    for axis, (size, formulas) in enumerate(zip(spec.grid, spec.formulas)):
        if formulas or size <= 1:
            continue
        for smaller in smaller_sizes(size):
            yield f"grid axis {axis}: {size} → {smaller}", spec.with_grid(axis, smaller)


def shrink_blocks(spec: LaunchSpec, finding: Finding) -> Move:
    """Constexprs that are powers of two (block sizes), from 1 up: alone, and with the sizes a
    grid axis divides by them made as much smaller (the same programs, each with a smaller block)."""
    for name, value in spec.ints("constexpr").items():
        if value < 2 or value & (value - 1):
            continue
        smaller = 1
        while smaller < value:
            alone = spec.with_values({name: smaller})
            yield f"{name}: {value} → {smaller}", alone
            for size in _divided_by(spec, name):
                programs = -(-size // value)
                last = size - (programs - 1) * value
                scaled = _resized(alone, size, (programs - 1) * smaller + min(smaller, last), 0)
                if scaled is not None:
                    yield f"{name}: {value} → {smaller}, {scaled[0]}", scaled[1]
            smaller *= 2


def _divided_by(spec: LaunchSpec, block: str) -> list[int]:
    """The sizes a grid axis divides by constexpr `block` (see spec.LaunchSpec.formulas)."""
    sizes = [
        spec.value_of(size)
        for formulas in spec.formulas
        for formula in formulas[:1]
        for size, by in formula
        if by == ("constexpr", block, 0)
    ]
    return list(dict.fromkeys(sizes))


def simpler_values(spec: LaunchSpec, finding: Finding) -> Move:
    """Each array's elements as zeros, ones, their signs, then small whole numbers; each float
    scalar as 0 and 1."""
    for name, array in spec.arrays().items():
        if not array.size or array.dtype.kind not in "fciu":
            continue
        with np.errstate(all="ignore"):
            tries = [("zeros", np.zeros_like(array)), ("ones", np.ones_like(array))]
            if array.dtype.kind in "fc":
                tries.append(("signs", np.sign(array).astype(array.dtype)))
                tries.append(
                    ("whole numbers in [-4, 4]", np.clip(np.round(array), -4, 4).astype(array.dtype))
                )
            else:
                tries.append(("numbers in [0, 4]", np.clip(array, 0, 4).astype(array.dtype)))
        for what, values in tries:
            if not np.array_equal(values, array, equal_nan=array.dtype.kind in "fc"):
                yield f"{name}: {what}", spec.with_values({name: _like(values, array)})
    for name, value in spec.values.items():
        if spec.kinds[name] == "scalar" and isinstance(value, float):
            for simple in (0.0, 1.0):
                if value != simple:
                    yield f"{name}: {value!r} → {simple!r}", spec.with_values({name: simple})


MOVES = (shrink_sizes, shrink_grid, shrink_blocks, simpler_values)


def _resized(spec: LaunchSpec, size: int, smaller: int, start: int) -> tuple[str, LaunchSpec] | None:
    arrays = spec.arrays()
    new_arrays: dict[str, np.ndarray] = {}
    for name, array in arrays.items():
        if array.flags.c_contiguous and size in array.shape:
            part = slice(start, start + smaller)
            cut = tuple(part if d == size else slice(None) for d in array.shape)
            new_arrays[name] = np.ascontiguousarray(array[cut])
    changed: dict[str, Any] = dict(new_arrays)
    scalars = spec.ints("scalar")
    for name, value in scalars.items():
        stride = _stride_of(name, value, arrays, new_arrays)
        new = stride if stride is not None else smaller if value == size else value
        if new != value:
            changed[name] = type(spec.values[name])(new)
    if not changed:
        return None
    names = ", ".join(sorted(n for n in changed if n in scalars) or sorted(new_arrays))
    where = f" (arrays from element {start})" if start and new_arrays else ""
    return f"{names}: {size} → {smaller}{where}", spec.with_values(changed)


def _stride_of(
    name: str, value: int, before: dict[str, np.ndarray], after: dict[str, np.ndarray]
) -> int | None:
    """The new value of a stride argument (one whose name says so, equal to an element stride of
    a resized array): that array's new stride along the same axis (None: not such an argument)."""
    if "stride" not in name.lower():
        return None
    for array_name, resized in after.items():
        old = before[array_name]
        for axis, stride in enumerate(old.strides):
            if stride // old.itemsize == value and old.shape[axis] > 1:
                return resized.strides[axis] // resized.itemsize
    return None


def _like(values: np.ndarray, array: np.ndarray) -> np.ndarray:
    """`values` laid out as `array` is (its strides, over a buffer of its span)."""
    if array.flags.c_contiguous:
        return np.ascontiguousarray(values)
    out = np.lib.stride_tricks.as_strided(
        np.zeros_like(base_of(array)), array.shape, array.strides, writeable=True
    )
    out[...] = values
    return out
