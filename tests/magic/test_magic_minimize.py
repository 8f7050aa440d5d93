"""%tkernel minimize in a real Jupyter kernel: a failed cell's launch shrunk, shown and bound to _tkmin."""

from __future__ import annotations

from tkernel_support import KERNELS, line_of, notebook, text_of

WIDGET = "application/vnd.jupyter.widget-view+json"


def test_minimize_shrinks_the_last_failed_launch_and_opens_the_viewer_at_its_failure(run_notebook):
    nb = run_notebook(
        notebook(
            "%load_ext kernel_nb",
            KERNELS,
            "%%tkernel interpret\nadd_kernel[(4,)](x, y, out, 1000, BLOCK=256)\nunmasked_kernel[(4,)](x, out, BLOCK=256)",
            "%tkernel minimize --time-limit 60",
            "r = _tkmin\nprint(r.launch.num_programs, r.arguments['x_ptr'].size, r.finding.kind, r.finding.line, "
            "r.original is _tk[1], (out == x + y).all())",
            "%tkernel minimize 0",
            "%tkernel minimize 5",
        ),
        allow_errors=True,
        store_widget_state=True,
    )

    _, _, failing, minimized, check, clean, missing = nb.cells
    assert failing.outputs[-1].ename == "KernelMemoryError"
    line = line_of(KERNELS, "x = tl.load(x_ptr + offsets)")
    told = text_of(minimized)
    assert told.startswith(
        f"minimize unmasked_kernel: keeping KernelMemoryError at line {line} on x_ptr, from 4 programs"
    )
    assert "unmasked_kernel: KernelMemoryError" in told and "down to 1 program" in told
    # the viewer of the smallest launch, open at the failure kept
    [shown] = [o for o in minimized.outputs if o.output_type == "display_data"]
    model_id = shown.data[WIDGET]["model_id"]
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"][model_id]["state"]
    assert (state["launch"], state["finding"]) == (0, 0)
    programs, elements, kind, kept_line, original, written = text_of(check).split()
    assert int(programs) == 1 and int(elements) <= 4 and (kind, int(kept_line)) == ("launch_error", line)
    # the failed launch left `out` as the first launch wrote it, and the search's launches too
    assert (original, written) == ("True", "True")
    # a launch that does not fail, and one that does not exist: usage errors, the kernel lives on
    assert text_of(clean) == "UsageError: add_kernel: launch 0 has no finding: there is nothing to keep\n"
    assert text_of(missing) == "UsageError: _tk has launches 0 to 1, not 5\n"
