"""The batched strategy: the programs of a launch run together, one numpy call serving them all.

Every value carries the batch's programs along a leading axis (see batched/builder). A `range`
loop whose stop differs between programs runs once for all of them: each iteration holds the rows
of the programs still running only (or, where it cannot, masks the others), the programs that are
done make no loads, stores, records or events, and the loop's names keep their values for them
(`MaskedLoops.loop_range` in loops.py). Where the programs disagree about other
control flow, the batch is undone (an undo log restores every byte its stores and atomics changed)
and split into groups that agree, each run on its own. The result must
equal the serial strategy's, records and findings included; wherever the batched form cannot
guarantee that (one program reading what another wrote, an out-of-bounds access whose first
occurrence only the serial order defines, prints, tensor descriptors), `BatchUnsupported` is
raised and the launch runs serially from its input snapshot.

A batch holds as many programs as `Options.working_set_bytes` lets it by what one program's
values and summaries took so far (`_batch_sizes`); one that outgrows it is undone like a
divergent one and run again in smaller groups.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb import checks
from kernel_nb.checks import Observations
from kernel_nb.engine import triton_compat
from kernel_nb.engine.batched import measured
from kernel_nb.engine.batched.builder import BatchedBuilder, BatchUnsupported, Divergence, LoopMask
from kernel_nb.engine.batched.guard import BatchGuard, ranges_apply, same_memory
from kernel_nb.engine.batched.intervals import NeedsPrecise
from kernel_nb.engine.batched.language import batched_language, batched_value
from kernel_nb.engine.batched.offsets import pointer_tile
from kernel_nb.engine.batched.recorder import BatchRecorder, Oversized
from kernel_nb.engine.order import ProgramOrder, batches, row_batches
from kernel_nb.engine.patches import interpreter_scope
from kernel_nb.engine.rewrite import RewriteCache, SourceUnavailableError
from kernel_nb.engine.serial import SerialRun
from kernel_nb.options import Options
from kernel_nb.trace import BatchPrograms, Pid, RecordBlock

MAX_BATCH = 4096  # values of a batch's programs are copied only while the budget can reach them
PROBE_BATCH = 64  # the first batch of a launch: sizes the others (see `_batch_sizes`)


def unsupported_reason(fn: Callable[..., Any], options: Options, rewrites: RewriteCache) -> str | None:
    """Why the batched strategy does not apply to a launch of `fn` (None: it applies); the kernel
    as the launch runs it is read from `rewrites` only where the options allow batches."""
    if options.strategy == "serial":
        return "the serial strategy was asked for"
    if options.breakpoints:
        return "breakpoints stop single programs"
    if options.order != "serial":
        return f"programs run in {options.order} order"
    try:
        kernel = rewrites.rewritten(fn, instrument=options.capture)
    except SourceUnavailableError:
        return "the kernel's source is not available"
    # what makes the programs depend on running one at a time
    if kernel.calls_print:
        return "the kernel calls print"
    if kernel.breakpoints:
        return f"the kernel calls {kernel.breakpoints[0]}"
    if kernel.calls_inline_asm:
        return "the kernel calls inline_asm"
    return rewrites.waits(fn)


@dataclass
class BatchedRun(SerialRun):
    """Runs a launch's programs in batches, splitting where control flow diverges."""

    recorder: BatchRecorder = field(init=False)
    guard: BatchGuard = field(init=False)
    precise: str | None = None  # why to keep per-element bookkeeping from the start (see batched/intervals)
    # programs done, programs in all, and when progress was last reported
    _progress: tuple[int, int, float] = field(init=False, default=(0, 0, 0.0))
    _split: bool = field(init=False, default=False)  # a batch diverged: its groups ran out of order

    def _parts(self) -> tuple[BatchRecorder, BatchGuard]:
        state = self._state(aliases=same_memory(self.addresses))
        ranges = ranges_apply(self.addresses, state)
        why_precise = self.precise or ranges
        if (
            why_precise is None
            and self.rewrites.rewritten(self.fn, instrument=self.options.capture).uses_atomics
        ):
            why_precise = "atomics"  # ordered per element across programs: ranges cannot tell
        self.note = "" if why_precise is None else f"per-element bookkeeping: {why_precise}"
        self.loop_mask = LoopMask()
        guard: BatchGuard | None = None

        def hold(at: np.ndarray | None) -> None:
            assert guard is not None
            guard.hold(at)

        recorder = BatchRecorder(
            self.options,
            self.addresses,
            statements=self.launch.statements,
            order_of=self.launch.linear,
            loop_mask=self.loop_mask,
            precise=why_precise is not None,
            ranges=ranges is None,
            hold=hold,
            on_iteration=None if self.options.progress is None else self._during_batch,
        )
        guard = BatchGuard(
            self.launch,
            self.addresses,
            recorder,
            self.locate,
            state=state,
            precise=why_precise is not None,
        )
        return recorder, guard

    def _during_batch(self) -> None:
        """A batch can run long (a loop over all its programs at once): progress is reported
        between batches and, at most every 0.2 s, from inside the batch's loops."""
        done, total, last = self._progress
        now = time.perf_counter()
        if now - last > 0.2:
            self._progress = (done, total, now)
            assert self.options.progress is not None
            self.options.progress(done, total)

    def run(self, order: Collection[Pid]) -> None:
        progress = self.options.progress
        done, total = 0, len(order)
        self._progress = (0, total, time.perf_counter())
        rewritten = self.rewrites.rewritten(self.fn, instrument=self.options.capture)
        key = measured.launch_key(
            rewritten.code, self.launch.grid, self.launch.args, self.options, self.precise is not None
        )
        before = measured.remembered(key)
        if before is not None:
            self.recorder.assume(before)
        try:
            with self._language() as stock:
                kernel = self.function(self.fn)
                values = {k: batched_value(v) for k, v in self.bound.values.items()}
                sizes = self._batch_sizes(total)
                groups = (
                    row_batches(order, sizes)
                    if isinstance(order, ProgramOrder)
                    else ((group, None) for group in batches(order, sizes))
                )
                for group, rows in groups:
                    self._run_group(stock, kernel, values, group, rows)
                    done += len(group)
                    self._progress = (done, total, self._progress[2])
                    if progress is not None:
                        progress(done, total)
        except KeyboardInterrupt:
            batch = self.recorder.batch
            # the first program of the batch that was running
            raise self._interrupted(batch[0] if batch else None) from None
        measured.remember(key, self.recorder.measured())
        launch = self.launch
        if self._split:
            # groups split off by divergence finish out of order: list programs as the serial run does
            launch.sort_programs()
        checks.finish(launch, self.observations)

    def _batch_sizes(self, programs: int) -> Iterator[int]:
        """How many programs each batch runs: as many as `working_set_bytes` holds by what one
        program's values took in the batches so far (a batch that outgrows it is undone and cut:
        see `_run_group`), at most MAX_BATCH."""
        # a launch of a few hundred programs runs whole: a second batch would cost more; with
        # a shadow a program's values take several times as much (see shadow_values.held_bytes)
        whole = 8 * PROBE_BATCH if self.shadow is None else PROBE_BATCH
        if programs > whole and not self.recorder.program_bytes():
            # nothing measured yet, by this launch or the last one like it (see batched/measured):
            # a small first batch measures what a program's values take, rather than a whole batch
            # that outgrows the working set being run and undone
            yield PROBE_BATCH
        while True:
            fits = self.recorder.batch_fits(MAX_BATCH)
            # a batch that reaches the end of the budget ends there (see programs_to_budget)
            left = self.recorder.programs_to_budget()
            yield left if left is not None and left < fits else fits

    @contextmanager
    def _language(self) -> Iterator[Any]:
        with interpreter_scope(self.call) as stock, batched_language(self.loop_mask):
            yield stock

    def _run_group(
        self,
        stock: Any,
        kernel: Callable[..., Any],
        values: dict[str, Any],
        pids: list[Pid],
        rows: np.ndarray | None = None,
    ) -> None:
        """Run programs `pids` together (`rows`: their ids as an (n, 3) int64 array, if made)."""
        if rows is None:
            rows = np.array(pids, dtype=np.int64).reshape(-1, 3)
        attributes = BatchedBuilder.attributes(rows, self.launch.grid, self.loop_mask)
        batch_observations = Observations()
        observing = batch_observations if self.detect else None
        self.recorder.begin_batch(pids, observing)
        self.guard.begin_batch(stock, observing, rows)
        fits = 0
        try:
            with (
                triton_compat.builder_as(stock, BatchedBuilder, **attributes) as builder,
                self.guard.installed(builder),
                self.arith.installed(builder, observations=observing),
                self.shadow.installed(
                    builder,
                    lambda: self.loop_mask.active,
                    lambda ptrs: pointer_tile(self.addresses, ptrs),
                    lambda: self.recorder.width,
                )
                if self.shadow is not None
                else nullcontext(),
            ):
                kernel(**values)
        except Divergence as split:
            self._split = True
            self.guard.rollback()
            self.recorder.begin_split()
            for group in _groups(pids, self.recorder.divergence_values(split.values)):
                self._run_group(stock, kernel, values, group)
            self._add(self.recorder.end_split())
            return
        except Oversized as over:
            self.guard.rollback()
            # the statements still to come take more: halving at least, a batch is cut a few
            # times, not once per statement; the groups run once the batch's frames are gone
            fits = min(over.fits, max(1, len(pids) // 2))
        except (BatchUnsupported, NeedsPrecise, KeyboardInterrupt):
            raise
        except Exception as exc:  # the serial strategy reports it with the failing program's id
            if self.interrupts.seen:  # Ctrl-C that a library turned into an error of its own
                raise KeyboardInterrupt from exc
            raise BatchUnsupported(f"{type(exc).__name__} in a batch") from exc
        start = 0
        while fits and start < len(pids):
            # each group as large as what the programs run so far measured lets it be
            fits = self.recorder.batch_fits(fits)
            self._run_group(stock, kernel, values, pids[start : start + fits], rows[start : start + fits])
            start += fits
        if start:
            return
        self.observations.merge(batch_observations)
        self.guard.commit_counts()
        self._add(self.recorder.end_batch())

    def _add(self, batches: list[tuple[BatchPrograms, list[RecordBlock]]]) -> None:
        if batches:
            self.launch.add_batches(batches, self.options.summary_bytes)


def _groups(pids: list[Pid], values: np.ndarray) -> list[list[Pid]]:
    """Programs grouped by the value they disagreed on, groups in the order of their first program."""
    groups: dict[Any, list[Pid]] = {}
    for pid, value in zip(pids, values.tolist()):
        groups.setdefault(value, []).append(pid)
    return list(groups.values())
