"""%%tkernel record in a real Jupyter kernel: the cell's launches run as usual (here under the stock
interpreter, TRITON_INTERPRET=1, on torch CPU tensors), the table of what was captured is shown,
and _tkrec replays a launch on the CPU."""

from __future__ import annotations

import pytest
from tkernel_support import KERNELS, notebook, text_of


def test_record_captures_the_cells_launches_and_replays_one(run_notebook):
    pytest.importorskip("torch")
    nb = run_notebook(
        notebook(
            "%load_ext kernel_nb",
            KERNELS,
            "import torch\nx = torch.arange(1000, dtype=torch.float32); y = torch.ones(1000); out = torch.zeros(1000)",
            "%%tkernel record --kernel add_kernel --max 1\n"
            "add_kernel[(4,)](x, y, out, 1000, BLOCK=256)\n"
            "scale_kernel[(4,)](out, out, 1000, 2.0, BLOCK=256)\n"
            "add_kernel[(4,)](x, out, out, 1000, BLOCK=256)\n"
            "float(out[3])",
            "launch = _tkrec[0].replay()\nprint(launch.comparison.verdict(), len(_tkrec), _tkrec.seen)",
            # saved and loaded: the notebook's kernel is found again in __main__, where it is defined
            "import kernel_nb\nloaded = kernel_nb.Recording.load(_tkrec.save('recorded.npz'))\n"
            "print(loaded[0].module, loaded[0].jit.fn is add_kernel.fn, loaded[0].replay().comparison.ok)",
            "%%tkernel record --every 0\npass",
        ),
        allow_errors=True,
        kernel_env={"TRITON_INTERPRET": "1"},
    )
    _, _, _, recorded, replayed, loaded, bad = nb.cells
    # the cell ran as it would have, its value is its output, and the table is shown above it
    shown = [o for o in recorded.outputs if o.output_type == "display_data"]
    assert "1 of 3 launches captured" in shown[0].data["text/html"]
    assert "left out #2 add_kernel: past --max 1" in shown[0].data["text/plain"]
    [value] = [o for o in recorded.outputs if o.output_type == "execute_result"]
    assert value.data["text/plain"] == "11.0"
    assert text_of(replayed).strip() == "#0 add_kernel: MATCH (out_ptr); max 0 ulp, max abs 0 1 3"
    assert text_of(loaded).strip() == "__main__ True True"
    assert text_of(bad).startswith("UsageError: %%tkernel record [--kernel NAME]")
    assert "every must be an int >= 1, got 0" in text_of(bad)
