"""The interpreter builder's methods that kernel_nb replaces: one table, by name.

Their argument lists are Triton's private business and differ between versions (cache modifier
and eviction policy became one cache policy in 3.9), so every hook takes the arguments after the
ones it reads positionally and passes them on. `layout` names those it reads, in order.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BuilderMethod:
    """One method of the interpreter's builder that a hook replaces.

    Attributes:
        name: the method's name on the builder.
        layout: the positional arguments the hook reads ("*rest": more, passed on as they are).
        since: the first Triton version whose interpreter has it.
    """

    name: str
    layout: tuple[str, ...]
    since: tuple[int, int] = (3, 4)


# memory: the guard (guard.py) checks and records these
LOAD = BuilderMethod("create_masked_load", ("ptrs", "mask", "other", "*rest"))
STORE = BuilderMethod("create_masked_store", ("ptrs", "value", "mask", "*rest"))
PLAIN_LOAD = BuilderMethod("create_load", ("ptrs", "*rest"))  # tl.load without mask=
PLAIN_STORE = BuilderMethod("create_store", ("ptrs", "value", "*rest"))
ATOMIC_RMW = BuilderMethod("create_atomic_rmw", ("op", "ptrs", "value", "mask", "*rest"))
ATOMIC_CAS = BuilderMethod("create_atomic_cas", ("ptrs", "cmp", "value", "*rest"))
ATOMIC_POLL = BuilderMethod("create_atomic_poll", ("ptrs", "expected", "timeout", "*rest"), since=(3, 9))
ASSERT = BuilderMethod("create_assert", ("condition", "message", "*rest"))
# tensor descriptors: their loads and stores go through LOAD and STORE; the guard only notes the
# descriptor, whose shape its refusals name
DESCRIPTOR_LOAD = BuilderMethod("create_descriptor_load", ("desc", "indices", "*rest"))
DESCRIPTOR_STORE = BuilderMethod("create_descriptor_store", ("desc", "value", "indices", "*rest"))

# arithmetic: GPU-faithful numerics and undefined-behaviour observations (arith.py); dot_scaled's
# hook is kernel_nb's own, also where the interpreter has none (before 3.9)
BINARY_OP = BuilderMethod("binary_op", ("lhs", "rhs", "op"))
UNARY_OP = BuilderMethod("unary_op", ("arg", "op"))
CAST = BuilderMethod("cast_impl", ("src", "dst_type"))
FP_TO_FP = BuilderMethod("create_fp_to_fp", ("src", "dst_type", "rounding"))
IDIV = BuilderMethod("create_idiv", ("lhs", "rhs"))
DOT = BuilderMethod("create_dot", ("a", "b", "d", "precision", "*rest"))
ASHR = BuilderMethod("create_ashr", ("lhs", "rhs"))
DOT_SCALED = BuilderMethod(
    "create_dot_scaled",
    ("lhs", "lhs_scale", "lhs_format", "rhs", "rhs_scale", "rhs_format", "*rest"),
    since=(3, 9),
)

MEMORY_METHODS = (LOAD, STORE, PLAIN_LOAD, PLAIN_STORE, ATOMIC_RMW, ATOMIC_CAS, ATOMIC_POLL, ASSERT)
DESCRIPTOR_METHODS = (DESCRIPTOR_LOAD, DESCRIPTOR_STORE)
ARITHMETIC_METHODS = (BINARY_OP, UNARY_OP, CAST, FP_TO_FP, IDIV, DOT, ASHR, DOT_SCALED)

# the names alone, where a hook calls another method by name
LOAD_METHOD = LOAD.name
STORE_METHOD = STORE.name
ATOMIC_RMW_METHOD = ATOMIC_RMW.name
ATOMIC_CAS_METHOD = ATOMIC_CAS.name
ASSERT_METHOD = ASSERT.name
PLAIN_LOAD_METHOD = PLAIN_LOAD.name  # calls create_masked_load
PLAIN_STORE_METHOD = PLAIN_STORE.name
ATOMIC_POLL_METHOD = ATOMIC_POLL.name
