"""The public records of a launch: statements, recorded values, memory accesses, findings.

Plain data over numpy arrays; the batched strategy's columnar storage of the same records is in
`columns.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Pid = tuple[int, int, int]
Severity = Literal["error", "warning", "info"]
# the kind of the finding a failed launch puts first: its error
LAUNCH_ERROR = "launch_error"


def as_pid(pid: int | tuple[int, ...]) -> Pid:
    """A program id as three axes: 3 → (3, 0, 0), (1, 2) → (1, 2, 0)."""
    if isinstance(pid, (int, np.integer)):
        return (int(pid), 0, 0)
    padded = tuple(int(p) for p in pid) + (0,) * (3 - len(pid))
    return (padded[0], padded[1], padded[2])


# the statements an fp64 shadow run records after each float statement, in order: the fp64 value,
# the error of the real value against it and the error of the statement's own arithmetic, both in
# units in the last place of the real type (see kernel_nb.engine.shadow)
COMPANION_KINDS = ("shadow", "error", "own_error")


@dataclass(frozen=True)
class Statement:
    """A recorded place in the kernel or one of its helpers.

    Attributes:
        id: index into `Launch.statements`.
        file: source file of the function.
        line: line in that file.
        name: the variable assigned (the loop variable for a `for` header).
        function: the function's name (the kernel or a @triton.jit helper).
        kind: "assign", "augassign" or "loop"; for an fp64 shadow run's companions of a
            statement (see COMPANION_KINDS), "shadow", "error" or "own_error".
        of: for a companion, the id of the statement it goes with (None otherwise).
    """

    id: int
    file: str
    line: int
    name: str
    function: str
    kind: str
    of: int | None = None


@dataclass(frozen=True)
class Summary:
    """Statistics of one recorded value, kept for every program."""

    min: float
    max: float
    mean: float
    nan: int
    inf: int
    size: int

    @staticmethod
    def of(value: np.ndarray) -> Summary:
        """Summarise an array (any numeric dtype, ml_dtypes included)."""
        size = int(value.size)
        if size == 0:
            return Summary(np.nan, np.nan, np.nan, 0, 0, 0)
        if value.dtype.kind == "b":
            return Summary(float(value.all()), float(value.any()), np.count_nonzero(value) / size, 0, 0, size)
        if value.dtype.kind in "iu":
            lo, hi = int(value.min()), int(value.max())
            return Summary(float(lo), float(hi), float(value.mean(dtype=np.float64)), 0, 0, size)
        as_float = value.astype(np.float64) if value.dtype.kind != "f" else value
        nan_mask = np.isnan(as_float)
        inf_mask = np.isinf(as_float)
        nan, inf = int(nan_mask.sum()), int(inf_mask.sum())
        if not (nan or inf):
            mean = as_float.mean(dtype=np.float64)
            return Summary(float(as_float.min()), float(as_float.max()), float(mean), 0, 0, size)
        finite = ~(nan_mask | inf_mask)
        count = size - nan - inf
        if count == 0:
            return Summary(np.nan, np.nan, np.nan, nan, inf, size)
        # as SummaryColumns computes it for many rows at once: the finite lanes, others as zeros
        total = np.where(finite, as_float, 0).sum(dtype=np.float64)
        return Summary(
            float(as_float.min(where=finite, initial=np.inf)),
            float(as_float.max(where=finite, initial=-np.inf)),
            float(total / count),
            nan,
            inf,
            size,
        )


@dataclass
class Record:
    """The value one statement produced in one program, at one loop iteration.

    Attributes:
        stmt: the `Statement` id.
        seq: position in the program's execution order (records and events share the counter).
        call_path: the @triton.jit helpers on the stack, outermost first, as "name:line" of each call.
        iteration: loop iteration indices of the enclosing loops, outermost first.
        dtype: Triton's name of the element type ("fp32", "i32", "pointer<fp16>", ...).
        shape: the value's shape (() for a scalar).
        summary: statistics, always kept.
        value: a copy of the value, or None when the program's values were not kept.
            For pointers: element offsets into `pointer_arg`.
        pointer_arg: for pointer values, the argument the first lane points into.
    """

    stmt: int
    seq: int
    call_path: tuple[str, ...]
    iteration: tuple[int, ...]
    dtype: str
    shape: tuple[int, ...]
    summary: Summary
    value: np.ndarray | None = None
    pointer_arg: str | None = None


@dataclass
class MemoryEvent:
    """One tl.load, tl.store or atomic of one program.

    Attributes:
        kind: "load", "store", "atomic_<op>" (add, fadd, max, ...) or "atomic_cas".
        seq: position in the program's execution order.
        file, line: where in the source.
        arg: the argument the active lanes access (None when no lane was active).
        indices: element offsets into `arg` for every lane (masked lanes included), or None when
            the program's values were not kept.
        mask: which lanes were active (None when not kept).
        values: loaded values, or for stores and atomics the element values after the access.
        before: for stores and atomics, the element values before the access.
        active: number of active lanes.
        lo, hi: the range [lo, hi) of element offsets the active lanes touched.
        lanes: number of lanes, masked ones included (0: not known), so that a program whose
            values were not kept still says whether a mask left lanes out.
    """

    kind: str
    seq: int
    file: str
    line: int
    arg: str | None
    active: int
    lo: int
    hi: int
    indices: np.ndarray | None = None
    mask: np.ndarray | None = None
    values: np.ndarray | None = None
    before: np.ndarray | None = None
    lanes: int = 0


@dataclass
class ArgumentInfo:
    """A kernel argument as the launch saw it."""

    name: str
    kind: Literal["buffer", "scalar", "constexpr", "tuple", "none", "other"]
    dtype: str = ""
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    value: Any = None


@dataclass
class Finding:
    """Something a detector found.

    Attributes:
        kind: short identifier ("out_of_bounds", "nan_origin", ...).
        severity: "error", "warning" or "info".
        message: a sentence a person understands, naming kernel, line, program and argument.
        launch: index of the launch in its trace.
        pid: the program id, when the finding belongs to one program.
        file, line: where in the source.
        arg: the argument involved.
        elements: element offsets or lanes involved.
        iteration: the loop iteration (indices of the enclosing loops, outermost first, as in
            `Record.iteration`) where the finding knows it; None where it does not.
    """

    kind: str
    severity: Severity
    message: str
    launch: int = 0
    pid: Pid | None = None
    file: str | None = None
    line: int | None = None
    arg: str | None = None
    elements: np.ndarray | None = None
    # a class default too: findings saved before the field existed load with None
    iteration: tuple[int, ...] | None = None


@dataclass
class SourceInfo:
    """Source of one function of the launch (the kernel or a helper)."""

    function: str
    file: str
    first_line: int
    text: str


@dataclass
class Artifacts:
    """What Triton compiled for a launch: the text of each stage.

    Attributes:
        target: the compilation target, e.g. "cuda:90".
        stages: stage name ("ttir", "ttgir", "llir", "ptx", "sass") → text, in compilation order.
        missing: stage name → why it is absent (e.g. no cuobjdump for "sass").
        metadata: a few facts of the compiled kernel (num_warps, num_stages, shared memory bytes).
        compiled_for_launch: True when these are the launch's own GPU compile; False when the kernel was
            compiled for `target` only to show them (no GPU involved).
    """

    target: str
    stages: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    compiled_for_launch: bool = True
