// Cold start in Node (issue 7): a fresh process instantiates the package's wasm (SIMD128 build)
// and opens a ~10 MB segment (the first 50,000 GloVe 50-d vectors of glove-100k with an
// IVF-RaBitQ index: 10 MB of vectors + codes), then answers one query. Each of 7 runs is a new
// `node` process; the median of each phase is reported.
//
//   node bench/node/coldstart.mjs
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const seg = join(homedir(), ".cache/shoal/coldstart-glove50k.shoal");
const pkg = fileURLToPath(new URL("../../bindings-js/js/index.js", import.meta.url));

if (process.argv[2] === "--child") {
  const t0 = performance.now();
  const { init, Collection } = await import(pkg);
  const t1 = performance.now();
  const info = await init();
  const t2 = performance.now();
  const bytes = readFileSync(seg);
  const t3 = performance.now();
  const col = Collection.fromBytes(bytes);
  const t4 = performance.now();
  const res = col.search({ vector: new Float32Array(col.dim).fill(0.1), limit: 10 });
  const t5 = performance.now();
  if (res.points.length !== 10) throw new Error("no results");
  console.log(JSON.stringify({ import: t1 - t0, init: t2 - t1, read: t3 - t2, open: t4 - t3, search: t5 - t4, total: t5 - t0, bytes: bytes.length, kernels: info.kernels }));
  process.exit(0);
}

if (!existsSync(seg)) {
  const { init, Collection } = await import(pkg);
  const { loadDataset } = await import("./npy.mjs");
  await init();
  const { meta, base, dim } = await loadDataset(join(homedir(), ".cache/shoal/datasets/glove-100k"));
  const n = 50_000;
  const col = new Collection({ dim, metric: meta.metric });
  col.insert({ ids: Float64Array.from({ length: n }, (_, i) => i), vectors: base.data.subarray(0, n * dim) });
  col.seal({ index: "ivf-rabitq", bits: 1 });
  writeFileSync(seg, col.toBytes());
}
const runs = [];
for (let i = 0; i < 7; i++) {
  runs.push(JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--child"], { encoding: "utf8" })));
}
const med = (k) => runs.map((r) => r[k]).sort((a, b) => a - b)[3];
console.log(`segment ${(runs[0].bytes / 1e6).toFixed(1)} MB, ${runs[0].kernels}; median of 7 fresh processes (ms):`);
console.log(`  import ${med("import").toFixed(2)}  init (compile + instantiate) ${med("init").toFixed(2)}  read file ${med("read").toFixed(2)}  fromBytes ${med("open").toFixed(2)}  first search ${med("search").toFixed(2)}`);
console.log(`  instantiate + open: ${(med("init") + med("open")).toFixed(2)} ms; everything from import to the first result: ${med("total").toFixed(2)} ms`);
