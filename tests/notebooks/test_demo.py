"""`python -m kernel_nb.demo`: notebooks run headless, standalone HTML that needs no network, a summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from notebook_support import ROOT

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip
NAMES = ["01-quickstart", "02-find-the-bug"]


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
        "02-find-the-bug: [error] softmax_kernel:6 pid=(5,0,0): tl.load of x_ptr reads elements [600, 628)"
        in findings
    )


@pytest.mark.parametrize("name", NAMES)
def test_the_html_loads_nothing_from_the_network(demo, name):
    html = (demo[0] / f"{name}.html").read_text(encoding="utf-8")

    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert not re.search(r"import\s*\(\s*[\"']https?:", html)
    assert "application/vnd.jupyter.widget-state+json" not in html
    assert "data:image/png;base64," in html  # the viewers, as their static PNGs


@pytest.mark.browser
def test_the_html_shows_the_viewers_offline(demo):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from playwright.sync_api import sync_playwright

    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    path = demo[0] / "02-find-the-bug.html"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            refused: list[str] = []

            def block(route):  # type: ignore[no-untyped-def]
                if route.request.url.startswith(("file:", "data:")):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            page.route("**/*", block)
            page.goto(path.as_uri(), wait_until="load")
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => [e.complete, e.naturalWidth, e.src.slice(0, 22)])"
            )
            page.screenshot(path=str(artifacts / "demo-02-find-the-bug.png"), full_page=True)
        finally:
            browser.close()
    assert refused == []
    assert len(images) >= 2
    assert all(complete and width > 0 and src == "data:image/png;base64," for complete, width, src in images)
