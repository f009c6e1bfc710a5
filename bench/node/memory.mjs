// Memory in wasm (issue 7): 100,000 x 384-d vectors (clustered, float32) with an IVF-RaBitQ
// index. Builds the segment in one process, then opens it in fresh processes and reports the
// wasm memory a loaded collection takes (after `init()` vs after `fromBytes`), per code width.
//
//   node bench/node/memory.mjs
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { init, Collection, wasmMemoryBytes } from "../../bindings-js/js/index.js";

const n = 100_000;
const dim = 384;
const segPath = (bits) => join(homedir(), `.cache/shoal/memory-100k-384-b${bits}.shoal`);

if (process.argv[2] === "--child") {
  const { readFileSync } = await import("node:fs");
  await init();
  const m0 = wasmMemoryBytes();
  const bytes = readFileSync(process.argv[3]);
  const col = Collection.fromBytes(bytes);
  const m1 = wasmMemoryBytes();
  col.search({ vector: new Float32Array(dim).fill(0.01), limit: 10 });
  console.log(JSON.stringify({ segment: bytes.length, before: m0, after: m1, afterSearch: wasmMemoryBytes() }));
  process.exit(0);
}

await init();
let s = 12345;
const rnd = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const centres = Float32Array.from({ length: 64 * dim }, rnd);
const vectors = new Float32Array(n * dim);
for (let i = 0; i < n; i++) for (let d = 0; d < dim; d++) vectors[i * dim + d] = centres[(i % 64) * dim + d] + 0.3 * rnd();
const mb = (b) => (b / 2 ** 20).toFixed(1);
console.log(`== ${n} x ${dim}-d float32 (${mb(n * dim * 4)} MiB of vectors)`);
console.log("| bits | segment MiB | wasm memory after open, MiB (delta over init) | building process peak wasm memory MiB |");
console.log("|---:|---:|---:|---:|");
for (const bits of [1, 4]) {
  const col = new Collection({ dim, metric: "cosine" });
  col.insert({ ids: Float64Array.from({ length: n }, (_, i) => i), vectors });
  col.seal({ index: "ivf-rabitq", bits });
  writeFileSync(segPath(bits), col.toBytes());
  const peak = wasmMemoryBytes();
  col.free();
  const r = JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--child", segPath(bits)], { encoding: "utf8" }));
  console.log(`| ${bits} | ${mb(r.segment)} | ${mb(r.afterSearch)} (${mb(r.afterSearch - r.before)}) | ${mb(peak)} |`);
}
