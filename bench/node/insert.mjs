// Bulk insert throughput of the npm package in Node, next to @orama/orama in the same process.
//
//   node bench/node/insert.mjs [--n 1000000] [--dim 128] [--runs 5] [--orama 100000] [--scalar]
//
// Shoal: N synthetic vectors (generated once), each run on a fresh Collection:
//   reserve/commit  reserve(N), one .set() into the vector view and one into the id view, commit
//   insert()        the convenience call (the same path plus argument checks)
// The median of the runs is reported as vectors/s and GB/s of vector data (f32).
// Orama: the first --orama vectors into a `vector[DIM]` field with insertMultiple, once.
// Needs the package built (npm run build --workspace bindings-js) and npm install at the root.
import { create, insertMultiple } from "@orama/orama";
import { Collection, init } from "../../bindings-js/js/index.js";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
const N = arg("n", 1_000_000);
const DIM = arg("dim", 128);
const RUNS = arg("runs", 5);
const ORAMA_N = Math.min(arg("orama", 100_000), N);
const forceScalar = process.argv.includes("--scalar");

const info = await init(forceScalar ? { simd: false } : {});

// Deterministic synthetic data (xorshift32 → [-1, 1)), generated once.
const vectors = new Float32Array(N * DIM);
let s = 0x2545f491;
for (let i = 0; i < vectors.length; i++) {
  s ^= s << 13;
  s >>>= 0;
  s ^= s >>> 17;
  s ^= s << 5;
  s >>>= 0;
  vectors[i] = s / 2 ** 31 - 1;
}
const ids = new Float64Array(N);
for (let i = 0; i < N; i++) ids[i] = i;
const bytes = vectors.byteLength;

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function time(f) {
  const t0 = performance.now();
  f();
  return (performance.now() - t0) / 1000;
}

function runShoal(name, fill) {
  const times = [];
  for (let r = 0; r < RUNS; r++) {
    const col = new Collection({ dim: DIM, metric: "l2" });
    times.push(time(() => fill(col)));
    if (col.len !== N) throw new Error(`${name}: expected ${N} points, got ${col.len}`);
    col.free();
  }
  return { name, seconds: median(times), n: N };
}

const results = [];
const phases = { reserve: [], fill: [], commit: [] };
results.push(
  runShoal("shoal reserve/commit", (col) => {
    const t0 = performance.now();
    const batch = col.reserve(N);
    const t1 = performance.now();
    batch.vectors.set(vectors);
    batch.idsAsNumbers.set(ids);
    const t2 = performance.now();
    batch.commit({ numberIds: true });
    const t3 = performance.now();
    phases.reserve.push(t1 - t0);
    phases.fill.push(t2 - t1);
    phases.commit.push(t3 - t2);
  }),
);
results.push(runShoal("shoal insert()", (col) => col.insert({ ids, vectors })));

// Orama: documents built before timing (plain arrays: its documented vector input).
const docs = new Array(ORAMA_N);
for (let i = 0; i < ORAMA_N; i++) {
  docs[i] = { id: String(i), embedding: Array.from(vectors.subarray(i * DIM, (i + 1) * DIM)) };
}
const db = create({ schema: { id: "string", embedding: `vector[${DIM}]` } });
const oramaSeconds = time(() => insertMultiple(db, docs, 1000));
const orama = { name: "orama insertMultiple", seconds: oramaSeconds, n: ORAMA_N };
results.push(orama);

const rate = (r) => r.n / r.seconds;
console.log(`insert: ${N} x ${DIM}-d f32 (${(bytes / 1e9).toFixed(2)} GB), median of ${RUNS} runs; kernels ${info.kernels}; orama ${ORAMA_N} once`);
console.log("| path | vectors | seconds | vectors/s | GB/s | x orama |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const r of results) {
  const gbs = (r.n * DIM * 4) / r.seconds / 1e9;
  console.log(
    `| ${r.name} | ${r.n} | ${r.seconds.toFixed(3)} | ${Math.round(rate(r)).toLocaleString("en-US")} | ${gbs.toFixed(2)} | ${(rate(r) / rate(orama)).toFixed(1)} |`,
  );
}
console.log(
  `reserve/commit phases (median ms): reserve ${median(phases.reserve).toFixed(1)}, ` +
    `fill ${median(phases.fill).toFixed(1)}, commit ${median(phases.commit).toFixed(1)}`,
);
