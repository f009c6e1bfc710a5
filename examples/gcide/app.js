// The demo page of `make demo`: the GCIDE dictionary collection (bench/prepare_gcide.py, built
// with `shoal build`) searched twice per query — by the npm package's WebAssembly in this tab,
// and by the `shoal serve` that serves this page — and the two answers compared bit for bit.
//
// URL parameters: `data` (base URL of gcide.shoal and embed/; default ../../target/gcide-demo/),
// `collection` (the server's collection; default gcide), `server` (its base URL; default this
// page's origin).
import { init, Collection } from "../../bindings-js/js/index.js";
import { Embedder } from "./embed.js";

const params = new URLSearchParams(location.search);
const DATA = new URL(params.get("data") ?? "../../target/gcide-demo/", location.href);
const COLLECTION = params.get("collection") ?? "gcide";
const SERVER = params.get("server") ?? location.origin;
const $ = (id) => document.getElementById(id);

/** Fetches the segment with a progress bar and opens it, streamed into wasm memory. */
async function openSegment(url) {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  const length = Number(res.headers.get("content-length"));
  if (!Number.isSafeInteger(length) || !res.body) {
    // No length announced (a compressing proxy): read it whole, then open it.
    return Collection.fromBytes(new Uint8Array(await res.arrayBuffer()));
  }
  let got = 0;
  const counted = res.body.pipeThrough(new TransformStream({
    transform(chunk, ctl) {
      got += chunk.byteLength;
      $("progress").value = got / length;
      $("loadText").textContent = `segment ${(got / 1e6).toFixed(1)} of ${(length / 1e6).toFixed(1)} MB`;
      ctl.enqueue(chunk);
    },
  }));
  return Collection.fromStream(counted, length);
}

const t0 = performance.now();
let info, col, embedder;
try {
  info = await init();
  [col, embedder] = await Promise.all([openSegment(new URL("gcide.shoal", DATA)), Embedder.load(new URL("embed/", DATA))]);
} catch (e) {
  $("loadText").textContent = `could not load the collection: ${e.message} (make demo prepares it)`;
  throw e;
}
const loadMs = performance.now() - t0;
$("count").textContent = col.len.toLocaleString("en");
$("loading").hidden = true;
$("form").hidden = false;

/** The request of the form's state; `similar` replaces the query by a stored vector. */
function request(similar) {
  const must = [];
  for (const key of ["pos", "source"]) if ($(key).value) must.push({ key, match: { value: $(key).value } });
  if ($("letters").value) must.push({ key: "letters", range: { lte: Number($("letters").value) } });
  const req = { limit: 10, with_payload: true };
  if (must.length) req.filter = { must };
  if (similar) {
    req.vector = similar.vector;
    return req;
  }
  const q = $("q").value.trim();
  const mode = $("mode").value;
  if (mode !== "vector") req.text = q;
  if (mode !== "text") req.vector = embedder.embed(q);
  if (!req.vector) delete req.vector;
  return req;
}

/** Same ids, same order, same score bits (the server's JSON number is an f32's shortest form). */
function identical(a, b) {
  return a.length === b.length && a.every((p, i) => p.id === b[i].id && p.score === Math.fround(b[i].score));
}

/** What the page did last, for the Chromium test: `pending` is the latest search's promise. */
const state = { pending: null, latest: 0 };

function search(similar) {
  state.pending = run(similar, ++state.latest);
  return state.pending;
}

/** One search on both sides; only the latest search started renders (a slower, older answer
 * never replaces a newer one). */
async function run(similar, seq) {
  const req = request(similar);
  if (!req.text && !req.vector) return null;
  let t = performance.now();
  const wasm = col.search(req);
  const wasmMs = performance.now() - t;
  const body = JSON.stringify({ ...req, vector: req.vector && Array.from(req.vector) });
  t = performance.now();
  const res = await fetch(`${SERVER}/collections/${encodeURIComponent(COLLECTION)}/search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const server = await res.json();
  const serverMs = performance.now() - t;
  if (!res.ok) throw new Error(`server: ${server.status?.error ?? res.status}`);
  if (seq !== state.latest) return null;
  const same = identical(wasm.points, server.points);
  const what = similar ? `similar to “${similar.headword}”` : req.text && req.vector ? "hybrid" : req.text ? "text" : "vector";
  $("verdict").textContent = same
    ? `✓ identical: the same ${wasm.points.length} results, scores equal bit for bit (${what})`
    : `✗ the answers differ (${what})`;
  $("verdict").className = same ? "same" : "differ";
  $("wasmTiming").textContent = `${wasmMs.toFixed(2)} ms in the tab (${info.kernels}; segment loaded in ${loadMs.toFixed(0)} ms)`;
  $("serverTiming").textContent = `${serverMs.toFixed(2)} ms round trip to ${new URL(SERVER).host}`;
  render($("wasm"), wasm.points);
  render($("server"), server.points);
  return { same, wasm: wasm.points, server: server.points };
}

function render(list, points) {
  list.replaceChildren(...points.map((p) => {
    const li = document.createElement("li");
    const head = Object.assign(document.createElement("span"), { className: "head", textContent: p.payload.headword });
    const meta = Object.assign(document.createElement("span"), {
      className: "meta",
      textContent: ` ${p.payload.pos} · ${p.payload.source} · id ${p.id} · score ${p.score.toFixed(5)} `,
    });
    const button = Object.assign(document.createElement("button"), { className: "similar", textContent: "similar", type: "button" });
    button.addEventListener("click", () => similarTo(p.id).catch(fail));
    const def = Object.assign(document.createElement("div"), { className: "def", textContent: p.payload.definition.slice(0, 220) });
    li.append(head, meta, button, def);
    return li;
  }));
}

/** "Similar to": the entry's stored vector, read from the collection in this tab. */
function similarTo(id) {
  const [point] = col.get([id], { withVector: true, withPayload: true });
  return search({ vector: point.vector, headword: point.payload.headword });
}

$("form").addEventListener("submit", (e) => {
  e.preventDefault();
  search().catch(fail);
});
/** Shows an error in place of the verdict (and on the console). */
function fail(err) {
  $("verdict").textContent = `error: ${err.message}`;
  $("verdict").className = "differ";
  console.error(err);
}
if (params.has("q")) $("q").value = params.get("q");
await search().catch(fail);
// For the Chromium test (examples/gcide/test.mjs).
window.__gcide = Object.assign(state, { search: () => search(), loadMs, len: col.len, kernels: info.kernels });
