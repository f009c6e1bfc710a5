// The shared edge scenario: one script, run unchanged in every JavaScript runtime the package
// supports (Node under vitest and as a plain script, headless Chromium, workerd, Deno). Each
// runtime loads the package its own way (`init()` with a path, a URL or a compiled module),
// then calls `runScenario(shoal)`; the JSON summaries must be identical everywhere.
//
// No runtime-specific API is used here: no `node:` imports, no `fetch`, no `process`.
//
// The summary lists, for every search, the ids (as decimal strings) and the f32 bit patterns
// of the scores (as hex), and for every segment its length and an FNV-1a hash of its bytes —
// so "identical" means identical ids, identical score bits and identical segment files.
//
// Hooks: payload filters and full text are being built; when they land, their steps go where
// the `features.payloads` / `features.text` branches are (they are off by default so every
// runtime runs the same steps).

/** Scenario version: bump it when the steps change (summaries of different versions differ). */
export const SCENARIO_VERSION = 1;

/** A deterministic generator (xorshift32) of floats in [-1, 1), identical in every engine. */
export function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 31 - 1;
  };
}

/** `n * dim` floats from [`rng`]. */
export function randomVectors(n, dim, seed) {
  const next = rng(seed);
  const v = new Float32Array(n * dim);
  for (let i = 0; i < v.length; i++) v[i] = next();
  return v;
}

/** Clustered data (so IVF partitions mean something): centres plus small noise. */
function clusteredVectors(n, dim, clusters, seed) {
  const centres = randomVectors(clusters, dim, seed ^ 0x9e3779b9);
  const noise = rng(seed);
  const v = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const c = (i * 7919) % clusters;
    for (let d = 0; d < dim; d++) v[i * dim + d] = centres[c * dim + d] + 0.25 * noise();
  }
  return v;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
function scoreBits(score) {
  f32[0] = score;
  return u32[0].toString(16).padStart(8, "0");
}

/** FNV-1a (32-bit) of a byte array, as hex. */
function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

function segmentInfo(bytes) {
  return { bytes: bytes.length, fnv1a: fnv1a(bytes) };
}

/** Runs `queries` (row-major) against `col`; one entry per query: ids and score bits. */
function searchAll(col, queries, dim, extra = {}) {
  const out = [];
  for (let q = 0; q < queries.length / dim; q++) {
    const res = col.search({ vector: queries.subarray(q * dim, (q + 1) * dim), limit: 10, ...extra });
    if (res.partial) throw new Error("scenario: unexpected partial result");
    out.push({
      ids: res.points.map((p) => String(p.id)),
      scores: res.points.map((p) => scoreBits(p.score)),
    });
  }
  return out;
}

/** Throws unless two JSON-able values are equal (used for the scenario's own invariants). */
function same(what, a, b) {
  const x = JSON.stringify(a);
  const y = JSON.stringify(b);
  if (x !== y) throw new Error(`scenario: ${what} differ:\n  ${x.slice(0, 300)}\n  ${y.slice(0, 300)}`);
}

/**
 * Runs the scenario with a loaded package (`init()` already awaited) and returns its summary.
 * @param {{ Collection: any }} shoal the package's exports
 * @param {{ features?: { payloads?: boolean, text?: boolean }, n?: number }} [opts]
 */
export function runScenario(shoal, opts = {}) {
  const { Collection } = shoal;
  const features = { payloads: false, text: false, ...(opts.features ?? {}) };
  const n = opts.n ?? 1500;
  const summary = { version: SCENARIO_VERSION, features, metrics: {} };

  for (const [metric, dim] of [
    ["l2", 37],
    ["cosine", 64],
    ["dot", 20],
  ]) {
    const out = {};
    const vectors = clusteredVectors(n, dim, 12, 1000 + dim);
    const queries = randomVectors(6, dim, 77 + dim);
    const col = new Collection({ dim, metric });

    // First half through the zero-copy path (reserve → fill → commit), with number ids written
    // through idsAsNumbers; second half through insert() with BigInt ids (one beyond 2^53).
    const half = Math.floor(n / 2);
    const batch = col.reserve(half);
    batch.vectors.set(vectors.subarray(0, half * dim));
    for (let i = 0; i < half; i++) batch.idsAsNumbers[i] = i * 3 + 1;
    out.committed = batch.commit({ numberIds: true });
    const bigIds = new BigUint64Array(n - half);
    for (let i = 0; i < bigIds.length; i++) bigIds[i] = BigInt((half + i) * 3 + 1);
    bigIds[bigIds.length - 1] = (1n << 60n) + 5n;
    out.inserted = col.insert({ ids: bigIds, vectors: vectors.subarray(half * dim) });
    // Upsert: an existing id gets a new vector.
    col.insert({ ids: [4], vectors: queries.subarray(0, dim) });

    if (features.payloads) {
      // Hook: payload columns and filtered searches go here.
    }
    if (features.text) {
      // Hook: text fields and BM25 / hybrid searches go here.
    }

    out.mutable = searchAll(col, queries, dim);

    // Deletes: existing ids, a missing one, before sealing.
    out.deleted = col.delete([1, 7, 10, 100000001, (half + 3) * 3 + 1]);
    out.afterDelete = searchAll(col, queries, dim);
    out.len = col.len;

    // Flat seal and a byte round trip.
    col.seal({ index: "flat" });
    out.flat = searchAll(col, queries, dim);
    same(`${metric}: flat vs mutable`, out.flat, out.afterDelete);
    const flatBytes = col.toBytes();
    out.flatSegment = segmentInfo(flatBytes);
    const flatAgain = Collection.fromBytes(flatBytes);
    same(`${metric}: flat after fromBytes`, searchAll(flatAgain, queries, dim), out.flat);
    flatAgain.free();

    // IVF + RaBitQ with 1 and 4 bits per dimension; default probing, a narrow probe and exact.
    for (const bits of [1, 4]) {
      col.seal({ index: "ivf-rabitq", partitions: 16, seed: 42, bits });
      const ivf = {
        index: col.index,
        default: searchAll(col, queries, dim),
        nprobe2: searchAll(col, queries, dim, { params: { nprobe: 2, rerank: 2 } }),
        exact: searchAll(col, queries, dim, { params: { exact: true } }),
      };
      same(`${metric}: ivf exact vs flat`, ivf.exact, out.flat);
      const bytes = col.toBytes();
      ivf.segment = segmentInfo(bytes);
      const again = Collection.fromBytes(bytes);
      same(`${metric}: ivf bits ${bits} after fromBytes`, searchAll(again, queries, dim), ivf.default);
      // A delete after sealing, then a round trip of the result.
      ivf.deletedAfterSeal = again.delete([13, 16]);
      ivf.afterSealDelete = searchAll(again, queries, dim);
      ivf.segmentAfterDelete = segmentInfo(again.toBytes());
      again.free();
      out[`ivfBits${bits}`] = ivf;
    }
    col.free();
    summary.metrics[metric] = out;
  }
  return summary;
}
