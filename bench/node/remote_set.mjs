// A published segment set read by ranges from Node (`Collection.openRemote(".../manifest.json")`):
// what opening it and each query cost when the set lies on a static server — requests,
// dependent round trips (waves), bytes and time, cold and warm, with recall@10 against the exact
// ground truth, at several `nprobe`.
//
//   node bench/node/remote_set.mjs [--set DIR] [--dataset synthetic-10m-128] [--latency 20]
//                                  [--queries 100] [--nprobe 1,2,4,8,16]
//
// `--nprobe default` searches with each segment's calibrated nprobe, made for local search
// (recall 1.000 there, and ~260 MB read per query from this set: not what a reader by ranges
// wants).
//
// DIR (default ~/.cache/shoal/remote/set-10m) is what `shoal publish` wrote from the collection
// `bench/large.py ingest` builds (10M x 128-d through `shoal serve`, settled into a few
// segments); its ids are the dataset's row numbers, so the dataset's gt.npy is the truth.
// Served by nginx through scripts/range-proxy.mjs adding `--latency` ms to every request:
// - cold: opened with `cacheBytes: 0` — each query starts with only the bootstrap regions;
// - warm: `cacheBytes` 1 GiB, the second pass over the queries timed;
// each with one range per request (what S3, R2 and GCS serve) and with multipart ranges.
// Writes ~/.cache/shoal/results/remote-set-<set folder name>.json.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join, resolve } from "node:path";
import { Collection } from "../../bindings-js/js/index.js";
import { startNginx, startProxy } from "../../bindings-js/test/servers.mjs";
import { npy } from "./npy.mjs";
import { summary } from "./remote_summary.mjs";

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const cacheDir = process.env.SHOAL_CACHE ?? join(homedir(), ".cache", "shoal");
const setDir = resolve(arg("set", join(cacheDir, "remote", "set-10m")));
const dataset = arg("dataset", "synthetic-10m-128");
const latency = Number(arg("latency", "20"));
const maxQueries = Number(arg("queries", "100"));
// `default`: no `nprobe` given (each segment's calibrated default).
const nprobes = arg("nprobe", "1,2,4,8,16").split(",").map((x) => (x === "default" ? undefined : Number(x)));
const WARM_CACHE = 1 << 30;

if (!existsSync(join(setDir, "manifest.json"))) {
  console.log(`skipped: ${setDir}/manifest.json is missing (python3 bench/large.py ingest, then shoal publish; make bench-remote-set)`);
  process.exit(0);
}
const manifest = JSON.parse(readFileSync(join(setDir, "manifest.json"), "utf8"));
const queries = await npy(join(cacheDir, "datasets", dataset, "queries.npy"));
const gt = await npy(join(cacheDir, "datasets", dataset, "gt.npy"));
const [nq, dim] = [Math.min(maxQueries, queries.shape[0]), queries.shape[1]];
const gtK = gt.shape[1];
const vectors = Array.from({ length: nq }, (_, i) => queries.data.subarray(i * dim, (i + 1) * dim));
const truth = Array.from({ length: nq }, (_, i) => Array.from(gt.data.subarray(i * gtK, i * gtK + 10)));

async function pass(col, nprobe) {
  const out = [];
  for (const vector of vectors) {
    const t = performance.now();
    const res = await col.search(nprobe === undefined ? { vector, limit: 10 } : { vector, limit: 10, params: { nprobe } });
    out.push({ ms: performance.now() - t, io: res.io, rows: res.points.map((p) => [String(p.id)]) });
  }
  return out;
}

const nginx = await startNginx();
const proxy = await startProxy(nginx.base, latency);
const out = {
  set: basename(setDir),
  dataset,
  segments: manifest.segments.length,
  rows: manifest.segments.reduce((a, s) => a + s.rows, 0),
  bytes: manifest.segments.reduce((a, s) => a + s.bytes, 0),
  bootstrap_bytes: manifest.segments.reduce((a, s) => a + (s.bootstrap ?? 0), 0),
  queries: nq,
  latency_ms: latency,
  node: process.version,
  runs: [],
};
try {
  symlinkSync(setDir, join(nginx.www, "set"));
  const url = `${proxy.base}/set/manifest.json`;
  console.log(`== ${out.set}: ${out.rows.toLocaleString()} points in ${out.segments} segments (${(out.bytes / 1e9).toFixed(2)} GB; bootstrap regions ${(out.bootstrap_bytes / 1e6).toFixed(1)} MB), ${nq} queries, +${latency} ms per request, node ${process.version}`);
  for (const multipart of [false, true]) {
    const t = performance.now();
    const cold = await Collection.openRemote(url, { cacheBytes: 0, multipartRanges: multipart });
    const open = { ...cold.opened, ms: performance.now() - t };
    const warm = await Collection.openRemote(url, { cacheBytes: WARM_CACHE, multipartRanges: multipart });
    console.log(`${multipart ? "multipart ranges" : "one range per request"}: open ${open.waves} waves, ${open.requests} requests, ${(open.bytes / 1e6).toFixed(2)} MB, ${open.ms.toFixed(0)} ms`);
    for (const nprobe of nprobes) {
      const c = summary(await pass(cold, nprobe), truth);
      await pass(warm, nprobe);
      const w = summary(await pass(warm, nprobe), truth);
      out.runs.push({ multipart, nprobe: nprobe ?? "default", open, cold: c, warm: w });
      console.log(`  nprobe ${nprobe ?? "default"}: recall@10 ${c.recall_at_10.toFixed(3)} | cold ${c.waves_mean.toFixed(2)} waves (max ${c.waves_max}), ` +
        `${c.requests_mean.toFixed(1)} requests (max ${c.requests_max}), ${c.kb_mean.toFixed(0)} KB (max ${c.kb_max.toFixed(0)}), ` +
        `p50 ${c.ms_p50.toFixed(0)} ms, p90 ${c.ms_p90.toFixed(0)} ms | warm ${w.requests_mean.toFixed(1)} requests, ${w.kb_mean.toFixed(0)} KB, p50 ${w.ms_p50.toFixed(1)} ms`);
    }
    cold.free();
    warm.free();
  }
  const results = join(cacheDir, "results");
  mkdirSync(results, { recursive: true });
  // Runs of other nprobe values measured earlier on the same set are kept (a run replaces only
  // the rows it measured).
  const file = join(results, `remote-set-${out.set}.json`);
  if (existsSync(file)) {
    const before = JSON.parse(readFileSync(file, "utf8"));
    const key = (r) => `${r.multipart}/${r.nprobe}`;
    const now = new Set(out.runs.map(key));
    if (before.rows === out.rows && before.bytes === out.bytes) {
      out.runs = [...before.runs.filter((r) => !now.has(key(r))), ...out.runs];
    }
  }
  writeFileSync(file, `${JSON.stringify(out, null, 1)}\n`);
} finally {
  proxy.stop();
  nginx.stop();
}
