"""Builder hooks: every load, store and atomic is checked before it happens, then recorded.

Triton's interpreter copies raw addresses in C++ without bounds checks; a stray pointer would read
garbage or kill the process. The kernel's pointers are addresses in per-memory windows (see
memory.WINDOW_BITS), which the interpreter is handed as host addresses only once the access is
checked: each active lane must stay inside the memory its pointer was derived from, be aligned to
its element, and, for a write, land where the caller's memory may be written. Otherwise the guard
raises `KernelMemoryError` (naming kernel, line, program, argument and elements), and nothing is
accessed.

Why one module: the hooks and the refusals they raise share the one access under way (its lanes,
its pointer's origin, the locator and the recorder's program), and the refusals' text is what a user
reads first; apart, every hook would pass that state across a module boundary.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kernel_nb.checks import Observations, Site, races, uninitialised
from kernel_nb.checks.state import AccessState, ElementArrays
from kernel_nb.engine import hints, triton_compat
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.args import BufferArg
from kernel_nb.engine.patches import patched_methods
from kernel_nb.engine.recorder import Recorder
from kernel_nb.engine.waiting import Turns
from kernel_nb.errors import KernelAssertionError, KernelMemoryError
from kernel_nb.trace import BufferMap, Launch, MemoryEvent
from kernel_nb.trace.coordinates import Layout

Locator = Callable[[], tuple[str, int]]


_LOW_63 = (1 << 63) - 1


class MemoryGuard:
    """Checks and records the memory accesses of one launch."""

    def __init__(
        self,
        launch: Launch,
        addresses: AddressMap,
        recorder: Recorder,
        locate: Locator,
        *,
        state: AccessState,
        update_maps: bool = True,
        observations: Observations | None = None,
        turns: Turns | None = None,
    ) -> None:
        """
        Args:
            state: the launch's per-element race and initialisation state (see checks/state).
            update_maps: count accesses in the launch's buffer maps (not in a replay).
            observations: where detectors' observations go (None: detection is off).
            turns: the turns of programs that may wait for each other.
        """
        self.launch = launch
        self.addresses = addresses
        self.buffers = addresses.buffers
        self.buffer_at = addresses.buffer_at
        self.recorder = recorder
        self.locate = locate
        self.update_maps = update_maps
        sizes = {b.name: b.size for b in addresses.arguments}
        self._last_reader = ElementArrays(sizes)  # for the buffer maps' read counts
        self.state = state
        self.observations = observations
        self.turns = turns  # programs that may wait for each other take turns
        self.descriptor: Any = None  # the tensor descriptor whose load or store runs, if one does
        # a masked load without other= filled masked-off lanes (with the interpreter's 0): only
        # then can the masked-fill detector's replays find anything (see perturb.py)
        self.filled_lanes = False
        for b in addresses.arguments:
            if b.name in launch.buffers:  # kept across attempts and replays of the launch
                continue
            launch.buffers[b.name] = BufferMap.fresh(b.name, b.size, b.shape, b.origin)

    # -- the hooks ------------------------------------------------------------------------------

    def check(
        self, op: str, ptrs: Any, addresses: np.ndarray, active: np.ndarray, unmasked: bool = False
    ) -> None:
        """Refuse an access, before anything is touched, that leaves the memory its pointers were
        derived from, is misaligned, or writes to an argument the caller's memory may not be
        written at."""
        itemsize = triton_compat.pointer_element_itemsize(ptrs)
        lanes = np.asarray(addresses)[active]
        ok = self.addresses.in_bounds(lanes, itemsize)
        if not ok.all():
            self._out_of_bounds(op, np.asarray(addresses), active, ok, unmasked)
        ok = self.addresses.aligned(lanes, itemsize)
        if not ok.all():
            self._misaligned(op, ptrs, lanes, ok, itemsize)
        if op != "load":
            ok = self.addresses.writable(lanes, itemsize)
            if not ok.all():
                self._read_only(op, lanes, ok)

    def lanes_off(self, active: np.ndarray) -> bool:
        """Whether the access just checked has lanes that are not active."""
        return not bool(np.all(active))

    def _where(self, op: str) -> tuple[str, int, tuple[int, int, int], str, str, str]:
        file, line = self.locate()
        pid = self.recorder.program.pid
        verb = {"load": "reads", "store": "writes"}.get(op, "accesses")
        where = f"{self.launch.kernel}:{line} pid=({pid[0]},{pid[1]},{pid[2]})"
        return file, line, pid, where, f"tl.{op}", verb

    def _refuse(self, message: str, file: str, line: int, pid: tuple[int, int, int]) -> None:
        raise KernelMemoryError(message, kernel=self.launch.kernel, file=file, line=line, pid=pid)

    def _out_of_bounds(
        self, op: str, addresses: np.ndarray, active: np.ndarray, ok: np.ndarray, unmasked: bool
    ) -> None:
        lanes = addresses[active]
        bad = lanes[~ok]
        file, line, pid, where, source, verb = self._where(op)
        arg = self.buffer_at(int(bad[0]))
        if arg is None:
            if not self.buffers:
                self._refuse(
                    f"{where}: {source} {verb} address {int(bad[0]):#x} but the launch has no array arguments",
                    file,
                    line,
                    pid,
                )
            near = self.buffer_at(int(bad[0]) & _LOW_63)
            if near is not None:  # the offsets overflowed: the address is 2**63 bytes from `near`
                self._refuse(
                    f"{where}: {source} of {near.name} {verb} address {int(bad[0]):#x}, 2**63 bytes away from "
                    f"{near.name} and outside every array argument ({bad.size} of {lanes.size} active lanes); "
                    "the offsets overflowed: check their arithmetic (int64 products of large indices)",
                    file,
                    line,
                    pid,
                )
            self._refuse(
                f"{where}: {source} {verb} address {int(bad[0]):#x}, which no array argument's pointer "
                f"leads to ({bad.size} of {lanes.size} active lanes); a pointer must be derived from an "
                "array argument and stay inside it",
                file,
                line,
                pid,
            )
        assert arg is not None
        # lanes of the same memory as the first: the elements named are of its argument
        same = self.addresses.windows(bad) == self.addresses.window_of(int(bad[0]))
        elements = (bad[same].astype(np.int64) - arg.ptr) // arg.itemsize
        lo = int(elements.min())
        self.launch.buffers[arg.name].oob.append((self.launch.linear(pid), line, lo))
        named = _named(arg, elements)
        has = f"has shape {_tuple(arg.shape)}" if len(arg.shape) > 1 else f"has {arg.size}"
        if self.descriptor is not None:
            source = f"descriptor {op}"  # `desc.load(...)`, which tl.load's checks serve
        message = f"{where}: {source} of {arg.name} {verb} {named} but {arg.name} {has} "
        if self.descriptor is not None:
            shape, strides, block = triton_compat.descriptor_layout(self.descriptor)
            message += (
                f"({bad.size} of {lanes.size} active lanes out of bounds); the tensor descriptor's shape "
                f"{_tuple(shape)} (block {_tuple(block)}, strides {_tuple(strides)}) reaches past "
                f"{arg.name}: it masks its blocks by that shape alone, which must lie within {arg.name}"
            )
        elif bad.size < lanes.size:
            out = np.zeros(addresses.shape, bool)
            out[active] = ~ok
            which = hints.lanes_text(out)
            advice = (
                "add a mask, e.g. mask=offsets < n"
                if unmasked
                else "the mask lets these lanes through; check the mask's bound"
            )
            advice += hints.swapped_strides_hint(
                arg.name,
                arg.strides,
                hints.tile_steps(addresses, arg.itemsize),
                lambda: hints.pointer_terms(self.launch.sources, file, line, op, self.launch.args),
            )
            message += f"({bad.size} of {lanes.size} active lanes out of bounds{': ' + which if which else ''}); {advice}"
        else:
            steps = hints.tile_steps(addresses, arg.itemsize)
            terms = hints.pointer_terms(self.launch.sources, file, line, op, self.launch.args)
            if unmasked:
                wrong = "the offsets (or the grid) are wrong: a mask would only hide it"
            elif hints.block_past_the_end(addresses, active, arg.itemsize, lo, arg.size):
                # as a bound past the array's end makes it: the mask is as likely as the offsets
                wrong = (
                    f"the offsets are wrong, or the mask's bound reaches past {arg.name}'s end (a "
                    "program whose block lies wholly past it needs every lane masked off)"
                )
            else:
                wrong = "the offsets are wrong, not the mask"
            message += (
                f"({bad.size} of {lanes.size} active lanes out of bounds); {wrong}"
                f"{hints.offsets_hint(arg.name, arg.shape, arg.strides, steps, terms)}"
            )
        self._refuse(message, file, line, pid)

    def _misaligned(self, op: str, ptrs: Any, lanes: np.ndarray, ok: np.ndarray, itemsize: int) -> None:
        bad = lanes[~ok]
        file, line, pid, where, source, verb = self._where(op)
        arg = self.buffer_at(int(bad[0]))
        assert arg is not None  # in bounds, so inside an argument's memory
        offset = int(bad[0]) - arg.ptr
        element = triton_compat.pointer_element_name(ptrs)
        advice = (
            f"{arg.name}'s data starts at an address that is not a multiple of {itemsize}; pass an aligned "
            "array (a copy is one)"
            if arg.ptr % itemsize
            else "a pointer moved in bytes (through a cast) must land on whole elements"
        )
        self._refuse(
            f"{where}: {source} of {arg.name} {verb} at a misaligned address, element offset "
            f"{offset / arg.itemsize:g} (byte {offset}) of {arg.name}: a {element} access needs "
            f"{itemsize}-byte alignment, as on the GPU ({bad.size} of {lanes.size} active lanes); {advice}",
            file,
            line,
            pid,
        )

    def _read_only(self, op: str, lanes: np.ndarray, ok: np.ndarray) -> None:
        bad = lanes[~ok]
        file, line, pid, where, source, verb = self._where(op)
        arg = self.buffer_at(int(bad[0]))
        assert arg is not None
        elements = (bad.astype(np.int64) - arg.ptr) // arg.itemsize
        self._refuse(
            f"{where}: {source} of {arg.name} {verb} {_named(arg, elements)} but {arg.name} is read-only (its "
            "array may not be written); pass a writable array, e.g. a copy",
            file,
            line,
            pid,
        )

    def event(
        self,
        kind: str,
        addresses: np.ndarray,
        active: np.ndarray,
        values: np.ndarray | None,
        before: np.ndarray | None = None,
        reads: bool = False,
        writes: bool = False,
    ) -> None:
        lanes = addresses[active]
        file, line = self.locate()
        recorder = self.recorder
        arg = self.buffer_at(int(lanes[0])) if lanes.size else None
        event = MemoryEvent(
            kind,
            recorder.next_seq(),
            file,
            line,
            arg.name if arg else None,
            int(lanes.size),
            0,
            0,
            lanes=int(active.size),
        )
        if arg is not None:
            offsets = (lanes.astype(np.int64) - arg.ptr) // arg.itemsize
            event.lo, event.hi = int(offsets.min()), int(offsets.max()) + 1
            if self.update_maps:  # each lane counts for the argument it lies in
                for each, each_offsets, _ in self.addresses.split(lanes):
                    self._count(each, each_offsets, reads, writes)
            if recorder.keep:
                event.indices = (addresses.astype(np.int64) - arg.ptr) // arg.itemsize
        if recorder.keep:
            event.mask = np.array(active, copy=True)
            event.values = None if values is None else np.array(values, copy=True)
            event.before = None if before is None else np.array(before, copy=True)
            recorder.kept_bytes += sum(
                a.nbytes for a in (event.indices, event.mask, event.values, event.before) if a is not None
            )
        recorder.program.events.append(event)

    # -- races and uninitialised reads -------------------------------------------------------------

    def _active_offsets(
        self, addresses: np.ndarray, active: np.ndarray
    ) -> list[tuple[BufferArg, np.ndarray, np.ndarray]]:
        """Per argument the active lanes access: its element offsets and the lanes' numbers."""
        lanes = np.flatnonzero(active.reshape(-1))
        if lanes.size == 0 or self.observations is None:
            return []
        out = []
        for arg, offsets, at in self.addresses.split(addresses.reshape(-1)[lanes]):
            inside = (offsets + arg.origin >= 0) & (offsets + arg.origin < arg.size)
            out.append((arg, offsets[inside], lanes[at][inside]))
        return out

    def before_read(self, addresses: np.ndarray, active: np.ndarray, atomic: bool = False) -> None:
        for arg, offsets, _ in self._active_offsets(addresses, active):
            self._before_read(arg, offsets, atomic)

    def _before_read(self, arg: BufferArg, offsets: np.ndarray, atomic: bool) -> None:
        assert self.observations is not None
        me = self.launch.linear(self.recorder.program.pid)
        index = offsets + arg.origin
        if not atomic:
            writer = self.state.plain_writer[arg.name][index]
            foreign = (writer >= 0) & (writer != me)
            if foreign.any():
                other = self.launch.pid_of(int(writer[foreign][0]))
                races.read_after_write(
                    self.observations,
                    self._site(),
                    arg=arg.name,
                    elements=offsets[foreign],
                    other=other,
                    layout=layout(arg),
                )
        initialised = self.state.initialised.get(arg.name)
        if initialised is not None:
            fresh = ~initialised[index]
            if fresh.any():
                uninitialised.read(
                    self.observations, self._site(), arg=arg.name, elements=offsets[fresh], layout=layout(arg)
                )

    def after_write(
        self,
        addresses: np.ndarray,
        active: np.ndarray,
        before: np.ndarray,
        after: np.ndarray | None,
        plain: bool,
    ) -> None:
        for arg, offsets, lanes in self._active_offsets(addresses, active):
            assert after is not None
            self._after_write(arg, offsets, lanes, before, after, plain)

    def _after_write(
        self,
        arg: BufferArg,
        offsets: np.ndarray,
        lanes: np.ndarray,
        before: np.ndarray,
        after: np.ndarray,
        plain: bool,
    ) -> None:
        index = offsets + arg.origin
        initialised = self.state.initialised.get(arg.name)
        if initialised is not None:
            initialised[index] = True
        if not plain:
            return
        me = self.launch.linear(self.recorder.program.pid)
        writers = self.state.plain_writer[arg.name]
        writer = writers[index]
        foreign = (writer >= 0) & (writer != me)
        if foreign.any():
            old = before.reshape(-1)[lanes[foreign]]
            new = after.reshape(-1)[lanes[foreign]]
            differs = (old != new) & ~(_isnan(old) & _isnan(new))
            if differs.any():
                other = self.launch.pid_of(int(writer[foreign][differs][0]))
                assert self.observations is not None
                races.conflicting_write(
                    self.observations,
                    self._site(),
                    arg=arg.name,
                    elements=offsets[foreign][differs],
                    other=other,
                    layout=layout(arg),
                )
        writers[index] = me

    def _site(self) -> Site:
        """Where the running program is now, for an observation."""
        file, line = self.locate()
        pid = self.recorder.program.pid
        return Site(pid, self.launch.linear(pid), file, line)

    def _count(self, arg: BufferArg, offsets: np.ndarray, reads: bool, writes: bool) -> None:
        bmap = self.launch.buffers[arg.name]
        # no np.unique needed: `a[index] += 1` with repeated indices adds once, i.e. once per program
        index = offsets + arg.origin
        if index.size and (index[0] < 0 or index.max() >= bmap.size or index.min() < 0):
            index = index[(index >= 0) & (index < bmap.size)]  # lanes that fell into another argument
        me = self.launch.linear(self.recorder.program.pid)
        if reads:
            last = self._last_reader[arg.name]
            fresh = index[last[index] != me]
            bmap.reads[fresh] += 1
            last[index] = me
        if writes:
            writers = bmap.writers()
            fresh = index[writers[index] != me]
            bmap.writes[fresh] += 1
            writers[index] = me

    def lanes(self, ptrs: Any, mask: Any, *others: Any) -> tuple[np.ndarray, np.ndarray]:
        """The addresses and the active lanes of an access (the mask broadcast to the pointers)."""
        addresses = ptrs.data
        return addresses, _lanes(addresses, mask)

    def load(self, load: Callable[[], Any], ptrs: Any, other: Any) -> Any:
        """Perform a checked load (`load` is the interpreter's)."""
        return load()

    def store(
        self, store: Callable[[], Any], addresses: np.ndarray, active: np.ndarray, dtype: np.dtype, value: Any
    ) -> tuple[np.ndarray, Any, np.ndarray | None]:
        """Perform a checked store; the elements' values before it, its result, the values after it."""
        host = self.addresses.host(addresses)
        before = triton_compat.raw_load(host, active, dtype)
        result = store()
        return before, result, triton_compat.raw_load(host, active, dtype)

    def around(
        self, addresses: np.ndarray, active: np.ndarray, dtype: np.dtype, atomic: Callable[[], Any]
    ) -> tuple[np.ndarray, Any, np.ndarray]:
        """Run an atomic; the elements' values before it, its result, the values after it."""
        host = self.addresses.host(addresses)
        before = triton_compat.raw_load(host, active, dtype)
        result = atomic()
        return before, result, triton_compat.raw_load(host, active, dtype)

    def _note_change(self, before: Any, after: Any, returned: Any = None) -> None:
        """Tell the turns of waiting programs that memory changed, or that an atomic polled it."""
        if self.turns is None:
            return
        if after is not None and np.asarray(before).tobytes() != np.asarray(after).tobytes():
            self.turns.changed()
        elif returned is not None:
            self.turns.polled(self.locate(), returned)

    def assertion_failed(self) -> None:
        """Called before a failed device_assert raises (the batched strategy reruns serially)."""

    # -- installation ---------------------------------------------------------------------------

    @contextmanager
    def installed(self, builder: Any) -> Iterator[None]:
        """Hook the builder's memory operations and device_assert for the duration of a launch."""
        originals = {
            method.name: getattr(builder, method.name)
            for method in (*triton_compat.MEMORY_METHODS, *triton_compat.DESCRIPTOR_METHODS)
            if hasattr(builder, method.name)
        }
        load = originals[triton_compat.LOAD_METHOD]
        store = originals[triton_compat.STORE_METHOD]
        rmw = originals[triton_compat.ATOMIC_RMW_METHOD]
        cas = originals[triton_compat.ATOMIC_CAS_METHOD]

        unmasked = [False]  # set while tl.load / tl.store without mask= runs (for the error's advice)

        def host(ptrs: Any, write: bool = True) -> Any:
            # the interpreter moves elements at host addresses: the kernel's, translated, once checked
            return triton_compat.handle_with_data(ptrs, self.addresses.host(ptrs.data, write))

        # 3.9's descriptor loads pass cache_policy= and is_volatile= by keyword: every hook passes
        # keywords on as they came
        def plain_load(*args: Any, **options: Any) -> Any:
            unmasked[0] = True
            try:
                return originals[triton_compat.PLAIN_LOAD_METHOD](*args, **options)
            finally:
                unmasked[0] = False

        def plain_store(*args: Any, **options: Any) -> Any:
            unmasked[0] = True
            try:
                return originals[triton_compat.PLAIN_STORE_METHOD](*args, **options)
            finally:
                unmasked[0] = False

        def through_descriptor(name: str) -> Callable[..., Any]:
            # a descriptor's load or store masks its block by the descriptor's shape: a refusal
            # then names that shape, not a mask the kernel never wrote
            def access(desc: Any, *args: Any, **options: Any) -> Any:
                self.descriptor = desc
                try:
                    return originals[name](desc, *args, **options)
                finally:
                    self.descriptor = None

            return access

        def masked_load(ptrs: Any, mask: Any, other: Any, *rest: Any, **options: Any) -> Any:
            addresses, active = self.lanes(ptrs, mask)
            self.check("load", ptrs, addresses, active, unmasked[0])
            if other is None and mask is not None and not self.filled_lanes:
                self.filled_lanes = self.lanes_off(active)
            self.before_read(addresses, active)
            result = self.load(
                lambda: load(host(ptrs, write=False), mask, other, *rest, **options), ptrs, other
            )
            self.event("load", addresses, active, result.data, reads=True)
            if self.turns is not None:
                self.turns.polled(self.locate(), result.data)
            return result

        def masked_store(ptrs: Any, value: Any, mask: Any, *rest: Any, **options: Any) -> Any:
            addresses, active = self.lanes(ptrs, mask)
            self.check("store", ptrs, addresses, active, unmasked[0])
            dtype = triton_compat.pointer_element_np(ptrs)
            before, result, after = self.store(
                lambda: store(host(ptrs), value, mask, *rest, **options), addresses, active, dtype, value
            )
            self.after_write(addresses, active, before, after, plain=True)
            self.event("store", addresses, active, after, before, writes=True)
            self._note_change(before, after)
            return result

        def atomic_rmw(op: Any, ptrs: Any, value: Any, mask: Any, *rest: Any, **options: Any) -> Any:
            addresses, active = self.lanes(ptrs, mask, value)
            name = f"atomic_{triton_compat.rmw_op_name(op)}"
            self.check(name, ptrs, addresses, active)
            dtype = triton_compat.pointer_element_np(ptrs)
            self.before_read(addresses, active, atomic=True)
            before, result, after = self.around(
                addresses, active, dtype, lambda: rmw(op, host(ptrs), value, mask, *rest, **options)
            )
            self.after_write(addresses, active, before, after, plain=False)
            self.event(name, addresses, active, after, before, reads=True, writes=True)
            self._note_change(before, after, result.data)
            return result

        def atomic_cas(ptrs: Any, cmp: Any, value: Any, *rest: Any, **options: Any) -> Any:
            addresses, active = self.lanes(ptrs, None, cmp, value)
            self.check("atomic_cas", ptrs, addresses, active)
            dtype = triton_compat.pointer_element_np(ptrs)
            self.before_read(addresses, active, atomic=True)
            before, result, after = self.around(
                addresses, active, dtype, lambda: cas(host(ptrs), cmp, value, *rest, **options)
            )
            self.after_write(addresses, active, before, after, plain=False)
            self.event("atomic_cas", addresses, active, after, before, reads=True, writes=True)
            self._note_change(before, after, result.data)
            return result

        def atomic_poll(ptrs: Any, expected: Any, timeout: Any, *rest: Any) -> Any:
            # each round a volatile load of every element, checked and recorded like any load; a
            # program waiting for another gives its turn away there (see waiting.Turns)
            limit = triton_compat.poll_timeout_ns(timeout)
            started = time.perf_counter_ns()
            while True:
                values = getattr(builder, triton_compat.PLAIN_LOAD_METHOD)(ptrs, None, True)
                matched = np.asarray(values.data) == np.asarray(expected.data)
                if matched.all() or (limit is not None and time.perf_counter_ns() - started >= limit):
                    return triton_compat.TensorHandle(matched, triton_compat.tl.int1)

        def device_assert(condition: Any, message: Any, *rest: Any) -> None:
            held = np.asarray(condition.data)
            if held.all():
                return
            self.assertion_failed()
            file, line = self.locate()
            pid = self.recorder.program.pid
            failing = np.flatnonzero(~held.reshape(-1).astype(bool))
            shown = ", ".join(str(int(i)) for i in failing[:8]) + (", ..." if failing.size > 8 else "")
            raise KernelAssertionError(
                f"{self.launch.kernel}:{line} pid=({pid[0]},{pid[1]},{pid[2]}): device_assert failed: "
                f"{message} (lanes {shown}; {failing.size} of {held.size})",
                kernel=self.launch.kernel,
                file=file,
                line=line,
                pid=pid,
            )

        hooks: dict[str, Callable[..., Any]] = {
            triton_compat.LOAD_METHOD: masked_load,
            triton_compat.STORE_METHOD: masked_store,
            triton_compat.ATOMIC_RMW_METHOD: atomic_rmw,
            triton_compat.ATOMIC_CAS_METHOD: atomic_cas,
            triton_compat.ASSERT_METHOD: device_assert,
            triton_compat.PLAIN_LOAD_METHOD: plain_load,
            triton_compat.PLAIN_STORE_METHOD: plain_store,
            triton_compat.ATOMIC_POLL_METHOD: atomic_poll,
            **{m.name: through_descriptor(m.name) for m in triton_compat.DESCRIPTOR_METHODS},
        }
        hooks = {name: hook for name, hook in hooks.items() if name in originals}
        with patched_methods(builder, hooks):
            yield


def layout(arg: BufferArg) -> Layout:
    """The argument's shape and strides, to name its elements by index."""
    return Layout(arg.shape, arg.strides)


def _named(arg: BufferArg, elements: np.ndarray) -> str:
    """Elements of `arg` as a refusal names them: by index of an n-D argument's shape, else the
    range of their offsets."""
    named = layout(arg).text(arg.name, elements)
    if named is not None:
        return named
    lo, hi = int(elements.min()), int(elements.max()) + 1
    return f"element {lo}" if hi - lo == 1 else f"elements [{lo}, {hi})"


def _tuple(values: tuple[int, ...]) -> str:
    return f"({values[0]},)" if len(values) == 1 else f"({', '.join(map(str, values))})"


def _isnan(values: np.ndarray) -> np.ndarray:
    return np.isnan(values) if values.dtype.kind == "f" else np.zeros(values.shape, bool)


def _lanes(addresses: np.ndarray, mask: Any) -> np.ndarray:
    data = mask.data if mask is not None else True
    return np.broadcast_to(np.asarray(data, dtype=bool), addresses.shape)


def frame_locator(codes: set[Any]) -> Locator:
    """Finds the innermost frame of a rewritten kernel or helper: the source line running now."""

    def locate() -> tuple[str, int]:
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code in codes:
                return frame.f_code.co_filename, frame.f_lineno
            frame = frame.f_back  # type: ignore[assignment]
        return "", 0

    return locate
