"""Masked loads without `other=`: do the lanes they fill reach what a program stores?

The interpreter fills a masked load's masked-off lanes with 0; on the GPU they hold whatever the
registers held. A kernel whose stored results depend on those lanes (a `tl.max` over negative data,
a row sum, a comparison) is right on the CPU by luck. The only faithful test is to run the program
again with the filled lanes set to something else and see whether what it stores changes: a replay
from the launch's input snapshot, once as it ran and once per (load, fill value), for the first
few programs whose loads filled lanes. Loads with an explicit `other=` are the author's choice and
never touched.

The replays run before the launch's results are committed (so that a Ctrl-C during them leaves the
caller's arrays as they were, as for any interrupted launch), with the results put back after.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.checks.describe import describe
from kernel_nb.checks.observations import MAX_ELEMENTS
from kernel_nb.distinct import distinct
from kernel_nb.engine import triton_compat
from kernel_nb.engine.args import BoundArguments
from kernel_nb.engine.guard import MemoryGuard
from kernel_nb.engine.interrupts import InterruptWatch
from kernel_nb.engine.patches import patched_methods
from kernel_nb.engine.recorder import Recorder
from kernel_nb.engine.restore import RestoreOnTouch
from kernel_nb.engine.rewrite import RewriteCache
from kernel_nb.engine.serial import SerialRun
from kernel_nb.engine.snapshot import InputSnapshot
from kernel_nb.errors import KernelError
from kernel_nb.options import Options
from kernel_nb.trace import Deferred, Finding, Launch, MemoryEvent, Pid, ProgramTrace

MAX_PROGRAMS = 2  # programs whose filled lanes are perturbed, per launch
MAX_SCANNED = 64  # held programs whose load events are searched for masked-off lanes

Site = tuple[str, int]


@dataclass
class _Fill:
    """What the replay does at masked loads without other=: notes them, and sets one's lanes."""

    site: Site | None = None
    value: Any = None  # the value set in the site's filled lanes
    # site -> its first filled lanes and its element type (ml_dtypes' for bf16 and fp8)
    seen: dict[Site, tuple[np.ndarray, np.dtype]] = field(default_factory=dict)


@dataclass
class _Change:
    site: Site
    pid: Pid
    lanes: np.ndarray
    shown: str  # the fill value, as text
    what: str  # what changed, in words
    loaded: str | None  # the argument the load reads


def detect_masked_fill(
    fn: Callable[..., Any],
    launch: Launch,
    bound: BoundArguments,
    snapshot: InputSnapshot,
    options: Options,
    rewrites: RewriteCache,
    interrupts: InterruptWatch,
) -> list[Finding]:
    """`masked_fill_used` findings: masked loads without other= whose filled lanes change what
    a program stores. The caller's host buffers are left as they were.

    Programs that wait for each other, and kernels that stop in the debugger, are not replayed.
    (A breakpoint() in a helper only is not seen, and would stop the replay too.)
    """
    candidates = _candidates(launch)
    if not candidates or rewrites.waits(fn):
        return []
    # breakpoint() in the source stops any run of it; the rewrite the launch made says so
    if rewrites.rewritten(fn, instrument=options.capture).breakpoints:
        return []
    # each replay starts from the inputs where it goes, and the launch's results go back there
    restore = RestoreOnTouch(bound.memories, snapshot)
    # only the events are compared: no statement records (a program of 2**20 lanes keeps every
    # value of a replay), and no line breakpoints, which only instrumented functions hold
    quiet = dataclasses.replace(options, capture=False, detect=False, progress=None)
    replay = _Replayer(fn, launch, bound, restore, quiet, rewrites, interrupts)
    changes: dict[Site, _Change] = {}
    checked = 0
    try:
        for pid in candidates:
            if checked == MAX_PROGRAMS:
                break
            fill = _Fill()
            reference = replay(pid, fill)
            if reference is None or not fill.seen:
                continue
            checked += 1
            for site, (lanes, dtype) in fill.seen.items():
                if site not in changes:
                    change = _perturbed(replay, pid, site, lanes, dtype, reference)
                    if change is not None:
                        changes[site] = change
    finally:
        restore.finish()
    return [_finding(launch, change, checked) for change in changes.values()]


def _candidates(launch: Launch) -> list[Pid]:
    """Programs whose loads had masked-off lanes: the held ones (the first that ran) as their
    events show, then the grid's last program (where a grid's last block runs past the end), which
    is replayed to find out when the launch did not hold it."""
    last = launch.pid_of(launch.num_programs - 1) if launch.num_programs else None
    found: list[Pid] = []
    for scanned, (pid, program) in enumerate(launch.programs.items()):
        if scanned == MAX_SCANNED or len(found) == MAX_PROGRAMS:
            break
        if pid != last and _masks_lanes(program.events):
            found.append(pid)
    if last is not None:
        held = launch.programs.get(last)
        if held is None or (_masks_lanes(held.events) if held.kept else _may_mask_lanes(held.events)):
            found.append(last)
    return found


def _masks_lanes(events: list[MemoryEvent]) -> bool:
    pending = events.pending() if isinstance(events, Deferred) else None
    if pending is not None:  # a batch's columns: read there, without an event object each
        return any(b.kind == "load" and b.masks_lanes(row, keep) for b, row, keep in pending)
    return any(e.kind == "load" and e.mask is not None and not e.mask.all() for e in events)


def _may_mask_lanes(events: list[MemoryEvent]) -> bool:
    """Whether a program whose values were not kept may have loads with masked-off lanes: not
    when it has loads, every one with its lane count known and all its lanes active."""
    loads = [e for e in events if e.kind == "load"]
    return not loads or any(e.lanes == 0 or e.active < e.lanes for e in loads)


class _Replayer:
    """Runs one program of the launch again from its input snapshot, with a fill at its loads."""

    def __init__(
        self,
        fn: Callable[..., Any],
        launch: Launch,
        bound: BoundArguments,
        restore: RestoreOnTouch,
        options: Options,
        rewrites: RewriteCache,
        interrupts: InterruptWatch,
    ) -> None:
        self.fn, self.launch, self.bound, self.restore = fn, launch, bound, restore
        self.options, self.rewrites, self.interrupts = options, rewrites, interrupts

    def __call__(self, pid: Pid, fill: _Fill) -> ProgramTrace | str | None:
        """The replayed program; for a perturbed run that fails, the error's text; None when the
        run as it was fails (the launch ran past it in its own order: nothing to compare)."""
        launch = self.launch
        # a launch of its own: the replay must not replace the programs the real launch holds
        scratch = Launch(
            index=launch.index,
            kernel=launch.kernel,
            grid=launch.grid,
            args=launch.args,
            statements=list(launch.statements),
        )
        self.restore.begin()
        run = _FillRun(
            self.fn,
            scratch,
            self.bound,
            self.options,
            self.rewrites,
            self.interrupts,
            replay=True,
            replay_pid=pid,
            fill=fill,
            restore=self.restore,
        )
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # the kernel's prints ran once already
                run.run([pid])
        except KernelError as error:
            return None if fill.site is None else str(error)
        finally:
            run.dismantle()
        return scratch.programs[pid]


@dataclass
class _FillRun(SerialRun):
    """A serial replay whose memory guard fills masked-off lanes as `fill` says."""

    fill: _Fill = field(default_factory=_Fill)
    restore: RestoreOnTouch | None = None

    def _parts(self) -> tuple[Recorder, MemoryGuard]:
        recorder, _ = super()._parts()
        guard = _FillingGuard(
            self.launch,
            self.addresses,
            recorder,
            self.locate,
            state=self._state(),
            update_maps=False,
            run=self,
        )
        return recorder, guard


class _FillingGuard(MemoryGuard):
    """The memory guard with one more layer over the masked load: the guard checks and records
    the load as usual, this layer then notes the lanes it filled and sets them when asked."""

    def __init__(self, *args: Any, run: _FillRun, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.run = run

    def check(
        self, op: str, ptrs: Any, addresses: np.ndarray, active: np.ndarray, unmasked: bool = False
    ) -> None:
        super().check(op, ptrs, addresses, active, unmasked)
        restore = self.run.restore
        if restore is None:
            return
        # the access is in bounds: put the inputs back where it goes before it is made
        lanes = np.asarray(np.asarray(addresses)[active], dtype=np.uint64).reshape(-1)
        if not lanes.size:
            return
        itemsize = triton_compat.pointer_element_itemsize(ptrs)
        windows = self.addresses.windows(lanes)
        for window in distinct(windows[windows >= 0]).tolist():
            memory = self.addresses.memories[window]
            assert memory is not None
            mine = lanes[windows == window]
            lo, hi = int(mine.min()) - memory.base, int(mine.max()) - memory.base + itemsize
            restore.touch(window, lo, hi, writes=op != "load")

    @contextmanager
    def installed(self, builder: Any) -> Iterator[None]:
        with super().installed(builder):
            checked = getattr(builder, triton_compat.LOAD_METHOD)

            def masked_load(ptrs: Any, mask: Any, other: Any, *rest: Any, **options: Any) -> Any:
                result = checked(ptrs, mask, other, *rest, **options)
                return result if other is not None or mask is None else self._filled(result, mask)

            with patched_methods(builder, {triton_compat.LOAD_METHOD: masked_load}):
                yield

    def _filled(self, result: Any, mask: Any) -> Any:
        data = np.asarray(result.data)
        off = ~np.broadcast_to(np.asarray(mask.data, bool), data.shape)
        if not off.any():
            return result
        fill = self.run.fill
        site = self.locate()
        # bf16 and fp8 values are held as their bits: the fill is made in the real type
        real = np.dtype(numerics.BITS_TYPES.get(str(result.dtype), data.dtype))
        fill.seen.setdefault(site, (np.flatnonzero(off.reshape(-1)), real))
        if site != fill.site:
            return result
        changed = np.array(data, copy=True)
        changed[off] = np.asarray(fill.value).astype(real).view(changed.dtype)
        return triton_compat.TensorHandle(changed, result.dtype)


def _fills(dtype: np.dtype) -> list[tuple[Any, str]]:
    """Values to put in the filled lanes, each with its text: together they move a max, a min, a
    sum and a comparison off what 0 gives."""
    if dtype == np.bool_:
        return [(True, "True")]
    if np.issubdtype(dtype, np.integer):
        # not the maximum: a filled loop bound (`range(n)`) would run for ever; the minimum makes a
        # filled index fail its access, 1 moves a sum, a max over negatives and a comparison with 0
        return [(v, str(v)) for v in (int(np.iinfo(dtype).min), 1) if v != 0]
    return [(v, str(np.asarray(v).astype(dtype))) for v in (np.inf, -np.inf)]


def _perturbed(
    replay: _Replayer, pid: Pid, site: Site, lanes: np.ndarray, dtype: np.dtype, reference: ProgramTrace | str
) -> _Change | None:
    assert isinstance(reference, ProgramTrace)
    loaded = _load_arg(reference, site)
    for value, shown in _fills(dtype):
        fill = _Fill(site=site, value=value)
        with np.errstate(all="ignore"):
            perturbed = replay(pid, fill)
        if isinstance(perturbed, str):
            return _Change(site, pid, lanes, shown, f"the program fails ({perturbed})", loaded)
        assert perturbed is not None
        change = _stores_differ(reference.events, perturbed.events)
        if change is not None:
            return _Change(site, pid, lanes, shown, change, loaded)
    return None


def _load_arg(program: ProgramTrace, site: Site) -> str | None:
    """The argument a load site reads, off the program's events."""
    events = [e for e in program.events if e.kind == "load" and (e.file, e.line) == site]
    return next((e.arg for e in events if e.arg is not None), None)


def _stores_differ(reference: list[MemoryEvent], perturbed: list[MemoryEvent]) -> str | None:
    """The first store or atomic whose written elements or values differ, in words."""
    mine = [e for e in reference if e.kind != "load"]
    theirs = [e for e in perturbed if e.kind != "load"]
    for a, b in zip(mine, theirs):
        if (a.kind, a.line, a.arg) != (b.kind, b.line, b.arg) or not _same(a.mask, b.mask):
            return f"the {a.kind} at line {a.line} writes other elements"
        if a.mask is None or a.indices is None or a.values is None or b.values is None:
            continue  # no lane active (the same in both: the masks agree): nothing written
        active = a.mask.reshape(-1)
        va, vb = a.values.reshape(-1)[active], b.values.reshape(-1)[active]
        differs = (_bits(va) != _bits(vb)).any(axis=1)
        if differs.any():
            elements = a.indices.reshape(-1)[active][differs]
            verb = "stored" if a.kind == "store" else f"written by {a.kind}"
            return f"{a.arg} elements {describe(elements)} {verb} at line {a.line} change"
    if len(mine) != len(theirs):
        return "the program makes other stores"
    return None


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool((a == b).all())


def _bits(values: np.ndarray) -> np.ndarray:
    """Values as their bytes, one row each (NaN equals NaN, -0.0 differs from 0.0)."""
    flat = np.ascontiguousarray(values).reshape(-1)
    return flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)


def _finding(launch: Launch, change: _Change, checked: int) -> Finding:
    line = change.site[1]
    pid = change.pid
    of = f" of {change.loaded}" if change.loaded else ""
    programs = "program" if checked == 1 else f"{checked} programs"
    return Finding(
        kind="masked_fill_used",
        severity="warning",
        message=(
            f"{launch.kernel}:{line} pid=({pid[0]},{pid[1]},{pid[2]}): tl.load{of} has no other=: its "
            f"masked-off lanes {describe(change.lanes)} hold 0 here and are undefined on the GPU, and "
            f"they change the result: with them set to {change.shown}, {change.what}; pass other= that "
            f"their use ignores (-float('inf') for tl.max, float('inf') for tl.min, 0 for a sum) "
            f"(checked in the first {programs} whose masked loads filled lanes)"
        ),
        launch=launch.index,
        pid=pid,
        file=change.site[0],
        line=line,
        arg=change.loaded,
        elements=change.lanes[:MAX_ELEMENTS],
    )
