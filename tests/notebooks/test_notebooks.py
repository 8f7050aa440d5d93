"""Every notebook in notebooks/ runs from top to bottom in a real kernel, and tells its story."""

from __future__ import annotations

import nbformat
import pytest
from notebook_support import NOTEBOOKS, errors_of, text_of

from tests.machine import has_nvidia_gpu

WIDGET = "application/vnd.jupyter.widget-view+json"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def expects_error(cell: nbformat.NotebookNode) -> bool:
    return "raises-exception" in cell.metadata.get("tags", [])


def run(run_notebook, name: str) -> list[nbformat.NotebookNode]:
    return [cell for cell in run_notebook(name).cells if cell.cell_type == "code"]


def test_every_notebook_is_tested():
    assert [p.name for p in PATHS] == [
        "01-quickstart.ipynb",
        "02-find-the-bug.ipynb",
        "03-matmul-tiles.ipynb",
        "04-flash-attention.ipynb",
        "05-gpu-compare.ipynb",
        "06-stride-bug.ipynb",
        "07-precision.ipynb",
        "08-shrink-a-failing-launch.ipynb",
    ]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.stem)
def test_notebook_runs_without_errors(run_notebook, path):
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(not cell.outputs and cell.execution_count is None for cell in code)  # committed cleared

    executed = run(run_notebook, path.name)

    for number, cell in enumerate(executed):
        errors = errors_of(cell)
        if expects_error(cell):
            assert errors, f"code cell {number} is tagged raises-exception but did not fail:\n{cell.source}"
        else:
            assert not errors, f"code cell {number} failed:\n{cell.source}\n" + "\n".join(errors[0].traceback)
        first = cell.source.splitlines()[0]
        if first.startswith("%%tkernel interpret") and "--quiet" not in first and not errors:
            assert any(WIDGET in output.get("data", {}) for output in cell.outputs), cell.source


def test_find_the_bug_shows_the_error_the_wrong_max_and_the_fix(run_notebook):
    cells = run(run_notebook, "02-find-the-bug.ipynb")

    [failing] = [cell for cell in cells if expects_error(cell)]
    [error] = errors_of(failing)
    assert error.ename == "KernelMemoryError"
    assert error.evalue == (
        "softmax_kernel:6 pid=(5,0,0): tl.load of x_ptr reads x_ptr[6, 0:28] but x_ptr has shape (6, 100) "
        "(28 of 128 active lanes out of bounds: lanes[100:128]); the mask lets these lanes through; check "
        "the mask's bound"
    )
    text = "".join(text_of(cell) for cell in cells)
    assert "elements of out written: 0" in text
    assert "elements read by two programs, per row: [ 0 28 28 28 28  0]" in text
    assert "reads per element of x: [1]" in text


def test_flash_attention_finds_the_first_nan(run_notebook):
    cells = run(run_notebook, "04-flash-attention.ipynb")

    kernel = next(cell.source for cell in cells if cell.source.startswith("@triton.jit"))
    line = 1 + next(i for i, text in enumerate(kernel.splitlines()) if text.strip().startswith("p = "))
    text = "".join(text_of(cell) for cell in cells)
    assert "NaN rows (head, token): [[0, 0], [1, 0]]" in text
    assert f"first NaN: p = ... at line {line}, loop iteration (0,), 16 of 256 elements" in text
    assert "records with a NaN: 0" in text


@pytest.mark.skipif(has_nvidia_gpu(), reason="this machine has an NVIDIA GPU: the comparison may run")
def test_gpu_compare_says_why_it_skips(run_notebook):
    cells = run(run_notebook, "05-gpu-compare.ipynb")

    assert text_of(cells[1]).startswith("skipped: no NVIDIA GPU on this machine: %%tkernel gpu and")
    assert text_of(cells[-1]) == text_of(cells[1])


def test_stride_bug_opens_the_viewer_at_the_failure_and_ends_with_the_transpose(run_notebook):
    nb = run_notebook("06-stride-bug.ipynb")
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]

    [failing] = [cell for cell in cells if expects_error(cell)]
    kernel = next(cell.source for cell in cells if cell.source.startswith("@triton.jit"))
    line = 1 + next(i for i, text in enumerate(kernel.splitlines()) if "tile = tl.load" in text)
    shown, error = failing.outputs
    assert error.ename == "KernelMemoryError"
    assert error.evalue.startswith(f"transpose_kernel:{line} pid=(0,0,0): tl.load of src_ptr reads ")
    assert error.traceback[-1] == (
        "kernel_nb: the launch's recording is in _tk (its error is _tk[0].findings[0]); the viewer above "
        "opens at the failure"
    )
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"][
        shown.data[WIDGET]["model_id"]
    ]["state"]
    launch = state["meta"]["launches"][0]
    assert (state["pid"], state["iteration"], state["finding"]) == ([0, 0, 0], [2], 0)
    assert launch["statements"][state["stmt"]]["name"] == "src"
    assert (launch["findings"][0]["line"], launch["findings"][0]["iteration"]) == (line, [2])
    text = "".join(text_of(cell) for cell in cells)
    assert f"launch_error in program (0, 0, 0) at line {line} in loop iteration (2,) of src_ptr" in text
    assert "offsets along row 0:    [2048 2112 2176 2240] (a step of 64 = stride_sn)" in text
    assert "offsets down column 0:  [2048 2049 2050 2051] (a step of 1 = stride_sm)" in text
    assert "y untouched: True" in text
    assert "offsets along row 0:    [32 33 34 35]" in text
    assert "y == x.T; findings: []" in text


def test_precision_goes_from_match_to_the_statements_that_lose_it_and_the_fix(run_notebook):
    cells = run(run_notebook, "07-precision.ipynb")
    by_source = {cell.source.splitlines()[0]: cell for cell in cells}

    if not has_nvidia_gpu():
        assert text_of(cells[0]).startswith("skipped: no NVIDIA GPU on this machine")
    wrong = text_of(by_source["near = np.arange(N)  # y[i] is a small step from x[i]"])
    assert float(wrong.rsplit(": ", 1)[1]) > 1.0  # far more than the distances themselves
    shadow = by_source["%%tkernel interpret --shadow"]
    assert any(WIDGET in output.get("data", {}) for output in shadow.outputs)
    findings = text_of(by_source["launch = _tk[0]"])
    assert "line 12: `d = na[:, None] + nb[None, :] - 2 * g` cancels" in findings
    assert "`g` (line 11, a tf32 dot) brings 100% of it" in findings
    assert "line 11: `g = tl.dot(x, tl.trans(y))` runs as tf32" in findings
    numbers = text_of(by_source['for name in ("na", "g", "d"):']).splitlines()
    assert numbers[-1] == "fp64 reference against the true distances: 0.0e+00"
    fixed = text_of(by_source["fixed = _tk[0]"]).splitlines()
    assert fixed[0] == "findings: []"
    assert float(fixed[1].rsplit(": ", 1)[1]) < 1e-6


def test_shrink_a_failing_launch_goes_from_4096_programs_to_a_two_program_test_file(run_notebook):
    cells = run(run_notebook, "08-shrink-a-failing-launch.ipynb")
    by_source = {cell.source.splitlines()[0]: cell for cell in cells}

    found = text_of(by_source['print("values counted:", counts.sum(), "of", n)'])
    assert found.startswith("values counted: 65536 of 1048576\n[warning] race_read_after_write: ")
    assert "[error] race_write: histogram_kernel:8 pid=(1,0,0): writes counts_ptr elements" in found
    told = text_of(by_source["%tkernel minimize"])
    assert told.startswith(
        "minimize histogram_kernel: keeping race_write at line 8 on counts_ptr, from 4096 programs"
    )
    assert "down to 2 programs, 3 array elements" in told
    assert text_of(by_source["result = _tkmin"]).startswith(
        "grid: (2, 1, 1)\nx_ptr = array([0., 0.], dtype=float32)"
    )
    written = text_of(by_source["import tempfile"])
    assert written.startswith("test_histogram_kernel_repro.py and test_histogram_kernel_repro.npz\n")
    assert (
        "_GRID = (2, 1, 1)" in written
        and "def histogram_kernel(" in written
        and "import kernel_nb" not in written.split("def test_kernel_nb")[0]
    )
    ran = text_of(by_source["import os"])
    assert "1 passed, 1 skipped" in ran and "a race depends on the order programs run in" in ran
    fixed = text_of(by_source['print("findings:", fixed.findings)'])
    assert fixed.startswith("findings: []\ncounts: [")
