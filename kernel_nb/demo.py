"""The main job of `make demo`: run the example notebooks headless and show what they found.

    python -m kernel_nb.demo [--out demo-output] [notebooks ...]

Each notebook is executed in a fresh Jupyter kernel (ipykernel's "python3", the Python of this
environment), saved with
its outputs and widget state, and exported as standalone HTML; then the traces' summaries (one row
per launch, then the findings) are printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOKS = ["01-quickstart.ipynb", "02-find-the-bug.ipynb"]

# Appended to each notebook while it runs (not saved): prints every trace the notebook produced.
_SUMMARY_CELL = """
import kernel_nb as _kn
_seen = set()
for _name, _value in list(globals().items()):
    # IPython's output history (_, _8, ...) holds the same traces again
    if isinstance(_value, _kn.Trace) and (_name == "_tk" or not _name.startswith("_")) and id(_value) not in _seen:
        _seen.add(id(_value))
        print(f"== {_name}")
        print(_value.summary())
"""


def run_notebook(path: Path, out_dir: Path) -> str:
    """Execute one notebook; write it (with outputs) and its HTML to `out_dir`; return the summaries."""
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_SUMMARY_CELL))
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=True,
    )
    client.execute()
    summary_cell = nb.cells.pop()
    summary = "".join(o.get("text", "") for o in summary_cell.get("outputs", []) if o.get("name") == "stdout")
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out_dir / path.name)
    html, _ = HTMLExporter().from_notebook_node(nb)
    (out_dir / path.with_suffix(".html").name).write_text(html, encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "notebooks", nargs="*", help="notebooks to run (default: quickstart and find-the-bug)"
    )
    parser.add_argument(
        "--out", default=str(ROOT / "demo-output"), help="where executed notebooks and HTML go"
    )
    args = parser.parse_args(argv)
    names = args.notebooks or DEFAULT_NOTEBOOKS
    paths = [Path(n) if Path(n).exists() else ROOT / "notebooks" / n for n in names]
    present = [p for p in paths if p.exists()]
    for missing in sorted(set(paths) - set(present)):
        print(f"skipping {missing.name}: not in notebooks/")
    out_dir = Path(args.out)
    for path in present:
        print(f"running {path.name} ...", flush=True)
        summary = run_notebook(path, out_dir)
        print(summary.rstrip() or "(no traces)")
        print(f"wrote {out_dir / path.name} and {out_dir / path.with_suffix('.html').name}\n")
    return 0 if present else 1


if __name__ == "__main__":
    raise SystemExit(main())
