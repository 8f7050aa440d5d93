"""Fail on any module of kernel_nb or js/ over LIMIT lines that does not say at its top why it is one
module: a line starting `Why one module:` in its docstring or first comment block."""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 500
HEAD = 40  # the reason is read from the first lines only: it belongs at the top
MARK = "Why one module:"


def oversized(root: Path) -> list[str]:
    paths = sorted(root.glob("kernel_nb/**/*.py")) + sorted(root.glob("js/**/*.js"))
    problems = []
    for path in paths:
        if "node_modules" in path.parts:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) <= LIMIT:
            continue
        head = [line.strip().lstrip("#/* ").strip() for line in lines[:HEAD]]
        if not any(line.startswith(MARK) for line in head):
            problems.append(f"{path.relative_to(root)}: {len(lines)} lines and no '{MARK}' at its top")
    return problems


def main() -> int:
    problems = oversized(Path(__file__).resolve().parent.parent)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
