"""Scoped changes to Triton's namespaces, undone exactly, also on error and Ctrl-C.

Triton's interpreter patches `triton.language` in place and device-function calls re-patch without
restoring; a GPU compile later in the same process then fails. `NamespaceSnapshot` records the
namespaces' contents before and puts every attribute back afterwards, whatever the interpreter did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from kernel_nb.engine import triton_compat

_MISSING = object()


class NamespaceSnapshot:
    """The attributes of some modules and classes, restorable."""

    def __init__(self, spaces: list[Any]) -> None:
        self._saved = [(space, dict(vars(space))) for space in spaces]

    def restore(self) -> None:
        for space, saved in self._saved:
            current = vars(space)
            for name in [n for n in current if n not in saved]:
                with suppress(AttributeError, TypeError):
                    delattr(space, name)
            for name, value in saved.items():
                if current.get(name, _MISSING) is not value:
                    # read-only slots (__dict__, __weakref__) are never changed by the patches
                    with suppress(AttributeError, TypeError):
                        setattr(space, name, value)


@contextmanager
def interpreter_scope(call_helper: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]) -> Iterator[Any]:
    """Route triton.language to the interpreter and @triton.jit helper calls to `call_helper`.

    Yields the interpreter's builder, with device_assert enabled.
    """
    jit_cls = triton_compat.JIT_FUNCTION
    snapshot = NamespaceSnapshot([*triton_compat.language_namespaces(), jit_cls])
    b = triton_compat.builder()
    old_options = b.options
    undo_language: Callable[[], None] = lambda: None  # noqa: E731

    def routed_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return call_helper(self, args, kwargs)

    try:
        undo_language = triton_compat.patch_language()
        jit_cls.__call__ = routed_call
        triton_compat.set_debug(b)
        yield b
    finally:
        b.options = old_options
        undo_language()
        snapshot.restore()
