"""The viewer in Chromium on a failed launch: it opens at the error, and each finding, clicked or
picked from the keyboard, takes the view to its program, line and loop iteration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from failing import FAILING_LINE, failed_trace
from test_viewer_browser import (
    ARGS,
    CHROMIUM,
    HEAT,
    canned,
    serve,  # noqa: F401  (the fixture: the page, the state, the canned replies)
)

from kernel_nb.trace import Trace

pytestmark = pytest.mark.browser


CHOSEN = "document.querySelector('.knb-finding.knb-chosen')?.dataset.index"
MARKED = "[...document.querySelectorAll('.knb-line.knb-error')].map((l) => l.dataset.line)"


def test_a_failed_launch_opens_at_its_error_and_each_finding_takes_the_view_to_its_own(
    serve: Callable[[Trace, dict[str, Any]], str],  # noqa: F811
    artifacts: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    trace = failed_trace()
    page_url = serve(trace, canned(trace))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(page_url)
            ready = f"document.querySelector('{HEAT}')?.dataset.state === \"ready\""
            page.wait_for_function(f"{ready} && {CHOSEN} === '0'")

            # At the failure: the failing program, its line in the error colour, the loop iteration.
            assert page.evaluate("window.fake.state.pid") == [1, 1, 0]
            assert page.evaluate(MARKED) == [str(FAILING_LINE)]
            assert page.locator('input[aria-label="pid y"]').input_value() == "1"
            assert page.locator(".knb-label").inner_text().startswith("k (add_kernel:18)")
            assert "iteration (2)" in page.locator(".knb-iter").inner_text()
            rows = page.locator(".knb-finding")
            assert rows.count() == 2
            assert rows.nth(0).get_attribute("data-kind") == "launch_error"
            assert rows.nth(0).inner_text().endswith(f"— line {FAILING_LINE} · pid (1, 1, 0) · iteration (2)")
            page.screenshot(path=str(artifacts / "viewer-failed-launch.png"), full_page=True)

            # The NaN finding: program (3, 0, 0), line 15 and the value of x there.
            rows.nth(1).click()
            page.wait_for_function(
                f"{ready} && {CHOSEN} === '1' && document.querySelector('.knb-label').textContent.startsWith('x ')"
            )
            assert page.evaluate(
                "[window.fake.state.pid, window.fake.state.stmt, window.fake.state.finding]"
            ) == [
                [3, 0, 0],
                3,
                1,
            ]
            assert page.evaluate(MARKED) == ["15"]
            assert page.locator('input[aria-label="pid x"]').input_value() == "3"

            # Back to the error, from the keyboard.
            rows.nth(0).focus()
            page.keyboard.press("Enter")
            page.wait_for_function(
                f"{ready} && {CHOSEN} === '0' && JSON.stringify(window.fake.state.pid) === '[1,1,0]'"
            )
            assert page.evaluate("[window.fake.state.stmt, window.fake.state.iteration]") == [6, [2]]
            assert page.evaluate(MARKED) == [str(FAILING_LINE)]
            assert page.evaluate("window.fake.missing") == []
            assert errors == []
        finally:
            browser.close()
