"""What an interpreted launch recorded: plain data over numpy arrays.

A `Trace` holds one `Launch` per kernel launch. A launch holds, per program id, the values of
every recorded statement (`Record`), every memory access (`MemoryEvent`) and what the program
printed; launch-wide per-buffer access maps (`BufferMap`); and the `Finding`s of the detectors.
Nothing here imports Triton or Jupyter: a trace can be saved, loaded and inspected anywhere.
"""

from __future__ import annotations

import html
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from kernel_nb.diff import Comparison
    from kernel_nb.divergence import Divergence

Pid = tuple[int, int, int]
Severity = Literal["error", "warning", "info"]

_MAGIC = b"kernel_nb-trace\x00"
_FORMAT = 1


@dataclass(frozen=True)
class Statement:
    """A recorded place in the kernel or one of its helpers.

    Attributes:
        id: index into `Launch.statements`.
        file: source file of the function.
        line: line in that file.
        name: the variable assigned (the loop variable for a `for` header).
        function: the function's name (the kernel or a @triton.jit helper).
        kind: "assign", "augassign" or "loop".
    """

    id: int
    file: str
    line: int
    name: str
    function: str
    kind: str


@dataclass(frozen=True)
class Summary:
    """Statistics of one recorded value, kept for every program."""

    min: float
    max: float
    mean: float
    nan: int
    inf: int
    size: int

    @staticmethod
    def of(value: np.ndarray) -> Summary:
        """Summarise an array (any numeric dtype, ml_dtypes included)."""
        size = int(value.size)
        if size == 0:
            return Summary(np.nan, np.nan, np.nan, 0, 0, 0)
        if value.dtype.kind == "b":
            return Summary(float(value.all()), float(value.any()), np.count_nonzero(value) / size, 0, 0, size)
        if value.dtype.kind in "iu":
            lo, hi = int(value.min()), int(value.max())
            return Summary(float(lo), float(hi), float(value.mean(dtype=np.float64)), 0, 0, size)
        as_float = value.astype(np.float64) if value.dtype.kind != "f" else value
        nan_mask = np.isnan(as_float)
        inf_mask = np.isinf(as_float)
        nan, inf = int(nan_mask.sum()), int(inf_mask.sum())
        if not (nan or inf):
            mean = as_float.mean(dtype=np.float64)
            return Summary(float(as_float.min()), float(as_float.max()), float(mean), 0, 0, size)
        finite = ~(nan_mask | inf_mask)
        count = size - nan - inf
        if count == 0:
            return Summary(np.nan, np.nan, np.nan, nan, inf, size)
        # as SummaryColumns computes it for many rows at once: the finite lanes, others as zeros
        total = np.where(finite, as_float, 0).sum(dtype=np.float64)
        return Summary(
            float(as_float.min(where=finite, initial=np.inf)),
            float(as_float.max(where=finite, initial=-np.inf)),
            float(total / count),
            nan,
            inf,
            size,
        )


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
            lo = np.asarray(values.all(axis=1), np.float64)
            hi = np.asarray(values.any(axis=1), np.float64)
            return SummaryColumns(lo, hi, np.count_nonzero(values, axis=1) / size, size)
        as_float = values.astype(np.float64) if values.dtype.kind != "f" else values
        lo, hi = as_float.min(axis=1), as_float.max(axis=1)
        # min and max carry a row's NaN and reach its Infs: only those rows need a closer look
        dirty = np.flatnonzero(~(np.isfinite(lo) & np.isfinite(hi)))
        mean = as_float.mean(axis=1, dtype=np.float64)
        if not dirty.size:
            return SummaryColumns(lo, hi, mean, size)
        # rows holding NaN or Inf: statistics of their finite lanes, as Summary.of computes them
        part = as_float[dirty]
        nan_mask, inf_mask = np.isnan(part), np.isinf(part)
        finite = ~(nan_mask | inf_mask)
        count = finite.sum(axis=1)
        nan, inf = np.zeros(rows, np.int64), np.zeros(rows, np.int64)
        nan[dirty], inf[dirty] = nan_mask.sum(axis=1), inf_mask.sum(axis=1)
        lo, hi, mean = lo.astype(np.float64), hi.astype(np.float64), mean.copy()
        with np.errstate(invalid="ignore", divide="ignore"):
            total = np.where(finite, part, 0).sum(axis=1, dtype=np.float64)
            lo[dirty] = np.where(count > 0, part.min(axis=1, where=finite, initial=np.inf), np.nan)
            hi[dirty] = np.where(count > 0, part.max(axis=1, where=finite, initial=-np.inf), np.nan)
            mean[dirty] = np.where(count > 0, total / count, np.nan)
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


def summary_rows(values: np.ndarray) -> list[Summary]:
    """`Summary.of` for each row of a 2-D array (see SummaryColumns)."""
    columns = SummaryColumns.of(values)
    return [columns.row(r) for r in range(values.shape[0])]


@dataclass
class Record:
    """The value one statement produced in one program, at one loop iteration.

    Attributes:
        stmt: the `Statement` id.
        seq: position in the program's execution order (records and events share the counter).
        call_path: the @triton.jit helpers on the stack, outermost first, as "name:line" of each call.
        iteration: loop iteration indices of the enclosing loops, outermost first.
        dtype: Triton's name of the element type ("fp32", "i32", "pointer<fp16>", ...).
        shape: the value's shape (() for a scalar).
        summary: statistics, always kept.
        value: a copy of the value, or None when the program's values were not kept.
            For pointers: element offsets into `pointer_arg`.
        pointer_arg: for pointer values, the argument the first lane points into.
    """

    stmt: int
    seq: int
    call_path: tuple[str, ...]
    iteration: tuple[int, ...]
    dtype: str
    shape: tuple[int, ...]
    summary: Summary
    value: np.ndarray | None = None
    pointer_arg: str | None = None


@dataclass
class MemoryEvent:
    """One tl.load, tl.store or atomic of one program.

    Attributes:
        kind: "load", "store", "atomic_<op>" (add, fadd, max, ...) or "atomic_cas".
        seq: position in the program's execution order.
        file, line: where in the source.
        arg: the argument the active lanes access (None when no lane was active).
        indices: element offsets into `arg` for every lane (masked lanes included), or None when
            the program's values were not kept.
        mask: which lanes were active (None when not kept).
        values: loaded values, or for stores and atomics the element values after the access.
        before: for stores and atomics, the element values before the access.
        active: number of active lanes.
        lo, hi: the range [lo, hi) of element offsets the active lanes touched.
    """

    kind: str
    seq: int
    file: str
    line: int
    arg: str | None
    active: int
    lo: int
    hi: int
    indices: np.ndarray | None = None
    mask: np.ndarray | None = None
    values: np.ndarray | None = None
    before: np.ndarray | None = None


class TileRows:
    """Rows of integer arrays that are one tile at a per-row shift: row i is `shift[i] + lanes`.

    Stands in for the (rows, *shape) array it describes (pointer offsets and memory indices of a
    tiled access), so that a batch keeps two small vectors instead of a value per lane; a row is
    made when someone reads it.
    """

    def __init__(self, shift: np.ndarray, lanes: np.ndarray, shape: tuple[int, ...]) -> None:
        self.shift = shift
        self.lanes = lanes
        self.shape = (len(shift), *shape)

    def __len__(self) -> int:
        return len(self.shift)

    def __getitem__(self, row: int) -> np.ndarray:
        return (self.lanes + self.shift[row]).reshape(self.shape[1:])

    def row_nbytes(self) -> int:
        """Bytes of one row once made (what the serial strategy keeps per program)."""
        return int(self.lanes.size) * np.dtype(np.int64).itemsize


def _row_nbytes(rows: Any) -> int:
    if isinstance(rows, TileRows):
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
    values: np.ndarray | TileRows | None
    pointer_args: list[str | None]
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
        active, lo, hi: per row (see MemoryEvent).
        indices, mask, values, before: per kept row (`kept_rows` maps a row to its index here).
    """

    kind: str
    seq: Any  # int, or per row (see RecordBlock)
    file: str
    line: int
    arg: str | None
    active: list[int]
    lo: list[int]
    hi: list[int]
    indices: np.ndarray | TileRows | None = None
    mask: np.ndarray | None = None
    values: np.ndarray | None = None
    before: np.ndarray | None = None
    kept_rows: np.ndarray | None = None  # row → index in the arrays (-1: not kept); None: all rows
    rows: np.ndarray | None = None  # which rows' programs made the access (None: all)

    def build(self, row: int, keep: bool) -> MemoryEvent:
        live = self.active[row] > 0
        event = MemoryEvent(
            self.kind,
            self.seq if isinstance(self.seq, int) else int(self.seq[row]),
            self.file,
            self.line,
            self.arg if live else None,
            self.active[row],
            self.lo[row],
            self.hi[row],
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
        held = sum(a[0].nbytes for a in (self.mask, self.values, self.before) if a is not None and len(a))
        if self.indices is None or not len(self.indices):
            return held
        return held + np.where(np.asarray(self.active) > 0, _row_nbytes(self.indices), 0)


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
        made = cls()
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


@dataclass(slots=True)
class ProgramTrace:
    """Everything one program recorded."""

    pid: Pid
    records: list[Record] = field(default_factory=Records)
    events: list[MemoryEvent] = field(default_factory=Events)
    stdout: str = ""
    kept: bool = False


@dataclass
class ArgumentInfo:
    """A kernel argument as the launch saw it."""

    name: str
    kind: Literal["buffer", "scalar", "constexpr", "tuple", "none", "other"]
    dtype: str = ""
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    value: Any = None


def _counts(name: str, hands_out: bool = False) -> Any:
    """A BufferMap property over `name` that adds the pending marks in first."""

    def get(bmap: BufferMap) -> np.ndarray:
        bmap._settle()
        if hands_out:
            bmap._writes_out = True
        return getattr(bmap, name)  # type: ignore[no-any-return]

    def put(bmap: BufferMap, value: np.ndarray) -> None:
        bmap._settle()
        if hands_out:
            bmap._writes_out = True
        setattr(bmap, name, value)

    return property(get, put)


class BufferMap:
    """Launch-wide access counts for one buffer argument, per element of its span.

    Attributes:
        arg: the argument name.
        size: number of elements in the argument's memory span.
        origin: index in these arrays of element offset 0 (non-zero only for negative strides).
        shape: the argument's shape (for drawing).
        reads, writes: how many programs read / wrote each element (atomics count as both).
            Element offset k (as in MemoryEvent.indices) is at index k + origin.
        last_writer: linear program index of the last program that wrote each element (-1: none).
        oob: (linear program index, line, first offending element offset) of refused accesses.

    The batched strategy hands over each batch's marks (`add_marks`) and they are added to the
    counts only when these are read: most maps of a launch are never looked at, and adding them
    would touch every page of three arrays per argument.
    """

    def __init__(
        self,
        arg: str,
        size: int,
        shape: tuple[int, ...],
        reads: np.ndarray,
        writes: np.ndarray,
        last_writer: np.ndarray,
        origin: int = 0,
        oob: list[tuple[int, int, int]] | None = None,
    ) -> None:
        self.arg, self.size, self.shape, self.origin = arg, size, shape, origin
        self._reads, self._writes, self._last_writer = reads, writes, last_writer
        self.oob: list[tuple[int, int, int]] = [] if oob is None else oob
        self._writes_out = True  # `writes` may hold counts (see `fresh`)
        # (kind, first element, marks): "read" bools, "write" writer ids (-1: none), "read-count" /
        # "write-count" counts, added in by `_settle`; "read-later": (end, puts) that mark the reads
        self._later: list[tuple[str, int, Any]] = []

    @staticmethod
    def fresh(arg: str, size: int, shape: tuple[int, ...], origin: int = 0) -> BufferMap:
        """A map of no accesses yet; `written` can then tell without a look at every element."""
        bmap = BufferMap(
            arg,
            size,
            shape,
            np.zeros(size, np.int32),
            np.zeros(size, np.int32),
            BufferMap.nobody(size),
            origin,
        )
        bmap._writes_out = False
        return bmap

    def __repr__(self) -> str:
        return f"BufferMap(arg={self.arg!r}, size={self.size}, shape={self.shape}, origin={self.origin})"

    def __getstate__(self) -> dict[str, Any]:
        self._settle()
        return dict(self.__dict__)

    def add_marks(self, kind: str, start: int, marks: np.ndarray) -> None:
        """Marks of one batch for elements start.. (see `_later`); the map now owns `marks`."""
        self._later.append((kind, start, marks))

    def add_marks_later(
        self, kind: str, start: int, end: int, puts: list[Callable[[np.ndarray], None]]
    ) -> None:
        """Marks of one batch for elements start..end, each `put` marking a map of the buffer's
        size (and a slot past it) when the counts are read."""
        if kind != "read":
            raise ValueError(f"marks made later are reads, not {kind!r}")
        self._later.append(("read-later", start, (end, list(puts))))

    def _settle(self) -> None:
        if not self._later:
            return
        later, self._later = self._later, []
        for kind, start, marks in later:
            if kind == "read-later":
                end, puts = marks
                made = np.zeros(self.size + 1, bool)
                for put in puts:
                    put(made)
                self._reads[start:end] += made[start:end]
                continue
            span = slice(start, start + marks.size)
            if kind in ("read", "read-count"):
                self._reads[span] += marks
                continue
            self._writes_out = True  # `writes` holds counts now
            if kind == "write-count":
                self._writes[span] += marks
            else:
                self._writes[span] += marks >= 0
                writers = self.writers()
                np.maximum(writers[span], marks, out=writers[span])

    # the counts, with the marks handed over so far added in; whoever gets `writes` may count
    # into it, so `written` then has to look
    reads = _counts("_reads")
    writes = _counts("_writes", hands_out=True)
    last_writer = _counts("_last_writer")

    def clear(self) -> None:
        """No access recorded (a launch that starts over)."""
        self._later = []
        self._reads[...] = 0
        self._writes[...] = 0
        self._writes_out = False
        self._last_writer = BufferMap.nobody(self.size)
        self.oob.clear()

    @property
    def written(self) -> bool:
        if any(kind == "write" and marks.size and marks.max() >= 0 for kind, _, marks in self._later):
            return True
        if any(kind == "write-count" and marks.any() for kind, _, marks in self._later):
            return True
        if not self._writes_out and not any(kind == "write" for kind, _, _ in self._later):
            return False  # counts only come through `writes` or marks: none came
        self._settle()
        return bool(self._writes.any())

    @staticmethod
    def nobody(size: int) -> np.ndarray:
        """A `last_writer` of no writes yet: a read-only view, made an array by `writers` on the
        first write (most arguments of a launch are only read)."""
        return np.broadcast_to(np.int32(-1), (size,))

    def writers(self) -> np.ndarray:
        """`last_writer`, writeable."""
        if not self._last_writer.flags.writeable:
            self._last_writer = np.full(self.size, -1, np.int32)
        return self._last_writer

    def never_written(self) -> np.ndarray:
        """Element offsets that no program wrote (meaningful for a buffer some program wrote)."""
        marks = [(start, m) for kind, start, m in self._later if kind == "write"]
        if marks and not self._writes_out and all(kind != "write-count" for kind, _, _ in self._later):
            # only whole batches' marks so far: which elements they cover, without the counts
            covered = np.zeros(self.size, bool)
            for start, m in marks:
                covered[start : start + m.size] |= m >= 0
            return np.flatnonzero(~covered)
        return np.flatnonzero(self.writes == 0)

    def written_more_than_once(self) -> np.ndarray:
        return np.flatnonzero(self.writes > 1)


@dataclass
class Finding:
    """Something a detector found.

    Attributes:
        kind: short identifier ("out_of_bounds", "nan_origin", ...).
        severity: "error", "warning" or "info".
        message: a sentence a person understands, naming kernel, line, program and argument.
        launch: index of the launch in its trace.
        pid: the program id, when the finding belongs to one program.
        file, line: where in the source.
        arg: the argument involved.
        elements: element offsets or lanes involved.
    """

    kind: str
    severity: Severity
    message: str
    launch: int = 0
    pid: Pid | None = None
    file: str | None = None
    line: int | None = None
    arg: str | None = None
    elements: np.ndarray | None = None


@dataclass
class SourceInfo:
    """Source of one function of the launch (the kernel or a helper)."""

    function: str
    file: str
    first_line: int
    text: str


@dataclass
class Artifacts:
    """What Triton compiled for a launch: the text of each stage.

    Attributes:
        target: the compilation target, e.g. "cuda:90".
        stages: stage name ("ttir", "ttgir", "llir", "ptx", "sass") → text, in compilation order.
        missing: stage name → why it is absent (e.g. no cuobjdump for "sass").
        metadata: a few facts of the compiled kernel (num_warps, num_stages, shared memory bytes).
        compiled_for_launch: True when these are the launch's own GPU compile; False when the kernel was
            compiled for `target` only to show them (no GPU involved).
    """

    target: str
    stages: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    compiled_for_launch: bool = True


@dataclass
class Launch:
    """One kernel launch, interpreted.

    Attributes:
        index: position in the trace.
        kernel: the kernel's name.
        grid: the launch grid, padded to three axes.
        args: the arguments, in signature order.
        statements: every recorded place, indexed by `Statement.id`.
        sources: the kernel's and its helpers' source, by function name.
        programs: per program id, what it recorded (summaries for all, values for the kept ones).
        buffers: launch-wide access maps per buffer argument.
        findings: what the detectors found.
        status: "ok", "error" or "interrupted".
        error: the error's message when the launch failed.
        duration_s: wall time of the launch.
        budget_bytes: the capture budget the launch ran under; kept_bytes what it kept.
        snapshot: the launch's buffer arguments as they were before it ran (for replay).
        strategy: "batched" (programs run together) or "serial" (one after another).
        strategy_note: why the serial strategy ran, when it did.
        turns: for programs that wait for each other (spin loops), the turns they took in order:
            (pid, None) for a turn that ran to the program's end, (pid, line) for one that ended
            waiting at that line; empty when programs ran one after another.
        artifacts: the compiled kernel's IR (`%%tkernel compare`, `%%tkernel interpret --ir`).
        comparison: the launch against its compiled run on the GPU (`%%tkernel compare`).
        divergence: statement by statement, where chosen programs first compute something else on
            the GPU (`%%tkernel compare` with chosen programs or a mismatch).
    """

    index: int
    kernel: str
    grid: Pid
    args: list[ArgumentInfo]
    statements: list[Statement] = field(default_factory=list)
    sources: dict[str, SourceInfo] = field(default_factory=dict)
    programs: dict[Pid, ProgramTrace] = field(default_factory=dict)
    buffers: dict[str, BufferMap] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    status: Literal["ok", "error", "interrupted"] = "ok"
    error: str | None = None
    duration_s: float = 0.0
    budget_bytes: int = 0
    kept_bytes: int = 0
    snapshot: dict[str, np.ndarray] = field(default_factory=dict)
    strategy: str = "serial"
    strategy_note: str = ""
    turns: list[tuple[Pid, int | None]] = field(default_factory=list)
    replayer: Callable[[Pid], ProgramTrace] | None = field(default=None, repr=False, compare=False)
    artifacts: Artifacts | None = field(default=None, repr=False)
    comparison: Comparison | None = field(default=None, repr=False)
    divergence: Divergence | None = field(default=None, repr=False)

    @property
    def num_programs(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    def linear(self, pid: Pid) -> int:
        """Linear program index, x fastest (the order the serial engine runs programs in)."""
        return pid[0] + self.grid[0] * (pid[1] + self.grid[1] * pid[2])

    def pid_of(self, linear: int) -> Pid:
        gx, gy = self.grid[0], self.grid[1]
        return (linear % gx, (linear // gx) % gy, linear // (gx * gy))

    def program(self, pid: int | tuple[int, ...]) -> ProgramTrace:
        """The program's trace, with values: replayed from the snapshot when they were not kept.

        Raises:
            KeyError: the program did not run (outside the grid, or the launch failed earlier).
        """
        key = _as_pid(pid)
        program = self.programs[key]
        if program.kept or self.replayer is None:
            return program
        replayed = self.replayer(key)
        self.programs[key] = replayed
        return replayed

    def records(
        self, pid: int | tuple[int, ...], name: str | None = None, line: int | None = None
    ) -> list[Record]:
        """Records of one program, optionally only those of a variable name and/or a line."""
        program = self.program(pid)
        return [r for r in program.records if self._matches(r.stmt, name, line)]

    def value(
        self, pid: int | tuple[int, ...], name: str, iteration: tuple[int, ...] | None = None
    ) -> np.ndarray:
        """The value a variable had after its last assignment (at an iteration, if given).

        Raises:
            KeyError: no such record.
        """
        matches = [r for r in self.records(pid, name=name) if iteration is None or r.iteration == iteration]
        if not matches:
            raise KeyError(f"{self.kernel}: no record of {name!r} in program {_as_pid(pid)}")
        value = matches[-1].value
        assert value is not None
        return value

    def statement(self, stmt: int) -> Statement:
        return self.statements[stmt]

    def _matches(self, stmt: int, name: str | None, line: int | None) -> bool:
        s = self.statements[stmt]
        return (name is None or s.name == name) and (line is None or s.line == line)

    def summary_row(self) -> dict[str, Any]:
        records = sum(len(p.records) for p in self.programs.values())
        kept = sum(len(p.records) for p in self.programs.values() if p.kept)
        return {
            "kernel": self.kernel,
            "grid": self.grid,
            "programs": len(self.programs),
            "records": records,
            "records_kept": kept,
            "time_s": self.duration_s,
            "findings": len(self.findings),
            "status": self.status,
        }

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["replayer"] = None  # holds the kernel function: not data
        return state


@dataclass
class Trace:
    """All launches of one interpreted run (a cell, or a `with kernel_nb.interpret()` block)."""

    launches: list[Launch] = field(default_factory=list)

    def __iter__(self) -> Iterator[Launch]:
        return iter(self.launches)

    def __len__(self) -> int:
        return len(self.launches)

    def __getitem__(self, index: int) -> Launch:
        return self.launches[index]

    @property
    def findings(self) -> list[Finding]:
        return [f for launch in self.launches for f in launch.findings]

    def save(self, path: str | Path) -> None:
        """Write the trace to a file (values, summaries, events, findings, snapshots)."""
        with open(path, "wb") as f:
            f.write(_MAGIC)
            pickle.dump({"format": _FORMAT, "launches": self.launches}, f, protocol=5)

    @staticmethod
    def load(path: str | Path) -> Trace:
        """Read a trace written by `save`. Only load files you trust (the format is pickle).

        Raises:
            ValueError: the file is not a kernel_nb trace.
        """
        with open(path, "rb") as f:
            if f.read(len(_MAGIC)) != _MAGIC:
                raise ValueError(f"{path}: not a kernel_nb trace")
            payload = pickle.load(f)
        if payload.get("format") != _FORMAT:
            raise ValueError(
                f"{path}: trace format {payload.get('format')} is not supported (expected {_FORMAT})"
            )
        return Trace(launches=payload["launches"])

    def summary(self) -> str:
        """A plain-text table: one row per launch, then the findings."""
        header = f"{'#':>2}  {'kernel':<24} {'grid':<14} {'programs':>8} {'records':>9} {'kept':>9} {'time':>8}  findings"
        lines = [header]
        for launch in self.launches:
            row = launch.summary_row()
            grid = "x".join(str(g) for g in row["grid"])
            status = "" if row["status"] == "ok" else f" ({row['status']})"
            lines.append(
                f"{launch.index:>2}  {row['kernel']:<24} {grid:<14} {row['programs']:>8} {row['records']:>9} "
                f"{row['records_kept']:>9} {row['time_s']:>7.3f}s  {row['findings']}{status}"
            )
        for finding in self.findings:
            lines.append(f"  [{finding.severity}] {finding.message}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for launch in self.launches:
            r = launch.summary_row()
            grid = "×".join(str(g) for g in r["grid"])
            rows.append(
                "<tr>"
                + "".join(
                    f"<td>{html.escape(str(v))}</td>"
                    for v in (
                        launch.index,
                        r["kernel"],
                        grid,
                        r["programs"],
                        f"{r['records_kept']}/{r['records']}",
                        f"{r['time_s'] * 1000:.1f} ms",
                        r["findings"] if r["status"] == "ok" else f"{r['findings']} ({r['status']})",
                    )
                )
                + "</tr>"
            )
        findings = "".join(
            f"<li><b>{html.escape(f.severity)}</b> {html.escape(f.message)}</li>" for f in self.findings
        )
        head = "".join(
            f"<th>{h}</th>" for h in ("#", "kernel", "grid", "programs", "records kept", "time", "findings")
        )
        return (
            f'<table class="kernel-nb-summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            + (f"<ul>{findings}</ul>" if findings else "")
        )

    def __repr__(self) -> str:
        return self.summary()


def _as_pid(pid: int | tuple[int, ...]) -> Pid:
    if isinstance(pid, (int, np.integer)):
        return (int(pid), 0, 0)
    padded = tuple(int(p) for p in pid) + (0,) * (3 - len(pid))
    return (padded[0], padded[1], padded[2])
