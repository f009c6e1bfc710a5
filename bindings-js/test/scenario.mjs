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
// Every collection carries payloads (keyword, integer, float and text fields); the scenario
// searches with filters, with text alone (BM25) and with vector + text (hybrid, RRF), in the
// mutable segment, after a flat seal, after IVF seals and after byte round trips.

/** Scenario version: bump it when the steps change (summaries of different versions differ). */
export const SCENARIO_VERSION = 2;

const FIELDS = { title: "text", tag: "keyword", year: "integer", price: "float" };
const VOCAB = ["blue", "whale", "ocean", "salt", "reef", "storm", "wave", "shoal", "Kelp", "tide", "café", "coral"];
const TAGS = ["a", "b", "c", "d"];
const FILTER = {
  must: [{ key: "tag", match: { any: ["a", "b"] } }],
  must_not: [{ key: "year", range: { lt: 1990 } }],
};
const TEXTS = ["whale", "ocean salt", '"blue whale"', "+reef -storm", "cafe coral"];

/** The payload of point number `i` (deterministic; some points have none, some no title). */
function payload(i) {
  if (i % 29 === 0) return null;
  const next = rng(i + 7);
  const words = [];
  const len = 2 + (i % 4);
  for (let w = 0; w < len; w++) words.push(VOCAB[Math.floor((next() + 1) * 6) % VOCAB.length]);
  const doc = { tag: TAGS[i % 4], year: 1970 + (i % 50), price: (i % 1000) / 8 };
  if (i % 5 !== 0) doc.title = words.join(" ");
  if (i % 11 === 0) doc.tag = [TAGS[i % 4], "z"];
  return doc;
}

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

function summarizeResponse(res) {
  if (res.partial) throw new Error("scenario: unexpected partial result");
  return { ids: res.points.map((p) => String(p.id)), scores: res.points.map((p) => scoreBits(p.score)) };
}

/** Runs `queries` (row-major) against `col`; one entry per query: ids and score bits. */
function searchAll(col, queries, dim, extra = {}) {
  const out = [];
  for (let q = 0; q < queries.length / dim; q++) {
    out.push(summarizeResponse(col.search({ vector: queries.subarray(q * dim, (q + 1) * dim), limit: 10, ...extra })));
  }
  return out;
}

/** Filtered, text, filtered text and hybrid searches; each result checked against its filter. */
function searchPayloads(col, queries, dim) {
  const out = { filtered: searchAll(col, queries, dim, { filter: FILTER, with_payload: true }) };
  const res = col.search({ vector: queries.subarray(0, dim), limit: 10, filter: FILTER, with_payload: true });
  for (const p of res.points) {
    const tags = [p.payload.tag].flat();
    if (!(tags.includes("a") || tags.includes("b")) || p.payload.year < 1990) {
      throw new Error(`scenario: point ${p.id} does not pass the filter: ${JSON.stringify(p.payload)}`);
    }
  }
  out.text = TEXTS.map((text) => summarizeResponse(col.search({ text, limit: 10 })));
  if (out.text.every((r) => r.ids.length === 0)) throw new Error("scenario: text queries found nothing");
  out.textFiltered = TEXTS.map((text) => summarizeResponse(col.search({ text, limit: 10, filter: FILTER })));
  out.hybrid = TEXTS.map((text, q) =>
    summarizeResponse(
      col.search({ vector: queries.subarray((q % 6) * dim, (q % 6 + 1) * dim), text, limit: 10, fusion: "rrf" }),
    ),
  );
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
 * @param {{ n?: number }} [opts]
 */
export function runScenario(shoal, opts = {}) {
  const { Collection } = shoal;
  const n = opts.n ?? 1500;
  const summary = { version: SCENARIO_VERSION, metrics: {} };

  for (const [metric, dim] of [
    ["l2", 37],
    ["cosine", 64],
    ["dot", 20],
  ]) {
    const out = {};
    const vectors = clusteredVectors(n, dim, 12, 1000 + dim);
    const queries = randomVectors(6, dim, 77 + dim);
    const col = new Collection({ dim, metric, fields: FIELDS });

    // First half through the zero-copy path (reserve → fill → commit), with number ids written
    // through idsAsNumbers; second half through insert() with BigInt ids (one beyond 2^53).
    const half = Math.floor(n / 2);
    const batch = col.reserve(half);
    batch.vectors.set(vectors.subarray(0, half * dim));
    for (let i = 0; i < half; i++) batch.idsAsNumbers[i] = i * 3 + 1;
    out.committed = batch.commit({ numberIds: true, payloads: Array.from({ length: half }, (_, i) => payload(i)) });
    const bigIds = new BigUint64Array(n - half);
    for (let i = 0; i < bigIds.length; i++) bigIds[i] = BigInt((half + i) * 3 + 1);
    bigIds[bigIds.length - 1] = (1n << 60n) + 5n;
    out.inserted = col.insert({
      ids: bigIds,
      vectors: vectors.subarray(half * dim),
      payloads: Array.from({ length: n - half }, (_, i) => payload(half + i)),
    });
    // Upsert: an existing id gets a new vector and a new payload.
    col.insert({ ids: [4], vectors: queries.subarray(0, dim), payloads: [{ title: "whale whale shoal", tag: "a", year: 2001 }] });
    const upserted = col.search({ vector: queries.subarray(0, dim), limit: 1, with_payload: true, filter: { must: [{ has_id: [4] }] } });
    same(`${metric}: upserted payload`, upserted.points[0].payload, { tag: "a", title: "whale whale shoal", year: 2001 });
    out.mutablePayloads = searchPayloads(col, queries, dim);

    out.mutable = searchAll(col, queries, dim);

    // Deletes: existing ids, a missing one, before sealing.
    out.deleted = col.delete([1, 7, 10, 100000001, (half + 3) * 3 + 1]);
    out.afterDelete = searchAll(col, queries, dim);
    out.len = col.len;

    // Flat seal and a byte round trip.
    col.seal({ index: "flat" });
    out.flat = searchAll(col, queries, dim);
    same(`${metric}: flat vs mutable`, out.flat, out.afterDelete);
    out.flatPayloads = searchPayloads(col, queries, dim);
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
      ivf.payloads = searchPayloads(col, queries, dim);
      const bytes = col.toBytes();
      ivf.segment = segmentInfo(bytes);
      const again = Collection.fromBytes(bytes);
      same(`${metric}: ivf bits ${bits} after fromBytes`, searchAll(again, queries, dim), ivf.default);
      same(`${metric}: payload searches after fromBytes`, searchPayloads(again, queries, dim), ivf.payloads);
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
