"""What "fails the same way" means: the kind of a finding, where it is, and what it names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kernel_nb.trace import LAUNCH_ERROR, Finding, Launch

# what `keep` may be: a finding kind, a finding of the launch, or a test of a launch
Keep = str | Finding | Callable[[Launch], bool] | None
# `keep` for a launch compared with its GPU run (`%%tkernel compare`): a buffer out of tolerance
MISMATCH = "gpu_mismatch"


@dataclass(frozen=True)
class Failure:
    """A failure to keep while the launch shrinks.

    Attributes:
        kind: the finding's kind (`LAUNCH_ERROR` for an error that stopped the launch).
        file, line: where in the kernel's source (or a helper's).
        error: for a launch error, the error's class ("KernelMemoryError").
        arg: the argument the finding names, where it names one.
        test: for a failure given as a function of the launch, that function.
    """

    kind: str
    file: str | None = None
    line: int | None = None
    error: str | None = None
    arg: str | None = None
    test: Callable[[Launch], bool] | None = None

    @classmethod
    def of(cls, launch: Launch, keep: Keep = None) -> Failure:
        """The failure of `launch` to keep: by default its error (the launch's, else the first
        finding of severity error), else its first finding; a kind: its first finding of that
        kind; a finding: that one; a function: whatever launch it returns True for.

        Raises:
            ValueError: the launch has no such finding (it does not fail).
        """
        if keep == MISMATCH:
            found = _mismatch(launch, None)
            if found is None:
                raise ValueError(
                    f"{launch.kernel}: launch {launch.index} has no buffer out of tolerance against its GPU "
                    "run: keep='gpu_mismatch' shrinks a launch of a compare session (%%tkernel compare) "
                    "that mismatched"
                )
            return cls(kind=MISMATCH, arg=found.arg)
        if callable(keep) and not isinstance(keep, Finding):
            if not keep(launch):
                raise ValueError(f"{launch.kernel}: the launch does not fail by the test given to keep")
            return cls(kind="test", test=keep)
        finding = _chosen(launch, keep)
        if finding is None:
            what = "no finding" if keep is None else f"no finding of kind {keep!r}"
            raise ValueError(f"{launch.kernel}: launch {launch.index} has {what}: there is nothing to keep")
        return cls(finding.kind, finding.file, finding.line, _error_class(finding), finding.arg)

    def found_in(self, launch: Launch) -> Finding | None:
        """The finding of `launch` that is this failure (None: it does not fail this way); for a
        failure given as a test, the launch's first finding, or a finding that says the test held."""
        if self.test is not None:
            if not self.test(launch):
                return None
            return launch.findings[0] if launch.findings else _held(launch)
        if self.kind == MISMATCH:
            # an interpreted run that stopped (an access out of bounds a smaller size made) fails
            # another way, whatever its GPU run gave: the GPU read memory the kernel has no right to
            return _mismatch(launch, self.arg) if launch.status == "ok" else None
        for finding in launch.findings:
            if (
                finding.kind == self.kind
                and finding.line == self.line
                and finding.file == self.file
                and _error_class(finding) == self.error
                and (self.arg is None or finding.arg == self.arg)
            ):
                return finding
        return None

    def describe(self) -> str:
        if self.test is not None:
            return f"the test {getattr(self.test, '__name__', 'given')} holds"
        if self.kind == MISMATCH:
            return f"a mismatch against the GPU in {self.arg}"
        what = self.error or self.kind
        where = f" at line {self.line}" if self.line is not None else ""
        return f"{what}{where}" + (f" on {self.arg}" if self.arg else "")


def _chosen(launch: Launch, keep: str | Finding | None) -> Finding | None:
    if isinstance(keep, Finding):
        return keep
    if isinstance(keep, str):
        return next((f for f in launch.findings if f.kind == keep), None)
    errors = [f for f in launch.findings if f.kind == LAUNCH_ERROR or f.severity == "error"]
    return errors[0] if errors else (launch.findings[0] if launch.findings else None)


def _error_class(finding: Finding) -> str | None:
    """A launch error's class, the first word of its message ("KernelMemoryError: ...")."""
    if finding.kind != LAUNCH_ERROR:
        return None
    head = finding.message.split(":", 1)[0]
    return head if head.isidentifier() else None


def _mismatch(launch: Launch, arg: str | None) -> Finding | None:
    """The launch's first buffer out of tolerance against its GPU run (`arg`'s, where given), as a
    finding naming its mismatching elements and the program that last wrote the first of them."""
    comparison = launch.comparison
    if comparison is None:
        return None
    for buffer in comparison.mismatching:
        if arg is None or buffer.arg == arg:
            writer = next((pid for pid, _ in buffer.writers if pid is not None), None)
            return Finding(
                kind=MISMATCH,
                severity="error",
                message=f"{launch.kernel}: the GPU's {buffer.line()}",
                launch=launch.index,
                pid=writer,
                arg=buffer.arg,
                elements=buffer.positions,
            )
    return None


def _held(launch: Launch) -> Finding:
    return Finding(
        kind="test",
        severity="error",
        message=f"{launch.kernel}: the test given to keep holds",
        launch=launch.index,
    )
