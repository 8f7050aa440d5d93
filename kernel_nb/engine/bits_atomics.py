"""Atomic read-modify-writes of bf16 and fp8 elements, which the interpreter's C++ side refuses.

The GPU has them (bf16 atomic add, max, min, exchange); here each lane reads its element, combines
in float and writes back in lane order, rounding every step to the element type as the GPU's
atomics do. The old values come back as raw bits, as the interpreter holds such types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kernel_nb import numerics
from kernel_nb.distinct import distinct
from kernel_nb.engine import triton_compat

_FLOAT_RMW: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "fadd": np.add,
    "add": np.add,
    "max": np.fmax,
    "min": np.fmin,
    "xchg": lambda old, new: new,
}


def with_bits_types(native: Any) -> Any:
    """The interpreter builder's `create_atomic_rmw`, extended to bf16/fp8 operands. It replaces the
    class's method, under the memory guard's hooks, so such accesses are checked and recorded too."""

    def create_atomic_rmw(builder: Any, op: Any, ptr: Any, val: Any, mask: Any, *rest: Any) -> Any:
        name = str(val.dtype.scalar)
        combine = _FLOAT_RMW.get(triton_compat.rmw_op_name(op))
        if not numerics.is_bits_float(name) or combine is None:
            return native(builder, op, ptr, val, mask, *rest)
        addresses = np.asarray(ptr.data, dtype=np.uint64)
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
        values = np.broadcast_to(numerics.decode(val.data, name), addresses.shape)
        storage = triton_compat.np_dtype(val.dtype.scalar)
        old = np.zeros(addresses.shape, dtype=storage)
        flat_addresses, flat_active = addresses.reshape(-1), active.reshape(-1)
        flat_values, flat_old = values.reshape(-1), old.reshape(-1)
        # lanes on one element are applied one after another: round r takes each element's r-th lane
        lanes = np.flatnonzero(flat_active)
        _, counts = distinct(flat_addresses[lanes], return_counts=True)
        order = lanes[np.argsort(flat_addresses[lanes], kind="stable")]
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        rank = np.arange(order.size) - starts
        for r in range(int(counts.max()) if counts.size else 0):
            taking = order[rank == r]
            here = flat_addresses[taking]
            every = np.ones(here.shape, bool)
            before = triton_compat.raw_load(here, every, storage)
            with np.errstate(all="ignore"):
                after = combine(numerics.decode(before, name), flat_values[taking])
            triton_compat.raw_store(here, numerics.encode(after, name))
            flat_old[taking] = before
        return triton_compat.TensorHandle(old, val.dtype.scalar)

    return create_atomic_rmw
