"""Where a launch with an fp64 shadow loses precision that reaches its outputs.

An output buffer whose stored values are off from the shadow's reference by more than
`OUTPUT_ULPS` units in the last place has lost precision worth telling. From each statement whose
values were stored there, the detector follows the error back to where it was made: a statement
whose own arithmetic (given the values it read) makes most of its error is an origin; one whose
error came in with its operands passes the search on to the operand that brought the most. Found
on the way:

- an origin: "line 37: `g = tl.dot(x, y)` runs as tf32 ... loses up to 13614 ulps by itself";
- a cancellation: a statement whose values are far smaller than its operands', so that the
  operands' absolute errors become a large relative one ("`d = na + nb - 2 * g` cancels");
- an accumulation in bf16/fp16 across loop iterations that loses more than half of its type's
  mantissa bits.

Errors are read from each statement's largest, kept as the launch runs (`Launch.errors`), so
programs past the capture budget count as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kernel_nb import numerics
from kernel_nb.trace import Finding, Launch, Statement, StatementErrors
from kernel_nb.trace.statement_errors import finite_max, finite_min

# an output element off by more than this many ulps of its type, and by more than this many times
# its type's epsilon times the largest value of the buffer, has lost precision worth telling
OUTPUT_ULPS = 64.0
ORIGIN_SHARE = 0.5  # a statement whose own error is at least this share of its error made it
CANCELS = 2.0**6  # operands this many times larger than the result: it cancelled (6 bits lost)


@dataclass
class StoredOutput:
    """What a launch's float stores left in one buffer, beside the shadow's reference.

    Attributes:
        dtype: the stored values' type (the pointer's element type).
        stored: per element, whether a float store wrote it.
        statements: the statements whose values were stored (as recorded, or cast to the buffer's
            type on the way).
    """

    dtype: str
    stored: np.ndarray
    statements: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class _Reach:
    """The worst element of an output: its buffer, its true size, and a phrase that tells it."""

    output: str
    true: float
    text: str


def findings(
    launch: Launch,
    outputs: dict[str, StoredOutput],
    operands: dict[int, tuple[str, ...]],
    errors: dict[int, StatementErrors],
    results: Callable[[str], np.ndarray],
) -> list[Finding]:
    """The precision findings of a launch run with a shadow.

    Args:
        launch: the launch (its statements, records and references).
        outputs: per buffer the launch stored floats into, what it stored.
        operands: per statement id, the names its expression reads.
        errors: per float statement id, its largest values and errors.
        results: a buffer argument's elements after the launch, by name.
    """
    accumulating = dict(_accumulations(launch, errors, operands))
    found: list[Finding] = []
    reported: set[int] = set()
    imprecise = False
    for name, output in outputs.items():
        reference = launch.references.get(name)
        if reference is None or not output.stored.any():
            continue
        every = bool(output.stored.all())
        values = np.asarray(results(name)).reshape(-1)
        if values.size != reference.size:
            continue
        with np.errstate(all="ignore"):
            absolute = np.subtract(values, reference, dtype=np.float64)
            np.abs(absolute, out=absolute)
        if not every:
            absolute[~output.stored] = 0.0  # NaN there: nothing was stored
        # lost against the buffer's own scale first: a value that is tiny among large ones (the
        # mean of centred data) may be off by many of its own ulps and still be as exact as the data
        seen = reference if every else reference[output.stored]
        scale = max(finite_max(seen)[0], -finite_min(seen)) or 1.0
        candidates = np.flatnonzero(absolute > OUTPUT_ULPS * numerics.epsilon(output.dtype) * scale)
        if not candidates.size:
            continue
        with np.errstate(all="ignore"):
            ulps = absolute[candidates] / numerics.ulp(reference[candidates], output.dtype)
        significant = candidates[np.isfinite(ulps) & (ulps > OUTPUT_ULPS)]
        if not significant.size:
            continue
        ulps = np.where(np.isfinite(ulps), ulps, 0.0)
        worst = int(candidates[np.argmax(ulps)])  # told by its relative error
        worst_ulps = float(ulps.max())
        imprecise = True
        true = abs(float(reference[worst]))
        reach = _Reach(
            name,
            true,
            f"{abs(float(absolute[worst])):.3g} absolute error on values of "
            f"{true:.2g} ({worst_ulps:.3g} ulps of {output.dtype}) in `{name}`",
        )
        # a value stored without a name of its own (`tl.store(p, tl.sum(x))`): the statements
        # whose own arithmetic loses the most stand in for it
        floor = OUTPUT_ULPS * numerics.epsilon(output.dtype)
        stored = sorted(output.statements) or sorted(
            stmt for stmt, e in errors.items() if e.relative_own() > floor
        )
        for stmt in stored:
            for finding_stmt, finding in _trace_back(launch, errors, operands, stmt, reach):
                if finding_stmt not in reported:
                    reported.add(finding_stmt)
                    # an accumulation that loses half its bits says so rather than what one step loses
                    finding = accumulating.pop(finding_stmt, finding)
                    finding.elements = significant[:64]
                    found.append(finding)
    if imprecise:
        found += [f for stmt, f in accumulating.items() if stmt not in reported]
    return found


def _trace_back(
    launch: Launch,
    errors: dict[int, StatementErrors],
    operands: dict[int, tuple[str, ...]],
    stmt: int,
    reach: _Reach,
) -> list[tuple[int, Finding]]:
    """Follow the error of stored statement `stmt` back to where it was made."""
    out: list[tuple[int, Finding]] = []
    seen: set[int] = set()
    current = stmt
    while current in errors and current not in seen:
        seen.add(current)
        e = errors[current]
        sources = _operand_statements(launch, operands, current)
        shares = _shares(errors, sources)
        if e.own >= ORIGIN_SHARE * e.ulps or not shares:
            out.append((current, _origin(launch, current, e, reach, stored=current == stmt)))
            break
        top, share = max(shares.items(), key=lambda item: item[1])
        operand_magnitude = max(errors[s].magnitude for s in sources if s in errors)
        if current == stmt and operand_magnitude >= CANCELS * reach.true:
            out.append((current, _cancellation(launch, errors, current, top, share, reach)))
        current = top
    return out


def _shares(errors: dict[int, StatementErrors], sources: list[int]) -> dict[int, float]:
    """Each operand statement's share of the absolute error the operands bring."""
    absolute = {s: errors[s].absolute() for s in sources if s in errors}
    total = sum(absolute.values())
    return {s: a / total for s, a in absolute.items()} if total > 0 else {}


def _operand_statements(launch: Launch, operands: dict[int, tuple[str, ...]], stmt: int) -> list[int]:
    """The statements that assigned the names statement `stmt` reads: for each name, the last
    assignment above it in its function, else the last below it (a value a loop carries)."""
    me = launch.statements[stmt]
    out = []
    for name in operands.get(stmt, ()):
        candidates = [
            s
            for s in launch.statements
            if s.name == name and s.function == me.function and s.of is None and s.id != stmt
        ]
        above = [s for s in candidates if s.line <= me.line]
        chosen = max(above or candidates, key=lambda s: (s.line, s.id), default=None)
        if chosen is not None:
            out.append(chosen.id)
    return out


def _source(launch: Launch, statement: Statement) -> str:
    source = launch.sources.get(statement.function)
    if source is None:
        return statement.name
    lines = source.text.splitlines()
    at = statement.line - source.first_line
    return lines[at].strip() if 0 <= at < len(lines) else statement.name


def _finding(launch: Launch, stmt: int, message: str, output: str) -> Finding:
    statement = launch.statements[stmt]
    return Finding(
        kind="precision_loss",
        severity="warning",
        message=message,
        launch=launch.index,
        file=statement.file,
        line=statement.line,
        arg=output,
    )


def _origin(launch: Launch, stmt: int, e: StatementErrors, reach: _Reach, *, stored: bool) -> Finding:
    statement = launch.statements[stmt]
    text = _source(launch, statement)
    head = f"{launch.kernel}: line {statement.line}: `{text}`"
    tail = f"; it reaches `{reach.output}`" + (f": {reach.text}" if stored else "")
    if e.tf32:
        return _finding(
            launch,
            stmt,
            f"{head} runs as tf32 (the default for fp32 operands of tl.dot) and loses up to {e.own:.3g} "
            f'ulps of fp32 by itself{tail}; pass input_precision="ieee" (or "tf32x3") to that dot',
            reach.output,
        )
    return _finding(
        launch,
        stmt,
        f"{head} loses up to {e.own:.3g} ulps of {e.dtype} (about {e.relative_own():.2g} relative) by "
        f"its own arithmetic{tail}",
        reach.output,
    )


def _cancellation(
    launch: Launch, errors: dict[int, StatementErrors], stmt: int, top: int, share: float, reach: _Reach
) -> Finding:
    statement, source = launch.statements[stmt], launch.statements[top]
    dot = errors[top].tf32
    what = f"`{source.name}` (line {source.line}" + (", a tf32 dot)" if dot else ")")
    fix = (
        'use input_precision="ieee" on that dot, or compute the differences first (center the values)'
        if dot
        else f"compute the differences first (center the values), or compute `{source.name}` more precisely"
    )
    return _finding(
        launch,
        stmt,
        f"{launch.kernel}: line {statement.line}: `{_source(launch, statement)}` cancels: {reach.text}; "
        f"{what} brings {share:.0%} of it: {fix}",
        reach.output,
    )


def _accumulations(
    launch: Launch, errors: dict[int, StatementErrors], operands: dict[int, tuple[str, ...]]
) -> list[tuple[int, Finding]]:
    """bf16/fp16 values a loop accumulates that lose more than half of their mantissa bits."""
    out = []
    for stmt, e in errors.items():
        statement = launch.statements[stmt]
        if e.dtype not in ("bf16", "fp16") or not e.loop:
            continue
        if statement.kind != "augassign" and statement.name not in operands.get(stmt, ()):
            continue
        half = 2.0 ** (-np.log2(numerics.epsilon(e.dtype)) / 2)
        if e.ulps <= half:
            continue
        relative = e.ulps * numerics.epsilon(e.dtype)
        out.append(
            (
                stmt,
                _finding(
                    launch,
                    stmt,
                    f"{launch.kernel}: line {statement.line}: `{_source(launch, statement)}` accumulates in "
                    f"{e.dtype} across the loop and loses more than half its bits: up to {e.ulps:.3g} ulps "
                    f"(about {relative:.2g} relative); accumulate in fp32 and convert once after the loop",
                    "",
                ),
            )
        )
    return out
