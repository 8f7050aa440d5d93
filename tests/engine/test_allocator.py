"""A launch's temporaries reuse freed heap memory (kernel_nb.engine.allocator)."""

import functools
import mmap
import subprocess
import sys

import numpy as np
import pytest

from kernel_nb.engine import allocator

# a statement's values for a batch of programs, a few at a time: 3 MiB arrays (numpy asks for
# huge pages only from 4 MiB), eight made and freed per round
ROUNDS = """
import resource, sys
import numpy as np
from contextlib import nullcontext
from kernel_nb.engine import allocator

faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
with allocator.reused_memory() if sys.argv[1] == "reused" else nullcontext():
    for _ in range(3):
        before = faults()
        arrays = [np.ones((3 << 20) // 8) for _ in range(8)]
        del arrays
        print(faults() - before)
"""
PAGES = 8 * (3 << 20) // 4096


def _faults_per_round(mode: str) -> list[int]:
    done = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True, check=True)
    return [int(line) for line in done.stdout.split()]


@pytest.mark.skipif(allocator._LIBC is None, reason="the allocator's thresholds are glibc's")
def test_freed_temporaries_are_reused_not_faulted_in_again():
    # glibc's defaults hand the freed arrays back: every round touches fresh pages
    assert min(_faults_per_round("defaults")) > PAGES // 2
    # in a launch, the rounds after the first reuse the first one's memory
    first, *rest = _faults_per_round("reused")
    assert first > PAGES // 2 and max(rest) < PAGES // 20


# launches one after another, each keeping values that lie between its temporaries in the heap
ACROSS = """
import resource
import numpy as np
from kernel_nb.engine import allocator

faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
kept = []
for launch in range(3):
    with allocator.reused_memory():
        before = faults()
        temporaries = []
        for _ in range(8):
            temporaries.append(np.ones((3 << 20) // 8))
            kept.append(np.ones(1 << 14))
        del temporaries
    print(faults() - before)
"""


@pytest.mark.skipif(allocator._LIBC is None, reason="the allocator's thresholds are glibc's")
def test_the_next_launch_reuses_the_temporaries_memory_between_kept_values():
    # handing the free pages among the kept values back (malloc_trim) made every launch fault
    # its temporaries in again: 6,400 and 5,600 faults for the second and third
    done = subprocess.run([sys.executable, "-c", ACROSS], capture_output=True, text=True, check=True)
    first, *rest = [int(line) for line in done.stdout.split()]
    assert first > PAGES // 2 and max(rest) < PAGES // 4


# launches one after another, each one's arrays let go only after it ended (a cell's trace
# dropped): 32 MiB more than the heap's top keeps, in 16 MiB arrays
AFTER = """
import resource
import numpy as np
from kernel_nb.engine import allocator

faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for launch in range(3):
    with allocator.reused_memory():
        before = faults()
        held = [np.ones((16 << 20) // 8) for _ in range((allocator.KEPT_BYTES >> 24) + 2)]
    print(faults() - before)
    del held
"""


@pytest.mark.skipif(allocator._LIBC is None, reason="the allocator's thresholds are glibc's")
def test_memory_let_go_after_a_launch_is_there_for_the_next():
    # glibc trimmed the heap's top to 128 KiB once it held more than the threshold free: the
    # arrays went back whole and every launch faulted all of them in again
    done = subprocess.run([sys.executable, "-c", AFTER], capture_output=True, text=True, check=True)
    first, *rest = [int(line) for line in done.stdout.split()]
    held_pages = (allocator.KEPT_BYTES + (32 << 20)) // 4096
    # the top keeps KEPT_BYTES: only the 32 MiB above it are faulted in again
    assert first > held_pages // 2 and max(rest) < (32 << 20) // 4096 + held_pages // 20


def test_the_allocator_is_left_usable_whatever_happens_inside():
    with pytest.raises(KeyboardInterrupt), allocator.reused_memory():
        raise KeyboardInterrupt
    values = np.arange(1 << 20, dtype=np.float64)
    assert values.sum() == (1 << 20) * ((1 << 20) - 1) / 2
    assert sys.platform != "linux" or allocator._LIBC is not None


# 32 MiB written whole, made by `maker`: the huge pages that back it (kB, from the process's smaps)
HUGE = """
import re, sys
import numpy as np
from kernel_nb.engine import allocator

def huge_kb():
    text = open("/proc/self/smaps_rollup").read()
    return int(re.search(r"AnonHugePages:\\s+(\\d+) kB", text).group(1))

before = huge_kb()
block = allocator.small_pages(32 << 20) if sys.argv[1] == "small" else np.empty(32 << 20, np.uint8)
block[...] = 1
print(huge_kb() - before)
"""


def _huge_kb(maker: str) -> int:
    done = subprocess.run([sys.executable, "-c", HUGE, maker], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(allocator._set_huge_page_advice is None, reason="this numpy has no huge-page advice")
def test_copies_are_made_in_small_pages():
    block = allocator.small_pages(1000)
    assert block.shape == (1000,) and block.dtype == np.uint8 and block.flags.writeable
    # numpy's own advice is left as it was
    advised = allocator._set_huge_page_advice(True)
    allocator.small_pages(8 << 20)
    assert allocator._set_huge_page_advice(advised) is True
    try:
        plain = _huge_kb("numpy")
    except (OSError, subprocess.CalledProcessError, ValueError):
        pytest.skip("no /proc/self/smaps_rollup here")
    if plain == 0:
        pytest.skip("numpy's arrays get no transparent huge pages on this machine now")
    assert _huge_kb("small") == 0


@pytest.mark.skipif(allocator._set_huge_page_advice is None, reason="this numpy has no huge-page advice")
def test_a_launch_makes_its_arrays_without_huge_page_advice_and_puts_it_back():
    advise = allocator._set_huge_page_advice
    was = advise(True)
    try:
        with allocator.reused_memory():
            assert advise(False) is False  # off inside
        assert advise(True) is True  # back on after
    finally:
        advise(was)


COPY_FAULTS = """
import resource
from kernel_nb.engine import allocator

faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = allocator.small_pages(32 << 20)  # fresh memory: above glibc's mmap threshold
before = faults()
block[...] = 1
print(faults() - before, allocator._CAN_POPULATE)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="MADV_POPULATE_WRITE is Linux's")
def test_a_copy_s_pages_are_resident_before_it_is_written():
    # one call makes the block resident: writing the copy then takes no fault per page
    out = subprocess.run([sys.executable, "-c", COPY_FAULTS], capture_output=True, text=True, check=True)
    faults, can = out.stdout.split()
    if can != "True":
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)")
    assert int(faults) < 64  # of 8192 pages


@pytest.mark.skipif(allocator._LIBC is None, reason="populating is glibc's madvise")
def test_a_block_whose_pages_are_resident_is_not_populated_again(monkeypatch):
    libc = allocator._LIBC
    asked = []

    class Watched:
        mincore = libc.mincore

        def madvise(self, *args):
            asked.append(args)
            return libc.madvise(*args)

    monkeypatch.setattr(allocator, "_LIBC", Watched())
    written = np.ones(4 << 20, np.uint8)  # every page touched: resident
    allocator._populate(written)
    assert asked == []
    mapped = mmap.mmap(-1, 64 << 20)  # mapped afresh: untouched
    fresh = np.frombuffer(mapped, np.uint8)
    allocator._populate(fresh)
    if not allocator._CAN_POPULATE:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)")
    assert len(asked) == 1
    start = -(-fresh.ctypes.data // 4096) * 4096
    assert allocator._resident(libc, start, start + (60 << 20))


def _count_and_started(script: str, ahead: int) -> tuple[int, bool]:
    """Run `script` in a fresh process asking for `ahead` bytes made resident ahead: the count it
    prints, and whether a thread was started to make them resident."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(ahead)], capture_output=True, text=True, check=True
    )
    count, started = done.stdout.split()
    return int(count), started == "True"


# a first launch's values, 16 MiB of arrays made while the launch runs, in a fresh process
AHEAD = """
import resource, sys
import numpy as np
from kernel_nb.engine import allocator

faults = lambda: resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
ahead = int(sys.argv[1])
with allocator.reused_memory():
    populating = allocator._populate_ahead(allocator._LIBC, ahead)
    if populating is not None:
        populating.join()
    before = faults()
    values = [np.ones((1 << 20) // 8) for _ in range(16)]
    print(faults() - before, populating is not None)
"""


@pytest.mark.skipif(
    allocator._LIBC is None or allocator._CORES < 2, reason="glibc's heap, and a core to spare"
)
def test_memory_made_resident_ahead_is_what_the_launch_takes():
    main_thread_faults = functools.partial(_count_and_started, AHEAD)
    pages = (16 << 20) // 4096
    faults, started = main_thread_faults(0)
    assert not started and faults > pages * 3 // 4
    faults, started = main_thread_faults(20 << 20)
    if not allocator._CAN_POPULATE:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE")
    assert started and faults < pages // 8


# memory an earlier launch's values gave back among the heap's blocks, in pieces smaller than the
# block asked for (blocks still held between them, as a launch's kept values are): the next
# launch takes it first, so none is made resident ahead (the block asked for lies at the heap's
# top, past every piece, and was made resident and left unused)
FREED_BEFORE = """
import sys
import numpy as np
from kernel_nb.engine import allocator

libc = allocator._LIBC
ahead = int(sys.argv[1])
free = lambda: libc.mallinfo2().fordblks - libc.mallinfo2().keepcost  # below the heap's top
with allocator.reused_memory():
    values, held = [], []
    for _ in range(40):
        values.append(np.ones((1 << 20) // 8))
        held.append(np.ones((1 << 20) // 8))
    before = free()
    del values
    freed = free() - before
    print(freed >> 20, allocator._populate_ahead(libc, ahead) is not None)
"""


@pytest.mark.skipif(
    allocator._LIBC is None or allocator._CORES < 2 or not hasattr(allocator._LIBC, "mallinfo2"),
    reason="glibc 2.33's heap, and a core to spare",
)
def test_memory_freed_among_the_heap_s_blocks_is_not_asked_for_again():
    run = functools.partial(_count_and_started, FREED_BEFORE)
    freed, started = run(24 << 20)  # less than the 40 MiB freed: nothing to make resident
    assert freed >= 39 and not started
    if not allocator._CAN_POPULATE:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE")
    # (the working set at most 31 MiB is asked for, less what is free: nothing either)
    assert not run(64 << 20)[1]


# a first launch whose arguments are small and whose values are not: 16 programs, each making
# 128x128 fp32 tiles from 512 bytes of input (about 1 MiB a statement for the batch, a dozen
# statements), with the thread that makes memory resident ahead waited for (no race with it)
SMALL_ARGUMENTS = """
import resource, sys
import numpy as np
import triton
import triton.language as tl
import kernel_nb
from kernel_nb.engine import allocator

@triton.jit
def outer_sums(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x[:, None] * x[None, :]
    b = a + 1.0
    c = b * a
    d = c - b
    e = d * d
    f = e + a
    g = f * b
    h = g - c
    tl.store(out_ptr + pid * BLOCK + offs, tl.sum(h, axis=1))

started = allocator._populate_ahead
asked = []

def waited(libc, size):
    asked.append(size)
    thread = started(libc, size)
    if thread is not None:
        thread.join()
    return thread

allocator._populate_ahead = waited
x = np.linspace(0, 1, 128, dtype=np.float32)
out = np.zeros(16 * 128, np.float32)
faults = lambda: resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
before = faults()
with kernel_nb.interpret():
    outer_sums[(16,)](x, out, BLOCK=128)
print(faults() - before, asked[0], x.nbytes + out.nbytes)
"""


@pytest.mark.skipif(
    allocator._LIBC is None or allocator._CORES < 2, reason="glibc's heap, and a core to spare"
)
def test_a_first_launch_finds_its_values_memory_resident_whatever_its_arguments_take(tmp_path):
    # asked for 4 times its arguments' bytes (33 KiB: nothing), the launch faulted in every page
    # of its values; the working set it asks for covers them
    script = tmp_path / "small_arguments.py"  # (@triton.jit reads its function's source file)
    script.write_text(SMALL_ARGUMENTS)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    faults, asked, arguments = (int(word) for word in done.stdout.split())
    if not allocator._CAN_POPULATE:
        pytest.skip("this kernel has no MADV_POPULATE_WRITE")
    values_pages = 12 * (16 * 128 * 128 * 4) // 4096
    assert asked > 100 * arguments
    assert faults < values_pages // 4
