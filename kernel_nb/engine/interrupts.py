"""Ctrl-C during a launch, remembered, so that it ends the launch as interrupted whatever it lands in.

A KeyboardInterrupt raised while numpy converts a shape (or inside any library code that turns
errors into its own) comes out as that library's error, e.g. numpy's "TypeError: expected a
sequence of integers". The watch notes the signal itself; the engine then reports the launch as
interrupted (`LaunchInterrupted`, arrays unchanged) instead of blaming the kernel. While the
engine turns an interrupt into that error, the watch holds further Ctrl-C (`held`), so that a
second press cannot cut the report short into a bare KeyboardInterrupt.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any


class InterruptWatch:
    """While entered (in the main thread), notes every SIGINT before the handler in place handles it."""

    def __init__(self) -> None:
        self.seen = False
        self._holding = False
        self._previous: Any = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Ctrl-C noted but not raised while entered (the launch is already ending as interrupted)."""
        holding, self._holding = self._holding, True
        try:
            yield
        finally:
            self._holding = holding

    def __enter__(self) -> InterruptWatch:
        self.seen = False
        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach only the main thread
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):
            return self  # Ctrl-C is ignored, or kills the process: nothing to report
        self._previous = previous

        def noted(signum: int, frame: FrameType | None) -> Any:
            self.seen = True
            if self._holding:
                return None
            return previous(signum, frame)

        signal.signal(signal.SIGINT, noted)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
