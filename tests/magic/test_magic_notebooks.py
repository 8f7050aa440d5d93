"""%%tkernel in a real Jupyter kernel: notebooks written with nbformat and executed with nbclient."""

from __future__ import annotations

import sys

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from tkernel_support import KERNELS, ROOT, errors_of, line_of, notebook, text_of

from kernel_nb.gpu import find_missing
from tests.machine import has_nvidia_gpu

ADD = "add_kernel[(4,)](x, y, out, 1000, BLOCK=256)"
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_vector_add_in_a_kernel(run_notebook):
    nb = run_notebook(
        notebook(
            "import sys\nprint(sys.executable)",
            "%load_ext kernel_nb",
            KERNELS,
            f"%%tkernel interpret\n{ADD}",
            "assert (out == x + y).all()\nprint(type(_tk).__name__, _tk[0].kernel, _tk[0].value(1, 'offsets')[:3])",
        )
    )

    executable, _, _, launch, check = nb.cells
    assert text_of(executable).strip() == sys.executable  # the kernel runs this interpreter
    [shown] = launch.outputs
    assert shown.output_type == "display_data"
    assert WIDGET in shown.data or "text/html" in shown.data
    assert text_of(check) == "Trace add_kernel [256 257 258]\n"


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("%%tkernel interpret\nunmasked_kernel[(4,)](x, out, BLOCK=256)", "KernelMemoryError"),
        ("%%tkernel interpret --bogus\nout[:] = 7", "UsageError: unrecognized arguments: --bogus"),
    ],
)
def test_a_failing_cell_stops_the_notebook(run_notebook, cell, shown):
    nb = notebook("%load_ext kernel_nb", KERNELS, cell, "print('not reached')")

    with pytest.raises(CellExecutionError, match=shown) as failure:
        run_notebook(nb)
    assert "not reached" not in str(failure.value)


def test_errors_show_the_kernel_line_and_the_kernel_survives(run_notebook):
    nb = run_notebook(
        notebook(
            "%load_ext kernel_nb",
            KERNELS,
            "%%tkernel interpret\nshape_kernel[(4,)](x, out, 1000, BLOCK=256)",
            "%%tkernel interpret\nunmasked_kernel[(4,)](x, out, BLOCK=256)",
            "print('alive', out.any(), _tk[0].status)",
            "%%tkernel interpret --bogus\nout[:] = 7",
            "%%tkernel gpu\nout[:] = 7",
            "print(out.any())",
        ),
        allow_errors=True,
    )

    _, _, shape, oob, alive, bad_flag, gpu, untouched = nb.cells
    [error] = errors_of(shape)
    assert error.ename == "KernelCompileError"  # the compiler rejects this shape mismatch too
    line = line_of(KERNELS, "tl.zeros((2 * BLOCK,)")
    assert error.evalue.startswith(
        f"shape_kernel:{line} pid=(0,0,0): ValueError: Cannot make_shape_compatible"
    )
    assert f"line {line}, in shape_kernel" in error.traceback[1]
    assert "+ tl.zeros((2 * BLOCK,), tl.float32)" in error.traceback[2]

    [error] = errors_of(oob)
    assert error.ename == "KernelMemoryError"
    assert error.evalue.startswith(
        f"unmasked_kernel:{line_of(KERNELS, 'x = tl.load(x_ptr + offsets)')} pid=(3,0,0): "
        "tl.load of x_ptr reads elements [1000, 1024)"
    )
    assert text_of(alive) == "alive False error\n"

    # IPython shows a UsageError as one line on stderr (and fails the cell: see the test above).
    assert text_of(bad_flag) == "UsageError: unrecognized arguments: --bogus\n"
    # without CuPy or a GPU, the GPU modes say what is missing and how to get it, and change nothing
    [error] = errors_of(gpu)
    assert error.ename == "GpuUnavailableError"
    expected = find_missing()
    assert expected is not None and error.evalue == expected.message
    if not has_nvidia_gpu():
        assert error.evalue.startswith("no NVIDIA GPU on this machine: %%tkernel gpu and %%tkernel compare")
    assert text_of(untouched) == "False\n"


SLOW = """\
@triton.jit
def slow_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offsets)
    for i in range(200):
        acc = acc + 1.0
    tl.store(out_ptr + offsets, acc)
"""


def test_the_stop_button_ends_the_launch_and_leaves_the_arrays_unchanged(run_notebook):
    # one program at a time, so that the launch surely outlasts the 3 s timeout
    launch = "%%tkernel interpret --serial\nslow_kernel[(1000,)](x, out, BLOCK=1)"
    nb = run_notebook(
        notebook("%load_ext kernel_nb", KERNELS, SLOW, launch, "print(out.any(), _tk[0].status)"),
        allow_errors=True,
        # The launch cell is interrupted after 3 s, as the stop button would; the launch takes several seconds.
        timeout_func=lambda cell: 3 if cell.source == launch else 300,
        interrupt_on_timeout=True,
        shell_timeout_interval=1,
    )

    _, _, _, interrupted, after = nb.cells
    [error] = errors_of(interrupted)
    assert error.ename == "CellInterrupted"
    assert error.evalue.startswith("interrupted: slow_kernel at pid (")
    assert error.evalue.endswith(",0,0), arrays unchanged")
    assert error.traceback == [error.evalue]
    # The launch ran longer than a second, so a progress bar was shown.
    assert any(
        WIDGET in output.get("data", {}) for output in interrupted.outputs
    ) or "interpreting" in text_of(interrupted)
    assert text_of(after) == "False interrupted\n"


def test_quickstart_notebook_runs(run_notebook):
    path = ROOT / "notebooks" / "01-quickstart.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code")  # committed cleared

    executed = run_notebook(nb)

    assert not any(errors_of(cell) for cell in executed.cells if cell.cell_type == "code")


def test_a_failing_cell_shows_the_viewer_at_the_failure_then_the_error(run_notebook):
    nb = run_notebook(
        notebook(
            "%load_ext kernel_nb",
            KERNELS,
            "%%tkernel interpret\nunmasked_kernel[(4,)](x, out, BLOCK=256)",
            "f = _tk[0].findings[0]\nprint(f.kind, f.pid, f.line, f.arg, f.iteration, out.any())",
        ),
        allow_errors=True,
        store_widget_state=True,
    )

    _, _, failing, after = nb.cells
    line = line_of(KERNELS, "x = tl.load(x_ptr + offsets)")
    shown, error = failing.outputs
    assert shown.output_type == "display_data" and error.output_type == "error"
    assert error.ename == "KernelMemoryError"
    assert error.traceback[0].startswith(f"KernelMemoryError: unmasked_kernel:{line} pid=(3,0,0): ")
    assert error.traceback[-1] == (
        "kernel_nb: the launch's recording is in _tk (its error is _tk[0].findings[0]); the viewer above "
        "opens at the failure"
    )
    # the viewer's widget state, as the kernel sent it: open at the failing program and its error
    model_id = shown.data[WIDGET]["model_id"]
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"][model_id]["state"]
    assert (state["launch"], state["pid"], state["finding"]) == (0, [3, 0, 0], 0)
    [finding, *_] = state["meta"]["launches"][0]["findings"]
    assert (finding["kind"], finding["line"], finding["target"]) == (
        "launch_error",
        line,
        {"pid": [3, 0, 0], "stmt": state["stmt"], "iteration": []},
    )
    assert state["meta"]["launches"][0]["statements"][state["stmt"]]["name"] == "offsets"
    assert text_of(after) == f"launch_error (3, 0, 0) {line} x_ptr () False\n"


def test_a_kernel_made_under_triton_interpret_runs_in_the_engine_and_shows_the_viewer(run_notebook):
    # kernel authors often keep TRITON_INTERPRET=1 set: @triton.jit then makes the stock
    # interpreter's functions, which the magic runs as it does plain kernels
    nb = run_notebook(
        notebook(
            "%load_ext kernel_nb",
            KERNELS + "\nprint(type(add_kernel).__name__)",
            "x = np.arange(1000, dtype=np.float32); y = np.ones(1000, np.float32); out = np.zeros(1000, np.float32)",
            "%%tkernel interpret\nadd_kernel[(4,)](x, y, out, 1000, BLOCK=256)",
            "print((out == x + y).all(), _tk[0].value(1, 'offsets')[:3].tolist())",
            "%%tkernel interpret\nunmasked_kernel[(4,)](x, out, BLOCK=256)",
        ),
        allow_errors=True,
        kernel_env={"TRITON_INTERPRET": "1"},
    )
    _, kernels, _, run, check, failing = nb.cells
    assert text_of(kernels).strip() == "InterpretedFunction"
    assert [o.output_type for o in run.outputs] == ["display_data"]
    assert "application/vnd.jupyter.widget-view+json" in run.outputs[0].data
    assert text_of(check).strip() == "True [256, 257, 258]"
    assert failing.outputs[-1].ename == "KernelMemoryError"
    assert any(o.output_type == "display_data" for o in failing.outputs)  # the failed launch's viewer


def test_load_ext_imports_the_viewer_while_the_notebook_waits(run_notebook):
    watched = "['kernel_nb.view', 'matplotlib.figure', 'matplotlib.backends.backend_agg']"
    nb = run_notebook(
        notebook(
            f"import sys\nprint([m for m in {watched} if m in sys.modules])",
            "%load_ext kernel_nb",
            # no cell asks for them: the extension's thread imports them (a module is in
            # sys.modules from the start of its import: the thread's end tells the imports ended)
            "import threading, time\n"
            "start = time.monotonic()\n"
            "def warming():\n"
            "    return any(t.name == 'kernel_nb warm-up' for t in threading.enumerate())\n"
            f"while (warming() or any(m not in sys.modules for m in {watched})) and time.monotonic() - start < 60:\n"
            "    time.sleep(0.05)\n"
            f"print([m for m in {watched} if m in sys.modules])\n"
            "print([t.name for t in threading.enumerate() if t.name == 'kernel_nb warm-up'])",
            KERNELS,
            f"%%tkernel interpret\n{ADD}",
        )
    )
    before, _, after, _, launch = nb.cells
    assert text_of(before) == "[]\n"
    assert text_of(after) == f"{watched}\n[]\n"  # all imported, and the thread is done
    [shown] = launch.outputs
    assert WIDGET in shown.data and "image/png" in shown.data
