// Shoal (wasm, SIMD128) against the vector search engines people run in JavaScript, in one Node
// process, on the same data and queries, one query at a time (single thread):
//   hnswlib-wasm (HNSW in wasm), usearch (HNSW, native Node addon), @orama/orama (exhaustive
//   vector search in JS). Each engine's documented settings; HNSW: M = 16, efConstruction 200
//   (hnswlib) / expansion_add 128 (usearch), swept over ef / expansion_search. Shoal: 1-bit and
//   4-bit codes, swept over nprobe x rerank.
//
//   npm ci --prefix bench/node && node bench/node/peers.mjs [dataset]   (default glove-100k)
//
// Prints QPS at recall@10 0.90 / 0.95 / 0.99 per engine, read off its recall/QPS frontier and
// interpolated between the two sweep points around each target (as bench/frontier.py does),
// and the ratios of Shoal's best configuration to each engine; writes
// ~/.cache/shoal/results/node-peers-<dataset>.json.
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";
import { init, Collection } from "../../bindings-js/js/index.js";
import { loadDataset } from "./npy.mjs";

const require = createRequire(import.meta.url);
const name = process.argv[2] ?? "glove-100k";
const dir = join(homedir(), ".cache/shoal/datasets", name);
const K = 10;

const { meta, base, queries, gt, n, dim, nq, gtK } = await loadDataset(dir);
const rows = Array.from({ length: n }, (_, i) => base.data.subarray(i * dim, (i + 1) * dim));
const qs = Array.from({ length: nq }, (_, q) => queries.data.subarray(q * dim, (q + 1) * dim));
const truth = Array.from({ length: nq }, (_, q) => new Set(gt.data.subarray(q * gtK, q * gtK + K)));

/** Recall and QPS of `search(q) -> ids` over the first `count` queries: fastest of `passes`. */
function measure(search, count = nq, passes = 3) {
  let hits = 0;
  for (let q = 0; q < count; q++) for (const id of search(q)) hits += truth[q].has(Number(id)) ? 1 : 0;
  let best = Infinity;
  for (let p = 0; p < passes; p++) {
    const t = performance.now();
    for (let q = 0; q < count; q++) search(q);
    best = Math.min(best, performance.now() - t);
  }
  return { recall: hits / (K * count), qps: count / (best / 1000) };
}

const engines = [];
// `NODE_PEERS=shoal,hnswlib,usearch,orama` (default: all) runs a subset.
const only = new Set((process.env.NODE_PEERS ?? "shoal,hnswlib,usearch,orama").split(","));
/** QPS at `target` recall on the frontier of `points` (no point beats another on both recall
 * and QPS), interpolated linearly between the frontier points around the target; null when
 * no point reaches it. */
function qpsAt(points, target) {
  const byRecall = [...points].sort((a, b) => b.recall - a.recall || b.qps - a.qps);
  const frontier = [];
  let best = -Infinity;
  for (const p of byRecall) {
    if (p.qps > best) {
      frontier.push(p);
      best = p.qps;
    }
  }
  frontier.reverse();
  const i = frontier.findIndex((p) => p.recall >= target);
  if (i < 0) return null;
  if (i === 0 || frontier[i].recall === target) return frontier[i].qps;
  const [a, b] = [frontier[i - 1], frontier[i]];
  return a.qps + ((b.qps - a.qps) * (target - a.recall)) / (b.recall - a.recall);
}

function report(engine, config, buildS, points) {
  const summary = [0.9, 0.95, 0.99].map((target) => qpsAt(points, target));
  engines.push({ engine, config, build_seconds: buildS, points, summary });
  for (const p of points) console.log(`  ${engine} ${JSON.stringify(p.params)}: recall ${p.recall.toFixed(4)}, ${p.qps.toFixed(0)} QPS`);
}

// --- Shoal (wasm) ---
const info = await init();
// `SHOAL_BITS=1,4` (default): the code widths Shoal is built with, one configuration each.
for (const bits of only.has("shoal") ? (process.env.SHOAL_BITS ?? "1,4").split(",").map(Number) : []) {
  const col = new Collection({ dim, metric: meta.metric });
  const t = performance.now();
  col.insert({ ids: Float64Array.from({ length: n }, (_, i) => i), vectors: base.data });
  col.seal({ index: "ivf-rabitq", bits });
  const buildS = (performance.now() - t) / 1000;
  const points = [];
  // With extra bits the candidates are chosen by the extended-bit estimates: shallow depths.
  const reranks = bits > 1 ? [1, 2, 4, 8] : [8, 16, 32, 64];
  const nprobes = [8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];
  for (const params of [{}, ...nprobes.flatMap((nprobe) => reranks.map((rerank) => ({ nprobe, rerank })))]) {
    const m = measure((q) => col.search({ vector: qs[q], limit: K, params }).points.map((p) => p.id));
    points.push({ params, ...m });
  }
  report("shoal-wasm", `IVF-RaBitQ ${bits}-bit, ${info.kernels}`, buildS, points);
  col.free();
}

// --- hnswlib-wasm ---
if (only.has("hnswlib")) {
  // hnswlib-wasm is an Emscripten build for the web: it wants `window`, fetches its wasm and
  // mounts IndexedDB. Give it those in Node (Shoal is initialised already, so it is unaffected).
  await import("fake-indexeddb/auto");
  globalThis.window = globalThis;
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (url, ...rest) =>
    String(url).startsWith("file:") ? new Response(await readFile(new URL(String(url))), { headers: { "content-type": "application/wasm" } }) : realFetch(url, ...rest);
  const { loadHnswlib } = await import("hnswlib-wasm/dist/hnswlib.js");
  const lib = await loadHnswlib();
  const space = meta.metric === "cosine" ? "cosine" : meta.metric === "dot" ? "ip" : "l2";
  const index = new lib.HierarchicalNSW(space, dim, "");
  const t = performance.now();
  index.initIndex(n, 16, 200, 100);
  for (let i = 0; i < n; i++) index.addPoint(rows[i], i, false);
  const buildS = (performance.now() - t) / 1000;
  const points = [];
  for (const ef of [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]) {
    index.setEfSearch(ef);
    points.push({ params: { ef }, ...measure((q) => index.searchKnn(qs[q], K, undefined).neighbors) });
  }
  report("hnswlib-wasm", "M 16, efConstruction 200", buildS, points);
}

// --- usearch (native Node addon) ---
if (only.has("usearch")) {
  const usearch = require("usearch");
  const metric = meta.metric === "cosine" ? "cos" : meta.metric === "dot" ? "ip" : "l2sq";
  const keys = BigUint64Array.from({ length: n }, (_, i) => BigInt(i));
  const points = [];
  let buildS = 0;
  for (const expansion of [16, 32, 48, 64, 96, 128, 192, 256, 384]) {
    const index = new usearch.Index({ dimensions: dim, metric, connectivity: 16, expansion_add: 128, expansion_search: expansion });
    const t = performance.now();
    index.add(keys, base.data, 1);
    buildS = (performance.now() - t) / 1000;
    points.push({ params: { expansion_search: expansion }, ...measure((q) => index.search(qs[q], K, 1).keys) });
  }
  report("usearch-node", "connectivity 16, expansion_add 128, 1 thread", buildS, points);
}

// --- @orama/orama (exhaustive; 100 queries) ---
if (only.has("orama")) {
  const { create, insertMultiple, search } = await import("@orama/orama");
  const db = create({ schema: { embedding: `vector[${dim}]` } });
  const t = performance.now();
  const docs = rows.map((v, i) => ({ id: String(i), embedding: Array.from(v) }));
  await insertMultiple(db, docs, 10000);
  const buildS = (performance.now() - t) / 1000;
  const count = 100;
  const m = measure(
    (q) => search(db, { mode: "vector", vector: { value: Array.from(qs[q]), property: "embedding" }, similarity: -1, limit: K }).hits.map((h) => Number(h.id)),
    count,
    1,
  );
  report("orama", `exhaustive vector search (${count} queries)`, buildS, [{ params: {}, ...m }]);
}

// Shoal's best configuration at each target.
const shoal = [0, 1, 2].map((i) => {
  const qps = engines.filter((e) => e.engine === "shoal-wasm" && e.summary[i] != null).map((e) => e.summary[i]);
  return qps.length ? Math.max(...qps) : null;
});
console.log(`\n== ${name} (${n} x ${dim}-d ${meta.metric}), Node ${process.version}, one query at a time`);
console.log("| engine | config | build s | QPS @0.90 | @0.95 | @0.99 | Shoal / engine @0.90 | @0.95 |");
console.log("|---|---|---:|---:|---:|---:|---:|---:|");
for (const e of engines) {
  const f = (x) => (x == null ? "—" : x.toFixed(0));
  const r = (i) => (e.summary[i] && shoal[i] ? (shoal[i] / e.summary[i]).toFixed(2) : "—");
  const best = Math.max(...e.points.map((p) => p.recall));
  console.log(`| ${e.engine} | ${e.config} (max recall ${best.toFixed(3)}) | ${e.build_seconds.toFixed(1)} | ${f(e.summary[0])} | ${f(e.summary[1])} | ${f(e.summary[2])} | ${r(0)} | ${r(1)} |`);
}
const out = join(homedir(), ".cache/shoal/results");
await mkdir(out, { recursive: true });
await writeFile(join(out, `node-peers-${name}.json`), JSON.stringify({ dataset: name, node: process.version, engines }, null, 1));
