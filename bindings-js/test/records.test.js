// Reading points back: get, count, scroll, the points() iterator, fields and extendSchema, on
// collections partly sealed, partly unsealed, with deletes — checked against what was inserted.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

describe("get, count, scroll, points, fields", () => {
  const fields = { tag: "keyword", year: "integer" };
  const dim = 6;
  const payloadOf = (i) => (i % 9 === 0 ? null : { tag: ["a", "b", "c"][i % 3], year: 2000 + (i % 20) });
  const passes = (p) => p !== null && p.tag !== "b" && p.year >= 2005;
  const filter = { must: [{ key: "year", range: { gte: 2005 } }], must_not: [{ key: "tag", match: { value: "b" } }] };

  /** Ids 0, 5, 10, ... in a shuffled order, half of them sealed, a few deleted after the seal. */
  function build(metric = "l2", n = 240) {
    const col = new Collection({ dim, metric, fields });
    const order = Array.from({ length: n }, (_, i) => (i * 97) % n);
    const vectors = randomVectors(n, dim, 41);
    const vectorOf = new Map(order.map((i, r) => [i * 5, vectors.slice(r * dim, (r + 1) * dim)]));
    const payloadOfId = new Map(order.map((i) => [i * 5, payloadOf(i)]));
    const half = n / 2;
    col.insert({ ids: order.slice(0, half).map((i) => i * 5), vectors: vectors.subarray(0, half * dim), payloads: order.slice(0, half).map(payloadOf) });
    col.seal();
    col.insert({ ids: order.slice(half).map((i) => i * 5), vectors: vectors.subarray(half * dim), payloads: order.slice(half).map(payloadOf) });
    const deleted = [0, 35, 600, 1195];
    expect(col.delete(deleted)).toBe(4);
    const live = [...vectorOf.keys()].filter((id) => !deleted.includes(id)).sort((a, b) => a - b);
    return { col, vectorOf, payloadOfId, live, deleted };
  }

  it("get returns the points asked, in that order, with payloads and stored vectors", () => {
    const { col, vectorOf, payloadOfId, deleted } = build();
    const ask = [1190, 5, 7, 35, 600, 10, 3000, 5];
    const got = col.get(ask, { withVector: true });
    const want = ask.filter((id) => vectorOf.has(id) && !deleted.includes(id));
    expect(got.map((p) => p.id)).toEqual(want);
    for (const p of got) {
      expect(p.payload).toEqual(payloadOfId.get(p.id) ?? {});
      expect(p.vector).toBeInstanceOf(Float32Array);
      expect(p.vector).toEqual(vectorOf.get(p.id));
    }
    // Defaults: payloads, no vectors; withPayload: false leaves payloads out.
    expect(col.get([10])).toEqual([{ id: 10, payload: payloadOfId.get(10) }]);
    expect(col.get(10, { withPayload: false })).toEqual([{ id: 10 }]);
    expect(col.get([], { withVector: true })).toEqual([]);
    // Every id type of delete; the same answers before and after a seal and through bytes.
    for (const ids of [[5, 10], new Float64Array([5, 10]), new Uint32Array([5, 10]), new BigUint64Array([5n, 10n]), [5n, 10]]) {
      expect(col.get(ids).map((p) => p.id)).toEqual([5, 10]);
    }
    const before = col.get([...vectorOf.keys()], { withVector: true });
    col.seal();
    expect(col.get([...vectorOf.keys()], { withVector: true })).toEqual(before);
    const copy = Collection.fromBytes(col.toBytes());
    expect(copy.get([...vectorOf.keys()], { withVector: true })).toEqual(before);
    // An upsert replaces both.
    const v = new Float32Array([1, 2, 3, 4, 5, 6]);
    col.insert({ ids: [10], vectors: v, payloads: [{ tag: "z" }] });
    expect(col.get([10], { withVector: true })).toEqual([{ id: 10, payload: { tag: "z" }, vector: v }]);
    copy.free();
    col.free();
  });

  it("get: cosine vectors come back normalised; big ids as BigInt; bad ids throw invalid_id", () => {
    const col = new Collection({ dim: 3, metric: "cosine" });
    const big = 2n ** 60n + 1n;
    col.insert({ ids: [1n, big], vectors: new Float32Array([3, 0, 4, 0, 2, 0]) });
    const [a, b] = col.get([1, big], { withVector: true });
    expect(a.id).toBe(1);
    expect(b.id).toBe(big);
    // No fields: the payload is {}.
    expect(a.payload).toEqual({});
    expect(Array.from(a.vector)).toEqual([Math.fround(0.6), 0, Math.fround(0.8)]);
    expect(Array.from(b.vector)).toEqual([0, 1, 0]);
    for (const bad of [[-1], [1.5], [2 ** 53 + 2], ["1"], [Number.NaN], [2n ** 64n]]) {
      expectShoalError(() => col.get(bad), "invalid_id");
    }
    expectShoalError(() => col.get("1"), "invalid_id");
    expectShoalError(() => col.get([1], "yes"), "invalid_argument");
    col.free();
  });

  it("count counts the points passing a filter; a bad filter throws like search", () => {
    const { col, payloadOfId, live } = build();
    const want = live.filter((id) => passes(payloadOfId.get(id))).length;
    expect(want).toBeGreaterThan(20);
    expect(col.count()).toBe(live.length);
    expect(col.count(null)).toBe(col.len);
    expect(col.count(filter)).toBe(want);
    expect(col.count({ must: [{ has_id: [5, 10, 35, 99] }] })).toBe(2);
    col.seal();
    expect(col.count(filter)).toBe(want);
    for (const bad of [{ must: [{ key: "nope", match: { value: 1 } }] }, { must: [{ key: "year", match: { value: "x" } }] }, { bogus: 1 }, [1]]) {
      const searched = expectShoalError(() => col.search({ vector: new Float32Array(dim), filter: bad }), "invalid_request");
      const counted = expectShoalError(() => col.count(bad), "invalid_request");
      if (!Array.isArray(bad)) expect(counted.message).toBe(searched.message);
    }
    const cyclic = /** @type {any} */ ({ must: [] });
    cyclic.must.push(cyclic);
    expectShoalError(() => col.count(cyclic), "invalid_request");
    expect(col.count({ must: [{ key: "year", range: { gte: 1n } }] })).toBe(col.count({ must: [{ key: "year", range: { gte: 1 } }] }));
    col.free();
  });

  it("scroll pages cover every matching point once, ids ascending, deleted points left out", () => {
    const { col, vectorOf, payloadOfId, live } = build();
    const matching = live.filter((id) => passes(payloadOfId.get(id)));
    for (const [f, want] of [[undefined, live], [filter, matching]]) {
      for (const limit of [1, 7, 100, 1000]) {
        const seen = [];
        let after = null;
        let pages = 0;
        for (;;) {
          const page = col.scroll({ filter: f, limit, after });
          pages++;
          expect(page.points.length).toBeLessThanOrEqual(limit);
          seen.push(...page.points.map((p) => p.id));
          for (const p of page.points) {
            expect(p.payload).toEqual(payloadOfId.get(p.id) ?? {});
            expect("vector" in p).toBe(false);
          }
          if (page.next === null) break;
          expect(page.next).toBe(page.points[page.points.length - 1].id);
          after = page.next;
        }
        expect(seen).toEqual(want);
        expect(pages).toBe(Math.max(1, Math.ceil(want.length / limit)));
      }
    }
    // Defaults: the first 100; `after` need not be an id in the collection.
    expect(col.scroll().points.map((p) => p.id)).toEqual(live.slice(0, 100));
    expect(col.scroll({ after: 7, limit: 2 }).points.map((p) => p.id)).toEqual([10, 15]);
    expect(col.scroll({ after: 10n ** 15n })).toEqual({ points: [], next: null });
    const page = col.scroll({ limit: 3, withPayload: false, withVector: true });
    expect(page.points).toEqual(live.slice(0, 3).map((id) => ({ id, vector: vectorOf.get(id) })));
    for (const limit of [0, -1, 1.5, "3", 2 ** 32 - 1, 2 ** 32]) expectShoalError(() => col.scroll({ limit }), "invalid_argument");
    expectShoalError(() => col.scroll({ after: -1 }), "invalid_id");
    expectShoalError(() => col.scroll({ filter: { must: [{ key: "nope", match: { value: 1 } }] } }), "invalid_request");
    col.free();
  });

  it("points() iterates over every matching point, page by page", async () => {
    const { col, vectorOf, payloadOfId, live } = build();
    const matching = live.filter((id) => passes(payloadOfId.get(id)));
    const all = [];
    for await (const p of col.points({ filter, limit: 9, withVector: true })) all.push(p);
    expect(all.map((p) => p.id)).toEqual(matching);
    for (const p of all) {
      expect(p.payload).toEqual(payloadOfId.get(p.id) ?? {});
      expect(p.vector).toEqual(vectorOf.get(p.id));
    }
    const ids = [];
    for await (const p of col.points()) ids.push(p.id);
    expect(ids).toEqual(live);
    // Points deleted during the iteration, before their page is read, are skipped.
    const seen = [];
    for await (const p of col.points({ limit: 10, withPayload: false })) {
      seen.push(p.id);
      if (seen.length === 1) col.delete([live[15], live[50]]);
    }
    expect(seen).toEqual(live.filter((id) => id !== live[15] && id !== live[50]));
    await expect(col.points({ limit: 0 }).next()).rejects.toMatchObject({ code: "invalid_argument" });
    await expect(col.points({ filter: { bogus: 1 } }).next()).rejects.toMatchObject({ code: "invalid_request" });
    col.free();
  });

  it("fields and extendSchema: the schema, new fields usable at once, errors that change nothing", () => {
    const plain = new Collection({ dim: 2 });
    expect(plain.fields).toEqual({});
    plain.insert({ ids: [1, 2], vectors: [1, 0, 0, 1] });
    expect(plain.extendSchema({ n: "integer" })).toEqual({ n: "integer" });
    plain.insert({ ids: [3], vectors: [1, 1], payloads: [{ n: 4 }] });
    expect(plain.count({ must: [{ key: "n", match: { value: 4 } }] })).toBe(1);
    expect(plain.get([1, 3])).toEqual([{ id: 1, payload: {} }, { id: 3, payload: { n: 4 } }]);
    plain.free();

    const { col } = build();
    expect(col.fields).toEqual(fields);
    // Given again with their types: nothing changes; a new field is added beside them.
    expect(col.extendSchema({ tag: "keyword" })).toEqual(fields);
    expect(col.extendSchema({ title: "text", score: "float" })).toEqual({ ...fields, title: "text", score: "float" });
    col.insert({ ids: [7], vectors: new Float32Array(dim), payloads: [{ tag: "a", score: 2.5, title: "hello there" }] });
    expect(col.count({ must: [{ key: "score", range: { gt: 2 } }] })).toBe(1);
    expect(col.search({ text: "hello", limit: 3 }).points.map((p) => p.id)).toEqual([7]);
    const now = col.fields;
    expectShoalError(() => col.extendSchema({ year: "float" }), "invalid_request");
    expectShoalError(() => col.extendSchema({ x: "string" }), "invalid_config");
    expectShoalError(() => col.extendSchema({ "": "integer" }), "invalid_config");
    expectShoalError(() => col.extendSchema({ t2: "text_en" }), "invalid_config");
    for (const bad of [null, [], "tag", 3]) expectShoalError(() => col.extendSchema(bad), "invalid_config");
    expect(col.fields).toEqual(now);
    // The schema travels with the segment.
    const copy = Collection.fromBytes(col.toBytes());
    expect(copy.fields).toEqual(now);
    expect(copy.get([7])).toEqual([{ id: 7, payload: { tag: "a", score: 2.5, title: "hello there" } }]);
    copy.free();
    col.free();
  });

  it("codes-only collections: payloads and counts, but no vectors and no new fields", () => {
    const { col, payloadOfId, live } = build();
    col.seal({ index: "ivf-rabitq", partitions: 4, bits: 2, codesOnly: true });
    expect(col.codesOnly).toBe(true);
    expect(col.get([5, 10])).toEqual([5, 10].map((id) => ({ id, payload: payloadOfId.get(id) ?? {} })));
    expect(col.count(filter)).toBe(live.filter((id) => passes(payloadOfId.get(id))).length);
    expect(col.scroll({ limit: 2 }).points.map((p) => p.id)).toEqual(live.slice(0, 2));
    expectShoalError(() => col.get([5], { withVector: true }), "codes_only");
    expectShoalError(() => col.scroll({ withVector: true }), "codes_only");
    expect(col.fields).toEqual(fields);
    expect(col.extendSchema({ year: "integer" })).toEqual(fields);
    expectShoalError(() => col.extendSchema({ extra: "integer" }), "codes_only");
    expect(col.fields).toEqual(fields);
    col.free();
  });

  it("a freed collection refuses them", () => {
    const { col } = build();
    col.free();
    expectShoalError(() => col.get([5]), "freed");
    expectShoalError(() => col.count(), "freed");
    expectShoalError(() => col.scroll(), "freed");
    expectShoalError(() => col.fields, "freed");
    expectShoalError(() => col.extendSchema({ a: "integer" }), "freed");
  });
});
