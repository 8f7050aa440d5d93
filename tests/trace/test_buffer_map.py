"""trace.buffer_map: the batches' marks are added in before they hold more than the map."""

import tracemalloc

import numpy as np

from kernel_nb.trace import BufferMap


def test_the_marks_of_many_batches_hold_no_array_per_batch():
    size, batches = 10_000, 200
    bmap = BufferMap.fresh("out", size, (size,))
    tracemalloc.start()
    try:
        for b in range(batches):
            marks = np.full(size + 1, -1, np.int32)  # as a batch's write marks: the whole buffer
            marks[b * 50 : (b + 1) * 50] = b
            bmap.add_marks("write", b * 50, marks[b * 50 : (b + 1) * 50])
            del marks
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 4 * 12 * size
    assert bmap.writes[: batches * 50].tolist() == [1] * (batches * 50)
    assert bmap.writers()[: batches * 50].tolist() == [i // 50 for i in range(batches * 50)]
    assert bmap.writes[batches * 50 :].sum() == 0


def _marked(size: int) -> BufferMap:
    """A map of three batches' writes: one as writer ids, one that puts its marks later, one more
    as writer ids over the first's elements; and a batch's reads."""
    bmap = BufferMap.fresh("out", size, (size,))
    first = np.full(6, -1, np.int32)
    first[1:5] = [0, 0, 1, 1]  # elements 3..6
    bmap.add_marks("write", 2, first)

    def put(marks: np.ndarray, value: object = 7) -> None:
        marks[10:14] = value

    bmap.add_marks_later("write", 10, 14, [put])
    bmap.add_marks("write", 5, np.array([2, 2, -1, 2], np.int32))  # elements 5, 6 and 8

    def read(marks: np.ndarray, value: object = True) -> None:
        marks[:] = value

    bmap.add_marks_later("read", 0, size, [read])
    return bmap


def test_coverage_from_batch_marks_is_what_the_counts_say_without_making_them():
    size = 20
    bmap, counted = _marked(size), _marked(size)
    writes = counted.writes  # counts made: the map's own answers come from them
    assert counted._batch_write_marks() is None
    assert bmap.written_more_than_once().tolist() == np.flatnonzero(writes > 1).tolist() == [5, 6]
    assert bmap.never_written().tolist() == np.flatnonzero(writes == 0).tolist()
    assert bmap.never_written().tolist() == [0, 1, 2, 7, 9, 14, 15, 16, 17, 18, 19]
    assert counted.written_more_than_once().tolist() == [5, 6]
    # told from the marks: no count array, reads' or writes', made for it
    assert bmap._writes is None and bmap._reads is None and bmap._later


def test_a_buffer_only_read_is_written_more_than_once_nowhere_without_adding_its_reads():
    bmap = BufferMap.fresh("x", 10, (10,))

    def read(marks: np.ndarray, value: object = True) -> None:
        marks[2:8] = value

    bmap.add_marks_later("read", 2, 8, [read])
    assert bmap.written_more_than_once().size == 0 and not bmap.written
    assert bmap._reads is None  # the reads were not added in to tell
    assert bmap.reads.tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 0, 0]
