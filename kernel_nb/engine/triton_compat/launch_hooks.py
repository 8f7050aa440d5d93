"""Compiled launches as Triton's launch hooks see them, whoever starts them.

Every launch Triton's launcher makes, through `JITFunction.run` or straight through a
`CompiledKernel` (`kernel[grid](...)` on what a launch returned, the launchers torch.compile
generates where its own static CUDA launcher is off), asks its
`CompiledKernel.launch_metadata(grid, stream, *args)` for what to give the launch hooks just
before it starts, then calls `knobs.runtime.launch_enter_hook` and `launch_exit_hook` around the
launch. The arguments are there (every parameter in order, constexprs included) and the
`JITFunction` is the compiled kernel's `src.fn`; the metadata is a `LazyDict` handed to both
hooks, which carries a launch from the one to the other.

triton 3.4 holds one hook of each (None: none, and then no metadata is made); 3.6 to 3.9 hold
chains (`HookChain`, which are never None).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from triton import knobs
from triton.compiler.compiler import CompiledKernel

_BLOCKS = itertools.count()  # blocks nest (a recording inside a recording): a key each


@contextmanager
def compiled_launches(
    before: Callable[[Any, tuple[int, ...], tuple[Any, ...]], Any],
    after: Callable[[Any], None],
) -> Iterator[None]:
    """Inside: `before(jit, grid, args)` is called as each compiled launch is about to start
    (`args`: the kernel's parameters in order, constexprs included), and what it returns, unless
    None, is given to `after` once the launch has been made (asynchronously: a copy from device
    memory on the launch's stream waits for it)."""
    original = CompiledKernel.launch_metadata
    runtime = knobs.runtime
    key = f"kernel_nb.launch.{next(_BLOCKS)}"  # the metadata's key for what `before` returned

    def launch_metadata(self: Any, grid: Any, stream: Any, *args: Any) -> Any:
        metadata = original(self, grid, stream, *args)
        jit = getattr(getattr(self, "src", None), "fn", None)
        if metadata is None or jit is None:
            return metadata
        token = before(jit, tuple(grid), args)
        if token is not None:
            metadata.data[key] = token
        return metadata

    def exit_hook(metadata: Any) -> None:
        token = None if metadata is None else metadata.data.pop(key, None)
        if token is not None:
            after(token)

    chained = hasattr(runtime.launch_enter_hook, "add")
    previous = (runtime.launch_enter_hook, runtime.launch_exit_hook)
    CompiledKernel.launch_metadata = launch_metadata
    if chained:
        runtime.launch_exit_hook.add(exit_hook)
    else:
        enter, leave = previous
        # a single hook each: without an enter hook no metadata is made; one already set stays called
        runtime.launch_enter_hook = enter or (lambda metadata: None)

        def exit_and_previous(metadata: Any) -> None:
            exit_hook(metadata)
            if leave is not None:
                leave(metadata)

        runtime.launch_exit_hook = exit_and_previous
    try:
        yield
    finally:
        CompiledKernel.launch_metadata = original
        if chained:
            runtime.launch_exit_hook.remove(exit_hook)
        else:
            runtime.launch_enter_hook, runtime.launch_exit_hook = previous
