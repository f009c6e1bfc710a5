// Throughput of the wasm distance kernels, SIMD128 build vs scalar build, in one Node process.
//
//   node bench/node/kernels.mjs [--bytes 8000000] [--ms 300]
//
// Each build's `KernelBench` holds one query and enough rows of `dim` floats to make about
// --bytes bytes (in cache-friendly territory for small dims, beyond L2 for large ones); the
// kernels (`dot_batch`, `l2_sq_batch`) run entirely inside wasm, timed from JS over calls of
// many iterations. GB/s counts the row bytes read.
// Needs the benchmark build of the package (bindings-js/pkg-bench: `make bench-node` makes it,
// or `SHOAL_JS_FEATURES=bench SHOAL_JS_PKG=pkg-bench bash bindings-js/scripts/build.sh`).
import { readFile } from "node:fs/promises";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}
const BYTES = arg("bytes", 8_000_000);
const MIN_MS = arg("ms", 300);
const DIMS = [50, 128, 384, 768, 1536];

async function load(variant) {
  const glue = await import(`../../bindings-js/pkg-bench/${variant}/shoal_js.js`);
  const wasm = await readFile(new URL(`../../bindings-js/pkg-bench/${variant}/shoal_js_bg.wasm`, import.meta.url));
  await glue.default({ module_or_path: wasm });
  return glue;
}
const builds = { simd: await load("simd"), scalar: await load("scalar") };
for (const [variant, glue] of Object.entries(builds)) {
  console.error(`${variant}: kernels ${glue.kernels_name()}`);
}

/** GB/s of `kernel` ("dot" or "l2") at `dim` for one build. */
function measure(glue, kernel, dim) {
  const rows = Math.max(1, Math.floor(BYTES / (dim * 4)));
  const bench = new glue.KernelBench(dim, rows);
  const run = (iters) => (kernel === "dot" ? bench.dot(iters) : bench.l2(iters));
  run(2); // warm up (and tier up)
  let iters = 1;
  let best = Infinity;
  let checksum = 0;
  // Grow the call until it lasts ≥ MIN_MS / 5, then keep the best of 5 such calls.
  for (;;) {
    const t0 = performance.now();
    checksum = run(iters);
    const ms = performance.now() - t0;
    if (ms >= MIN_MS / 5) {
      best = ms / iters;
      break;
    }
    iters *= 2;
  }
  for (let r = 0; r < 4; r++) {
    const t0 = performance.now();
    checksum += run(iters);
    best = Math.min(best, (performance.now() - t0) / iters);
  }
  bench.free();
  if (!Number.isFinite(checksum)) throw new Error("bad checksum");
  return (rows * dim * 4) / (best / 1000) / 1e9;
}

// Native numbers of the same workload, from `cargo bench -p shoal-kernels --bench same_as_wasm`.
let native = null;
try {
  native = JSON.parse(await readFile(new URL("../../target/bench/native-kernels.json", import.meta.url), "utf8"));
} catch {
  console.error("no target/bench/native-kernels.json: run `cargo bench -p shoal-kernels --bench same_as_wasm` for the native ratios");
}
const nativeBest = (kernel, dim, prefer) => {
  if (!native) return NaN;
  const rows = native.filter((r) => r.kernel === kernel && r.dim === dim);
  const hit = rows.find((r) => r.variant === prefer);
  return hit ? hit.gbps : Math.max(...rows.map((r) => r.gbps));
};

console.log(`wasm kernels: one query vs ~${(BYTES / 1e6).toFixed(0)} MB of rows, GB/s of rows read (best of 5)`);
console.log("| kernel | dim | simd128 GB/s | scalar GB/s | simd/scalar | native avx2 GB/s | simd128/avx2 |");
console.log("|---|---:|---:|---:|---:|---:|---:|");
for (const kernel of ["dot", "l2"]) {
  for (const dim of DIMS) {
    const simd = measure(builds.simd, kernel, dim);
    const scalar = measure(builds.scalar, kernel, dim);
    const avx2 = nativeBest(kernel, dim, "avx2");
    console.log(
      `| ${kernel} | ${dim} | ${simd.toFixed(2)} | ${scalar.toFixed(2)} | ${(simd / scalar).toFixed(2)} | ${avx2.toFixed(2)} | ${(simd / avx2).toFixed(2)} |`,
    );
  }
}

// The one-shot entry points agree between the builds (same data, same canonical order).
for (const dim of DIMS) {
  const a = builds.simd.bench_dot(dim, 100, 1);
  const b = builds.scalar.bench_dot(dim, 100, 1);
  if (a !== b) throw new Error(`bench_dot(${dim}) differs between builds: ${a} vs ${b}`);
}
