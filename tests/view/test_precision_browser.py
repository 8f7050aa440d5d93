"""The viewer in Chromium on a launch run with an fp64 shadow: the error map beside the value, its
total / own toggle and readout, the source gutter's marks; and nothing of it without a shadow."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from shadowed import gram_trace, line_of
from test_viewer_browser import (
    ARGS,
    CHROMIUM,
    DARK,
    HEAT,
    canned,
    serve,  # noqa: F401  (the fixture: the page, the state, the canned replies)
)

from kernel_nb.trace import Launch, Trace

pytestmark = pytest.mark.browser

ERRORS = 'canvas[data-role="error-heatmap"]'
READY = f"document.querySelector('{HEAT}')?.dataset.state === 'ready'"
ERRORS_READY = f"{READY} && document.querySelector('{ERRORS}').dataset.state === 'ready'"


def label_starts(text: str) -> str:
    return f"{ERRORS_READY} && document.querySelector('.knb-label').textContent.startsWith('{text}')"


def test_errors_beside_the_value_and_the_lines_that_lose_the_most(
    serve: Callable[[Trace, dict[str, Any]], str],  # noqa: F811
    add_trace: Trace,
    artifacts: Path,
) -> None:
    from playwright.sync_api import sync_playwright

    trace = gram_trace()
    launch = trace[0]
    page_url = serve(trace, canned(trace))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(page_url)

            # It opens on d of program 0: its total error in ulps beside its value, the same size.
            page.wait_for_function(label_starts(f"d (gram_distances:{line_of(launch, 'd')})"))
            value, error = page.locator(HEAT), page.locator(ERRORS)
            assert error.is_visible()
            vb, eb = value.bounding_box(), error.bounding_box()
            assert vb is not None and eb is not None
            assert eb["x"] >= vb["x"] + vb["width"] and abs(eb["y"] - vb["y"]) < 2
            assert (eb["width"], eb["height"]) == (vb["width"], vb["height"])
            assert error.get_attribute("data-view") == value.get_attribute("data-view") == "16x16"
            assert error.get_attribute("data-kind") == "error"
            total = (error.get_attribute("data-checksum"), pixels(page, ERRORS))

            # Hovering a cell of either map reads out the value, its fp64 shadow and its errors.
            expected = launch.precision(0, "d")
            for canvas in (error, value):
                box = canvas.bounding_box()
                assert box is not None
                canvas.hover(position={"x": box["width"] * 2.5 / 16, "y": box["height"] * 1.5 / 16})
                text = page.locator(".knb-value .knb-readout").inner_text()
                match = re.fullmatch(
                    r"\[1, 2\] = (\S+) · fp64 (\S+) · \|error\| (\S+) · relative (\S+) · (\S+) ulps \(own (\S+)\)",
                    text,
                )
                assert match is not None, text
                real, shadow, absolute, relative = (float(match[i]) for i in range(1, 5))
                assert np.float32(real) == expected.value[1, 2]  # 9 digits tell fp32 values apart
                assert shadow == pytest.approx(expected.shadow[1, 2], rel=1e-11)
                assert absolute == pytest.approx(expected.absolute[1, 2], rel=1e-4)
                assert relative == pytest.approx(expected.relative[1, 2], rel=1e-4)
                assert float(match[5]) == pytest.approx(expected.ulps[1, 2], rel=0.05)
                assert float(match[6]) == pytest.approx(expected.own_ulps[1, 2], abs=0.5)
            page.screenshot(path=str(artifacts / "precision-total.png"), full_page=True)

            # The toggle draws the statement's own error on the same scale, and stays for the next value.
            page.locator('.knb-toggle[data-kind="own_error"]').click()
            page.wait_for_function(f"document.querySelector('{ERRORS}').dataset.kind === 'own_error'")
            assert (error.get_attribute("data-checksum"), pixels(page, ERRORS)) != total
            assert page.locator('.knb-toggle[data-kind="own_error"]').get_attribute("aria-pressed") == "true"
            page.screenshot(path=str(artifacts / "precision-own.png"), full_page=True)

            # The tf32 dot's error is all its own: the two maps are the same.
            page.locator(f'.knb-line[data-line="{line_of(launch, "g")}"]').click()
            page.wait_for_function(label_starts(f"g (gram_distances:{line_of(launch, 'g')})"))
            assert error.get_attribute("data-kind") == "own_error"
            own_g = error.get_attribute("data-checksum")
            page.locator('.knb-toggle[data-kind="error"]').click()
            page.wait_for_function(f"document.querySelector('{ERRORS}').dataset.kind === 'error'")
            assert error.get_attribute("data-checksum") == own_g
            caption = page.locator(".knb-error-caption").inner_text()
            assert re.fullmatch(r"this value, in ulps of fp32: up to (\d+) in total, \1 its own", caption), (
                caption
            )

            # The gutter marks the lines whose own arithmetic loses ulps: the dot, then the cancellation.
            marks = page.locator(".knb-line:has(.knb-loss)").evaluate_all(
                "ls => ls.map((l) => [l.dataset.line, l.querySelector('.knb-loss').title, l.querySelector('.knb-loss').clientWidth])"
            )
            assert [line for line, _, _ in marks] == [str(line_of(launch, "g")), str(line_of(launch, "d"))]
            (_, g_title, g_width), (_, d_title, d_width) = marks
            assert re.fullmatch(r"g: own error up to (\d+) ulps \(fp32\), total up to \1 ulps", g_title)
            # the numbers are the launch's worst, in two significant digits past 1e5 ulps
            ulps, own = worst(launch, "d")
            told = re.fullmatch(r"d: own error up to (\S+) ulps \(fp32\), total up to (\S+) ulps", d_title)
            assert told is not None, d_title
            assert float(told[1]) == pytest.approx(own, rel=0.01)
            assert float(told[2]) == pytest.approx(ulps, rel=0.05) and ulps > 1e6
            assert g_width > d_width
            # integer lines (pid, rows, cols, ys), exact loads and fp32 sums within an ulp or two: none
            assert page.locator(".knb-gutter").count() == page.locator(".knb-line").count()
            for name in ("pid", "rows", "cols", "ys", "x", "y", "na", "nb"):
                assert page.locator(f'.knb-line[data-line="{line_of(launch, name)}"] .knb-loss').count() == 0

            # No companion is listed: each statement once, in the list and in this program's records.
            options = page.locator(".knb-stmts option").all_inner_texts()[1:]
            assert len(options) == len(set(options)) == sum(s.of is None for s in launch.statements)

            # An integer value has no shadow: no error map.
            page.locator(".knb-stmts").select_option(label=next(o for o in options if o.startswith("rows ")))
            page.wait_for_function(
                f"{READY} && document.querySelector('.knb-label').textContent.startsWith('rows')"
            )
            assert not error.is_visible() and not page.locator(".knb-toggle").first.is_visible()

            # Another program: its d, and its errors, in the toggle's choice.
            page.locator(".knb-stmts").select_option(label=next(o for o in options if o.startswith("d ")))
            slide(page, "pid x", 2)
            page.wait_for_function(
                f"{label_starts('d (')} && JSON.stringify(window.fake.state.pid) === '[2,0,0]'"
            )
            page.screenshot(path=str(artifacts / "precision-pid-2.png"), full_page=True)
            page.evaluate(DARK)
            page.screenshot(path=str(artifacts / "precision-dark.png"), full_page=True)
            assert page.evaluate("window.fake.missing") == []
            assert errors == []

            # Without a shadow, none of it.
            page.goto(serve(add_trace, canned(add_trace, pids=[(0, 0, 0)])))
            page.wait_for_function(READY)
            assert page.locator(".knb-gutter, .knb-loss, .knb-loss-legend").count() == 0
            assert not page.locator(".knb-errors").is_visible()
            assert not page.locator(".knb-caption").first.is_visible()
            assert errors == []
        finally:
            browser.close()


def pixels(page: Any, selector: str) -> str:
    return str(page.locator(selector).evaluate("c => c.toDataURL()"))


def slide(page: Any, label: str, value: int) -> None:
    page.locator(f'input[aria-label="{label}"]').evaluate(
        "(s, v) => { s.value = String(v); s.dispatchEvent(new Event('input', { bubbles: true })); }", value
    )


def worst(launch: Launch, name: str) -> tuple[float, float]:
    """A variable's largest total and own error in ulps over every program."""
    errors = [launch.precision(pid, name) for pid in range(launch.num_programs)]
    return max(float(e.ulps.max()) for e in errors), max(float(e.own_ulps.max()) for e in errors)
