// Builds segment.shoal, the small segment the example worker bundles: 2,000 seeded 32-d
// vectors (ids 0..1999, l2) under an IVF + RaBitQ index with 4-bit codes. Any segment works,
// e.g. one written natively by `shoal build --index ivf-rabitq`.
//
//   node build-segment.mjs [out.shoal]
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { Collection, init } from "../../bindings-js/js/index.js";

export const DIM = 32;
export const COUNT = 2000;

/** xorshift32 floats in [-1, 1): the same generator the worker test uses for its queries. */
export function randomVectors(n, dim, seed) {
  let s = seed >>> 0 || 1;
  const v = new Float32Array(n * dim);
  for (let i = 0; i < v.length; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    v[i] = s / 2 ** 31 - 1;
  }
  return v;
}

export async function buildSegment() {
  await init();
  const col = new Collection({ dim: DIM, metric: "l2" });
  col.insert({ ids: Float64Array.from({ length: COUNT }, (_, i) => i), vectors: randomVectors(COUNT, DIM, 2024) });
  col.seal({ index: "ivf-rabitq", partitions: 24, seed: 7, bits: 4 });
  const bytes = col.toBytes();
  col.free();
  return bytes;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = process.argv[2] ?? new URL("./segment.shoal", import.meta.url);
  const bytes = await buildSegment();
  writeFileSync(out, bytes);
  console.log(`wrote ${out} (${bytes.length} bytes)`);
}
