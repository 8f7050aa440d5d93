"""`python -m kernel_nb.demo`: notebooks run headless, standalone HTML that needs no network, a summary."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from notebook_support import ROOT

from tests.chromium import ARGS, CHROMIUM

NAMES = ["01-quickstart", "02-find-the-bug"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo-output")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "kernel_nb.demo", "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=tmp_path_factory.getbasetemp(), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout


def test_demo_writes_the_executed_notebooks_and_their_html(demo):
    out, _ = demo

    for name in NAMES:
        assert (out / f"{name}.ipynb").is_file()
        assert (out / f"{name}.html").is_file()


def test_demo_prints_the_summaries_and_the_findings(demo):
    _, stdout = demo

    assert "running 01-quickstart.ipynb ..." in stdout
    assert re.search(r"^ 0  add_kernel +4x1x1 ", stdout, re.MULTILINE)
    assert re.search(r"^ 0  softmax_kernel +6x1x1 .*\(error\)$", stdout, re.MULTILINE)
    findings = stdout[stdout.index("Findings and launch errors") :]
    assert (
        "02-find-the-bug: [error] KernelMemoryError: softmax_kernel:6 pid=(5,0,0): tl.load of x_ptr reads x_ptr[6, 0:28] but "
        "x_ptr has shape (6, 100) (28 of 128 active lanes out of bounds: lanes[100:128]); the mask lets "
        "these lanes through; check the mask's bound" in findings
    )
    assert findings.count("softmax_kernel:6 pid=(5,0,0)") == 1  # the error once, as the launch's first finding


@pytest.mark.parametrize("name", NAMES)
def test_the_html_loads_nothing_from_the_network(demo, name):
    html = (demo[0] / f"{name}.html").read_text(encoding="utf-8")

    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert not re.search(r"""import\s*\(?\s*["']https?:""", html)
    assert "application/vnd.jupyter.widget-state+json" not in html
    assert "data:image/png;base64," in html  # the viewers' static PNGs, shown until their script runs


@pytest.mark.parametrize("name", NAMES)
def test_each_viewer_is_in_the_html_with_its_state(demo, name):
    out = demo[0]
    nb = json.loads((out / f"{name}.ipynb").read_text(encoding="utf-8"))
    views = [
        o["data"][WIDGET_VIEW]["model_id"]
        for cell in nb["cells"]
        for o in cell.get("outputs", [])
        if WIDGET_VIEW in o.get("data", {})
    ]
    html = (out / f"{name}.html").read_text(encoding="utf-8")

    payloads = [
        json.loads(m) for m in re.findall(r"<script[^>]*\bdata-knb-offline\b[^>]*>(.*?)</script>", html)
    ]

    assert views and len(payloads) == len(views)
    # The executed notebook keeps the widget state the viewers' models had; the HTML carries the same.
    state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    for model_id, payload in zip(views, payloads):
        saved = state[model_id]["state"]
        keys = ("meta", "launch", "pid", "stmt", "iteration", "finding")
        assert payload["state"] == {k: saved[k] for k in keys}
        assert any(
            key.startswith('{"launch":0,"pid":[0,0,0],"type":"program"}') for key in payload["replies"]
        )


@pytest.mark.browser
def test_the_html_shows_the_viewers_offline(demo):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from playwright.sync_api import sync_playwright

    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    path = demo[0] / "02-find-the-bug.html"
    heat = 'canvas[data-role="heatmap"]'
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            refused: list[str] = []
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))

            def block(route):  # type: ignore[no-untyped-def]
                if route.request.url.startswith("file:"):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", block)
            page.goto(path.as_uri(), wait_until="load")
            # the failing cell's viewer (open at the failure), then the two the notebook displays
            ready = f"[...document.querySelectorAll('{heat}')].map(c => c.dataset.state).join() === 'ready,ready,ready'"
            page.wait_for_function(ready)
            mounted = page.eval_on_selector_all(".knb-offline", "els => els.map(e => e.dataset.state)")
            fallbacks = page.locator(".knb-offline-fallback").count()
            # the notebook's own viewer of x (the failing cell's, at the mask, draws the same for every pid)
            shown = page.locator(heat).nth(1)
            before = shown.evaluate("c => c.toDataURL()")
            checksum = shown.get_attribute("data-checksum")
            page.locator('input[aria-label="pid x"]').nth(1).evaluate(
                "s => { s.value = '3'; s.dispatchEvent(new Event('input', { bubbles: true })); }"
            )
            second = f"document.querySelectorAll('{heat}')[1]"
            page.wait_for_function(
                f"c => {second}.dataset.state === 'ready' && {second}.dataset.checksum !== c", arg=checksum
            )
            after = shown.evaluate("c => c.toDataURL()")
            page.screenshot(path=str(artifacts / "demo-02-find-the-bug.png"), full_page=True)
        finally:
            browser.close()
    assert mounted == ["mounted", "mounted", "mounted"]
    assert fallbacks == 0
    assert after != before
    assert errors == []
    assert refused == []
