"""What a fuzz case is and what must come of it.

A `Case` is one launch written as Python expressions (evaluated in a child by `build.namespace()`)
with what must come of it: `expect` is "ok" (the launch succeeds and gives `reference`), "error"
(it fails with a clear error naming one of `culprits`), "either" (one or the other), "interrupt"
(it ends as LaunchInterrupted), or "interrupt_or_ok" / "interrupt_or_error". Each input a case is
made of contributes an `Outcome`; a `Draft` is a case being put together from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """One launch `kernel[grid](*args, **kwargs)` under `kernel_nb.interpret(Options(**options))`.

    Attributes:
        family: which pool it was drawn from.
        kernel: the kernel's name in tests/fuzz/kernels.py (and in the error messages).
        args, kwargs: (parameter, expression) pairs; an expression may use the values before it by name.
        grid: expression.
        options: keyword arguments of `kernel_nb.Options`, as expressions.
        expect, culprits: see the module docstring; an error must name one of the culprits (the
            kernel alone when there are none).
        reference: expression giving {parameter: the array it must hold after a successful launch};
            `S` holds copies of the arrays as they were before.
        stock: run it under stock TRITON_INTERPRET=1 too; a successful launch must match stock's.
        interrupts: seconds after the launch starts at which SIGINT arrives.
        memory: peak memory is checked against the budget and the arguments.
        timeout: seconds before the child is killed.
    """

    id: str
    family: str
    kernel: str
    args: tuple[tuple[str, str], ...]
    grid: str
    expect: str
    kwargs: tuple[tuple[str, str], ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    culprits: tuple[str, ...] = ()
    reference: str | None = None
    stock: bool = False
    interrupts: tuple[float, ...] = ()
    memory: bool = False
    timeout: float = 60.0
    notes: str = ""

    @property
    def title(self) -> str:
        """The launch as a user would type it."""
        call = ", ".join([e for _, e in self.args] + [f"{k}={e}" for k, e in self.kwargs])
        options = ", ".join(f"{k}={e}" for k, e in self.options)
        text = f"{self.kernel}[{self.grid}]({call})"
        if options:
            text += f" with Options({options})"
        if self.interrupts:
            text += f" interrupted at {self.interrupts} s"
        return text + (f" ({self.notes})" if self.notes else "")

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "kernel": self.kernel,
            "args": list(self.args),
            "kwargs": list(self.kwargs),
            "grid": self.grid,
            "options": list(self.options),
            "reference": self.reference,
            "interrupts": list(self.interrupts),
            "timeout": self.timeout,
        }


@dataclass(frozen=True)
class Outcome:
    """What one input contributes to a case's expectation."""

    expect: str = "ok"
    culprits: tuple[str, ...] = ()
    stock: bool = True

    def __and__(self, other: Outcome) -> Outcome:
        order = {"ok": 0, "either": 1, "error": 2}
        worst = max(self.expect, other.expect, key=order.__getitem__)
        # with an error certain, an input that may be refused may be the one the error names
        accepted = (worst, "either") if worst == "error" else (worst,)
        failing = [o for o in (self, other) if o.expect in accepted]
        if worst == "error" and any(not o.culprits for o in failing if o.expect == "error"):
            # either fault may be the one reported, and one of them (a call that does not bind, a
            # kernel that fails) is described by the kernel's name alone
            return Outcome(worst, (), self.stock and other.stock)
        culprits = tuple(dict.fromkeys(c for o in failing for c in o.culprits))
        return Outcome(worst, culprits, self.stock and other.stock)


OK = Outcome()


def fails(*culprits: str) -> Outcome:
    return Outcome("error", culprits, stock=False)


def either(*culprits: str, stock: bool = True) -> Outcome:
    return Outcome("either", culprits, stock)


@dataclass
class Draft:
    """A case being put together."""

    family: str
    kernel: str
    args: list[tuple[str, str]]
    grid: str
    outcome: Outcome = field(default_factory=Outcome)
    kwargs: list[tuple[str, str]] = field(default_factory=list)
    options: list[tuple[str, str]] = field(default_factory=list)
    reference: str | None = None
    interrupts: tuple[float, ...] = ()
    memory: bool = False
    timeout: float = 60.0
    notes: str = ""
    expect: str | None = None  # overrides the outcome's ("interrupt", ...)

    def case(self, index: int) -> Case:
        return Case(
            id=f"{index:03d}-{self.family}",
            family=self.family,
            kernel=self.kernel,
            args=tuple(self.args),
            kwargs=tuple(self.kwargs),
            grid=self.grid,
            options=tuple(self.options),
            expect=self.expect or self.outcome.expect,
            culprits=self.outcome.culprits,
            reference=self.reference,
            stock=self.outcome.stock and (self.expect or self.outcome.expect) in ("ok", "either"),
            interrupts=self.interrupts,
            memory=self.memory,
            timeout=self.timeout,
            notes=self.notes,
        )
