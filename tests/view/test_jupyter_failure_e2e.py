"""End to end: a %%tkernel interpret cell whose launch fails, in a real JupyterLab and Notebook 7: the
viewer opens at the failure, above the error and its line saying where the recording is."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import test_jupyter_e2e as e2e
from test_jupyter_e2e import app  # noqa: F401  (the fixture, serving the notebook `e2e.notebook()` makes)

pytestmark = pytest.mark.browser

# program 7 reads elements [1000, 1024) of x, which has 1000
FAILING = """\
%%tkernel interpret
add_kernel[(triton.cdiv(n, 128),)](x, y, out, n + 24, BLOCK=128)"""
LOAD_LINE = 1 + next(i for i, text in enumerate(e2e.KERNEL.splitlines()) if "x = tl.load" in text)


@pytest.fixture
def failing_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """The e2e notebook with the failing launch in place of the working one."""
    monkeypatch.setattr(e2e, "LAUNCH", FAILING)


def test_a_failing_cell_shows_the_viewer_at_the_failure_above_the_error(
    failing_cell: None,
    app: tuple[str, str],  # noqa: F811
    artifacts: Path,
) -> None:
    name, url = app
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(e2e.CHROMIUM), args=e2e.ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1200})
            page.set_default_timeout(90_000)
            page.goto(url)
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            with contextlib.suppress(PlaywrightTimeout):
                page.locator(".jp-Dialog .jp-mod-accept").click(timeout=15_000)
            page.wait_for_selector(e2e.IDLE)
            page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
            page.locator('.lm-Menu-itemLabel:text-is("Run All Cells")').click()
            try:
                page.wait_for_function(
                    f"{e2e.READY} && document.querySelector('.knb-finding.knb-chosen')?.dataset.index === '0'"
                )
            except Exception:
                page.screenshot(path=str(artifacts / f"{name}-e2e-failure-cell.png"))
                outputs = page.locator(".jp-OutputArea").all_inner_texts()
                raise AssertionError(f"no viewer at the failure; cell outputs: {outputs}") from None
            pid = page.locator(".knb-pidbox").input_value()
            marked = page.eval_on_selector_all(".knb-line.knb-error", "ls => ls.map((l) => l.dataset.line)")
            label = page.locator(".knb-label").inner_text()
            output = page.locator(".jp-OutputArea").last.inner_text()
            viewer_first = page.evaluate(
                """() => { const area = [...document.querySelectorAll('.jp-OutputArea')].at(-1);
                const viewer = area.querySelector('.knb'), error = area.querySelector('[data-mime-type="application/vnd.jupyter.stderr"]');
                return !!viewer && !!error && !!(viewer.compareDocumentPosition(error) & Node.DOCUMENT_POSITION_FOLLOWING); }"""
            )
            page.locator(".knb").first.scroll_into_view_if_needed()
            page.screenshot(path=str(artifacts / f"{name}-e2e-failure-cell.png"))
        finally:
            browser.close()
    assert pid == "7, 0, 0"
    assert marked == [str(LOAD_LINE)]
    assert label.startswith("mask (add_kernel:")  # what program 7 computed last, before the load
    assert "KernelMemoryError: add_kernel" in output
    assert output.rstrip().endswith(
        "kernel_nb: the launch's recording is in _tk (its error is _tk[0].findings[0]); the viewer above "
        "opens at the failure"
    )
    assert viewer_first
