"""Ctrl-C during a launch, remembered, so that it ends the launch as interrupted whatever it lands in.

A KeyboardInterrupt raised while numpy converts a shape (or inside any library code that turns
errors into its own) comes out as that library's error, e.g. numpy's "TypeError: expected a
sequence of integers". The watch notes the signal itself; the engine then reports the launch as
interrupted (`LaunchInterrupted`, arrays unchanged) instead of blaming the kernel.

Once a launch is ending as interrupted, further presses are noted but not raised (`hold_rest`): a
second press must not cut short the undoing of the launch's writes, nor turn the report into a bare
KeyboardInterrupt. People press Ctrl-C (or Jupyter's interrupt) several times in a row, so an
interrupted launch returns only once `SETTLE_S` have passed without a press: a burst of presses
ends the launch once, and the caller's own handler is back in place for the next one.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType, TracebackType
from typing import Any

# Presses this close together are one interrupt; an interrupted launch waits this long after the
# last one before it returns (at most SETTLE_MAX_S after it began to wait).
SETTLE_S = 0.3
SETTLE_MAX_S = 1.0


class InterruptWatch:
    """While entered (in the main thread), notes every SIGINT before the handler in place handles it."""

    def __init__(self) -> None:
        self.seen = False
        self._holding = False
        self._pressed = 0.0  # time.monotonic() of the last press
        self._previous: Any = None

    def hold_rest(self) -> None:
        """Ctrl-C noted but not raised until the watch exits (the launch is ending as interrupted)."""
        self._holding = True

    def __enter__(self) -> InterruptWatch:
        self.seen, self._holding = False, False
        if threading.current_thread() is not threading.main_thread():
            return self  # signals reach only the main thread
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):
            return self  # Ctrl-C is ignored, or kills the process: nothing to report
        self._previous = previous

        def noted(signum: int, frame: FrameType | None) -> Any:
            self.seen, self._pressed = True, time.monotonic()
            if self._holding:
                return None
            return previous(signum, frame)

        signal.signal(signal.SIGINT, noted)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._previous is None:
            return
        if isinstance(exc, KeyboardInterrupt) and self.seen:
            self._holding = True
            self._settle()
        signal.signal(signal.SIGINT, self._previous)
        self._previous, self._holding = None, False

    def _settle(self) -> None:
        """Wait, holding Ctrl-C, until SETTLE_S have passed since the last press."""
        give_up = time.monotonic() + SETTLE_MAX_S
        while True:
            now = time.monotonic()
            wait = min(self._pressed + SETTLE_S, give_up) - now
            if wait <= 0:
                return
            time.sleep(wait)  # a press wakes it; the loop measures again from that press
