// Sparse vectors through the npm API: a collection with sparse vectors (one with the idf
// modifier), points inserted with them (some without, some empty; numbers, BigInts and UUIDs
// as ids), searched alone and fused with the dense vector; scores equal a dot product written
// out here (f32 via Math.fround, shared indices ascending); a segment round trip keeps every
// bit; bad input is a typed error that changes nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { fused } from "./fusion.mjs";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

/** A small deterministic generator (LCG) in [0, 1). */
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

/** A random sparse vector over indices 0..30 (maybe empty), or null. */
function randomSparse(r) {
  if (r() < 0.1) return null;
  const n = r() < 0.05 ? 0 : 1 + Math.floor(r() * 6);
  const indices = [];
  while (indices.length < n) {
    const i = Math.floor(r() * 30);
    if (!indices.includes(i)) indices.push(i);
  }
  return { indices, values: indices.map(() => Math.fround(r() * 4 - 1)) };
}

/** 0, plus w * x for each shared index, ascending, in f32; null when none is shared. */
function dot(q, x) {
  const stored = new Map(x.indices.map((i, k) => [i, x.values[k]]));
  const order = q.indices.map((i, k) => [i, q.values[k]]).sort((a, b) => a[0] - b[0]);
  let score = 0;
  let shared = false;
  for (const [i, w] of order) {
    if (stored.has(i)) {
      score = Math.fround(score + Math.fround(Math.fround(w) * stored.get(i)));
      shared = true;
    }
  }
  return shared ? score : null;
}

describe("sparse vectors", () => {
  const dim = 4;
  const n = 300;
  const r = rng(5);
  const ids = Array.from({ length: n }, (_, i) => (i % 5 === 1 ? `00000000-0000-4000-8000-${String(i).padStart(12, "0")}` : i));
  const plain = Array.from({ length: n }, () => randomSparse(r));
  const weighted = Array.from({ length: n }, () => randomSparse(r));
  const vectors = randomVectors(n, dim, 3);

  function build(sealed) {
    const col = new Collection({ dim, metric: "dot", sparse: { plain: {}, weighted: { modifier: "idf" } } });
    col.insert({ ids: ids.slice(0, 200), vectors: vectors.subarray(0, 200 * dim), sparse: { plain: plain.slice(0, 200), weighted: weighted.slice(0, 200) } });
    if (sealed) col.seal({ index: "ivf-rabitq" });
    col.insert({ ids: ids.slice(200), vectors: vectors.subarray(200 * dim), sparse: { plain: plain.slice(200) } });
    return col;
  }

  for (const sealed of [false, true]) {
    it(`scores equal a naive dot product (${sealed ? "one segment and unsealed rows" : "unsealed"})`, () => {
      const col = build(sealed);
      const q = randomSparse(rng(9)) ?? { indices: [1, 2], values: [1, 1] };
      q.indices.push(29);
      q.values.push(0.5);
      const got = col.search({ sparse: q, using: "plain", limit: 20 }).points;
      const want = ids
        .map((id, i) => ({ id, score: plain[i] && dot(q, plain[i]) }))
        .filter((p) => p.score !== null && p.score !== undefined)
        .sort((a, b) => b.score - a.score)
        .slice(0, 20);
      expect(got.map((p) => p.score)).toEqual(want.map((p) => p.score));
      expect(got.length).toBe(want.length);
      // Every point of the weighted vector is in the first 200: its idf is theirs.
      const holding = weighted.slice(0, 200).filter((w) => w !== null);
      const idf = (i) => {
        const df = holding.filter((w) => w.indices.includes(i)).length;
        return Math.fround(Math.log(1 + (holding.length - df + 0.5) / (df + 0.5)));
      };
      const qw = { indices: q.indices, values: q.values.map((v, k) => Math.fround(Math.fround(v) * idf(q.indices[k]))) };
      const gotW = col.search({ sparse: q, using: "weighted", limit: 10 }).points;
      const wantW = ids
        .slice(0, 200)
        .map((id, i) => ({ id, score: weighted[i] && dot(qw, weighted[i]) }))
        .filter((p) => p.score !== null && p.score !== undefined)
        .sort((a, b) => b.score - a.score)
        .slice(0, 10);
      expect(gotW.map((p) => p.id)).toEqual(wantW.map((p) => p.id));
      gotW.forEach((p, k) => expect(Math.abs(p.score - wantW[k].score)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(p.score))));
      // Fused with the dense vector: the formula over the two searches made alone.
      const dq = randomVectors(1, dim, 21);
      const alone = [col.search({ vector: dq, limit: 15 }).points, col.search({ sparse: q, using: "weighted", limit: 15 }).points];
      const res = col.search({ prefetch: [{ vector: dq, limit: 15 }, { sparse: q, using: "weighted", limit: 15 }], rrf_k: 2, limit: 10 });
      expect(res.points.map((p) => [p.id, p.score])).toEqual(fused(alone, { k: 2 }).slice(0, 10).map((p) => [p.id, p.score]));
      // A point's own sparse vector finds it: its score is the dot product with itself.
      const self7 = plain.findIndex((v, i) => i >= 3 && v && v.indices.length > 0);
      const own = col.search({ sparse: plain[self7], using: "plain", limit: n }).points.find((p) => p.id === ids[self7]);
      expect(own.score).toBe(dot(plain[self7], plain[self7]));
      // A segment round trip keeps every bit.
      const again = Collection.fromBytes(col.toBytes());
      expect(again.search({ sparse: q, using: "plain", limit: 20 }).points).toEqual(got);
      expect(again.search({ sparse: q, using: "weighted", limit: 10 }).points).toEqual(gotW);
    });
  }

  it("refuses bad sparse input with typed errors and changes nothing", () => {
    const col = new Collection({ dim, metric: "dot", sparse: { s: {} } });
    const v = new Float32Array(dim);
    expect(expectShoalError(() => col.insert({ ids: [1], vectors: v, sparse: { s: [{ indices: [1, 1], values: [1, 2] }] } }), "invalid_request").message).toContain("twice");
    expect(expectShoalError(() => col.insert({ ids: [1], vectors: v, sparse: { t: [{ indices: [1], values: [1] }] } }), "invalid_request").message).toContain("no sparse vector");
    expect(expectShoalError(() => col.insert({ ids: [1, 2], vectors: new Float32Array(2 * dim), sparse: { s: [null] } }), "invalid_request").message).toContain("one vector (or null) per point");
    expect(col.len).toBe(0);
    const two = new Collection({ dim, metric: "dot", sparse: { a: {}, b: {} } });
    expectShoalError(() => two.insert({ ids: [1], vectors: v, sparse: { a: [{ indices: [1], values: [1] }], b: [{ indices: [2, 2], values: [1, 1] }] } }), "invalid_request");
    // A failure after staging (bad payloads) stages nothing for later inserts either.
    expectShoalError(() => two.insert({ ids: [3], vectors: v, payloads: "bad", sparse: { a: [{ indices: [1], values: [1] }] } }), "invalid_payload");
    // Nothing staged is left for the next insert: point 2 holds no sparse vector.
    two.insert({ ids: [2], vectors: v });
    expect(two.search({ sparse: { indices: [1], values: [1] }, using: "a", limit: 5 }).points).toEqual([]);
    col.insert({ ids: [1], vectors: v, sparse: { s: [{ indices: [3], values: [2] }] } });
    expect(expectShoalError(() => col.search({ sparse: { indices: [3], values: [1] } }), "invalid_request").message).toContain("using");
    expect(expectShoalError(() => col.search({ sparse: { indices: [3], values: [1] }, using: "t" }), "invalid_request").message).toContain("no sparse vector");
    expectShoalError(() => new Collection({ dim, sparse: { "": {} } }), "invalid_config");
    expectShoalError(() => new Collection({ dim, sparse: { s: { modifier: "bm25" } } }), "invalid_config");
    expect(col.search({ sparse: { indices: [3], values: [1] }, using: "s" }).points).toEqual([{ id: 1, score: 2 }]);
  });
});
