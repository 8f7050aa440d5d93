"""Draw docs/viewer.png: the viewer in a real JupyterLab, on the NaN of notebooks/04-flash-attention.

    .venv/bin/python docs/screenshot.py

Needs JupyterLab, Playwright and Debian's chromium (`make chromium`).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
READY = "document.querySelector('canvas[data-role=\"heatmap\"]')?.dataset.state === 'ready'"


def cells() -> list[str]:
    """The flash-attention notebook up to its buggy launch, then a viewer on the first NaN."""
    source = json.loads((ROOT / "notebooks" / "04-flash-attention.ipynb").read_text())
    code = ["".join(c["source"]) for c in source["cells"] if c["cell_type"] == "code"]
    launch = next(i for i, c in enumerate(code) if c.startswith("%%tkernel interpret --name buggy"))
    return [*code[:launch], code[launch].replace("--name buggy", "--name buggy --quiet"),
            'kernel_nb.TraceViewer(buggy).select(pid=(0, 0), name="p", iteration=(0,))']  # fmt: skip


def main() -> None:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        nb = {
            "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                       "source": s} for i, s in enumerate(cells())],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5,
        }  # fmt: skip
        (Path(tmp) / "viewer.ipynb").write_text(json.dumps(nb))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        jupyter = Path(sys.executable).with_name("jupyter")
        server = subprocess.Popen(
            [str(jupyter), "lab", "--no-browser", "--ServerApp.token=", "--ServerApp.password=", f"--port={port}",
             "--ServerApp.ip=127.0.0.1", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={tmp}", "--LabApp.news_url=None"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1", "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        try:
            for _ in range(120):
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
                    break
                time.sleep(0.5)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1180, "height": 4000})
                page.set_default_timeout(120_000)
                page.goto(f"http://127.0.0.1:{port}/lab/tree/viewer.ipynb")
                page.wait_for_selector(".jp-Notebook .jp-Cell")
                with contextlib.suppress(Exception):
                    page.locator(".jp-Dialog .jp-mod-accept").click(timeout=15_000)
                page.wait_for_selector("text=Python 3 (ipykernel) | Idle")
                page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
                page.locator('.lm-Menu-itemLabel:text-is("Run All Cells")').click()
                page.wait_for_function(READY)
                page.wait_for_timeout(1500)  # the memory maps arrive after the heatmap
                page.add_style_tag(
                    content=".Toastify { display: none !important; }"
                )  # JupyterLab's news toast
                viewer = page.locator(".knb").last
                viewer.scroll_into_view_if_needed()
                # The header, source and value, then the findings: the memory maps are left out.
                top = viewer.bounding_box()
                main = viewer.locator(".knb-main").bounding_box()
                assert top is not None and main is not None
                head = page.screenshot(
                    clip={
                        "x": top["x"],
                        "y": top["y"],
                        "width": top["width"],
                        "height": main["y"] + main["height"] - top["y"],
                    }
                )
                findings = viewer.locator(".knb-findings").screenshot()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=20)
    parts = [Image.open(io.BytesIO(png)).convert("RGB") for png in (head, findings)]
    image = Image.new("RGB", (max(p.width for p in parts), sum(p.height for p in parts) + 12), "white")
    image.paste(parts[0], (0, 0))
    image.paste(parts[1], (0, parts[0].height + 12))
    image = image.quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    image.save(ROOT / "docs" / "viewer.png", optimize=True)
    print(f"wrote docs/viewer.png {image.size} {(ROOT / 'docs' / 'viewer.png').stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
