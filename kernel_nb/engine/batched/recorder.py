"""Recording for the batched strategy: each value's rows are its programs' values, split into the
per-program records the serial strategy makes (see batched/run.py).

Why one module: the batch's rows, which of them are kept under the budget, and the working-set
measure that sizes the next batch are one state, read and changed by every record; split apart,
each record would update three modules in step.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.checks import Observations, Site, nonfinite
from kernel_nb.engine import shadow, triton_compat
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.batched.builder import LoopMask
from kernel_nb.engine.batched.loops import MaskedLoops
from kernel_nb.engine.batched.loops_ahead import LoopsAhead
from kernel_nb.engine.batched.measured import ProgramBytes
from kernel_nb.engine.batched.offsets import row_offsets, tile_offsets
from kernel_nb.engine.batched.row_copies import RowCopies, Rows
from kernel_nb.engine.batched.tiles import AFFINE, INTEGER_FORM, AffinePointers, FormIntegers, IntegerForm
from kernel_nb.engine.memory import base_array as _whole
from kernel_nb.engine.memory import holds_copy
from kernel_nb.engine.recorder import COMPANIONS, Recorder, assignment
from kernel_nb.options import Options
from kernel_nb.trace import (
    BatchPrograms,
    DeferredSummaries,
    EventBlock,
    GatheredRows,
    Pid,
    RecordBlock,
    Statement,
    SummaryColumns,
    TileRows,
    repeated,
)

# names hold the statements' values; the temporaries of an expression come on top, about as many
WORKING_SET_FACTOR = 2
SUMMARY_ROW_BYTES = 24  # a record's summary in a batch: its row of three float64 columns


@dataclasses.dataclass
class _Parked:
    """A batch of a split that ran to its end, as the budget applied when the split ends needs it."""

    batch: list[Pid]
    programs: BatchPrograms
    record_blocks: list[RecordBlock]
    event_blocks: list[EventBlock]
    keep_rows: np.ndarray  # the rows the batch did not cut as it ran
    copies: RowCopies
    sizes: np.ndarray  # per program, the bytes of its values as kept
    orders: np.ndarray  # per program, its place in the launch order


class Oversized(Exception):
    """The batch's values outgrow `Options.working_set_bytes`: it is undone and run again in
    batches of `fits` programs."""

    def __init__(self, fits: int) -> None:
        super().__init__(f"batches of {fits} programs fit the working set")
        self.fits = fits


class BatchRecorder(MaskedLoops, Recorder):
    """Records a batch: each value's rows are its programs' values."""

    def __init__(
        self,
        options: Options,
        addresses: AddressMap,
        *,
        statements: list[Statement],
        order_of: Callable[[Pid], int],
        loop_mask: LoopMask,
        precise: bool,
        ranges: bool,
        hold: Callable[[np.ndarray | None], None],
        on_iteration: Callable[[], None] | None = None,
    ) -> None:
        """
        Args:
            loop_mask: the run's record of the programs a masked loop still runs.
            precise: the bookkeeping is per element (masked loops then mask, never narrow).
            ranges: range bookkeeping could serve the launch (see `guard.ranges_apply`).
            hold: tells the guard which rows of the batch values hold from now on (None: all).
            on_iteration: called at every loop iteration (to report progress from inside a batch).
        """
        super().__init__(
            options, addresses, statements=statements, order_of=order_of, on_iteration=on_iteration
        )
        self.loop_mask = loop_mask
        self.precise = precise
        self.ranges = ranges
        self.hold_rows = hold
        self.batch: list[Pid] = []
        # per launch: arrays whose kept rows are views, weakly (an array goes when no record
        # holds a view of it any more, see _let_go_of_cut_rows), and the other rows' bytes
        self._held_whole: dict[int, weakref.ref[np.ndarray]] = {}
        # the copies of a batch's rows made so far, while a block holds them (see _copy_once)
        self._copies = RowCopies()
        self._held_bytes = 0
        # what the values the launch's batches keep take in memory (see `_by_reference`), those
        # of the batches that ended, and the arrays the running batch's blocks hold, by id
        self._held_before = 0
        self._held_arrays: dict[int, np.ndarray] = {}
        self._held_total = 0
        self._by_reference = False
        # per statement, the most bytes one program's value took (see `program_bytes`)
        self._value_bytes: dict[int, int] = {}
        # per program, bytes of summary columns the running batch made so far, and the most a batch
        # made: a loop's records stay until the batch ends
        self._summary_bytes = 0
        self._summary_peak = 0
        self._kept_row_bytes = 0  # what a kept program's values took, by the last batch
        # splits running (see begin_split), and the batches of them that ended, waiting for the budget
        self._splits = 0
        self._parked: list[_Parked] = []
        self._kept_only = False  # records being made are the kept programs' alone (see record_companions)
        self._finite: dict[tuple[int, int, int], tuple[weakref.ref[np.ndarray], bool]] = {}
        # loads' values that are tiles of the launch's inputs, by the array they are (note_gathered)
        self._gathered: dict[int, tuple[weakref.ref[np.ndarray], GatheredRows]] = {}

    def begin_batch(self, pids: list[Pid], observations: Observations | None) -> None:
        """Start recording a batch; observations go to `observations` (None: none)."""
        self.batch = pids
        self.observations = observations
        self._copies = RowCopies()
        self._gathered = {}
        self._summary_bytes = 0
        # values are copied only for programs that can still be kept: the budget is not spent yet
        # and they are selected; `end_batch` then applies the serial strategy's exact rule
        open_budget = self.capture and not self.spent and self.kept_bytes < self.budget
        if self.selected is None:
            self.keep_rows = np.full(len(pids), open_budget)
        else:
            self.keep_rows = np.array([open_budget and pid in self.selected for pid in pids], bool)
        # in a split, the bytes its groups that ran keep before each program (see _parked_before)
        self._before = self._parked_before(pids) if self._parked and self.keep_rows.any() else None
        # The budget picks the programs the serial strategy keeps, by the bytes that strategy holds
        # (a tile's addresses and a load's element indices at 8 bytes a lane, a load's values
        # twice, for its event and its record); a batch holds them as tile forms and shared
        # arrays, in a fraction of that (matmul 512: 13 MiB for every program, where the budget
        # counts 64 MiB for 35 of the 64). While what the batch's blocks hold, every program's
        # rows, fits the budget with what earlier batches keep, the arrays are held as the
        # operations made them (the kept programs' rows as views of them): no copies of the kept
        # programs' rows, which would only free the others' rows
        self._held_arrays = {}
        self._held_total = self._held_before
        # per loop open: what the blocks held when its iteration began, and what its last one added
        self._held_marks: list[list[int]] = []
        # (not for programs the user picked: a few programs' rows, copied, hold less than the arrays)
        self._by_reference = (
            self.selected is None
            and bool(self.keep_rows.any())
            and not self._splits
            and self._held_total < self.budget
        )
        # every program of the batch runs the same statements: they share the blocks, one row each
        self.record_blocks: list[RecordBlock] = []
        self.event_blocks: list[EventBlock] = []
        records, events = self.record_blocks, self.event_blocks
        self.programs = BatchPrograms(pids, self.keep_rows, records, events)
        picked = np.flatnonzero(self.keep_rows)
        self.kept_index = None if picked.size == len(pids) else picked
        self.held = np.zeros(len(pids), np.int64)  # per program, bytes of values kept so far
        self.program = self.programs[0]
        self.keep = bool(self.keep_rows.any())
        self.seq: Any = 0  # an int; per program once a masked loop has run
        self.active: np.ndarray | None = None  # the programs a masked loop still runs (None: all)
        self.trips: np.ndarray | None = None  # per program, the masked loop's trip count
        # the batch rows values hold: in a narrowed masked loop, the programs it still runs (None:
        # every row); `width` of them
        self.at: np.ndarray | None = None
        # masked loops narrow their iterations where the bookkeeping is by ranges (see loop_narrow)
        self.narrows = not self.precise
        self.split_trips: np.ndarray | None = None  # the trip counts of the last narrowed loop
        self._masked_depth: tuple[int, int] | None = None
        self.loop_mask.clear()
        self.frames = [type(self.frames[0])("")]
        self._kept_programs = np.flatnonzero(self.keep_rows)  # rows of keep_rows, in order
        self.loops_ahead = LoopsAhead(len(pids))
        self._rows_held = len(pids)  # the most rows a loop's block holds (see _let_go_of_cut_rows)
        # bytes a row of the blocks _let_go_of_cut_rows looks at while the batch runs holds at
        # most: of loop iterations' records, and of events
        self._loop_row_bytes = 0
        self._event_row_bytes = 0
        # what that bound must reach before the next look, after a look that freed too little
        self._let_go_bound = 0
        self._held_kept_cache: tuple[Any, Any, np.ndarray | None, np.ndarray] | None = None
        self._row_map_cache: tuple[np.ndarray, np.ndarray | None] | None = None

    @property
    def width(self) -> int:
        """How many rows values hold now (see `at`)."""
        return len(self.batch) if self.at is None else int(self.at.size)

    def full_row(self, r: int) -> int:
        """The batch row of row `r` of the values held now."""
        return r if self.at is None else int(self.at[r])

    def running(self) -> np.ndarray | None:
        """Per row of the values held now, whether its program runs (None: all do)."""
        return None if self.at is not None else self.active

    def running_rows(self, data: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, int]:
        if not np.ndim(data) or not np.shape(data)[0]:
            rows, shared = data, True
        else:
            rows = self._rows_of(np.asarray(data), shape)
            shared = self.width > 1 and rows.strides[0] == 0
        running = self.running()
        if shared:  # one row that every program holds
            return rows[:1] if np.ndim(rows) else rows, self.width if running is None else int(running.sum())
        return (rows if running is None else rows[running]), 1

    def _rows_of(self, data: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        b = data.shape[0]
        width = self.width
        full = data.reshape((b, *shape)) if data.size == b * int(np.prod(shape)) else data
        return np.broadcast_to(full, (width, *full.shape[1:])) if b != width else full

    def program_bytes(self) -> int:
        """What one program's values take while it runs, by the batches so far: the largest value
        of each statement (a name holds it until its next assignment; the first batch of one
        program also counts the values all programs share), and the summaries a batch made for it
        (every record's, until the batch ends)."""
        return sum(self._value_bytes.values()) + self._summary_peak

    def measured(self) -> ProgramBytes:
        """What the launch's programs were measured to take (see `assume`)."""
        return ProgramBytes(dict(self._value_bytes), self._summary_peak)

    def assume(self, measured: ProgramBytes) -> None:
        """Size batches from the start by what a launch of the same kernel, grid, arguments and
        options measured (see batched/measured.py): a value that takes more still cuts its batch."""
        self._value_bytes.update(measured.values)
        self._summary_peak = max(self._summary_peak, measured.summary_peak)

    def _measure(self, stmt: int, value: Any) -> None:
        if not triton_compat.is_tensor(value):
            return
        handle = value.handle
        affine = getattr(handle, AFFINE, None)
        if isinstance(handle, AffinePointers) and affine:
            shape = handle._shape
            if affine.base.size == 1 or not shape or not shape[0]:
                return  # one place for every program: shared
            # what it holds: a base per program, and its addresses only where something made them
            # (an access out of tile form; the batched loads, stores and records never do)
            per_program = 8 if handle._data is None else 8 * int(np.prod(shape[1:]))
        elif isinstance(handle, FormIntegers) and handle._data is None:
            per_program = 8  # a base per program, its values not made (see FormIntegers)
        else:
            data = triton_compat.tensor_data(value)
            if not isinstance(data, np.ndarray) or not data.ndim or not data.shape[0] or not data.strides[0]:
                return  # a scalar, or a value the programs share
            if data.shape[0] == 1 and len(self.batch) > 1:
                return  # one row for every program of the batch: shared, not per program
            if self._holds_inputs(data):
                return  # a view of the launch's inputs (a load's tiles side by side): no bytes of its own
            # with a shadow, the fp64 arrays it keeps on the value live as long as the value
            per_program = (data.nbytes + shadow.held_bytes(handle)) // data.shape[0]
        if per_program <= self._value_bytes.get(stmt, 0):
            return
        self._value_bytes[stmt] = per_program
        fits = self.batch_fits()
        if fits < len(self.batch):
            raise Oversized(fits)

    def batch_fits(self, most: int = 1 << 62) -> int:
        """How many programs' values `Options.working_set_bytes` holds (at least 1, at most `most`)."""
        per_program = WORKING_SET_FACTOR * self.program_bytes()
        if not per_program:
            return most
        return max(1, min(most, self.options.working_set_bytes // per_program))

    def record(self, stmt: int, value: Any) -> None:
        if self.statement_info[stmt].kind not in COMPANIONS:  # a companion's value dies at once
            self._measure(stmt, value)
        tile = self._pointer_tile(value) or self._integer_tile(value)
        if tile is not None:
            self._record_tile(stmt, value, *tile)
            return
        extracted = self._extract_batch(value)
        if extracted is None:
            return
        self._record_rows(stmt, *extracted, form=getattr(getattr(value, "handle", None), INTEGER_FORM, None))

    def _record_values(self, stmt: int, data: np.ndarray, dtype: str, shape: tuple[int, ...]) -> None:
        self._record_rows(stmt, self._rows_of(data, shape), dtype, shape, repeated(None, self.width))

    def _record_rows(
        self,
        stmt: int,
        rows: np.ndarray,
        dtype: str,
        shape: tuple[int, ...],
        pointer_args: Sequence[str | None],
        form: IntegerForm | None = None,
    ) -> None:
        """Record `rows` (with `form`: integer rows that form describes, whose summaries it gives)."""
        seq = self.next_seq()
        call_path, iteration = self.call_path, self.iteration
        batch = len(self.batch)
        width = self.width
        values, value_rows = None, None
        if self.at is not None:
            pointer_args = self._spread_list(pointer_args)
        if width > 1 and rows.strides[0] == 0:
            # the same value in every program (a tl.arange, a mask from it): summarise and keep it once
            summaries = SummaryColumns.of(np.ascontiguousarray(rows[:1].reshape(1, -1))).repeated(batch)
            if self.keep:
                values, value_rows = np.array(rows[:1], copy=True), np.where(self.keep_rows, 0, -1)
        elif self.at is not None:  # the rows are the running programs'
            if self.keep:
                values, value_rows = self.kept_rows(rows), self.kept_row_map()
            positions = self.kept_positions()
            gathered = None if self._kept_only else self._gathered_of(rows)
            if gathered is not None:
                summaries = self._gathered_summaries(rows, gathered, self.at, batch)
            elif self._kept_only and positions is not None:  # made by the kept programs alone
                summaries = self._summaries(rows[positions], values, self.at[positions], batch)
            else:
                kept = values if positions is None else None
                summaries = self._summaries(rows, kept, self.at, batch)
        elif self.active is not None:
            # in a masked loop only the running programs make a record: the others cost nothing
            running = np.flatnonzero(self.active)
            if self.keep:
                values, value_rows = self.kept_rows(rows, self.active), self.kept_row_map(self.active)
            positions = self.kept_positions(self.active)  # of the running rows, those kept
            kept = values if positions is not None and positions.size == running.size else None
            summaries = self._summaries(rows.reshape(batch, -1)[running], kept, running, batch)
        else:
            if self.keep:  # only the rows of programs that can be kept
                values, value_rows = self.kept_rows(rows), self.kept_row_map()
            formed = _form_summaries(form, rows)
            gathered = None if formed is not None else self._gathered_of(rows)
            if formed is not None:
                summaries = formed
            elif gathered is not None:
                summaries = self._gathered_summaries(rows, gathered, None, batch)
            elif self._holds_inputs(rows):
                # the launch's inputs stay as they are for its replays: every row's values are at
                # hand later, kept or not, so none is summarised before someone looks
                summaries = self._summaries(rows, rows)
            elif value_rows is None:
                summaries = self._summaries(rows, values)
            else:
                summaries = self._partly_kept_summaries(rows, values, value_rows)
        self.add_block(
            RecordBlock(
                stmt,
                seq,
                call_path,
                iteration,
                dtype,
                shape,
                summaries,
                values,
                pointer_args,
                value_rows,
                self.active,
            )
        )
        if self.observations is not None and self.statement_info[stmt].kind not in COMPANIONS:
            self._batch_nonfinite(stmt, rows, *summaries.nonfinite())

    def loop_enter(self, sites: tuple[int, ...] = ()) -> None:
        super().loop_enter(sites)
        self.loops_ahead.enter(sites, len(self.record_blocks))
        self._held_marks.append([self._held_total, 0])  # (see _count_held)

    def loop_range(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        made = super().loop_range(fn, args, kwargs)
        self.loops_ahead.ranged(made)
        return made

    def loop_next(self) -> None:
        super().loop_next()
        self.loops_ahead.next(self.record_blocks, self.trips)
        if self._held_marks:  # what the batch's blocks came to hold in the iteration that ended
            mark = self._held_marks[-1]
            mark[1], mark[0] = self._held_total - mark[0], self._held_total

    def loop_exit(self) -> None:
        super().loop_exit()
        self.loops_ahead.exit()
        if self._held_marks:
            self._held_marks.pop()

    def repeat(self, stmt: int, after: int) -> bool:
        """Record again what the last record block, of statement `after`, holds, as statement
        `stmt` (its summaries and values shared; the budget counts them again); False (nothing
        done) when the last block is not `after`'s."""
        if not self.record_blocks or self.record_blocks[-1].stmt != after:
            return False
        self.add_block(dataclasses.replace(self.record_blocks[-1], stmt=stmt, seq=self.next_seq()))
        return True

    def record_companions(
        self, first: int, values: list[tuple[np.ndarray, str]], shape: tuple[int, ...]
    ) -> None:
        if not self.keep or (self.at is None and self.kept_index is None):
            super().record_companions(first, values, shape)  # none kept, or every row is
            return
        if self.at is not None:
            positions = self.kept_positions()
            if positions is not None and not positions.size:
                return  # none of the programs a narrowed loop still runs is kept
        # the rows of kept programs make the records, as a masked loop's running ones do
        running = self.active
        self.active = self.keep_rows if running is None else running & self.keep_rows
        self._kept_only = True
        try:
            super().record_companions(first, values, shape)
        finally:
            self.active = running
            self._kept_only = False

    @staticmethod
    def _summaries(
        rows: np.ndarray, kept: Any, at: np.ndarray | None = None, batch: int = 0
    ) -> SummaryColumns:
        """The rows' summaries (with `at`: those of rows `at` of a batch of `batch`, the others
        no record's): made when read where `kept` (every one of the rows' values, kept) holds
        them (see DeferredSummaries), else now."""
        if _deferrable(kept) and len(kept):
            return DeferredSummaries(kept.reshape(len(kept), -1), at, batch)
        columns = SummaryColumns.of(np.ascontiguousarray(rows.reshape(len(rows), -1)))
        return columns if at is None else columns.placed(at, batch)

    def _gathered_summaries(
        self, rows: np.ndarray, gathered: GatheredRows, at: np.ndarray | None, batch: int
    ) -> SummaryColumns:
        """The summaries of a load's rows that are tiles of the launch's inputs (rows `at` of a
        batch of `batch`; None: all): made from the inputs when read, kept or not, as a view of
        the inputs' are. Their NaN and Inf, which the statement's records trace now: none where
        the inputs hold none, else from the rows at hand."""
        flat = rows.reshape(len(rows), -1)
        if self._inputs_finite(gathered.source):
            none = np.zeros(len(rows) if at is None else batch, bool)
            nonfinite = (none, none.copy())
        else:
            nonfinite = DeferredSummaries(flat, at, batch).nonfinite()
        return DeferredSummaries(gathered, at, batch, nonfinite=nonfinite)

    def _inputs_finite(self, source: np.ndarray) -> bool:
        """Whether `source`, the launch's inputs, holds no NaN and no Inf (looked at once)."""
        if source.dtype.kind != "f":
            return True
        whole = _whole(source)
        key = (id(whole), source.ctypes.data, source.size)
        found = self._finite.get(key)
        if found is None or found[0]() is not whole:
            # a NaN or an Inf makes the sum NaN or infinite: summed in the inputs' own type where
            # that is float32 or wider (a pass cheaper than in float64; halves would overflow),
            # looked at lane by lane only where the sum is not finite
            wide = None if source.dtype.itemsize >= 4 else np.float32
            with np.errstate(all="ignore"):
                finite = bool(np.isfinite(np.add.reduce(source.reshape(-1), dtype=wide)))
            if not finite:  # (or a sum past the type's range)
                finite = bool(np.isfinite(source).all())
            found = self._finite[key] = (weakref.ref(whole), finite)
        return found[1]

    @staticmethod
    def _partly_kept_summaries(rows: np.ndarray, kept: Any, value_rows: np.ndarray) -> SummaryColumns:
        """The summaries of a batch's rows of which those `value_rows` maps (to rows of `kept`)
        are kept: theirs made when read, as `_summaries` defers them, the others' now."""
        flat = rows.reshape(len(rows), -1)
        at = np.flatnonzero(value_rows >= 0)
        if not (at.size and _deferrable(kept) and len(kept) == at.size):
            return SummaryColumns.of(np.ascontiguousarray(flat))
        others = np.flatnonzero(value_rows < 0)
        # the programs the budget cut follow the kept ones: mostly a view of their rows, not a copy
        consecutive = others.size and int(others[-1]) - int(others[0]) + 1 == others.size
        cut = flat[int(others[0]) : int(others[-1]) + 1] if consecutive else flat[others]
        rest = SummaryColumns.of(np.ascontiguousarray(cut))
        return DeferredSummaries(kept.reshape(len(kept), -1), at, len(rows), rest=(rest, others))

    def _pointer_tile(self, value: Any) -> tuple[np.ndarray, np.ndarray, str] | None:
        """A pointer block with an Affine form inside one argument: each program's element offsets
        as shift + lanes, so that its records need no array per program."""
        if not (triton_compat.is_tensor(value) and triton_compat.is_pointer_tensor(value)):
            return None
        affine = getattr(value.handle, AFFINE, None)
        if not affine or affine.lanes.size != int(np.prod(triton_compat.tensor_shape(value))):
            return None
        return tile_offsets(self.addresses, affine, self.width)

    def _integer_tile(self, value: Any) -> tuple[np.ndarray, np.ndarray, None] | None:
        """An integer block held by its form (FormIntegers, not made): each program's values as
        shift + lanes, so that its records need no array per program either."""
        if not triton_compat.is_tensor(value):
            return None
        handle = value.handle
        if not (isinstance(handle, FormIntegers) and handle._data is None):
            return None
        form = getattr(handle, INTEGER_FORM)
        if form.base.size != self.width or not 0 < form.lanes.size <= 1 << 21:
            return None  # (the mean as Summary.of has it: an exact integer sum in float64)
        return form.base, form.lanes, None

    def _record_tile(
        self, stmt: int, value: Any, shift: np.ndarray, lanes: np.ndarray, arg: str | None
    ) -> None:
        """Record a tile form's rows (a pointer block's offsets into `arg`, or integers: None)."""
        batch = len(self.batch)
        shape = triton_compat.tensor_shape(value)
        count = lanes.size
        handle = value.handle
        dtype = handle.np_dtype if isinstance(handle, FormIntegers) else np.int64
        # the mean as Summary.of computes it: the exact integer sum, divided once
        total = shift.astype(np.float64) * count + float(int(lanes.sum()))
        summaries = SummaryColumns(
            (shift + int(lanes.min())).astype(np.int64),
            (shift + int(lanes.max())).astype(np.int64),
            total / count,
            count,
        )
        if self.at is not None:
            summaries = summaries.placed(self.at, batch)
        values: TileRows | None = None
        value_rows = None
        if self.keep:
            kept = self.kept_positions()
            picked = np.arange(self.width) if kept is None else kept
            values = TileRows(shift[picked], lanes, shape, dtype)
            value_rows = self.kept_row_map()
        self.add_block(
            RecordBlock(
                stmt,
                self.next_seq(),
                self.call_path,
                self.iteration,
                triton_compat.tensor_type_name(value),
                shape,
                summaries,
                values,
                repeated(arg, batch),
                value_rows,
                self.active,
            )
        )
        if self.observations is not None:
            none = np.zeros(batch, bool)
            self._batch_nonfinite(stmt, np.zeros((batch, 0)), none, none)

    def _extract_batch(
        self, value: Any
    ) -> tuple[np.ndarray, str, tuple[int, ...], Sequence[str | None]] | None:
        batch = self.width
        if triton_compat.is_tensor(value):
            data = triton_compat.tensor_data(value)
            if not isinstance(data, np.ndarray):
                return None
            shape = triton_compat.tensor_shape(value)
            rows = self._rows_of(data, shape)
            type_name = triton_compat.tensor_type_name(value)
            if triton_compat.is_pointer_tensor(value):
                offsets, args = row_offsets(self.addresses, rows, ranges=self.ranges)
                return offsets, type_name, shape, args
            if numerics.is_bits_float(type_name):
                rows = numerics.decode(rows, type_name)
            return rows, type_name, shape, repeated(None, batch)
        single = self._extract(value)
        if single is None:
            return None
        data, dtype, shape, arg = single
        return np.broadcast_to(data, (batch, *data.shape)), dtype, shape, repeated(arg, batch)

    def _batch_nonfinite(self, stmt: int, rows: np.ndarray, has_nan: np.ndarray, has_inf: np.ndarray) -> None:
        info = self.statement_info[stmt]
        frame = self.frames[-1]
        active = self.active
        if not (has_nan.any() or has_inf.any()):
            old = frame.nonfinite.get(info.name)
            if active is None or old is None or not (np.any(old[0]) or np.any(old[1])):
                frame.nonfinite[info.name] = (has_nan, has_inf)  # nothing to report or carry over
                return
        if active is not None:  # programs a masked loop is done with neither report nor change
            old_nan, old_inf = frame.nonfinite.get(info.name, (np.zeros(len(self.batch), bool),) * 2)
            has_nan = np.where(active, has_nan, old_nan)
            has_inf = np.where(active, has_inf, old_inf)
        if (has_nan.any() or has_inf.any()) and info.kind in ("assign", "augassign"):
            batch = len(self.batch)
            none = np.zeros(batch, bool)
            seen = [frame.nonfinite.get(name, (none, none)) for name in info.operands]
            operand_nan = np.logical_or.reduce([np.broadcast_to(n, batch) for n, _ in seen] + [none])
            operand_inf = np.logical_or.reduce([np.broadcast_to(i, batch) for _, i in seen] + [none])
            statement = self.statements[stmt]
            assert self.observations is not None
            # the rows nonfinite.origin may report: the others return there without a finding
            flagged = has_nan & ~operand_nan
            if not info.makes_inf:
                flagged |= has_inf & ~(operand_nan | operand_inf)
            if active is not None:
                flagged &= active
            for r in np.flatnonzero(flagged):
                pid = self.batch[r]
                nonfinite.origin(
                    self.observations,
                    Site(pid, self.order_of(pid), statement.file, statement.line),
                    assignment(info),
                    rows[r if self.at is None else int(np.searchsorted(self.at, r))],
                    operand_nan=bool(operand_nan[r]),
                    operand_inf=bool(operand_inf[r]),
                )
        frame.nonfinite[info.name] = (has_nan, has_inf)

    def lane_rows(
        self, bad: np.ndarray
    ) -> Iterator[tuple[Pid, int, np.ndarray, Callable[[Any], np.ndarray]]]:
        bad = np.asarray(bad)
        batch = self.width
        full = np.broadcast_to(bad, (batch, *bad.shape[1:])) if bad.shape[0] != batch else bad
        flagged = full.reshape(batch, -1).any(axis=1)
        running = self.running()
        if running is not None:
            flagged &= running
        for r in np.flatnonzero(flagged):
            lanes = np.flatnonzero(full[r].reshape(-1))

            def row_of(a: Any, r: int = int(r)) -> np.ndarray:
                a = np.asarray(a)
                return (a[r] if a.shape[0] == batch else a[0]).reshape(-1)

            pid = self.batch[self.full_row(int(r))]
            yield pid, self.order_of(pid), lanes, row_of

    def next_seq(self) -> Any:
        """The position of the next record or event: an int, or per program once a masked loop
        has run (programs it was done with do not advance)."""
        seq = self.seq
        if self.active is None:
            self.seq = seq + 1
        else:
            self.seq = np.asarray(seq) + self.active
        return seq

    def divergence_values(self, values: np.ndarray) -> np.ndarray:
        """Per batch row, what to split a batch by when `values` (per row held) disagree: inside a
        narrowed loop, the loop's trip counts (each group then runs it without narrowing)."""
        if len(values) == len(self.batch) or self.split_trips is None:
            return values
        return self.split_trips

    def _spread_list(self, items: Sequence[Any]) -> Sequence[Any]:
        """A value per row held, as one per batch row (None in the rows not held)."""
        assert self.at is not None
        if items and items.count(items[0]) == len(items):
            # the rows not held make no record: any value will do
            return repeated(items[0], len(self.batch))
        full: list[Any] = [None] * len(self.batch)
        for r, item in zip(self.at.tolist(), items):
            full[r] = item
        return full

    def add_block(self, block: RecordBlock | EventBlock) -> None:
        """Add a record or event block; stop copying values for the programs the budget can no
        longer reach. Programs are kept in order while the bytes kept before them are under the
        budget, and a program's bytes only grow: once the programs up to one of them hold the
        budget, none after it can be kept."""
        if isinstance(block, RecordBlock):
            self.record_blocks.append(block)
            if block.iteration:
                self._loop_row_bytes += _row_bytes_at_most(block.values)
            self._summary_bytes += SUMMARY_ROW_BYTES
            if self._summary_bytes > self._summary_peak:
                self._summary_peak = self._summary_bytes
                fits = self.batch_fits()
                if fits < len(self.batch):
                    raise Oversized(fits)
        else:
            self.event_blocks.append(block)
            arrays = (block.mask, block.indices, block.values, block.before)
            self._event_row_bytes += sum(_row_bytes_at_most(a) for a in arrays)
        if not self.keep:
            return
        held = block.row_bytes()
        if isinstance(held, int) and held == 0:
            return  # nothing kept: the budget is where it was
        self.held += held if block.rows is None else np.where(block.rows, held, 0)
        if self._by_reference:
            self._count_held(block)
        kept = self._kept_programs
        # with what the loops the batch is in will record still: a cut sure to come comes now
        ahead = self.loops_ahead.ahead
        spent = np.cumsum(self.held[kept] if ahead is None else self.held[kept] + ahead[kept])
        if self._before is not None:
            spent += self._before[kept]
        cut = np.flatnonzero(self.kept_bytes + spent > self.cut_at())
        if cut.size:  # that program is cut (see Recorder.check_budget): it and those after keep none
            self.keep_rows[kept[cut[0] :]] = False
        elif kept.size < 2 or self.kept_bytes + spent[-2] < self.budget:
            return  # every kept program but the last is still under the budget
        else:
            reached = np.flatnonzero(self.kept_bytes + spent >= self.budget)
            if not (reached.size and reached[0] + 1 < kept.size):
                return
            self.keep_rows[kept[reached[0] + 1 :]] = False
        picked = np.flatnonzero(self.keep_rows)
        self._kept_programs = picked
        self.kept_index = None if picked.size == len(self.batch) else picked
        self.keep = bool(picked.size)
        self._let_go_of_cut_rows()

    def _count_held(self, block: RecordBlock | EventBlock) -> None:
        """Count what `block`'s arrays take in memory (see `_by_reference`). Past the budget, the
        kept programs' rows are copied from then on, and the cut programs' rows let go as the budget
        cuts them; the arrays held so far (within the budget, but for the block that went past
        it) go as theirs do, so that a launch holds at most about twice its budget, as the serial
        strategy may."""
        # (the block holds each array too: its id stays its own while counted)
        self._held_total += self._bytes_not_seen([block], self._held_arrays)
        # with what the loops the batch is in will record still, at what the batch's blocks take
        # per byte the budget counts so far: a batch sure to outgrow the budget copies from now
        # on, not after it held every row of many iterations that would then all be copied
        coming = 0.0
        ahead, counted = self.loops_ahead.ahead, int(self.held.sum())
        if ahead is not None and counted:
            coming = float(ahead.sum()) * (self._held_total - self._held_before) / counted
        if self._held_marks:  # the innermost loop's iterations to come, as its last one
            coming = max(coming, float(self._held_marks[-1][1] * self.loops_ahead.iterations_left()))
        if self._held_total + coming > self.budget:
            self._by_reference, self._held_arrays = False, {}

    def _held_now(self) -> int:
        """What the batch's blocks hold in memory (arrays counted once; the inputs not at all)."""
        return self._bytes_not_seen([*self.record_blocks, *self.event_blocks], {})

    def _bytes_not_seen(self, blocks: list[RecordBlock | EventBlock], seen: dict[int, np.ndarray]) -> int:
        """The bytes of the arrays `blocks` hold that are not in `seen` (by id) nor the launch's
        inputs; those arrays are added to `seen`."""
        total = 0
        for block in blocks:
            for whole in _arrays_of(block):
                if id(whole) not in seen and not self._holds_inputs(whole):
                    seen[id(whole)] = whole
                    total += whole.nbytes
        return total

    def _let_go_of_cut_rows(self, ended: bool = False) -> None:
        """Where the batch's blocks hold values of programs the budget cut (a value kept whole
        while every program was kept), keep copies of the kept programs' rows instead, so that
        the arrays holding the others go: else a launch keeps a whole batch's values, over the
        budget. While the batch runs, only loop iterations' values (the kernel holds those of
        its straight-line code until it ends: copies would only add to them), when that frees a
        share of the budget worth the copies; once it `ended`, all."""
        if self._by_reference:
            return  # every row is held within the budget: copies would free nothing it needs
        keep = self.keep_rows
        # a block goes down to the rows kept when a fifth of its rows go, while the batch runs as
        # at its end: what a launch keeps stays within 1.25 x its budget, and the cut programs'
        # rows of a loop's earlier iterations do not stay beside the working set until it ends
        share = 0.25
        kept = int(keep.sum())
        # the most rows a block of the kind looked at can hold: at the end, every block's
        held = len(keep) if ended else self._rows_held
        if held - kept < max(1, share * kept):
            return  # no block can have lost enough rows
        # a block loses at most the rows of the programs cut since it was made, held - kept: while
        # that many rows of every block the pass would look at free less than it asks, don't look
        bound = 0
        if not ended:
            looked_at = self._loop_row_bytes + (self._event_row_bytes if self.iteration else 0)
            bound = (held - kept) * looked_at
            if bound < max(self.budget // 8, self._let_go_bound):
                return
        plans: list[tuple[RecordBlock | EventBlock, tuple[np.ndarray, np.ndarray, int]]] = []
        freed = 0
        # what the copies free, in bytes the arrays really hold: a pointer tile's rows hold a
        # shift each, and an array that a load's event and its record share goes once
        counted: set[int] = set()
        # blocks of one iteration share their row map: each map is planned once
        planned: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, int] | None] = {}

        def plan_for(index: np.ndarray | None, rows: Any) -> tuple[np.ndarray, np.ndarray, int] | None:
            if not isinstance(rows, (np.ndarray, TileRows, GatheredRows)) or not len(rows):
                return None
            key = (id(index), len(rows))
            if key not in planned:
                planned[key] = _rows_kept(index, keep, rows, share)
            return planned[key]

        for block in self.record_blocks:
            if not (ended or block.iteration):
                continue
            plan = plan_for(block.value_rows, block.values)
            if plan is not None:
                freed += plan[2] * self._row_bytes_held(block.values, counted)
                plans.append((block, plan))
        for event in self.event_blocks if ended or self.iteration else ():
            plan = plan_for(event.kept_rows, event.mask)
            if plan is not None:
                arrays = (event.mask, event.indices, event.values, event.before)
                freed += plan[2] * sum(self._row_bytes_held(a, counted) for a in arrays)
                plans.append((event, plan))
        if not plans or (freed < self.budget // 8 and not ended):
            # the blocks free about the same share of the bound as it grows: look again when
            # that share of it frees enough (at most twice the bound now, so that a look is never
            # put off far). Only when the copies are made changes, never what is kept
            share_freed = max(freed, 1) / max(bound, 1)
            self._let_go_bound = min(2 * bound, int(self.budget // 8 / share_freed))
            return
        self._let_go_bound = 0
        if not ended:
            self._rows_held = kept
        inputs, copy = self._holds_inputs, self._copy_once  # one copy of rows blocks share
        for made, (picked, index, _) in plans:
            if isinstance(made, RecordBlock):
                summaries = made.summaries
                waiting = summaries.waiting if isinstance(summaries, DeferredSummaries) else None
                if waiting is not None and not (isinstance(waiting, GatheredRows) or inputs(waiting)):
                    assert isinstance(summaries, DeferredSummaries)
                    summaries.settle()  # from the values of every row, before most go
                made.values, made.value_rows = _picked_rows(made.values, picked, inputs, copy), index
            else:
                made.mask = _picked_rows(made.mask, picked, inputs, copy)
                made.indices = _picked_rows(made.indices, picked, inputs, copy)
                made.values = _picked_rows(made.values, picked, inputs, copy)
                made.before = _picked_rows(made.before, picked, inputs, copy)
                made.kept_rows = index

    def _row_bytes_held(self, rows: Any, counted: set[int]) -> int:
        """Bytes a row of a block's array holds, where no array `counted` holds them (then
        counted); none for the launch's inputs, which stay."""
        if not isinstance(rows, np.ndarray) or not len(rows):
            return _row_bytes_at_most(rows)  # a row form's shift, or nothing
        whole = _whole(rows)
        if id(whole) in counted:
            return 0
        counted.add(id(whole))
        return 0 if self._holds_inputs(whole) else _row_bytes_at_most(rows)

    def note_gathered(self, loaded: np.ndarray, rows: GatheredRows) -> None:
        """`loaded`, a load's (rows, *block) values, is `rows`: tiles of the launch's inputs."""
        whole = _whole(loaded)
        self._gathered[id(whole)] = (weakref.ref(whole), rows)

    def _gathered_of(self, rows: np.ndarray) -> GatheredRows | None:
        """What `rows` (a value held now, one row per program held) is as tiles of the launch's
        inputs, where a load made it so (None: it is not)."""
        if not self._gathered or not isinstance(rows, np.ndarray):
            return None
        whole = _whole(rows)
        found = self._gathered.get(id(whole))
        if found is None or found[0]() is not whole:
            return None
        gathered = found[1]
        if len(rows) != len(gathered) or rows.size != whole.size or rows.strides[0] != whole.strides[0]:
            return None  # (another shape of those values: not row for row)
        return gathered

    def kept_positions(self, running: np.ndarray | None = None) -> np.ndarray | None:
        """Which of the rows values hold now (see `at`) are kept programs' (None: all), of those
        `running` (None: all): the rows `kept_rows` keeps."""
        if self.at is not None:
            return self._held_kept()[0]
        if running is None:
            return self.kept_index
        picked = np.flatnonzero(running & self.keep_rows)
        return None if picked.size == len(self.batch) else picked

    def kept_rows(self, rows: np.ndarray, running: np.ndarray | None = None) -> np.ndarray:
        """The rows of programs that can be kept (of those `running`): a copy, or `rows` itself
        where it is a value nothing else holds (see _sole_array)."""
        index = self.kept_positions(running)
        if self._holds_inputs(rows):  # bytes that never change: kept as they are
            return _rows_at(rows, index)
        gathered = self._gathered_of(rows)
        if gathered is not None:  # tiles of them: kept as their places
            return gathered if index is None else gathered.rows(index)  # type: ignore[return-value]
        count = len(rows) if index is None else index.size
        whole = _whole(rows)
        if rows.size and whole.size == 1:
            # one value for every lane (an unmasked access's mask, a bound every lane meets):
            # kept as that one value, in an array of its own
            return np.broadcast_to(whole.reshape(-1)[:1].copy().reshape(()), (count, *rows.shape[1:]))
        if rows.dtype == np.bool_ and rows.size and whole.nbytes >= rows.nbytes and rows.all():
            # a mask with every lane on, as most loads and stores have: one byte stands for them
            # (a broadcast holds no byte per lane already: it is not looked through)
            return np.broadcast_to(np.True_, (count, *rows.shape[1:]))
        if index is None:
            if self._sole_array(rows):
                rows.flags.writeable = False  # a record: a later in-place write would change it
                return rows
            return self._copy_once(rows, None)
        if index.size == 0:  # none of the programs held is kept
            return np.array(rows[:0], copy=True)
        wanted = self._wanted(rows, index)
        if wanted is not None:
            copied = self._copies.find(wanted)  # the rows another block keeps already
            if copied is not None:
                return copied
        first, count = int(index[0]), index.size
        if int(index[-1]) - first + 1 == count and self._sole_array(rows):
            # the first programs, as the budget keeps them: a view of their rows, while what the
            # arrays so held hold besides them (the other programs' rows), with the values kept,
            # stays within the budget
            whole = _whole(rows)
            kept = rows[first : first + count]
            if self._by_reference:  # the whole array is counted as held (see _count_held)
                rows.flags.writeable = False
                return kept
            extra = whole.nbytes - kept.nbytes
            spent = self.kept_bytes + int(self.held.sum()) + self._held_bytes
            if id(whole) in self._held_whole or spent + extra <= self.budget:
                if id(whole) not in self._held_whole:
                    self._hold_whole(whole, extra)
                rows.flags.writeable = False
                return kept
        return self._copy(rows, index, wanted)

    def _wanted(self, rows: np.ndarray, index: np.ndarray | None) -> Rows | None:
        """Which rows of an operation's value rows (`index` of) `rows` are (see RowCopies); None
        for memory of the launch's arguments, which stores change."""
        return None if holds_copy(rows) else self._copies.rows_of(rows, index)

    def _copy_once(self, rows: np.ndarray, index: np.ndarray | None) -> np.ndarray:
        """A read-only copy of `rows` (rows `index` of it), or the one made before while a block
        holds it: a load's event and its statement's record, a store's event and its value's
        record, keep one copy between them (the budget may cut programs between the two: then
        each keeps its own until the batch's end cuts both down to the same rows)."""
        wanted = self._wanted(rows, index)
        found = None if wanted is None else self._copies.find(wanted)
        return self._copy(rows, index, wanted) if found is None else found

    def _copy(self, rows: np.ndarray, index: np.ndarray | None, wanted: Rows | None) -> np.ndarray:
        """A new read-only copy of `rows` (rows `index` of it), remembered as `wanted` (None: not)."""
        made = _copied(rows, index)
        made.flags.writeable = False  # shared by the blocks that ask for it
        if wanted is not None:
            self._copies.add(wanted, made)
        return made

    def _holds_inputs(self, rows: np.ndarray) -> bool:
        """Whether `rows` shows a launch's inputs, read-only (see Memory.freeze)."""
        whole = _whole(rows)  # found once, not once per memory
        if not holds_copy(whole):  # a value an operation made: no memory's, at one look
            return False
        return any(m is not None and m.holds_inputs(whole) for m in self.addresses.memories)

    def _hold_whole(self, whole: np.ndarray, extra: int) -> None:
        """Count `extra` bytes of `whole` as held while it lives."""
        key = id(whole)

        def gone(_: Any) -> None:
            self._held_whole.pop(key, None)
            self._held_bytes -= extra

        self._held_whole[key] = weakref.ref(whole, gone)
        self._held_bytes += extra

    def _sole_array(self, rows: np.ndarray) -> bool:
        """Whether `rows` shows an array an operation made: not a part of a larger array
        (keeping it would hold more than the budget counts), not memory of the launch's arguments
        (stores change that: the private copies are parts of larger blocks, the caller's memory
        is not the array's own). Operations make new arrays, so such a value stays as recorded."""
        base = _whole(rows)
        # a view of the whole array, or of less memory (a broadcast): it holds no more than counted
        return base.base is None and base.flags.owndata and base.nbytes <= rows.nbytes

    def kept_row_map(self, running: np.ndarray | None = None) -> np.ndarray | None:
        """Row → index in `kept_rows` copies (-1: not kept); None when every row is kept."""
        if self.at is not None:
            return self._held_kept()[1]
        if running is None:  # the blocks recorded between two budget cuts share one map
            cached = self._row_map_cache
            if cached is not None and cached[0] is self._kept_programs:
                return cached[1]
        index = self.kept_positions(running)
        row_map = None if index is None else self._row_map(index)
        if running is None:
            if row_map is not None:
                row_map.flags.writeable = False
            self._row_map_cache = (self._kept_programs, row_map)
        return row_map

    def _row_map(self, rows: np.ndarray) -> np.ndarray:
        """Batch row → its place among `rows` (-1: not among them)."""
        at = np.full(len(self.batch), -1)
        at[rows] = np.arange(rows.size)
        return at

    def _held_kept(self) -> tuple[np.ndarray | None, np.ndarray]:
        """In a narrowed iteration: which rows held are kept (None: all), and the map batch row →
        index among those (-1: not kept); made once per iteration (and budget cut), as every
        record and event of the iteration asks."""
        assert self.at is not None
        cached = self._held_kept_cache
        if cached is not None and cached[0] is self.at and cached[1] is self._kept_programs:
            return cached[2], cached[3]
        held = np.flatnonzero(self.keep_rows[self.at])
        index = None if held.size == self.at.size else held
        row_map = self._row_map(self.at if index is None else self.at[index])
        row_map.flags.writeable = False  # shared by the blocks of the iteration
        self._held_kept_cache = (self.at, self._kept_programs, index, row_map)
        return index, row_map

    def begin_split(self) -> None:
        """A batch diverged: the groups it splits into run one after another, in the order of their
        first programs, not in program order. Their budget is applied when the last of them has
        run (`end_split`), in program order, as the serial strategy applies it as it goes."""
        self._splits += 1

    def end_batch(self) -> list[tuple[BatchPrograms, list[RecordBlock]]]:
        """The batch ran to its end: its programs and record blocks for the launch, the budget
        applied; none while a split runs (they wait for `end_split`)."""
        sizes = self._program_sizes()
        if not self._splits:
            self._apply_budget([(self.programs, np.arange(len(sizes)))], np.asarray(sizes), self.keep_rows)
            self._keep_only_kept()
            if self.keep_rows.any():
                self._held_before += self._held_now()
            return [(self.programs, self.record_blocks)]
        # the cuts the batch made are the serial strategy's too (a program's bytes before it, of
        # its group alone, are at most those of every program before it): their rows go now
        self._let_go_of_cut_rows(ended=True)
        self._parked.append(
            _Parked(
                self.batch,
                self.programs,
                self.record_blocks,
                self.event_blocks,
                self.keep_rows,
                self._copies,
                sizes,
                np.array([self.order_of(pid) for pid in self.batch], np.int64),
            )
        )
        return []

    def _parked_before(self, pids: list[Pid]) -> np.ndarray:
        """Per program of a group a split runs, the bytes that the split's groups that ran before
        it keep of programs before it in program order, at least; programs they rule out (one
        before them was cut, or those bytes reach the budget) are not kept. With its own
        programs' bytes, that bounds what the serial strategy keeps before a program from below,
        as the group's own bytes alone do, but closer: a group copies fewer values of programs
        that cannot be kept. Programs of groups still to run count nothing, so the groups may
        hold more than the budget between them until the split ends (at most the batch's
        values, which the working set holds)."""
        parked = self._parked
        orders = np.array([self.order_of(pid) for pid in pids], np.int64)
        ran = np.concatenate([part.orders for part in parked])
        kept = np.concatenate([np.where(part.keep_rows, part.sizes, 0) for part in parked])
        cut = np.concatenate([part.programs.kept_now() & ~part.keep_rows for part in parked])
        sort = np.argsort(ran, kind="stable")
        total = np.concatenate([np.zeros(1, np.int64), np.cumsum(kept[sort])])
        before = total[np.searchsorted(ran[sort], orders)]
        self.keep_rows &= self.kept_bytes + before < self.budget
        if cut.any():
            self.keep_rows &= orders < ran[cut].min()
        return before

    def end_split(self) -> list[tuple[BatchPrograms, list[RecordBlock]]]:
        """The groups of a split have all run (see `begin_split`): their programs and record
        blocks for the launch, the budget applied in program order."""
        self._splits -= 1
        if self._splits:
            return []  # a split inside a split: the outer one ends it
        parked, self._parked = self._parked, []
        # the split's programs, part after part, and the order of their places in the launch
        taken = [(part.programs, np.arange(len(part.orders))) for part in parked]
        order = np.argsort(np.concatenate([part.orders for part in parked]), kind="stable")
        sizes = np.concatenate([np.asarray(part.sizes, np.int64) for part in parked])[order]
        open_rows = np.concatenate([part.keep_rows for part in parked])[order]
        self._apply_budget(taken, sizes, open_rows, place=np.argsort(order, kind="stable"))
        for part in parked:  # each batch's rows of the programs cut go, as at the end of a batch
            self.batch, self.programs, self.keep_rows = part.batch, part.programs, part.keep_rows
            self.record_blocks, self.event_blocks = part.record_blocks, part.event_blocks
            self._copies = part.copies
            self._keep_only_kept()
            if self.keep_rows.any():
                self._held_before += self._held_now()
        return [(part.programs, part.record_blocks) for part in parked]

    def _keep_only_kept(self) -> None:
        """The batch's rows follow the budget's decisions, and the cut programs' values go."""
        self.keep_rows[:] = self.programs.kept_now()
        self._let_go_of_cut_rows(ended=True)

    def _program_sizes(self) -> np.ndarray:
        """Per program of the batch, the bytes of its values as kept."""
        sizes = np.zeros(len(self.batch), np.int64)
        blocks: list[RecordBlock | EventBlock] = [*self.record_blocks, *self.event_blocks]
        for block in blocks:
            held = block.row_bytes()
            sizes += held if block.rows is None else np.where(block.rows, held, 0)
        return sizes

    def _apply_budget(
        self,
        taken: list[tuple[BatchPrograms, np.ndarray]],
        sizes: np.ndarray,
        open_rows: np.ndarray,
        place: np.ndarray | None = None,
    ) -> None:
        """Apply the capture budget to programs in program order, as the serial strategy does as it
        goes: `taken` gives the batches and their rows, `sizes` each program's bytes of values as
        kept and `open_rows` whether its batch left it open (a row the batch stopped keeping was
        cut: its values may be gone already), in program order; `place` maps the programs of
        `taken`, batch after batch, to that order (None: the same). Sets `_kept_row_bytes` by the
        programs kept."""
        kept = np.concatenate([programs.kept_now()[rows] for programs, rows in taken])
        if place is not None:
            kept = kept[np.argsort(place, kind="stable")]  # into program order
        candidates = np.flatnonzero(kept)  # never kept (made so by begin_batch): nothing to cut
        cut = np.zeros(len(kept), bool)
        if candidates.size:
            own = sizes[candidates].astype(np.int64)
            before = self.kept_bytes + np.concatenate([[0], np.cumsum(own)[:-1]])
            fits = open_rows[candidates].astype(bool) & (before + own <= self.cut_at())
            fits &= before < self.budget
            keeps = 0 if self.spent else int(np.argmin(fits)) if not fits.all() else len(fits)
            if keeps < len(candidates):
                self.spent = True  # cut, as Recorder.check_budget cuts a serial program
            cut[candidates[keeps:]] = True
            if keeps:
                added = int(own[:keeps].sum())
                self.kept_bytes += added
                self._kept_row_bytes = -(-added // keeps)
        if place is not None:
            cut = cut[place]  # back to the order of `taken`
        start = 0
        for programs, rows in taken:
            mine = cut[start : start + len(rows)]
            start += len(rows)
            if mine.any():
                programs.cut(rows[mine])

    def programs_to_budget(self) -> int | None:
        """How many programs from here on the budget keeps, by what the last batch's kept
        programs took each (None: not known, or the budget keeps none, or only some programs
        are selected). A batch that ends there keeps all its programs' values, by reference, and
        the next none: no batch has values of cut programs to let go of (see _let_go_of_cut_rows)."""
        if not self.capture or self.spent or self.selected is not None or not self._kept_row_bytes:
            return None
        left = self.budget - self.kept_bytes
        if left <= 0:
            return None
        return -(-left // self._kept_row_bytes)  # the last starts under the budget, as in _apply_budget


def _form_summaries(form: IntegerForm | None, rows: np.ndarray) -> SummaryColumns | None:
    """The summaries of integer rows that `form` describes (row i: `base[i] + lanes`), from the form
    rather than from every lane, equal to Summary.of's: the mean is the exact integer sum divided
    once, which float64 holds exactly for int32 rows of up to 2**21 lanes (None: no such form)."""
    if form is None or rows.dtype.kind != "i" or rows.dtype.itemsize > 4 or rows.ndim < 2:
        return None
    count = int(np.prod(rows.shape[1:]))
    if form.base.size != len(rows) or form.lanes.size != count or not 0 < count <= 1 << 21:
        return None
    base = form.base.astype(np.int64)
    total = base.astype(np.float64) * count + float(int(form.lanes.sum()))
    return SummaryColumns(base + int(form.lanes.min()), base + int(form.lanes.max()), total / count, count)


def _arrays_of(block: RecordBlock | EventBlock) -> Iterator[np.ndarray]:
    """The arrays whose memory a block's kept rows are in (a tile form's: its shifts)."""
    held = (
        (block.values,)
        if isinstance(block, RecordBlock)
        else (block.mask, block.indices, block.values, block.before)
    )
    for rows in held:
        if isinstance(rows, (TileRows, GatheredRows)):
            rows = rows.shift
        if isinstance(rows, np.ndarray) and rows.size:
            yield _whole(rows)


def _row_bytes_at_most(rows: Any) -> int:
    """The most bytes a row of a block's array can hold (see _let_go_of_cut_rows): what it holds
    now, which its copies hold too."""
    if isinstance(rows, (TileRows, GatheredRows)):
        return int(rows.shift.itemsize)
    if not isinstance(rows, np.ndarray) or not len(rows):
        return 0
    return int(rows[0].nbytes)


def _deferrable(kept: Any) -> bool:
    """Whether kept values can stand in for their rows' summaries until these are read."""
    return isinstance(kept, np.ndarray) and kept.flags.c_contiguous and kept.dtype.kind in "biuf"


def _rows_kept(
    index: np.ndarray | None, keep: np.ndarray, rows: Any, share: float
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """For a block whose arrays hold `rows` (row i of the batch at `index[i]`, -1: none; None:
    at i), the rows to keep of `keep`: their places in the arrays, the new index, and how many
    rows go (None: fewer than `share` x those that stay go, or the arrays are not per row)."""
    if not isinstance(rows, (np.ndarray, TileRows, GatheredRows)) or not len(rows):
        return None
    if index is None:
        if len(rows) != len(keep):
            return None
        index = np.arange(len(keep))
    held = index >= 0
    chosen = np.flatnonzero(held & keep)
    gone = int(held.sum()) - chosen.size
    if gone < max(1, share * chosen.size):
        return None  # too few go to be worth a copy: a block is copied a few times at most
    new = np.full(len(keep), -1, np.int64)
    new[chosen] = np.arange(chosen.size)
    return index[chosen], new, gone


def _picked_rows(
    rows: Any,
    at: np.ndarray,
    inputs: Callable[[np.ndarray], bool],
    copy: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> Any:
    """Rows `at` of a block's array, by `copy` (a row form stays one; rows of the launch's
    inputs, which `inputs` tells, are views where they can be)."""
    if rows is None:
        return None
    if isinstance(rows, (TileRows, GatheredRows)):
        return rows.rows(at)
    if inputs(rows):
        return _rows_at(rows, at)
    return copy(rows, at)


def _rows_at(rows: np.ndarray, at: np.ndarray | None) -> np.ndarray:
    """Rows `at` (None: all) of a read-only array: a view where they follow each other."""
    if at is None:
        return rows
    if at.size and int(at[-1]) - int(at[0]) + 1 == at.size:
        return rows[int(at[0]) : int(at[-1]) + 1]
    return _copied_rows(rows, at)


def _copied_rows(rows: np.ndarray, at: np.ndarray) -> np.ndarray:
    picked = _copied(rows, at)
    picked.flags.writeable = False  # a record
    return picked


def _copied(rows: np.ndarray, at: np.ndarray | None) -> np.ndarray:
    """A new array of rows `at` (None: all) of `rows`: one pass over them (indexing by an array
    makes a new array already; rows that follow each other copy faster as a slice)."""
    if at is None:
        return np.array(rows, copy=True)
    if at.size and int(at[-1]) - int(at[0]) + 1 == at.size:
        return np.array(rows[int(at[0]) : int(at[-1]) + 1], copy=True)
    return rows[at]
