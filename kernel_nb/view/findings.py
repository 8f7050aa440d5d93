"""Where each finding takes the viewer: its program, the statement whose value is shown, and the
loop iteration; the viewer's metadata carries it, so a click needs no request (and works offline)."""

from __future__ import annotations

from kernel_nb.trace import LAUNCH_ERROR, Finding, Launch, Record, Trace
from kernel_nb.view import precision
from kernel_nb.view import protocol as p


def with_targets(meta: p.ViewerMeta, trace: Trace) -> p.ViewerMeta:
    """The viewer's metadata with each finding's loop iteration and target added."""
    for launch_meta, launch in zip(meta["launches"], trace):
        for finding_meta, finding in zip(launch_meta["findings"], launch.findings):
            finding_meta["iteration"] = None if finding.iteration is None else list(finding.iteration)
            finding_meta["target"] = target_of(launch, finding)
    return meta


def target_of(launch: Launch, finding: Finding) -> p.FindingTarget | None:
    """The view of a finding: its program, and the record of its line at its iteration (its last
    record there where the iteration is not known). A failed launch's error has no record on its
    line (the statement never finished): the failing program's last value in that iteration is
    shown, what it computed just before it failed (for a refused access, typically its pointer).

    Returns:
        The target; None for a finding of no single program (the view keeps its program).
    """
    if finding.pid is None:
        return None
    pid = list(finding.pid)
    wanted = finding.iteration
    program = launch.programs.get(finding.pid)
    # an aggregated program's records are not held (and replaying one costs a run): its line only;
    # a shadow run's companion records are shown with the record they follow, never on their own
    records: list[Record] = (
        [] if program is None else [r for r in program.records if not precision.is_companion(launch, r.stmt)]
    )
    on_line = {
        s.id
        for s in launch.statements
        if s.line == finding.line
        and (finding.file is None or s.file == finding.file)
        and not precision.is_companion(launch, s.id)
    }
    in_iteration = [r for r in records if wanted is None or r.iteration == wanted]
    chosen = [r for r in in_iteration if r.stmt in on_line]
    if not chosen and finding.kind == LAUNCH_ERROR:
        chosen = in_iteration
    if not chosen:
        chosen = [r for r in records if r.stmt in on_line]
    if chosen:
        return {"pid": pid, "stmt": chosen[-1].stmt, "iteration": list(chosen[-1].iteration)}
    stmt = min(on_line) if on_line else -1
    return {"pid": pid, "stmt": stmt, "iteration": list(wanted or ())}
