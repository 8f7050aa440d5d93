"""js/viewer.js in headless Chromium, against a fake anywidget model that answers from Python's replies."""

from __future__ import annotations

import base64
import functools
import http.server
import json
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FILE, add_launch, big_value_launch

from kernel_nb.trace import (
    ArgumentInfo,
    BufferMap,
    Launch,
    ProgramTrace,
    Record,
    SourceInfo,
    Statement,
    Summary,
    Trace,
)
from kernel_nb.view import TraceViewer, dispatch
from tests.chromium import ARGS, CHROMIUM

JS = Path(__file__).resolve().parents[2] / "js"

pytestmark = pytest.mark.browser

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><link rel="stylesheet" href="viewer.css">
<style>body { margin: 12px; background: var(--jp-layout-color0, #fff); }</style></head>
<body><div id="app"></div>
<script type="module">
import widget from "./viewer.js";

/** JSON with sorted keys and no spaces: the same text as Python's json.dumps(sort_keys=True, separators=(",", ":")). */
const stable = (x) => Array.isArray(x) ? `[${x.map(stable).join(",")}]`
  : x !== null && typeof x === "object" ? `{${Object.keys(x).sort().map((k) => `${JSON.stringify(k)}:${stable(x[k])}`).join(",")}}`
  : JSON.stringify(x);
const decode = (b64) => { const s = atob(b64); const u = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i); return new DataView(u.buffer); };

// The parts of an anywidget model the viewer uses; replies come from canned Python payloads.
class FakeModel {
  constructor(state, canned) { this.state = state; this.canned = canned; this.handlers = {}; this.sent = []; this.missing = []; this.saves = 0; }
  get(k) { return this.state[k]; }
  set(k, v) { this.state[k] = v; for (const cb of this.handlers[`change:${k}`] || []) cb(); }
  save_changes() { this.saves++; }
  on(name, cb) { (this.handlers[name] ||= []).push(cb); }
  off(name, cb) { this.handlers[name] = (this.handlers[name] || []).filter((f) => f !== cb); }
  send(msg) {
    const { id, ...body } = msg;
    const key = stable(body);
    this.sent.push(key);
    const hit = this.canned[key];
    if (!hit) this.missing.push(key);
    const reply = hit ? { ...hit.reply, id } : { type: "error", id, message: `no canned reply for ${key}` };
    const buffers = hit ? hit.buffers.map(decode) : [];
    setTimeout(() => { for (const cb of this.handlers["msg:custom"] || []) cb(reply, buffers); }, 5);
  }
}
const [state, canned] = await Promise.all(["state.json", "payloads.json"].map((f) => fetch(f).then((r) => r.json())));
window.fake = new FakeModel(state, canned);
widget.render({ model: window.fake, el: document.getElementById("app") });
</script></body></html>
"""

DARK = """document.body.style.cssText += `;--jp-layout-color0:#111111;--jp-layout-color1:#1e1e1e;--jp-ui-font-color1:#e0e0e0;
--jp-ui-font-color2:#9e9e9e;--jp-border-color2:#444;--jp-cell-editor-background:#1a1a1a;--jp-input-background:#222;
--jp-brand-color1:#64b5f6;--jp-brand-color2:rgba(100,181,246,.35);--jp-brand-color3:rgba(100,181,246,.14);color-scheme:dark`;"""


def key(request: dict[str, Any]) -> str:
    return json.dumps(request, sort_keys=True, separators=(",", ":"))


def canned(trace: Trace, pids: list[tuple[int, int, int]] | None = None) -> dict[str, Any]:
    """Every reply the viewer can ask for on these programs (all when None), keyed by the request."""
    table: dict[str, Any] = {}

    def put(**request: Any) -> None:
        reply, buffers = dispatch.answer(trace, {"id": 0, **request})
        table[key(request)] = {"reply": reply, "buffers": [base64.b64encode(b).decode() for b in buffers]}

    for launch in trace:
        for arg in launch.buffers:
            put(type="buffer", launch=launch.index, arg=arg)
        for pid in [p for p in launch.programs if pids is None or p in pids]:
            where = {"launch": launch.index, "pid": list(pid)}
            put(type="program", **where)
            program = launch.program(pid)
            for i, record in enumerate(program.records):
                put(type="value", **where, source="record", index=i, field="values")
                if len(record.shape) == 3:  # the one slice the test asks for
                    put(
                        type="value",
                        **where,
                        source="record",
                        index=i,
                        field="values",
                        axes=[0, 2],
                        at=[0, 0, 0],
                    )
            for i in range(len(program.events)):
                for field in ("values", "indices"):
                    put(type="value", **where, source="event", index=i, field=field)
            loops = sorted({tuple(r.iteration) for r in program.records if r.iteration})
            for arg in launch.buffers:
                put(type="footprint", **where, arg=arg)
                for iteration in loops:  # a record in a loop draws that iteration's footprint
                    put(type="footprint", **where, arg=arg, iteration=list(iteration))
    return table


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[Trace, dict[str, Any]], str]]:
    """Write the page, the widget state and the canned replies for a trace; serve them over HTTP (ES modules need it)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    for name in ("viewer.js", "viewer.css"):
        shutil.copy(JS / name, tmp_path / name)
    (tmp_path / "index.html").write_text(PAGE)
    handler = functools.partial(QuietHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def page_for(trace: Trace, table: dict[str, Any]) -> str:
        state = TraceViewer(trace).get_state()
        (tmp_path / "state.json").write_text(
            json.dumps({k: state[k] for k in ("meta", "launch", "pid", "stmt", "iteration", "finding")})
        )
        (tmp_path / "payloads.json").write_text(json.dumps(table))
        return f"http://127.0.0.1:{server.server_address[1]}/index.html"

    try:
        yield page_for
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


HEAT = 'canvas[data-role="heatmap"]'


def test_viewer_in_chromium(
    serve: Callable[[Trace, dict[str, Any]], str], add_trace: Trace, artifacts: Path
) -> None:
    from playwright.sync_api import sync_playwright

    page_url = serve(add_trace, canned(add_trace))

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(page_url)
            ready = f"document.querySelector('{HEAT}')?.dataset.state === \"ready\""
            page.wait_for_function(ready)
            label = page.locator(".knb-label")
            assert label.inner_text().startswith("output (add_kernel:22)")
            assert page.locator(".knb-launch option").count() == 2
            assert page.locator('input[aria-label="pid x"]').count() == 1
            assert page.locator('input[aria-label="pid y"]').count() == 1
            assert page.locator('input[aria-label="pid z"]').count() == 0
            page.wait_for_function("document.querySelectorAll('canvas[data-role=\"buffer\"]').length === 3")
            page.wait_for_function(
                "document.querySelectorAll('canvas[data-role=\"footprint\"]').length === 3"
            )
            page.screenshot(path=str(artifacts / "viewer-initial.png"), full_page=True)

            # The pid slider fetches another program and redraws the heatmap.
            before = pixels(page)
            checksum = page.locator(HEAT).get_attribute("data-checksum")
            slide(page, "pid x", 2)
            page.wait_for_function(
                f"c => {ready} && document.querySelector('{HEAT}').dataset.checksum !== c", arg=checksum
            )
            assert pixels(page) != before
            assert page.evaluate("window.fake.state.pid") == [2, 0, 0]
            page.screenshot(path=str(artifacts / "viewer-pid-2.png"), full_page=True)

            # Clicking a source line selects its record; a 2-D value draws as a grid.
            page.locator('.knb-line[data-line="20"]').click()
            page.wait_for_function(
                f"{ready} && document.querySelector('.knb-label').textContent.startsWith('tile')"
            )
            assert page.locator(HEAT).evaluate("c => [c.width, c.height]") == [256, 128]
            assert page.evaluate("window.fake.state.stmt") == 8
            page.screenshot(path=str(artifacts / "viewer-2d.png"))

            # A statement in a loop gets an iteration slider.
            page.locator('.knb-line[data-line="19"]').click()
            page.wait_for_function("document.querySelector('input[aria-label=\"loop iteration\"]') !== null")
            slide(page, "loop iteration", 0)
            page.wait_for_function(
                f"{ready} && document.querySelector('.knb-label').textContent.includes('iteration (0,)')"
            )
            assert page.evaluate("window.fake.state.iteration") == [0]

            # A 3-D value is drawn as a 2-D slice with axis pickers.
            page.locator(".knb-stmts").select_option("9")
            page.wait_for_function(
                f"{ready} && document.querySelector('.knb-label').textContent.startsWith('cube')"
            )
            assert page.locator(HEAT).get_attribute("data-view") == "3x4"
            page.locator('select[aria-label="row axis"]').select_option("0")
            page.wait_for_function(f"{ready} && document.querySelector('{HEAT}').dataset.view === '2x4'")
            page.locator(HEAT).hover(position={"x": 5, "y": 5})
            assert page.locator(".knb-value .knb-readout").inner_text() == "[0, 0, 0] = 2"
            page.screenshot(path=str(artifacts / "viewer-3d.png"))

            # The text box takes a pid; program (3, 1) has masked lanes, drawn grey.
            box = page.locator(".knb-pidbox")
            box.fill("3, 1")
            box.dispatch_event("change")
            page.wait_for_function("JSON.stringify(window.fake.state.pid) === '[3,1,0]'")
            page.wait_for_function(f"{ready} && document.querySelectorAll('.knb-events tr').length === 4")
            page.locator(".knb-events tr").nth(1).click()
            page.wait_for_function(
                f"{ready} && document.querySelector('.knb-label').textContent.startsWith('load of x_ptr')"
            )
            assert grey_cells(page) > 0
            page.screenshot(path=str(artifacts / "viewer-masked-load.png"), full_page=True)

            assert page.locator(".knb-finding").count() == 2
            assert page.locator('[data-role="comparison"]').count() == 0  # nothing compared in this trace

            # Another launch: one pid slider (grid 8x1x1); its odd programs are replayed on request.
            page.locator(".knb-launch").select_option("1")
            page.wait_for_function("document.querySelector('input[aria-label=\"pid y\"]') === null")
            page.wait_for_function(ready)
            slide(page, "pid x", 5)
            page.wait_for_function(f"{ready} && JSON.stringify(window.fake.state.pid) === '[5,0,0]'")
            page.evaluate(DARK)
            page.screenshot(path=str(artifacts / "viewer-dark.png"), full_page=True)

            assert page.evaluate("window.fake.missing") == []
            assert errors == []
        finally:
            browser.close()


def slide(page: Any, label: str, value: int) -> None:
    page.locator(f'input[aria-label="{label}"]').evaluate(
        "(s, v) => { s.value = String(v); s.dispatchEvent(new Event('input', { bubbles: true })); }", value
    )


def pixels(page: Any) -> str:
    return page.locator(HEAT).evaluate("c => c.toDataURL()")


def grey_cells(page: Any) -> int:
    return page.locator(HEAT).evaluate(
        """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 158 && d[i + 1] === 158 && d[i + 2] === 158) n++; return n; }"""
    )


def test_big_value_and_many_programs(serve: Callable[[Trace, dict[str, Any]], str], artifacts: Path) -> None:
    from playwright.sync_api import sync_playwright

    trace = Trace(
        [
            big_value_launch((1024, 1024)),
            add_launch(grid=(4096, 1, 1), n=4096 * 8 - 5, keep=lambda p: p < 2, index=1),
        ]
    )
    table = canned(trace, pids=[(0, 0, 0), (4000, 0, 0)])
    page_url = serve(trace, table)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_url)
            ready = f"document.querySelector('{HEAT}')?.dataset.state === \"ready\""
            page.wait_for_function(ready)
            heat = page.locator(HEAT)
            assert heat.get_attribute("data-view") == "1024x1024"
            assert heat.evaluate("c => [c.width, c.height]") == [420, 420]
            heat.hover(position={"x": 2, "y": 1})
            assert re.fullmatch(
                r"\[\d, \d\] = -0\.99\d+", page.locator(".knb-value .knb-readout").inner_text()
            )
            corner = heat.evaluate("c => Array.from(c.getContext('2d').getImageData(0, 0, 1, 1).data)")
            assert corner == [255, 0, 255, 255]  # element [0, 0] is NaN
            page.screenshot(path=str(artifacts / "viewer-1024x1024.png"))

            page.locator(".knb-launch").select_option("1")
            page.wait_for_function("document.querySelector('input[aria-label=\"pid x\"]')?.max === '4095'")
            page.wait_for_function(ready)
            box = page.locator(".knb-pidbox")
            box.fill("4000")
            box.dispatch_event("change")
            page.wait_for_function(f"{ready} && JSON.stringify(window.fake.state.pid) === '[4000,0,0]'")
            page.wait_for_function(
                "document.querySelectorAll('canvas[data-role=\"footprint\"]').length === 3"
            )
            assert page.locator('input[aria-label="pid x"]').input_value() == "4000"
            page.screenshot(path=str(artifacts / "viewer-4096-programs.png"), full_page=True)
            assert page.evaluate("window.fake.missing") == []
            assert errors == []
        finally:
            browser.close()


def test_the_events_table_shows_an_nd_argument_s_elements_as_python_names_them(
    serve: Callable[[Trace, dict[str, Any]], str],
) -> None:
    from playwright.sync_api import sync_playwright

    launch = add_launch(grid=(4, 2, 1), n=60)
    launch.args[0] = ArgumentInfo("x_ptr", "buffer", "fp32", (6, 10), (10, 1))  # x as 6 rows of 10
    trace = Trace([launch])
    page_url = serve(trace, canned(trace, pids=[(0, 0, 0)]))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(page_url)
            page.wait_for_function("document.querySelectorAll('.knb-events tr').length === 4")
            cells = [
                page.locator(".knb-events tr").nth(row).locator("td").nth(4).inner_text() for row in (1, 2, 3)
            ]
            assert cells == ["[0, 0:8]", "[0, 8)", "[0, 8)"]  # x_ptr by index; y_ptr and out_ptr flat
            assert errors == []
        finally:
            browser.close()


# ---------------------------------------------------------------------------------------------
# Layout and speed, against a page whose requests Python answers live (bench/bench_viewer.py).

LONG_LINE = "    tile = tl.load(x_ptr + (pid * BLOCK_M + tl.arange(0, BLOCK_M))[:, None] * stride_xm + tl.arange(0, BLOCK_N)[None, :] * stride_xn, mask=mask)"


def layout_launch() -> Launch:
    """A kernel with a long source (the statement is near its end, past the source box's height), a long
    line, a scalar, a 1000x2000 and a 6-row buffer; program 1 skips the statement `late`."""
    body = [f"    filler_{i} = {i}" for i in range(50)]
    source = "\n".join(
        ["def layout_kernel(x_ptr):", "    s = tl.program_id(0)", LONG_LINE, *body, "    late = s * 2.0", ""]
    )
    late_line = 10 + 3 + len(body)
    statements = [
        Statement(0, FILE, 11, "s", "layout_kernel", "assign"),
        Statement(1, FILE, 12, "tile", "layout_kernel", "assign"),
        Statement(2, FILE, late_line, "late", "layout_kernel", "assign"),
    ]
    launch = Launch(
        index=0,
        kernel="layout_kernel",
        grid=(2, 1, 1),
        args=[ArgumentInfo("x_ptr", "buffer", "fp32", (1000, 2000), (2000, 1))],
        statements=statements,
        sources={"layout_kernel": SourceInfo("layout_kernel", FILE, 10, source)},
    )
    for p in range(2):
        program = ProgramTrace((p, 0, 0), kept=True)
        values = [(0, np.array(p, np.int32)), (1, np.arange(32, dtype=np.float32).reshape(4, 8) + p)]
        if p == 0:
            values.append((2, np.arange(16, dtype=np.float32)))
        for seq, (stmt, value) in enumerate(values):
            dtype = "i32" if value.dtype == np.int32 else "fp32"
            program.records.append(Record(stmt, seq, (), (), dtype, value.shape, Summary.of(value), value))
        launch.programs[(p, 0, 0)] = program
    for arg, shape in (("x_ptr", (1000, 2000)), ("rows6", (6, 4096))):
        size = int(np.prod(shape))
        reads = np.zeros(size, np.int32)
        reads[: size // 3] = 1
        launch.buffers[arg] = BufferMap(
            arg, size, shape, reads, np.zeros(size, np.int32), np.full(size, -1, np.int64)
        )
    return launch


def live(trace: Trace, tmp_path: Path) -> Any:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from bench.bench_viewer import live_page

    return live_page(trace, tmp_path)


def test_layout_fits_its_container(tmp_path: Path, artifacts: Path) -> None:
    from playwright.sync_api import sync_playwright

    from bench.bench_viewer import open_viewer

    launch = layout_launch()
    with live(Trace([launch]), tmp_path) as (url, _), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            for width in (900, 1400, 2000):
                for theme in ("light", "dark"):
                    page = open_viewer(browser, url, width)
                    if theme == "dark":
                        page.evaluate(DARK)
                    # No part of the viewer is cut off: nothing is wider than the viewer itself.
                    assert page.evaluate(
                        "(e => e.scrollWidth <= e.clientWidth)(document.querySelector('.knb'))"
                    )
                    page.screenshot(path=str(artifacts / f"layout-{width}-{theme}.png"), full_page=True)
                    page.close()

            # A 900 px output area (JupyterLab at a 900 px window with its file browser open is narrower still).
            for container in (900, 480):
                page = open_viewer(browser, url, 1400)
                page.evaluate(f"document.getElementById('app').style.width = '{container}px'")
                page.wait_for_timeout(50)
                assert page.evaluate("(e => e.scrollWidth <= e.clientWidth)(document.querySelector('.knb'))")
                # The long line wraps inside the source pane: its text ends inside the pane, not past it.
                code = page.locator('.knb-line[data-line="12"] .knb-code')
                pre = page.locator(".knb-source pre")
                assert code.evaluate("c => c.scrollWidth <= c.clientWidth")
                assert box_right(code) <= box_right(pre) + 0.5
                page.screenshot(path=str(artifacts / f"layout-container-{container}.png"), full_page=True)
                if container == 480:  # the output area grows again: the heatmap is drawn for the new width
                    narrow = page.locator(HEAT).evaluate("c => c.width")
                    assert narrow < 480
                    page.evaluate("document.getElementById('app').style.width = ''")
                    page.wait_for_function(f"document.querySelector('{HEAT}').width > {narrow}")
                page.close()

            page = open_viewer(browser, url, 1400)
            # The selected line, far down a long source, is scrolled into view inside the source box.
            page.locator(".knb-stmts").select_option("2")
            page.wait_for_function("document.querySelector('.knb').dataset.busy === 'false'")
            selected, box = page.locator(".knb-selected"), page.locator(".knb-source pre")
            assert selected.get_attribute("data-line") == str(10 + 3 + 50)
            sb, bb = selected.bounding_box(), box.bounding_box()
            assert sb is not None and bb is not None
            assert bb["y"] <= sb["y"] and sb["y"] + sb["height"] <= bb["y"] + bb["height"]

            # Maps have the buffer's aspect ratio; a 6-row buffer's rows stay readable.
            wide = page.locator('.knb-buffer[data-arg="x_ptr"] canvas[data-role="buffer"]')
            w, h = wide.evaluate("c => [c.clientWidth, c.clientHeight]")
            assert abs(w / h - 2) < 0.05, (w, h)
            rows6 = page.locator('.knb-buffer[data-arg="rows6"] canvas[data-role="buffer"]')
            assert rows6.evaluate("c => c.clientHeight") / 6 >= 6
            # Zoom draws the maps larger, inside a box that scrolls.
            page.locator('select[aria-label="map zoom"]').select_option("4")
            assert wide.evaluate("c => c.clientWidth") > 2 * w
            assert page.evaluate("(e => e.scrollWidth <= e.clientWidth)(document.querySelector('.knb'))")
            page.locator('select[aria-label="map zoom"]').select_option("1")

            # A scalar is a number, not a 1x1 heatmap.
            page.locator(".knb-stmts").select_option("0")
            page.wait_for_function("document.querySelector('[data-role=\"scalar\"]')?.textContent === '0'")
            assert not page.locator(HEAT).is_visible()
            assert not page.locator(".knb-colorbar").is_visible()

            # An array, then a program that did not record the statement: nothing of the array stays.
            page.locator(".knb-stmts").select_option("2")
            page.wait_for_function(f"document.querySelector('{HEAT}').dataset.view === '1x16'")
            assert (
                page.locator(".knb-colorbar").is_visible()
                and page.locator(".knb-value .knb-hist").is_visible()
            )
            slide(page, "pid x", 1)
            page.wait_for_function(
                "document.querySelector('.knb-label').textContent === 'late: not recorded by this program.'"
            )
            for stale in (
                HEAT,
                ".knb-colorbar",
                ".knb-value .knb-hist",
                ".knb-value .knb-readout",
                ".knb-stats",
            ):
                assert not page.locator(stale).is_visible(), stale
            page.screenshot(path=str(artifacts / "layout-not-recorded.png"), full_page=True)
            assert page.locator('[data-role="comparison"]').count() == 0
        finally:
            browser.close()


def box_right(locator: Any) -> float:
    box = locator.bounding_box()
    assert box is not None
    return float(box["x"] + box["width"])


def test_pid_slider_speed_and_burst(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from playwright.sync_api import sync_playwright

    from bench.bench_viewer import burst, open_viewer, pid_steps, stats, tile_trace

    trace = tile_trace(64, 64, 512)
    with live(trace, tmp_path) as (url, _), sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = open_viewer(browser, url)
            for pid in range(64):  # every program once: replays of programs whose values were not kept
                page.evaluate("p => window.timed(() => window.slide('pid x', p))", pid)
            timing = stats(pid_steps(page, 64, 15))
            pids = [(7 * i + 3) % 64 for i in range(30)]
            took, sent, shown = burst(page, pids)
            # A fast drag: fewer program requests than inputs, and the view ends on the last pid.
            assert shown == [pids[-1], 0, 0] and sent < len(pids)
            requests = page.evaluate(
                "window.fake.sent.filter((m) => m.type === 'program').map((m) => m.pid[0])"
            )
            assert requests[-1] == pids[-1]
            drawn = page.locator(HEAT).get_attribute("data-checksum"), footprints(page)
            slide(page, "pid x", 0)
            page.evaluate("window.settled()")
            page.evaluate("p => window.timed(() => window.slide('pid x', p))", pids[-1])
            assert (page.locator(HEAT).get_attribute("data-checksum"), footprints(page)) == drawn
            with capsys.disabled():
                print(f"\npid slider on 64 programs of 64x512 tiles: {timing}")
                print(
                    f"burst of {len(pids)} inputs 4 ms apart: {took:.0f} ms to the last pid, {sent} program requests"
                )
        finally:
            browser.close()


def footprints(page: Any) -> list[str]:
    return page.locator('canvas[data-role="footprint"]').evaluate_all("cs => cs.map((c) => c.toDataURL())")
