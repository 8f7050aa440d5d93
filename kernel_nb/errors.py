"""Errors raised by interpreted launches. Each names the kernel, the line and the program id.

They are the classes Triton raises for the same failure, so code written against Triton catches
them: every one is an `InterpreterError` (what TRITON_INTERPRET=1 raises, a `triton.TritonError`),
and an error the compiler would have reported while compiling the kernel (a shape or type the
language rejects, a name the kernel does not define) is also a `triton.CompilationError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from triton import CompilationError
from triton.runtime import InterpreterError

if TYPE_CHECKING:
    from kernel_nb.trace import Launch, Pid


class KernelError(InterpreterError):
    """An error inside an interpreted kernel.

    Attributes:
        kernel: the kernel's name.
        file, line: where in the source (the kernel's or a helper's).
        pid: the program id that failed.
        launch: what the launch recorded before it failed (the user's arrays are unchanged);
            its first finding is this error (kind "launch_error").
        source_line: the text of the failing line.
        iteration: the loop iteration the program was in (indices of the enclosing loops,
            outermost first; () outside loops), None where not known.
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
        iteration: tuple[int, ...] | None = None,
    ) -> None:
        Exception.__init__(self, message)
        self.message = self.error_message = message
        self.kernel = kernel
        self.file = file
        self.line = line
        self.pid = pid
        self.launch = launch
        self.source_line = source_line
        self.iteration = iteration

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (type(self), self.message, self.kernel, self.file, self.line, self.pid, self.iteration),
        )

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of the full traceback: the kernel line, not kernel_nb's frames."""
        lines = [f"{type(self).__name__}: {self.message}"]
        if self.file and self.line:
            lines.append(f'  File "{self.file}", line {self.line}, in {self.kernel}')
            if self.source_line:
                lines.append(f"    {self.source_line.strip()}")
        # notes added on the way up (the magic's word on where the recording is) come last, as
        # Python's own traceback shows them
        lines.extend(getattr(self, "__notes__", []))
        return lines


class KernelCompileError(KernelError, CompilationError):
    """An error Triton's compiler would have raised while compiling the kernel: the language refused
    an operation (shapes, types, a failed static_assert), or the kernel's Python did not run."""

    src = None  # CompilationError's source excerpt and AST node: the message carries the location
    node = None


class KernelMemoryError(KernelError, IndexError):
    """A load, store or atomic outside every argument buffer; it was refused, nothing was accessed."""


class KernelAssertionError(KernelError, AssertionError):
    """A tl.device_assert (or tl.static_assert) failed."""


class KernelDeadlockError(KernelError):
    """The programs left in a launch all wait for memory that none of them will write."""


class LaunchArgumentError(KernelError, TypeError, ValueError):
    """An argument, a keyword or the grid that the launch cannot take; nothing ran and the
    caller's arrays are untouched. A TypeError and a ValueError, as Triton's launcher raises for
    the same mistakes (a missing argument, a grid of floats), and a KernelError that names the kernel."""


class LaunchInterrupted(KeyboardInterrupt):
    """The launch was interrupted; the user's arrays are as they were before it. (A Ctrl-C while
    a finished launch writes its results back is held until they are all written: that error says
    the arrays hold the results.)

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
    cls: type[KernelError],
    message: str,
    kernel: str,
    file: Any,
    line: Any,
    pid: Any,
    iteration: Any = None,  # absent from errors pickled before it existed
) -> KernelError:
    return cls(message, kernel=kernel, file=file, line=line, pid=pid, iteration=iteration)
