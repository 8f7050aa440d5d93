"""Input → redraw latency of the trace viewer (js/viewer.js) in headless Chromium, answered live by Python.

    python bench/bench_viewer.py [--programs 64] [--rows 64] [--cols 512] [--repeat 40]

The page runs the viewer against a stand-in for the anywidget model whose requests go to this
process over HTTP, where `kernel_nb.view.dispatch.answer` builds each reply from a real trace (a
kernel run by `kernel_nb.interpret`, one ROWS x COLS fp32 tile per statement and program): Python's
payload building, a round trip and the browser's drawing all count, as in Jupyter (whose websocket
round trip is of the same order as a local HTTP one). For each interaction it prints the median and
90th percentile of the time from the input event to the view having caught up with it (the
viewer's `data-busy` back to "false", then one painted frame), and the time Python spent answering.

- pid slider: one step at a time to a random program, each waited for.
- statement click: a click on another recorded source line.
- iteration slider: one step of the loop-iteration slider of a statement in a loop.
- burst: 30 pid inputs 4 ms apart, none waited for (a fast drag): the time until the last pid is
  drawn, and how many program requests reached Python (coalescing sends only the latest).
"""

from __future__ import annotations

import argparse
import base64
import functools
import http.server
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.chromium import ARGS, CHROMIUM  # noqa: E402  (the checkout's tests, importable from its root)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><link rel="stylesheet" href="viewer.css">
<style>body { margin: 12px; background: var(--jp-layout-color0, #fff); }</style></head>
<body><div id="app"></div>
<script type="module">
import widget from "./viewer.js";

const decode = (b64) => { const s = atob(b64); const u = new Uint8Array(s.length); for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i); return new DataView(u.buffer); };

// The parts of an anywidget model the viewer uses; every request is answered by Python, live.
class LiveModel {
  constructor(state) { this.state = state; this.handlers = {}; this.sent = []; this.inflight = 0; }
  get(k) { return this.state[k]; }
  set(k, v) { this.state[k] = v; for (const cb of this.handlers[`change:${k}`] || []) cb(); }
  save_changes() {}
  on(name, cb) { (this.handlers[name] ||= []).push(cb); }
  off(name, cb) { this.handlers[name] = (this.handlers[name] || []).filter((f) => f !== cb); }
  send(msg) {
    this.sent.push(msg);
    this.inflight++;
    fetch("request", { method: "POST", body: JSON.stringify(msg) }).then((r) => r.json()).then(({ reply, buffers }) => {
      this.inflight--;
      for (const cb of this.handlers["msg:custom"] || []) cb(reply, buffers.map(decode));
    });
  }
}
window.fake = new LiveModel(await fetch("state.json").then((r) => r.json()));
widget.render({ model: window.fake, el: document.getElementById("app") });

/** Resolve once the view has caught up with its model and nothing is in flight, after a painted frame. */
window.settled = () => new Promise((resolve) => {
  const check = () => {
    const root = document.querySelector(".knb");
    if (root?.dataset.busy === "false" && window.fake.inflight === 0) requestAnimationFrame(() => resolve(performance.now()));
    else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
});
/** Run an input action and time it until the view has caught up. */
window.timed = async (action) => { const t0 = performance.now(); action(); return (await window.settled()) - t0; };
window.slide = (label, value) => {
  const s = document.querySelector(`input[aria-label="${label}"]`);
  s.value = String(value);
  s.dispatchEvent(new Event("input", { bubbles: true }));
};
</script></body></html>
"""

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def tile_kernel(x_ptr, out_ptr, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    offsets = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offsets)
    acc = tl.zeros((ROWS, COLS), tl.float32)
    for k in range(STEPS):
        acc += x * k
    y = tl.exp(acc * 0.01)
    tl.store(out_ptr + offsets, y)
"""


def tile_trace(programs: int, rows: int, cols: int, steps: int = 4) -> Any:
    """A launch of `programs` programs, each recording ROWS x COLS fp32 tiles (one per statement and iteration)."""
    import numpy as np

    import kernel_nb

    path = Path(tempfile.mkdtemp()) / "tile_kernel.py"
    path.write_text(KERNEL)  # @triton.jit reads the kernel's source from its file
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "tile_kernel"}
    exec(compile(KERNEL, str(path), "exec"), namespace)
    x = np.random.default_rng(0).random((programs * rows, cols), dtype=np.float32)
    out = np.empty_like(x)
    with kernel_nb.interpret() as session:
        namespace["tile_kernel"][(programs,)](x, out, cols, ROWS=rows, COLS=cols, STEPS=steps)
    return session.trace


class _Handler(http.server.SimpleHTTPRequestHandler):
    answer: Any = None  # set per server: request dict → (reply, buffers)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        reply, buffers = self.answer(body)
        data = json.dumps(
            {"reply": reply, "buffers": [base64.b64encode(b).decode() for b in buffers]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def live_page(trace: Any, folder: Path) -> Iterator[tuple[str, dict[str, list[float]]]]:
    """Serve the viewer for `trace` with Python answering its requests; yields the page's URL and the
    seconds Python spent per request type (appended as requests come)."""
    from kernel_nb.view import TraceViewer, dispatch

    for name in ("viewer.js", "viewer.css"):
        shutil.copy(ROOT / "js" / name, folder / name)
    (folder / "index.html").write_text(PAGE)
    state = TraceViewer(trace).get_state()
    (folder / "state.json").write_text(
        json.dumps({k: state[k] for k in ("meta", "launch", "pid", "stmt", "iteration")})
    )
    spent: dict[str, list[float]] = defaultdict(list)
    lock = threading.Lock()  # a kernel answers one message at a time

    def answer(request: dict[str, Any]) -> Any:
        with lock:
            start = time.perf_counter()
            got = dispatch.answer(trace, request)
            spent[str(request.get("type"))].append(time.perf_counter() - start)
            return got

    handler = type("Handler", (_Handler,), {"answer": staticmethod(answer)})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html", spent
    finally:
        server.shutdown()
        server.server_close()


def open_viewer(browser: Any, url: str, width: int = 1400) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(url)
    page.wait_for_function("document.querySelector('.knb')?.dataset.busy === 'false'")
    page.evaluate("window.settled()")
    return page


def pid_steps(page: Any, programs: int, repeat: int, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    current = 0
    times = []
    for _ in range(repeat):
        pid = rng.choice([p for p in range(programs) if p != current])
        times.append(page.evaluate("p => window.timed(() => window.slide('pid x', p))", pid))
        current = pid
    return times


def statement_clicks(page: Any, lines: list[int], repeat: int) -> list[float]:
    return [
        page.evaluate(
            'n => window.timed(() => document.querySelector(`.knb-line[data-line="${n}"]`).click())',
            lines[i % len(lines)],
        )
        for i in range(repeat)
    ]


def iteration_steps(page: Any, steps: int, repeat: int) -> list[float]:
    return [
        page.evaluate("i => window.timed(() => window.slide('loop iteration', i))", i % steps)
        for i in range(1, repeat + 1)
    ]


def burst(page: Any, pids: list[int], every_ms: float = 4) -> tuple[float, int, list[int]]:
    """Pid inputs `every_ms` apart, none waited for (a fast drag): the time from the first until the last pid
    is drawn, how many program requests were sent, and the pid shown at the end."""
    before = page.evaluate("window.fake.sent.filter((m) => m.type === 'program').length")
    took = page.evaluate(
        """([ps, dt]) => new Promise((resolve) => {
          const t0 = performance.now();
          ps.forEach((p, i) => setTimeout(() => {
            window.slide('pid x', p);
            if (i === ps.length - 1) window.settled().then((t) => resolve(t - t0));
          }, i * dt));
        })""",
        [pids, every_ms],
    )
    sent = page.evaluate("window.fake.sent.filter((m) => m.type === 'program').length") - before
    return took, sent, page.evaluate("window.fake.state.pid")


def recorded_lines(trace: Any) -> list[int]:
    """Lines of statements with array values outside loops (as a user clicks them), in source order."""
    launch = trace[0]
    program = launch.programs[(0, 0, 0)]
    shaped = {r.stmt for r in program.records if r.shape and not r.iteration}
    return sorted({launch.statements[s].line for s in shaped})


def stats(times: list[float]) -> str:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered):6.1f} ms  p90 {p90:6.1f} ms  (n={len(ordered)})"


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--programs", type=int, default=64)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--cols", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    start = time.perf_counter()
    trace = tile_trace(args.programs, args.rows, args.cols)
    print(
        f"trace: {args.programs} programs of {args.rows}x{args.cols} fp32 tiles, run in {time.perf_counter() - start:.1f} s"
    )
    with (
        tempfile.TemporaryDirectory() as folder,
        live_page(trace, Path(folder)) as (url, spent),
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = open_viewer(browser, url)
            # Every program once, so that replays of programs whose values were not kept do not count.
            for pid in range(args.programs):
                page.evaluate("p => window.timed(() => window.slide('pid x', p))", pid)
            page.evaluate("p => window.timed(() => window.slide('pid x', p))", 0)
            spent.clear()
            print(f"pid slider        {stats(pid_steps(page, args.programs, args.repeat))}")
            lines = recorded_lines(trace)
            print(f"statement click   {stats(statement_clicks(page, lines, args.repeat))}")
            loop_line = next(s.line for s in trace[0].statements if s.kind == "augassign")
            page.evaluate(
                'n => window.timed(() => document.querySelector(`.knb-line[data-line="${n}"]`).click())',
                loop_line,
            )
            print(f"iteration slider  {stats(iteration_steps(page, 4, args.repeat))}")
            pids = [(7 * i + 3) % args.programs for i in range(30)]
            took, sent, shown = burst(page, pids)
            print(
                f"burst of {len(pids)} pid inputs 4 ms apart: last pid drawn {took:.1f} ms after the first input; "
                f"{sent} program requests sent; showing pid {shown[0]} (last input {pids[-1]})"
            )
            for kind, seconds in sorted(spent.items()):
                ms = [1000 * s for s in seconds]
                print(
                    f"python {kind:9} median {statistics.median(ms):6.2f} ms  max {max(ms):6.2f} ms  (n={len(ms)})"
                )
        finally:
            browser.close()


if __name__ == "__main__":
    main()
