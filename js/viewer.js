// kernel_nb trace viewer: the browser half of kernel_nb.view.TraceViewer.
// Widget state carries only launch metadata and the selection; every array arrives through
// custom messages (see kernel_nb/view/protocol.py and js/protocol.d.ts), one request per
// program / value / buffer.
//
// Why one module: anywidget's _esm is one module string and relative imports do not resolve
// from it. Its sections, top to bottom: drawing helpers (pure functions of their arguments),
// the request channel, one class per pane (each owns its DOM), and the controller that keeps the
// panes in line with the model.

/**
 * @typedef {import("./protocol").SummaryPayload} Summary
 * @typedef {import("./protocol").StatementMeta} Statement
 * @typedef {import("./protocol").PrecisionMeta} PrecisionMeta
 * @typedef {import("./protocol").LaunchMeta} LaunchMeta
 * @typedef {import("./protocol").ViewerMeta} ViewerMeta
 * @typedef {import("./protocol").PaletteMeta} PaletteMeta
 * @typedef {import("./protocol").FindingMeta} FindingMeta
 * @typedef {import("./protocol").BufferComparisonMeta} BufferComparisonMeta
 * @typedef {import("./protocol").DivergenceMeta} DivergenceMeta
 * @typedef {import("./protocol").ProgramDivergenceMeta} ProgramDivergenceMeta
 * @typedef {import("./protocol").ArtifactsMeta} ArtifactsMeta
 * @typedef {import("./protocol").RecordEntry} RecordEntry
 * @typedef {import("./protocol").Request} Request
 * @typedef {import("./protocol").Reply} Reply
 * @typedef {{[K in Request["type"]]: Omit<Extract<Request, {type: K}>, "id">}[Request["type"]]} RequestBody a request before its id
 * @typedef {import("./protocol").ProgramReply} ProgramReply
 * @typedef {import("./protocol").ValueReply} ValueReply
 * @typedef {import("./protocol").MapReply} MapReply
 * @typedef {import("./protocol").CompareReply} CompareReply
 * @typedef {{get(name: string): any, set(name: string, value: any): void, save_changes(): void,
 *   on(name: string, cb: Function): void, off(name: string, cb?: Function): void, send(content: any, callbacks?: any, buffers?: any[]): void}} Model
 * @typedef {{source: "record"|"event", index: number, field: "values"|"indices"|"before", axes: number[]|null, at: number[]|null}} ValueTarget
 * @typedef {{launch?: number, pid?: number[], stmt?: number, iteration?: number[], finding?: number}} Change
 * @typedef {number[]} RGB
 * @typedef {{lut: RGB[], errors: RGB[], nan: RGB, posinf: RGB, neginf: RGB, masked: RGB}} Palette
 * @typedef {{data: Float32Array|Float64Array, reply: ValueReply}} Drawn one value as drawn: its data, in the reply's view
 * @typedef {{shadow: Drawn, error: Drawn, own_error: Drawn}} Companions a value's fp64 shadow and its errors in ulps, in the same view
 */

// ---------------------------------------------------------------------------------------------
// Drawing helpers

/** Access-map colours, by code (see FOOTPRINT_LEGEND / BUFFER_LEGEND in payloads.py). */
const MAP_RGBA = {
  footprint: [[128, 128, 128, 40], [76, 155, 232, 255], [240, 160, 48, 255], [56, 178, 107, 255]],
  buffer: [[128, 128, 128, 40], [76, 155, 232, 255], [56, 178, 107, 255], [229, 57, 53, 255], [255, 179, 0, 255]],
};
/** The first bar of the ULP histogram: elements the GPU got exactly. */
const EXACT_RGB = [56, 178, 107];
const MAX_WIDTH = 640;
const MAX_HEIGHT = 420;
// Two access maps (this program, all programs) sit side by side.
const MAP_WIDTH = 400;
// An access map is at most this tall (at zoom ×1), so many buffers do not make the viewer a long scroll.
const MAP_HEIGHT = 180;
// The thinnest cell drawn where the buffer still fits (a 6-row buffer keeps rows one can point at).
const MIN_CELL = 6;
// Three comparison maps (CPU, GPU, |diff|) sit side by side.
const COMPARE_WIDTH = 300;
/** Mismatch codes of a CompareReply (kernel_nb/view/compare.py). */
const PADDING = 0, OUTSIDE = 2;
const TRAITS = ["launch", "pid", "stmt", "iteration", "meta", "finding"];

/** @param {string} hex "#rrggbb" @returns {RGB} */
function rgbOf(hex) {
  return [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
}

/** A 256-entry lookup table through colormap stops. @param {string[]} hexStops @returns {RGB[]} */
function lutOf(hexStops) {
  const stops = hexStops.map(rgbOf);
  /** @type {RGB[]} */
  const lut = [];
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (stops.length - 1);
    const k = Math.min(Math.floor(t), stops.length - 2);
    const f = t - k;
    lut.push(stops[k].map((c, j) => Math.round(c + f * (stops[k + 1][j] - c))));
  }
  return lut;
}

/** The colours the metadata sends (kernel_nb/view/plot.py), with lookup tables for values and errors. @param {PaletteMeta} p @returns {Palette} */
function paletteOf(p) {
  return { lut: lutOf(p.colormap), errors: lutOf(p.errormap), nan: rgbOf(p.nan), posinf: rgbOf(p.posinf), neginf: rgbOf(p.neginf), masked: rgbOf(p.masked) };
}

/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {Record<string, any>} [props] @param {(Node|string)[]} [children]
 * @returns {HTMLElementTagNameMap[K]}
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

/** @param {number|null|undefined} x */
function fmt(x) {
  if (x === null || x === undefined) return "—";
  if (Number.isInteger(x) && Math.abs(x) < 1e9) return String(x);
  const a = Math.abs(x);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? x.toExponential(3) : x.toPrecision(5).replace(/\.?0+$/, "");
}

/** An error in ulps, as short as it reads: 0.99, 512, 13989, 5.2e10. @param {number|null|undefined} x */
function ulpsText(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (x === Infinity) return "∞";
  if (x >= 1e5) return x.toExponential(1).replace("e+", "e");
  return x >= 100 ? String(Math.round(x)) : String(Number(x.toPrecision(2)));
}

/** Errors in ulps on the log scale the error map draws: log10(1 + ulps), NaN and ±Inf kept. @param {Float32Array|Float64Array} ulps */
function logUlps(ulps) {
  const out = new Float32Array(ulps.length);
  for (let i = 0; i < ulps.length; i++) {
    const v = ulps[i];
    out[i] = Number.isFinite(v) ? Math.log10(1 + Math.max(0, v)) : v;
  }
  return out;
}

// The source gutter marks a line whose statements' own arithmetic loses at least LOSS_FROM ulps (a correctly
// rounded operation is within half an ulp, a short sum or chain of them within an ulp or two); the mark is full
// size and colour at 10^LOSS_FULL ulps and more, and scales with log10 of the error below that.
const LOSS_FROM = 2;
const LOSS_FULL = 5;
const LOSS_LOW = [245, 176, 65], LOSS_HIGH = [198, 40, 40];

/**
 * The gutter's mark for a line of a shadow run, from its statements' worst errors over the launch (null: none).
 * @param {Statement[]} stmts @returns {HTMLElement|null}
 */
function lossMark(stmts) {
  const measured = stmts.filter((s) => s.precision);
  const own = (/** @type {Statement} */ s) => (s.precision?.own_nonfinite ? Infinity : s.precision?.own_ulps ?? 0);
  const worst = Math.max(0, ...measured.map(own));
  if (worst < LOSS_FROM) return null;
  const t = Number.isFinite(worst) ? Math.min(1, Math.log10(worst) / LOSS_FULL) : 1;
  const rgb = LOSS_LOW.map((c, i) => Math.round(c + t * (LOSS_HIGH[i] - c)));
  const lines = measured.map((s) => {
    const p = /** @type {PrecisionMeta} */ (s.precision);
    const odd = (/** @type {number} */ n) => (n ? `, not finite in ${n} elements` : "");
    return `${s.name}: own error up to ${ulpsText(p.own_ulps)} ulps${odd(p.own_nonfinite)} (${p.dtype || "?"}), ` +
      `total up to ${ulpsText(p.ulps)} ulps${odd(p.nonfinite)}`;
  });
  return h("span", {
    class: "knb-loss", "data-role": "loss", "data-own-ulps": String(worst), title: lines.join("\n"),
    style: `width: ${Math.round(3 + 5 * t)}px; background: rgb(${rgb.join(",")})`,
  });
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

/** The text of an element index: [i, j, ...] of `shape`, or [offset] of a flat buffer. @param {number} offset @param {number[]} shape */
function indexText(offset, shape) {
  return shape.length > 1 ? `[${unravel(offset, shape).join(", ")}]` : `[${offset}]`;
}

/**
 * Size a visible canvas for a rows×cols layout (the data's own, before any reduction): square cells,
 * so the drawing has the data's aspect ratio, within maxWidth×maxHeight; an axis whose cells would be
 * thinner than MIN_CELL gets MIN_CELL per cell where that still fits; one row is a fixed-height strip.
 * @param {HTMLCanvasElement} canvas @param {number} rows @param {number} cols
 * @param {number} [maxWidth] @param {number} [stripHeight] @param {number} [maxHeight]
 */
function sizeCanvas(canvas, rows, cols, maxWidth = MAX_WIDTH, stripHeight = 28, maxHeight = MAX_HEIGHT) {
  const cell = Math.min(32, maxWidth / cols, maxHeight / rows);
  let width = cols * cell;
  let height = rows === 1 ? stripHeight : rows * cell;
  if (width < cols * MIN_CELL && cols * MIN_CELL <= maxWidth) width = cols * MIN_CELL;
  if (rows > 1 && height < rows * MIN_CELL && rows * MIN_CELL <= maxHeight) height = rows * MIN_CELL;
  canvas.width = Math.max(Math.min(8, cols * 32), Math.round(width));
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

/** Block boundaries when n cells are drawn on m ≤ n pixels: pixel i covers cells [b[i], b[i + 1]). @param {number} n @param {number} m */
function spans(n, m) {
  const b = new Int32Array(m + 1);
  for (let i = 0; i <= m; i++) b[i] = Math.floor((i * n) / m);
  return b;
}

/**
 * An image of a rows×cols grid at most `width`×`height` pixels large: when cells outnumber pixels,
 * one pixel covers a block of cells [r0, r1)×[c0, c1), and `pixel` writes its RGBA at `out[at..at+3]`.
 * Plain loops, no closure per pixel: a map of a million cells is drawn on every pid change.
 * @param {number} rows @param {number} cols @param {number} width @param {number} height
 * @param {(out: Uint8ClampedArray, at: number, r0: number, r1: number, c0: number, c1: number) => void} pixel
 */
function blockImage(rows, cols, width, height, pixel) {
  const w = Math.max(1, Math.min(cols, width));
  const ht = Math.max(1, Math.min(rows, height));
  const image = new ImageData(w, ht);
  const ys = spans(rows, ht), xs = spans(cols, w);
  for (let y = 0; y < ht; y++) {
    for (let x = 0; x < w; x++) pixel(image.data, 4 * (y * w + x), ys[y], ys[y + 1], xs[x], xs[x + 1]);
  }
  return image;
}

/**
 * Colour an access map; a pixel covering several elements shows the largest code among them
 * (codes are ordered so that the most notable state is the largest). `codes` holds the view rows
 * [first, last) only (MapReply.window); the other rows are untouched (code 0).
 * @param {Uint8Array} codes @param {number[]} window @param {number} rows @param {number} cols @param {number[][]} colours
 * @param {number} width @param {number} height @param {(r: number, c: number) => boolean} inside
 */
function mapImage(codes, window, rows, cols, colours, width, height, inside) {
  const [first, last] = window;
  return blockImage(rows, cols, width, height, (out, at, r0, r1, c0, c1) => {
    // A block of rows the codes do not cover, all inside the buffer (offsets grow along rows and columns):
    // untouched, without visiting its cells; most of a large buffer is that for one program's footprint.
    if ((r1 <= first || r0 >= last) && inside(r1 - 1, c1 - 1)) return void out.set(colours[0], at);
    let code = -1;
    for (let r = r0; r < r1; r++) {
      const held = r >= first && r < last;
      const base = (r - first) * cols;
      for (let c = c0; c < c1; c++) if (inside(r, c)) code = Math.max(code, held ? codes[base + c] : 0);
    }
    out.set(code < 0 ? [0, 0, 0, 0] : colours[code], at);
  });
}

/**
 * Colour a float view. A pixel covering a block shows NaN, then +Inf, then −Inf over the block's
 * mean, so no special value is hidden.
 * @param {Float32Array|Float64Array} data @param {Uint8Array|null} mask @param {number} rows @param {number} cols
 * @param {number} lo @param {number} hi @param {number} width @param {number} height @param {Palette} palette
 */
function heatImage(data, mask, rows, cols, lo, hi, width, height, palette) {
  const span = hi > lo ? hi - lo : 1;
  return blockImage(rows, cols, width, height, (out, at, r0, r1, c0, c1) => {
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
    const rgb = nan ? palette.nan : pinf ? palette.posinf : ninf ? palette.neginf : n === 0 ? palette.masked
      : palette.lut[Math.max(0, Math.min(255, Math.round(((sum / n - lo) / span) * 255)))];
    out[at] = rgb[0]; out[at + 1] = rgb[1]; out[at + 2] = rgb[2]; out[at + 3] = 255;
  });
}

/** Draw an RGBA image of rows×cols cells, scaled onto `canvas` without smoothing. @param {HTMLCanvasElement} canvas @param {ImageData} image */
function blit(canvas, image) {
  const off = h("canvas", { width: image.width, height: image.height });
  off.getContext("2d")?.putImageData(image, 0, 0);
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.drawImage(off, 0, 0, canvas.width, canvas.height);
}

/**
 * Bars of `counts`, coloured along the colormap from left to right (the first in `first`, if given).
 * @param {HTMLCanvasElement} canvas @param {number[]} counts @param {Palette} palette @param {RGB} [first]
 */
function drawBars(canvas, counts, palette, first) {
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const top = Math.max(1, ...counts);
  const w = canvas.width / Math.max(1, counts.length);
  counts.forEach((n, i) => {
    const bh = n ? Math.max(1, (n / top) * (canvas.height - 2)) : 0;
    const rgb = i === 0 && first ? first : palette.lut[Math.round((i / Math.max(1, counts.length - 1)) * 255)];
    ctx.fillStyle = `rgb(${rgb.join(",")})`;
    ctx.fillRect(i * w, canvas.height - bh, Math.max(1, w - 1), bh);
  });
}

/** @param {HTMLCanvasElement} canvas */
function clearCanvas(canvas) {
  canvas.getContext("2d")?.clearRect(0, 0, canvas.width, canvas.height);
}

/** @param {string} message */
function errorText(message) {
  return h("span", { class: "knb-error", text: message });
}

// ---------------------------------------------------------------------------------------------
// The request channel

/** Requests to Python and their replies, matched by id; a newer request on a channel drops the older one's reply. */
class Channel {
  /** @param {Model} model */
  constructor(model) {
    this.model = model;
    // Several views of one model all receive every reply: a random base keeps request ids apart.
    this.nextId = Math.floor(Math.random() * 2 ** 31) * 2 ** 20;
    /** @type {Map<number, (reply: Reply, buffers: ArrayBuffer[]) => void>} */
    this.pending = new Map();
    /** @type {Map<string, number>} latest request id per channel, so stale replies are dropped */
    this.latest = new Map();
    this.onMessage = (/** @type {Reply} */ msg, /** @type {any[]} */ buffers) => {
      const resolve = this.pending.get(msg.id);
      if (!resolve) return;
      this.pending.delete(msg.id);
      resolve(msg, (buffers || []).map(toArrayBuffer));
    };
    model.on("msg:custom", this.onMessage);
  }

  /**
   * Send one request; resolves with the reply unless a newer request on the same channel overtook it.
   * @param {string} channel @param {RequestBody} body @returns {Promise<[Reply, ArrayBuffer[]]|null>}
   */
  request(channel, body) {
    const id = ++this.nextId;
    this.latest.set(channel, id);
    return new Promise((resolve) => {
      this.pending.set(id, (reply, buffers) => resolve(this.latest.get(channel) === id ? [reply, buffers] : null));
      this.model.send({ ...body, id });
    });
  }

  dispose() {
    this.model.off("msg:custom", this.onMessage);
  }
}

// ---------------------------------------------------------------------------------------------
// Panes

/** The kernel's name and grid, the launch picker and the pid controls. */
class HeaderPane {
  /**
   * @param {LaunchMeta[]} launches @param {LaunchMeta} launch
   * @param {(change: Change) => void} commit @param {() => number[]} currentPid
   */
  constructor(launches, launch, commit, currentPid) {
    const picker = h("select", { class: "knb-launch", "aria-label": "launch", onchange: () => commit({ launch: Number(picker.value), pid: [0, 0, 0], stmt: -1, iteration: [] }) },
      launches.map((l) => h("option", { value: l.index, text: `#${l.index} ${l.kernel} grid ${l.grid.join("×")}` })));
    picker.value = String(launch.index);
    const status = launch.status === "ok" ? "" : ` — ${launch.status}${launch.error ? `: ${launch.error}` : ""}`;
    this.header = h("div", { class: "knb-header" }, [
      h("span", { class: "knb-title", text: `${launch.kernel}` }),
      h("span", { class: "knb-dim", text: ` grid ${launch.grid.join("×")} · ${launch.num_programs} programs${status}` }),
      ...(launches.length > 1 ? [picker] : []),
    ]);
    /** @type {{slider: HTMLInputElement, out: HTMLElement}[]} by axis; absent for axes of size 1 */
    this.sliders = [];
    this.pidRow = h("div", { class: "knb-pid" });
    ["x", "y", "z"].forEach((axis, i) => {
      if (launch.grid[i] <= 1) return;
      const out = h("span", { class: "knb-num" });
      const slider = h("input", { type: "range", min: 0, max: launch.grid[i] - 1, step: 1, "aria-label": `pid ${axis}`, "data-axis": i });
      slider.addEventListener("input", () => {
        const pid = [...currentPid()];
        pid[i] = Number(slider.value);
        out.textContent = slider.value;
        commit({ pid });
      });
      this.sliders[i] = { slider, out };
      this.pidRow.append(h("label", {}, [`pid ${axis} `, slider, out]));
    });
    this.pidBox = h("input", { type: "text", class: "knb-pidbox", size: 12, "aria-label": "program id", placeholder: "x, y, z" });
    this.pidBox.addEventListener("change", () => {
      const parts = (this.pidBox.value.match(/-?\d+/g) || []).map(Number);
      const pid = [0, 1, 2].map((i) => Math.max(0, Math.min(launch.grid[i] - 1, parts[i] ?? 0)));
      commit({ pid });
    });
    this.pidRow.append(h("label", {}, ["pid ", this.pidBox]));
  }

  /** Show `pid` on the sliders and in the box (unless one is typing there). @param {number[]} pid */
  show(pid) {
    pid.forEach((p, i) => {
      const axis = this.sliders[i];
      if (axis) { axis.slider.value = String(p); axis.out.textContent = String(p); }
    });
    if (document.activeElement !== this.pidBox) this.pidBox.value = pid.join(", ");
  }
}

/**
 * Scroll the line's own box (its <pre>, positioned) so that the line is in view. Element.scrollIntoView
 * would scroll the notebook as well, taking the user away from the cell they are in.
 * @param {HTMLElement} line
 */
function scrollWithin(line) {
  const box = line.parentElement;
  if (!box) return;
  const top = line.offsetTop, bottom = top + line.offsetHeight;
  if (top < box.scrollTop || bottom > box.scrollTop + box.clientHeight) box.scrollTop = Math.max(0, top - box.clientHeight / 3);
}

/** The kernel's source with its recorded lines, the statement list and the loop-iteration slider. */
class SourcePane {
  /**
   * @param {LaunchMeta} launch
   * @param {(stmt: number) => void} onStatement a statement picked in the list
   * @param {(stmts: Statement[]) => void} onLine a recorded line clicked
   */
  constructor(launch, onStatement, onLine) {
    this.launch = launch;
    /** @type {Map<number, Statement>} the statements listed are not indexed by id (a shadow run's companions are left out) */
    this.byId = new Map(launch.statements.map((s) => [s.id, s]));
    this.el = h("div", { class: "knb-source" });
    this.stmtList = h("select", { class: "knb-stmts", "aria-label": "statement" }, [
      h("option", { value: -1, text: "— recorded statements —" }),
      ...launch.statements.map((s) => h("option", { value: s.id, text: `${s.name} · ${s.function}:${s.line}${s.kind === "loop" ? " (loop)" : ""}` })),
    ]);
    this.stmtList.addEventListener("change", () => onStatement(Number(this.stmtList.value)));
    this.iterRow = h("div", { class: "knb-iter" });
    /** @type {Map<string, HTMLElement>} file:line → line element */
    this.lineEls = new Map();
    const files = launch.sources.map((src) => {
      const lines = src.text.replace(/\n$/, "").split("\n").map((text, i) => {
        const n = src.first_line + i;
        const stmts = launch.statements.filter((s) => s.file === src.file && s.line === n);
        const loss = launch.shadow ? lossMark(stmts) : null;
        const line = h("div", { class: stmts.length ? "knb-line knb-recorded" : "knb-line", "data-line": n }, [
          ...(launch.shadow ? [h("span", { class: "knb-gutter" }, loss ? [loss] : [])] : []),
          h("span", { class: "knb-ln", text: String(n) }), h("span", { class: "knb-code", text: text || " " }),
        ]);
        if (stmts.length) {
          line.title = loss ? loss.title : stmts.map((s) => s.name).join(", ");
          line.addEventListener("click", () => onLine(stmts));
        }
        this.lineEls.set(`${src.file}:${n}`, line);
        return line;
      });
      return h("div", { class: "knb-file" }, [h("div", { class: "knb-fn", text: `${src.function} — ${src.file}` }), h("pre", {}, lines)]);
    });
    const legend = launch.shadow ? [h("div", { class: "knb-dim knb-loss-legend" }, [
      h("span", { class: "knb-loss", style: `width: 8px; background: rgb(${LOSS_HIGH.join(",")})` }),
      ` lines whose own arithmetic loses ${LOSS_FROM} ulps or more against the ${launch.shadow} shadow (hover for numbers)`,
    ])] : [];
    this.el.replaceChildren(this.stmtList, this.iterRow, ...legend, ...files);
  }

  /** Mark the lines this program recorded and the selected statement's. @param {Set<number>} recorded @param {number} stmt */
  mark(recorded, stmt) {
    /** @param {Statement|undefined} s */
    const lineOf = (s) => (s ? this.lineEls.get(`${s.file}:${s.line}`) : undefined);
    for (const s of this.launch.statements) lineOf(s)?.classList.toggle("knb-has", recorded.has(s.id));
    this.lineEls.forEach((line) => line.classList.remove("knb-selected"));
    const selected = lineOf(this.byId.get(stmt));
    selected?.classList.add("knb-selected");
    if (selected) scrollWithin(selected);
    this.stmtList.value = String(stmt);
  }

  /**
   * A slider over the records of one statement, when it has several (a loop).
   * @param {RecordEntry[]} records @param {RecordEntry|undefined} chosen @param {(record: RecordEntry) => void} onPick
   */
  iterations(records, chosen, onPick) {
    if (records.length < 2 || !chosen) return this.iterRow.replaceChildren();
    const slider = h("input", { type: "range", min: 0, max: records.length - 1, step: 1, value: records.indexOf(chosen), "aria-label": "loop iteration" });
    const label = (/** @type {RecordEntry} */ r) => `iteration (${r.iteration.join(", ")})${r.call_path.length ? ` via ${r.call_path.join(" → ")}` : ""}`;
    const out = h("span", { class: "knb-num", text: label(chosen) });
    slider.addEventListener("input", () => {
      const r = records[Number(slider.value)];
      out.textContent = label(r);
      onPick(r);
    });
    this.iterRow.replaceChildren(h("label", {}, [`${records.length} records `, slider, out]));
  }
}

/** The data of a value reply's first buffer. @param {ValueReply} reply @param {ArrayBuffer[]} buffers */
function floatsOf(reply, buffers) {
  return reply.format === "f8" ? new Float64Array(buffers[0]) : new Float32Array(buffers[0]);
}

/** A number with `digits` significant digits, trailing zeros dropped (a shadow's digits matter). @param {number} x @param {number} digits */
function precise(x, digits) {
  return Number.isFinite(x) ? String(Number(x.toPrecision(digits))) : String(x);
}

/**
 * A shadow run's companion replies as the data drawn beside a value: all three, in the value's view (null otherwise).
 * @param {ValueReply} value @param {([Reply, ArrayBuffer[]]|null)[]} got @returns {Companions|null}
 */
function companionsOf(value, got) {
  if (got.length !== 3) return null;
  const drawn = got.map((g) => {
    const reply = g?.[0];
    if (!g || !reply || reply.type !== "value" || reply.view_shape.join() !== value.view_shape.join()) return null;
    return { reply, data: floatsOf(reply, g[1]) };
  });
  const [shadow, error, own] = drawn;
  return shadow && error && own ? { shadow, error, own_error: own } : null;
}

/**
 * What the readout says of one cell of a shadow run's value: the value, its fp64 shadow, the errors.
 * @param {number} real @param {Companions} p @param {number} i
 */
function precisionText(real, p, i) {
  const shadow = p.shadow.data[i];
  const absolute = Math.abs(real - shadow);
  const relative = absolute === 0 ? 0 : absolute / Math.abs(shadow);
  return `${precise(real, 9)} · fp64 ${precise(shadow, 12)} · |error| ${fmt(absolute)} · relative ${fmt(relative)} · ` +
    `${ulpsText(p.error.data[i])} ulps (own ${ulpsText(p.own_error.data[i])})`;
}

/** The selected value as a heatmap, with its colour bar, statistics, histogram and axis pickers; for a shadow
 * run's value, its error against the fp64 shadow beside it (ErrorMap). */
class ValuePane {
  /** @param {Palette} palette @param {(change: {axes: number[], at: number[]}) => void} retarget */
  constructor(palette, retarget) {
    this.palette = palette;
    this.retarget = retarget;
    this.label = h("div", { class: "knb-label" });
    this.axisRow = h("div", { class: "knb-axes" });
    this.canvas = h("canvas", { class: "knb-heat", "data-role": "heatmap", "data-state": "empty" });
    this.readout = h("div", { class: "knb-readout knb-dim", text: "hover a cell" });
    this.colorbar = h("canvas", { class: "knb-colorbar", width: 200, height: 10 });
    this.cbLo = h("span", { class: "knb-num" });
    this.cbHi = h("span", { class: "knb-num" });
    this.stats = h("table", { class: "knb-stats" });
    this.hist = h("canvas", { class: "knb-hist", width: 192, height: 48 });
    this.note = h("div", { class: "knb-note" });
    this.scalar = h("div", { class: "knb-scalar knb-num", "data-role": "scalar" });
    /** @type {{reply: ValueReply, data: Float32Array|Float64Array, mask: Uint8Array|null}|null} */
    this.drawn = null;
    /** @type {Companions|null} the drawn value's shadow and errors, for a shadow run */
    this.companions = null;
    /** @type {{args: [ValueReply, ArrayBuffer[], Companions|null], width: number}|null} what was drawn last, at which pane width */
    this.last = null;
    const leave = () => { this.readout.textContent = "hover a cell"; };
    this.canvas.addEventListener("mousemove", (e) => this.hover(e, this.canvas));
    this.canvas.addEventListener("mouseleave", leave);
    this.errors = new ErrorMap(palette, (e, canvas) => this.hover(e, canvas), leave);
    const swatch = (/** @type {RGB} */ rgb, /** @type {string} */ label) =>
      h("span", { class: "knb-swatch" }, [h("i", { style: `background: rgb(${rgb.join(",")})` }), label]);
    this.el = h("div", { class: "knb-value", "data-kind": "empty", "data-errors": "none" }, [this.label, this.axisRow, this.scalar,
      h("div", { class: "knb-heatrow" }, [h("div", { class: "knb-canvas-wrap" }, [h("div", { class: "knb-caption knb-dim", text: "value" }), this.canvas]), this.errors.el]),
      this.readout,
      h("div", { class: "knb-cbar" }, [this.cbLo, this.colorbar, this.cbHi,
        swatch(palette.nan, "NaN"), swatch(palette.posinf, "+Inf"), swatch(palette.neginf, "−Inf"), swatch(palette.masked, "masked")]),
      h("div", { class: "knb-statrow" }, [this.stats, this.hist]), this.note]);
    // The heatmap is drawn for the pane's width: a pane that grows by much (a side panel closed) draws it again.
    new ResizeObserver(() => {
      if (this.last && this.el.dataset.kind === "array" && Math.abs(this.el.clientWidth - this.last.width) > 32) this.draw(...this.last.args);
    }).observe(this.el);
  }

  loading() {
    this.canvas.dataset.state = "loading";
  }

  /** Nothing to draw: say why. @param {string} message @param {boolean} [error] */
  clear(message, error = false) {
    this.canvas.width = 0;
    this.canvas.height = 0;
    this.canvas.dataset.state = error ? "error" : "empty";
    this.label.textContent = message;
    this.label.classList.toggle("knb-error", error);
    for (const n of [this.axisRow, this.stats, this.note, this.scalar]) n.replaceChildren();
    // The colour bar, histogram, readout and errors belong to the value that was drawn: hidden with it (viewer.css).
    this.el.dataset.kind = "empty";
    this.el.dataset.errors = "none";
    this.drawn = null;
    this.companions = null;
    this.last = null;
    this.errors.clear();
    clearCanvas(this.hist);
    this.readout.textContent = "hover a cell";
  }

  /** A program that could not be fetched: nothing of the previous program may stay on screen. @param {string} message */
  fail(message) {
    this.clear(message, true);
    clearCanvas(this.colorbar);
  }

  /** @param {ValueReply} reply @param {ArrayBuffer[]} buffers @param {Companions|null} [companions] a shadow run's, drawn beside it */
  draw(reply, buffers, companions = null) {
    const [rows, cols] = reply.view_shape;
    const data = floatsOf(reply, buffers);
    const mask = reply.has_mask ? new Uint8Array(buffers[1]) : null;
    const lo = reply.summary.min ?? 0;
    const hi = reply.summary.max ?? lo;
    const canvas = this.canvas;
    const [sr, sc] = reply.step;
    const room = Math.max(MIN_CELL * 16, Math.min(MAX_WIDTH, this.el.clientWidth || MAX_WIDTH));
    // With its errors beside it, each map gets half the pane, less the gap between them, their borders and
    // room for a scroll bar the page may grow after this is drawn.
    const width = companions ? Math.max(MIN_CELL * 8, Math.floor((room - 40) / 2)) : room;
    sizeCanvas(canvas, rows * sr, cols * sc, width);
    blit(canvas, heatImage(data, mask, rows, cols, lo, hi, canvas.width, canvas.height, this.palette));
    this.drawn = { reply, data, mask };
    this.companions = companions;
    this.last = { args: [reply, buffers, companions], width: this.el.clientWidth };
    let sum = 0;
    for (const v of data) if (Number.isFinite(v)) sum += v;
    canvas.dataset.checksum = sum.toPrecision(8);
    canvas.dataset.view = `${rows}x${cols}`;
    canvas.dataset.state = "ready";
    this.label.textContent = `${reply.label} — ${reply.dtype}[${reply.shape.join(", ")}]`;
    this.label.classList.remove("knb-error");
    this.el.dataset.kind = reply.shape.length ? "array" : "scalar";
    this.el.dataset.errors = companions ? "shown" : "none";
    if (companions) this.errors.draw(companions, reply.dtype, width);
    else this.errors.clear();
    this.scalar.textContent = reply.shape.length ? "" : `${fmt(data[0])}${mask && !mask[0] ? " (masked)" : ""}`;
    this.axes(reply);
    const image = new ImageData(256, 1);
    this.palette.lut.forEach((rgb, i) => image.data.set([...rgb, 255], 4 * i));
    blit(this.colorbar, image);
    this.cbLo.textContent = fmt(lo);
    this.cbHi.textContent = fmt(hi);
    const s = reply.summary;
    /** @type {[string, number|null][]} */
    const rowsOfStats = [["min", s.min], ["max", s.max], ["mean", s.mean], ["NaN", s.nan], ["Inf", s.inf], ["size", s.size]];
    this.stats.replaceChildren(...rowsOfStats.map(([k, v]) => h("tr", {}, [h("th", { text: k }), h("td", { class: "knb-num", text: fmt(v) })])));
    drawBars(this.hist, reply.hist.counts, this.palette);
    this.note.textContent = reply.note;
  }

  /** Axis pickers for values of rank ≥ 3: which two axes are drawn, and where the others are cut. @param {ValueReply} reply */
  axes(reply) {
    const row = this.axisRow;
    if (reply.shape.length < 3) return row.replaceChildren();
    const axisSelect = (/** @type {number} */ which) => {
      const sel = h("select", { "aria-label": which ? "column axis" : "row axis" },
        reply.shape.map((n, a) => h("option", { value: a, text: `axis ${a} (${n})` })));
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
      const s = h("input", { type: "range", min: 0, max: n - 1, value: reply.at[a], "aria-label": `index along axis ${a}` });
      s.addEventListener("change", () => {
        const at = [...reply.at];
        at[a] = Number(s.value);
        this.retarget({ axes: reply.axes, at });
      });
      return h("label", {}, [`axis ${a} = ${reply.at[a]} `, s]);
    });
    row.replaceChildren(h("label", {}, ["rows ", axisSelect(0)]), h("label", {}, ["cols ", axisSelect(1)]), ...cuts);
  }

  /** The cell under the mouse, on the value's map or its error map (both in the value's view). @param {MouseEvent} e @param {HTMLCanvasElement} canvas */
  hover(e, canvas) {
    if (!this.drawn) return;
    const { reply, data, mask } = this.drawn;
    const [rows, cols] = reply.view_shape;
    const [r, c] = cellAt(e, canvas, rows, cols);
    const i = r * cols + c;
    const [sr, sc] = reply.step;
    const at = (/** @type {number} */ x, /** @type {number} */ s) => (s > 1 ? `${x * s}:${x * s + s}` : String(x));
    /** @type {string[]} */
    let index;
    if (reply.shape.length === 0) index = [];
    else if (reply.shape.length === 1) index = [at(c, sc)];
    else {
      index = reply.at.map(String);
      index[reply.axes[0]] = at(r, sr);
      index[reply.axes[1]] = at(c, sc);
    }
    const masked = mask && !mask[i] ? " (masked lane)" : "";
    const value = this.companions ? precisionText(data[i], this.companions, i) : fmt(data[i]);
    this.readout.textContent = `[${index.join(", ")}] = ${value}${masked}${sr * sc > 1 ? ` (block mean${this.companions ? "s" : ""})` : ""}`;
  }
}

/** Beside a shadow run's value: its error against the fp64 shadow in ulps, total or the statement's own, on a log scale. */
class ErrorMap {
  /**
   * @param {Palette} palette
   * @param {(e: MouseEvent, canvas: HTMLCanvasElement) => void} onHover @param {() => void} onLeave
   */
  constructor(palette, onHover, onLeave) {
    this.palette = { ...palette, lut: palette.errors };
    /** @type {"error"|"own_error"} the error drawn, kept from one value to the next */
    this.kind = "error";
    this.canvas = h("canvas", { class: "knb-heat", "data-role": "error-heatmap", "data-state": "empty" });
    this.canvas.addEventListener("mousemove", (e) => onHover(e, this.canvas));
    this.canvas.addEventListener("mouseleave", onLeave);
    /** @type {["error", "own_error"]} */
    const kinds = ["error", "own_error"];
    this.buttons = kinds.map((kind) => h("button", {
      type: "button", class: "knb-toggle", "data-kind": kind, "aria-pressed": String(kind === this.kind),
      text: kind === "error" ? "total" : "own",
      title: kind === "error" ? "the value's error against the fp64 shadow: what this statement and those before it lost"
        : "the error of this statement's own arithmetic, given the values it read",
      onclick: () => this.pick(kind),
    }));
    this.scalar = h("div", { class: "knb-num knb-error-scalar", "data-role": "error-scalar" });
    this.colorbar = h("canvas", { class: "knb-errorbar", width: 256, height: 10 });
    this.cbLo = h("span", { class: "knb-num" });
    this.cbHi = h("span", { class: "knb-num" });
    this.caption = h("div", { class: "knb-dim knb-error-caption" });
    this.el = h("div", { class: "knb-errors", "data-role": "errors" }, [
      h("div", { class: "knb-caption" }, [h("span", { class: "knb-dim", text: "error in ulps, log scale" }),
        h("span", { class: "knb-toggles", role: "group", "aria-label": "error shown" }, this.buttons)]),
      this.canvas, this.scalar,
      h("div", { class: "knb-cbar" }, [this.cbLo, this.colorbar, this.cbHi]),
      this.caption,
    ]);
    /** @type {{companions: Companions, dtype: string, width: number}|null} */
    this.shown = null;
  }

  /** Show the total or the own error. @param {"error"|"own_error"} kind */
  pick(kind) {
    this.kind = kind;
    this.buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.kind === kind)));
    if (this.shown) this.draw(this.shown.companions, this.shown.dtype, this.shown.width);
  }

  clear() {
    this.shown = null;
    this.canvas.width = 0;
    this.canvas.height = 0;
    this.canvas.dataset.state = "empty";
  }

  /** @param {Companions} companions @param {string} dtype the value's (the ulps are its) @param {number} width */
  draw(companions, dtype, width) {
    this.shown = { companions, dtype, width };
    const { reply, data } = companions[this.kind];
    const [rows, cols] = reply.view_shape;
    const [sr, sc] = reply.step;
    const total = companions.error.reply.summary, own = companions.own_error.reply.summary;
    // Each map on its own scale, from its least error to its largest: a total error that is large everywhere
    // still shows where it is largest (the caption gives both maxima, to compare the two).
    const lo = Math.max(0, reply.summary.min ?? 0), hi = Math.max(lo, reply.summary.max ?? lo);
    this.el.dataset.kind = reply.shape.length ? "array" : "scalar";
    if (reply.shape.length) {
      sizeCanvas(this.canvas, rows * sr, cols * sc, width);
      const [bottom, top] = [lo, hi].map((x) => Math.log10(1 + x));
      blit(this.canvas, heatImage(logUlps(data), null, rows, cols, bottom, top, this.canvas.width, this.canvas.height, this.palette));
      this.scalar.textContent = "";
    } else {
      this.scalar.textContent = `fp64 ${precise(companions.shadow.data[0], 12)} · ${ulpsText(data[0])} ulps`;
    }
    const image = new ImageData(256, 1);
    this.palette.lut.forEach((rgb, i) => image.data.set([...rgb, 255], 4 * i));
    blit(this.colorbar, image);
    this.cbLo.textContent = ulpsText(lo);
    this.cbHi.textContent = ulpsText(hi);
    const odd = (/** @type {number} */ n) => (n ? `, ${n} not finite` : "");
    this.caption.textContent = `this value, in ulps of ${dtype}: up to ${ulpsText(total.max)} in total${odd(total.nan + total.inf)}, ` +
      `${ulpsText(own.max)} its own${odd(own.nan + own.inf)}`;
    let sum = 0;
    for (const v of data) if (Number.isFinite(v)) sum += v;
    Object.assign(this.canvas.dataset, { checksum: sum.toPrecision(8), kind: this.kind, view: `${rows}x${cols}`, state: "ready" });
  }
}

/** One card per buffer argument (this program's accesses and all programs'), plus this program's memory events. */
class MemoryPane {
  /**
   * @param {Channel} channel @param {Map<string, [MapReply, ArrayBuffer[]]>} bufferMaps all-program maps, kept across launches
   * @param {(index: number, field: "values"|"indices") => void} onEvent @param {LaunchMeta} launch
   */
  constructor(channel, bufferMaps, onEvent, launch) {
    this.channel = channel;
    this.bufferMaps = bufferMaps;
    this.onEvent = onEvent;
    this.zoom = 1;
    /** @type {Map<HTMLElement, [MapReply, ArrayBuffer[]]>} what each map host shows, redrawn on zoom */
    this.shown = new Map();
    /** @type {{arg: string, mine: HTMLElement, title: HTMLElement}[]} */
    this.cards = [];
    // The cards and the all-programs maps are built once per launch: a pid change redraws only this program's maps.
    const cards = launch.buffers.map((b) => {
      const mine = h("div", { class: "knb-map" });
      const all = h("div", { class: "knb-map" });
      const title = h("div", { class: "knb-dim", text: "this program" });
      const facts = [`${b.size} elements`, b.written ? `${b.never_written} never written` : "read only",
        `${b.written_more_than_once} written by several programs`, `${b.oob} out-of-bounds attempts`];
      this.loadBuffer(all, launch, b.arg);
      this.cards.push({ arg: b.arg, mine, title });
      return h("div", { class: "knb-buffer", "data-arg": b.arg }, [
        h("div", { class: "knb-fn" }, [h("b", { text: b.arg }), h("span", { class: "knb-dim", text: ` · shape (${b.shape.join(", ")}) · ${facts.join(" · ")}` })]),
        h("div", { class: "knb-maps" }, [h("div", {}, [title, mine]), h("div", {}, [h("div", { class: "knb-dim", text: "all programs" }), all])]),
      ]);
    });
    const zoom = h("select", { "aria-label": "map zoom", "data-role": "map-zoom" }, [1, 2, 4, 8].map((z) => h("option", { value: z, text: `×${z}` })));
    zoom.addEventListener("change", () => {
      this.zoom = Number(zoom.value);
      this.shown.forEach((got, host) => this.draw(host, ...got));
    });
    this.accesses = h("div", { class: "knb-accesses" });
    /** @type {HTMLElement[]} */
    this.parts = [...(cards.length ? [h("label", { class: "knb-dim" }, ["map zoom ", zoom])] : []), ...cards, this.accesses];
    this.el = h("div", { class: "knb-memory" }, this.parts);
  }

  /** A program that could not be fetched: only the message stays (the cards come back with the next program). @param {string} message */
  fail(message) {
    for (const card of this.cards) card.mine.replaceChildren();
    this.el.replaceChildren(errorText(message));
  }

  /** This program's memory accesses and output. @param {ProgramReply} program */
  show(program) {
    if (this.el.firstChild !== this.parts[0]) this.el.replaceChildren(...this.parts);
    const events = program.events.map((e) => h("tr", { onclick: () => this.onEvent(e.index, "values") }, [
      h("td", { text: e.kind }), h("td", { text: e.arg ?? "—" }), h("td", { class: "knb-num", text: String(e.line) }),
      h("td", { class: "knb-num", text: `${e.active}/${e.lanes}` }), h("td", { class: "knb-num", text: e.active ? e.elements : "—" }),
      h("td", {}, [h("a", { href: "#", onclick: (/** @type {Event} */ ev) => { ev.preventDefault(); ev.stopPropagation(); this.onEvent(e.index, "indices"); }, text: "offsets" })]),
    ]));
    const table = events.length ? h("div", { class: "knb-scroll-x" }, [h("table", { class: "knb-events" }, [
      h("tr", {}, ["access", "argument", "line", "active lanes", "elements", ""].map((t) => h("th", { text: t }))), ...events,
    ])]) : h("p", { class: "knb-dim", text: "This program made no memory accesses." });
    const stdout = program.stdout ? [h("details", {}, [h("summary", { text: "program output" }), h("pre", { text: program.stdout })])] : [];
    this.accesses.replaceChildren(h("div", { class: "knb-dim", text: "Memory accesses of this program (click: show the lanes)" }), table, ...stdout);
  }

  /**
   * This program's footprint in every buffer: all its accesses, or those of one loop iteration.
   * @param {LaunchMeta} launch @param {number[]} pid @param {number[]} iteration
   */
  async footprints(launch, pid, iteration) {
    await Promise.all(this.cards.map(async ({ arg, mine, title }) => {
      /** @type {Extract<RequestBody, {type: "footprint"}>} */
      const body = { type: "footprint", launch: launch.index, pid, arg };
      let got = iteration.length ? await this.load(mine, `footprint:${arg}`, { ...body, iteration }, true) : null;
      if (iteration.length && !got && mine.dataset.state === "superseded") return;
      // A page without per-iteration footprints (an offline export) shows the whole program's.
      if (!got) got = await this.load(mine, `footprint:${arg}`, body);
      const per = got && iteration.length && mine.dataset.iteration === iteration.join(",");
      title.textContent = per ? `this program, iteration (${iteration.join(", ")})` : "this program";
    }));
  }

  /** @param {HTMLElement} host @param {LaunchMeta} launch @param {string} arg */
  async loadBuffer(host, launch, arg) {
    const key = `${launch.index}/${arg}`;
    const cached = this.bufferMaps.get(key);
    if (cached) return this.draw(host, ...cached);
    const got = await this.load(host, `buffer:${arg}`, { type: "buffer", launch: launch.index, arg });
    if (got) this.bufferMaps.set(key, got);
  }

  /**
   * @param {HTMLElement} host @param {string} channel @param {Extract<RequestBody, {type: "footprint"|"buffer"}>} body
   * @param {boolean} [quiet] leave an error for the caller to handle (host.dataset.state says so)
   * @returns {Promise<[MapReply, ArrayBuffer[]]|null>}
   */
  async load(host, channel, body, quiet = false) {
    const got = await this.channel.request(channel, body);
    if (!got) {
      host.dataset.state = "superseded";
      return null;
    }
    const [reply, buffers] = got;
    if (reply.type === "error") {
      host.dataset.state = "error";
      if (!quiet) host.replaceChildren(errorText(reply.message));
      return null;
    }
    const map = /** @type {MapReply} */ (reply);
    this.draw(host, map, buffers);
    host.dataset.state = "ready";
    host.dataset.iteration = body.type === "footprint" ? (body.iteration || []).join(",") : "";
    return [map, buffers];
  }

  /** @param {HTMLElement} host @param {MapReply} reply @param {ArrayBuffer[]} buffers */
  draw(host, reply, buffers) {
    this.shown.set(host, [reply, buffers]);
    const codes = new Uint8Array(buffers[0]);
    const [rows, cols] = reply.view_shape;
    const colours = MAP_RGBA[reply.type];
    const [sr, sc] = reply.step;
    const window = reply.window || [0, rows];
    const canvas = h("canvas", { class: "knb-mapcanvas", "data-role": reply.type });
    // The canvas has the buffer's aspect ratio (its layout before reduction), at most MAP_HEIGHT tall at zoom ×1.
    sizeCanvas(canvas, reply.grid[0], reply.grid[1], MAP_WIDTH * this.zoom, 16, MAP_HEIGHT * this.zoom);
    if (this.zoom > 1) canvas.style.maxWidth = "none"; // zoomed: the box scrolls instead of shrinking it
    blit(canvas, mapImage(codes, window, rows, cols, colours, canvas.width, canvas.height,
      (r, c) => r * sr * reply.grid[1] + c * sc < reply.size));
    const readout = h("div", { class: "knb-readout knb-dim", text: " " });
    canvas.addEventListener("mousemove", (e) => {
      const [r, c] = cellAt(e, canvas, rows, cols);
      const offset = r * sr * reply.grid[1] + c * sc;
      if (offset >= reply.size) return void (readout.textContent = " ");
      const code = r >= window[0] && r < window[1] ? codes[(r - window[0]) * cols + c] : 0;
      readout.textContent = `${reply.arg}${indexText(offset, reply.shape)}${sr * sc > 1 ? " (block)" : ""}: ${reply.legend[code]}`;
    });
    const legend = h("div", { class: "knb-legend" }, reply.legend.map((name, i) => reply.counts[i] || i === 0 ? h("span", { class: "knb-swatch" }, [
      h("i", { style: `background: rgba(${colours[i].slice(0, 3).join(",")},${colours[i][3] / 255})` }), `${name} ${reply.counts[i]}`,
    ]) : ""));
    const oob = reply.oob.length ? h("div", { class: "knb-error", text: `out of bounds: ${reply.oob.map(([x, y, z, line, first]) => `pid (${x}, ${y}, ${z}) line ${line} element ${first}`).join("; ")}` }) : "";
    host.replaceChildren(h("div", { class: "knb-mapscroll" }, [canvas]), readout, legend, oob, reply.note ? h("div", { class: "knb-note", text: reply.note }) : "");
  }
}

/**
 * The launch's findings; a click (or Enter) takes the view to the finding's program, line and loop iteration.
 * @param {LaunchMeta} launch @param {(f: FindingMeta, index: number) => void} onPick
 */
function findingsSection(launch, onPick) {
  const items = launch.findings.map((f, index) => {
    const iteration = f.iteration?.length ? `iteration (${f.iteration.join(", ")})` : "";
    const where = [f.line !== null ? `line ${f.line}` : "", f.pid ? `pid (${f.pid.join(", ")})` : "", iteration].filter(Boolean).join(" · ");
    const pick = () => onPick(f, index);
    return h("li", {
      class: `knb-finding knb-${f.severity}`, "data-index": index, "data-kind": f.kind, tabindex: 0, role: "button",
      title: "show this finding's program, line and loop iteration", onclick: pick,
      onkeydown: (/** @type {KeyboardEvent} */ e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } },
    }, [
      h("b", { text: f.severity }), ` ${f.message}`, where ? h("span", { class: "knb-dim", text: ` — ${where}` }) : "",
    ]);
  });
  const more = launch.findings_total > launch.findings.length ? [h("li", { text: `… ${launch.findings_total - launch.findings.length} more` })] : [];
  return h("section", { class: "knb-findings" }, [
    h("h4", { text: `Findings (${launch.findings_total})` }),
    items.length ? h("ul", {}, [...items, ...more]) : h("p", { class: "knb-dim", text: "No findings." }),
  ]);
}

/**
 * Mark the finding the view was taken to: its row in the list, and its line in the source in the error colour
 * (a failing line often records nothing, so the selected statement may sit on another line).
 * @param {HTMLElement} root @param {SourcePane} source @param {LaunchMeta} launch @param {number} index
 */
function markFinding(root, source, launch, index) {
  root.querySelectorAll(".knb-finding").forEach((row) => row.classList.toggle("knb-chosen", Number(/** @type {HTMLElement} */ (row).dataset.index) === index));
  const f = launch.findings[index];
  source.lineEls.forEach((line, key) => {
    const at = !!f && f.line !== null && (f.file ? key === `${f.file}:${f.line}` : key.endsWith(`:${f.line}`));
    line.classList.toggle("knb-error", at);
    line.toggleAttribute("data-finding", at);
  });
}

/** The CPU / GPU comparison: verdict, one row per compared buffer, CPU / GPU / |diff| maps, and the probed divergence. */
class ComparisonPane {
  /** @param {Channel} channel @param {Palette} palette @param {LaunchMeta} launch @param {(change: Change) => void} commit */
  constructor(channel, palette, launch, commit) {
    this.channel = channel;
    this.palette = palette;
    this.commit = commit;
    this.el = h("section", { class: "knb-compare", "data-role": "comparison" }, [h("h4", { text: "CPU / GPU comparison" })]);
    const c = launch.comparison;
    if (!c) {
      this.el.append(h("p", { class: "knb-dim", text: "Not run for this trace: %%tkernel compare fills this area." }));
      return;
    }
    const kept = `the cell went on with the ${c.kept.toUpperCase()} results`;
    this.el.append(
      h("p", { class: `knb-verdict ${c.ok ? "knb-ok" : "knb-bad"}`, "data-role": "verdict", text: c.verdict }),
      h("div", { class: "knb-dim", text: `${c.device} · ${kept}${c.tf32 ? " · fp32 dots run in tf32 on the GPU" : ""}` }),
    );
    if (launch.divergence) this.el.append(this.divergence(launch.divergence));
    if (!c.buffers.length) return;
    const maps = h("div", { class: "knb-compare-detail" });
    /** @type {Map<string, HTMLElement>} */
    const rows = new Map();
    const choose = (/** @type {BufferComparisonMeta} */ b) => {
      rows.forEach((row, arg) => row.classList.toggle("knb-chosen", arg === b.arg));
      this.load(maps, launch, b, c.ulp_labels);
    };
    const writers = (/** @type {BufferComparisonMeta} */ b) => b.writers.length ? b.writers.slice(0, 4).map((w) => w.pid
      ? h("a", { href: "#", class: "knb-writer", onclick: (/** @type {Event} */ e) => { e.preventDefault(); e.stopPropagation(); commit({ pid: w.pid ?? undefined }); },
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
    this.el.append(h("table", { class: "knb-events knb-compare-table" }, [h("tr", {}, head.map((t) => h("th", { text: t }))), ...body]), maps);
    choose(c.buffers.find((b) => !b.ok) || c.buffers[0]);
  }

  /**
   * The probed GPU run: the first divergence, then CPU / GPU / diff for every statement of a chosen program.
   * A row takes the main view to that statement, program and loop iteration.
   * @param {DivergenceMeta} d
   */
  divergence(d) {
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
      const picker = h("select", { "aria-label": "probed program", "data-role": "divergence-pid", onchange: () => show(d.programs[Number(picker.value)]) },
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
  async load(host, launch, b, labels) {
    host.dataset.state = "loading";
    const got = await this.channel.request("compare", { type: "compare", launch: launch.index, arg: b.arg });
    if (!got) return;
    const [reply, buffers] = got;
    if (reply.type === "error") {
      host.replaceChildren(errorText(reply.message));
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
      const canvas = h("canvas", { class: "knb-heat", "data-role": `compare-${name}` });
      sizeCanvas(canvas, r.grid[0], r.grid[1], COMPARE_WIDTH);
      blit(canvas, heatImage(data, mask, rows, cols, lo, hi, canvas.width, canvas.height, this.palette));
      canvas.addEventListener("mousemove", (e) => {
        const [y, x] = cellAt(e, canvas, rows, cols);
        const i = y * cols + x;
        const offset = y * sr * r.grid[1] + x * sc;
        if (codes[i] === PADDING || offset >= r.size) return void (readout.textContent = " ");
        const block = sr * sc > 1 ? " (block)" : "";
        readout.textContent = `${r.arg}${indexText(offset, r.shape)}${block}: CPU ${fmt(cpu[i])}, GPU ${fmt(gpu[i])}, |diff| ${fmt(diff[i])}` +
          (codes[i] === OUTSIDE ? " — out of tolerance" : " — within tolerance");
      });
      return h("div", { class: "knb-compare-map" }, [h("div", { class: "knb-dim", text: `${name} ${name === "|diff|" ? `0 … ${fmt(hi)}` : `${fmt(lo)} … ${fmt(hi)}`}` }), canvas]);
    };
    const hist = h("canvas", { class: "knb-hist", "data-role": "ulp-hist", width: 240, height: 48 });
    const used = b.ulp_hist.reduce((last, n, i) => (n ? i : last), 0);
    const counts = b.ulp_hist.slice(0, used + 1);
    drawBars(hist, counts, this.palette, EXACT_RGB);
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
}

/** The compiled kernel's IR, one stage at a time, fetched on click. */
class ArtifactsPane {
  /** @param {Channel} channel @param {LaunchMeta} launch @param {ArtifactsMeta} a */
  constructor(channel, launch, a) {
    const text = h("pre", { class: "knb-ir", "data-role": "ir", text: "Pick a stage." });
    const facts = Object.entries(a.metadata).filter(([k]) => k !== "name").map(([k, v]) => `${k} ${v}`);
    const how = a.compiled_for_launch ? "compiled for this launch" : "compiled for the target only (not run)";
    /** @type {HTMLElement[]} */
    const buttons = [];
    const show = async (/** @type {string} */ stage, /** @type {HTMLElement} */ button) => {
      buttons.forEach((x) => x.classList.toggle("knb-chosen", x === button));
      text.dataset.state = "loading";
      const got = await channel.request("artifact", { type: "artifact", launch: launch.index, stage });
      if (!got) return;
      const [reply] = got;
      if (reply.type === "error") text.textContent = reply.message;
      else if (reply.type === "artifact") text.textContent = reply.text + (reply.truncated ? `\n… ${reply.truncated} more characters` : "");
      text.dataset.state = reply.type === "error" ? "error" : "ready";
      text.dataset.stage = stage;
    };
    a.stages.forEach((stage, i) => {
      const button = h("button", { type: "button", class: "knb-stage", "data-stage": stage, title: `${a.sizes[i]} characters`, text: stage.toUpperCase() });
      button.addEventListener("click", () => show(stage, button));
      buttons.push(button);
    });
    const missing = Object.entries(a.missing).map(([stage, why]) => h("span", { class: "knb-dim", text: ` ${stage.toUpperCase()}: ${why}` }));
    this.el = h("section", { class: "knb-artifacts", "data-role": "artifacts" }, [
      h("h4", { text: "Compiled kernel" }),
      h("div", { class: "knb-dim", text: `${a.target} · ${how}${facts.length ? ` · ${facts.join(" · ")}` : ""}` }),
      h("div", { class: "knb-stages" }, [...buttons, ...missing]),
      text,
    ]);
  }
}

// ---------------------------------------------------------------------------------------------
// The controller

export default {
  /** @param {{model: Model, el: HTMLElement}} ctx */
  render({ model, el }) {
    return new Viewer(model, el).dispose;
  },
};

/** @typedef {{header: HeaderPane, source: SourcePane, value: ValuePane, memory: MemoryPane}} Panes */

/** Keeps the panes in line with the model: the selection lives in the model, the panes draw it. */
class Viewer {
  /** @param {Model} model @param {HTMLElement} el */
  constructor(model, el) {
    this.model = model;
    this.channel = new Channel(model);
    /** @type {ProgramReply|null} */
    this.program = null;
    /** @type {ValueTarget} */
    this.target = { source: "record", index: -1, field: "values", axes: null, at: null };
    /** @type {Map<string, [MapReply, ArrayBuffer[]]>} */
    this.bufferMaps = new Map();
    this.loadedKey = "";
    this.footprintKey = "";
    this.scheduled = false;
    // One refresh at a time; changes meanwhile (a pid slider dragged) are drawn once it ends, for the latest selection only.
    this.busy = false;
    this.dirty = false;
    /** @type {Panes|null} */
    this.panes = null;
    /** @type {number|undefined} */
    this.builtFor = undefined;
    this.onChange = () => this.schedule();
    for (const name of TRAITS) model.on(`change:${name}`, this.onChange);
    this.dispose = () => {
      this.channel.dispose();
      for (const name of TRAITS) model.off(`change:${name}`, this.onChange);
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

  /** Push a selection to the model (so Python's PNG fallback follows) and redraw. @param {Change} change */
  commit(change) {
    // a finding marked belongs to its launch
    if (change.launch !== undefined && change.launch !== this.model.get("launch") && change.finding === undefined) change = { ...change, finding: -1 };
    for (const [k, v] of Object.entries(change)) if (v !== undefined) this.model.set(k, v);
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
    const meta = /** @type {ViewerMeta} */ (this.model.get("meta"));
    const launches = meta.launches || [];
    this.root.replaceChildren();
    this.panes = null;
    const launch = this.launchMeta;
    if (!launches.length || !launch || !meta.palette) {
      this.root.append(h("p", { class: "knb-empty", text: "kernel_nb: the trace has no launches." }));
      return;
    }
    const palette = paletteOf(meta.palette);
    const commit = (/** @type {Change} */ change) => this.commit(change);
    const header = new HeaderPane(launches, launch, commit, () => this.model.get("pid"));
    const source = new SourcePane(launch, (stmt) => this.selectStatement(stmt), (stmts) => this.selectStatement(this.pickAtLine(stmts)));
    const value = new ValuePane(palette, (change) => this.retarget(change));
    const memory = new MemoryPane(this.channel, this.bufferMaps, (index, field) => this.showEvent(index, field), launch);
    this.panes = { header, source, value, memory };
    this.root.append(
      header.header,
      header.pidRow,
      h("div", { class: "knb-main" }, [source.el, value.el]),
      h("section", {}, [h("h4", { text: "Memory" }), memory.el]),
      findingsSection(launch, (f, index) => this.jumpTo(f, index)),
    );
    if (launch.comparison) this.root.append(new ComparisonPane(this.channel, palette, launch, commit).el);
    if (launch.artifacts) this.root.append(new ArtifactsPane(this.channel, launch, launch.artifacts).el);
    this.builtFor = launch.index;
    this.loadedKey = "";
    this.footprintKey = "";
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

  /** Take the view to a finding: its program, line and loop iteration (its `target`, computed in Python). @param {FindingMeta} f @param {number} index */
  jumpTo(f, index) {
    const launch = this.launchMeta;
    if (!launch) return;
    this.target = { source: "record", index: -1, field: "values", axes: null, at: null };
    const t = f.target;
    if (t) return this.commit({ finding: index, pid: t.pid, stmt: t.stmt, iteration: t.iteration });
    const stmt = f.line === null ? undefined : launch.statements.find((s) => s.line === f.line && (!f.file || s.file === f.file));
    this.commit({ finding: index, ...(f.pid ? { pid: f.pid } : {}), ...(stmt ? { stmt: stmt.id, iteration: [] } : {}) });
  }

  /** @param {number} index @param {"values"|"indices"} field */
  showEvent(index, field) {
    this.target = { source: "event", index, field, axes: null, at: null };
    const launch = this.launchMeta;
    if (launch) this.loadValue(launch);
  }

  /** @param {{axes: number[], at: number[]}} change */
  retarget(change) {
    this.target = { ...this.target, ...change };
    const launch = this.launchMeta;
    if (launch) this.loadValue(launch);
  }

  /** Run `update` until the view has caught up with the model; calls while it runs only mark it dirty. */
  async refresh() {
    if (this.busy) {
      this.dirty = true;
      return;
    }
    this.busy = true;
    this.root.dataset.busy = "true";
    try {
      do {
        this.dirty = false;
        await this.update();
      } while (this.dirty);
    } finally {
      this.busy = false;
      this.root.dataset.busy = "false"; // caught up with the model: what tests and bench/bench_viewer.py wait for
    }
  }

  /** Bring the view in line with the model: rebuild on a new launch, refetch on a new program, redraw on a new record. */
  async update() {
    const launch = this.launchMeta;
    if (!launch) return this.build();
    if (this.builtFor !== launch.index) this.build();
    const panes = this.panes;
    if (!panes) return;
    const pid = /** @type {number[]} */ (this.model.get("pid"));
    panes.header.show(pid);
    const key = `${launch.index}/${pid.join(",")}`;
    if (key !== this.loadedKey) {
      this.root.dataset.state = "loading";
      const got = await this.channel.request("program", { type: "program", launch: launch.index, pid });
      if (!got) return;
      const [reply] = got;
      this.loadedKey = key;
      if (reply.type !== "program") {
        this.program = null;
        this.footprintKey = "";
        const message = reply.type === "error" ? reply.message : `unexpected reply ${reply.type}`;
        panes.value.fail(message);
        panes.memory.fail(message);
        this.root.dataset.state = "ready";
        return;
      }
      this.program = reply;
      this.target = { ...this.target, source: "record" };
      if (this.model.get("stmt") < 0 && reply.records.length) {
        const shaped = reply.records.filter((r) => r.shape.length);
        const last = (shaped.length ? shaped : reply.records)[shaped.length ? shaped.length - 1 : reply.records.length - 1];
        this.model.set("stmt", last.stmt);
        this.model.set("iteration", last.iteration);
        this.model.save_changes();
      }
      panes.memory.show(reply);
    }
    // Footprints follow the loop iteration of the selected record (all accesses outside loops).
    const iteration = this.chosenRecord()?.iteration || [];
    const footprintKey = `${key}/${iteration.join(",")}`;
    const footprints = footprintKey === this.footprintKey ? null : panes.memory.footprints(launch, pid, iteration);
    this.footprintKey = footprintKey;
    await Promise.all([footprints, this.renderSelection(launch, panes)]);
  }

  /** The record of the selected statement and iteration in this program (its last one for another iteration). */
  chosenRecord() {
    const records = this.recordsOf(this.model.get("stmt"));
    const iteration = JSON.stringify(this.model.get("iteration"));
    return records.find((r) => JSON.stringify(r.iteration) === iteration) || records[records.length - 1];
  }

  /** @param {LaunchMeta} launch @param {Panes} panes */
  async renderSelection(launch, panes) {
    const stmt = this.model.get("stmt");
    const records = this.recordsOf(stmt);
    panes.source.mark(new Set((this.program?.records || []).map((r) => r.stmt)), stmt);
    markFinding(this.root, panes.source, launch, this.model.get("finding") ?? -1);
    const chosen = this.chosenRecord();
    panes.source.iterations(records, chosen, (r) => {
      this.target = { source: "record", index: r.index, field: "values", axes: null, at: null };
      this.commit({ iteration: r.iteration });
    });
    if (this.target.source === "record") {
      if (!chosen) {
        const s = panes.source.byId.get(stmt);
        panes.value.clear(stmt < 0 ? "Pick a line or a statement." : `${s?.name ?? "?"}: not recorded by this program.`);
        this.root.dataset.state = "ready";
        return;
      }
      if (this.target.index !== chosen.index) this.target = { source: "record", index: chosen.index, field: "values", axes: null, at: null };
    }
    await this.loadValue(launch);
  }

  /** @param {LaunchMeta} launch */
  async loadValue(launch) {
    const panes = this.panes;
    if (!panes) return;
    const t = this.target;
    panes.value.loading();
    /** @type {Extract<RequestBody, {type: "value"}>} */
    const body = { type: "value", launch: launch.index, pid: this.model.get("pid"), source: t.source, index: t.index, field: t.field,
      ...(t.axes ? { axes: t.axes } : {}), ...(t.at ? { at: t.at } : {}) };
    // A shadow run's record: its fp64 shadow and errors, asked for in the same view, are drawn beside it.
    const record = t.source === "record" ? this.program?.records.find((r) => r.index === t.index) : undefined;
    const [got, ...companions] = await Promise.all([
      this.channel.request("value", body),
      ...(record?.companions || []).map((index, k) => this.channel.request(`companion:${k}`, { ...body, index })),
    ]);
    if (!got || companions.some((c) => !c)) return;
    const [reply, buffers] = got;
    if (reply.type === "value") panes.value.draw(reply, buffers, companionsOf(reply, companions));
    else panes.value.clear(reply.type === "error" ? reply.message : `unexpected reply ${reply.type}`, true);
    this.root.dataset.state = "ready";
  }
}
