"""Where the probed kernel variants' source files go: a directory of this process that nothing imports by accident.

Triton's JIT reads a function's source from its file, so each probed variant is written to disk
before it is decorated. The default home is one directory per process, made on first use by
`tempfile.mkdtemp` with a name that is not a Python identifier (``kernel-nb-XXXXXXXX``), so a
Python started in the temp directory cannot import it as a package, and removed when the process
exits. `GpuOptions.sources_dir` (or `instrument(directory=...)`) writes them somewhere else instead,
and keeps them.

kernel_nb 0.1 wrote them to ``kernel_nb/instrumented`` in the temp directory and left them there,
where that folder shadowed the installed package for any Python started in the temp directory; the
first use here removes it when it holds nothing but such files.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import re
import shutil
import tempfile
from pathlib import Path

PREFIX = "kernel-nb-"
_LEGACY = ("kernel_nb", "instrumented")
_GENERATED_NAME = re.compile(r"\w+_[0-9a-f]{16}(\.\d+\.tmp|\.py)")


@functools.cache
def process_directory() -> Path:
    """This process's directory for generated sources, made on first use, removed at exit."""
    path = Path(tempfile.mkdtemp(prefix=PREFIX))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    _remove_legacy_directory(Path(tempfile.gettempdir()))
    return path


def sources_directory(chosen: str | Path | None) -> Path:
    """`chosen` when the caller named a directory (kept), else this process's own (removed at exit)."""
    return Path(chosen) if chosen is not None else process_directory()


def _remove_legacy_directory(temp: Path) -> None:
    folder = temp.joinpath(*_LEGACY)
    with contextlib.suppress(OSError):
        entries = list(folder.iterdir())
        if all(e.is_file() and _GENERATED_NAME.fullmatch(e.name) for e in entries):
            shutil.rmtree(folder)
            folder.parent.rmdir()  # only when nothing else is in it
