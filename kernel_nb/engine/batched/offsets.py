"""Pointer values of a batch as the records show them: element offsets into the argument each
program's first lane points to, found without a lookup per program where one argument holds them
all."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.batched.tiles import AFFINE, Affine, AffinePointers
from kernel_nb.trace import repeated


def tile_offsets(
    addresses: AddressMap, affine: Affine, batch: int
) -> tuple[np.ndarray, np.ndarray, str] | None:
    """Per program the element offset of an Affine pointer block's base, the lanes' offsets
    from it, and the argument the first lanes point into (None: not all into one argument).
    Offsets count from that argument for every lane, inside it or not, as `offsets` does."""
    base = np.broadcast_to(affine.base, (batch,))
    if affine.lanes.size == 0:
        return None
    first = int(affine.lanes[0])
    low, high = int(base.min()) + first, int(base.max()) + first
    arg = addresses.buffer_at(low)
    # buffer_at gives one argument for every address from low to high when no argument
    # starts or ends in between (inside it, or past its end before the next one starts)
    bounds = addresses.bounds
    if arg is None or addresses.partial_overlap or ((bounds > low) & (bounds <= high)).any():
        return None
    size = arg.itemsize
    if (affine.lanes % size).any() or ((base - arg.ptr) % size).any():
        return None  # not whole elements: row_offsets floors each lane
    return (base - arg.ptr) // size, affine.lanes // size, arg.name


def pointer_tile(addresses: AddressMap, handle: Any) -> tuple[np.ndarray, np.ndarray, str] | None:
    """`tile_offsets` of a pointer block held as its Affine form (None: it is not, or not into one
    argument)."""
    affine = getattr(handle, AFFINE, None)
    if not isinstance(handle, AffinePointers) or not affine or not handle._shape:
        return None
    return tile_offsets(addresses, affine, handle._shape[0])


def row_offsets(
    addresses: AddressMap, rows: np.ndarray, *, ranges: bool
) -> tuple[np.ndarray, Sequence[str | None]]:
    """Pointer values of each program as element offsets into the argument its first lane points to.

    `ranges`: range bookkeeping could serve the launch (`guard.ranges_apply`)."""
    batch = rows.shape[0]
    flat = rows.reshape(batch, -1)
    if flat.shape[1] == 0:
        return rows.astype(np.int64), repeated(None, batch)
    heads = flat[:, 0]
    low, high = int(heads.min()), int(heads.max())
    one = addresses.buffer_at(low)
    if one is not None and ranges and one.lo <= low and high < one.hi:
        # every program points into one argument (the usual case): no lookup per program
        return (rows.astype(np.int64) - one.ptr) // one.itemsize, repeated(one.name, batch)
    firsts = [addresses.buffer_at(int(a)) for a in heads]
    bases = np.array([a.ptr if a is not None else 0 for a in firsts], dtype=np.int64)
    sizes = np.array([a.itemsize if a is not None else 1 for a in firsts], dtype=np.int64)
    shape = (batch,) + (1,) * (rows.ndim - 1)
    offsets = (rows.astype(np.int64) - bases.reshape(shape)) // sizes.reshape(shape)
    return offsets, [a.name if a is not None else None for a in firsts]
