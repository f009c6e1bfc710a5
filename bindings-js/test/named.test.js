// Several named dense vectors through the npm API: the package opens a segment of three dense
// vectors written natively (tests/golden/v1-named.shoal: "" cosine 12-d, "image" dot 6-d,
// "text" l2 9-d, the last two each with its own IVF index, stored by its own partitions) and
// searches each by name. Each vector's exact answers equal, bit for bit, those of a one-vector
// collection holding that vector's points as read back by name; its IVF answers give each
// point its exact score; filters and a set round trip keep it so. A collection of the same
// vectors written here from those points searches as the native segment does, before and
// after seals; bad writes are typed errors that change nothing.
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

const GOLDEN = new URL("../../tests/golden/v1-named.shoal", import.meta.url);
const VECTORS = { image: { dim: 6, metric: "dot" }, text: { dim: 9, metric: "l2" } };

describe("named dense vectors", () => {
  it("each vector of a native segment answers as a collection of that vector alone", () => {
    const col = Collection.fromBytes(readFileSync(GOLDEN));
    expect([col.len, col.dim, col.metric]).toEqual([64, 12, "cosine"]); // vector 0 is ""
    const all = col.scroll({ limit: 1000, withPayload: false }).points.map((p) => p.id);
    expect(all.length).toBe(64);
    for (const [name, { dim, metric }] of Object.entries(VECTORS)) {
      const points = col.get(all, { withVector: name, withPayload: false });
      const single = new Collection({ dim, metric });
      const flat = new Float32Array(points.length * dim);
      points.forEach((p, i) => flat.set(p.vector, i * dim));
      single.insert({ ids: points.map((p) => p.id), vectors: flat });
      for (let q = 0; q < 4; q++) {
        const vector = randomVectors(1, dim, 40 + q);
        for (const filter of [null, { must: [{ has_id: all.slice(0, 30) }] }]) {
          const exact = col.search({ vector, using: name, limit: 10, filter, params: { exact: true } }).points;
          expect(exact).toEqual(single.search({ vector, limit: 10, filter, params: { exact: true } }).points);
          const byId = new Map(single.search({ vector, limit: 64, filter }).points.map((p) => [p.id, p.score]));
          const ivf = col.search({ vector, using: name, limit: 10, filter }).points;
          expect(ivf.length).toBe(10);
          for (const p of ivf) expect(p.score).toBe(byId.get(p.id));
        }
      }
      single.free();
    }
    // The first vector by name ("") is the default; a name the collection lacks is refused.
    const q = randomVectors(1, 12, 3);
    expect(col.search({ vector: q, limit: 5 }).points).toEqual(col.search({ vector: q, using: "", limit: 5 }).points);
    expect(expectShoalError(() => col.search({ vector: q, using: "audio" }), "invalid_request").message).toContain("audio");
    expectShoalError(() => col.search({ vector: randomVectors(1, 9, 1), using: "image" }), "dimension_mismatch");
    expectShoalError(() => col.get(all, { withVector: "audio" }), "invalid_request");
  });

  it("writes collections of several dense vectors, which search as the native segment does", () => {
    const golden = Collection.fromBytes(readFileSync(GOLDEN));
    const all = golden.scroll({ limit: 1000, withPayload: false }).points.map((p) => p.id);
    const specs = { "": { dim: 12, metric: "cosine" }, ...VECTORS };
    /** Every point's vector `name` from the golden segment, row-major. */
    const flat = (/** @type {string} */ name, /** @type {any[]} */ ids) => {
      const { dim } = specs[name];
      const out = new Float32Array(ids.length * dim);
      golden.get(ids, { withVector: name, withPayload: false }).forEach((p, i) => out.set(p.vector, i * dim));
      return out;
    };
    const byName = (/** @type {any[]} */ ids) => Object.fromEntries(Object.keys(specs).map((n) => [n, flat(n, ids)]));
    const col = new Collection({ vectors: specs });
    expect([col.len, col.dim, col.metric]).toEqual([0, 12, "cosine"]);
    // Two batches, the second through a seal: unsealed and sealed rows searched together.
    expect(col.insert({ ids: all.slice(0, 40), vectors: byName(all.slice(0, 40)) })).toBe(40);
    col.seal();
    expect(col.insert({ ids: all.slice(40), vectors: byName(all.slice(40)) })).toBe(24);
    const same = (/** @type {Collection} */ c) => {
      for (const name of Object.keys(specs)) {
        for (let q = 0; q < 3; q++) {
          const vector = randomVectors(1, specs[name].dim, 70 + q);
          const request = { vector, using: name, limit: 10, params: { exact: true } };
          const [got, want] = [c.search(request).points, golden.search(request).points];
          if (specs[name].metric === "cosine") {
            // Normalised again on insert: the same ranking, scores within an ulp or two.
            expect(got.map((p) => p.id)).toEqual(want.map((p) => p.id));
            got.forEach((p, i) => expect(p.score).toBeCloseTo(want[i].score, 6));
          } else {
            expect(got).toEqual(want);
          }
        }
      }
      const got = c.get(all.slice(0, 3), { withVector: "text", withPayload: false });
      expect(got).toEqual(golden.get(all.slice(0, 3), { withVector: "text", withPayload: false }));
    };
    same(col);
    col.seal({ index: "ivf-rabitq", partitions: 4 });
    same(col);
    const reopened = Collection.fromBytes(col.toBytes());
    same(reopened);
    reopened.free();

    // Bad writes are typed errors that change nothing.
    const one = byName([all[0]]);
    expect(expectShoalError(() => col.insert({ ids: [1], vectors: one[""] }), "invalid_request").message).toContain("image");
    const { text: _text, ...missing } = one;
    expectShoalError(() => col.insert({ ids: [1], vectors: missing }), "invalid_request");
    expectShoalError(() => col.insert({ ids: [1], vectors: { ...one, audio: one.text } }), "invalid_request");
    expectShoalError(() => col.insert({ ids: [1], vectors: { ...one, image: new Float32Array(5) } }), "length_mismatch");
    expectShoalError(() => col.insert({ ids: [1], vectors: { ...one, text: new Float32Array(9).fill(NaN) } }), "non_finite");
    expect(expectShoalError(() => col.reserve(1), "invalid_request").message).toContain("insert()");
    expect(col.len).toBe(64);
    expect(col.get([1], { withPayload: false })).toEqual([]);
    same(col);
    expectShoalError(() => new Collection({ vectors: specs, dim: 12 }), "invalid_config");
    expectShoalError(() => new Collection({ vectors: { a: { dim: 0, metric: "l2" } } }), "invalid_config");
    col.free();
    golden.free();
  });
});
