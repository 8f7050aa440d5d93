"""A cell run again closes the viewers its last run showed, in a real kernel told the cell's id as
JupyterLab tells it (the execute request's metadata)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from jupyter_client.manager import KernelManager
from tkernel_support import KERNELS, ROOT

WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def run() -> Iterator:  # type: ignore[type-arg]
    """Run code in a fresh kernel as the cell with a given id: its printed text and shown outputs."""
    km = KernelManager(kernel_name="python3")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(env=env)
    client = km.blocking_client()
    client.start_channels()
    client.wait_for_ready(timeout=120)

    def execute(code: str, cell: str | None) -> tuple[str, list[dict]]:  # type: ignore[type-arg]
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
        }
        msg = client.session.msg(
            "execute_request", content, metadata={} if cell is None else {"cellId": cell}
        )
        client.shell_channel.send(msg)
        text, shown = [], []
        while True:
            out = client.get_iopub_msg(timeout=300)
            if out["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                continue
            kind = out["msg_type"]
            if kind == "stream" and out["content"]["name"] == "stdout":
                text.append(out["content"]["text"])
            elif kind == "display_data":
                shown.append(out["content"]["data"])
            elif kind == "error":
                raise AssertionError("\n".join(out["content"]["traceback"]))
            elif kind == "status" and out["content"]["execution_state"] == "idle":
                return "".join(text), shown

    try:
        yield execute
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


LAUNCH = "%%tkernel interpret\nadd_kernel[(4,)](x, y, out, 1000, BLOCK=256)"
COUNT = (
    "import gc\n"
    "from kernel_nb.view import TraceViewer\n"
    "gc.collect()\n"
    "print(sum(isinstance(o, TraceViewer) for o in gc.get_objects()), first() is None)"
)


def test_a_cell_run_again_closes_its_last_viewers_and_lets_their_traces_go(run):
    run("%load_ext kernel_nb", "a")
    run(KERNELS + "\nx = np.arange(1000, dtype=np.float32); y = x.copy(); out = np.zeros_like(x)", "b")
    _, shown = run(LAUNCH, "c")
    assert WIDGET in shown[0]
    run("import weakref\nfirst = weakref.ref(_tk)", "d")
    for _ in range(3):
        _, shown = run(LAUNCH, "c")  # the same cell, again
        assert WIDGET in shown[0]
    text, _ = run(COUNT, "e")
    assert text == "1 True\n"  # the last run's viewer alone lives; the first run's trace is gone
    # another cell's viewer stays open when this one runs again
    run(LAUNCH, "f")
    run(LAUNCH, "c")
    text, _ = run(COUNT, "e")
    assert text.split()[0] == "2"


def test_without_a_cell_id_viewers_stay_open(run):
    run("%load_ext kernel_nb", None)
    run(KERNELS + "\nx = np.arange(1000, dtype=np.float32); y = x.copy(); out = np.zeros_like(x)", None)
    run(LAUNCH, None)
    run("import weakref\nfirst = weakref.ref(_tk)", None)
    run(LAUNCH, None)
    text, _ = run(COUNT, None)
    assert text == "2 False\n"
