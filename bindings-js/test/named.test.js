// Several named dense vectors through the npm API: the package opens a segment of three dense
// vectors written natively (tests/golden/v1-named.shoal: "" cosine 12-d, "image" dot 6-d,
// "text" l2 9-d, the last two each with its own IVF index, stored by its own partitions) and
// searches each by name. Each vector's exact answers equal, bit for bit, those of a one-vector
// collection holding that vector's points as read back by name; its IVF answers give each
// point its exact score; filters and a set round trip keep it so. The package does not write
// such collections: creating one, or inserting into one, is a typed error that changes nothing.
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

  it("does not write collections of several dense vectors", () => {
    expectShoalError(() => new Collection({ vectors: { a: { dim: 2, metric: "l2" }, b: { dim: 3, metric: "l2" } } }), "unsupported");
    const col = Collection.fromBytes(readFileSync(GOLDEN));
    expectShoalError(() => col.insert({ ids: [1], vectors: new Float32Array(12) }), "unsupported");
    expect(col.len).toBe(64);
    expect(col.get([1000], { withPayload: false })).toEqual([{ id: 1000 }]);
  });
});
