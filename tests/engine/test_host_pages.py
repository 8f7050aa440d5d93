"""host_pages: whether host memory may be written, from the process's mappings."""

import numpy as np

from kernel_nb.engine import host_pages


def test_an_array_of_the_process_heap_is_writable():
    a = np.zeros(4096, np.uint8)
    assert host_pages.writable(a.ctypes.data, a.ctypes.data + a.nbytes)


def test_a_read_only_memmap_is_not_writable(tmp_path):
    path = tmp_path / "data.bin"
    np.zeros(8192, np.uint8).tofile(path)
    m = np.memmap(path, np.uint8, mode="r")
    assert not host_pages.writable(m.ctypes.data, m.ctypes.data + m.nbytes)
    assert not host_pages.writable(m.ctypes.data + 100, m.ctypes.data + 200)  # any stretch of it


def test_an_empty_stretch_is_writable():
    assert host_pages.writable(1 << 20, 1 << 20)
