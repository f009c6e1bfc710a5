// Several named dense vectors through the npm API: a collection of three ("image" cosine,
// "text" l2, "code" dot), points inserted with every one (numbers and UUIDs as ids), searched
// by name: each vector's exact answers equal, bit for bit, those of a one-vector collection
// holding only that vector; its IVF answers give each point its exact score; vectors come back
// by name; a segment round trip keeps every bit; bad input is a typed error that changes
// nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

const SPECS = { text: { dim: 9, metric: "l2" }, image: { dim: 6, metric: "cosine" }, code: { dim: 4, metric: "dot" } };

describe("named dense vectors", () => {
  const n = 400;
  const ids = Array.from({ length: n }, (_, i) => (i % 4 === 1 ? `00000000-0000-4000-8000-${String(i).padStart(12, "0")}` : i));
  const vectors = Object.fromEntries(Object.entries(SPECS).map(([name, s], k) => [name, randomVectors(n, s.dim, 11 + k)]));
  const payloads = ids.map((_, i) => ({ group: i % 3 }));
  const slice = (v, dim, a, b) => v.subarray(a * dim, b * dim);
  const part = (a, b) => Object.fromEntries(Object.entries(SPECS).map(([name, s]) => [name, slice(vectors[name], s.dim, a, b)]));

  function build(sealed) {
    const col = new Collection({ vectors: SPECS, fields: { group: "integer" } });
    col.insert({ ids: ids.slice(0, 300), vectors: part(0, 300), payloads: payloads.slice(0, 300) });
    if (sealed) col.seal({ index: "ivf-rabitq", partitions: 8, bits: 2 });
    col.insert({ ids: ids.slice(300), vectors: part(300, n), payloads: payloads.slice(300) });
    return col;
  }

  /** A one-vector collection with the same points and only vector `name`. */
  function alone(name) {
    const { dim, metric } = SPECS[name];
    const col = new Collection({ dim, metric, fields: { group: "integer" } });
    col.insert({ ids, vectors: vectors[name], payloads });
    return col;
  }

  for (const sealed of [false, true]) {
    it(`each vector answers as a collection of that vector alone (${sealed ? "a segment and unsealed rows" : "unsealed"})`, () => {
      const col = build(sealed);
      expect([col.dim, col.metric]).toEqual([4, "dot"]); // the first by name: "code"
      for (const [name, { dim }] of Object.entries(SPECS)) {
        const single = alone(name);
        const q = randomVectors(1, dim, 99);
        for (const filter of [null, { must: [{ key: "group", match: { value: 1 } }] }]) {
          const exact = { vector: q, using: name, limit: 10, filter, params: { exact: true } };
          const want = single.search({ ...exact, using: undefined }).points;
          expect(col.search(exact).points).toEqual(want);
          // IVF (defaults): each point found carries its exact score.
          const byId = new Map(single.search({ vector: q, limit: n, filter, params: { exact: true } }).points.map((p) => [p.id, p.score]));
          for (const p of col.search({ vector: q, using: name, limit: 10, filter }).points) expect(p.score).toBe(byId.get(p.id));
        }
        // Vectors by name, as stored (cosine ones normalised, as the single collection stores them).
        const got = col.get([ids[5], ids[301]], { withVector: name });
        expect(got.map((p) => p.vector)).toEqual(single.get([ids[5], ids[301]], { withVector: true }).map((p) => p.vector));
        single.free();
      }
      // A segment round trip keeps every bit.
      const again = Collection.fromBytes(col.toBytes());
      const q = randomVectors(1, 9, 7);
      expect(again.search({ vector: q, using: "text", limit: 10 }).points).toEqual(col.search({ vector: q, using: "text", limit: 10 }).points);
    });
  }

  it("refuses bad input with typed errors and changes nothing", () => {
    const col = new Collection({ vectors: SPECS });
    const one = part(0, 1);
    expect(expectShoalError(() => col.insert({ ids: [1], vectors: { code: one.code, image: one.image } }), "invalid_request").message).toContain("every point holds the dense vector \"text\"");
    expect(expectShoalError(() => col.insert({ ids: [1], vectors: { ...one, audio: one.code } }), "invalid_request").message).toContain("audio");
    expectShoalError(() => col.insert({ ids: [1], vectors: { ...one, text: one.text.subarray(1) } }), "length_mismatch");
    expectShoalError(() => col.insert({ ids: [1], vectors: { ...one, code: one.text } }), "length_mismatch");
    expectShoalError(() => col.insert({ ids: [1], vectors: one.code }), "invalid_request");
    expect(col.len).toBe(0);
    col.insert({ ids: [1], vectors: one });
    expect(expectShoalError(() => col.search({ vector: one.code }), "invalid_request").message).toContain("name the one");
    expect(expectShoalError(() => col.search({ vector: one.code, using: "audio" }), "invalid_request").message).toContain("audio");
    expectShoalError(() => col.search({ vector: one.code, using: "text" }), "dimension_mismatch");
    expectShoalError(() => col.get([1], { withVector: "audio" }), "invalid_request");
    expectShoalError(() => new Collection({ vectors: SPECS, dim: 4 }), "invalid_config");
    expectShoalError(() => new Collection({ vectors: { a: { dim: 0, metric: "l2" } } }), "invalid_config");
    expectShoalError(() => new Collection({ vectors: { a: { dim: 2, metric: "l2" } }, sparse: { a: {} } }), "invalid_config");
    expect(col.search({ vector: one.code, using: "code", limit: 1 }).points.map((p) => p.id)).toEqual([1]);
  });
});
