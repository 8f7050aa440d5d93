"""A user's first cell: a launch in a fresh Jupyter kernel, as the notebook waits for it, against stock.

    python bench/bench_first_cell.py [--cases flash_attention,vector_add] [--kernels 3] [--pause 2]
                                     [--quick] [--json PATH]

bench_engine.py times the launch alone. A user waits for the whole cell: with `%%tkernel
interpret` that is the launch and the viewer it shows (its modules, its state, the PNG for
notebooks without its JavaScript), through a real Jupyter kernel (nbclient). Each run starts a
fresh kernel and executes, as a notebook would:

1. imports and the case's inputs (bench_engine's cases; stock with TRITON_INTERPRET=1 and torch
   tensors, set before the kernels are decorated);
2. kernel_nb only: `%load_ext kernel_nb`;
3. --pause seconds of nothing: the user writing the next cell (0: a notebook run at once);
4. the launch, as a `%%tkernel interpret` cell (stock: the bare call): the first cell;
5. the same cell again: a warm cell.

Cells are timed from the client, request to reply. Kernels alternate between the sides, and each
side reports the median of --kernels kernels; the ratios are stock's time over kernel_nb's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_engine import CASES  # noqa: E402

SIDES = ("stock", "kernel_nb")

_PREPARE = """\
import os, sys
{environment}
sys.path.insert(0, {root!r})
from bench.bench_engine import build_case
case = build_case({case!r}, {quick!r}, as_torch={as_torch!r})
"""


def _cells(side: str, case: str, quick: bool) -> tuple[str, str | None, str]:
    """The preparing cell, the extension's (None: none) and the launch's."""
    stock = side == "stock"
    prepare = _PREPARE.format(
        environment='os.environ["TRITON_INTERPRET"] = "1"'
        if stock
        else 'os.environ.pop("TRITON_INTERPRET", None)',
        root=str(ROOT),
        case=case,
        quick=quick,
        as_torch=stock,
    )
    if stock:
        return prepare, None, "case.launch()"
    return prepare, "%load_ext kernel_nb", "%%tkernel interpret\ncase.launch()"


def run_kernel(side: str, case: str, pause: float, quick: bool) -> dict[str, float]:
    """One fresh kernel: seconds of its extension cell, first launch cell and warm launch cell."""
    import nbformat
    from nbclient import NotebookClient

    prepare, extension, launch = _cells(side, case, quick)
    sources = [prepare, *([extension] if extension else []), launch, launch]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(
        notebook, kernel_name="python3", timeout=600, resources={"metadata": {"path": str(ROOT)}}
    )
    took: list[float] = []
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            if index == len(sources) - 2:  # the first launch cell
                time.sleep(pause)
            start = time.perf_counter()
            client.execute_cell(cell, index)
            took.append(time.perf_counter() - start)
            errors = [o for o in cell.outputs if o.get("output_type") == "error"]
            if errors:
                raise RuntimeError(f"{side} {case}: {errors[0].get('ename')}: {errors[0].get('evalue')}")
    result = {"first": took[-2], "warm": took[-1]}
    if extension:
        result["load_ext"] = took[1]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="flash_attention,vector_add")
    parser.add_argument("--kernels", type=int, default=3, help="fresh kernels per side and case")
    parser.add_argument(
        "--pause", type=float, default=2.0, help="seconds between %%load_ext and the first cell"
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--json", help="write the raw times here")
    args = parser.parse_args()
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        sys.exit(f"unknown case: {', '.join(unknown)} (choose from {', '.join(CASES)})")
    raw: dict[str, dict[str, list[dict[str, float]]]] = {c: {s: [] for s in SIDES} for c in cases}
    for _ in range(args.kernels):
        for case in cases:
            for side in SIDES:
                raw[case][side].append(run_kernel(side, case, args.pause, args.quick))
    print(f"pause after %load_ext: {args.pause:g} s; medians of {args.kernels} fresh kernels per side; ms")
    print(
        f"{'case':<16} {'stock 1st':>9} {'knb 1st':>8} {'1st x':>7} {'stock warm':>10} {'knb warm':>8}"
        f" {'warm x':>7} {'load_ext':>8}"
    )
    for case in cases:
        med: dict[str, dict[str, float]] = {
            side: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
            for side, runs in raw[case].items()
        }
        stock, ours = med["stock"], med["kernel_nb"]
        print(
            f"{case:<16} {stock['first'] * 1e3:9.0f} {ours['first'] * 1e3:8.0f} {stock['first'] / ours['first']:6.1f}x"
            f" {stock['warm'] * 1e3:10.0f} {ours['warm'] * 1e3:8.0f} {stock['warm'] / ours['warm']:6.1f}x"
            f" {ours['load_ext'] * 1e3:8.0f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"pause": args.pause, "runs": raw}, indent=1))


if __name__ == "__main__":
    main()
