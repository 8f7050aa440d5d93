"""Paths and output helpers shared by the notebooks' tests."""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def text_of(cell: nbformat.NotebookNode) -> str:
    """What a cell printed or displayed as text."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type in ("display_data", "execute_result"):
            parts.append(output.data.get("text/plain", ""))
    return "".join(parts)


def errors_of(cell: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [output for output in cell.get("outputs", []) if output.output_type == "error"]
