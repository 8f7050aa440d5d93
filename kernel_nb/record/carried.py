"""A recorded kernel's source, carried in a saved recording: the kernel defined again from it where
its module cannot be imported (a notebook's kernel on a machine that does not run the notebook, a
library that is not installed there).

The text is that of a module of the kernel alone (`trace.kernel_text`): the imports and constants
its source reads, its helpers, itself. A loaded recording defines it in a module of its own, whose
lines `linecache` holds, so that `inspect` finds the source as Triton and the interpreter read it.
"""

from __future__ import annotations

import hashlib
import inspect
import linecache
import sys
import types
from typing import Any

from kernel_nb.engine import jit_functions, kernel_globals, triton_compat
from kernel_nb.trace import SourceInfo
from kernel_nb.trace.kernel_text import module_text


def carried_source(jit: Any) -> tuple[str | None, str]:
    """The text of a module that defines the kernel `jit`, and ""; or None and why it cannot be
    carried (a global no module text can recreate, a source `inspect` cannot read)."""
    fn = triton_compat.jit_source_function(jit)
    if not isinstance(fn, types.FunctionType):
        return None, f"{jit!r} is no Python function"
    try:
        sources = {}
        for function in jit_functions(fn):
            lines, start = inspect.getsourcelines(function)
            file = inspect.getsourcefile(function) or function.__code__.co_filename
            sources[function.__name__] = SourceInfo(function.__name__, file, start, "".join(lines))
        return module_text(fn.__name__, kernel_globals(fn), sources), ""
    except (OSError, TypeError, ValueError) as exc:
        return None, str(exc)


def define(kernel: str, source: str) -> Any:
    """The JITFunction `kernel` as `source` (a `carried_source` text) defines it, in a module of
    its own (one per text: loading a recording twice defines it once).

    Raises:
        Exception: whatever running the text raises (an import this machine lacks, say).
    """
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    name = f"kernel_nb_recorded_{kernel}_{digest}"
    module = sys.modules.get(name)
    if module is None:
        filename = f"<recorded kernel {kernel} {digest}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        module = types.ModuleType(name)
        module.__file__ = filename
        sys.modules[name] = module  # Triton looks functions' modules up while it compiles them
        try:
            exec(compile(source, filename, "exec"), module.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    return getattr(module, kernel)
