// Full-text search on GCIDE in Node: Shoal (wasm, SIMD128 build) against MiniSearch,
// FlexSearch and @orama/orama, same process, same documents and queries (bench/text.py
// prepare). Top-10 per query, one call per query; latency around each call (mean, p50, p99 per
// query kind, best of 3 passes by total time). Writes ~/.cache/shoal/results/text-node.json.
//
//   node bench/node/text.mjs [engine,...]   (default shoal,minisearch,flexsearch,orama; results of
//                                            engines not run are kept from the previous file)
//
// Query semantics per engine (each engine's own API, no query parser in between):
// - Shoal: the query string as is ("word", "+a +b", "\"a b\""), BM25.
// - MiniSearch 7: search(words) for a term; { combineWith: "AND" } for "and" and "phrase" (no
//   phrase queries in MiniSearch: the phrase runs as a conjunction); BM25+; it returns every
//   match sorted, the top 10 are sliced off.
// - FlexSearch 0.8: Index({ tokenize: "strict" }), search(words, { limit: 10 }); multi-word
//   queries are conjunctions (no phrase support; its own ranking, not BM25).
// - Orama 3: search({ term, exact: true, limit: 10 }) (exact: no prefix matching, as the others),
//   threshold 0 (all terms required) for "and" and "phrase" (no phrase support); BM25.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import MiniSearch from "minisearch";
import { Index as FlexIndex } from "flexsearch";
import { create, insertMultiple, search as oramaSearch } from "@orama/orama";
import { init, Collection } from "../../bindings-js/js/index.js";

const dir = join(homedir(), ".cache/shoal/datasets/gcide-text");
const docs = readFileSync(join(dir, "docs.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l).text);
const queries = JSON.parse(readFileSync(join(dir, "queries.json"), "utf8"));
const rel = JSON.parse(readFileSync(join(dir, "relevance.json"), "utf8"));
const words = (q) => q.replace(/[+"]/g, "").trim();

function summarize(lat) {
  const out = {};
  for (const kind of ["term", "and", "phrase", "all"]) {
    const sel = lat.filter((_, i) => kind === "all" || queries[i].kind === kind).sort((a, b) => a - b);
    const pick = (p) => sel[Math.round((sel.length - 1) * p)];
    out[kind] = { mean_us: sel.reduce((a, b) => a + b, 0) / sel.length, p50_us: pick(0.5), p99_us: pick(0.99), n: sel.length };
  }
  return out;
}

async function measure(name, build, searchOne, relevanceOne) {
  global.gc?.();
  const m0 = process.memoryUsage().heapUsed;
  let t = performance.now();
  await build();
  const buildS = (performance.now() - t) / 1000;
  process.stderr.write(`${name}: built in ${buildS.toFixed(1)} s\n`);
  for (let i = 0; i < 100; i++) await searchOne(queries[i]);
  let best = null;
  for (let pass = 0; pass < 3; pass++) {
    const lat = [];
    for (const q of queries) {
      const a = performance.now();
      await searchOne(q);
      lat.push((performance.now() - a) * 1000);
    }
    if (!best || lat.reduce((a, b) => a + b) < best.reduce((a, b) => a + b)) best = lat;
  }
  let relevance = null;
  if (relevanceOne) {
    let hits = 0;
    for (const r of rel) if ((await relevanceOne(r.q)).includes(r.doc)) hits++;
    relevance = hits / rel.length;
  }
  const latency = summarize(best);
  console.log(
    `${name.padEnd(11)} build ${buildS.toFixed(1)} s; mean ${latency.all.mean_us.toFixed(1)} us, p99 ${latency.all.p99_us.toFixed(1)} us` +
      (relevance === null ? "" : `; relevance ${relevance.toFixed(3)}`),
  );
  return { engine: name, where: "node", build_seconds: buildS, heap_delta_bytes: process.memoryUsage().heapUsed - m0, latency, relevance_top10: relevance };
}

const only = (process.argv[2] ?? "shoal,minisearch,flexsearch,orama").split(",");
const resultsPath = join(homedir(), ".cache/shoal/results/text-node.json");
let previous = [];
try {
  previous = JSON.parse(readFileSync(resultsPath, "utf8")).engines;
} catch {}
const info = await init();
console.log(`== GCIDE: ${docs.length} documents, ${queries.length} queries; Node ${process.version}, Shoal wasm ${info.kernels}`);
const engines = [];

let col;
if (only.includes("shoal")) engines.push(
  await measure(
    "shoal",
    () => {
      col = new Collection({ dim: 1, metric: "l2", fields: { text: "text" } });
      const n = docs.length;
      col.insert({
        ids: Float64Array.from({ length: n }, (_, i) => i),
        vectors: new Float32Array(n),
        payloads: docs.map((text) => ({ text })),
      });
      col.seal();
    },
    (q) => col.search({ text: q.q, limit: 10 }),
    (q) => col.search({ text: q, limit: 10 }).points.map((p) => p.id),
  ),
);
col?.free();

let ms;
if (only.includes("minisearch")) engines.push(
  await measure(
    "minisearch",
    () => {
      ms = new MiniSearch({ fields: ["text"], idField: "id" });
      ms.addAll(docs.map((text, id) => ({ id, text })));
    },
    (q) => ms.search(words(q.q), q.kind === "term" ? {} : { combineWith: "AND" }).slice(0, 10),
    (q) => ms.search(q).slice(0, 10).map((h) => h.id),
  ),
);
ms = null;

let flex;
if (only.includes("flexsearch")) engines.push(
  await measure(
    "flexsearch",
    () => {
      flex = new FlexIndex({ tokenize: "strict" });
      docs.forEach((text, id) => flex.add(id, text));
    },
    (q) => flex.search(words(q.q), { limit: 10 }),
    null,
  ),
);
flex = null;

let db;
if (only.includes("orama")) engines.push(
  await measure(
    "orama",
    async () => {
      db = create({ schema: { text: "string" } });
      await insertMultiple(db, docs.map((text, id) => ({ id: String(id), text })), 1000);
    },
    (q) =>
      oramaSearch(db, { term: words(q.q), exact: true, limit: 10, ...(q.kind === "term" ? {} : { threshold: 0 }) }),
    // No relevance run: Orama's 8-word disjunctions of common words take ~1 s each here.
    null,
  ),
);

for (const e of previous) if (!engines.some((x) => x.engine === e.engine)) engines.push(e);
const order = ["shoal", "minisearch", "flexsearch", "orama"];
engines.sort((a, b) => order.indexOf(a.engine) - order.indexOf(b.engine));
const shoal = engines.find((e) => e.engine === "shoal");
for (const e of engines.filter((x) => x !== shoal && shoal)) {
  console.log(`Shoal is ${(e.latency.all.mean_us / shoal.latency.all.mean_us).toFixed(1)}x faster than ${e.engine} (mean latency, all queries)`);
}
mkdirSync(join(homedir(), ".cache/shoal/results"), { recursive: true });
writeFileSync(resultsPath, JSON.stringify({ engines }, null, 1));
