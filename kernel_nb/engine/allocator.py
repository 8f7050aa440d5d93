"""The C allocator while a launch runs: freed blocks reused in place, not handed back and faulted in.

numpy takes every operation's result from malloc. glibc maps a block above its mmap threshold
afresh and unmaps it when freed, and hands freed heap memory above its trim threshold back to the
system; either way the next array of that size touches new pages, one minor fault per 4 KiB. A
launch makes thousands of temporaries of a few sizes (each statement's value for a batch of
programs), so with the defaults most of them are faulted in again: layer norm 4096x1024 with an
fp64 shadow took 135,000 minor faults per warm launch and 1.4x the time it takes without them.

For the launch, blocks up to 32 MiB (glibc's own ceiling for the threshold) come from the heap and
freed heap memory stays up to `RETAINED_BYTES`. Afterwards the heap's top keeps up to `KEPT_BYTES`
of free memory, 128 MiB: what a launch holds at the default working set and capture budget (64
MiB each), and what lies above goes back to the system as glibc trims its top. A trim keeps
M_TOP_PAD bytes of the top, 128 KiB by default, so the pad is `KEPT_BYTES` too: with the default,
a launch's arrays let go after it ended (a cell's trace dropped) went back whole once they came
to more than the threshold, and the next launch faulted them in again. Vector add 2**22 launched
again and again, each session dropped before the next launch: in 3 of 4 processes every such
launch took 20,400 faults and 77-85 ms, against none to 4,200 faults and 36-49 ms with a 64 MiB
pad; with that pad, 7 of 8 processes still faulted 2,280 pages (9 MiB) in again at each launch,
and none with 128 MiB.

A process's first launch finds no such memory: every page its values take is faulted in as it is
first written, about 1 ms per MiB on a virtual machine (matmul 512**3: 4,400 faults, a fifth of
its first launch). Where another core is free, `reused_memory(ahead)` has a thread make `ahead`
bytes of free heap memory resident (MADV_POPULATE_WRITE, which leaves contents as they are) while
the launch starts on this core; the launch then takes pages that are there already. The engine
asks for its working set (`Options.working_set_bytes`: what the values of a batch of programs may
take), at most 31 MiB, less the free memory among the heap's blocks, which the launch's values
take first; the copies of its arguments are made resident as they are made (see `small_pages`),
and memory an earlier launch left resident is not asked for again. (The block asked for lies at
the heap's top, past the pieces an earlier launch gave back: populated, it stayed unused, 22 MiB of
flash attention's warm launches, whose peak memory above the inputs went from 88-95 MiB to 70-72,
its 96 MiB limit being 4 times its arguments and the capture budget.) A launch's
values do not follow its arguments: matmul 512**3 has 3 MiB of them and faults 17 MiB of values
in; with 4 times its arguments made resident ahead (12 MiB) its main thread still took 1,340
faults, with its working set about 250. Its peak resident memory goes from 19 to 33-40 MiB,
within the working set. (In time, the 4 MiB fewer faults are within this machine's noise: the
first launch's medians over 8 to 12 processes, interleaved, in three runs: 95, 84 and 95 ms
asking for 12 MiB, against 86, 76 and 105 asking for 31.)

Free blocks between blocks still in use (the values a launch keeps lie among its temporaries)
stay, as glibc leaves them: `malloc_trim` would hand those pages back too, and the next launch
faulted them in again, 8,200 faults and 10 ms of a warm launch of vector add 2**22 (72 ms against
62). Elsewhere than glibc this does nothing.

The private copies of the caller's arrays (`small_pages`), and every array made while a launch
runs, are faulted in with 4 KiB pages. numpy asks the kernel for transparent huge pages on every
large array (madvise), and where the kernel compacts memory on such a fault (THP defrag "madvise",
a common default) a fresh 16 MiB copy took 35-47 ms instead of 11.5, whenever no free 2 MiB page
was at hand: the first launch of vector add 2**22 ran in 85 to 200 ms from process to process, in
94 to 98 ms with the copies in small pages. A huge page is resident whole however little of it a
heap block uses: with them, causal flash attention's peak resident memory went from 90 MiB to
between 93 and 102 MiB from process to process, for no measurable gain in time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

# mallopt's parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems)
RETAINED_BYTES = 256 << 20  # free heap memory a running launch keeps for its next temporaries
KEPT_BYTES = 128 << 20  # free heap memory kept for the next launch


def _glibc() -> Any | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt, madvise, mincore = libc.mallopt, libc.madvise, libc.mincore
    except (OSError, AttributeError):  # not glibc: musl, macOS, Windows
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    madvise.argtypes, madvise.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
    mincore.argtypes, mincore.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p], ctypes.c_int
    libc.malloc.argtypes, libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
    if hasattr(libc, "mallinfo2"):  # glibc 2.33+
        libc.mallinfo2.argtypes, libc.mallinfo2.restype = [], _MallInfo2
    return libc


_MALLINFO2 = (
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
)


class _MallInfo2(ctypes.Structure):  # malloc.h
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2]


def _free_heap_bytes(libc: Any) -> int:
    """Bytes of free heap memory below its top (none known: 0): memory an earlier launch gave
    back, resident still, which the next launch's values take before they grow the heap."""
    if not hasattr(libc, "mallinfo2"):
        return 0
    info = libc.mallinfo2()
    return max(0, int(info.fordblks) - int(info.keepcost))


_LIBC = _glibc()

_MADV_POPULATE_WRITE = 23  # asm-generic/mman-common.h
_PAGE = 4096
_POPULATE_FROM = 1 << 20  # smaller blocks mostly reuse resident heap memory
_CAN_POPULATE = _LIBC is not None  # until a kernel refuses it
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

# numpy's switch for its huge-page advice (private; absent in some builds: then nothing to switch)
_HUGE_PAGE_ADVICE = getattr(getattr(np, "_core", getattr(np, "core", None)), "multiarray", None)
_set_huge_page_advice = getattr(_HUGE_PAGE_ADVICE, "_set_madvise_hugepage", None)


def small_pages(size: int) -> np.ndarray:
    """`size` uninitialised bytes that numpy does not advise into huge pages (see the module's
    docstring), their pages made resident at once: for a copy written whole as soon as it is made."""
    if _set_huge_page_advice is None:
        block = np.empty(size, np.uint8)
    else:
        advised = _set_huge_page_advice(False)
        try:
            block = np.empty(size, np.uint8)
        finally:
            _set_huge_page_advice(advised)
    _populate(block)
    return block


def _populate(block: np.ndarray) -> None:
    """Make the pages of a fresh block resident with one call (MADV_POPULATE_WRITE, Linux 5.14+)
    rather than a fault per 4 KiB page as the copy first touches each: a 16 MiB copy takes 7 ms
    instead of 9, and more where faults are dear (virtual machines).

    Not where every page is resident already, as heap memory that an earlier launch freed is
    (see `reused_memory`): the call walks every page all the same, 0.6-0.7 ms for 16 MiB, where
    asking which pages are resident (mincore) takes 0.015 ms."""
    global _CAN_POPULATE
    libc = _LIBC
    if not _CAN_POPULATE or libc is None or block.nbytes < _POPULATE_FROM:
        return
    start = -(-block.ctypes.data // _PAGE) * _PAGE
    end = (block.ctypes.data + block.nbytes) // _PAGE * _PAGE
    if end <= start or _resident(libc, start, end):
        return
    if libc.madvise(start, end - start, _MADV_POPULATE_WRITE) != 0:
        _CAN_POPULATE = False  # an older kernel: the copy faults its pages in as before


def _resident(libc: Any, start: int, end: int) -> bool:
    """Whether every page of [start, end) (page-aligned) is resident."""
    pages = np.empty((end - start) // _PAGE, np.uint8)
    if libc.mincore(start, end - start, pages.ctypes.data) != 0:
        return False  # not known: populate, as before
    return bool(np.bitwise_and(pages, 1).all())


def _populate_ahead(libc: Any, size: int) -> threading.Thread | None:
    """Make `size` bytes of free heap memory resident on another core, for the launch about to
    run on this one to take (the thread doing it; None: none needed, or no core to spare)."""
    if not _CAN_POPULATE or _CORES < 2:
        return None
    # the launch's values take the free memory among the heap's blocks first: only what they
    # need beyond it is made resident (a block asked for now would lie past it, at the heap's
    # top, and stay unused: 22 of flash attention's 31 MiB in its warm launches)
    size = min(size, MMAP_THRESHOLD - _POPULATE_FROM) - _free_heap_bytes(libc)
    if size < _POPULATE_FROM:  # (a block past the threshold is mapped apart)
        return None
    block = libc.malloc(size)
    if not block:
        return None
    libc.free(block)  # back to the heap, where the launch's trim threshold keeps it
    start = -(-block // _PAGE) * _PAGE
    end = (block + size) // _PAGE * _PAGE
    if end <= start or _resident(libc, start, end):
        return None  # (an earlier launch's memory)
    # the call leaves the memory's contents as they are, so the launch may take it meanwhile; one
    # trimmed away meanwhile makes the call fail, which leaves nothing to do
    populating = threading.Thread(
        target=libc.madvise, args=(start, end - start, _MADV_POPULATE_WRITE), daemon=True
    )
    populating.start()
    return populating


@contextmanager
def reused_memory(ahead: int = 0) -> Iterator[None]:
    """Inside: numpy's temporaries reuse freed heap blocks, in small pages (see the module's
    docstring); `ahead` bytes of them made resident beforehand, on another core."""
    with _small_pages_throughout():
        libc = _LIBC
        if libc is None:
            yield
            return
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, RETAINED_BYTES)
        _populate_ahead(libc, ahead)
        try:
            yield
        finally:
            libc.mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES)
            libc.mallopt(_M_TOP_PAD, KEPT_BYTES)


@contextmanager
def _small_pages_throughout() -> Iterator[None]:
    if _set_huge_page_advice is None:
        yield
        return
    advised = _set_huge_page_advice(False)
    try:
        yield
    finally:
        _set_huge_page_advice(advised)
