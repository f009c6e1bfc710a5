// The npm API: inserts, searches, deletes, upserts, seal, byte round trips, the zero-copy batch
// path, id types, and typed errors that change nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, ShoalError, init, wasmMemoryBytes } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { randomVectors } from "./scenario.mjs";

let info;
beforeAll(async () => {
  info = await init();
});

/** Brute-force top-k in f64: [{ id, score }] best first (ties by insertion order). */
function bruteForce(metric, ids, vectors, dim, query, k) {
  const norm = (v) => {
    let s = 0;
    for (const x of v) s += x * x;
    s = Math.sqrt(s);
    return s === 0 ? v : v.map((x) => x / s);
  };
  const q = metric === "cosine" ? norm(Array.from(query)) : Array.from(query);
  const scored = [];
  for (let r = 0; r < ids.length; r++) {
    let row = Array.from(vectors.subarray(r * dim, (r + 1) * dim));
    if (metric === "cosine") row = norm(row);
    let score = 0;
    for (let i = 0; i < dim; i++) score += metric === "l2" ? (row[i] - q[i]) ** 2 : row[i] * q[i];
    scored.push({ id: ids[r], score, r });
  }
  const sign = metric === "l2" ? 1 : -1;
  scored.sort((a, b) => sign * (a.score - b.score) || a.r - b.r);
  return scored.slice(0, k);
}

/** A small collection with ids 100.. and random vectors. */
function filled(metric = "l2", n = 50, dim = 8) {
  const col = new Collection({ dim, metric });
  const ids = Array.from({ length: n }, (_, i) => 100 + i);
  const vectors = randomVectors(n, dim, 7);
  col.insert({ ids, vectors });
  return { col, ids, vectors, dim };
}

describe("init", () => {
  it("loads the SIMD128 build on Node and returns the same result twice", async () => {
    expect(info.simd).toBe(true);
    expect(info.kernels).toBe("simd128");
    const again = await init({ simd: false });
    expect(again).toBe(info);
  });
});

describe("insert and search", () => {
  for (const metric of ["l2", "dot", "cosine"]) {
    it(`nearest neighbours match a brute force (${metric})`, () => {
      const dim = 19;
      const n = 300;
      const col = new Collection({ dim, metric });
      expect(col.dim).toBe(dim);
      expect(col.metric).toBe(metric);
      expect(col.kernels).toBe("simd128");
      const ids = Array.from({ length: n }, (_, i) => i * 3 + 1);
      const vectors = randomVectors(n, dim, 11);
      expect(col.insert({ ids, vectors })).toBe(n);
      expect(col.len).toBe(n);
      const queries = randomVectors(20, dim, 12);
      for (let q = 0; q < 20; q++) {
        const query = queries.subarray(q * dim, (q + 1) * dim);
        const res = col.search({ vector: query, limit: 5 });
        const want = bruteForce(metric, ids, vectors, dim, query, 5);
        expect(res.points.map((p) => p.id)).toEqual(want.map((p) => p.id));
        res.points.forEach((p, i) => expect(p.score).toBeCloseTo(want[i].score, 4));
        expect(res.partial).toBe(false);
        expect(res.stats).toEqual({ scanned: n, estimated: 0, segments: 1, exact: true });
        // The same query as a plain array gives the same answer.
        expect(col.search({ vector: Array.from(query), limit: 5 })).toEqual(res);
      }
      col.free();
    });
  }

  it("reports wasm memory, which grows with the data", () => {
    const before = wasmMemoryBytes();
    expect(before).toBeGreaterThan(0);
    const col = new Collection({ dim: 64, metric: "l2" });
    col.insert({ ids: Float64Array.from({ length: 50_000 }, (_, i) => i), vectors: new Float32Array(50_000 * 64) });
    expect(wasmMemoryBytes()).toBeGreaterThanOrEqual(before);
    expect(wasmMemoryBytes()).toBeGreaterThanOrEqual(50_000 * 64 * 4);
    col.free();
  });

  it("accepts ids as number[], Uint32Array, Float64Array, BigUint64Array and BigInt[]", () => {
    const dim = 3;
    const col = new Collection({ dim, metric: "l2" });
    col.insert({ ids: [1, 2], vectors: [1, 0, 0, 2, 0, 0] });
    col.insert({ ids: new Uint32Array([3, 4]), vectors: new Float32Array([3, 0, 0, 4, 0, 0]) });
    col.insert({ ids: new Float64Array([5]), vectors: [5, 0, 0] });
    col.insert({ ids: new BigUint64Array([6n]), vectors: [6, 0, 0] });
    col.insert({ ids: [7n, 8], vectors: [7, 0, 0, 8, 0, 0] });
    expect(col.len).toBe(8);
    const res = col.search({ vector: [0, 0, 0], limit: 8 });
    expect(res.points.map((p) => p.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(res.points.map((p) => p.score)).toEqual([1, 4, 9, 16, 25, 36, 49, 64]);
  });

  it("returns ids beyond 2^53 as BigInt and safe ids as numbers", () => {
    const col = new Collection({ dim: 2, metric: "l2" });
    const big = [2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 7n, 2n ** 64n - 1n];
    col.insert({ ids: new BigUint64Array(big), vectors: [0, 0, 1, 0, 2, 0, 3, 0] });
    const ids = col.search({ vector: [0, 0], limit: 4 }).points.map((p) => p.id);
    expect(ids).toEqual([Number.MAX_SAFE_INTEGER, 2n ** 53n, 2n ** 53n + 7n, 2n ** 64n - 1n]);
    expect(typeof ids[0]).toBe("number");
    // 2^53 itself is accepted as a number id.
    col.insert({ ids: [2 ** 53], vectors: [9, 9] });
    expect(col.len).toBe(4);
    expect(col.search({ vector: [9, 9], limit: 1 }).points[0].id).toBe(2n ** 53n);
    // Deleting by BigInt works, and survives a round trip.
    expect(col.delete([2n ** 64n - 1n])).toBe(1);
    const again = Collection.fromBytes(col.toBytes());
    expect(again.search({ vector: [0, 0], limit: 4 }).points.map((p) => p.id)).toEqual([
      Number.MAX_SAFE_INTEGER,
      2n ** 53n + 7n,
      2n ** 53n,
    ]);
    // BigInt ids in a filter (has_id) are the integers they are, in search, count and scroll.
    const filter = { must: [{ has_id: [2n ** 53n + 7n, 1] }] };
    expect(again.search({ vector: [0, 0], limit: 4, filter }).points.map((p) => p.id)).toEqual([2n ** 53n + 7n]);
    expect(again.count(filter)).toBe(1);
    expect(again.scroll({ filter: { must_not: [{ has_id: [2n ** 53n] }] } }).points.map((p) => p.id)).toEqual([
      Number.MAX_SAFE_INTEGER,
      2n ** 53n + 7n,
    ]);
    // A text holding what a marked BigInt looks like stays text.
    expect(() => again.search({ vector: [0, 0], limit: 1, filter: { must: [{ key: "x", match: { value: "\u0000bigint:5" } }] } })).toThrow(ShoalError);
  });

  it("upserts: an existing id gets the new vector", () => {
    const { col, ids, dim } = filled();
    const v = new Float32Array(dim).fill(50);
    col.insert({ ids: [ids[3]], vectors: v });
    expect(col.len).toBe(ids.length);
    const top = col.search({ vector: v, limit: 1 }).points[0];
    expect(top).toEqual({ id: ids[3], score: 0 });
    // Upsert into a sealed segment too.
    col.seal();
    const w = new Float32Array(dim).fill(-50);
    col.insert({ ids: [ids[3]], vectors: w });
    expect(col.len).toBe(ids.length);
    expect(col.search({ vector: w, limit: 1 }).points[0]).toEqual({ id: ids[3], score: 0 });
    expect(col.search({ vector: v, limit: ids.length }).points.filter((p) => p.id === ids[3])).toHaveLength(1);
  });

  it("delete removes points, returns how many existed, before and after seal", () => {
    const { col, ids, vectors, dim } = filled();
    expect(col.delete([ids[0], ids[1], 99999])).toBe(2);
    expect(col.delete(new BigUint64Array([BigInt(ids[0])]))).toBe(0);
    expect(col.len).toBe(ids.length - 2);
    col.seal();
    expect(col.delete(new Uint32Array([ids[2]]))).toBe(1);
    expect(col.delete(ids[3])).toBe(1);
    expect(col.len).toBe(ids.length - 4);
    const res = col.search({ vector: vectors.subarray(0, dim), limit: ids.length });
    const got = new Set(res.points.map((p) => p.id));
    expect(got.size).toBe(ids.length - 4);
    for (const id of ids.slice(0, 4)) expect(got.has(id)).toBe(false);
  });

  it("limit and offset page through the results", () => {
    const { col, dim } = filled("dot");
    const q = randomVectors(1, dim, 3);
    const all = col.search({ vector: q, limit: 20 }).points;
    const page = col.search({ vector: q, limit: 5, offset: 10 }).points;
    expect(page).toEqual(all.slice(10, 15));
    expect(col.search({ vector: q }).points).toHaveLength(10);
  });
});

describe("seal, toBytes, fromBytes", () => {
  it("give the same results and the same bytes", () => {
    const { col, ids, dim } = filled("cosine", 200, 16);
    col.delete(ids.slice(0, 10));
    const queries = randomVectors(10, dim, 5);
    const before = [];
    for (let q = 0; q < 10; q++) before.push(col.search({ vector: queries.subarray(q * dim, (q + 1) * dim), limit: 7 }));
    col.seal({ index: "flat" });
    col.verify();
    const bytes = col.toBytes();
    expect(bytes).toBeInstanceOf(Uint8Array);
    const again = Collection.fromBytes(bytes);
    again.verify();
    expect(again.len).toBe(190);
    expect(again.dim).toBe(dim);
    expect(again.metric).toBe("cosine");
    for (let q = 0; q < 10; q++) {
      const query = queries.subarray(q * dim, (q + 1) * dim);
      const a = col.search({ vector: query, limit: 7 });
      const b = again.search({ vector: query, limit: 7 });
      expect(a.points).toEqual(before[q].points);
      expect(b.points).toEqual(before[q].points);
    }
    expect(Buffer.from(again.toBytes()).equals(Buffer.from(bytes))).toBe(true);
    // fromBytes also takes an ArrayBuffer or an unaligned view.
    const padded = new Uint8Array(bytes.length + 3);
    padded.set(bytes, 3);
    expect(Collection.fromBytes(padded.subarray(3)).len).toBe(190);
    expect(Collection.fromBytes(bytes.slice().buffer).len).toBe(190);
    // An empty collection round-trips too.
    const empty = new Collection({ dim: 4, metric: "dot" });
    const e2 = Collection.fromBytes(empty.toBytes());
    expect(e2.len).toBe(0);
    expect(e2.search({ vector: [1, 2, 3, 4] }).points).toEqual([]);
  });
});

describe("IVF + RaBitQ index", () => {
  it("seals an index that finds the exact neighbours and survives toBytes/fromBytes", () => {
    const dim = 32;
    const n = 4000;
    const col = new Collection({ dim, metric: "cosine" });
    col.insert({ ids: Array.from({ length: n }, (_, i) => i), vectors: randomVectors(n, dim, 21) });
    expect(col.index).toBe("flat");
    // 1-bit codes (32-d would default to 4): at 32-d their error bounds are wide enough that
    // deep re-ranking of every partition reaches every true neighbour. Extra bits' tighter
    // bounds can skip one (a bound is 3 standard deviations, not a guarantee); `exact` is exact.
    col.seal({ index: "ivf-rabitq", partitions: 32, seed: 5, bits: 1 });
    expect(col.index).toBe("ivf-rabitq");
    const queries = randomVectors(50, dim, 22);
    let hits = 0;
    for (let q = 0; q < 50; q++) {
      const vector = queries.subarray(q * dim, (q + 1) * dim);
      // Uniform random data has no clusters, IVF's worst case: probe half the partitions.
      const approx = col.search({ vector, limit: 10, params: { nprobe: 16 } });
      const exact = col.search({ vector, limit: 10, params: { exact: true } });
      expect(approx.stats.exact).toBe(false);
      expect(approx.stats.estimated).toBeGreaterThan(0);
      expect(exact.stats.exact).toBe(true);
      const want = new Set(exact.points.map((p) => p.id));
      hits += approx.points.filter((p) => want.has(p.id)).length;
      // Probing every partition with deep re-ranking is exact.
      const all = col.search({ vector, limit: 10, params: { nprobe: 32, rerank: 1000 } });
      expect(all.points).toEqual(exact.points);
    }
    expect(hits / 500).toBeGreaterThanOrEqual(0.9);
    const again = Collection.fromBytes(col.toBytes());
    expect(again.index).toBe("ivf-rabitq");
    const vector = queries.subarray(0, dim);
    expect(again.search({ vector, limit: 10 })).toEqual(col.search({ vector, limit: 10 }));
    // Later seals keep the index; { index: "flat" } drops it.
    col.insert({ ids: [n], vectors: new Float32Array(dim).fill(1) });
    col.seal();
    expect(col.index).toBe("ivf-rabitq");
    col.seal({ index: "flat" });
    expect(col.index).toBe("flat");
    expect(col.search({ vector, limit: 10 }).stats.exact).toBe(true);
  });

  it("extra bits (extended RaBitQ) keep recall with fewer exact distances", () => {
    const dim = 32;
    const n = 4000;
    const queries = randomVectors(50, dim, 22);
    const runs = [];
    for (const bits of [1, 4]) {
      const col = new Collection({ dim, metric: "cosine" });
      col.insert({ ids: Array.from({ length: n }, (_, i) => i), vectors: randomVectors(n, dim, 21) });
      col.seal({ index: "ivf-rabitq", partitions: 32, seed: 5, bits });
      const again = Collection.fromBytes(col.toBytes());
      let hits = 0;
      let exactDistances = 0;
      for (let q = 0; q < 50; q++) {
        const vector = queries.subarray(q * dim, (q + 1) * dim);
        const approx = again.search({ vector, limit: 10, params: { nprobe: 16, rerank: 32 } });
        expect(approx).toEqual(col.search({ vector, limit: 10, params: { nprobe: 16, rerank: 32 } }));
        exactDistances += approx.stats.scanned;
        const want = new Set(col.search({ vector, limit: 10, params: { exact: true } }).points.map((p) => p.id));
        hits += approx.points.filter((p) => want.has(p.id)).length;
      }
      runs.push({ bits, recall: hits / 500, exactDistances });
      col.free();
      again.free();
    }
    expect(runs[1].recall).toBeGreaterThanOrEqual(runs[0].recall - 0.01);
    expect(runs[1].exactDistances * 2).toBeLessThan(runs[0].exactDistances);
  });
});

describe("codes-only collections and lazy re-ranking", () => {
  const dim = 24;
  const n = 3000;
  const fields = { g: "integer" };
  const build = () => {
    const col = new Collection({ dim, metric: "l2", fields });
    col.insert({
      ids: Array.from({ length: n }, (_, i) => i * 3),
      vectors: randomVectors(n, dim, 31),
      payloads: Array.from({ length: n }, (_, i) => ({ g: i % 10 })),
    });
    return col;
  };
  const queries = randomVectors(40, dim, 32);
  const q = (i) => queries.subarray(i * dim, (i + 1) * dim);

  it("searchLazy reads only the rows it needs and answers like the vectors in memory", async () => {
    const full = build();
    full.seal({ index: "ivf-rabitq", partitions: 24, seed: 3, bits: 4 });
    const { segment, vectors } = full.splitVectors();
    expect(vectors.byteLength).toBe(n * dim * 4);
    const codes = Collection.fromBytes(segment);
    expect(codes.codesOnly).toBe(true);
    expect(full.codesOnly).toBe(false);
    let reads = 0;
    let bytesRead = 0;
    const read = async (offset, length) => {
      reads++;
      bytesRead += length;
      return vectors.slice(offset, offset + length);
    };
    for (let i = 0; i < 40; i++) {
      for (const req of [{ vector: q(i), limit: 10 }, { vector: q(i), limit: 5, filter: { must: [{ key: "g", match: { value: 4 } }] }, with_payload: true }]) {
        const lazy = await codes.searchLazy(req, read);
        const inMemory = full.search(req);
        expect(lazy.points).toEqual(inMemory.points);
      }
    }
    // Far fewer rows than the collection, in fewer reads than rows (consecutive rows coalesce).
    expect(bytesRead / (dim * 4) / 80).toBeLessThan(n / 10);
    expect(reads).toBeLessThanOrEqual(bytesRead / (dim * 4));
    // Estimates alone (no reads) still find most of them.
    const est = codes.search({ vector: q(0), limit: 10 });
    expect(est.points.length).toBe(10);
    codes.free();
    full.free();
  });

  it("a codes-only collection refuses changes; bad reads and wrong collections throw", async () => {
    const col = build();
    col.seal({ index: "ivf-rabitq", partitions: 16, seed: 2, bits: 3, codesOnly: true });
    expect(col.codesOnly).toBe(true);
    expectShoalError(() => col.insert({ ids: [1], vectors: new Float32Array(dim) }), "codes_only");
    expectShoalError(() => col.delete([0]), "codes_only");
    expectShoalError(() => col.search({ vector: q(0), limit: 3, params: { exact: true } }), "codes_only");
    expectShoalError(() => col.splitVectors(), "codes_only");
    expectShoalError(() => col.seal({ index: "ivf-rabitq", codesOnly: true }), "invalid_request");
    // Options are camelCase: the request JSON's spelling is refused with the right name.
    const plain = build();
    expect(() => plain.seal({ index: "ivf-rabitq", bits: 2, codes_only: true })).toThrow(/spelled codesOnly/);
    expect(plain.codesOnly).toBe(false);
    plain.free();
    expect(col.len).toBe(n);
    const flat = build();
    flat.seal();
    await expect(flat.searchLazy({ vector: q(0), limit: 3 }, () => new Uint8Array(0))).rejects.toMatchObject({ code: "invalid_request" });
    expectShoalError(() => flat.splitVectors(), "invalid_request");
    const ivf = build();
    ivf.seal({ index: "ivf-rabitq", partitions: 16, bits: 2 });
    // Changes after the seal are sealed into the split.
    ivf.delete([0]);
    const codes = Collection.fromBytes(ivf.splitVectors().segment);
    expect(codes.len).toBe(n - 1);
    await expect(codes.searchLazy({ vector: q(0), limit: 3 }, () => new Uint8Array(4))).rejects.toMatchObject({ code: "invalid_argument" });
    for (const c of [col, flat, ivf, codes]) c.free();
  });

  it("fromStream copies chunks straight into wasm memory and checks the length", async () => {
    const col = build();
    col.seal({ index: "ivf-rabitq", partitions: 16, seed: 2, bits: 3 });
    const bytes = col.toBytes();
    const chunks = async function* (b, size) {
      for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
    };
    const a = await Collection.fromStream(chunks(bytes, 1000), bytes.length);
    const b = await Collection.fromStream(new Blob([bytes]).stream(), bytes.length);
    expect(a.search({ vector: q(1), limit: 5 })).toEqual(col.search({ vector: q(1), limit: 5 }));
    expect(b.toBytes()).toEqual(bytes);
    // Over what one wasm32 allocation can be (2 GiB): refused before anything is read.
    await expect(Collection.fromStream(chunks(bytes, 4096), 2 ** 31)).rejects.toMatchObject({ code: "invalid_argument" });
    // A stream longer than announced is refused, and cancelled rather than left open.
    let cancelled = false;
    const longer = new ReadableStream({
      start(c) {
        c.enqueue(bytes.slice());
        c.enqueue(bytes.slice(0, 64));
      },
      cancel() {
        cancelled = true;
      },
    });
    await expect(Collection.fromStream(longer, bytes.length)).rejects.toMatchObject({ code: "bad_segment" });
    expect(cancelled).toBe(true);
    await expect(Collection.fromStream(chunks(bytes, 4096), bytes.length + 64)).rejects.toMatchObject({ code: "bad_segment" });
    await expect(Collection.fromStream(chunks(bytes, 4096), bytes.length - 64)).rejects.toMatchObject({ code: "bad_segment" });
    for (const c of [col, a, b]) c.free();
  });
});

describe("reserve/commit", () => {
  it("fills wasm memory in place", () => {
    const dim = 4;
    const col = new Collection({ dim, metric: "l2" });
    const batch = col.reserve(3);
    expect(batch.length).toBe(3);
    expect(batch.ids).toBeInstanceOf(BigUint64Array);
    expect(batch.ids.length).toBe(3);
    expect(batch.vectors).toBeInstanceOf(Float32Array);
    expect(batch.vectors.length).toBe(3 * dim);
    batch.ids.set([10n, 20n, 2n ** 63n]);
    for (let i = 0; i < 3 * dim; i++) batch.vectors[i] = Math.floor(i / dim);
    expect(col.len).toBe(0); // nothing visible before commit
    expect(batch.commit()).toBe(3);
    expect(col.len).toBe(3);
    const res = col.search({ vector: [2, 2, 2, 2], limit: 3 });
    expect(res.points.map((p) => p.id)).toEqual([2n ** 63n, 20, 10]);
    // Committing twice is an error and changes nothing.
    expectShoalError(() => batch.commit(), "no_pending_batch");
    expect(col.len).toBe(3);
  });

  it("takes number ids through idsAsNumbers", () => {
    const col = new Collection({ dim: 2, metric: "dot" });
    const batch = col.reserve(2);
    batch.idsAsNumbers.set([5, 2 ** 53]);
    batch.vectors.set([1, 0, 0, 1]);
    expect(batch.commit({ numberIds: true })).toBe(2);
    expect(col.search({ vector: [1, 0], limit: 2 }).points.map((p) => p.id)).toEqual([5, 2n ** 53n]);
  });

  it("a later reserve replaces an uncommitted batch", () => {
    const col = new Collection({ dim: 2, metric: "l2" });
    const first = col.reserve(2);
    first.ids.set([1n, 2n]);
    const second = col.reserve(1);
    second.ids.set([3n]);
    second.vectors.set([1, 1]);
    expectShoalError(() => first.commit(), "no_pending_batch");
    expect(second.commit()).toBe(1);
    expect(col.len).toBe(1);
    expect(col.search({ vector: [1, 1], limit: 5 }).points.map((p) => p.id)).toEqual([3]);
  });

  it("reserve(0) and an empty insert are no-ops", () => {
    const col = new Collection({ dim: 2, metric: "l2" });
    expect(col.reserve(0).commit()).toBe(0);
    expect(col.insert({ ids: [], vectors: [] })).toBe(0);
    expect(col.len).toBe(0);
  });

  it("a batch larger than wasm memory can hold is capacity_exceeded, and nothing changes", () => {
    // 16,383 x 65,536-d: under the 2^32 bytes the JavaScript check allows, over what one wasm32
    // allocation can be (2 GiB). It was a trap ("unreachable") before.
    const col = new Collection({ dim: 65536 });
    col.insert({ ids: [7], vectors: new Float32Array(65536).fill(0.25) });
    expectShoalError(() => col.reserve(16383), "capacity_exceeded");
    expect(col.len).toBe(1);
    expect(col.search({ vector: new Float32Array(65536).fill(0.25), limit: 1 }).points[0].id).toBe(7);
    col.free();
  });

  it("refuses a batch whose views were detached by memory growth", () => {
    const dim = 16;
    const col = new Collection({ dim, metric: "l2" });
    col.insert({ ids: [1], vectors: new Float32Array(dim) });
    const batch = col.reserve(2);
    batch.ids.set([7n, 8n]);
    // Allocate in another collection until wasm memory grows and detaches the views.
    const other = new Collection({ dim, metric: "l2" });
    for (let n = 1 << 16; batch.vectors.byteLength !== 0 && n <= 1 << 24; n *= 2) other.reserve(n);
    expect(batch.vectors.byteLength).toBe(0);
    expectShoalError(() => batch.commit(), "detached_batch");
    expect(col.len).toBe(1);
    other.free();
    // The collection still works.
    col.insert({ ids: [2], vectors: new Float32Array(dim).fill(1) });
    expect(col.len).toBe(2);
  });
});

describe("payloads and filters", () => {
  const fields = { tag: "keyword", year: "integer", price: "float", stock: "bool", title: "text" };
  const tags = ["red", "green", "blue", "gold"];

  /** Payload of point i: every shape (absent, null, one value, several). */
  function payloadOf(i) {
    if (i % 17 === 0) return null;
    const p = { year: 1990 + (i % 30), title: `point ${i}` };
    if (i % 5 !== 0) p.tag = i % 7 === 0 ? [tags[i % 4], tags[(i + 1) % 4]] : tags[i % 4];
    if (i % 3 !== 0) p.price = (i % 100) / 4;
    if (i % 2 === 0) p.stock = i % 4 === 0;
    return p;
  }

  /** The reference filter of these tests, evaluated on the payload object. */
  function passes(p) {
    if (!p) return false;
    const t = p.tag === undefined ? [] : [].concat(p.tag);
    return t.some((x) => x === "red" || x === "gold") && p.year >= 2000 && !(p.stock === false);
  }
  const filter = {
    must: [
      { key: "tag", match: { any: ["red", "gold"] } },
      { key: "year", range: { gte: 2000 } },
    ],
    must_not: [{ key: "stock", match: { value: false } }],
  };

  function build(n = 600, dim = 12) {
    const col = new Collection({ dim, metric: "l2", fields });
    const ids = Array.from({ length: n }, (_, i) => 1000 + i);
    const vectors = randomVectors(n, dim, 21);
    const payloads = ids.map((_, i) => payloadOf(i));
    col.insert({ ids, vectors, payloads });
    return { col, ids, vectors, payloads, dim };
  }

  function check(col, ids, vectors, payloads, dim, exact) {
    const keep = ids.map((_, i) => passes(payloads[i]));
    const mIds = ids.filter((_, i) => keep[i]);
    const mVec = new Float32Array(mIds.length * dim);
    let j = 0;
    ids.forEach((_, i) => {
      if (keep[i]) mVec.set(vectors.subarray(i * dim, (i + 1) * dim), dim * j++);
    });
    expect(mIds.length).toBeGreaterThan(20);
    const q = randomVectors(1, dim, 5);
    for (const limit of [1, 10, 20]) {
      const want = bruteForce("l2", mIds, mVec, dim, q, limit).map((p) => p.id);
      const params = exact ? { exact: true } : {};
      const res = col.search({ vector: q, limit, filter, with_payload: true, params });
      expect(res.points.length).toBe(limit);
      if (exact) expect(res.points.map((p) => p.id)).toEqual(want);
      for (const p of res.points) {
        const i = p.id - 1000;
        expect(keep[i]).toBe(true);
        expect(p.payload).toEqual(payloads[i] ?? {});
      }
      // Without with_payload, points carry no payload field.
      const plain = col.search({ vector: q, limit, filter, params });
      expect(plain.points.map((p) => p.id)).toEqual(res.points.map((p) => p.id));
      expect(plain.points.every((p) => !("payload" in p))).toBe(true);
    }
  }

  it("filter and return payloads before and after seal, with an IVF index and through bytes", () => {
    const { col, ids, vectors, payloads, dim } = build();
    check(col, ids, vectors, payloads, dim, true);
    col.seal();
    check(col, ids, vectors, payloads, dim, true);
    col.seal({ index: "ivf-rabitq", partitions: 8 });
    check(col, ids, vectors, payloads, dim, false);
    check(col, ids, vectors, payloads, dim, true);
    const again = Collection.fromBytes(col.toBytes());
    again.verify();
    check(again, ids, vectors, payloads, dim, true);
    expect(Buffer.from(again.toBytes()).equals(Buffer.from(col.toBytes()))).toBe(true);
  });

  it("batch.commit(payloads), upserts replace payloads, has_id", () => {
    const col = new Collection({ dim: 2, metric: "l2", fields });
    const batch = col.reserve(3);
    batch.ids.set([1n, 2n, 3n]);
    batch.vectors.set([0, 0, 1, 1, 2, 2]);
    expect(batch.commit([{ tag: "red" }, { tag: ["blue", "red"], year: 2001 }, null])).toBe(3);
    const ids = (f) => col.search({ vector: [0, 0], filter: f, limit: 10 }).points.map((p) => p.id);
    const red = { must: [{ key: "tag", match: { value: "red" } }] };
    expect(ids(red)).toEqual([1, 2]);
    col.seal();
    const b2 = col.reserve(1);
    b2.idsAsNumbers.set([2]);
    b2.vectors.set([1, 1]);
    b2.commit({ numberIds: true, payloads: [{ tag: "green" }] });
    expect(ids(red)).toEqual([1]);
    expect(ids({ must: [{ has_id: [2, 3, 99] }] })).toEqual([2, 3]);
    expect(ids({ must: [{ is_empty: { key: "tag" } }] })).toEqual([3]);
    const res = col.search({ vector: [1, 1], limit: 1, with_payload: true });
    expect(res.points[0]).toEqual({ id: 2, score: 0, payload: { tag: "green" } });
  });

  it("text_en fields match by English stems, before and after seal and through bytes", () => {
    const fields = { title: "text_en", tag: "keyword" };
    let col = new Collection({ dim: 2, fields });
    col.insert({
      ids: [1, 2, 3],
      vectors: [0, 1, 1, 0, 0.5, 0.5],
      payloads: [{ title: "Whales running" }, { title: "runs a whale" }, { title: "generously salted" }],
    });
    const ids = (text) => col.search({ text, limit: 10 }).points.map((p) => p.id).sort();
    for (let round = 0; round < 3; round++) {
      expect(ids("run")).toEqual([1, 2]);
      expect(ids('"whale running"')).toEqual([1]);
      expect(ids("salt")).toEqual([3]);
      if (round === 0) col.seal();
      else col = Collection.fromBytes(col.toBytes());
    }
    const plain = new Collection({ dim: 2, fields: { title: "text" } });
    plain.insert({ ids: [1], vectors: [0, 1], payloads: [{ title: "Whales running" }] });
    expect(plain.search({ text: "run", limit: 10 }).points).toEqual([]);
    expectShoalError(() => new Collection({ dim: 2, fields: { a: "text", b: "text_en" } }), "invalid_config");
  });

  it("weighted fusion and BM25 parameters, checked like every request field", () => {
    const col = new Collection({ dim: 2, fields: { title: "text" } });
    col.insert({
      ids: [1, 2, 3],
      vectors: [0, 1, 1, 0, 0.9, 0.1],
      payloads: [{ title: "whale" }, { title: "whale whale reef" }, { title: "reef" }],
    });
    // alpha 1: the vector ranking alone (squared distances scaled: the nearest scores 1).
    const v = col.search({ vector: [1, 0], text: "whale", fusion: "weighted", alpha: 1 });
    expect(v.points[0]).toEqual({ id: 2, score: 1 });
    // alpha 0: the text ranking alone.
    const t = col.search({ vector: [1, 0], text: "whale", fusion: "weighted", alpha: 0 });
    expect(t.points.map((p) => p.id).slice(0, 2)).toEqual(col.search({ text: "whale" }).points.map((p) => p.id));
    const plain = col.search({ text: "whale" }).points;
    const flat = col.search({ text: "whale", bm25_k1: 1.2, bm25_b: 0 }).points;
    expect(flat).not.toEqual(plain);
    expectShoalError(() => col.search({ vector: [1, 0], text: "whale", fusion: "weighted", alpha: 2 }), "invalid_request");
    expectShoalError(() => col.search({ text: "whale", bm25_b: 1.5 }), "invalid_request");
  });

  it("a selective filter on an IVF index still returns limit results", () => {
    const n = 4000;
    const dim = 16;
    const col = new Collection({ dim, metric: "l2", fields: { bucket: "integer" } });
    const ids = Array.from({ length: n }, (_, i) => i);
    col.insert({ ids, vectors: randomVectors(n, dim, 3), payloads: ids.map((i) => ({ bucket: i % 200 })) });
    col.seal({ index: "ivf-rabitq", partitions: 32 });
    for (const [f, matching] of [
      [{ must: [{ key: "bucket", match: { value: 7 } }] }, 20],
      [{ must: [{ key: "bucket", range: { lt: 4 } }] }, 80],
    ]) {
      for (const limit of [10, 50]) {
        const res = col.search({ vector: randomVectors(1, dim, limit), limit, filter: f, with_payload: true });
        expect(res.points.length).toBe(Math.min(limit, matching));
        expect(res.points.every((p) => f.must[0].match ? p.payload.bucket === 7 : p.payload.bucket < 4)).toBe(true);
      }
    }
  });

  it("bad payloads, filters and fields throw typed errors and change nothing", () => {
    const { col, dim } = build(50, 4);
    const q = new Float32Array(dim).fill(0.5);
    const before = col.search({ vector: q, limit: 50, with_payload: true });
    const v = new Float32Array(2 * dim);
    for (const [bad, path] of [
      [{ year: "2000" }, "payload.year"],
      [{ year: 1.5 }, "payload.year"],
      [{ colour: "red" }, "payload.colour"],
      [{ tag: ["a", 1] }, "payload.tag[1]"],
      [[1], "payload"],
    ]) {
      const err = expectShoalError(() => col.insert({ ids: [1000, 5000], vectors: v, payloads: [{}, bad] }), "invalid_payload");
      expect(err.message).toContain("point 1");
      expect(err.message).toContain(path);
      const batch = col.reserve(2);
      batch.ids.set([1001n, 5001n]);
      expectShoalError(() => batch.commit([{ tag: "x" }, bad]), "invalid_payload");
    }
    expectShoalError(() => col.insert({ ids: [1000, 5000], vectors: v, payloads: [{}] }), "length_mismatch");
    expectShoalError(() => col.insert({ ids: [1000, 5000], vectors: v, payloads: "nope" }), "invalid_payload");
    for (const [f, path] of [
      [{ must: [{ key: "colour", match: { value: "red" } }] }, "filter.must[0].key"],
      [{ must: [{ key: "tag", range: { gte: 1 } }] }, "filter.must[0].range"],
      [{ must: [{ key: "year", match: { value: "2000" } }] }, "filter.must[0].match.value"],
      [{ must_nt: [] }, "filter.must_nt"],
    ]) {
      const err = expectShoalError(() => col.search({ vector: q, filter: f }), "invalid_request");
      expect(err.message).toContain(path);
    }
    expect(col.len).toBe(50);
    expect(col.search({ vector: q, limit: 50, with_payload: true })).toEqual(before);
    expectShoalError(() => new Collection({ dim: 2, fields: { a: "string" } }), "invalid_config");
    expectShoalError(() => new Collection({ dim: 2, fields: ["keyword"] }), "invalid_config");
    // Without fields, payloads may only be empty.
    const plain = new Collection({ dim: 2 });
    expect(plain.insert({ ids: [1], vectors: [0, 0], payloads: [{}] })).toBe(1);
    expectShoalError(() => plain.insert({ ids: [2], vectors: [0, 0], payloads: [{ tag: "a" }] }), "invalid_payload");
    expect(plain.len).toBe(1);
  });
});

describe("bad input throws a ShoalError and changes nothing", () => {
  /** Asserts that `f` throws `code` and that the collection answers exactly as before. */
  function rejects(col, f, code, dim = col.dim) {
    const q = new Float32Array(dim).fill(0.25);
    const len = col.len;
    const before = col.search({ vector: q, limit: 10 });
    const err = expectShoalError(f, code);
    expect(col.len).toBe(len);
    expect(col.search({ vector: q, limit: 10 })).toEqual(before);
    return err;
  }

  it("wrong query dimension → dimension_mismatch", () => {
    const { col } = filled();
    const err = rejects(col, () => col.search({ vector: [1, 2, 3], limit: 3 }), "dimension_mismatch");
    expect(err.message).toMatch(/expected 8, got 3/);
  });

  it("NaN or infinity in vectors → non_finite", () => {
    const { col, dim } = filled();
    const bad = randomVectors(3, dim, 1);
    bad[dim + 2] = NaN;
    const err = rejects(col, () => col.insert({ ids: [1, 2, 3], vectors: bad }), "non_finite");
    expect(err.message).toMatch(/point 1/);
    bad[dim + 2] = Infinity;
    rejects(col, () => col.insert({ ids: [1, 2, 3], vectors: bad }), "non_finite");
    rejects(col, () => col.insert({ ids: [100], vectors: new Float32Array(dim).fill(-Infinity) }), "non_finite");
    const q = new Float32Array(dim);
    q[0] = NaN;
    rejects(col, () => col.search({ vector: q }), "non_finite");
    // The same through reserve/commit.
    rejects(
      col,
      () => {
        const b = col.reserve(1);
        b.ids[0] = 5n;
        b.vectors.fill(NaN);
        b.commit();
      },
      "non_finite",
    );
  });

  it("ids/vectors length mismatch → length_mismatch (before touching wasm)", () => {
    const { col, dim } = filled();
    rejects(col, () => col.insert({ ids: [1, 2], vectors: new Float32Array(dim) }), "length_mismatch");
    rejects(col, () => col.insert({ ids: [1], vectors: new Float32Array(dim + 1) }), "length_mismatch");
    rejects(col, () => col.insert({ ids: new BigUint64Array(3), vectors: [] }), "length_mismatch");
  });

  it("fractional, negative, too large or non-numeric ids → invalid_id", () => {
    const { col, ids, dim } = filled();
    const v2 = randomVectors(2, dim, 9);
    rejects(col, () => col.insert({ ids: [1, 2.5], vectors: v2 }), "invalid_id");
    rejects(col, () => col.insert({ ids: [-1, 2], vectors: v2 }), "invalid_id");
    rejects(col, () => col.insert({ ids: new Float64Array([1, 2 ** 53 + 2]), vectors: v2 }), "invalid_id");
    rejects(col, () => col.insert({ ids: [1, NaN], vectors: v2 }), "invalid_id");
    rejects(col, () => col.insert({ ids: [1n, -2n], vectors: v2 }), "invalid_id");
    rejects(col, () => col.insert({ ids: [1n, 2n ** 64n], vectors: v2 }), "invalid_id");
    // Strings are UUIDs: one that is not (a decimal string) is invalid_id.
    rejects(col, () => col.insert({ ids: ["12", 2], vectors: v2 }), "invalid_id");
    rejects(col, () => col.insert({ ids: [1, "5c56c793-69f3-4fbf-87e6"], vectors: v2 }), "invalid_id");
    // Through the batch path with number ids.
    rejects(
      col,
      () => {
        const b = col.reserve(1);
        b.idsAsNumbers[0] = 0.5;
        b.commit({ numberIds: true });
      },
      "invalid_id",
    );
    // Delete with an invalid id deletes nothing, not even the valid ones.
    rejects(col, () => col.delete([ids[0], -3]), "invalid_id");
    rejects(col, () => col.delete([ids[0], 1.5]), "invalid_id");
  });

  it("malformed requests or unknown fields → invalid_request", () => {
    const { col, dim } = filled();
    const v = new Float32Array(dim);
    rejects(col, () => col.search({ vector: v, limt: 3 }), "invalid_request");
    rejects(col, () => col.search({ vector: v, limit: "3" }), "invalid_request");
    rejects(col, () => col.search({ vector: v, limit: 0 }), "invalid_request");
    rejects(col, () => col.search({ vector: v, limit: 10001 }), "invalid_request");
    rejects(col, () => col.search({ vector: v, offset: -1 }), "invalid_request");
    rejects(col, () => col.search({ vector: v, params: { exact: true, bogus: 1 } }), "invalid_request");
    const cyclic = /** @type {any} */ ({});
    cyclic.self = cyclic;
    rejects(col, () => col.search({ vector: v, params: cyclic }), "invalid_request"); // not JSON-serialisable
    // A BigInt is the integer it is (ids beyond 2^53 need it).
    expect(col.search({ vector: v, limit: 3n }).points.length).toBe(3);
    rejects(col, () => col.search({ limit: 3 }), "invalid_request"); // no vector
    rejects(col, () => col.search({ vector: "1,2,3" }), "invalid_request");
    rejects(col, () => col.search(null), "invalid_request");
    rejects(col, () => col.search("{"), "invalid_request");
  });

  it("requests the collection cannot serve → invalid_request", () => {
    const { col, dim } = filled();
    const v = new Float32Array(dim);
    // Text needs `text` fields; fusion a known method; timeout_ms at least 1.
    rejects(col, () => col.search({ vector: v, text: "hello" }), "invalid_request");
    rejects(col, () => col.search({ vector: v, text: "hello", fusion: "max" }), "invalid_request");
    rejects(col, () => col.search({ text: "hello", fusion: "rrf" }), "invalid_request");
    rejects(col, () => col.search({ vector: v, timeout_ms: 0 }), "invalid_request");
    // Filters work; this one names a field the collection does not have.
    rejects(col, () => col.search({ vector: v, filter: { must: [{ key: "tag", match: { value: "a" } }] } }), "invalid_request");
    rejects(col, () => col.seal({ index: "ivf-rabitq", bits: 9 }), "invalid_request");
    rejects(col, () => col.seal({ index: "ivf-rabitq", bits: 0 }), "invalid_request");
    rejects(col, () => col.seal({ index: "hnsw" }), "invalid_request");
    rejects(col, () => col.seal({ index: "ivf-rabitq", partitions: 0 }), "invalid_request");
    rejects(col, () => col.seal({ index: "flat", partitions: 4 }), "invalid_request");
    rejects(col, () => col.search({ vector: v, params: { nprobe: 0 } }), "invalid_request");
  });

  it("corrupt or truncated bytes → bad_segment", () => {
    const { col } = filled("dot", 100, 8);
    const bytes = col.toBytes();
    const len = col.len;
    expectShoalError(() => Collection.fromBytes(bytes.subarray(0, bytes.length - 64)), "bad_segment");
    expectShoalError(() => Collection.fromBytes(bytes.subarray(0, 10)), "bad_segment");
    expectShoalError(() => Collection.fromBytes(new Uint8Array(0)), "bad_segment");
    const badMagic = bytes.slice();
    badMagic[0] ^= 0xff;
    expectShoalError(() => Collection.fromBytes(badMagic), "bad_segment");
    const garbage = new Uint8Array(4096);
    for (let i = 0; i < garbage.length; i++) garbage[i] = (i * 2654435761) >>> 24;
    expectShoalError(() => Collection.fromBytes(garbage), "bad_segment");
    // A flipped byte in the data is caught by the full check at the latest.
    const flipped = bytes.slice();
    flipped[flipped.length - 100] ^= 0x01;
    expectShoalError(() => Collection.fromBytes(flipped).verify(), "bad_segment");
    expect(col.len).toBe(len);
    expect(Buffer.from(col.toBytes()).equals(Buffer.from(bytes))).toBe(true);
    expectShoalError(() => Collection.fromBytes("not bytes"), "invalid_argument");
  });

  it("invalid configs → invalid_config", () => {
    expectShoalError(() => new Collection({ dim: 0, metric: "l2" }), "invalid_config");
    expectShoalError(() => new Collection({ dim: 70000, metric: "l2" }), "invalid_config");
    expectShoalError(() => new Collection({ dim: 1.5, metric: "l2" }), "invalid_config");
    expectShoalError(() => new Collection({ dim: 4, metric: "hamming" }), "invalid_config");
    expectShoalError(() => new Collection(), "invalid_config");
  });

  it("a freed collection refuses calls", () => {
    const { col } = filled();
    col.free();
    col.free(); // twice is fine
    expectShoalError(() => col.len, "freed");
    expectShoalError(() => col.search({ vector: [1] }), "freed");
  });
});
