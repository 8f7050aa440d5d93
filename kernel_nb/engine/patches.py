"""Scoped changes to Triton's namespaces, undone exactly, also on error and Ctrl-C.

Triton's interpreter patches `triton.language` in place and device-function calls re-patch without
restoring; a GPU compile later in the same process then fails. `NamespaceSnapshot` records the
namespaces' contents before and puts every attribute back afterwards, whatever the interpreter did.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kernel_nb.engine import bits_atomics, triton_compat

_MISSING = object()


class NamespaceSnapshot:
    """The attributes of some modules and classes, restorable."""

    def __init__(self, spaces: list[Any]) -> None:
        self._saved = [(space, dict(vars(space))) for space in spaces]

    def restore(self) -> None:
        for space, saved in self._saved:
            current = vars(space)
            if (
                len(current) == len(saved)
                and all(map(operator.is_, current.values(), saved.values()))
                and list(current) == list(saved)
            ):
                continue  # as it was: told in C, where the loops below take 0.1-0.2 ms a namespace
            for name in [n for n in current if n not in saved]:
                with suppress(AttributeError, TypeError):
                    delattr(space, name)
            for name, value in saved.items():
                if current.get(name, _MISSING) is not value:
                    # read-only slots (__dict__, __weakref__) are never changed by the patches
                    with suppress(AttributeError, TypeError):
                        setattr(space, name, value)


@contextmanager
def patched_methods(builder: Any, hooks: dict[str, Callable[..., Any]]) -> Iterator[None]:
    """`hooks` in place of the builder's methods of the same names for a while.

    Each hook is set on the builder object itself; afterwards an attribute the builder had of its
    own is put back and any other is removed, so that the class's method shows through again.
    """
    own = {name: vars(builder)[name] for name in hooks if name in vars(builder)}
    for name, hook in hooks.items():
        setattr(builder, name, hook)
    try:
        yield
    finally:
        for name in hooks:
            if name in own:
                setattr(builder, name, own[name])
            else:
                delattr(builder, name)


def _libdevice(symbol: str, args: list[Any], element: Any) -> Any:
    # imported on the first call: few kernels call libdevice, and its tables take a moment to build
    from kernel_nb.engine import libdevice

    return libdevice.evaluate(symbol, args, triton_compat.np_dtype(element))


# the namespaces as the outermost open `routed_language` scope routed them (empty: none is open)
_routed: list[NamespaceSnapshot] = []


@contextmanager
def routed_language() -> Iterator[None]:
    """triton.language routed to the interpreter (libdevice and atomics of every type included),
    and every namespace put back as it was afterwards. Scopes nest: only the outermost patches,
    an inner one puts the routed namespaces back as they were when it began (a run re-patches
    them: the batched strategy's language, Triton's own calls), so that a launch that runs its
    programs several times (a batched attempt, then the detectors' replays) patches once."""
    spaces = [*triton_compat.language_namespaces(), *triton_compat.JIT_TYPES]
    if _routed:
        try:
            yield
        finally:
            _routed[-1].restore()
        return
    snapshot = NamespaceSnapshot(spaces)
    builder_cls = triton_compat.InterpreterBuilder
    native_rmw = builder_cls.create_atomic_rmw
    undo_language: Callable[[], None] = lambda: None  # noqa: E731
    try:
        undo_language = triton_compat.patch_language(extern=_libdevice)
        builder_cls.create_atomic_rmw = bits_atomics.with_bits_types(native_rmw)
        _routed.append(NamespaceSnapshot(spaces))
        yield
    finally:
        del _routed[:]
        builder_cls.create_atomic_rmw = native_rmw
        undo_language()
        snapshot.restore()


@contextmanager
def interpreter_scope(call_helper: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]) -> Iterator[Any]:
    """Route triton.language to the interpreter and @triton.jit helper calls to `call_helper`.

    Yields the interpreter's builder, with device_assert enabled.
    """
    b = triton_compat.builder()
    old_options = b.options
    # a scope inside another gives the helper calls back to the outer one's `call_helper`
    olds = {
        (cls, name): vars(cls).get(name, _MISSING)
        for cls in triton_compat.JIT_TYPES
        for name in ("__call__", "__get__")
    }

    def routed_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return call_helper(triton_compat.as_jit(self), args, kwargs)

    def bound_to_value(self: Any, obj: Any, owner: Any = None) -> Any:
        # x.sum(): a @triton.jit function that is a member of tl.tensor takes the tensor first, as
        # the compiler's BoundJITMethod does
        if obj is None or not triton_compat.is_value(obj):
            return self
        return lambda *args, **kwargs: call_helper(triton_compat.as_jit(self), (obj, *args), kwargs)

    with routed_language():
        try:
            for cls in triton_compat.JIT_TYPES:
                cls.__call__ = routed_call
                cls.__get__ = bound_to_value
            triton_compat.set_debug(b)
            yield b
        finally:
            b.options = old_options
            for (cls, name), old in olds.items():
                if old is _MISSING:
                    with suppress(AttributeError):
                        delattr(cls, name)
                else:
                    setattr(cls, name, old)
