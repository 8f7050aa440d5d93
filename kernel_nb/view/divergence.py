"""The statement-by-statement CPU / GPU comparison of chosen programs, as viewer metadata.

Each row carries the statement, its status and a few differing lanes with both sides' values as
text (NaN and Inf included), so the table needs no further request; a program with more records
than `MAX_ROWS` keeps its first rows and every row that is not a match, up to the limit.
"""

from __future__ import annotations

import numpy as np

from kernel_nb.trace import Divergence, Launch, ProgramDivergence, StatementDiff
from kernel_nb.view import protocol as p
from kernel_nb.view.payloads import finite_or_none

MAX_ROWS = 2000
LANES = 4


def divergence_meta(launch: Launch) -> p.DivergenceMeta | None:
    divergence: Divergence | None = launch.divergence
    if divergence is None:
        return None
    first = divergence.first
    return {
        "report": divergence.report(),
        "error": divergence.error,
        "device": divergence.device,
        "tf32": divergence.tf32,
        "first": {"pid": list(first[0]), "seq": first[1].seq} if first is not None else None,
        "programs": [_program(program) for program in divergence.programs],
        "notes": list(divergence.notes),
    }


def _program(program: ProgramDivergence) -> p.ProgramDivergenceMeta:
    statements = program.statements
    if len(statements) > MAX_ROWS:
        different = [s for s in statements if s.status != "match"][: MAX_ROWS // 2]
        head = statements[: MAX_ROWS - len(different)]
        statements = sorted({s.seq: s for s in head + different}.values(), key=lambda s: s.seq)
    return {
        "pid": list(program.pid),
        "counts": program.counts(),
        "extra": program.extra,
        "overflow": program.overflow,
        "rows_total": len(program.statements),
        "rows": [_row(s) for s in statements],
    }


def _row(s: StatementDiff) -> p.StatementDiffMeta:
    lanes = [int(i) for i in s.lanes[:LANES]] if s.lanes.size else list(range(min(LANES, s.size)))
    cpu = np.asarray(s.cpu).reshape(-1) if s.cpu is not None else None
    gpu = np.asarray(s.gpu).reshape(-1) if s.gpu is not None else None
    return {
        "seq": s.seq,
        "stmt": s.stmt,
        "line": s.line,
        "name": s.name,
        "function": s.function,
        "call_path": list(s.call_path),
        "iteration": list(s.iteration),
        "dtype": s.dtype,
        "shape": list(s.shape),
        "status": s.status,
        "reason": s.reason,
        "size": s.size,
        "mismatches": s.mismatches,
        "max_abs": finite_or_none(s.max_abs),
        "lanes": lanes,
        "cpu": [_text(cpu[i]) for i in lanes] if cpu is not None and lanes else [],
        "gpu": [_text(gpu[i]) for i in lanes] if gpu is not None and lanes else [],
    }


def _text(x: object) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.7g}"  # type: ignore[arg-type]
