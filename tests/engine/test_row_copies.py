"""RowCopies: a batch's copies of rows found again by the rows they hold, through any view."""

import numpy as np

from kernel_nb.engine.batched.row_copies import RowCopies


def _copy(copies: RowCopies, rows: np.ndarray, index: np.ndarray | None) -> np.ndarray:
    wanted = copies.rows_of(rows, index)
    assert wanted is not None
    found = copies.find(wanted)
    if found is not None:
        return found
    made = np.array(rows if index is None else rows[index])
    copies.add(wanted, made)
    return made


def test_the_same_rows_through_another_view_or_a_copy_of_them_are_one_copy():
    copies = RowCopies()
    value = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    first = _copy(copies, value, np.array([0, 1, 2, 5]))
    again = _copy(copies, value.reshape(8, 1, 4).reshape(8, 4), np.array([0, 1, 2, 5]))
    assert again is first
    # rows 1 and 5 of the value, asked of the copy: one copy of them, whichever asks
    from_copy = _copy(copies, first, np.array([1, 3]))
    assert _copy(copies, value, np.array([1, 5])) is from_copy
    np.testing.assert_array_equal(from_copy, value[[1, 5]])


def test_other_rows_other_columns_and_other_arrays_are_other_copies():
    copies = RowCopies()
    value = np.arange(8 * 4, dtype=np.float32).reshape(8, 4)
    whole = _copy(copies, value, np.array([0, 1]))
    assert _copy(copies, value, np.array([0])) is not whole  # fewer rows: not a view of more
    columns = _copy(copies, value[:, 1:3], np.array([0, 1]))
    np.testing.assert_array_equal(columns, value[:2, 1:3])
    other = value.copy()
    assert _copy(copies, other, np.array([0, 1])) is not whole


def test_rows_of_memory_not_its_own_or_broadcast_are_not_remembered():
    copies = RowCopies()
    outside = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * 8)()).reshape(2, 4)
    assert copies.rows_of(outside, None) is None  # bytes whose owner may change them
    assert copies.rows_of(np.broadcast_to(np.arange(4.0), (8, 4)), None) is None


def test_a_copy_no_block_holds_is_not_found():
    copies = RowCopies()
    value = np.arange(16, dtype=np.float32).reshape(4, 4)
    wanted = copies.rows_of(value, np.array([1, 2]))
    copies.add(wanted, np.array(value[[1, 2]]))  # dropped at once
    assert copies.find(wanted) is None
