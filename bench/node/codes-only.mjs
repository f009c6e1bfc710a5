// Codes-only segments in wasm (issue 7's memory target): the largest 128-d collection that
// searches at recall@10 >= 0.9 inside 128 MB of wasm memory (the Workers limit), with the full
// vectors left out. Each segment (built natively: `shoal build --index ivf-rabitq --bits B
// --codes-only`) is opened in a fresh Node process with `Collection.fromStream` (file chunks
// copied straight into wasm memory), then the dataset's queries run at the calibrated defaults
// and a few wider settings. Reports wasm memory, the JavaScript heap, recall@10 against the
// exact ground truth and QPS (one query at a time). `SEGMENT:VECTORS` also runs `searchLazy`:
// exact re-ranking with the rows' vectors read on demand from VECTORS (`shoal build
// --codes-only --vectors-out VECTORS`), one `FileHandle.read` per run of consecutive rows.
//
//   node bench/node/codes-only.mjs synthetic-1m-128 ~/.cache/shoal/codes-1m-128-b4.shoal [...]
import { execFileSync } from "node:child_process";
import { createReadStream, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { init, Collection, wasmMemoryBytes } from "../../bindings-js/js/index.js";
import { npy } from "./npy.mjs";

const MiB = 2 ** 20;
const LIMIT = 128 * MiB;

if (process.argv[2] === "--child") {
  const [, , , name, spec] = process.argv;
  const [path, vectorsPath] = spec.split(":");
  await init();
  const m0 = wasmMemoryBytes();
  const size = statSync(path).size;
  const t0 = performance.now();
  const col = await Collection.fromStream(createReadStream(path, { highWaterMark: 1 << 20 }), size);
  const openMs = performance.now() - t0;
  const m1 = wasmMemoryBytes();
  // The queries and the ground truth only (not the base vectors).
  const dir = join(homedir(), ".cache/shoal/datasets", name);
  const ds = { queries: await npy(join(dir, "queries.npy")), gt: await npy(join(dir, "gt.npy")) };
  const [nq, dim] = ds.queries.shape;
  const gtK = ds.gt.shape[1];
  const q = (i) => ds.queries.data.subarray(i * dim, (i + 1) * dim);
  const settings = [{}, ...(process.env.SHOAL_CODES_SWEEP ?? "32:8,64:16,64:32,128:32,128:64").split(",").map((p) => {
    const [nprobe, rerank] = p.split(":").map(Number);
    return { nprobe, rerank };
  })];
  const fh = vectorsPath ? await open(vectorsPath, "r") : null;
  let readBytes = 0;
  /** @param {number} offset @param {number} length */
  const read = async (offset, length) => {
    const b = Buffer.allocUnsafe(length);
    await fh.read(b, 0, length, offset);
    readBytes += length;
    return b;
  };
  const rows = [];
  for (const lazy of fh ? [false, true] : [false]) {
    const run = lazy ? (req) => col.searchLazy(req, read) : async (req) => col.search(req);
    for (const params of settings) {
      let hits = 0;
      readBytes = 0;
      for (let i = 0; i < nq; i++) {
        const res = await run({ vector: q(i), limit: 10, params });
        const truth = ds.gt.data.subarray(i * gtK, i * gtK + 10);
        for (const p of res.points) if (truth.includes(Number(p.id))) hits++;
      }
      const rowsRead = readBytes / (dim * 4) / nq;
      const times = [];
      for (let rep = 0; rep < 3; rep++) {
        const t = performance.now();
        for (let i = 0; i < nq; i++) await run({ vector: q(i), limit: 10, params });
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      rows.push({ lazy, params, recall: hits / (10 * nq), qps: (nq * 1000) / times[1], rowsRead });
    }
  }
  const mem = process.memoryUsage();
  console.log(JSON.stringify({
    points: col.len, codesOnly: col.codesOnly, segment: size, openMs, wasmBefore: m0, wasmAfterOpen: m1,
    wasmAfterSearch: wasmMemoryBytes(), jsHeapUsed: mem.heapUsed, arrayBuffers: mem.arrayBuffers, rows,
  }));
  process.exit(0);
}

const [name = "synthetic-1m-128", ...segments] = process.argv.slice(2);
if (segments.length === 0) {
  console.error("usage: node bench/node/codes-only.mjs DATASET SEGMENT...");
  process.exit(2);
}
const me = fileURLToPath(import.meta.url);
const mib = (b) => (b / MiB).toFixed(1);
for (const path of segments) {
  const r = JSON.parse(execFileSync(process.execPath, [me, "--child", name, path], { encoding: "utf8", maxBuffer: 1 << 24 }));
  console.log(`== ${path}: ${r.points} points, codes only: ${r.codesOnly}, segment ${mib(r.segment)} MiB, opened from a stream in ${r.openMs.toFixed(0)} ms`);
  console.log(`wasm memory: ${mib(r.wasmBefore)} MiB after init, ${mib(r.wasmAfterOpen)} MiB after open, ${mib(r.wasmAfterSearch)} MiB after the searches ` +
    `(${r.wasmAfterSearch <= LIMIT ? "within" : "OVER"} 128 MiB); JS heap ${mib(r.jsHeapUsed)} MiB, ArrayBuffers ${mib(r.arrayBuffers)} MiB (the dataset's queries and ground truth)`);
  console.log("| ranking | nprobe | rerank | recall@10 | QPS | vectors read per query |");
  console.log("|---|---|---|---:|---:|---:|");
  for (const row of r.rows) {
    const p = row.params;
    const how = row.lazy ? "exact, vectors read lazily" : "estimates (codes only)";
    console.log(`| ${how} | ${p.nprobe ?? "default"} | ${p.rerank ?? "default"} | ${row.recall.toFixed(4)} | ${row.qps.toFixed(0)} | ${row.lazy ? row.rowsRead.toFixed(1) : "-"} |`);
  }
}
