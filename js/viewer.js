// kernel_nb trace viewer: the browser half of kernel_nb.view.TraceViewer.
// Widget state carries only launch metadata and the selection; every array arrives through
// custom messages (see kernel_nb/view/protocol.py), one request per program / value / buffer.

/**
 * @typedef {{min: number|null, max: number|null, mean: number|null, nan: number, inf: number, size: number}} Summary
 * @typedef {{id: number, file: string, line: number, name: string, function: string, kind: string}} Statement
 * @typedef {{function: string, file: string, first_line: number, text: string}} Source
 * @typedef {{arg: string, size: number, shape: number[], written: boolean, never_written: number, written_more_than_once: number, oob: number}} BufferMeta
 * @typedef {{kind: string, severity: string, message: string, pid: number[]|null, file: string|null, line: number|null, arg: string|null, elements: number}} FindingMeta
 * @typedef {{index: number, kernel: string, grid: number[], num_programs: number, status: string, error: string|null,
 *   statements: Statement[], sources: Source[], args: {name: string, kind: string, dtype: string, shape: number[]}[],
 *   buffers: BufferMeta[], findings: FindingMeta[], findings_total: number, comparison?: ComparisonMeta|null, artifacts?: ArtifactsMeta|null, divergence?: DivergenceMeta|null}} LaunchMeta
 * @typedef {{index: number, stmt: number, seq: number, iteration: number[], call_path: string[], dtype: string, shape: number[], summary: Summary, pointer_arg: string|null}} RecordEntry
 * @typedef {{index: number, kind: string, seq: number, file: string, line: number, arg: string|null, active: number, lanes: number, lo: number, hi: number}} EventEntry
 * @typedef {{type: "program", id: number, launch: number, pid: number[], kept: boolean, records: RecordEntry[], events: EventEntry[], stdout: string, truncated: number}} ProgramReply
 * @typedef {{type: "value", id: number, label: string, dtype: string, shape: number[], axes: number[], at: number[], view_shape: number[], step: number[],
 *   format: "f4"|"f8", has_mask: boolean, summary: Summary, hist: {counts: number[], lo: number|null, hi: number|null}, note: string}} ValueReply
 * @typedef {{type: "footprint"|"buffer", id: number, arg: string, shape: number[], size: number, grid: number[], view_shape: number[], step: number[],
 *   legend: string[], counts: number[], oob: number[][], note: string}} MapReply
 * @typedef {{pid: number[]|null, count: number}} WriterMeta
 * @typedef {{arg: string, dtype: string, shape: number[], size: number, ok: boolean, line: string, mismatches: number,
 *   max_abs: number|null, max_rel: number|null, max_abs_at: number[]|null, max_ulp: number, ulp_hist: number[],
 *   nan_mismatches: number, inf_mismatches: number, rtol: number, atol: number, policy: string, written_by: string, writers: WriterMeta[]}} BufferComparisonMeta
 * @typedef {{verdict: string, ok: boolean, device: string, kept: string, tf32: boolean, ulp_labels: string[], buffers: BufferComparisonMeta[]}} ComparisonMeta
 * @typedef {{seq: number, stmt: number, line: number, name: string, function: string, call_path: string[], iteration: number[], dtype: string, shape: number[],
 *   status: string, reason: string, size: number, mismatches: number, max_abs: number|null, lanes: number[], cpu: string[], gpu: string[]}} StatementDiffMeta
 * @typedef {{pid: number[], counts: Object<string, number>, extra: number, overflow: boolean, rows_total: number, rows: StatementDiffMeta[]}} ProgramDivergenceMeta
 * @typedef {{report: string, error: string|null, device: string, tf32: boolean, first: {pid: number[], seq: number}|null, programs: ProgramDivergenceMeta[], notes: string[]}} DivergenceMeta
 * @typedef {{target: string, stages: string[], sizes: number[], missing: Record<string, string>, metadata: Record<string, any>, compiled_for_launch: boolean}} ArtifactsMeta
 * @typedef {{type: "compare", id: number, arg: string, dtype: string, shape: number[], size: number, grid: number[], view_shape: number[], step: number[],
 *   lo: number, hi: number, diff_max: number|null, mismatches: number, note: string}} CompareReply
 * @typedef {{type: "artifact", id: number, stage: string, target: string, text: string, truncated: number}} ArtifactReply
 * @typedef {{type: "error", id: number, message: string}} ErrorReply
 * @typedef {{get(name: string): any, set(name: string, value: any): void, save_changes(): void,
 *   on(name: string, cb: Function): void, off(name: string, cb?: Function): void, send(content: any, callbacks?: any, buffers?: any[]): void}} Model
 * @typedef {{source: "record"|"event", index: number, field: string, axes: number[]|null, at: number[]|null}} ValueTarget
 */

// Kept equal to kernel_nb/view/plot.py so the PNG fallback reads like the widget.
const NAN_RGB = [255, 0, 255];
const POSINF_RGB = [255, 59, 48];
const NEGINF_RGB = [30, 144, 255];
const MASKED_RGB = [158, 158, 158];
const VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];
/** Access-map colours, by code (see FOOTPRINT_LEGEND / BUFFER_LEGEND in payloads.py). */
const MAP_RGBA = {
  footprint: [[128, 128, 128, 40], [76, 155, 232, 255], [240, 160, 48, 255], [56, 178, 107, 255]],
  buffer: [[128, 128, 128, 40], [76, 155, 232, 255], [56, 178, 107, 255], [229, 57, 53, 255], [255, 179, 0, 255]],
};
const MAX_WIDTH = 640;
const MAX_HEIGHT = 420;
// Two access maps (this program, all programs) sit side by side.
const MAP_WIDTH = 400;
// Three comparison maps (CPU, GPU, |diff|) sit side by side.
const COMPARE_WIDTH = 300;
/** Mismatch codes of a CompareReply (kernel_nb/view/compare.py). */
const PADDING = 0, OUTSIDE = 2;

const LUT = (() => {
  const stops = VIRIDIS.map((h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)));
  /** @type {number[][]} */
  const lut = [];
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (stops.length - 1);
    const k = Math.min(Math.floor(t), stops.length - 2);
    const f = t - k;
    lut.push(stops[k].map((c, j) => Math.round(c + f * (stops[k + 1][j] - c))));
  }
  return lut;
})();

/**
 * @param {string} tag @param {Record<string, any>} [props] @param {(Node|string)[]} [children]
 * @returns {HTMLElement}
 */
function h(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, String(v));
  }
  node.append(...children);
  return node;
}

/** @param {number|null} x */
function fmt(x) {
  if (x === null || x === undefined) return "—";
  if (Number.isInteger(x) && Math.abs(x) < 1e9) return String(x);
  const a = Math.abs(x);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(3) : x.toPrecision(5).replace(/\.?0+$/, "");
}

/** @param {any} b @returns {ArrayBuffer} */
function toArrayBuffer(b) {
  if (b instanceof ArrayBuffer) return b;
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
}

/** Unravel a flat offset into an index of `shape`. @param {number} offset @param {number[]} shape */
function unravel(offset, shape) {
  const out = [];
  for (let i = shape.length - 1; i >= 0; i--) {
    out.unshift(offset % shape[i]);
    offset = Math.floor(offset / shape[i]);
  }
  return out;
}

/**
 * Size a visible canvas for a rows×cols view: square cells while they fit, a fixed-height strip for one row.
 * @param {HTMLCanvasElement} canvas @param {number} rows @param {number} cols
 * @param {number} [maxWidth] @param {number} [stripHeight]
 */
function sizeCanvas(canvas, rows, cols, maxWidth = MAX_WIDTH, stripHeight = 28) {
  const cell = Math.max(1, Math.min(32, Math.floor(maxWidth / cols)));
  let width = Math.min(maxWidth, cols * cell);
  let height = rows === 1 ? stripHeight : (rows * width) / cols;
  if (height > MAX_HEIGHT) {
    // Too tall: narrow the canvas to keep cells square, but not below a width one can still point at.
    width = Math.max(Math.min(width, 96), (width * MAX_HEIGHT) / height);
    height = MAX_HEIGHT;
  }
  canvas.width = Math.round(width);
  canvas.height = Math.max(8, Math.round(height));
}

/**
 * The cell under the mouse (offsetX/Y are inside the border, which the cell grid excludes).
 * @param {MouseEvent} e @param {HTMLCanvasElement} canvas @param {number} rows @param {number} cols
 */
function cellAt(e, canvas, rows, cols) {
  const r = Math.floor((e.offsetY / canvas.clientHeight) * rows);
  const c = Math.floor((e.offsetX / canvas.clientWidth) * cols);
  return [Math.max(0, Math.min(rows - 1, r)), Math.max(0, Math.min(cols - 1, c))];
}

/**
 * Colour an access map at most `width`×`height` pixels large; a pixel covering several elements shows
 * the largest code among them (codes are ordered so that the most notable state is the largest).
 * @param {Uint8Array} codes @param {number} rows @param {number} cols @param {number[][]} palette
 * @param {number} width @param {number} height @param {(r: number, c: number) => boolean} inside
 */
function mapImage(codes, rows, cols, palette, width, height, inside) {
  const w = Math.min(cols, width);
  const ht = Math.min(rows, height);
  const image = new ImageData(w, ht);
  for (let y = 0; y < ht; y++) {
    const r0 = Math.floor((y * rows) / ht);
    const r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / ht));
    for (let x = 0; x < w; x++) {
      const c0 = Math.floor((x * cols) / w);
      const c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / w));
      let code = -1;
      for (let r = r0; r < r1; r++) for (let c = c0; c < c1; c++) if (inside(r, c)) code = Math.max(code, codes[r * cols + c]);
      image.data.set(code < 0 ? [0, 0, 0, 0] : palette[code], 4 * (y * w + x));
    }
  }
  return image;
}

/** Draw an RGBA image of rows×cols cells, scaled onto `canvas` without smoothing. */
function blit(/** @type {HTMLCanvasElement} */ canvas, /** @type {ImageData} */ image) {
  const off = document.createElement("canvas");
  off.width = image.width;
  off.height = image.height;
  /** @type {CanvasRenderingContext2D} */ (off.getContext("2d")).putImageData(image, 0, 0);
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(off, 0, 0, canvas.width, canvas.height);
}

/**
 * Colour a float view at most `width`×`height` pixels large. When cells outnumber pixels, one pixel
 * covers a block: NaN, then +Inf, then −Inf win over the block's mean, so no special value is hidden.
 * @param {Float32Array|Float64Array} data @param {Uint8Array|null} mask @param {number} rows @param {number} cols
 * @param {number} lo @param {number} hi @param {number} width @param {number} height
 */
function heatImage(data, mask, rows, cols, lo, hi, width, height) {
  const w = Math.min(cols, width);
  const ht = Math.min(rows, height);
  const image = new ImageData(w, ht);
  const px = image.data;
  const span = hi > lo ? hi - lo : 1;
  for (let y = 0; y < ht; y++) {
    const r0 = Math.floor((y * rows) / ht);
    const r1 = Math.max(r0 + 1, Math.floor(((y + 1) * rows) / ht));
    for (let x = 0; x < w; x++) {
      const c0 = Math.floor((x * cols) / w);
      const c1 = Math.max(c0 + 1, Math.floor(((x + 1) * cols) / w));
      let nan = false, pinf = false, ninf = false, sum = 0, n = 0;
      for (let r = r0; r < r1; r++) {
        for (let c = c0; c < c1; c++) {
          const i = r * cols + c;
          if (mask && !mask[i]) continue;
          const v = data[i];
          if (Number.isNaN(v)) nan = true;
          else if (v === Infinity) pinf = true;
          else if (v === -Infinity) ninf = true;
          else { sum += v; n++; }
        }
      }
      const rgb = nan ? NAN_RGB : pinf ? POSINF_RGB : ninf ? NEGINF_RGB : n === 0 ? MASKED_RGB
        : LUT[Math.max(0, Math.min(255, Math.round(((sum / n - lo) / span) * 255)))];
      px.set([rgb[0], rgb[1], rgb[2], 255], 4 * (y * w + x));
    }
  }
  return image;
}

export default {
  /** @param {{model: Model, el: HTMLElement}} ctx */
  render({ model, el }) {
    return new Viewer(model, el).dispose;
  },
};

class Viewer {
  /** @param {Model} model @param {HTMLElement} el */
  constructor(model, el) {
    this.model = model;
    this.el = el;
    // Several views of one model all receive every reply: a random base keeps request ids apart.
    this.nextId = Math.floor(Math.random() * 2 ** 31) * 2 ** 20;
    /** @type {Map<number, (reply: any, buffers: ArrayBuffer[]) => void>} */
    this.pending = new Map();
    /** @type {Map<string, number>} latest request id per channel, so stale replies are dropped */
    this.latest = new Map();
    /** @type {ProgramReply|null} */
    this.program = null;
    /** @type {ValueTarget} */
    this.target = { source: "record", index: -1, field: "values", axes: null, at: null };
    /** @type {Map<string, [MapReply, ArrayBuffer[]]>} */
    this.bufferMaps = new Map();
    this.loadedKey = "";
    this.scheduled = false;
    this.onMessage = (/** @type {any} */ msg, /** @type {any[]} */ buffers) => {
      const resolve = this.pending.get(msg.id);
      if (!resolve) return;
      this.pending.delete(msg.id);
      resolve(msg, (buffers || []).map(toArrayBuffer));
    };
    this.onChange = () => this.schedule();
    model.on("msg:custom", this.onMessage);
    for (const name of ["launch", "pid", "stmt", "iteration", "meta"]) model.on(`change:${name}`, this.onChange);
    this.dispose = () => {
      model.off("msg:custom", this.onMessage);
      for (const name of ["launch", "pid", "stmt", "iteration", "meta"]) model.off(`change:${name}`, this.onChange);
    };
    this.root = h("div", { class: "knb" });
    el.append(this.root);
    this.build();
    this.schedule();
  }

  /** @returns {LaunchMeta|undefined} */
  get launchMeta() {
    return this.model.get("meta").launches?.[this.model.get("launch")];
  }

  /**
   * Send one request; resolves with the reply unless a newer request on the same channel overtook it.
   * @param {string} channel @param {Record<string, any>} body @returns {Promise<[any, ArrayBuffer[]]|null>}
   */
  request(channel, body) {
    const id = ++this.nextId;
    this.latest.set(channel, id);
    return new Promise((resolve) => {
      this.pending.set(id, (reply, buffers) => resolve(this.latest.get(channel) === id ? [reply, buffers] : null));
      this.model.send({ ...body, id });
    });
  }

  /** Push a selection to the model (so Python's PNG fallback follows) and redraw. @param {Record<string, any>} change */
  commit(change) {
    for (const [k, v] of Object.entries(change)) this.model.set(k, v);
    this.model.save_changes();
    this.schedule();
  }

  /** Coalesce the change events of one commit into a single refresh. */
  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.refresh();
    });
  }

  build() {
    const meta = this.model.get("meta");
    const launches = /** @type {LaunchMeta[]} */ (meta.launches || []);
    this.root.replaceChildren();
    if (!launches.length) {
      this.root.append(h("p", { class: "knb-empty", text: "kernel_nb: the trace has no launches." }));
      return;
    }
    const launch = /** @type {LaunchMeta} */ (this.launchMeta);
    const picker = h("select", { class: "knb-launch", "aria-label": "launch", onchange: () => this.commit({ launch: Number(picker.value), pid: [0, 0, 0], stmt: -1, iteration: [] }) },
      launches.map((l) => h("option", { value: l.index, text: `#${l.index} ${l.kernel} grid ${l.grid.join("×")}` })));
    /** @type {HTMLSelectElement} */ (picker).value = String(launch.index);
    const status = launch.status === "ok" ? "" : ` — ${launch.status}${launch.error ? `: ${launch.error}` : ""}`;
    this.root.append(h("div", { class: "knb-header" }, [
      h("span", { class: "knb-title", text: `${launch.kernel}` }),
      h("span", { class: "knb-dim", text: ` grid ${launch.grid.join("×")} · ${launch.num_programs} programs${status}` }),
      ...(launches.length > 1 ? [picker] : []),
    ]));
    this.root.append(this.buildPidControls(launch));
    this.sourcePane = h("div", { class: "knb-source" });
    this.valuePane = h("div", { class: "knb-value" });
    this.root.append(h("div", { class: "knb-main" }, [this.sourcePane, this.valuePane]));
    this.buildSource(launch);
    this.buildValuePane();
    this.memoryPane = h("div", { class: "knb-memory" });
    this.root.append(h("section", {}, [h("h4", { text: "Memory" }), this.memoryPane]));
    this.root.append(this.buildFindings(launch));
    this.root.append(this.buildComparison(launch));
    if (launch.artifacts) this.root.append(this.buildArtifacts(launch, launch.artifacts));
    this.builtFor = launch.index;
  }

  /** @param {LaunchMeta} launch */
  buildPidControls(launch) {
    /** @type {HTMLInputElement[]} */
    this.sliders = [];
    const row = h("div", { class: "knb-pid" });
    ["x", "y", "z"].forEach((axis, i) => {
      if (launch.grid[i] <= 1) return;
      const out = h("span", { class: "knb-num" });
      const slider = /** @type {HTMLInputElement} */ (h("input", { type: "range", min: 0, max: launch.grid[i] - 1, step: 1, "aria-label": `pid ${axis}`, "data-axis": i }));
      slider.addEventListener("input", () => {
        const pid = [...this.model.get("pid")];
        pid[i] = Number(slider.value);
        out.textContent = slider.value;
        this.commit({ pid });
      });
      this.sliders[i] = slider;
      row.append(h("label", {}, [`pid ${axis} `, slider, out]));
    });
    const box = /** @type {HTMLInputElement} */ (h("input", { type: "text", class: "knb-pidbox", size: 12, "aria-label": "program id", placeholder: "x, y, z" }));
    box.addEventListener("change", () => {
      const parts = (box.value.match(/-?\d+/g) || []).map(Number);
      const pid = [0, 1, 2].map((i) => Math.max(0, Math.min(launch.grid[i] - 1, parts[i] ?? 0)));
      this.commit({ pid });
    });
    this.pidBox = box;
    row.append(h("label", {}, ["pid ", box]));
    return row;
  }

  /** @param {LaunchMeta} launch */
  buildSource(launch) {
    const pane = /** @type {HTMLElement} */ (this.sourcePane);
    const list = /** @type {HTMLSelectElement} */ (h("select", { class: "knb-stmts", "aria-label": "statement" }, [
      h("option", { value: -1, text: "— recorded statements —" }),
      ...launch.statements.map((s) => h("option", { value: s.id, text: `${s.name} · ${s.function}:${s.line}${s.kind === "loop" ? " (loop)" : ""}` })),
    ]));
    list.addEventListener("change", () => this.selectStatement(Number(list.value)));
    this.stmtList = list;
    this.iterRow = h("div", { class: "knb-iter" });
    /** @type {Map<string, HTMLElement>} file:line → line element */
    this.lineEls = new Map();
    const files = launch.sources.map((src) => {
      const lines = src.text.replace(/\n$/, "").split("\n").map((text, i) => {
        const n = src.first_line + i;
        const stmts = launch.statements.filter((s) => s.file === src.file && s.line === n);
        const line = h("div", { class: stmts.length ? "knb-line knb-recorded" : "knb-line", "data-line": n }, [
          h("span", { class: "knb-ln", text: String(n) }), h("span", { class: "knb-code", text: text || " " }),
        ]);
        if (stmts.length) {
          line.title = stmts.map((s) => s.name).join(", ");
          line.addEventListener("click", () => this.selectStatement(this.pickAtLine(stmts)));
        }
        this.lineEls?.set(`${src.file}:${n}`, line);
        return line;
      });
      return h("div", { class: "knb-file" }, [h("div", { class: "knb-fn", text: `${src.function} — ${src.file}` }), h("pre", {}, lines)]);
    });
    pane.replaceChildren(list, this.iterRow, ...files);
  }

  /** Among statements on one line, prefer one this program recorded. @param {Statement[]} stmts */
  pickAtLine(stmts) {
    const recorded = new Set((this.program?.records || []).map((r) => r.stmt));
    return (stmts.find((s) => recorded.has(s.id)) || stmts[0]).id;
  }

  /** @param {number} stmt */
  selectStatement(stmt) {
    const records = this.recordsOf(stmt);
    this.target = { source: "record", index: -1, field: "values", axes: null, at: null };
    this.commit({ stmt, iteration: records.length ? records[records.length - 1].iteration : [] });
  }

  /** @param {number} stmt @returns {RecordEntry[]} */
  recordsOf(stmt) {
    return (this.program?.records || []).filter((r) => r.stmt === stmt);
  }

  buildValuePane() {
    this.valueLabel = h("div", { class: "knb-label" });
    this.axisRow = h("div", { class: "knb-axes" });
    this.canvas = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "knb-heat", "data-role": "heatmap", "data-state": "empty" }));
    this.readout = h("div", { class: "knb-readout knb-dim", text: "hover a cell" });
    this.colorbar = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "knb-colorbar", width: 200, height: 10 }));
    this.cbLo = h("span", { class: "knb-num" });
    this.cbHi = h("span", { class: "knb-num" });
    const swatch = (/** @type {number[]} */ rgb, /** @type {string} */ label) =>
      h("span", { class: "knb-swatch" }, [h("i", { style: `background: rgb(${rgb.join(",")})` }), label]);
    this.stats = h("table", { class: "knb-stats" });
    this.hist = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "knb-hist", width: 192, height: 48 }));
    this.note = h("div", { class: "knb-note" });
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => { if (this.readout) this.readout.textContent = "hover a cell"; });
    /** @type {HTMLElement} */ (this.valuePane).replaceChildren(this.valueLabel, this.axisRow, h("div", { class: "knb-canvas-wrap" }, [this.canvas]), this.readout,
      h("div", { class: "knb-cbar" }, [this.cbLo, this.colorbar, this.cbHi,
        swatch(NAN_RGB, "NaN"), swatch(POSINF_RGB, "+Inf"), swatch(NEGINF_RGB, "−Inf"), swatch(MASKED_RGB, "masked")]),
      h("div", { class: "knb-statrow" }, [this.stats, this.hist]), this.note);
  }

  /** @param {LaunchMeta} launch */
  buildFindings(launch) {
    const items = launch.findings.map((f) => {
      const where = [f.line !== null ? `line ${f.line}` : "", f.pid ? `pid (${f.pid.join(", ")})` : ""].filter(Boolean).join(" · ");
      return h("li", { class: `knb-finding knb-${f.severity}`, onclick: () => this.jumpTo(f) }, [
        h("b", { text: f.severity }), ` ${f.message}`, where ? h("span", { class: "knb-dim", text: ` — ${where}` }) : "",
      ]);
    });
    const more = launch.findings_total > launch.findings.length ? [h("li", { text: `… ${launch.findings_total - launch.findings.length} more` })] : [];
    return h("section", { class: "knb-findings" }, [
      h("h4", { text: `Findings (${launch.findings_total})` }),
      items.length ? h("ul", {}, [...items, ...more]) : h("p", { class: "knb-dim", text: "No findings." }),
    ]);
  }

  /** Verdict, one row per compared buffer, and CPU / GPU / |diff| maps of the chosen one. @param {LaunchMeta} launch */
  buildComparison(launch) {
    const section = h("section", { class: "knb-compare", "data-role": "comparison" }, [h("h4", { text: "CPU / GPU comparison" })]);
    const c = launch.comparison;
    if (!c) {
      section.append(h("p", { class: "knb-dim", text: "Not run for this trace: %%tkernel compare fills this area." }));
      return section;
    }
    const kept = `the cell went on with the ${c.kept.toUpperCase()} results`;
    section.append(
      h("p", { class: `knb-verdict ${c.ok ? "knb-ok" : "knb-bad"}`, "data-role": "verdict", text: c.verdict }),
      h("div", { class: "knb-dim", text: `${c.device} · ${kept}${c.tf32 ? " · fp32 dots run in tf32 on the GPU" : ""}` }),
    );
    if (launch.divergence) section.append(this.buildDivergence(launch.divergence));
    if (!c.buffers.length) return section;
    const maps = h("div", { class: "knb-compare-detail" });
    /** @type {Map<string, HTMLElement>} */
    const rows = new Map();
    const choose = (/** @type {BufferComparisonMeta} */ b) => {
      rows.forEach((row, arg) => row.classList.toggle("knb-chosen", arg === b.arg));
      this.loadComparison(maps, launch, b, c.ulp_labels);
    };
    const writers = (/** @type {BufferComparisonMeta} */ b) => b.writers.length ? b.writers.slice(0, 4).map((w) => w.pid
      ? h("a", { href: "#", class: "knb-writer", onclick: (/** @type {Event} */ e) => { e.preventDefault(); e.stopPropagation(); this.commit({ pid: w.pid }); },
        text: `(${w.pid.join(", ")}) ×${w.count} ` })
      : h("span", { class: "knb-dim", text: `no CPU writer ×${w.count} ` })) : "—";
    const body = c.buffers.map((b) => {
      const row = h("tr", { class: b.ok ? "" : "knb-bad", "data-arg": b.arg, title: b.line, onclick: () => choose(b) }, [
        h("td", { text: b.arg }), h("td", { text: b.dtype }),
        h("td", { class: "knb-num", text: `${b.mismatches} / ${b.size}` }),
        h("td", { class: "knb-num", text: fmt(b.max_abs) }), h("td", { class: "knb-num", text: fmt(b.max_rel) }),
        h("td", { class: "knb-num", text: String(b.max_ulp) }),
        h("td", { class: "knb-num", text: `${b.nan_mismatches} / ${b.inf_mismatches}` }),
        h("td", { text: `${b.policy}: rtol ${fmt(b.rtol)}, atol ${fmt(b.atol)}` }),
        h("td", {}, [writers(b)].flat()),
      ]);
      rows.set(b.arg, row);
      return row;
    });
    const head = ["buffer", "dtype", "out of tolerance", "max |diff|", "max rel", "max ulp", "NaN / Inf mismatches", "tolerance", "written by (CPU)"];
    section.append(h("table", { class: "knb-events knb-compare-table" }, [h("tr", {}, head.map((t) => h("th", { text: t }))), ...body]), maps);
    choose(c.buffers.find((b) => !b.ok) || c.buffers[0]);
    return section;
  }

  /**
   * The probed GPU run: the first divergence, then CPU / GPU / diff for every statement of a chosen program.
   * A row takes the main view to that statement, program and loop iteration.
   * @param {DivergenceMeta} d
   */
  buildDivergence(d) {
    const box = h("div", { class: "knb-divergence", "data-role": "divergence" }, [h("h5", { text: "Statement by statement (a probed GPU run)" })]);
    const [headline, ...rest] = d.report.split("\n");
    box.append(h("p", { class: `knb-verdict ${d.error || d.first ? "knb-bad" : "knb-ok"}`, "data-role": "divergence-verdict", text: headline }));
    if (rest.length) box.append(h("pre", { class: "knb-dim knb-divergence-summary", text: rest.join("\n") }));
    if (d.error || !d.programs.length) return box;
    const table = h("div", { class: "knb-divergence-rows" });
    const show = (/** @type {ProgramDivergenceMeta} */ program) => {
      const head = ["seq", "line", "variable", "iteration", "status", "differ", "max |diff|", "CPU", "GPU", "why"];
      const rows = program.rows.map((r) => {
        const first = d.first !== null && d.first.seq === r.seq && d.first.pid.join() === program.pid.join();
        const where = r.call_path.length ? `${r.name} (${r.function} ← ${r.call_path.join(" ← ")})` : r.name;
        const lanes = (/** @type {string[]} */ values) => values.map((v, i) => `[${r.lanes[i]}] ${v}`).join(" ");
        return h("tr", {
          class: `knb-status-${r.status}${first ? " knb-first" : ""}`, "data-seq": r.seq, "data-status": r.status, title: r.reason,
          onclick: () => this.commit({ pid: program.pid, stmt: r.stmt, iteration: r.iteration }),
        }, [
          h("td", { class: "knb-num", text: String(r.seq) }), h("td", { class: "knb-num", text: String(r.line) }),
          h("td", { text: where }), h("td", { text: r.iteration.length ? `(${r.iteration.join(", ")})` : "" }),
          h("td", { text: first ? `${r.status} ◀ first` : r.status }),
          h("td", { class: "knb-num", text: `${r.mismatches} / ${r.size}` }), h("td", { class: "knb-num", text: fmt(r.max_abs) }),
          h("td", { class: "knb-num", text: lanes(r.cpu) }), h("td", { class: "knb-num", text: lanes(r.gpu) }),
          h("td", { class: "knb-dim", text: r.reason }),
        ]);
      });
      const more = program.rows_total > program.rows.length ? [h("p", { class: "knb-dim", text: `${program.rows.length} of ${program.rows_total} statements shown: the first ones and those that differ` })] : [];
      table.replaceChildren(h("table", { class: "knb-events knb-divergence-table" }, [h("tr", {}, head.map((t) => h("th", { text: t }))), ...rows]), ...more);
      const chosen = table.querySelector(".knb-first");
      if (chosen) chosen.scrollIntoView?.({ block: "nearest" });
    };
    if (d.programs.length > 1) {
      const picker = h("select", { "aria-label": "probed program", "data-role": "divergence-pid", onchange: () => show(d.programs[Number(/** @type {HTMLSelectElement} */ (picker).value)]) },
        d.programs.map((p, i) => h("option", { value: i, text: `pid (${p.pid.join(", ")})` })));
      box.append(picker);
    }
    box.append(table);
    const start = d.first ? d.programs.findIndex((p) => p.pid.join() === d.first?.pid.join()) : 0;
    show(d.programs[Math.max(0, start)]);
    return box;
  }

  /**
   * Fetch and draw one buffer's CPU, GPU and |diff| maps and its ULP histogram.
   * @param {HTMLElement} host @param {LaunchMeta} launch @param {BufferComparisonMeta} b @param {string[]} labels
   */
  async loadComparison(host, launch, b, labels) {
    host.dataset.state = "loading";
    const got = await this.request("compare", { type: "compare", launch: launch.index, arg: b.arg });
    if (!got) return;
    const [reply, buffers] = got;
    if (reply.type === "error") {
      host.replaceChildren(h("span", { class: "knb-error", text: reply.message }));
      host.dataset.state = "error";
      return;
    }
    const r = /** @type {CompareReply} */ (reply);
    const [rows, cols] = r.view_shape;
    const [cpu, gpu, diff] = buffers.slice(0, 3).map((x) => new Float32Array(x));
    const codes = new Uint8Array(buffers[3]);
    const present = codes.map((k) => (k === PADDING ? 0 : 1));
    const outside = codes.map((k) => (k === OUTSIDE ? 1 : 0));
    const readout = h("div", { class: "knb-readout knb-dim", text: "hover a cell" });
    const [sr, sc] = r.step;
    const panel = (/** @type {string} */ name, /** @type {Float32Array} */ data, /** @type {Uint8Array} */ mask, /** @type {number} */ lo, /** @type {number} */ hi) => {
      const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "knb-heat", "data-role": `compare-${name}` }));
      sizeCanvas(canvas, rows, cols, COMPARE_WIDTH);
      blit(canvas, heatImage(data, mask, rows, cols, lo, hi, canvas.width, canvas.height));
      canvas.addEventListener("mousemove", (e) => {
        const [y, x] = cellAt(e, canvas, rows, cols);
        const i = y * cols + x;
        const offset = y * sr * r.grid[1] + x * sc;
        if (codes[i] === PADDING || offset >= r.size) return void (readout.textContent = " ");
        const index = r.shape.length > 1 ? `[${unravel(offset, r.shape).join(", ")}]` : `[${offset}]`;
        const block = sr * sc > 1 ? " (block)" : "";
        readout.textContent = `${r.arg}${index}${block}: CPU ${fmt(cpu[i])}, GPU ${fmt(gpu[i])}, |diff| ${fmt(diff[i])}` +
          (codes[i] === OUTSIDE ? " — out of tolerance" : " — within tolerance");
      });
      return h("div", { class: "knb-compare-map" }, [h("div", { class: "knb-dim", text: `${name} ${name === "|diff|" ? `0 … ${fmt(hi)}` : `${fmt(lo)} … ${fmt(hi)}`}` }), canvas]);
    };
    const hist = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "knb-hist", "data-role": "ulp-hist", width: 240, height: 48 }));
    const used = b.ulp_hist.reduce((last, n, i) => (n ? i : last), 0);
    const counts = b.ulp_hist.slice(0, used + 1);
    this.drawBars(hist, counts);
    const histLabel = counts.map((n, i) => (n ? `${labels[i]}: ${n}` : "")).filter(Boolean).join(" · ");
    host.replaceChildren(
      h("div", { class: "knb-fn" }, [h("b", { text: r.arg }), h("span", { class: "knb-dim", text: ` · ${r.dtype} (${r.shape.join(", ")}) · ${r.mismatches} out of tolerance (grey in |diff|: within)` })]),
      h("div", { class: "knb-maps" }, [panel("CPU", cpu, present, r.lo, r.hi), panel("GPU", gpu, present, r.lo, r.hi), panel("|diff|", diff, outside, 0, r.diff_max ?? 0)]),
      readout,
      h("div", { class: "knb-statrow" }, [hist, h("span", { class: "knb-dim", text: `ULP distance: ${histLabel || "none"}` })]),
      r.note ? h("div", { class: "knb-note", text: r.note }) : "",
    );
    host.dataset.state = "ready";
    host.dataset.arg = r.arg;
  }

  /** @param {HTMLCanvasElement} canvas @param {number[]} counts */
  drawBars(canvas, counts) {
    const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const top = Math.max(1, ...counts);
    const w = canvas.width / Math.max(1, counts.length);
    counts.forEach((n, i) => {
      const bh = n ? Math.max(1, (n / top) * (canvas.height - 2)) : 0;
      ctx.fillStyle = i === 0 ? "rgb(56,178,107)" : `rgb(${LUT[Math.round((i / Math.max(1, counts.length - 1)) * 255)].join(",")})`;
      ctx.fillRect(i * w, canvas.height - bh, Math.max(1, w - 1), bh);
    });
  }

  /** The compiled kernel's IR, one stage at a time, fetched on click. @param {LaunchMeta} launch @param {ArtifactsMeta} a */
  buildArtifacts(launch, a) {
    const text = /** @type {HTMLPreElement} */ (h("pre", { class: "knb-ir", "data-role": "ir", text: "Pick a stage." }));
    const facts = Object.entries(a.metadata).filter(([k]) => k !== "name").map(([k, v]) => `${k} ${v}`);
    const how = a.compiled_for_launch ? "compiled for this launch" : "compiled for the target only (not run)";
    /** @type {HTMLElement[]} */
    const buttons = [];
    const show = async (/** @type {string} */ stage, /** @type {HTMLElement} */ button) => {
      buttons.forEach((x) => x.classList.toggle("knb-chosen", x === button));
      text.dataset.state = "loading";
      const got = await this.request("artifact", { type: "artifact", launch: launch.index, stage });
      if (!got) return;
      const [reply] = got;
      text.textContent = reply.type === "error" ? reply.message : reply.text + (reply.truncated ? `\n… ${reply.truncated} more characters` : "");
      text.dataset.state = reply.type === "error" ? "error" : "ready";
      text.dataset.stage = stage;
    };
    a.stages.forEach((stage, i) => {
      const button = h("button", { type: "button", class: "knb-stage", "data-stage": stage, title: `${a.sizes[i]} characters`, text: stage.toUpperCase() });
      button.addEventListener("click", () => show(stage, button));
      buttons.push(button);
    });
    const missing = Object.entries(a.missing).map(([stage, why]) => h("span", { class: "knb-dim", text: ` ${stage.toUpperCase()}: ${why}` }));
    return h("section", { class: "knb-artifacts", "data-role": "artifacts" }, [
      h("h4", { text: "Compiled kernel" }),
      h("div", { class: "knb-dim", text: `${a.target} · ${how}${facts.length ? ` · ${facts.join(" · ")}` : ""}` }),
      h("div", { class: "knb-stages" }, [...buttons, ...missing]),
      text,
    ]);
  }

  /** @param {FindingMeta} f */
  jumpTo(f) {
    const launch = /** @type {LaunchMeta} */ (this.launchMeta);
    const stmt = f.line === null ? undefined : launch.statements.find((s) => s.line === f.line && (!f.file || s.file === f.file));
    this.commit({ ...(f.pid ? { pid: f.pid } : {}), ...(stmt ? { stmt: stmt.id, iteration: [] } : {}) });
  }

  /** Bring the view in line with the model: rebuild on a new launch, refetch on a new program, redraw on a new record. */
  async refresh() {
    const launch = this.launchMeta;
    if (!launch) return this.build();
    if (this.builtFor !== launch.index) this.build();
    const pid = /** @type {number[]} */ (this.model.get("pid"));
    pid.forEach((p, i) => {
      const slider = this.sliders?.[i];
      if (slider) { slider.value = String(p); /** @type {HTMLElement} */ (slider.nextElementSibling).textContent = String(p); }
    });
    if (this.pidBox && document.activeElement !== this.pidBox) this.pidBox.value = pid.join(", ");
    const key = `${launch.index}/${pid.join(",")}`;
    if (key !== this.loadedKey) {
      this.root.dataset.state = "loading";
      const got = await this.request("program", { type: "program", launch: launch.index, pid });
      if (!got) return;
      const [reply] = got;
      this.loadedKey = key;
      if (reply.type === "error") {
        this.program = null;
        this.showError(reply.message);
        return;
      }
      this.program = reply;
      this.target = { ...this.target, source: "record" };
      if (this.model.get("stmt") < 0 && reply.records.length) {
        const shaped = reply.records.filter((/** @type {RecordEntry} */ r) => r.shape.length);
        const last = (shaped.length ? shaped : reply.records)[shaped.length ? shaped.length - 1 : reply.records.length - 1];
        this.model.set("stmt", last.stmt);
        this.model.set("iteration", last.iteration);
        this.model.save_changes();
      }
      this.renderMemory(launch);
    }
    this.renderSelection(launch);
  }

  /** @param {LaunchMeta} launch */
  renderSelection(launch) {
    const stmt = this.model.get("stmt");
    const iteration = JSON.stringify(this.model.get("iteration"));
    const records = this.recordsOf(stmt);
    const recorded = new Set((this.program?.records || []).map((r) => r.stmt));
    for (const s of launch.statements) this.lineEls?.get(`${s.file}:${s.line}`)?.classList.toggle("knb-has", recorded.has(s.id));
    this.lineEls?.forEach((line) => line.classList.remove("knb-selected"));
    const s = launch.statements[stmt];
    if (s) this.lineEls?.get(`${s.file}:${s.line}`)?.classList.add("knb-selected");
    if (this.stmtList) this.stmtList.value = String(stmt);
    const chosen = records.find((r) => JSON.stringify(r.iteration) === iteration) || records[records.length - 1];
    this.renderIterations(records, chosen);
    if (this.target.source === "record") {
      if (!chosen) {
        this.clearValue(stmt < 0 ? "Pick a line or a statement." : `${s?.name ?? "?"}: not recorded by this program.`);
        return;
      }
      if (this.target.index !== chosen.index) this.target = { source: "record", index: chosen.index, field: "values", axes: null, at: null };
    }
    this.loadValue(launch);
  }

  /** @param {RecordEntry[]} records @param {RecordEntry|undefined} chosen */
  renderIterations(records, chosen) {
    const row = /** @type {HTMLElement} */ (this.iterRow);
    if (records.length < 2 || !chosen) return row.replaceChildren();
    const slider = /** @type {HTMLInputElement} */ (h("input", { type: "range", min: 0, max: records.length - 1, step: 1, value: records.indexOf(chosen), "aria-label": "loop iteration" }));
    const label = (/** @type {RecordEntry} */ r) => `iteration (${r.iteration.join(", ")})${r.call_path.length ? ` via ${r.call_path.join(" → ")}` : ""}`;
    const out = h("span", { class: "knb-num", text: label(chosen) });
    slider.addEventListener("input", () => {
      const r = records[Number(slider.value)];
      out.textContent = label(r);
      this.target = { source: "record", index: r.index, field: "values", axes: null, at: null };
      this.commit({ iteration: r.iteration });
    });
    row.replaceChildren(h("label", {}, [`${records.length} records `, slider, out]));
  }

  /** @param {LaunchMeta} launch */
  async loadValue(launch) {
    const t = this.target;
    const canvas = /** @type {HTMLCanvasElement} */ (this.canvas);
    canvas.dataset.state = "loading";
    const body = { type: "value", launch: launch.index, pid: this.model.get("pid"), source: t.source, index: t.index, field: t.field,
      ...(t.axes ? { axes: t.axes } : {}), ...(t.at ? { at: t.at } : {}) };
    const got = await this.request("value", body);
    if (!got) return;
    const [reply, buffers] = got;
    if (reply.type === "error") return this.clearValue(reply.message, true);
    this.drawValue(/** @type {ValueReply} */ (reply), buffers);
    this.root.dataset.state = "ready";
  }

  /** @param {string} message @param {boolean} [error] */
  clearValue(message, error = false) {
    const canvas = /** @type {HTMLCanvasElement} */ (this.canvas);
    canvas.width = 0;
    canvas.height = 0;
    canvas.dataset.state = error ? "error" : "empty";
    /** @type {HTMLElement} */ (this.valueLabel).textContent = message;
    this.valueLabel?.classList.toggle("knb-error", error);
    for (const n of [this.axisRow, this.stats, this.note]) n?.replaceChildren();
    this.root.dataset.state = "ready";
  }

  /** A program that could not be fetched: nothing of the previous program may stay on screen.
   * @param {string} message */
  showError(message) {
    this.clearValue(message, true);
    for (const c of [this.colorbar, this.hist]) c?.getContext("2d")?.clearRect(0, 0, c.width, c.height);
    this.memoryPane?.replaceChildren(h("span", { class: "knb-error", text: message }));
  }

  /** @param {ValueReply} reply @param {ArrayBuffer[]} buffers */
  drawValue(reply, buffers) {
    const [rows, cols] = reply.view_shape;
    const data = reply.format === "f8" ? new Float64Array(buffers[0]) : new Float32Array(buffers[0]);
    const mask = reply.has_mask ? new Uint8Array(buffers[1]) : null;
    const lo = reply.summary.min ?? 0;
    const hi = reply.summary.max ?? lo;
    const canvas = /** @type {HTMLCanvasElement} */ (this.canvas);
    sizeCanvas(canvas, rows, cols);
    blit(canvas, heatImage(data, mask, rows, cols, lo, hi, canvas.width, canvas.height));
    this.drawn = { reply, data, mask };
    let sum = 0;
    for (const v of data) if (Number.isFinite(v)) sum += v;
    canvas.dataset.checksum = sum.toPrecision(8);
    canvas.dataset.view = `${rows}x${cols}`;
    canvas.dataset.state = "ready";
    /** @type {HTMLElement} */ (this.valueLabel).textContent = `${reply.label} — ${reply.dtype}[${reply.shape.join(", ")}]`;
    this.valueLabel?.classList.remove("knb-error");
    this.renderAxes(reply);
    this.drawColorbar(lo, hi);
    const s = reply.summary;
    /** @type {HTMLElement} */ (this.stats).replaceChildren(...[["min", s.min], ["max", s.max], ["mean", s.mean], ["NaN", s.nan], ["Inf", s.inf], ["size", s.size]]
      .map(([k, v]) => h("tr", {}, [h("th", { text: String(k) }), h("td", { class: "knb-num", text: fmt(/** @type {number|null} */ (v)) })])));
    this.drawHistogram(reply.hist.counts);
    /** @type {HTMLElement} */ (this.note).textContent = reply.note;
  }

  /** Axis pickers for values of rank ≥ 3: which two axes are drawn, and where the others are cut. @param {ValueReply} reply */
  renderAxes(reply) {
    const row = /** @type {HTMLElement} */ (this.axisRow);
    if (reply.shape.length < 3) return row.replaceChildren();
    const axisSelect = (/** @type {number} */ which) => {
      const sel = /** @type {HTMLSelectElement} */ (h("select", { "aria-label": which ? "column axis" : "row axis" },
        reply.shape.map((n, a) => h("option", { value: a, text: `axis ${a} (${n})` }))));
      sel.value = String(reply.axes[which]);
      sel.addEventListener("change", () => {
        const axes = [...reply.axes];
        axes[which] = Number(sel.value);
        if (axes[0] !== axes[1]) this.retarget({ axes, at: reply.at });
      });
      return sel;
    };
    const cuts = reply.shape.map((n, a) => {
      if (reply.axes.includes(a)) return "";
      const s = /** @type {HTMLInputElement} */ (h("input", { type: "range", min: 0, max: n - 1, value: reply.at[a], "aria-label": `index along axis ${a}` }));
      s.addEventListener("change", () => {
        const at = [...reply.at];
        at[a] = Number(s.value);
        this.retarget({ axes: reply.axes, at });
      });
      return h("label", {}, [`axis ${a} = ${reply.at[a]} `, s]);
    });
    row.replaceChildren(h("label", {}, ["rows ", axisSelect(0)]), h("label", {}, ["cols ", axisSelect(1)]), ...cuts);
  }

  /** @param {{axes: number[], at: number[]}} change */
  retarget(change) {
    this.target = { ...this.target, ...change };
    const launch = this.launchMeta;
    if (launch) this.loadValue(launch);
  }

  /** @param {MouseEvent} e */
  hover(e) {
    if (!this.drawn || !this.canvas || !this.readout) return;
    const { reply, data, mask } = this.drawn;
    const [rows, cols] = reply.view_shape;
    const [r, c] = cellAt(e, this.canvas, rows, cols);
    const i = r * cols + c;
    const [sr, sc] = reply.step;
    const at = (/** @type {number} */ x, /** @type {number} */ s) => (s > 1 ? `${x * s}:${x * s + s}` : String(x));
    let index;
    if (reply.shape.length === 0) index = [];
    else if (reply.shape.length === 1) index = [at(c, sc)];
    else {
      index = reply.at.map(String);
      index[reply.axes[0]] = at(r, sr);
      index[reply.axes[1]] = at(c, sc);
    }
    const masked = mask && !mask[i] ? " (masked lane)" : "";
    this.readout.textContent = `[${index.join(", ")}] = ${fmt(data[i])}${masked}${sr * sc > 1 ? " (block mean)" : ""}`;
  }

  /** @param {number} lo @param {number} hi */
  drawColorbar(lo, hi) {
    const bar = /** @type {HTMLCanvasElement} */ (this.colorbar);
    const image = new ImageData(256, 1);
    LUT.forEach((rgb, i) => image.data.set([...rgb, 255], 4 * i));
    blit(bar, image);
    /** @type {HTMLElement} */ (this.cbLo).textContent = fmt(lo);
    /** @type {HTMLElement} */ (this.cbHi).textContent = fmt(hi);
  }

  /** @param {number[]} counts */
  drawHistogram(counts) {
    const canvas = /** @type {HTMLCanvasElement} */ (this.hist);
    const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    const top = Math.max(1, ...counts);
    const w = canvas.width / Math.max(1, counts.length);
    counts.forEach((n, i) => {
      const bh = n ? Math.max(1, (n / top) * (canvas.height - 2)) : 0;
      ctx.fillStyle = `rgb(${LUT[Math.round((i / Math.max(1, counts.length - 1)) * 255)].join(",")})`;
      ctx.fillRect(i * w, canvas.height - bh, Math.max(1, w - 1), bh);
    });
  }

  /** One card per buffer argument, plus this program's memory events. @param {LaunchMeta} launch */
  renderMemory(launch) {
    const pane = /** @type {HTMLElement} */ (this.memoryPane);
    const pid = this.model.get("pid");
    const cards = launch.buffers.map((b) => {
      const mine = h("div", { class: "knb-map" });
      const all = h("div", { class: "knb-map" });
      const facts = [`${b.size} elements`, b.written ? `${b.never_written} never written` : "read only",
        `${b.written_more_than_once} written by several programs`, `${b.oob} out-of-bounds attempts`];
      this.loadMap(mine, `footprint:${b.arg}`, { type: "footprint", launch: launch.index, pid, arg: b.arg });
      this.loadBufferMap(all, launch, b.arg);
      return h("div", { class: "knb-buffer", "data-arg": b.arg }, [
        h("div", { class: "knb-fn" }, [h("b", { text: b.arg }), h("span", { class: "knb-dim", text: ` · shape (${b.shape.join(", ")}) · ${facts.join(" · ")}` })]),
        h("div", { class: "knb-maps" }, [h("div", {}, [h("div", { class: "knb-dim", text: "this program" }), mine]), h("div", {}, [h("div", { class: "knb-dim", text: "all programs" }), all])]),
      ]);
    });
    const events = (this.program?.events || []).map((e) => h("tr", { onclick: () => this.showEvent(e.index, "values") }, [
      h("td", { text: e.kind }), h("td", { text: e.arg ?? "—" }), h("td", { class: "knb-num", text: String(e.line) }),
      h("td", { class: "knb-num", text: `${e.active}/${e.lanes}` }), h("td", { class: "knb-num", text: e.active ? `[${e.lo}, ${e.hi})` : "—" }),
      h("td", {}, [h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); ev.stopPropagation(); this.showEvent(e.index, "indices"); }, text: "offsets" })]),
    ]));
    const table = events.length ? h("table", { class: "knb-events" }, [
      h("tr", {}, ["access", "argument", "line", "active lanes", "elements", ""].map((t) => h("th", { text: t }))), ...events,
    ]) : h("p", { class: "knb-dim", text: "This program made no memory accesses." });
    const stdout = this.program?.stdout ? [h("details", {}, [h("summary", { text: "program output" }), h("pre", { text: this.program.stdout })])] : [];
    pane.replaceChildren(...cards, h("div", { class: "knb-dim", text: "Memory accesses of this program (click: show the lanes)" }), table, ...stdout);
  }

  /** @param {number} index @param {string} field */
  showEvent(index, field) {
    this.target = { source: "event", index, field, axes: null, at: null };
    const launch = this.launchMeta;
    if (launch) this.loadValue(launch);
  }

  /** @param {HTMLElement} host @param {LaunchMeta} launch @param {string} arg */
  async loadBufferMap(host, launch, arg) {
    const key = `${launch.index}/${arg}`;
    const cached = this.bufferMaps.get(key);
    if (cached) return this.drawMap(host, ...cached);
    const got = await this.loadMap(host, `buffer:${arg}`, { type: "buffer", launch: launch.index, arg });
    if (got) this.bufferMaps.set(key, got);
  }

  /** @param {HTMLElement} host @param {string} channel @param {Record<string, any>} body @returns {Promise<[MapReply, ArrayBuffer[]]|null>} */
  async loadMap(host, channel, body) {
    const got = await this.request(channel, body);
    if (!got) return null;
    const [reply, buffers] = got;
    if (reply.type === "error") {
      host.replaceChildren(h("span", { class: "knb-error", text: reply.message }));
      return null;
    }
    this.drawMap(host, reply, buffers);
    return [reply, buffers];
  }

  /** @param {HTMLElement} host @param {MapReply} reply @param {ArrayBuffer[]} buffers */
  drawMap(host, reply, buffers) {
    const codes = new Uint8Array(buffers[0]);
    const [rows, cols] = reply.view_shape;
    const palette = MAP_RGBA[reply.type];
    const [sr, sc] = reply.step;
    const canvas = /** @type {HTMLCanvasElement} */ (h("canvas", { class: "knb-mapcanvas", "data-role": reply.type }));
    sizeCanvas(canvas, rows, cols, MAP_WIDTH, 16);
    if (rows > 1) canvas.height = Math.max(canvas.height, Math.min(rows * 3, 120));
    blit(canvas, mapImage(codes, rows, cols, palette, canvas.width, canvas.height,
      (r, c) => r * sr * reply.grid[1] + c * sc < reply.size));
    const readout = h("div", { class: "knb-readout knb-dim", text: " " });
    canvas.addEventListener("mousemove", (e) => {
      const [r, c] = cellAt(e, canvas, rows, cols);
      const offset = r * sr * reply.grid[1] + c * sc;
      if (offset >= reply.size) return void (readout.textContent = " ");
      const index = reply.shape.length > 1 ? `[${unravel(offset, reply.shape).join(", ")}]` : `[${offset}]`;
      readout.textContent = `${reply.arg}${index}${sr * sc > 1 ? " (block)" : ""}: ${reply.legend[codes[r * cols + c]]}`;
    });
    const legend = h("div", { class: "knb-legend" }, reply.legend.map((name, i) => reply.counts[i] || i === 0 ? h("span", { class: "knb-swatch" }, [
      h("i", { style: `background: rgba(${palette[i].slice(0, 3).join(",")},${palette[i][3] / 255})` }), `${name} ${reply.counts[i]}`,
    ]) : ""));
    const oob = reply.oob.length ? h("div", { class: "knb-error", text: `out of bounds: ${reply.oob.map(([x, y, z, line, first]) => `pid (${x}, ${y}, ${z}) line ${line} element ${first}`).join("; ")}` }) : "";
    host.replaceChildren(canvas, readout, legend, oob, reply.note ? h("div", { class: "knb-note", text: reply.note }) : "");
  }
}
