"""The main job of `make demo`: run the example notebooks headless and show what they found.

    python -m kernel_nb.demo [--out demo-output] [notebooks ...]

Each notebook is executed in a fresh Jupyter kernel running this interpreter, saved with its
outputs and widget state (the viewers are live again when it is opened in Jupyter), and exported
as standalone HTML that loads nothing from the network, in which every viewer stays interactive:
its state and the replies a reader's clicks ask for are embedded (`kernel_nb.view.export`), and its
static PNG shows until the script has drawn it. Then the traces' summaries are printed (one row per
launch, then its findings, a failed launch's error first), and at the end every finding of every notebook.

Finding the viewer of each widget output: before the first cell, the kernel silently runs
`_SETUP_CODE` (no cell, no execution count), which registers an IPython display printer for
`TraceViewer` that notes each viewer displayed, by its widget model id, in a dict of the notebook's
namespace, and then displays it as usual. A cell appended after the notebook's own (and removed
before it is saved) exports each noted viewer; the HTML export puts each one in place of the
widget output with the same model id.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOKS = ["01-quickstart.ipynb", "02-find-the-bug.ipynb"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FINDING_MARK = "  ["  # how Trace.summary() starts a finding's line

# Appended to each notebook while it runs (not saved): prints every trace the notebook produced,
# those bound to a name first, then `_tk` when it is not one of them.
_SUMMARY_CELL = """
import kernel_nb as _kn
_seen = set()
_traces = [(_n, _v) for _n, _v in list(globals().items()) if isinstance(_v, _kn.Trace) and not _n.startswith("_")]
if isinstance(globals().get("_tk"), _kn.Trace):
    _traces.append(("_tk", _tk))
for _name, _value in _traces:
    if id(_value) in _seen:
        continue
    _seen.add(id(_value))
    print(f"== {_name}")
    print(_value.summary())  # a failed launch's error is its first finding
"""

# Run silently before the first cell: notes every TraceViewer displayed, by its widget model id.
_SETUP_CODE = """
def _kernel_nb_demo_setup():
    from IPython import get_ipython
    from kernel_nb.view import TraceViewer

    shown = {}

    def note(viewer):
        shown[viewer.model_id] = viewer
        return viewer._repr_mimebundle_()

    get_ipython().display_formatter.mimebundle_formatter.for_type(TraceViewer, note)
    return shown


_kernel_nb_demo_shown = _kernel_nb_demo_setup()
del _kernel_nb_demo_setup
"""

# Appended after the summary cell (not saved): each viewer noted above as an offline HTML fragment.
EXPORT_MIME = "application/vnd.kernel-nb.offline-html+json"
_EXPORT_CELL = f"""
from IPython.display import display as _display
from kernel_nb.view.export import export_html as _export_html
_display({{{EXPORT_MIME!r}: {{_id: _export_html(_v) for _id, _v in _kernel_nb_demo_shown.items()}}}}, raw=True)
"""

# nbconvert's "lab" template without the scripts it loads from CDNs (require.js, MathJax, Mermaid and
# the widget manager): the page is meant to be read offline, and the viewers carry their own script.
_OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{% block html_head_js %}{% endblock html_head_js %}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block html_head_js_mathjax %}{% endblock html_head_js_mathjax %}
{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}
"""


def offline_html(nb: Any, title: str, viewers: dict[str, str] | None = None) -> str:
    """Standalone HTML of an executed notebook that references no network resource.

    Args:
        nb: the executed notebook.
        title: the page's title.
        viewers: offline HTML of viewers (`kernel_nb.view.export.export_html`) by widget model id:
            each replaces the widget output of that model. Other widget outputs fall back to their
            other representations (the TraceViewer's PNG), since drawing them would need the
            widget manager from a CDN and a kernel.
    """
    viewers = viewers or {}
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    static = copy.deepcopy(nb)
    static.metadata.pop("widgets", None)
    for cell in static.cells:
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None and WIDGET_VIEW in data:
                fragment = viewers.get(data.pop(WIDGET_VIEW).get("model_id", ""))
                if fragment is not None:
                    data.clear()  # the fragment holds the PNG too
                    data["text/html"] = fragment
                if not data:
                    continue
            outputs.append(output)
        if "outputs" in cell:
            cell.outputs = outputs
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[DictLoader({"kernel_nb_offline.html.j2": _OFFLINE_TEMPLATE})],
        template_file="kernel_nb_offline.html.j2",
    )
    html, _ = exporter.from_notebook_node(static, resources={"metadata": {"name": title}})
    return html


def run_notebook(path: Path, out_dir: Path) -> str:
    """Execute one notebook; write it (with outputs) and its HTML to `out_dir`; return the summaries.

    Raises:
        nbclient.exceptions.CellExecutionError: a cell not tagged ``raises-exception`` failed (the
            kernel's stderr is in the message).
    """
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(_SUMMARY_CELL))
    nb.cells.append(nbformat.v4.new_code_cell(_EXPORT_CELL))
    with tempfile.TemporaryDirectory(prefix="kernel-nb-demo-") as tmp:
        # A kernelspec of this interpreter: a machine-wide "python3" may be another Python.
        spec = Path(tmp) / "kernels" / "kernel-nb-demo"
        spec.mkdir(parents=True)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        (spec / "kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": "kernel_nb demo", "language": "python"})
        )
        km = AsyncKernelManager(
            kernel_name="kernel-nb-demo",
            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec.parent)]),
        )
        client = NotebookClient(
            nb,
            km=km,
            timeout=600,
            resources={"metadata": {"path": str(path.parent)}},
            store_widget_state=True,
        )

        async def note_viewers(notebook: Any) -> None:
            # Silent: no cell, no execution count, nothing in the saved notebook.
            assert client.kc is not None
            reply = await client.async_wait_for_reply(client.kc.execute(_SETUP_CODE, silent=True))
            if reply is None or reply["content"]["status"] != "ok":
                raise RuntimeError(f"the demo's setup failed in the kernel: {reply and reply['content']}")

        client.on_notebook_start = note_viewers
        # This checkout's kernel_nb, installed or not; the kernel's own chatter goes to a log.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        }
        log_path = Path(tmp) / "kernel.log"
        with log_path.open("w") as log:
            try:
                client.execute(cleanup_kc=True, env=env, stderr=log)
            except CellExecutionError as error:
                log.flush()
                raise CellExecutionError(
                    f"{error}\nkernel log:\n{log_path.read_text()[-3000:]}", error.ename, error.evalue
                ) from None
    export_cell = nb.cells.pop()
    viewers: dict[str, str] = {}
    for output in export_cell.get("outputs", []):
        viewers.update(output.get("data", {}).get(EXPORT_MIME, {}))
    summary_cell = nb.cells.pop()
    summary = "".join(o.get("text", "") for o in summary_cell.get("outputs", []) if o.get("name") == "stdout")
    out_dir.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out_dir / path.name)
    html = offline_html(nb, path.stem, viewers)
    (out_dir / path.with_suffix(".html").name).write_text(html, encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "notebooks", nargs="*", help="notebooks to run (default: quickstart and find-the-bug)"
    )
    parser.add_argument(
        "--out", default="demo-output", help="where executed notebooks and HTML go (default: ./demo-output)"
    )
    args = parser.parse_args(argv)
    from nbclient.exceptions import CellExecutionError

    names = args.notebooks or DEFAULT_NOTEBOOKS
    paths = [Path(n) if Path(n).exists() else ROOT / "notebooks" / n for n in names]
    present = [p for p in paths if p.exists()]
    for missing in sorted(set(paths) - set(present)):
        print(f"skipping {missing.name}: not in notebooks/")
    out_dir = Path(args.out)
    findings: list[str] = []
    failed: list[str] = []
    for path in present:
        print(f"running {path.name} ...", flush=True)
        try:
            summary = run_notebook(path, out_dir)
        except CellExecutionError as error:
            print(f"{path.name} failed:\n{error}\n", flush=True)
            failed.append(path.name)
            continue
        print(summary.rstrip() or "(no traces)")
        print(f"wrote {out_dir / path.name} and {out_dir / path.with_suffix('.html').name}\n", flush=True)
        findings += [
            f"{path.stem}: {line.strip()}" for line in summary.splitlines() if line.startswith(FINDING_MARK)
        ]
    print(f"Findings and launch errors ({len(findings)}):")
    print("\n".join(f"  {line}" for line in findings) or "  none")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 0 if present and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
