"""The compact forms the batched strategy keeps instead of per-lane arrays give exactly the arrays
they stand for."""

import numpy as np
import triton.language as tl

from kernel_nb.engine.batched.tiles import AFFINE, Addresses, Affine, AffinePointers, shape_of
from kernel_nb.trace import TileRows


def _expected(base, lanes, shape):
    rows = np.broadcast_to(np.asarray(base, np.int64).reshape(-1, 1), (shape[0], 1)) + np.asarray(
        lanes, np.int64
    )
    return rows.view(np.uint64).reshape(shape)


def test_affine_pointers_make_the_addresses_they_stand_for_only_when_asked():
    base = np.array([4096, 8192, 12288], np.int64)
    lanes = np.array([0, 4, 8, 12, 64, 68, 72, 76], np.int64)  # a 2x4 tile, row stride 64 bytes
    handle = AffinePointers(Affine(base, lanes), (3, 2, 4), tl.pointer_type(tl.float32))
    assert shape_of(handle) == (3, 2, 4)
    assert handle._data is None  # nothing made yet
    assert np.array_equal(handle.data, _expected(base, lanes, (3, 2, 4)))
    assert handle.data.dtype == np.uint64 and handle.data.flags.c_contiguous
    assert getattr(handle, AFFINE).base is base


def test_addresses_below_zero_wrap_as_the_interpreters_uint64_arithmetic_does():
    base = np.array([16], np.int64)
    lanes = np.array([-32, -16, 0, 16], np.int64)
    made = np.asarray(Addresses(Affine(base, lanes), (1, 4)))
    interpreter = np.uint64(16) + np.array([-32, -16, 0, 16]).astype(np.uint64)  # wraps modulo 2**64
    assert np.array_equal(made, interpreter.reshape(1, 4))


def test_addresses_stay_lazy_through_reshape_and_row_picks_and_agree_when_made():
    base = np.arange(5, dtype=np.int64) * 1000 + 64
    lanes = np.arange(6, dtype=np.int64) * 8
    full = _expected(base, lanes, (5, 2, 3))
    lazy = Addresses(Affine(base, lanes), (5, 2, 3))
    flat = lazy.reshape(5, -1)
    assert isinstance(flat, Addresses) and flat.shape == (5, 6)
    rows = flat[np.array([1, 3])]
    assert isinstance(rows, Addresses) and rows.shape == (2, 6)
    assert np.array_equal(np.asarray(rows), full.reshape(5, 6)[[1, 3]])
    mask = np.zeros((5, 2, 3), bool)
    mask[2, 1, 0] = mask[4, 0, 2] = True
    assert np.array_equal(lazy[mask], full[mask])
    assert np.array_equal(lazy.view(np.int64), full.view(np.int64))
    assert lazy.min() == full.min() and lazy.max(axis=1).tolist() == full.max(axis=1).tolist()


def test_tile_rows_give_each_row_and_count_the_bytes_a_full_row_holds():
    shift = np.array([0, 100, 250], np.int64)
    lanes = np.array([0, 1, 2, 10, 11, 12], np.int64)
    rows = TileRows(shift, lanes, (2, 3))
    assert len(rows) == 3
    assert np.array_equal(rows[1], np.array([[100, 101, 102], [110, 111, 112]]))
    assert rows[2].dtype == np.int64 and rows[2].shape == (2, 3)
    assert rows.row_nbytes() == rows[0].nbytes == 6 * 8
