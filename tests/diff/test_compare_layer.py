"""kernel_nb.compare is an analysis over traces: it reads the trace and the leaves, nothing above."""

import ast
from pathlib import Path

import kernel_nb

ALLOWED = (
    "kernel_nb.compare",
    "kernel_nb.trace",
    "kernel_nb.numerics",
    "kernel_nb.distinct",
    "kernel_nb.options",
    "kernel_nb.errors",
)


def test_compare_imports_only_the_trace_and_the_leaves():
    package = Path(kernel_nb.__file__).parent / "compare"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("kernel_nb"):
                    assert name.startswith(ALLOWED), f"compare/{path.name} imports {name}"
