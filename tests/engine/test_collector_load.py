"""What a batched launch leaves for Python's garbage collector: no container per program and
statement, whatever the grid (a list of thousands of ints or names per event and record, and a dict
of every program, were most of what the collector walked after a launch of vector add 2**22)."""

import gc

import numpy as np
import pytest
import triton

import kernel_nb
from tests.engine import kernels as k


def _left_for_the_collector(programs: int) -> tuple[int, object]:
    """Entries of the lists and dicts a launch of `programs` programs made that are still alive
    (the pid tuples of its batches aside, one list of them), and the session."""
    block = 64
    n = programs * block
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    gc.collect()
    gc.disable()
    try:
        with kernel_nb.interpret(strategy="auto") as session:
            k.add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
        made = gc.get_objects(generation=0)
        entries = sum(len(o) for o in made if isinstance(o, (list, dict)))
    finally:
        gc.enable()
    np.testing.assert_array_equal(out, x + y)
    assert session.trace[0].strategy == "batched"
    return entries, session


@pytest.mark.parametrize("programs", [4096])
def test_a_launch_leaves_no_list_or_dict_per_program_and_statement(programs):
    entries, session = _left_for_the_collector(programs)
    # the programs' ids, one list a batch, and some bookkeeping (a list or a dict per program and
    # record or event came to 17 entries a program)
    assert entries < 2 * programs, entries
    launch = session.trace[0]
    assert len(launch.programs) == programs  # the table reads as before, entered when read
    assert launch.programs[(programs - 1, 0, 0)].pid == (programs - 1, 0, 0)
    events = launch.programs[(5, 0, 0)].events
    assert [(e.kind, e.arg, e.active, e.lo, e.hi) for e in events] == [
        ("load", "x_ptr", 64, 320, 384),
        ("load", "y_ptr", 64, 320, 384),
        ("store", "out_ptr", 64, 320, 384),
    ]
    assert all(type(v) is int for e in events for v in (e.active, e.lo, e.hi))
    records = launch.programs[(5, 0, 0)].records
    assert any(r.pointer_arg == "x_ptr" for r in records)
