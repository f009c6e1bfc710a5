// Full-text search by byte ranges against Pagefind (npm `pagefind`, its default settings), on the
// same GCIDE definitions and the same queries: what each text query costs a reader on a static
// server — requests and bytes, and time with `--latency` ms added to every request — cold
// (just after opening) and in sequence (each query with what the queries before it fetched),
// the ranking alone and with the top 10 results' data (Pagefind: `result.data()`, each result's
// fragment; Shoal: `with_payload`, each result's block of documents).
//
//   node bench/node/pagefind.mjs [--latency 20] [--queries 200]
//
// Inputs: `cargo bench -p shoal-host --bench remote_hybrid` (the GCIDE format-2 segment and its
// text queries, ~/.cache/shoal/remote/gcide-text.json) and the entries
// (~/.cache/shoal/gcide-demo/payloads.jsonl). Pagefind indexes each entry's definition as one
// record (`addCustomRecord`, language `en`, the headword as its title) and writes its bundle;
// nginx serves both through scripts/range-proxy.mjs. Both run in this Node process: Pagefind's
// browser module (`pagefind.js` of the bundle, a fresh instance per cold query, its requests
// counted at `fetch`), Shoal's `Collection.openRemote` (its `io`). Queries: one word (`a`) or two
// words both required (Shoal `+a +b`, Pagefind `a b`: Pagefind requires every word).
// Writes ~/.cache/shoal/results/pagefind-gcide.json.
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as pagefindIndexer from "pagefind";
import { Collection } from "../../bindings-js/js/index.js";
import { startNginx, startProxy } from "../../bindings-js/test/servers.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const latency = Number(arg("latency", "20"));
const maxQueries = Number(arg("queries", "200"));
const cacheDir = process.env.SHOAL_CACHE ?? join(homedir(), ".cache", "shoal");
const fixturePath = join(cacheDir, "remote", "gcide-text.json");
if (!existsSync(fixturePath)) {
  console.log(`skipped: ${fixturePath} is missing (cargo bench -p shoal-host --bench remote_hybrid)`);
  process.exit(0);
}
const fixture = JSON.parse(readFileSync(fixturePath, "utf8"));
const queries = fixture.requests.slice(0, maxQueries).map((r) => r.text);
const entries = readFileSync(join(cacheDir, "gcide-demo", "payloads.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));

// Pagefind's bundle of the same definitions.
const site = join(root, "target", "pagefind-gcide");
rmSync(site, { recursive: true, force: true });
mkdirSync(site, { recursive: true });
let t = performance.now();
const { index, errors } = await pagefindIndexer.createIndex({});
if (!index) throw new Error(`pagefind: ${errors.join("; ")}`);
for (let i = 0; i < entries.length; i++) {
  const e = entries[i];
  const r = await index.addCustomRecord({ url: `/e/${i}`, content: e.definition ?? "", language: "en", meta: { title: e.headword } });
  if (r.errors.length) throw new Error(`pagefind: entry ${i}: ${r.errors.join("; ")}`);
}
await index.writeFiles({ outputPath: join(site, "pagefind") });
await pagefindIndexer.close();
const buildS = (performance.now() - t) / 1000;
console.log(`pagefind ${JSON.parse(readFileSync(join(root, "bench/node/node_modules/pagefind/package.json"), "utf8")).version}: indexed ${entries.length} entries in ${buildS.toFixed(1)} s`);

// Counting Pagefind's requests: every fetch it makes and the bytes of each body, as opening
// (its entry file, the language's metadata, its wasm: fetched by `init`, which does not wait for
// them) or as a query's (index chunks, fragments).
const realFetch = globalThis.fetch;
const opening = /pagefind-entry\.json|\.pf_meta$|wasm\.[a-z]+\.pagefind$/;
const counter = { open: { requests: 0, bytes: 0 }, query: { requests: 0, bytes: 0 } };
globalThis.fetch = async (input, init) => {
  const res = await realFetch(input, init);
  const body = await res.arrayBuffer();
  const c = opening.test(String(input).split("?")[0]) ? counter.open : counter.query;
  c.requests += 1;
  c.bytes += body.byteLength;
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
};
const measure = async (f, which = "query") => {
  const c = counter[which];
  const [r0, b0, t0] = [c.requests, c.bytes, performance.now()];
  const value = await f();
  return { value, io: { requests: c.requests - r0, bytes: c.bytes - b0 }, ms: performance.now() - t0 };
};

let instance = 0;
/** A fresh instance of Pagefind's browser module, reading the bundle at `base`. */
async function pagefindAt(base) {
  const pf = await import(`${pathToFileURL(join(site, "pagefind", "pagefind.js")).href}?i=${instance++}`);
  await pf.options({ basePath: `${base}/pagefind/` });
  return pf;
}
const pagefindQuery = (q) => q.replace(/\+/g, "");
async function pagefindSearch(pf, q, withData) {
  const res = await pf.search(pagefindQuery(q));
  const top = res.results.slice(0, 10);
  const data = withData ? await Promise.all(top.map((r) => r.data())) : [];
  return { hits: res.results.length, ids: withData ? data.map((d) => d.url) : top.map((r) => r.id) };
}

const summary = (runs) => {
  const n = runs.length;
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const pick = (p) => ms[Math.round((n - 1) * p)];
  return {
    requests_mean: runs.reduce((a, r) => a + r.io.requests, 0) / n,
    requests_max: Math.max(...runs.map((r) => r.io.requests)),
    kb_mean: runs.reduce((a, r) => a + r.io.bytes, 0) / n / 1e3,
    kb_max: Math.max(...runs.map((r) => r.io.bytes)) / 1e3,
    ms_p50: pick(0.5),
    ms_p90: pick(0.9),
  };
};

const nginx = await startNginx();
const proxy = await startProxy(nginx.base, latency);
const out = { entries: entries.length, queries: queries.length, latency_ms: latency, node: process.version, pagefind_build_s: buildS, engines: {} };
try {
  symlinkSync(site, join(nginx.www, "site"));
  symlinkSync(join(cacheDir, "remote", "gcide.v2.shoal"), join(nginx.www, "gcide.v2.shoal"));
  const base = `${proxy.base}/site`;
  const line = (name, s) =>
    `${name}: ${s.requests_mean.toFixed(1)} requests (max ${s.requests_max}), ${s.kb_mean.toFixed(1)} KB (max ${s.kb_max.toFixed(0)}), p50 ${s.ms_p50.toFixed(0)} ms, p90 ${s.ms_p90.toFixed(0)} ms`;

  // Pagefind: opening is `init` (its entry file, its wasm, the language's metadata).
  const pf = {};
  for (const withData of [false, true]) {
    const cold = [];
    let open;
    for (const q of queries) {
      const p = await pagefindAt(base);
      // Opening, finished: init, then a search that needs no chunk (its wait is the opening's).
      const o = await measure(async () => {
        await p.init();
        await p.search("");
      }, "open");
      open ??= o;
      cold.push(await measure(() => pagefindSearch(p, q, withData)));
      await p.destroy?.();
    }
    const p = await pagefindAt(base);
    await p.init();
    const seq = [];
    for (const q of queries) seq.push(await measure(() => pagefindSearch(p, q, withData)));
    const key = withData ? "with_data" : "ranking";
    pf[key] = { open: { requests: open.io.requests, kb: open.io.bytes / 1e3, ms: open.ms }, cold: summary(cold), sequence: summary(seq) };
    console.log(`pagefind ${key}: open ${open.io.requests} requests, ${(open.io.bytes / 1e3).toFixed(0)} KB | ${line("cold", pf[key].cold)} | ${line("in sequence", pf[key].sequence)}`);
    pf[key].hits_mean = cold.reduce((a, r) => a + r.value.hits, 0) / cold.length;
  }
  out.engines.pagefind = pf;

  // Shoal: the format-2 segment, one range per request and multipart ranges.
  const url = `${proxy.base}/gcide.v2.shoal`;
  for (const multipart of [false, true]) {
    const s = {};
    for (const withData of [false, true]) {
      const req = (q) => ({ text: q, limit: 10, with_payload: withData });
      const cold = await Collection.openRemote(url, { cacheBytes: 0, bootstrapBytes: fixture.bootstrapLen, multipartRanges: multipart });
      const open = cold.opened;
      const coldRuns = [];
      for (const q of queries) {
        const t0 = performance.now();
        const res = await cold.search(req(q));
        coldRuns.push({ io: res.io, ms: performance.now() - t0, hits: res.points.length });
      }
      cold.free();
      const warm = await Collection.openRemote(url, { cacheBytes: 1 << 30, bootstrapBytes: fixture.bootstrapLen, multipartRanges: multipart });
      const seq = [];
      for (const q of queries) {
        const t0 = performance.now();
        const res = await warm.search(req(q));
        seq.push({ io: res.io, ms: performance.now() - t0 });
      }
      warm.free();
      const key = withData ? "with_data" : "ranking";
      s[key] = { open: { requests: open.requests, kb: open.bytes / 1e3 }, cold: summary(coldRuns), sequence: summary(seq) };
      console.log(`shoal${multipart ? " multipart" : ""} ${key}: open ${open.requests} requests, ${(open.bytes / 1e3).toFixed(0)} KB | ${line("cold", s[key].cold)} | ${line("in sequence", s[key].sequence)}`);
    }
    out.engines[multipart ? "shoal_multipart" : "shoal"] = s;
  }
  const results = join(cacheDir, "results");
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, "pagefind-gcide.json"), `${JSON.stringify(out, null, 1)}\n`);
} finally {
  globalThis.fetch = realFetch;
  proxy.stop();
  nginx.stop();
}
