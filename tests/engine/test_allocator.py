"""A launch's temporaries reuse freed heap memory (kernel_nb.engine.allocator)."""

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


def test_the_allocator_is_left_usable_whatever_happens_inside():
    with pytest.raises(KeyboardInterrupt), allocator.reused_memory():
        raise KeyboardInterrupt
    values = np.arange(1 << 20, dtype=np.float64)
    assert values.sum() == (1 << 20) * ((1 << 20) - 1) / 2
    assert sys.platform != "linux" or allocator._LIBC is not None
