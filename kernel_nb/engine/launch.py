"""A launch from start to end: bind its arguments, snapshot them, run its programs with the batched
strategy where it applies and serially where not (or where the batched run gives up), commit the
results to the caller's arrays, and replay single programs later on."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from kernel_nb.engine import triton_compat
from kernel_nb.engine.args import BoundArguments, bind
from kernel_nb.engine.batched import BatchedRun, BatchUnsupported, NeedsPrecise, unsupported_reason
from kernel_nb.engine.interrupts import InterruptWatch
from kernel_nb.engine.order import ProgramOrder
from kernel_nb.engine.rewrite import RewriteCache
from kernel_nb.engine.serial import SerialRun
from kernel_nb.options import Options
from kernel_nb.trace import Launch, Pid, ProgramTrace


class Engine:
    """Interprets launches; caches rewritten functions for the lifetime of a session."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.rewrites = RewriteCache(options.breakpoints)
        self.interrupts = InterruptWatch()

    def launch(
        self, kernel: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], index: int
    ) -> Launch:
        """Interpret one launch `kernel[grid](*args, **kwargs)`.

        Returns:
            The launch's trace; the caller's arrays hold the results.

        Raises:
            KernelError: a program failed (memory guard, device_assert, an exception in the kernel);
                the caller's arrays are unchanged and the error's `launch` holds what was recorded.
            LaunchInterrupted: Ctrl-C; the caller's arrays are unchanged.
        """
        jit = triton_compat.innermost_jit(kernel)
        self.rewrites.note_source(jit)
        fn = jit.fn
        bound = bind(fn, args, kwargs)
        bound.poison(self.options.poison)
        launch = Launch(
            index=index,
            kernel=fn.__name__,
            grid=_resolve_grid(grid, {**kwargs, **bound.originals}),
            args=bound.infos,
            budget_bytes=self.options.budget_bytes,
        )
        snapshot = bound.snapshot()
        launch.snapshot = _typed_snapshot(bound, snapshot)
        order = _program_order(launch.grid, self.options)
        started = time.perf_counter()
        context: SerialRun | None = None
        try:
            with self.interrupts:
                context = self._run(fn, launch, bound, snapshot, order)
        finally:
            launch.duration_s = time.perf_counter() - started
            if context is not None:
                launch.kept_bytes = context.recorder.kept_bytes
                context.dismantle()
        bound.commit(lambda name: launch.buffers[name].written)
        # the launch holds its replayer: a weak reference back lets the launch be freed as soon as
        # nobody holds it (a cycle would keep its arrays until a garbage collection)
        owner = weakref.ref(launch)
        launch.replayer = lambda pid: self._replay(fn, _alive(owner), bound, snapshot, pid)
        return launch

    def _run(
        self,
        fn: Callable[..., Any],
        launch: Launch,
        bound: BoundArguments,
        snapshot: list[np.ndarray],
        order: ProgramOrder,
    ) -> SerialRun:
        """The batched strategy where it applies and succeeds, else the serial one from the snapshot."""
        reason = unsupported_reason(
            fn, self.options, lambda: self.rewrites.rewritten(fn, instrument=self.options.capture)
        )
        if reason is None:
            # ranges first; per-element bookkeeping where ranges cannot prove the batches exact
            precise: str | None = None
            while reason is None:
                batched = BatchedRun(
                    fn, launch, bound, self.options, self.rewrites, self.interrupts, precise=precise
                )
                try:
                    batched.run(order)
                    launch.strategy, launch.strategy_note = "batched", batched.note
                    return batched
                except NeedsPrecise as why:
                    precise = str(why)
                except BatchUnsupported as why:
                    reason = str(why)
                except BaseException:
                    batched.dismantle()
                    raise
                batched.dismantle()  # a given-up attempt: its bookkeeping goes now
                _start_over(launch, bound, snapshot)
        launch.strategy, launch.strategy_note = "serial", reason or ""
        context = SerialRun(fn, launch, bound, self.options, self.rewrites, self.interrupts)
        context.run(order)
        return context

    def _replay(
        self,
        fn: Callable[..., Any],
        launch: Launch,
        bound: BoundArguments,
        snapshot: list[np.ndarray],
        pid: Pid,
    ) -> ProgramTrace:
        """Run one program again from the launch's input snapshot, keeping all its values.

        Programs that read what other programs of the launch wrote see the inputs instead (the race
        detector reports such launches). Programs that wait for each other cannot run alone: the
        whole launch runs again, in turns, keeping the values of `pid` only.
        """
        bound.restore(snapshot)
        context = SerialRun(
            fn, launch, bound, self.options, self.rewrites, self.interrupts, replay=True, replay_pid=pid
        )
        context.run(_program_order(launch.grid, self.options) if context.turns is not None else [pid])
        return launch.programs[pid]


def _alive(owner: weakref.ref[Launch]) -> Launch:
    launch = owner()
    assert launch is not None  # its replayer is only reachable through it
    return launch


def _start_over(launch: Launch, bound: BoundArguments, snapshot: list[np.ndarray]) -> None:
    """Forget what a failed attempt at the launch did."""
    bound.restore(snapshot)
    launch.programs, launch.statements, launch.sources, launch.findings = {}, [], {}, []
    launch.aggregated, launch.aggregates, launch.summary_bytes = 0, {}, 0
    for bmap in launch.buffers.values():
        bmap.clear()


def _resolve_grid(grid: Any, meta: dict[str, Any]) -> Pid:
    if callable(grid):
        grid = grid({k: triton_compat.unwrap_constexpr(v) for k, v in meta.items()})
    if isinstance(grid, int):
        grid = (grid,)
    dims = tuple(int(g) for g in grid)
    if not 1 <= len(dims) <= 3 or any(g < 0 for g in dims):
        raise ValueError(f"grid must have 1 to 3 non-negative sizes, got {grid!r}")
    padded = dims + (1,) * (3 - len(dims))
    return (padded[0], padded[1], padded[2])


def _program_order(grid: Pid, options: Options) -> ProgramOrder:
    """The launch's programs in the order the options ask for, made one at a time as they run."""
    return ProgramOrder(grid, options.order, options.seed)


def _typed_snapshot(bound: BoundArguments, snapshot: list[np.ndarray]) -> dict[str, np.ndarray]:
    views = {}
    for arg in bound.buffers:
        memory_index = next(i for i, m in enumerate(bound.memories) if m is arg.memory)
        raw = snapshot[memory_index][arg.span_lo : arg.span_hi]
        views[arg.name] = raw.view(arg.dtype)
    return views
