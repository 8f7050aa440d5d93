"""Store masks narrower than their load's: a program loads elements under one mask and stores the
same elements (by offset) under a mask that drops some of the lanes the load kept, and no program
of the launch writes the dropped elements. The `uncovered` finding says which elements stay
unwritten; this one says which store drops them, against which load, in which program.

Read off the programs whose values the launch kept (their events hold lanes and masks); a store is
matched with an earlier load of the same program whose lanes address the same element offsets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernel_nb.checks.describe import describe, ranges
from kernel_nb.checks.observations import MAX_ELEMENTS
from kernel_nb.trace import Finding, Launch, MemoryEvent, Pid


class NarrowerStoreMasks:
    """`store_mask_narrower` findings (skipped when the launch failed)."""

    def check(self, launch: Launch) -> list[Finding]:
        return detect_narrower_store_masks(launch)


@dataclass
class _Group:
    pid: Pid
    store: MemoryEvent
    load: MemoryEvent
    lanes: np.ndarray
    elements: np.ndarray
    programs: set[Pid] = field(default_factory=set)


def detect_narrower_store_masks(launch: Launch) -> list[Finding]:
    """Stores whose mask drops lanes the matching load kept, where no program writes the dropped
    elements."""
    if launch.status != "ok":
        return []
    unwritten = {
        name: bmap.never_written() - bmap.origin for name, bmap in launch.buffers.items() if bmap.written
    }
    # no element left unwritten, no finding: the common launch pays for no walk over its programs
    unwritten = {name: elements for name, elements in unwritten.items() if elements.size}
    if not unwritten:
        return []
    groups: dict[tuple[str, int, str, int], _Group] = {}
    for pid, program in launch.programs.items():
        if not program.kept:
            continue
        loads: list[MemoryEvent] = []
        for event in program.events:
            if event.mask is None or event.indices is None:
                continue
            if event.kind == "load":
                loads.append(event)
            elif event.kind == "store" and event.arg in unwritten:
                _match(groups, pid, event, loads, unwritten[event.arg])
    return [_finding(launch, group) for group in groups.values()]


def _match(
    groups: dict[tuple[str, int, str, int], _Group],
    pid: Pid,
    store: MemoryEvent,
    loads: list[MemoryEvent],
    unwritten: np.ndarray,
) -> None:
    assert store.mask is not None and store.indices is not None
    for load in reversed(loads):  # the nearest earlier load of the same elements
        assert load.mask is not None and load.indices is not None
        if load.indices.shape != store.indices.shape or not np.array_equal(load.indices, store.indices):
            continue
        dropped = (load.mask & ~store.mask).reshape(-1)
        elements = store.indices.reshape(-1)[dropped]
        lost = np.isin(elements, unwritten)
        if lost.any():
            key = (store.file, store.line, load.file, load.line)
            if key not in groups:
                lanes = np.flatnonzero(dropped)[lost]
                groups[key] = _Group(pid, store, load, lanes, elements[lost])
            groups[key].programs.add(pid)
        return


def _finding(launch: Launch, group: _Group) -> Finding:
    pid, store, load = group.pid, group.store, group.load
    count = len(group.programs)
    where = "" if count == 1 else f" (in {count} programs; the first shown)"
    return Finding(
        kind="store_mask_narrower",
        severity="warning",
        message=(
            f"{launch.kernel}:{store.line} pid=({pid[0]},{pid[1]},{pid[2]}): tl.store to {store.arg} drops "
            f"lanes {describe(group.lanes)} that the tl.load of {load.arg} at line {load.line} kept for the "
            f"same offsets, and no program writes {store.arg} elements {ranges(group.elements)}{where}; "
            f"give the store the load's mask"
        ),
        launch=launch.index,
        pid=pid,
        file=store.file,
        line=store.line,
        arg=store.arg,
        elements=group.elements[:MAX_ELEMENTS],
    )
