// The browser example: a synthetic product catalogue built in the page (deterministic, no data
// files, works offline), searched with text (BM25), vectors, filters, or both fused.
// Serve the repository root with any static server (or the native host) and open
// /examples/browser/ — e.g. `python3 -m http.server` then http://127.0.0.1:8000/examples/browser/.
// In your own project, import from "shoal" instead of the relative path.
import { init, Collection } from "../../bindings-js/js/index.js";

const COLORS = ["blue", "red", "green", "black", "white", "amber", "teal", "grey"];
const MATERIALS = ["ceramic", "steel", "oak", "glass", "linen", "wool", "leather", "bamboo"];
const CATEGORIES = {
  kitchen: ["mug", "bowl", "teapot", "kettle", "plate", "jar"],
  home: ["lamp", "vase", "cushion", "blanket", "frame", "clock"],
  office: ["desk", "notebook", "pen", "shelf", "chair", "tray"],
  outdoor: ["bottle", "backpack", "tent", "lantern", "hammock", "stool"],
};
const DIM = 32;

/** xorshift32 in [0, 1). */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

function catalogue(n) {
  const next = rng(2026);
  const cats = Object.keys(CATEGORIES);
  const centres = new Map();
  const centre = (key) => {
    if (!centres.has(key)) {
      const r = rng([...key].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7));
      centres.set(key, Float32Array.from({ length: DIM }, () => r() * 2 - 1));
    }
    return centres.get(key);
  };
  const vectors = new Float32Array(n * DIM);
  const payloads = [];
  for (let i = 0; i < n; i++) {
    const category = cats[Math.floor(next() * cats.length)];
    const item = CATEGORIES[category][Math.floor(next() * 6)];
    const color = COLORS[Math.floor(next() * COLORS.length)];
    const material = MATERIALS[Math.floor(next() * MATERIALS.length)];
    const name = `${color} ${material} ${item}`;
    // The vector: the item's and the colour's directions plus noise (similar things are near).
    const a = centre(item), b = centre(color), c = centre(material);
    for (let d = 0; d < DIM; d++) vectors[i * DIM + d] = a[d] + 0.5 * b[d] + 0.3 * c[d] + 0.2 * (next() * 2 - 1);
    payloads.push({ name, category, price: Math.round(5 + next() * 95) + 0.99, in_stock: next() < 0.7 });
  }
  return { vectors, payloads, embed: (words) => {
    const v = new Float32Array(DIM);
    for (const w of words.toLowerCase().split(/\s+/)) {
      const weight = COLORS.includes(w) ? 0.5 : MATERIALS.includes(w) ? 0.3 : Object.values(CATEGORIES).flat().includes(w) ? 1 : 0;
      if (weight) centre(w).forEach((x, d) => (v[d] += weight * x));
    }
    return v.some((x) => x !== 0) ? v : null;
  } };
}

const $ = (id) => document.getElementById(id);
const t0 = performance.now();
const info = await init();
const N = 20000;
const data = catalogue(N);
const col = new Collection({ dim: DIM, metric: "cosine", fields: { name: "text", category: "keyword", price: "float", in_stock: "bool" } });
col.insert({ ids: Float64Array.from({ length: N }, (_, i) => i), vectors: data.vectors, payloads: data.payloads });
col.seal({ index: "ivf-rabitq" });
const ready = performance.now() - t0;
$("count").textContent = N.toLocaleString("en");
for (const c of Object.keys(CATEGORIES)) $("cat").add(new Option(c, c));

function search() {
  const q = $("q").value.trim();
  const mode = $("mode").value;
  const must = [{ key: "price", range: { lte: Number($("max").value) || 1e9 } }];
  if ($("cat").value) must.push({ key: "category", match: { value: $("cat").value } });
  if ($("stock").checked) must.push({ key: "in_stock", match: { value: true } });
  const req = { limit: 10, with_payload: true, filter: { must } };
  const vector = data.embed(q);
  if (mode !== "vector" && q) req.text = q;
  if (mode !== "text" && vector) req.vector = vector;
  if (!req.text && !req.vector) req.text = q || "mug";
  const t = performance.now();
  const res = col.search(req);
  const ms = performance.now() - t;
  $("timing").textContent = `${res.points.length} results in ${ms.toFixed(2)} ms (${req.text && req.vector ? "hybrid, RRF" : req.text ? "BM25" : "vector"}; ` +
    `${info.kernels} build; index built in ${ready.toFixed(0)} ms)`;
  $("results").replaceChildren(...res.points.map((p, i) => {
    const tr = document.createElement("tr");
    for (const [text, cls] of [[i + 1], [p.payload.name], [p.payload.category], [p.payload.price.toFixed(2), "num"], [p.payload.in_stock ? "yes" : "no"], [p.score.toFixed(4), "num"]]) {
      const td = document.createElement("td");
      td.textContent = String(text);
      if (cls) td.className = cls;
      tr.append(td);
    }
    return tr;
  }));
  return res;
}

$("form").addEventListener("submit", (e) => { e.preventDefault(); search(); });
const params = new URLSearchParams(location.search);
if (params.has("q")) $("q").value = params.get("q");
const res = search();
// For the Chromium test: what the first search found.
window.__shoalExample = { points: res.points.length, first: res.points[0]?.payload ?? null, kernels: info.kernels };
