"""Tile forms of a batch's values: a pointer or integer block that is one tile at a per-program
place (`base[program] + lanes`), found once and carried through pointer arithmetic, so that loads,
stores, their checks and their records need no array per lane (see batched/builder, batched/access).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb.engine import triton_compat

TensorHandle = triton_compat.TensorHandle


@dataclass
class Affine:
    """A pointer block whose every program holds `base[program] + lanes` (bytes): one tile shape at
    a per-program place, as pointer arithmetic over tl.arange makes and a loop's `ptrs += step`
    keeps. Found once by comparing the rows, then carried through pointer steps, so that the tiles
    a loop walks need no per-element proof (see batched/intervals)."""

    base: np.ndarray  # int64 address per program (or one for all)
    lanes: np.ndarray  # int64 byte offset of every lane from `base`
    _elements: dict[int, tuple[np.ndarray, np.ndarray | None]] = field(default_factory=dict)
    _runs: dict[int, tuple[np.ndarray, int] | None] = field(default_factory=dict)
    _columns: dict[tuple[int, tuple[int, int]], tuple[np.ndarray, int] | None] = field(default_factory=dict)

    def moved(self, base: np.ndarray) -> Affine:
        """The same lanes at another base (their derived forms kept)."""
        return Affine(base, self.lanes, self._elements, self._runs, self._columns)

    def runs(self, itemsize: int) -> tuple[np.ndarray, int] | None:
        """The lanes (in elements) as runs of consecutive elements of one length: each run's first
        element and the length (None: runs shorter than 8 lanes, or of different lengths)."""
        if itemsize not in self._runs:
            lanes, _ = self.elements(itemsize)
            breaks = np.flatnonzero(np.diff(lanes) != 1)
            run = int(breaks[0]) + 1 if breaks.size else lanes.size
            found = None
            if run >= 8 and lanes.size % run == 0:
                grid = lanes.reshape(-1, run)
                if (grid - grid[:, :1] == np.arange(run)).all():
                    found = (np.ascontiguousarray(grid[:, 0]), run)
            self._runs[itemsize] = found
        return self._runs[itemsize]

    def transposed_runs(self, itemsize: int, block: tuple[int, int]) -> tuple[np.ndarray, int] | None:
        """Where the lanes of a 2-D `block` hold consecutive elements down each column (a tile read
        transposed): each column's first element and the column's length (None: they do not, or
        columns shorter than 8 lanes)."""
        key = (itemsize, block)
        if key not in self._columns:
            lanes, _ = self.elements(itemsize)
            found = None
            rows, cols = block
            if rows >= 8 and lanes.size == rows * cols:
                grid = lanes.reshape(rows, cols)
                if (grid - grid[:1] == np.arange(rows)[:, None]).all():
                    found = (np.ascontiguousarray(grid[0]), rows)
            self._columns[key] = found
        return self._columns[key]

    def elements(self, itemsize: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The lanes in elements, and the same sorted if no two lanes share an element (else None)."""
        if itemsize not in self._elements:
            lanes = self.lanes // itemsize
            ordered = np.sort(lanes)
            distinct = ordered.size < 2 or bool((ordered[1:] != ordered[:-1]).all())
            self._elements[itemsize] = (lanes, ordered if distinct else None)
        return self._elements[itemsize]


AFFINE = "_kernel_nb_affine"  # the attribute of a pointer TensorHandle holding its Affine (False: none)
SPLAT = "_kernel_nb_splat"  # the attribute of a splat TensorHandle holding each program's one value


INTEGER_FORM = "_kernel_nb_integer_form"  # an integer block's IntegerForm, where it has one


@dataclass
class IntegerForm:
    """An integer block whose every program holds `base[program] + lanes` (a program's offset plus
    a tl.arange, as `pid * BLOCK + tl.arange(0, BLOCK)` makes): pointers moved by it are Affine
    without a look at their lanes."""

    base: np.ndarray  # int64 per program (or one for all)
    lanes: np.ndarray  # int64, every lane of the block


def integer_form(handle: Any) -> IntegerForm | None:
    """The IntegerForm of an integer handle: carried, a splat's values, or a block that is the
    same in every program."""
    form = getattr(handle, INTEGER_FORM, None)
    if form is not None:
        return form
    data = handle.data
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "iu" or data.ndim == 0:
        return None
    splat = getattr(handle, SPLAT, None)
    if splat is not None:
        return IntegerForm(splat.astype(np.int64), np.zeros(data[0].size, np.int64))
    if data.shape[0] == 1:
        return IntegerForm(np.zeros(1, np.int64), data.reshape(-1).astype(np.int64))
    return None


def scaled_form(lhs: Any, rhs: Any, dtype: np.dtype) -> IntegerForm | None:
    """The IntegerForm of `lhs * rhs` where one side has a form and the other is one integer for
    every program (`offsets * stride`), if the products stay inside `dtype`."""
    a, b = integer_form(lhs), integer_form(rhs)
    if a is None or b is None:
        return None
    for form, other in ((a, b), (b, a)):
        if other.base.size != 1 or other.lanes.size == 0 or form.base.size == 1:
            continue
        if other.lanes.min() != other.lanes.max():
            continue
        c = int(other.base[0]) + int(other.lanes[0])
        info = np.iinfo(dtype)
        ends = [
            (int(form.base.min()) + int(form.lanes.min())) * c,
            (int(form.base.max()) + int(form.lanes.max())) * c,
        ]
        if min(ends) < info.min or max(ends) > info.max:
            return None  # wrapped around: the form would not be the values
        return IntegerForm(form.base * c, form.lanes * c)
    return None


def summed_form(lhs: Any, rhs: Any, dtype: np.dtype | None = None) -> IntegerForm | None:
    """The IntegerForm of `lhs + rhs` where both sides have one and their sum is per program and
    stays inside the integer type (`dtype`: the result's, else the operands' Triton type's)."""
    a, b = integer_form(lhs), integer_form(rhs)
    if a is None or b is None or a.lanes.size != b.lanes.size:
        return None
    base, lanes = a.base + b.base, a.lanes + b.lanes
    if base.size == 1:
        return None  # the same in every program: no form needed
    dtype = triton_compat.np_dtype(lhs.dtype.scalar) if dtype is None else dtype
    if dtype.kind not in "iu":
        return None
    info = np.iinfo(dtype)
    if int(base.min()) + int(lanes.min()) < info.min or int(base.max()) + int(lanes.max()) > info.max:
        return None  # wrapped around: the form would not be the values
    return IntegerForm(base, lanes)


def reshaped(lanes: np.ndarray, block: tuple[int, ...], how: Any) -> np.ndarray:
    """A tile's lanes after a shape operation on its block (`how` maps the (block) array of lanes
    to the new block's, as broadcast, reshape and transpose do to the values)."""
    return np.ascontiguousarray(how(lanes.reshape(block))).reshape(-1)


def carry_form(arg: Any, shape: tuple[int, ...], how: Any, data: Any) -> Any:
    """The result of a shape operation on `arg` (new data shape `shape`; `data()` makes its
    values, `how` does to a block of lanes what the operation does to a block of values), with the
    tile form of `arg` carried over: AffinePointers stay lazy, an IntegerForm follows its lanes."""
    affine = getattr(arg, AFFINE, None)
    if isinstance(arg, AffinePointers) and affine:
        lanes = reshaped(affine.lanes, arg._shape[1:], how)
        moved = affine if np.array_equal(lanes, affine.lanes) else Affine(affine.base, lanes)
        return AffinePointers(moved, shape, arg.dtype.scalar)
    if isinstance(arg, FormIntegers) and arg._data is None:
        form = getattr(arg, INTEGER_FORM)
        lanes = reshaped(form.lanes, arg._shape[1:], how)
        return FormIntegers(IntegerForm(form.base, lanes), shape, arg.dtype.scalar, arg.np_dtype)
    result = TensorHandle(data(), arg.dtype.scalar)
    form = getattr(arg, INTEGER_FORM, None)
    if form is not None:
        block = np.asarray(arg.data).shape[1:]
        setattr(result, INTEGER_FORM, IntegerForm(form.base, reshaped(form.lanes, block, how)))
    return result


class AffinePointers(TensorHandle):  # type: ignore[misc,valid-type]
    """A pointer block held as its Affine form; its addresses (`data`) are made only if something
    asks for them. The batched loads and stores, their checks and their records work from the form,
    so the tiles a launch walks cost no address array each."""

    _shape: tuple[int, ...]
    _data: np.ndarray | None

    def __init__(self, affine: Affine, shape: tuple[int, ...], dtype: Any) -> None:
        # the interpreter's own constructor would check `data`: set the fields directly
        self.__dict__.update(dtype=dtype, attr={}, _shape=shape, _data=None)
        setattr(self, AFFINE, affine)

    @property  # type: ignore[override]
    def data(self) -> np.ndarray:
        if self._data is None:
            self._data = Addresses(getattr(self, AFFINE), self._shape).made()
        return self._data

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._data = value


class FormIntegers(TensorHandle):  # type: ignore[misc,valid-type]
    """An integer block held as its IntegerForm, one row per program of the batch: its values
    (`data`) are made only if something asks for them. The offsets `pid * BLOCK + tl.arange(0,
    BLOCK)` then cost no array per lane: pointer arithmetic, a comparison with one value per
    program (`offsets < n`) and the statement's record work from the form."""

    _shape: tuple[int, ...]
    _data: np.ndarray | None
    np_dtype: np.dtype

    def __init__(self, form: IntegerForm, shape: tuple[int, ...], dtype: Any, np_dtype: np.dtype) -> None:
        # the interpreter's own constructor would check `data`: set the fields directly
        self.__dict__.update(dtype=dtype, attr={}, _shape=shape, _data=None, np_dtype=np_dtype)
        setattr(self, INTEGER_FORM, form)

    @property  # type: ignore[override]
    def data(self) -> np.ndarray:
        if self._data is None:
            form, dtype = getattr(self, INTEGER_FORM), self.np_dtype
            # in the values' own type, no 64-bit array per lane: the sums fit it (modulo 2**bits
            # a base or a lane outside it adds up the same)
            rows = np.add(form.base.astype(dtype).reshape(-1, 1), form.lanes.astype(dtype).reshape(1, -1))
            self._data = rows.reshape(self._shape)
        return self._data

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._data = value


def formed_integers(form: IntegerForm | None, lhs: Any, rhs: Any) -> FormIntegers | None:
    """The result of an integer operation on `lhs` and `rhs` as a FormIntegers, where `form` holds
    its values (one base per program, every lane's offset, no wrap-around: the callers check) in
    32 bits or fewer, as the interpreter would type them."""
    if form is None or lhs.dtype.scalar != rhs.dtype.scalar:
        return None
    dtype = triton_compat.np_dtype(lhs.dtype.scalar)
    if dtype.kind not in "iu" or dtype.itemsize > 4:
        return None
    shape = np.broadcast_shapes(shape_of(lhs), shape_of(rhs))
    if len(shape) < 2 or form.base.size != shape[0] or form.lanes.size != int(np.prod(shape[1:])):
        return None
    return FormIntegers(form, shape, lhs.dtype.scalar, dtype)


def formed_comparison(lhs: Any, rhs: Any, op: Any) -> Any:
    """`op(lhs, rhs)` of an integer comparison where one side is a FormIntegers not made yet and
    the other one value per program (`offsets < n`): from the form, `base + lanes < n` being
    `lanes < n - base`, in 64-bit integers where both are exact (None: not such a comparison)."""
    lazy = lhs if isinstance(lhs, FormIntegers) and lhs._data is None else None
    other = rhs
    if lazy is None:
        lazy, other = (rhs, lhs) if isinstance(rhs, FormIntegers) and rhs._data is None else (None, rhs)
    if lazy is None or isinstance(other, (FormIntegers, AffinePointers)):
        return None
    splat = getattr(other, SPLAT, None)  # a scalar made a block: one value per program
    values = other.data if splat is None else splat
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iu" or values.dtype.itemsize > 4:
        return None
    shape = lazy._shape
    if values.size != (values.shape[0] if values.ndim else 1) or values.size not in (1, shape[0]):
        return None
    form = getattr(lazy, INTEGER_FORM)
    block = shape[1:]
    lanes = form.lanes.reshape((1, *block))
    limit = (values.reshape(-1).astype(np.int64) - form.base).reshape((-1,) + (1,) * len(block))
    same = (
        None if limit.size != shape[0] else _same_everywhere(form.lanes, limit.reshape(-1), op, lazy is lhs)
    )
    if same is not None:
        # `offsets < n` where every program's tile lies inside: one value for the whole block,
        # which the loads, stores and records take as they take an unmasked access's mask
        return TensorHandle(np.broadcast_to(np.bool_(same), shape), lhs.dtype.scalar)
    made = op(lanes, limit) if lazy is lhs else op(limit, lanes)
    if made.shape != shape:
        return None
    return TensorHandle(made, lhs.dtype.scalar)


_ORDERED = (np.less, np.less_equal, np.greater, np.greater_equal)


def _same_everywhere(lanes: np.ndarray, limit: np.ndarray, op: Any, lanes_first: bool) -> bool | None:
    """The value of an order comparison between every lane and its row's limit where it is one
    value for every lane of every row (None: it is not, or the comparison is not an order). The
    lanes where an order comparison holds are a prefix or a suffix of the lanes in order: true at
    the least and the greatest lane, it is true at every lane; false at both, false at every one."""
    if op not in _ORDERED or not lanes.size or not limit.size:
        return None
    ends = np.array([lanes.min(), lanes.max()], np.int64).reshape(2, 1)
    at_ends = op(ends, limit) if lanes_first else op(limit, ends)
    if at_ends.all():
        return True
    if not at_ends.any():
        return False
    return None


class Addresses:
    """The (rows, *block) addresses of an access through AffinePointers, made only where asked for
    (`np.asarray`, indexing by a mask, `view`): the range check and the tiled loads and stores need
    their shape and form alone. Taking some rows (an integer index) stays lazy."""

    def __init__(
        self, affine: Affine, shape: tuple[int, ...], rows: np.ndarray | None = None, batch: int = 0
    ) -> None:
        self.affine = affine
        self.shape = shape
        self.rows = rows
        self.batch = batch or shape[0]
        self._made: np.ndarray | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def made(self) -> np.ndarray:
        if self._made is None:
            base = np.broadcast_to(self.affine.base, (self.batch,))
            if self.rows is not None:
                base = base[self.rows]
            rows = base.reshape(-1, 1) + self.affine.lanes.reshape(1, -1)
            self._made = rows.view(np.uint64).reshape(self.shape)
        return self._made

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        made = self.made()
        return made if dtype is None else made.astype(dtype)

    def reshape(self, *shape: Any) -> Any:
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        if tuple(shape) == (self.shape[0], -1):  # (rows, lanes): still lazy
            lanes = int(np.prod(self.shape[1:]))
            return Addresses(self.affine, (self.shape[0], lanes), self.rows, self.batch)
        return self.made().reshape(shape)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, np.ndarray) and key.ndim == 1 and key.dtype.kind in "iu" and self.rows is None:
            return Addresses(self.affine, (key.size, *self.shape[1:]), key, self.batch)
        return self.made()[key]

    def view(self, dtype: Any) -> np.ndarray:
        return self.made().view(dtype)

    def astype(self, dtype: Any) -> np.ndarray:
        return self.made().astype(dtype)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        return self.made().min(*args, **kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Any:
        return self.made().max(*args, **kwargs)


def rows_of(handle: Any, at: np.ndarray) -> Any:
    """A batch-wide handle's rows `at`, its tile form and splat kept (a splat stays a view)."""
    affine = getattr(handle, AFFINE, None) or None
    if isinstance(handle, AffinePointers) and affine is not None:
        return AffinePointers(
            affine.moved(_picked(affine.base, at)), (at.size, *handle._shape[1:]), handle.dtype
        )
    data = handle.data
    splat = getattr(handle, SPLAT, None)
    if splat is not None:
        one = _picked(splat, at)
        shape = (at.size, *data.shape[1:])
        result = TensorHandle(
            np.broadcast_to(one.reshape((one.size,) + (1,) * (len(shape) - 1)), shape), handle.dtype
        )
        setattr(result, SPLAT, one)
    else:
        result = TensorHandle(data[at], handle.dtype)
    form = getattr(handle, INTEGER_FORM, None)
    if form is not None:
        setattr(result, INTEGER_FORM, IntegerForm(_picked(form.base, at), form.lanes))
    if affine is not None:
        setattr(result, AFFINE, affine.moved(_picked(affine.base, at)))
    return result


def _picked(per_program: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Rows `at` of a value per program (one value for all stays as it is)."""
    return per_program if per_program.size == 1 else per_program[at]


def widened(old: Any, new: Any, at: np.ndarray, batch: int) -> Any:
    """A batch-wide handle holding `old`'s rows, but rows `at` from `new` (which holds those rows,
    or one row for all of them); both of one type."""
    old_affine = getattr(old, AFFINE, None) or None
    new_affine = getattr(new, AFFINE, None) or None
    if (
        isinstance(old, AffinePointers)
        and isinstance(new, AffinePointers)
        and old_affine is not None
        and new_affine is not None
        and np.array_equal(old_affine.lanes, new_affine.lanes)
    ):
        base = np.array(np.broadcast_to(old_affine.base, (batch,)))
        base[at] = np.broadcast_to(new_affine.base, (at.size,))
        return AffinePointers(new_affine.moved(base), (batch, *new._shape[1:]), new.dtype)
    data = new.data
    full = np.array(np.broadcast_to(old.data, (batch, *data.shape[1:])), dtype=data.dtype)
    full[at] = data
    return TensorHandle(full, new.dtype)


def shape_of(handle: Any) -> tuple[int, ...]:
    """A handle's data shape, without making the values of a lazy form (AffinePointers,
    FormIntegers)."""
    if isinstance(handle, (AffinePointers, FormIntegers)):
        return handle._shape  # type: ignore[no-any-return]
    return handle.data.shape  # type: ignore[no-any-return]


def affine_of(rows: np.ndarray) -> Affine | None:
    """The Affine form of (programs, lanes) addresses, if they have one."""
    values = rows.view(np.int64)
    base = values[:, 0]
    lanes = values[0] - values[0, 0]
    if not (values - base[:, None] == lanes).all():
        return None
    return Affine(np.array(base), np.array(lanes))


def pointer_origin(ptr: Any, size: int) -> Affine | None:
    """A pointer block that is one address per program (a splat), as an Affine of `size` lanes."""
    splat = getattr(ptr, SPLAT, None)
    if splat is None:
        data = ptr.data
        if data.shape[0] != 1 or data.size == 0 or not (data == data.reshape(-1)[0]).all():
            return None
        splat = data.reshape(-1)[:1]
    return Affine(splat.astype(np.uint64).view(np.int64), np.zeros(size, np.int64))
