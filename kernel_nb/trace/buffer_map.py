"""Launch-wide access counts per buffer argument, with the batched strategy's marks added on first read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def _counts(name: str, hands_out: bool = False) -> Any:
    """A BufferMap property over `name` that adds the pending marks in first."""

    def get(bmap: BufferMap) -> np.ndarray:
        bmap._settle()
        bmap._made(name)
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
        reads: np.ndarray | None,
        writes: np.ndarray | None,
        last_writer: np.ndarray,
        origin: int = 0,
        oob: list[tuple[int, int, int]] | None = None,
    ) -> None:
        self.arg, self.size, self.shape, self.origin = arg, size, shape, origin
        self._reads, self._writes, self._last_writer = reads, writes, last_writer
        self.oob: list[tuple[int, int, int]] = [] if oob is None else oob
        self._writes_out = True  # `writes` may hold counts (see `fresh`)
        # (kind, first element, marks): "read" bools, "write" writer ids (-1: none), "read-count" /
        # "write-count" counts, added in by `_settle`; "read-later" / "write-later": (end, puts)
        # that make the marks of a read / write
        self._later: list[tuple[str, int, Any]] = []
        self._later_bytes = 0  # what the marks handed over hold (each may be a view of a whole array)
        # the marks `never_written` told its answer from, and the answer
        self._coverage: tuple[tuple[Any, ...], np.ndarray] | None = None

    @staticmethod
    def fresh(arg: str, size: int, shape: tuple[int, ...], origin: int = 0) -> BufferMap:
        """A map of no accesses yet; `written` can then tell without a look at every element."""
        bmap = BufferMap(
            arg,
            size,
            shape,
            None,
            None,
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
        """Marks of one batch for elements start.. (see `_later`); the map now owns `marks`.

        Marks are added in as soon as those handed over hold more than the map's own counts: a
        launch of many batches then holds no array per batch."""
        self._later.append((kind, start, marks))
        self._later_bytes += (marks if marks.base is None else marks.base).nbytes
        if self._later_bytes > 12 * (self.size + 1):  # three int32 arrays of `size`
            self._settle()

    def add_marks_later(
        self, kind: str, start: int, end: int, puts: list[Callable[[np.ndarray], None]]
    ) -> None:
        """Marks of one batch for elements start..end, each `put` marking a map of the buffer's
        size (and a slot past it) when the counts are read: reads as True, writes as the
        writer's linear program index."""
        if kind not in ("read", "write"):
            raise ValueError(f"marks made later are reads or writes, not {kind!r}")
        self._later.append((f"{kind}-later", start, (end, list(puts))))

    def _settle(self) -> None:
        if not self._later:
            return
        later, self._later = self._later, []
        self._later_bytes = 0
        for kind, start, marks in later:
            if kind == "read-later":
                end, puts = marks
                made = np.zeros(self.size + 1, bool)
                for put in puts:
                    put(made)
                self._made("_reads")[start:end] += made[start:end]
                continue
            if kind == "write-later":
                end, puts = marks
                kind, marks = "write", _writers(self.size, puts)[start:end]
            span = slice(start, start + marks.size)
            if kind in ("read", "read-count"):
                self._made("_reads")[span] += marks
                continue
            self._writes_out = True  # `writes` holds counts now
            if kind == "write-count":
                self._made("_writes")[span] += marks
            else:
                self._made("_writes")[span] += marks >= 0
                writers = self.writers()
                np.maximum(writers[span], marks, out=writers[span])

    # the counts, with the marks handed over so far added in; whoever gets `writes` may count
    # into it, so `written` then has to look
    reads = _counts("_reads")
    writes = _counts("_writes", hands_out=True)
    last_writer = _counts("_last_writer")

    def clear(self) -> None:
        """No access recorded (a launch that starts over)."""
        self._later, self._later_bytes = [], 0
        self._coverage = None
        self._reads = self._writes = None
        self._writes_out = False
        self._last_writer = BufferMap.nobody(self.size)
        self.oob.clear()

    @property
    def written(self) -> bool:
        if any(kind == "write-later" for kind, _, _ in self._later):
            return True  # handed over only where some lane was written
        if any(kind == "write" and marks.size and marks.max() >= 0 for kind, _, marks in self._later):
            return True
        if any(kind == "write-count" and marks.any() for kind, _, marks in self._later):
            return True
        if not self._writes_out and not any(kind.startswith("write") for kind, _, _ in self._later):
            return False  # counts only come through `writes` or marks: none came
        self._settle()
        return self._writes is not None and bool(self._writes.any())

    def _made(self, name: str) -> np.ndarray:
        """The count array `name` ("_reads", "_writes"), made on first use: most of a launch's
        maps are never looked at, and an argument's worth of zeros costs its pages once touched."""
        counts: np.ndarray | None = getattr(self, name)
        if counts is None:
            counts = np.zeros(self.size, np.int32)
            setattr(self, name, counts)
        return counts

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
        marks = self._batch_write_marks()
        if marks is not None:
            # several detectors ask, of the same marks: told once
            key = tuple(id(m) for _, _, m in marks)
            told = getattr(self, "_coverage", None)  # (a map saved before it had one)
            if told is None or told[0] != key:
                missing = _never_put(self.size, marks)
                if missing is None:
                    covered = np.zeros(self.size + 1, bool)
                    for kind, start, m in marks:
                        _mark(covered, kind, start, m)
                    missing = np.flatnonzero(~covered[: self.size])
                told = self._coverage = (key, _read_only(missing))
            return told[1]
        return np.flatnonzero(self.writes == 0)

    def written_more_than_once(self) -> np.ndarray:
        """Element offsets that more than one program wrote."""
        if not self.written:  # (a buffer only read: its reads need not be added in to tell)
            return np.zeros(0, np.intp)
        marks = self._batch_write_marks()
        if marks is None:
            return np.flatnonzero(self.writes > 1)
        if len(marks) == 1:  # a batch marks an element once
            return np.zeros(0, np.intp)
        # a bool array per batch, where counts and last writers would fill three arrays of the
        # buffer's size (the viewer asks of every buffer of every launch it shows)
        once, twice, batch = (np.zeros(self.size + 1, bool) for _ in range(3))
        for kind, start, m in marks:
            batch.fill(False)
            _mark(batch, kind, start, m)
            twice |= once & batch
            once |= batch
        return np.flatnonzero(twice[: self.size])

    def _batch_write_marks(self) -> list[tuple[str, int, Any]] | None:
        """The whole batches' write marks, where the map holds nothing else of its writes (None:
        it holds counts): what `never_written` and `written_more_than_once` can tell from alone.
        A batch counts an element once, as its marks add to the counts."""
        marks = [(kind, start, m) for kind, start, m in self._later if kind in ("write", "write-later")]
        if not marks or self._writes_out or any(kind == "write-count" for kind, _, _ in self._later):
            return None
        return marks


def _never_put(size: int, marks: list[tuple[str, int, Any]]) -> np.ndarray | None:
    """The elements of [0, size) that no put of `marks` puts to, from the runs they put (see
    RunPut.spans) rather than from a map of the buffer's size filled in (None: some marks are not
    such puts). A launch whose programs each store a tile covers the buffer in a run a program."""
    starts, ends, singles = [], [], []
    for kind, _, held in marks:
        if kind != "write-later":
            return None
        for put in held[1]:
            spans = getattr(put, "spans", None)
            if spans is None:
                return None
            at, run, index = spans()
            starts.append(at.reshape(-1))
            ends.append(at.reshape(-1) + run)
            singles.append(index.reshape(-1))
    lo, hi = np.concatenate([*starts, np.zeros(0, np.int64)]), np.concatenate([*ends, np.zeros(0, np.int64)])
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order]) if hi.size else hi
    # gaps: from the furthest end so far to the next start, and before the first and after the last
    gap_lo = np.concatenate([[0], hi])
    gap_hi = np.concatenate([lo, [size]])
    gap = gap_lo < gap_hi
    gap_lo, gap_hi = gap_lo[gap], gap_hi[gap]
    if not gap_lo.size:
        return np.zeros(0, np.intp)
    lengths = gap_hi - gap_lo
    missing = np.repeat(gap_lo - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(
        lengths.sum()
    )
    single = np.concatenate([*singles, np.zeros(0, np.int64)])
    if single.size:
        missing = missing[~np.isin(missing, single)]
    return missing.astype(np.intp)


def _mark(covered: np.ndarray, kind: str, start: int, marks: Any) -> None:
    """Set the elements one batch's write marks cover."""
    if kind == "write-later":
        for put in marks[1]:
            put(covered, True)
    else:
        covered[start : start + marks.size] |= marks >= 0


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _writers(size: int, puts: list[Callable[[np.ndarray], None]]) -> np.ndarray:
    """The writer marks that `puts` make in a map of `size` elements (and a slot past it)."""
    made = np.full(size + 1, -1, np.int32)
    for put in puts:
        put(made)
    return made
