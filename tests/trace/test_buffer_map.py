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
