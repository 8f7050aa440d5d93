"""`Progress`: the `Options.progress` callback the magic gives a cell, a bar only for slow launches."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

# A launch that ends sooner than this never shows a progress bar.
PROGRESS_DELAY_S = 1.0


class _Bar(Protocol):
    n: float

    def update(self, n: float) -> object: ...

    def close(self) -> None: ...


def _tqdm_bar(total: int) -> _Bar:
    # Imported here: tqdm.auto picks the widget or the text bar, and most cells never need one.
    from tqdm.auto import tqdm

    bar: _Bar = tqdm(total=total, unit="program", desc="interpreting", leave=False)
    return bar


class Progress:
    """The `Options.progress` callback of a cell: a bar for launches that run longer than `delay` seconds.

    Quick launches, the common case, never create a bar, so their output stays clean.
    """

    def __init__(
        self,
        delay: float = PROGRESS_DELAY_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        new_bar: Callable[[int], _Bar] = _tqdm_bar,
    ) -> None:
        self._delay = delay
        self._clock = clock
        self._new_bar = new_bar
        self._bar: _Bar | None = None
        self._start: float | None = None
        self._done = 0
        self._total = 0

    def __call__(self, done: int, total: int) -> None:
        if self._start is None or done < self._done or total != self._total:
            self.close()  # a new launch
            self._start = self._clock()
            self._total = total
        self._done = done
        if self._bar is None:
            if self._clock() - self._start < self._delay:
                return
            self._bar = self._new_bar(total)
        self._bar.update(done - self._bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        """Remove the bar (at the end of a launch or of the cell)."""
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._start = None
        self._done = 0
        self._total = 0
