// Shoal's IVF + RaBitQ index in wasm (Node 20, SIMD128 build), against the native numbers of
// the same settings from `cargo bench -p shoal-host --bench ann` (same data, same queries, and —
// builds being deterministic — the same index bytes and the same results).
//
//   node bench/node/ann.mjs [dataset]      (default glove-100k; data from bench/datasets.py)
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { init, Collection } from "../../bindings-js/js/index.js";
import { loadDataset } from "./npy.mjs";

const name = process.argv[2] ?? "glove-100k";
const dir = join(homedir(), ".cache/shoal/datasets", name);
const nativePath = join(homedir(), ".cache/shoal/results", `shoal-${name}.json`);


const info = await init();
const native = JSON.parse(await readFile(nativePath, "utf8"));
const { meta, base, queries, gt, n, dim, nq, gtK } = await loadDataset(dir);

const col = new Collection({ dim, metric: meta.metric });
let t = performance.now();
col.insert({ ids: Float64Array.from({ length: n }, (_, i) => i), vectors: base.data });
col.seal({ index: "ivf-rabitq", bits: 1 });
const buildS = (performance.now() - t) / 1000;
console.log(`== ${name}: ${n} x ${dim}-d ${meta.metric}, wasm ${info.kernels}; build ${buildS.toFixed(2)} s (native ${native.build_seconds.toFixed(2)} s)`);

const qs = Array.from({ length: nq }, (_, q) => queries.data.subarray(q * dim, (q + 1) * dim));
console.log("| nprobe | rerank | recall@10 wasm | recall@10 native | QPS wasm | QPS native | wasm/native |");
console.log("|---:|---:|---:|---:|---:|---:|---:|");
const ratios = [];
for (const p of native.points) {
  const params = p.params.defaults ? {} : { nprobe: p.params.nprobe, rerank: p.params.rerank };
  let hits = 0;
  for (let q = 0; q < nq; q++) {
    const res = col.search({ vector: qs[q], limit: 10, params });
    const truth = new Set(gt.data.subarray(q * gtK, q * gtK + 10));
    hits += res.points.filter((pt) => truth.has(pt.id)).length;
  }
  const recall = hits / (10 * nq);
  const times = [];
  for (let r = 0; r < 3; r++) {
    t = performance.now();
    for (let q = 0; q < nq; q++) col.search({ vector: qs[q], limit: 10, params });
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const qps = nq / (times[1] / 1000);
  ratios.push(qps / p.qps);
  console.log(
    `| ${p.params.nprobe} | ${p.params.rerank} | ${recall.toFixed(4)} | ${p.recall.toFixed(4)} | ${qps.toFixed(0)} | ${p.qps.toFixed(0)} | ${(qps / p.qps).toFixed(2)} |`,
  );
}
ratios.sort((a, b) => a - b);
console.log(`median wasm/native QPS ratio: ${ratios[Math.floor(ratios.length / 2)].toFixed(2)}`);
