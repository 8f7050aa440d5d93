"""The batched strategy's storage: a batch's records and events as columns, made objects on first use.

A reader who wants to know what a launch recorded needs `records.py`; this is how the batched
strategy keeps thousands of programs' records without a Python object per program and statement.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernel_nb.trace.records import MemoryEvent, Record, Summary
from kernel_nb.trace.row_forms import GatheredRows, TileRows


@functools.lru_cache(maxsize=64)
def repeated(value: str | None, rows: int) -> tuple[str | None, ...]:
    """`value` for each of `rows` rows (a record block's pointer arguments, mostly one for every
    program): one tuple per value and batch size, which the collector stops walking after its
    first look, where a list per record block was walked after every launch."""
    return (value,) * rows


@dataclass
class SummaryColumns:
    """`Summary.of` for each row of a 2-D array, computed together (bit-identical results)."""

    lo: np.ndarray
    hi: np.ndarray
    mean: np.ndarray
    size: int
    nan: np.ndarray | None = None  # per row, NaN and Inf counts (None: all zero)
    inf: np.ndarray | None = None

    @staticmethod
    def of(values: np.ndarray) -> SummaryColumns:
        rows, size = values.shape
        if size == 0 or rows == 0:
            empty = np.full(rows, np.nan)
            return SummaryColumns(empty, empty, empty, size)
        if values.dtype.kind in "iu":
            lo, hi = values.min(axis=1), values.max(axis=1)
            return SummaryColumns(lo, hi, values.mean(axis=1, dtype=np.float64), size)
        if values.dtype.kind == "b":  # as Summary.of: 0.0 / 1.0, the mean is the share of True
            every, some = values.all(axis=1), values.any(axis=1)
            count = np.where(every, size, 0)
            mixed = np.flatnonzero(some & ~every)  # only these need counting (all and any are fast)
            if mixed.size:
                count[mixed] = np.count_nonzero(values[mixed], axis=1)
            return SummaryColumns(
                np.asarray(every, np.float64), np.asarray(some, np.float64), count / size, size
            )
        as_float = values.astype(np.float64) if values.dtype.kind != "f" else values
        lo, hi = as_float.min(axis=1), as_float.max(axis=1)
        # min and max carry a row's NaN and reach its Infs: only those rows need a closer look
        dirty = np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)))
        if not dirty.size:
            return SummaryColumns(lo, hi, as_float.mean(axis=1, dtype=np.float64), size)
        # rows holding NaN or Inf: statistics of their finite lanes, as Summary.of computes them
        if dirty.size == rows:
            part, mean = as_float, np.empty(rows, np.float64)
        else:
            part = as_float[dirty]
            with np.errstate(invalid="ignore"):  # Inf - Inf in a dirty row's mean, replaced below
                mean = as_float.mean(axis=1, dtype=np.float64)
        finite = np.isfinite(part)
        count = finite.view(np.uint8).sum(axis=1, dtype=np.int64)
        nan, inf = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
        # min carries a row's NaN: only rows that hold one are counted for it
        with_nan = np.flatnonzero(np.isnan(lo[dirty]))
        if with_nan.size:
            nan[dirty[with_nan]] = np.isnan(part[with_nan]).view(np.uint8).sum(axis=1, dtype=np.int64)
        inf[dirty] = size - count - nan[dirty]
        lo, hi = lo.astype(np.float64), hi.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = np.where(finite, part, 0).sum(axis=1, dtype=np.float64)
            # a finite min is a finite lane's, with no NaN in the row and no -Inf below it: the
            # lanes are looked at again only where the min is not (causal attention's -Inf mask
            # makes every row dirty, and its max finite); a masked reduction (`where=`) took
            # 3 times as long as the plain one over a row with the others put out of its way
            empty = count == 0
            lo[dirty] = _finite_extreme(lo[dirty], part, finite, empty, np.minimum, np.inf)
            hi[dirty] = _finite_extreme(hi[dirty], part, finite, empty, np.maximum, -np.inf)
            mean[dirty] = np.where(empty, np.nan, total / np.maximum(count, 1))
            lo[dirty[empty]], hi[dirty[empty]] = np.nan, np.nan
        return SummaryColumns(lo, hi, mean, size, nan, inf)

    def repeated(self, rows: int) -> SummaryColumns:
        """The columns of a one-row summary, for `rows` rows holding that same value."""

        def spread(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.broadcast_to(a, (rows,))

        return SummaryColumns(
            np.broadcast_to(self.lo, (rows,)),
            np.broadcast_to(self.hi, (rows,)),
            np.broadcast_to(self.mean, (rows,)),
            self.size,
            spread(self.nan),
            spread(self.inf),
        )

    def placed(self, at: np.ndarray, rows: int) -> SummaryColumns:
        """These columns (of rows `at` of a batch of `rows`) as columns for the whole batch; the
        other rows hold zeros (rows that made no record)."""

        def spread(a: np.ndarray | None) -> np.ndarray | None:
            if a is None:
                return None
            full = np.zeros(rows, a.dtype)
            full[at] = a
            return full

        lo, hi, mean = spread(self.lo), spread(self.hi), spread(self.mean)
        assert lo is not None and hi is not None and mean is not None
        return SummaryColumns(lo, hi, mean, self.size, spread(self.nan), spread(self.inf))

    def row(self, r: int) -> Summary:
        nan = 0 if self.nan is None else int(self.nan[r])
        inf = 0 if self.inf is None else int(self.inf[r])
        return Summary(float(self.lo[r]), float(self.hi[r]), float(self.mean[r]), nan, inf, self.size)

    def nonfinite(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row: holds NaN, holds Inf."""
        rows = len(self.lo)
        if self.nan is None or self.inf is None:
            return np.zeros(rows, bool), np.zeros(rows, bool)
        return self.nan > 0, self.inf > 0


class DeferredSummaries(SummaryColumns):
    """`SummaryColumns.of(rows)` for rows that are kept values anyway, made when first read: a
    row's own summary when one program is looked at (`Summary.of`, which the columns equal), the
    columns when every row's are wanted. A launch whose values are kept then spends nothing on
    summaries until someone looks."""

    def __init__(
        self,
        rows: np.ndarray | GatheredRows,
        at: np.ndarray | None = None,
        batch: int = 0,
        rest: tuple[SummaryColumns, np.ndarray] | None = None,
        nonfinite: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """`rows`: (programs, lanes), one per row of the batch; or, with `at` (ascending), the
        rows `at` of a batch of `batch`, whose other rows made no record (see `placed`) or, with
        `rest`, have their columns made already: (columns, their rows), rows whose values are
        not kept. `rows` may stand in for the values (GatheredRows); `nonfinite`: what
        `nonfinite()` gives, where known already."""
        self._rows: np.ndarray | GatheredRows | None = rows
        self._at = at
        self._batch = batch
        self._rest = rest
        self._columns: SummaryColumns | None = None
        self._nonfinite = nonfinite  # (known already: see `nonfinite`)
        self.size = int(np.prod(rows.shape[1:]))

    @property
    def waiting(self) -> np.ndarray | GatheredRows | None:
        """The rows whose summaries are still to be made (None: none)."""
        return None if self._columns is not None else self._rows

    def settle(self) -> SummaryColumns:
        """The columns, made now if not yet; the rows are no longer held."""
        if self._columns is None:
            assert self._rows is not None
            columns = SummaryColumns.of(_made(self._rows))
            if self._at is not None:
                columns = columns.placed(self._at, self._batch)
            if self._rest is not None:
                columns = _with_rows(columns, *self._rest)
            self._columns, self._rows = columns, None
        return self._columns

    lo = property(lambda self: self.settle().lo)  # type: ignore[assignment]
    hi = property(lambda self: self.settle().hi)  # type: ignore[assignment]
    mean = property(lambda self: self.settle().mean)  # type: ignore[assignment]
    nan = property(lambda self: self.settle().nan)  # type: ignore[assignment]
    inf = property(lambda self: self.settle().inf)  # type: ignore[assignment]

    def row(self, r: int) -> Summary:
        if self._rows is not None and self._at is not None:
            i = int(np.searchsorted(self._at, r))
            if i < len(self._at) and self._at[i] == r:
                return Summary.of(self._rows[i])
            if self._rest is not None:
                columns, at = self._rest
                i = int(np.searchsorted(at, r))
                if i < len(at) and at[i] == r:
                    return columns.row(i)
        elif self._rows is not None:
            return Summary.of(self._rows[r])
        return self.settle().row(r)  # (a row that made no record: zeros, as `placed` holds it)

    def nonfinite(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row: holds NaN, holds Inf, from one pass (a row's sum is finite unless it holds
        NaN or Inf, or overflows: only rows whose sum is not are looked at lane by lane)."""
        if self._columns is not None:
            return self._columns.nonfinite()
        if self._nonfinite is None:
            assert self._rows is not None
            rows = _made(self._rows)
            has_nan, has_inf = np.zeros(len(rows), bool), np.zeros(len(rows), bool)
            if rows.dtype.kind == "f":
                suspect = np.flatnonzero(~np.isfinite(_row_sums(rows)))
                if suspect.size:
                    part = rows[suspect]
                    has_nan[suspect], has_inf[suspect] = (
                        np.isnan(part).any(axis=1),
                        np.isinf(part).any(axis=1),
                    )
            if self._at is not None:
                has_nan, has_inf = (
                    _placed(has_nan, self._at, self._batch),
                    _placed(has_inf, self._at, self._batch),
                )
            if self._rest is not None:
                columns, at = self._rest
                has_nan[at], has_inf[at] = columns.nonfinite()
            self._nonfinite = has_nan, has_inf
        return self._nonfinite

    def __reduce__(self) -> tuple[Any, ...]:
        c = self.settle()
        return (SummaryColumns, (c.lo, c.hi, c.mean, c.size, c.nan, c.inf))


def _finite_extreme(
    plain: np.ndarray,
    rows: np.ndarray,
    finite: np.ndarray,
    empty: np.ndarray,
    reduce: np.ufunc,
    away: float,
) -> np.ndarray:
    """Per row, the min (`reduce` np.minimum, `away` Inf) or max (np.maximum, -Inf) of its finite
    lanes, given `plain`, the reduction over every lane: where that is finite it is the answer
    (an extreme over all lanes that is finite is a finite lane's); elsewhere the others are put
    out of the way. Rows without finite lanes (`empty`) are left as they are, for the caller."""
    again = np.flatnonzero(~(np.isfinite(plain) | empty))
    if not again.size:
        return plain
    out = np.array(plain)
    if again.size == len(plain):
        out[:] = reduce.reduce(np.where(finite, rows, away), axis=1)
    else:
        out[again] = reduce.reduce(np.where(finite[again], rows[again], away), axis=1)
    return out


def _row_sums(rows: np.ndarray) -> np.ndarray:
    """Each row's sum, finite unless the row holds NaN or Inf (or the sum overflows): for fp32
    and fp64 as a product with ones, which BLAS makes in a quarter of the time a reduction takes
    (vector add 2**22: 0.3 ms against 1.3), NaN and Inf carried through it as through a sum."""
    with np.errstate(all="ignore"):
        if rows.dtype in (np.float32, np.float64) and rows.ndim == 2:
            return rows @ np.ones(rows.shape[1], rows.dtype)
        return np.add.reduce(rows, axis=1)


def _placed(column: np.ndarray, at: np.ndarray, rows: int) -> np.ndarray:
    full = np.zeros(rows, column.dtype)
    full[at] = column
    return full


def _with_rows(columns: SummaryColumns, rest: SummaryColumns, at: np.ndarray) -> SummaryColumns:
    """`columns` with rows `at` taken from `rest`."""

    def put(mine: np.ndarray | None, theirs: np.ndarray | None) -> np.ndarray | None:
        if mine is None and theirs is None:
            return None
        made = np.zeros(len(columns.lo), np.int64) if mine is None else np.array(mine)
        made[at] = 0 if theirs is None else theirs
        return made

    lo, hi, mean = put(columns.lo, rest.lo), put(columns.hi, rest.hi), put(columns.mean, rest.mean)
    assert lo is not None and hi is not None and mean is not None
    return SummaryColumns(lo, hi, mean, columns.size, put(columns.nan, rest.nan), put(columns.inf, rest.inf))


def summary_rows(values: np.ndarray) -> list[Summary]:
    """`Summary.of` for each row of a 2-D array (see SummaryColumns)."""
    columns = SummaryColumns.of(values)
    return [columns.row(r) for r in range(values.shape[0])]


def _made(rows: np.ndarray | GatheredRows) -> np.ndarray:
    return rows.made() if isinstance(rows, GatheredRows) else rows


def _row_nbytes(rows: Any) -> int:
    if isinstance(rows, (TileRows, GatheredRows)):
        return rows.row_nbytes()
    return int(rows[0].nbytes)


@dataclass
class RecordBlock:
    """One statement's values for a batch of programs, as columns: the batched strategy records
    these, and each program's `Record` is built from its row when the program's records are read."""

    stmt: int
    seq: Any  # int, or per row once programs of the batch ran different statement counts
    call_path: tuple[str, ...]
    iteration: tuple[int, ...]
    dtype: str
    shape: tuple[int, ...]
    summaries: SummaryColumns
    values: np.ndarray | TileRows | GatheredRows | None
    pointer_args: Sequence[str | None]
    value_rows: np.ndarray | None = None  # row → index in `values` (-1: not kept); None: all rows
    rows: np.ndarray | None = None  # which rows' programs ran the statement (None: all)

    def value(self, row: int) -> np.ndarray | None:
        if self.values is None:
            return None
        if self.value_rows is None:
            return self.values[row]
        at = int(self.value_rows[row])
        return self.values[at] if at >= 0 else None

    def build(self, row: int, keep: bool) -> Record:
        value = self.value(row) if keep else None
        return Record(
            self.stmt,
            self.seq if isinstance(self.seq, int) else int(self.seq[row]),
            self.call_path,
            self.iteration,
            self.dtype,
            self.shape,
            self.summaries.row(row),
            value,
            self.pointer_args[row],
        )

    def row_bytes(self) -> int:
        """Bytes of one kept row's value."""
        return 0 if self.values is None else _row_nbytes(self.values) if len(self.values) else 0


@dataclass
class EventBlock:
    """One memory access of a batch of programs, as columns (see RecordBlock).

    Attributes:
        arg: the argument rows with an active lane access.
        active, lo, hi: per row (see MemoryEvent), as int64 arrays: lists of a Python int per
            program were most of what the collector walked after a launch of thousands of them.
        indices, mask, values, before: per kept row (`kept_rows` maps a row to its index here).
    """

    kind: str
    seq: Any  # int, or per row (see RecordBlock)
    file: str
    line: int
    arg: str | None
    active: np.ndarray | list[int]  # (lists in traces saved before they were arrays)
    lo: np.ndarray | list[int]
    hi: np.ndarray | list[int]
    indices: np.ndarray | TileRows | None = None
    mask: np.ndarray | None = None
    values: np.ndarray | GatheredRows | None = None
    before: np.ndarray | None = None
    kept_rows: np.ndarray | None = None  # row → index in the arrays (-1: not kept); None: all rows
    rows: np.ndarray | None = None  # which rows' programs made the access (None: all)
    lanes: int = 0  # lanes per row, masked ones included

    def masks_lanes(self, row: int, keep: bool) -> bool:
        """Whether row's event, made, has a mask with masked-off lanes (a kept load's mask)."""
        at = row if self.kept_rows is None else int(self.kept_rows[row])
        if not keep or at < 0 or self.mask is None:
            return False
        if self.lanes:
            return bool(self.active[row] < self.lanes)
        return not self.mask[at].all()

    def build(self, row: int, keep: bool) -> MemoryEvent:
        active = int(self.active[row])
        live = active > 0
        event = MemoryEvent(
            self.kind,
            self.seq if isinstance(self.seq, int) else int(self.seq[row]),
            self.file,
            self.line,
            self.arg if live else None,
            active,
            int(self.lo[row]),
            int(self.hi[row]),
            lanes=self.lanes,
        )
        at = row if self.kept_rows is None else int(self.kept_rows[row])
        if keep and at >= 0 and self.mask is not None:
            event.mask = self.mask[at]
            event.indices = None if self.indices is None or not live else self.indices[at]
            event.values = None if self.values is None else self.values[at]
            event.before = None if self.before is None else self.before[at]
        return event

    def row_bytes(self) -> np.ndarray | int:
        """Per row, bytes of its arrays when kept (rows with no active lane hold no indices)."""
        held = sum(_row_nbytes(a) for a in (self.mask, self.values, self.before) if a is not None and len(a))
        if self.indices is None or not len(self.indices):
            return held
        live = self.__dict__.get("_live")
        if live is None:  # asked of every block at least twice a batch: 4,096 ints made an array once
            live = self.__dict__["_live"] = np.asarray(self.active) > 0
        return held + np.where(live, _row_nbytes(self.indices), 0)


class Deferred(list):  # type: ignore[type-arg]
    """A program's records or events; rows of blocks (`RecordBlock`, `EventBlock`) become objects on
    first use. All programs of a batch run the same statements, so they share one list of blocks,
    each reading its own row: a launch of thousands of programs costs no Python object per program
    and statement until someone looks at a program.
    """

    __slots__ = ("blocks", "keep_values", "row")  # one per program and kind: no __dict__ each

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.blocks: list[Any] = []
        self.row = 0
        self.keep_values = True

    @classmethod
    def shared(cls, blocks: list[Any], row: int, keep_values: bool) -> Deferred:
        """A program's list reading row `row` of the batch's `blocks` (see `share`)."""
        made = list.__new__(cls)  # empty: list.__init__ and __init__ have nothing to add
        made.blocks, made.row, made.keep_values = blocks, row, keep_values
        return made

    def share(self, blocks: list[Any], row: int) -> None:
        """Take this program's rows from `blocks` (the list keeps growing while the batch runs)."""
        self._fill()
        self.blocks, self.row = blocks, row

    def _fill(self) -> None:
        if self.blocks:
            blocks, self.blocks = self.blocks, []
            row, keep = self.row, self.keep_values
            list.extend(self, (b.build(row, keep) for b in blocks if b.rows is None or b.rows[row]))

    def pending(self) -> Iterator[tuple[Any, int, bool]] | None:
        """(block, row, keep values) for each item not made yet, without making it; None once some
        item was made (then iterate the list itself)."""
        if list.__len__(self):
            return None
        row, keep = self.row, self.keep_values
        return ((b, row, keep) for b in self.blocks if b.rows is None or b.rows[row])

    def __len__(self) -> int:
        row = self.row
        return list.__len__(self) + sum(1 for b in self.blocks if b.rows is None or b.rows[row])

    def __iter__(self) -> Iterator[Any]:
        self._fill()
        return list.__iter__(self)

    def __getitem__(self, index: Any) -> Any:
        self._fill()
        return list.__getitem__(self, index)

    def __eq__(self, other: object) -> bool:
        self._fill()
        return list.__eq__(self, other)

    def __repr__(self) -> str:
        self._fill()
        return list.__repr__(self)

    def append(self, item: Any) -> None:
        self._fill()
        list.append(self, item)

    def __reduce__(self) -> Any:
        self._fill()
        return (type(self), (list(list.__iter__(self)),))

    __hash__ = None  # type: ignore[assignment]


class Records(Deferred):
    """A program's records (see Deferred)."""

    __slots__ = ()


class Events(Deferred):
    """A program's memory events (see Deferred)."""

    __slots__ = ()
