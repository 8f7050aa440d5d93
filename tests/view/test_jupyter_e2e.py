"""End to end: %%tkernel interpret in a real JupyterLab and a real Notebook 7, driven by headless Chromium."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import ARGS, CHROMIUM

HEAT = 'canvas[data-role="heatmap"]'
READY = f"document.querySelector('{HEAT}')?.dataset.state === 'ready'"

pytestmark = pytest.mark.browser

KERNEL = """\
import numpy as np
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(out_ptr + offsets, output, mask=mask)


n = 1000
x = np.arange(n, dtype=np.float32)
y = np.ones(n, dtype=np.float32)
out = np.empty_like(x)"""

LAUNCH = """\
%%tkernel interpret
add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)"""


def notebook() -> dict[str, object]:
    cells = ["%load_ext kernel_nb", KERNEL, LAUNCH]
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The two front ends: the server command and the page that opens the notebook.
APPS = {"lab": ("lab", "lab/tree/e2e.ipynb"), "notebook": ("notebook", "notebooks/e2e.ipynb")}
IDLE = '.jp-Notebook-ExecutionIndicator[data-status="idle"]'


@pytest.fixture(params=sorted(APPS))
def app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A Jupyter server of one front end on a free port; yields (its name, the notebook's URL)."""
    name = request.param
    command, page = APPS[name]
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    try:
        import kernel_nb.magic  # noqa: F401
    except ImportError as error:
        pytest.skip(f"kernel_nb.magic cannot be imported: {error}")
    (tmp_path / "e2e.ipynb").write_text(json.dumps(notebook()))
    port = free_port()
    jupyter = Path(sys.executable).with_name("jupyter")
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(jupyter), command, "--no-browser", "--ServerApp.token=", "--ServerApp.password=", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=None"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"jupyter {command} did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}"
                    )
                time.sleep(0.5)
        yield name, f"http://127.0.0.1:{port}/{page}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_tkernel_cell_shows_a_viewer_that_follows_the_pid(app: tuple[str, str], artifacts: Path) -> None:
    name, url = app
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            page.set_default_timeout(90_000)
            page.goto(url)
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            # JupyterLab may ask which kernel to start, even with the kernelspec in the metadata.
            with contextlib.suppress(PlaywrightTimeout):
                page.locator(".jp-Dialog .jp-mod-accept").click(timeout=15_000)
            page.wait_for_selector(IDLE)
            page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
            page.locator('.lm-Menu-itemLabel:text-is("Run All Cells")').click()
            try:
                page.wait_for_function(READY)
            except Exception:
                page.screenshot(path=str(artifacts / f"{name}-e2e-failure.png"))
                outputs = page.locator(".jp-OutputArea").all_inner_texts()
                raise AssertionError(f"no heatmap drawn; cell outputs: {outputs}") from None
            page.wait_for_function("document.querySelectorAll('canvas[data-role=\"buffer\"]').length === 3")
            heat = page.locator(HEAT)
            assert page.locator(".knb-label").inner_text().startswith("output")
            before = heat.evaluate("c => c.toDataURL()")
            checksum = heat.get_attribute("data-checksum")
            page.locator('input[aria-label="pid x"]').evaluate(
                "s => { s.value = '7'; s.dispatchEvent(new Event('input', { bubbles: true })); }"
            )
            page.wait_for_function(
                f"c => {READY} && document.querySelector('{HEAT}').dataset.checksum !== c", arg=checksum
            )
            assert heat.evaluate("c => c.toDataURL()") != before
            # The last program runs 104 of its 128 lanes: its stored values end at 999 + 1.
            assert page.locator(".knb-stats td").nth(1).inner_text() == "1000"
            page.locator(".knb-viewer, .knb").first.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / f"{name}-e2e.png"))
        finally:
            browser.close()


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
WIDTHS = (900, 1400, 2000)
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[str]:
    """A JupyterLab server over copies of notebooks/ (it autosaves what it runs); yields its base URL."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    for path in NOTEBOOKS.glob("0*.ipynb"):
        (tmp_path / path.name).write_text(path.read_text())
    port = free_port()
    jupyter = Path(sys.executable).with_name("jupyter")
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--ServerApp.token=", "--ServerApp.password=", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=None"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"jupyter lab did not start:\n{(tmp_path / 'server.log').read_text()[-3000:]}"
                    )
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def set_theme(page: Any, theme: str) -> None:
    """Settings → Theme → `theme`, then wait for JupyterLab to apply it."""
    page.locator('.lm-MenuBar-itemLabel:text-is("Settings")').click()
    page.locator('.lm-Menu-itemLabel:text-is("Theme")').hover()
    page.locator(f'.lm-Menu-itemLabel:text-is("{theme}")').click()
    light = "true" if "Light" in theme else "false"
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{light}'")


QUEUED = "[...document.querySelectorAll('.jp-InputPrompt')].some((e) => e.textContent.includes('*'))"
PROMPTS = ".jp-CodeCell .jp-InputPrompt"
# the run began: a cell is queued or running ([*]), or the prompts changed already (cells that ran
# between two polls, or before the first)
STARTED = (
    f"(before) => {{ const now = [...document.querySelectorAll('{PROMPTS}')].map((e) => e.textContent);"
    " return now.some((t) => t.includes('*')) || now.join('|') !== before; }"
)


def run_all(page: Any) -> None:
    """Run every code cell; JupyterLab stops at a cell that raises (tagged raises-exception): go on below it."""
    start(page, "Run All Cells")
    for _ in range(5):
        page.wait_for_function(f"!{QUEUED}")  # done when no cell is queued or running ([*])
        prompts = page.locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
        ran = [i for i, text in enumerate(prompts) if re.search(r"\[\d+\]", text)]
        left = [i for i in range(len(prompts)) if i > max(ran, default=-1)]
        if not left:
            return
        page.locator(".jp-CodeCell").nth(left[0]).locator(".jp-InputPrompt").click()
        start(page, "Run Selected Cell and All Below")


def start(page: Any, item: str) -> None:
    """Run → `item`, and wait until the run has begun. On a loaded machine a menu click can come
    before JupyterLab takes it: once, the click is made again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(2):
        before = "|".join(page.locator(PROMPTS).all_text_contents())
        page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
        page.locator(f'.lm-Menu-itemLabel:text-is("{item}")').click()
        try:
            page.wait_for_function(STARTED, arg=before, timeout=30_000 * (attempt + 1))
            return
        except PlaywrightTimeout:
            if attempt:
                raise


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("0*.ipynb")))
def test_notebook_viewers_fit_jupyterlab(lab: str, name: str, artifacts: Path) -> None:
    """Every viewer of a notebook, at 900, 1400 and 2000 px windows with the file browser open, light
    and dark: nothing is cut off at its right edge (screenshots in test-artifacts/)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    stem = name.removesuffix(".ipynb")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(300_000)  # the notebooks run on a shared CPU
            page.goto(f"{lab}/lab/tree/{name}?reset")  # not the notebooks an earlier test left open
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            with contextlib.suppress(PlaywrightTimeout):
                page.locator(".jp-Dialog .jp-mod-accept").click(timeout=15_000)
            page.wait_for_function(
                f"[...document.querySelectorAll('{IDLE}')].some((e) => e.offsetParent !== null)"
            )
            run_all(page)
            page.wait_for_function(
                "[...document.querySelectorAll('.knb')].every((v) => v.dataset.busy === 'false')"
            )
            viewers = page.locator(".jp-Notebook .knb")
            assert viewers.count() > 0 or stem == "05-gpu-compare"
            with contextlib.suppress(PlaywrightTimeout):  # JupyterLab's question about news covers the page
                page.locator('.jp-toast-button:text-is("No")').click(timeout=2_000)
            # The file browser is open, as it is by default: the output area is narrower than the window.
            if not page.locator(".jp-FileBrowser").is_visible():
                page.locator('[data-id="filebrowser"]').click()
            for theme in ("light", "dark"):
                set_theme(page, THEMES[theme])
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 1000})
                    page.wait_for_timeout(300)  # JupyterLab lays out on resize
                    for i in range(viewers.count()):
                        viewer = viewers.nth(i)
                        fits = viewer.evaluate("e => [e.scrollWidth, e.clientWidth]")
                        assert fits[0] <= fits[1], (name, width, theme, i, fits)
                        # The window as the user sees it, the viewer's top at the top of the notebook.
                        viewer.evaluate("e => e.scrollIntoView({ block: 'start' })")
                        page.wait_for_timeout(100)
                        page.screenshot(path=str(artifacts / f"lab-{stem}-{i}-{width}-{theme}.png"))
        finally:
            browser.close()
