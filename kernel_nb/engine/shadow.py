"""The fp64 shadow run (`Options.shadow`): every floating-point value of a launch also in fp64.

Each interpreter value of a float type carries two fp64 arrays beside its own data:

- its shadow, computed in fp64 all the way from the launch's inputs: a load gives the loaded
  values upcast, every float operation applies to its operands' shadows, a dot, a reduction or a
  math function runs in fp64, a cast to a narrower type passes the shadow through. Integer and
  pointer arithmetic, masks and control flow are the real run's.
- its local value, computed in fp64 from the real values its statement read: operands made by
  earlier statements enter as their real values upcast, operands made within the same statement
  as their local values. A statement's own error (real - local) is then what its arithmetic lost,
  apart from the error its operands carried in.

A value made by an operation the shadow does not follow (an atomic's result, a bit cast, a bit
trick on a float's encoding, a dot_scaled, anything with no meaning on fp64 values) starts a
shadow of its own: its real values upcast.

Statements are numbered by epoch: every record the kernel makes closes one, and a value made
since the last record belongs to the statement being recorded. Each float statement's errors
count toward its largest over the launch (`StatementErrors`, which the findings read), and in
the programs whose values are kept its record is followed by three companion records
(statements of kinds `COMPANIONS`): the shadow, the error against it in units in the last place
of the real type, and the statement's own error in ulps.
Stores and float atomics write the shadow of what they store into a reference copy of the buffer
(shadow_reference.py; `Launch.reference`); what a value carries is in shadow_values.py. This
module holds the run: the builder and language hooks, the records, the statements' errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np
import triton.language as tl

from kernel_nb import numerics
from kernel_nb.checks.precision import StoredOutput
from kernel_nb.engine import triton_compat
from kernel_nb.engine.addresses import AddressMap
from kernel_nb.engine.patches import patched_methods
from kernel_nb.engine.shadow_reference import References
from kernel_nb.engine.shadow_values import (
    EPOCH,
    EXACT_OPERATIONS,
    LOCAL,
    MADE_BY,
    NATIVE,
    SHADOW,
    WIDENING_OPERATIONS,
    attach,
    exact_reduction,
    floating,
    follow,
    handles,
    has_local,
    held_bytes,
    local_of,
    operands64,
    real64,
    selected_whole,
    settle_exact,
    shadow_of,
    tensor64,
    ulps_of,
)
from kernel_nb.trace import COMPANION_KINDS as COMPANIONS
from kernel_nb.trace import StatementErrors

__all__ = ["COMPANIONS", "ShadowRun", "follow", "held_bytes"]

# methods whose results the shadow does not follow by running them on fp64 operands: memory
# (stores are followed on their own), program ids and ranges, pointers, asserts and prints
_NOT_FOLLOWED = {
    *(method.name for method in triton_compat.MEMORY_METHODS),
    *(method.name for method in triton_compat.DESCRIPTOR_METHODS),
    triton_compat.DOT_SCALED.name,
    "create_atomic_load",
    "create_atomic_store",
    "create_descriptor_gather",
    "create_descriptor_scatter",
    "create_make_tensor_descriptor",
    "create_assume",
    "create_barrier",
    "create_print",
    "create_inline_asm",
    "create_get_program_id",
    "create_get_num_programs",
    "create_make_range",
    "create_histogram",
    "create_int_to_ptr",
    "create_ptr_to_int",
    "create_addptr",
    "create_bitcast",
    # on floats, bit operations are tricks on their encodings (tl.abs of fp8 clears the sign bit)
    "create_and",
    "create_or",
    "create_xor",
}
_STORES = (triton_compat.STORE_METHOD, triton_compat.PLAIN_STORE_METHOD)
# casts: a float result takes its float source's shadow as it is, an integer source's values exactly
_CASTS = (
    triton_compat.CAST.name,
    triton_compat.FP_TO_FP.name,
    "create_fp_ext",
    "create_fp_trunc",
    "create_si_to_fp",
    "create_ui_to_fp",
)


class ShadowRun:
    """The shadow of one run of a launch's programs: the hooks that compute it, the statement
    epoch, and the reference copies of the buffers it stored into."""

    def __init__(self, addresses: AddressMap, inputs: Callable[[str], np.ndarray], *, tf32: bool) -> None:
        """
        Args:
            addresses: turns the stores' pointers into elements of the buffer arguments.
            inputs: a buffer argument's elements before the launch, by name.
            tf32: the real run computes fp32 dots as tf32 where the kernel leaves the precision
                to the default, as the GPU does (numerics="gpu").
        """
        self.tf32 = tf32
        self.epoch = 0
        self.inside = False  # computing a shadow: the operations it runs are not followed again
        self.stores = References(addresses, inputs)
        self.errors: dict[int, StatementErrors] = {}
        self._tf32_epoch = -1  # the last statement a tf32 dot was part of

    @property
    def references(self) -> dict[str, np.ndarray]:
        """Per buffer argument a float store wrote, its elements in fp64 as the shadow stored them."""
        return self.stores.references

    @property
    def outputs(self) -> dict[str, StoredOutput]:
        """Per buffer argument a float store wrote, what the real run stored."""
        return self.stores.outputs

    # -- records ----------------------------------------------------------------------------------

    def record(self, recorder: Any, stmt: int, first: int, value: Any) -> None:
        """After the record of `value` as statement `stmt`: its companions as statements `first`,
        `first + 1`, ... (see COMPANIONS); the statement's epoch ends."""
        try:
            if triton_compat.is_tensor(value) and floating(value.handle):
                handle = value.handle
                setattr(handle, MADE_BY, stmt)
                type_name = str(handle.dtype)
                # numpy's own float types enter the arithmetic as they are (upcast as it runs)
                real = np.asarray(handle.data) if type_name in NATIVE else real64(handle)
                shadow = shadow_of(handle)
                local = getattr(handle, LOCAL, None) if getattr(handle, EPOCH, None) == self.epoch else None
                if getattr(handle, SHADOW, None) is None:  # its shadow is its own values: exact
                    ulps = own = ulps_of(real, real, type_name, real)
                else:
                    spacing = numerics.ulp(real, type_name)
                    ulps = ulps_of(real, shadow, type_name, spacing)
                    if local is shadow:
                        own = ulps
                    elif local is None:  # not made by this statement: it added nothing
                        own = ulps_of(real, real, type_name, real)
                    else:
                        own = ulps_of(real, local, type_name, spacing)
                # a local value serves its statement only: it is not held past it
                setattr(handle, LOCAL, None)
                shape = triton_compat.tensor_shape(value)
                recorder.record_companions(first, [(shadow, "fp64"), (ulps, "fp32"), (own, "fp32")], shape)
                errors = self.errors.get(stmt)
                if errors is None:
                    errors = self.errors[stmt] = StatementErrors()
                real_part = recorder.running_rows(real, shape)[0]
                ulps_part, programs = recorder.running_rows(ulps, shape)
                own_part = ulps_part if own is ulps else recorder.running_rows(own, shape)[0]
                exact = errors.add(
                    type_name,
                    real_part,
                    ulps_part,
                    own_part,
                    loop=bool(recorder.iteration),
                    tf32=self._tf32_epoch == self.epoch,
                    programs=programs,
                )
                if exact and getattr(handle, SHADOW, None) is not None:
                    # later statements read it as the exact value it is: one run of theirs then
                    # serves as both their shadow and their local value (a max, a select, ...)
                    settle_exact(handle, shadow)
        finally:
            self.epoch += 1

    # -- hooks ------------------------------------------------------------------------------------

    @contextmanager
    def installed(
        self,
        builder: Any,
        loop_active: Callable[[], np.ndarray | None] | None = None,
        tile_offsets: Callable[[Any], tuple[np.ndarray, np.ndarray, str] | None] | None = None,
        rows: Callable[[], int] | None = None,
    ) -> Iterator[None]:
        """The shadow's hooks in `builder` and in the language's reductions, for a while.

        Args:
            loop_active: per batch row, whether its program still runs the masked loop it is in
                (None: every row runs; the serial strategy's single program always does).
            tile_offsets: for a pointer block the batched strategy holds as a tile form, per row
                the element offset of its first lane, the lanes' offsets from it and the argument
                (None: the addresses it stands for are made and looked up).
            rows: how many programs the rows of the batched strategy's values stand for.
        """
        if loop_active is not None:
            self.stores.loop_active = loop_active
        self.stores.tile_offsets = tile_offsets
        if rows is not None:
            self.stores.rows = rows
        hooks: dict[str, Callable[..., Any]] = {}
        for name in dir(builder):
            followed_memory = (*_STORES, triton_compat.ATOMIC_RMW_METHOD, triton_compat.ATOMIC_CAS_METHOD)
            if not name.startswith("create_") or (name in _NOT_FOLLOWED and name not in followed_memory):
                continue
            original = getattr(builder, name)
            if not callable(original):
                continue
            if name in _STORES:
                hooks[name] = self._store_hook(original)
            elif name == triton_compat.ATOMIC_RMW_METHOD:
                hooks[name] = self._atomic_hook(original)
            elif name == triton_compat.ATOMIC_CAS_METHOD:
                hooks[name] = self._cas_hook(original)
            elif name in _CASTS:
                hooks[name] = self._cast_hook(original, unsigned=name == "create_ui_to_fp")
            elif name == triton_compat.DOT.name:
                hooks[name] = self._dot_hook(original)
            else:
                hooks[name] = self._followed(
                    original,
                    exact=name in EXACT_OPERATIONS,
                    widens=name in WIDENING_OPERATIONS,
                    selects=name == "create_select",
                )
        if hasattr(builder, triton_compat.CAST.name):
            hooks[triton_compat.CAST.name] = self._cast_hook(
                getattr(builder, triton_compat.CAST.name), unsigned=False
            )
        with ExitStack() as stack:
            stack.enter_context(patched_methods(builder, hooks))
            stack.enter_context(self._reductions())
            stack.enter_context(triton_compat.extern_observer(self._extern))
            yield

    def _followed(
        self,
        original: Callable[..., Any],
        *,
        exact: bool = False,
        widens: bool = False,
        selects: bool = False,
    ) -> Callable[..., Any]:
        """`exact`: the operation rounds nothing (a select, a maximum, a negation): its result is
        one of its operands' values, so that from real operands it makes its real result.
        `widens`: an elementwise numpy operation, which computes in fp64 when one operand is."""

        def hooked(*args: Any) -> Any:
            result = original(*args)
            if self.inside:
                return result
            outputs = [h for h in handles(result) if floating(h)]
            floats = [a for a in args if isinstance(a, triton_compat.TensorHandle) and floating(a)]
            if not outputs or not floats:
                return result
            epoch = self.epoch
            if exact and all(getattr(a, SHADOW, None) is None for a in floats):
                return result  # exact operands: an exact result, which is its own shadow
            if selects and selected_whole(args, result, epoch):
                return result
            # from operands that are their real values, an exact operation makes its real result:
            # its local value is that, upcast when read (see local_of)
            real_result = exact and not any(has_local(a, epoch) for a in floats)
            self.inside = True
            try:
                shadows = operands64(args, shadow_of, lambda h: getattr(h, SHADOW, None) is None, widens)
                shadow = original(*shadows)
                if real_result:
                    local = None
                else:
                    locals_ = operands64(
                        args, lambda h: local_of(h, epoch), lambda h: not has_local(h, epoch), widens
                    )
                    # operands whose local values are their shadows (loads, say) give the same result
                    same = all(s is lo or s.data is lo.data for s, lo in zip(shadows, locals_))
                    local = shadow if same else original(*locals_)
            except (TypeError, ValueError):
                # an operation that has no meaning on fp64 values: its result starts a shadow of its own
                return result
            finally:
                self.inside = False
            made_locals = [None] * len(handles(result)) if local is None else handles(local)
            for out, s, lo in zip(handles(result), handles(shadow), made_locals):
                if floating(out):
                    attach(out, np.asarray(s.data), None if lo is None else np.asarray(lo.data), epoch)
            return result

        return hooked

    def _cast_hook(self, original: Callable[..., Any], *, unsigned: bool) -> Callable[..., Any]:
        def hooked(src: Any, *rest: Any) -> Any:
            result = original(src, *rest)
            if self.inside or not (isinstance(result, triton_compat.TensorHandle) and floating(result)):
                return result
            if floating(src):
                attach(result, shadow_of(src), local_of(src, self.epoch), self.epoch)
                made_by = getattr(src, MADE_BY, None)
                if made_by is not None:  # a value cast to the pointer's element type as it is stored
                    setattr(result, MADE_BY, made_by)
            elif isinstance(src, triton_compat.TensorHandle) and not src.dtype.is_ptr():
                data = np.asarray(src.data)
                if unsigned and data.dtype.kind == "i":
                    data = data.view(data.dtype.str.replace("i", "u"))
                exact = data.astype(np.float64)
                attach(result, exact, exact, self.epoch)
            return result

        return hooked

    def _dot_hook(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(a: Any, b: Any, d: Any, *rest: Any) -> Any:
            result = original(a, b, d, *rest)
            if self.inside or not floating(result) or not (floating(a) and floating(b)):
                return result
            epoch = self.epoch
            precision = rest[0] if rest else None
            mode = "tf32" if precision is None else str(precision).split(".")[-1].lower()
            if self.tf32 and mode == "tf32" and str(a.dtype) == "fp32" and str(b.dtype) == "fp32":
                self._tf32_epoch = epoch  # as the GPU runs it (see ArithmeticHooks.dot)

            def local(h: Any) -> np.ndarray:
                return local_of(h, epoch)

            def addend(values: Callable[[Any], np.ndarray]) -> np.ndarray:
                return values(d) if floating(d) else np.asarray(d.data, np.float64)

            with np.errstate(all="ignore"):
                product = np.matmul(shadow_of(a), shadow_of(b))
                shadow = product + addend(shadow_of)
                if shadow_of(a) is not local(a) or shadow_of(b) is not local(b):
                    product = np.matmul(local(a), local(b))
                elif not floating(d) or shadow_of(d) is local(d):
                    attach(result, shadow, shadow, epoch)
                    return result
                # the operands as loaded and the accumulator as it was: one product serves both
                attach(result, shadow, product + addend(local), epoch)
            return result

        return hooked

    def _atomic_hook(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(op: Any, ptrs: Any, value: Any, mask: Any, *rest: Any) -> Any:
            result = original(op, ptrs, value, mask, *rest)
            if self.inside:
                return result
            if floating(value):
                self.stores.atomic(triton_compat.rmw_op_name(op), ptrs, value, mask)
            else:  # tl.atomic_max/min of floats work on their bits: not followed
                self.stores.unfollowed_write(ptrs, mask)
            return result

        return hooked

    def _cas_hook(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(ptrs: Any, *rest: Any) -> Any:
            result = original(ptrs, *rest)
            if not self.inside:
                self.stores.unfollowed_write(ptrs, None)
            return result

        return hooked

    def settle(self, results: Callable[[str], np.ndarray]) -> None:
        """At the launch's end (see References.settle)."""
        self.stores.settle(results)

    def _store_hook(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def hooked(ptrs: Any, value: Any, *rest: Any) -> Any:
            result = original(ptrs, value, *rest)
            if not self.inside and floating(value):
                # a masked store's mask: a handle, or the bare array a descriptor store passes (3.6)
                mask = (
                    rest[0]
                    if rest and isinstance(rest[0], (triton_compat.TensorHandle, np.ndarray))
                    else None
                )
                self.stores.store(ptrs, value, mask)
            return result

        return hooked

    # -- reductions, scans, libdevice ---------------------------------------------------------------

    @contextmanager
    def _reductions(self) -> Iterator[None]:
        saved = [
            (owner, name, getattr(owner, name))
            for owner in (tl, tl.core)
            for name in ("reduce", "associative_scan")
            if hasattr(owner, name)
        ]
        try:
            for owner, name, original in saved:
                setattr(owner, name, self._reduction(original))
            yield
        finally:
            for owner, name, original in saved:
                setattr(owner, name, original)

    def _reduction(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def reduce(input: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(input, *args, **kwargs)
            if self.inside:
                return result
            inputs = input if isinstance(input, tuple) else (input,)
            if not any(triton_compat.is_tensor(t) and floating(t.handle) for t in inputs):
                return result
            epoch = self.epoch

            def rerun(values: Callable[[Any], np.ndarray]) -> Any:
                moved = tuple(
                    tensor64(t, values(t.handle)) if triton_compat.is_tensor(t) and floating(t.handle) else t
                    for t in inputs
                )
                return original(moved if isinstance(input, tuple) else moved[0], *args, **kwargs)

            floats = [t.handle for t in inputs if triton_compat.is_tensor(t) and floating(t.handle)]
            combine = args[1] if len(args) > 1 else kwargs.get("combine_fn")
            exact = exact_reduction(combine)
            if exact and all(getattr(h, SHADOW, None) is None for h in floats):
                return result  # the largest of exact values: exact
            real_result = exact and not any(has_local(h, epoch) for h in floats)
            self.inside = True
            try:
                shadow = rerun(shadow_of)
                if real_result:  # as in _followed: its local value is its real result
                    local = None
                else:
                    same = all(shadow_of(h) is local_of(h, epoch) for h in floats)
                    local = shadow if same else rerun(lambda h: local_of(h, epoch))
            finally:
                self.inside = False
            results = result if isinstance(result, tuple) else (result,)
            shadows = shadow if isinstance(shadow, tuple) else (shadow,)
            locals_ = (
                (None,) * len(results) if local is None else local if isinstance(local, tuple) else (local,)
            )
            for out, s, lo in zip(results, shadows, locals_):
                if triton_compat.is_tensor(out) and floating(out.handle) and triton_compat.is_tensor(s):
                    made = real64(s.handle)
                    local_made = None if lo is None else made if s is lo else real64(lo.handle)
                    attach(out.handle, made, local_made, epoch)
            return result

        return reduce

    def _extern(self, symbol: str, handles: list[Any], result: Any) -> None:
        """A libdevice call's shadow: the fp64 function on the operands' shadows, where libdevice
        has one (`__nv_expf` → `__nv_exp`)."""
        if self.inside or not floating(result) or not any(floating(h) for h in handles):
            return
        # imported by the first shadowed libdevice call, as the call itself imports it
        # (patches._libdevice): its tables are a sixth of the package's import
        from kernel_nb.engine import libdevice

        wide = symbol[:-1] if symbol.endswith("f") and symbol[:-1] in libdevice.SYMBOLS else None
        if wide is None:
            return
        epoch = self.epoch

        def evaluate(values: Callable[[Any], np.ndarray]) -> np.ndarray:
            args = [values(h) if floating(h) else np.asarray(h.data) for h in handles]
            return libdevice.evaluate(wide, args, np.dtype(np.float64))

        shadow = evaluate(shadow_of)
        same = all(shadow_of(h) is local_of(h, epoch) for h in handles if floating(h))
        attach(result, shadow, shadow if same else evaluate(lambda h: local_of(h, epoch)), epoch)
