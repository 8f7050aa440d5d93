"""Errors raised by interpreted launches. Each names the kernel, the line and the program id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernel_nb.trace import Launch, Pid


class KernelError(Exception):
    """An error inside an interpreted kernel.

    Attributes:
        kernel: the kernel's name.
        file, line: where in the source (the kernel's or a helper's).
        pid: the program id that failed.
        launch: what the launch recorded before it failed (the user's arrays are unchanged).
        source_line: the text of the failing line.
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: str,
        file: str | None = None,
        line: int | None = None,
        pid: Pid | None = None,
        launch: Launch | None = None,
        source_line: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kernel = kernel
        self.file = file
        self.line = line
        self.pid = pid
        self.launch = launch
        self.source_line = source_line

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.kernel, self.file, self.line, self.pid))

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of the full traceback: the kernel line, not kernel_nb's frames."""
        lines = [f"{type(self).__name__}: {self.message}"]
        if self.file and self.line:
            lines.append(f'  File "{self.file}", line {self.line}, in {self.kernel}')
            if self.source_line:
                lines.append(f"    {self.source_line.strip()}")
        return lines


class KernelMemoryError(KernelError, IndexError):
    """A load, store or atomic outside every argument buffer; it was refused, nothing was accessed."""


class KernelAssertionError(KernelError, AssertionError):
    """A tl.device_assert (or tl.static_assert) failed."""


class LaunchInterrupted(KeyboardInterrupt):
    """The launch was interrupted; the user's arrays are as they were before it.

    Attributes:
        kernel: the kernel's name.
        pid: the program running when the interrupt arrived.
        launch: what the launch recorded before the interrupt.
    """

    def __init__(self, message: str, *, kernel: str, pid: Pid | None, launch: Launch | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kernel = kernel
        self.pid = pid
        self.launch = launch


def _rebuild(
    cls: type[KernelError], message: str, kernel: str, file: Any, line: Any, pid: Any
) -> KernelError:
    return cls(message, kernel=kernel, file=file, line=line, pid=pid)
