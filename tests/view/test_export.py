"""kernel_nb.view.export: the viewer as standalone HTML that stays interactive with no kernel and no network."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, add_launch
from failing import FAILING_LINE, failed_trace

from kernel_nb.trace import Trace
from kernel_nb.view import TraceViewer, dispatch
from kernel_nb.view.export import MISSING, export_html, reply_table, request_key
from tests.chromium import ARGS, CHROMIUM

HEAT = 'canvas[data-role="heatmap"]'
READY = f"document.querySelector('{HEAT}')?.dataset.state === \"ready\""


def test_request_key_is_the_body_without_id_sorted_and_compact():
    assert (
        request_key({"id": 7, "type": "footprint", "pid": [1, 0, 0], "launch": 0, "arg": "x_ptr"})
        == '{"arg":"x_ptr","launch":0,"pid":[1,0,0],"type":"footprint"}'
    )


def test_the_table_answers_every_selection_as_the_widget_would(add_trace: Trace):
    table = reply_table(add_trace)

    for launch in add_trace:
        assert table.programs[launch.index] == sorted(launch.programs, key=launch.linear)
        for arg in launch.buffers:
            assert request_key({"type": "buffer", "launch": launch.index, "arg": arg}) in table.replies
        for pid in launch.programs:
            where = {"launch": launch.index, "pid": list(pid)}
            program = launch.program(pid)
            expected = [{"type": "program", **where}]
            expected += [
                {"type": "value", **where, "source": "record", "index": i, "field": "values"}
                for i in range(len(program.records))
            ]
            expected += [
                {"type": "value", **where, "source": "event", "index": i, "field": f}
                for i in range(len(program.events))
                for f in ("values", "indices")
            ]
            expected += [{"type": "footprint", **where, "arg": arg} for arg in launch.buffers]
            for request in expected:
                assert request_key(request) in table.replies, request
    assert len(table.replies) == sum(
        len(launch.buffers)
        + sum(
            1 + len(launch.program(pid).records) + 2 * len(launch.program(pid).events) + len(launch.buffers)
            for pid in launch.programs
        )
        for launch in add_trace
    )
    # The replies are dispatch's own, without the request id; buffers in base64.
    request = {
        "type": "value",
        "launch": 1,
        "pid": [3, 0, 0],
        "source": "record",
        "index": 7,
        "field": "values",
    }
    reply, buffers = dispatch.answer(add_trace, {"id": 5, **request})
    canned = table.replies[request_key(request)]
    assert canned.reply == {k: v for k, v in reply.items() if k != "id"}
    assert [base64.b64decode(b) for b in canned.buffers] == buffers
    assert table.size == sum(c.size for c in table.replies.values())


def program_bytes(table: Any, pid: tuple[int, int, int]) -> int:
    mark = f'"pid":[{pid[0]},{pid[1]},{pid[2]}]'
    return sum(c.size for k, c in table.replies.items() if mark in k)


def test_past_the_budget_the_selected_program_and_the_first_ones_stay():
    trace = Trace([add_launch(grid=(8, 1, 1))])
    full = reply_table(trace)
    shared = sum(c.size for k, c in full.replies.items() if '"pid"' not in k)
    budget = (
        shared + sum(program_bytes(full, (p, 0, 0)) for p in (5, 0, 1)) + program_bytes(full, (2, 0, 0)) // 2
    )
    viewer = TraceViewer(trace).select(pid=5)

    table = reply_table(viewer, max_bytes=budget)

    assert table.programs == {0: [(5, 0, 0), (0, 0, 0), (1, 0, 0)]}
    assert table.size <= budget
    assert request_key({"type": "program", "launch": 0, "pid": [2, 0, 0]}) not in table.replies
    assert request_key({"type": "buffer", "launch": 0, "arg": "out_ptr"}) in table.replies


def test_with_no_budget_the_page_still_opens_on_the_selected_value():
    trace = Trace([add_launch(grid=(8, 1, 1))])
    viewer = TraceViewer(trace).select(pid=3, name="acc", iteration=(1,))

    table = reply_table(viewer, max_bytes=0)

    where = {"launch": 0, "pid": [3, 0, 0]}
    acc = [
        i for i, r in enumerate(trace[0].program((3, 0, 0)).records) if r.stmt == 7 and r.iteration == (1,)
    ]
    assert set(table.replies) == {
        request_key({"type": "program", **where}),
        request_key({"type": "value", **where, "source": "record", "index": acc[0], "field": "values"}),
    }
    assert table.programs == {}


def embedded(html: str) -> dict[str, Any]:
    match = re.search(r"<script[^>]*\bdata-knb-offline\b[^>]*>(.*?)</script>", html, re.DOTALL)
    assert match is not None
    return json.loads(match.group(1))


def test_the_fragment_inlines_everything_and_references_no_network(add_trace: Trace):
    viewer = TraceViewer(add_trace).select(launch=1, pid=4)

    html = export_html(viewer)

    payload = embedded(html)
    assert payload["esm"] == (ROOT / "js" / "viewer.js").read_text(encoding="utf-8")
    assert payload["state"] == {
        "meta": viewer.meta,
        "launch": 1,
        "pid": [4, 0, 0],
        "stmt": viewer.stmt,
        "iteration": viewer.iteration,
        "finding": -1,
    }
    assert payload["missing"] == MISSING == "not in this offline export; open the notebook in Jupyter"
    assert len(payload["replies"]) == len(reply_table(viewer).replies)
    assert html.count("<script") == 2 and html.count("</script>") == 2  # nothing embedded ends them early
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert not re.search(r"""import\s*\(?\s*["']https?:""", html)
    assert 'class="knb-offline-fallback"' in html and "data:image/png;base64," in html
    assert "every program's values are in this page." in html


def test_to_html_writes_a_whole_page(add_trace: Trace, tmp_path: Path):
    path = tmp_path / "trace.html"

    text = TraceViewer(add_trace).to_html(path)

    assert path.read_text(encoding="utf-8") == text
    assert text.startswith("<!doctype html>") and "<title>trace</title>" in text
    assert TraceViewer(add_trace).to_html().startswith("<!doctype html>")


def open_offline(pw: Any, path: Path) -> tuple[Any, Any, list[str], list[str]]:
    """Chromium on a file page, with every request that is not for a file refused."""
    browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
    page = browser.new_page(viewport={"width": 1200, "height": 1000})
    errors: list[str] = []
    refused: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    def block(route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    page.route("**/*", block)
    page.goto(path.as_uri(), wait_until="load")
    return browser, page, errors, refused


def slide(page: Any, label: str, value: int) -> None:
    page.locator(f'input[aria-label="{label}"]').first.evaluate(
        "(s, v) => { s.value = String(v); s.dispatchEvent(new Event('input', { bubbles: true })); }", value
    )


@pytest.mark.browser
def test_the_exported_page_is_interactive_offline(add_trace: Trace, tmp_path: Path, artifacts: Path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from playwright.sync_api import sync_playwright

    path = tmp_path / "viewer.html"
    TraceViewer(add_trace).to_html(path)
    with sync_playwright() as pw:
        browser, page, errors, refused = open_offline(pw, path)
        try:
            page.wait_for_function(READY)
            assert page.locator(".knb-offline").get_attribute("data-state") == "mounted"
            assert page.locator(".knb-offline-fallback").count() == 0
            assert page.locator(".knb-label").inner_text().startswith("output (add_kernel:22)")
            page.wait_for_function(
                "document.querySelectorAll('canvas[data-role=\"footprint\"]').length === 3"
            )
            before = page.locator(HEAT).evaluate("c => c.toDataURL()")
            checksum = page.locator(HEAT).get_attribute("data-checksum")

            slide(page, "pid x", 2)
            page.wait_for_function(
                f"c => {READY} && document.querySelector('{HEAT}').dataset.checksum !== c", arg=checksum
            )

            assert page.locator(HEAT).evaluate("c => c.toDataURL()") != before
            assert page.locator('input[aria-label="pid x"] + span').inner_text() == "2"
            page.locator('.knb-line[data-line="20"]').click()  # another record of that program
            page.wait_for_function(
                f"{READY} && document.querySelector('.knb-label').textContent.startsWith('tile')"
            )
            page.locator(".knb-launch").select_option("1")  # another launch
            page.wait_for_function("document.querySelector('input[aria-label=\"pid y\"]') === null")
            page.wait_for_function(READY)
            checksum = page.locator(HEAT).get_attribute("data-checksum")
            slide(page, "pid x", 5)  # a program whose values were replayed for the export
            page.wait_for_function(
                f"c => {READY} && document.querySelector('{HEAT}').dataset.checksum !== c", arg=checksum
            )
            assert page.locator(".knb-label").inner_text().startswith("output (add_kernel:22)")
            page.screenshot(path=str(artifacts / "export-offline.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert refused == []


@pytest.mark.browser
def test_programs_left_out_of_the_page_say_so(tmp_path: Path, artifacts: Path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from playwright.sync_api import sync_playwright

    path = tmp_path / "partial.html"
    trace = Trace([add_launch(grid=(8, 1, 1))])
    full = reply_table(trace)
    shared = sum(c.size for k, c in full.replies.items() if '"pid"' not in k)
    TraceViewer(trace).to_html(path, max_bytes=shared + 2 * program_bytes(full, (0, 0, 0)) + 1000)
    with sync_playwright() as pw:
        browser, page, errors, refused = open_offline(pw, path)
        try:
            page.wait_for_function(READY)
            note = page.locator(".knb-offline-note").inner_text()
            slide(page, "pid x", 7)
            page.wait_for_function(f"document.querySelector('{HEAT}').dataset.state === 'error'")
            label = page.locator(".knb-label").inner_text()
            memory = page.locator(".knb-memory").inner_text()  # the previous program's maps are gone
            page.screenshot(path=str(artifacts / "export-partial.png"), full_page=True)
        finally:
            browser.close()
    assert note == (
        "kernel_nb offline view: add_kernel (launch 0): 2 of 8 programs are in this page (the first ones "
        "in pid order and the selected one); open the notebook in Jupyter for the others."
    )
    assert label == "program (7, 0, 0): not in this offline export; open the notebook in Jupyter"
    assert memory == label
    assert errors == []
    assert refused == []


@pytest.mark.browser
def test_the_exported_page_opens_at_the_failure_and_its_findings_navigate(tmp_path: Path, artifacts: Path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from playwright.sync_api import sync_playwright

    chosen = "document.querySelector('.knb-finding.knb-chosen')?.dataset.index"
    marked = "[...document.querySelectorAll('.knb-line.knb-error')].map((l) => l.dataset.line)"
    path = tmp_path / "failed.html"
    TraceViewer(failed_trace()).to_html(path)
    with sync_playwright() as pw:
        browser, page, errors, refused = open_offline(pw, path)
        try:
            page.wait_for_function(f"{READY} && {chosen} === '0'")
            opened = (
                page.locator(".knb-pidbox").input_value(),
                page.evaluate(marked),
                page.locator(".knb-label").inner_text(),
            )
            page.locator(".knb-finding").nth(1).click()
            page.wait_for_function(
                f"{READY} && {chosen} === '1' && document.querySelector('.knb-label').textContent.startsWith('x ')"
            )
            clicked = (page.locator(".knb-pidbox").input_value(), page.evaluate(marked))
            page.screenshot(path=str(artifacts / "export-failed-launch.png"), full_page=True)
        finally:
            browser.close()
    assert opened[:2] == ("1, 1, 0", [str(FAILING_LINE)])
    assert opened[2].startswith("k (add_kernel:18) iteration (2,)")
    assert clicked == ("3, 0, 0", ["15"])
    assert errors == []
    assert refused == []
