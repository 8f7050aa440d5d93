"""A launch from start to end: bind its arguments, snapshot them, run its programs with the batched
strategy where it applies and serially where not (or where the batched run gives up), commit the
results to the caller's arrays, and replay single programs later on."""

from __future__ import annotations

import gc
import operator
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernel_nb.checks import precision
from kernel_nb.engine import allocator, failure, triton_compat
from kernel_nb.engine.args import BoundArguments, bind
from kernel_nb.engine.arrays import ArgumentError
from kernel_nb.engine.batched import BatchedRun, BatchUnsupported, NeedsPrecise, unsupported_reason
from kernel_nb.engine.interrupts import InterruptWatch
from kernel_nb.engine.kernel_globals import kernel_globals
from kernel_nb.engine.order import ProgramOrder
from kernel_nb.engine.patches import routed_language
from kernel_nb.engine.perturb import detect_masked_fill
from kernel_nb.engine.rewrite import RewriteCache
from kernel_nb.engine.serial import SerialRun
from kernel_nb.engine.snapshot import InputSnapshot, TypedSnapshot
from kernel_nb.errors import KernelError, LaunchArgumentError, LaunchInterrupted
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
            LaunchInterrupted: Ctrl-C; the caller's arrays are unchanged (but for a Ctrl-C while
                the results are written back, held until they all are: the message says so).
            LaunchArgumentError: an argument, a keyword, the grid or the pids selection the launch
                cannot take; nothing ran.
        """
        jit = triton_compat.innermost_jit(kernel)
        fn = jit.fn
        name = fn.__name__
        # what the launch's batches may take, which the working set bounds (see allocator.reused_memory)
        ahead = self.options.working_set_bytes
        # watched from the first step: Ctrl-C while arguments are copied is the launch's too
        with self.interrupts, _collector_paused(), allocator.reused_memory(ahead):
            try:
                return self._launch(jit, grid, args, kwargs, index)
            except (LaunchInterrupted, LaunchArgumentError):
                raise
            except KeyboardInterrupt as stray:
                # Ctrl-C outside the programs (setup, clean-up), or a second one while the first
                # unwound: the launch is interrupted all the same, nothing was committed
                self.interrupts.hold_rest()
                raise _interrupted(name, stray) from None
            except ArgumentError as exc:
                raise LaunchArgumentError(f"{name}: {exc}", kernel=name) from None
            except Exception as exc:
                if self.interrupts.seen:  # Ctrl-C that a library turned into an error of its own
                    self.interrupts.hold_rest()
                    raise _interrupted(name, None) from None
                if isinstance(exc, KernelError) and exc.launch is not None:
                    failure.put_first(exc.launch, exc)  # whichever strategy ran, after its detectors
                raise

    def _launch(
        self, jit: Any, grid: Any, args: tuple[Any, ...], kwargs: dict[str, Any], index: int
    ) -> Launch:
        self.rewrites.note_source(jit)
        fn = jit.fn
        bound = bind(fn, args, kwargs)
        bound.poison(self.options.poison)
        launch = Launch(
            index=index,
            kernel=fn.__name__,
            grid=_resolve_grid(grid, {**bound.originals, **kwargs}),
            args=bound.infos,
            budget_bytes=self.options.budget_bytes,
            shadow=self.options.shadow,
            jit=jit,
            grid_spec=grid,
            kernel_globals=kernel_globals(fn),
        )
        _check_pids(self.options, launch.grid)
        snapshot = bound.inputs()
        launch.snapshot = _typed_snapshot(bound, snapshot)
        order = _program_order(launch.grid, self.options)
        started = time.perf_counter()
        context: SerialRun | None = None
        # the language routed once for every run of the launch's programs (see routed_language)
        filled_lanes = True
        with routed_language():
            try:
                context = self._run(fn, launch, bound, snapshot, order)
            finally:
                launch.duration_s = time.perf_counter() - started
                if context is not None:
                    filled_lanes = context.guard.filled_lanes
                    launch.kept_bytes = context.recorder.kept_bytes
                    if context.shadow is not None:
                        context.shadow.settle(lambda name: _results(bound, name))
                        launch.references = context.shadow.references
                        launch.errors = context.shadow.errors
                        if self.options.detect:
                            operands = {i: s.operands for i, s in enumerate(context.recorder.statement_info)}
                            launch.findings += precision.findings(
                                launch,
                                context.shadow.outputs,
                                operands,
                                context.shadow.errors,
                                lambda name: _results(bound, name),
                            )
                    context.dismantle()
            # no masked load without other= left a lane masked off: replays would fill none
            if self.options.detect and filled_lanes:
                launch.findings += detect_masked_fill(
                    fn, launch, bound, snapshot, self.options, self.rewrites, self.interrupts
                )
        try:
            bound.commit(lambda name: launch.buffers[name].written, inputs=snapshot)
        except KeyboardInterrupt:
            raise LaunchInterrupted(
                f"{launch.kernel}: interrupted while its results were written back, which was "
                "completed first; the launch finished and the arrays hold its results",
                kernel=launch.kernel,
                pid=None,
                launch=launch,
            ) from None
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
        snapshot: InputSnapshot,
        order: ProgramOrder,
    ) -> SerialRun:
        """The batched strategy where it applies and succeeds, else the serial one from the snapshot."""
        reason = unsupported_reason(fn, self.options, self.rewrites)
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
        try:
            context.run(order)
        except KernelError as error:
            if error.iteration is None:  # read before anything else runs in the recorder
                counted = self.options.capture
                error.iteration = failure.failing_iteration(error, context.recorder, counted=counted)
            raise
        return context

    def _replay(
        self,
        fn: Callable[..., Any],
        launch: Launch,
        bound: BoundArguments,
        snapshot: InputSnapshot,
        pid: Pid,
    ) -> ProgramTrace:
        """Run one program again from the launch's input snapshot, keeping all its values.

        Programs that read what other programs of the launch wrote see the inputs instead (the race
        detector reports such launches). Programs that wait for each other cannot run alone: the
        whole launch runs again, in turns, keeping the values of `pid` only.
        """
        snapshot.materialize()  # the replay writes the private copies, which may hold inputs
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


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a launch runs. A launch makes objects by the
    ten thousand (records, tensors, per-program lists) and leaves no cycles to speak of; each
    full collection it would set off walks every object of the process (a Jupyter kernel holds
    millions), for nothing. The collector's state is put back as it was, whatever happens."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _start_over(launch: Launch, bound: BoundArguments, snapshot: InputSnapshot) -> None:
    """Forget what a failed attempt at the launch did."""
    bound.restore(snapshot)
    launch.programs, launch.statements, launch.sources, launch.findings = {}, [], {}, []
    launch.aggregated, launch.aggregates, launch.summary_bytes = 0, {}, 0
    for bmap in launch.buffers.values():
        bmap.clear()


def _interrupted(kernel: str, stray: BaseException | None) -> LaunchInterrupted:
    """The launch's LaunchInterrupted: the one its programs raised where a second Ctrl-C cut into
    its unwinding, else one for an interrupt outside the programs."""
    first = stray.__context__ if stray is not None else None
    while first is not None and not isinstance(first, LaunchInterrupted):
        first = first.__context__
    if isinstance(first, LaunchInterrupted):
        return first
    return LaunchInterrupted(
        f"{kernel}: interrupted before its programs ran or after they stopped; the arrays are unchanged",
        kernel=kernel,
        pid=None,
    )


# A GPU's grid limits (CUDA's maximum grid dimensions; ROCm's are no smaller).
GRID_LIMITS = (2**31 - 1, 65535, 65535)

_GRID_FORM = "a tuple of 1 to 3 ints"


def _resolve_grid(grid: Any, meta: dict[str, Any]) -> Pid:
    """The launch's grid as (x, y, z), checked as a GPU launch checks it.

    Raises:
        ArgumentError: the grid (or what the grid function returns) is not 1 to 3 non-negative
            ints within the GPU's limits, or the grid function raised.
    """
    given = grid
    if callable(grid):
        try:
            grid = grid({k: triton_compat.unwrap_constexpr(v) for k, v in meta.items()})
        except Exception as exc:  # the user's function, whatever it raises: reported with the launch
            raise ArgumentError(
                f"the grid function raised {type(exc).__name__}: {exc}; it is called with a dict of the "
                f"launch's arguments by name ({', '.join(meta)})"
            ) from exc
    what = f"the grid function's result {grid!r}" if callable(given) else f"grid {grid!r}"
    if _is_int(grid):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)):
        raise ArgumentError(
            f"{what} is not {_GRID_FORM}; launch as kernel[(x,)], kernel[(x, y, z)] or kernel[fn]"
        )
    if not 1 <= len(grid) <= 3:
        raise ArgumentError(f"{what} has {len(grid)} axes; a grid has 1 to 3")
    dims: list[int] = []
    for axis, size in enumerate(grid):
        if not _is_int(size):
            raise ArgumentError(
                f"{what} has size {size!r} on axis {axis}, not an int; pass ints, e.g. triton.cdiv(n, BLOCK)"
            )
        value = int(size)
        if value < 0:
            raise ArgumentError(f"{what} has size {value} on axis {axis}; sizes are 0 or more")
        if value > GRID_LIMITS[axis]:
            raise ArgumentError(
                f"{what} has {value} programs on axis {axis}, more than a GPU launches "
                f"({GRID_LIMITS[axis]}); put more programs on axis 0 (up to {GRID_LIMITS[0]}) or give each more work"
            )
        dims.append(value)
    padded = (*dims, 1, 1)
    return (padded[0], padded[1], padded[2])


def _is_int(value: Any) -> bool:
    """An integer as Triton's launcher takes one for a grid size: anything with `__index__`
    (Python and numpy ints, a 0-d integer tensor), not a float or a string."""
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _check_pids(options: Options, grid: Pid) -> None:
    """Refuse a program selection that selects no program of the grid (a misspelt pid would
    otherwise keep nothing, silently).

    Raises:
        ArgumentError: none of `options.pids` lies in the grid.
    """
    if options.pids == "all" or not options.pids:
        return
    inside = [p for p in options.pids if all(0 <= p[i] < grid[i] for i in range(3))]
    if not inside:
        shown = ", ".join(f"({p[0]},{p[1]},{p[2]})" for p in options.pids[:4])
        more = f" and {len(options.pids) - 4} more" if len(options.pids) > 4 else ""
        raise ArgumentError(
            f"pids {shown}{more} select no program of the grid ({grid[0]}, {grid[1]}, {grid[2]}); "
            f"select pids (x, y, z) with x < {grid[0]}, y < {grid[1]}, z < {grid[2]}"
        )


def _program_order(grid: Pid, options: Options) -> ProgramOrder:
    """The launch's programs in the order the options ask for, made one at a time as they run."""
    return ProgramOrder(grid, options.order, options.seed)


def _results(bound: BoundArguments, name: str) -> np.ndarray:
    """Buffer argument `name`'s elements as the launch left them, before they are written back."""
    arg = next(a for a in bound.buffers if a.name == name)
    return arg.memory.current()[arg.span_lo : arg.span_hi].view(arg.dtype)


def _typed_snapshot(bound: BoundArguments, snapshot: InputSnapshot) -> TypedSnapshot:
    spans = {}
    for arg in bound.buffers:
        memory_index = next(i for i, m in enumerate(bound.memories) if m is arg.memory)
        spans[arg.name] = (memory_index, arg.span_lo, arg.span_hi, arg.dtype)
    return TypedSnapshot(snapshot, spans)
