// Prefetch and fusion through the npm API: prefetches given with Float32Array vectors, fused by
// RRF (k, weights) and DBSF, equal to the formulas (in f32, Math.fround) over the same searches
// made alone with the outer filter; a vector re-scores the prefetched points exactly; bad
// shapes are invalid_request.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { fused } from "./fusion.mjs";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

describe("prefetch and fusion", () => {
  const dim = 8;
  const n = 500;
  const vectors = randomVectors(n, dim, 11);
  const payloads = Array.from({ length: n }, (_, i) => ({ tag: ["a", "b", "c"][i % 3], year: 1990 + (i % 40) }));
  const query = (seed) => randomVectors(1, dim, seed);
  const recent = { must: [{ key: "year", range: { gte: 2000 } }] };
  const tagA = { must: [{ key: "tag", match: { value: "a" } }] };

  for (const sealed of [false, true]) {
    it(`fuses prefetched searches as the formulas say (${sealed ? "sealed" : "unsealed"})`, () => {
      const col = new Collection({ dim, metric: "l2", fields: { tag: "keyword", year: "integer" } });
      col.insert({ ids: Float64Array.from({ length: n }, (_, i) => i), vectors, payloads });
      if (sealed) col.seal({ index: "ivf-rabitq" });
      const [q1, q2, q3] = [query(1), query(2), query(3)];
      const alone = [
        col.search({ vector: q1, limit: 30, filter: { must: [recent, tagA] } }).points,
        col.search({ vector: q2, limit: 20, filter: recent, params: { exact: true } }).points,
      ];
      const prefetch = [
        { vector: q1, limit: 30, filter: tagA },
        { vector: q2, limit: 20, params: { exact: true } },
      ];
      for (const [extra, how] of [
        [{}, { k: 61 }],
        [{ rrf_k: 2, weights: [2, 0.5] }, { k: 2, weights: [2, 0.5] }],
        [{ fusion: "dbsf" }, { dbsf: true, lower: [true, true] }],
      ]) {
        const res = col.search({ prefetch, filter: recent, limit: 10, offset: 1, with_payload: true, ...extra });
        const want = fused(alone, how).slice(1, 11);
        expect(res.points.map((p) => [p.id, p.score])).toEqual(want.map((p) => [p.id, p.score]));
        expect(res.points.every((p) => p.payload.year >= 2000)).toBe(true);
      }
      // A vector re-scores the union exactly: the same as an exact search restricted to it.
      const union = [...new Set(alone.flat().map((p) => p.id))];
      const rescored = col.search({ vector: q3, prefetch, filter: recent, limit: 10 });
      const exact = col.search({ vector: q3, limit: 10, params: { exact: true }, filter: { must: [{ has_id: union }] } });
      expect(rescored.points).toEqual(exact.points);
      // A threshold on squared distances.
      const t = exact.points[4].score;
      const all = col.search({ vector: q3, limit: 10, params: { exact: true } });
      const cut = col.search({ vector: q3, limit: 10, params: { exact: true }, score_threshold: t });
      expect(cut.points).toEqual(all.points.filter((p) => p.score <= t));
      expect(cut.points.length).toBeGreaterThanOrEqual(1);
    });
  }

  it("refuses requests that do not say how to rank", () => {
    const col = new Collection({ dim, metric: "dot" });
    col.insert({ ids: [1, 2], vectors: randomVectors(2, dim, 4) });
    const v = query(5);
    expect(expectShoalError(() => col.search({ prefetch: [{ vector: v }], text: "x" }), "invalid_request").message).toContain("`text` and `prefetch`");
    expect(expectShoalError(() => col.search({ prefetch: [{ vector: v }, { vector: v }], weights: [1] }), "invalid_request").message).toContain("weights");
    expect(expectShoalError(() => col.search({ prefetch: [{ vector: v, offset: 2 }] }), "invalid_request").message).toContain("top request");
    expect(expectShoalError(() => col.search({ vector: v, fusion: "dbsf" }), "invalid_request").message).toContain("fusion needs both");
  });
});
