"""Rows a batch keeps by their form rather than as arrays: a tile of offsets at a per-row shift,
and a tile of the launch's inputs at a per-row place; each stands in for the (rows, *shape)
array it describes, and makes a row when someone reads it."""

from __future__ import annotations

from typing import Any

import numpy as np


class TileRows:
    """Rows of integer arrays that are one tile at a per-row shift: row i is `shift[i] + lanes`.

    Stands in for the (rows, *shape) array it describes (pointer offsets and memory indices of a
    tiled access, integer values such as `pid * BLOCK + tl.arange(0, BLOCK)`), so that a batch
    keeps two small vectors instead of a value per lane; a row is made when someone reads it.
    """

    dtype = np.dtype(np.int64)  # the rows' type (traces saved before it was kept: int64)

    def __init__(
        self, shift: np.ndarray, lanes: np.ndarray, shape: tuple[int, ...], dtype: Any = np.int64
    ) -> None:
        self.shift = shift
        self.lanes = lanes
        self.shape = (len(shift), *shape)
        self.dtype = np.dtype(dtype)

    def __len__(self) -> int:
        return len(self.shift)

    def __getitem__(self, row: int) -> np.ndarray:
        return (self.lanes + self.shift[row]).astype(self.dtype, copy=False).reshape(self.shape[1:])

    def rows(self, at: np.ndarray) -> TileRows:
        """Rows `at` of these."""
        return TileRows(self.shift[at], self.lanes, self.shape[1:], self.dtype)

    def row_nbytes(self) -> int:
        """Bytes of one row once made (what the serial strategy keeps per program)."""
        return int(self.lanes.size) * self.dtype.itemsize


class GatheredRows:
    """Rows of a tile loaded from memory that never changes (the launch's read-only inputs): row i
    is `source[shift[i] + lanes]`.

    Stands in for the (rows, *shape) values of such a load, so that a batch keeps a shift per row
    instead of a copy of each kept program's tile, and summarises the rows when someone reads them
    (the inputs stay as long as the launch); a row is made when someone reads it.
    """

    def __init__(
        self, source: np.ndarray, shift: np.ndarray, lanes: np.ndarray, shape: tuple[int, ...]
    ) -> None:
        self.source = source
        self.shift = shift
        self.lanes = lanes
        self.shape = (len(shift), *shape)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self.source.dtype

    def __len__(self) -> int:
        return len(self.shift)

    def __getitem__(self, row: int) -> np.ndarray:
        return self.source[self.lanes + self.shift[row]].reshape(self.shape[1:])

    def rows(self, at: np.ndarray) -> GatheredRows:
        """Rows `at` of these."""
        return GatheredRows(self.source, self.shift[at], self.lanes, self.shape[1:])

    def made(self) -> np.ndarray:
        """Every row, (rows, lanes)."""
        return self.source[self.shift[:, None] + self.lanes[None, :]]

    def row_nbytes(self) -> int:
        """Bytes of one row once made (what the serial strategy keeps per program)."""
        return int(self.lanes.size) * self.source.itemsize

    def __reduce__(self) -> tuple[Any, ...]:
        # saved as the values they stand for: the inputs they read stay behind
        return (np.asarray, (self.made().reshape(self.shape),))
