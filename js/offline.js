// kernel_nb offline viewer: runs js/viewer.js, unchanged, in a page with no kernel behind it.
// kernel_nb/view/export.py writes each viewer as a host element holding a JSON script (the widget
// state, the viewer's ESM and a table of replies computed in Python) and inlines this module after
// it. A stand-in for the anywidget model answers the viewer's requests from that table.

/**
 * @typedef {{reply: Record<string, any>, buffers: string[]}} Canned
 * @typedef {{esm: string, state: Record<string, any>, replies: Record<string, Canned>, missing: string}} Payload
 */

/** JSON with sorted keys and no spaces: the text of Python's json.dumps(sort_keys=True, separators=(",", ":")). @param {any} x @returns {string} */
function stable(x) {
  if (Array.isArray(x)) return `[${x.map(stable).join(",")}]`;
  if (x !== null && typeof x === "object") return `{${Object.keys(x).sort().map((k) => `${JSON.stringify(k)}:${stable(x[k])}`).join(",")}}`;
  return JSON.stringify(x);
}

/** @param {string} b64 @returns {DataView} */
function decode(b64) {
  const text = atob(b64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return new DataView(bytes.buffer);
}

/** What a request was about, for the reply to one the export left out. @param {Record<string, any>} body */
function subject(body) {
  if (body.type === "artifact") return `the ${String(body.stage).toUpperCase()} stage`;
  if (body.type === "buffer" || body.type === "compare") return `buffer ${body.arg}`;
  const pid = Array.isArray(body.pid) ? `program (${body.pid.join(", ")})` : "this view";
  return body.type === "value" && (body.axes || body.at) ? `this slice in ${pid}` : pid;
}

/** The parts of an anywidget model the viewer uses: traits kept in memory, requests answered from the table. */
class OfflineModel {
  /** @param {Payload} payload */
  constructor(payload) {
    this.state = payload.state;
    this.replies = payload.replies;
    this.missing = payload.missing;
    /** @type {Record<string, Function[]>} */
    this.handlers = {};
  }

  /** @param {string} name */
  get(name) {
    return this.state[name];
  }

  /** @param {string} name @param {any} value */
  set(name, value) {
    this.state[name] = value;
    for (const cb of this.handlers[`change:${name}`] || []) cb();
  }

  save_changes() {}

  /** @param {string} name @param {Function} cb */
  on(name, cb) {
    (this.handlers[name] ||= []).push(cb);
  }

  /** @param {string} name @param {Function} [cb] */
  off(name, cb) {
    this.handlers[name] = cb ? (this.handlers[name] || []).filter((f) => f !== cb) : [];
  }

  /** @param {Record<string, any>} msg */
  send(msg) {
    const { id, ...body } = msg;
    const hit = this.replies[stable(body)];
    const reply = hit ? { ...hit.reply, id } : { type: "error", id, message: `${subject(body)}: ${this.missing}` };
    const buffers = hit ? hit.buffers.map(decode) : [];
    // Asynchronous, as a kernel's reply is: the viewer registers its pending request after send returns.
    setTimeout(() => { for (const cb of this.handlers["msg:custom"] || []) cb(reply, buffers); }, 0);
  }
}

/** @type {Map<string, Promise<any>>} one module per distinct ESM text, however many viewers share it */
const modules = new Map();

/** @param {string} esm */
function load(esm) {
  let module = modules.get(esm);
  if (!module) {
    const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
    module = import(url);
    modules.set(esm, module);
  }
  return module;
}

/** @param {HTMLScriptElement} data */
async function mount(data) {
  const host = /** @type {HTMLElement} */ (data.closest(".knb-offline"));
  const view = /** @type {HTMLElement} */ (host.querySelector(".knb-offline-view"));
  try {
    /** @type {Payload} */
    const payload = JSON.parse(data.textContent || "{}");
    const widget = (await load(payload.esm)).default;
    const fallback = view.querySelector(".knb-offline-fallback");
    await widget.render({ model: new OfflineModel(payload), el: view });
    fallback?.remove();
    host.dataset.state = "mounted";
  } catch (error) {
    host.dataset.state = "failed";
    host.append(Object.assign(document.createElement("p"), { className: "knb-offline-error", textContent: `kernel_nb viewer: ${error}` }));
    throw error;
  }
}

// Every viewer of the page carries this module; the first one to run mounts them all.
for (const data of /** @type {NodeListOf<HTMLScriptElement>} */ (document.querySelectorAll("script[data-knb-offline]"))) {
  if (data.dataset.mounted) continue;
  data.dataset.mounted = "1";
  mount(data);
}
