"""The comparison in the viewer: metadata, lazy binary payloads, the figure, and the drawing in Chromium."""

import base64
import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("anywidget", reason="a test of the notebook side")


import kernel_nb.gpu as gpu
from kernel_nb.view import TraceViewer, dispatch
from kernel_nb.view.compare import comparison_png
from tests.diff.test_gpu_session import _bump, _inputs, fake_gpu
from tests.engine import kernels as k

JS = Path(__file__).resolve().parents[2] / "js"
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def compared():
    x, y, out = _inputs()
    session = gpu.GpuSession(gpu=gpu.GpuOptions(mode="compare"), launcher=fake_gpu(_bump))
    with session:
        k.add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    session.trace[0].artifacts = gpu.compile_for_target(
        k.add_kernel, (x, y, out, 1000), {"BLOCK": 256}, sass=False
    )
    return session.trace


def test_meta_holds_figures_not_arrays(compared):
    meta = TraceViewer(compared).meta["launches"][0]
    comparison = meta["comparison"]
    assert comparison["verdict"].startswith("#0 add_kernel: MISMATCH in out_ptr")
    buffer = comparison["buffers"][0]
    assert (buffer["arg"], buffer["mismatches"], buffer["max_abs_at"], buffer["writers"]) == (
        "out_ptr",
        1,
        [600],
        [{"pid": [2, 0, 0], "count": 1}],
    )
    assert meta["artifacts"]["stages"] == ["ttir", "ttgir", "llir", "ptx"]
    assert meta["artifacts"]["missing"] == {"sass": "not asked for"}
    assert len(json.dumps(meta["comparison"], allow_nan=False)) < 4_000


def test_compare_reply_is_binary_and_marks_the_mismatch(compared):
    reply, buffers = dispatch.answer(compared, {"id": 3, "type": "compare", "launch": 0, "arg": "out_ptr"})
    assert reply["type"] == "compare" and reply["grid"] == [1, 1000] and reply["view_shape"] == [1, 1000]
    cpu, gpu_values, diff = (np.frombuffer(b, np.float32) for b in buffers[:3])
    codes = np.frombuffer(buffers[3], np.uint8)
    assert np.flatnonzero(codes == 2).tolist() == [600] and (codes > 0).all()
    assert diff[600] == 1.0 and gpu_values[600] == cpu[600] + 1
    assert (reply["lo"], reply["hi"], reply["diff_max"]) == (1.0, 1000.0, 1.0)


def test_artifact_reply_and_errors(compared):
    reply, buffers = dispatch.answer(compared, {"id": 4, "type": "artifact", "launch": 0, "stage": "ptx"})
    assert buffers == [] and reply["target"] == "cuda:90" and ".entry add_kernel" in reply["text"]
    missing, _ = dispatch.answer(compared, {"id": 5, "type": "artifact", "launch": 0, "stage": "sass"})
    assert missing == {"type": "error", "id": 5, "message": "add_kernel: no SASS: not asked for"}
    unknown, _ = dispatch.answer(compared, {"id": 6, "type": "compare", "launch": 0, "arg": "x_ptr"})
    assert unknown["message"] == "add_kernel: no compared buffer 'x_ptr'"


def test_comparison_figure_is_a_png(compared):
    png = comparison_png(compared[0])
    assert png.startswith(b"\x89PNG") and len(png) > 5_000


PAGE = """<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><link rel="stylesheet" href="viewer.css"></head>
<body><div id="app"></div><script type="module">
import widget from "./viewer.js";
const decode = (b64) => { const s = atob(b64); const u = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i); return new DataView(u.buffer); };
const [state, canned] = await Promise.all(["state.json", "payloads.json"].map((f) => fetch(f).then((r) => r.json())));
const handlers = {};
window.fake = { state, sent: [],
  get: (k) => state[k], set: (k, v) => { state[k] = v; for (const cb of handlers[`change:${k}`] || []) cb(); }, save_changes() {},
  on: (n, cb) => { (handlers[n] ||= []).push(cb); }, off: (n, cb) => { handlers[n] = (handlers[n] || []).filter((f) => f !== cb); },
  send(msg) {
    const hit = canned[msg.type === "compare" || msg.type === "artifact" ? msg.type + ":" + (msg.arg || msg.stage) : msg.type];
    window.fake.sent.push(msg.type);
    const reply = hit ? { ...hit.reply, id: msg.id } : { type: "error", id: msg.id, message: "not canned" };
    setTimeout(() => { for (const cb of handlers["msg:custom"] || []) cb(reply, hit ? hit.buffers.map(decode) : []); }, 5);
  } };
widget.render({ model: window.fake, el: document.getElementById("app") });
</script></body></html>"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.mark.browser
def test_comparison_area_in_chromium(compared, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing (make chromium installs it)")
    from playwright.sync_api import sync_playwright

    for name in ("viewer.js", "viewer.css"):
        shutil.copy(JS / name, tmp_path / name)
    (tmp_path / "index.html").write_text(PAGE)
    state = TraceViewer(compared).get_state()
    (tmp_path / "state.json").write_text(
        json.dumps({k: state[k] for k in ("meta", "launch", "pid", "stmt", "iteration")})
    )
    canned = {}
    for key, request in {
        "compare:out_ptr": {"type": "compare", "launch": 0, "arg": "out_ptr"},
        "artifact:ptx": {"type": "artifact", "launch": 0, "stage": "ptx"},
    }.items():
        reply, buffers = dispatch.answer(compared, {"id": 0, **request})
        canned[key] = {"reply": reply, "buffers": [base64.b64encode(b).decode() for b in buffers]}
    (tmp_path / "payloads.json").write_text(json.dumps(canned))
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 1200})
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html")
            area = page.locator('[data-role="comparison"]')
            page.wait_for_function("document.querySelector('.knb-compare-detail')?.dataset.state === 'ready'")
            assert (
                area.locator('[data-role="verdict"]')
                .inner_text()
                .startswith("#0 add_kernel: MISMATCH in out_ptr")
            )
            assert area.locator("tr[data-arg]").count() == 1
            for role in ("compare-CPU", "compare-GPU", "compare-|diff|"):
                assert area.locator(f'canvas[data-role="{role}"]').count() == 1
            # element 600 of 1000 is out of tolerance: its |diff| column is coloured, the rest grey
            colours = area.locator('canvas[data-role="compare-|diff|"]').evaluate(
                """c => { const d = c.getContext('2d').getImageData(0, c.height >> 1, c.width, 1).data; const out = new Set();
                for (let i = 0; i < d.length; i += 4) out.add(d.slice(i, i + 3).join(',')); return [...out]; }"""
            )
            assert "158,158,158" in colours and len(colours) >= 2
            area.locator('canvas[data-role="compare-|diff|"]').hover(position={"x": 180, "y": 10})
            assert "out_ptr[" in area.locator(".knb-readout").inner_text()
            area.locator("a.knb-writer").click()
            assert page.evaluate("window.fake.state.pid") == [2, 0, 0]
            page.locator('.knb-stage[data-stage="ptx"]').click()
            page.wait_for_function("document.querySelector('[data-role=\"ir\"]').dataset.state === 'ready'")
            assert ".entry add_kernel" in page.locator('[data-role="ir"]').inner_text()
            artifacts = Path(__file__).resolve().parents[2] / "test-artifacts"
            artifacts.mkdir(exist_ok=True)
            page.screenshot(path=str(artifacts / "viewer-compare.png"), full_page=True)
            assert errors == []
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
