"""Grid axes against the program ids the kernel reads: an axis of size 1 that the kernel reads
while parts of an output stay unwritten (every program sees 0 there: a grid given one axis too
few), and an axis of more than one program that the kernel never reads (the programs along it
write the same elements: the work is done that many times).

Which axes the kernel reads is read off the source of the kernel and of the helpers it ran
(`launch.sources`) rather than recorded at run time: `tl.program_id(1)` is a literal in nearly
every kernel, the syntax tree gives its line for the finding, and a run-time hook would sit in
both strategies' builders. An axis that is not a literal makes the unread-axis check step aside.
"""

from __future__ import annotations

import ast
import functools
import textwrap

from kernel_nb.checks.coverage import detect_uncovered_elements
from kernel_nb.trace import Finding, Launch, SourceInfo

_AXES = ("x", "y", "z")

Read = tuple[int | None, str, int]  # the axis (None: not a literal), file, line


class GridAxes:
    """`unused_grid_axis` findings (skipped when the launch failed)."""

    def check(self, launch: Launch) -> list[Finding]:
        return detect_unused_grid_axes(launch)


def detect_unused_grid_axes(launch: Launch) -> list[Finding]:
    """Program-id axes read on a grid axis of size 1 while an output stays partly unwritten, and
    grid axes of more than one program that no program-id read distinguishes."""
    if launch.status != "ok":
        return []
    reads = [read for source in launch.sources.values() for read in program_id_reads(source)]
    findings = []
    uncovered = [f.arg for f in detect_uncovered_elements(launch)]
    for axis in range(3):
        mine = [(file, line) for a, file, line in reads if a == axis]
        if mine and launch.grid[axis] == 1 and uncovered:
            findings.append(_read_on_size_one(launch, axis, mine, uncovered))
    if all(a is not None for a, _, _ in reads):
        for axis in range(3):
            if (
                launch.grid[axis] > 1
                and not any(a == axis for a, _, _ in reads)
                and _same_writes(launch, axis)
            ):
                findings.append(_unread(launch, axis))
    return findings


def program_id_reads(source: SourceInfo) -> list[Read]:
    """Every `program_id(...)` call in a function's source: its axis and file line."""
    return list(_program_id_reads(source.text, source.file, source.first_line))


@functools.lru_cache(maxsize=256)
def _program_id_reads(text: str, file: str, first_line: int) -> tuple[Read, ...]:
    """`program_id_reads` of one source, parsed once: every launch of a kernel reads the same
    functions."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except SyntaxError:
        return ()
    reads: list[Read] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name != "program_id":
            continue
        given = (
            node.args[0] if node.args else next((kw.value for kw in node.keywords if kw.arg == "axis"), None)
        )
        axis = given.value if isinstance(given, ast.Constant) and isinstance(given.value, int) else None
        reads.append((axis, file, first_line + node.lineno - 1))
    return tuple(reads)


def _same_writes(launch: Launch, axis: int) -> bool:
    """Whether the first program and its neighbour along `axis` wrote the same elements (both
    held by the launch, and they wrote something): the evidence that they compute the same thing."""
    first = (0, 0, 0)
    step = [0, 0, 0]
    step[axis] = 1
    neighbour = (step[0], step[1], step[2])
    if first not in launch.programs or neighbour not in launch.programs:
        return False
    mine = _writes(launch, first)
    return bool(mine) and mine == _writes(launch, neighbour)


def _writes(launch: Launch, pid: tuple[int, int, int]) -> list[tuple[str, str | None, int, int, int]]:
    return [(e.kind, e.arg, e.lo, e.hi, e.active) for e in launch.programs[pid].events if e.kind != "load"]


def _read_on_size_one(
    launch: Launch, axis: int, sites: list[tuple[str, int]], uncovered: list[str | None]
) -> Finding:
    file, line = sites[0]
    outputs = ", ".join(str(name) for name in uncovered)
    return Finding(
        kind="unused_grid_axis",
        severity="warning",
        message=(
            f"{launch.kernel}:{line}: tl.program_id({axis}) is read, but the grid "
            f"({launch.grid[0]}, {launch.grid[1]}, {launch.grid[2]}) has 1 program on axis {axis} "
            f"({_AXES[axis]}): every program sees 0 there, and {outputs} stays partly unwritten; "
            f"launch a grid with axis {axis} (e.g. (x, triton.cdiv(n, BLOCK)))"
        ),
        launch=launch.index,
        file=file,
        line=line,
        arg=uncovered[0],
    )


def _unread(launch: Launch, axis: int) -> Finding:
    size = launch.grid[axis]
    source = launch.sources.get(launch.kernel)
    return Finding(
        kind="unused_grid_axis",
        severity="warning",
        message=(
            f"{launch.kernel}: the grid has {size} programs on axis {axis} ({_AXES[axis]}), but the "
            f"kernel never reads tl.program_id({axis}): programs that differ only in axis "
            f"{axis} write the same elements, so the work is done {size} times; read "
            f"tl.program_id({axis}) in the offsets or launch 1 program on axis {axis}"
        ),
        launch=launch.index,
        file=source.file if source else None,
        line=source.first_line if source else None,
    )
