// `Collection.openRemote` in Node: segments searched by byte ranges from nginx, through
// scripts/range-proxy.mjs (fixtures and servers: remote-fixtures.js):
// - remote = native = local, bit for bit (the SIMD128 build here, the scalar one in
//   remote.scalar.test.js);
// - what a query fetches: open = 1 request with the bootstrap hint, a cold query at 1 bit two
//   waves, a warm one none;
// - faults: every one a typed error or the right answer, never a wrong one.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Collection } from "../js/index.js";
import { expectRejection } from "./expect-error.js";
import { equalitySuite, file, fixture, request, rows, withServers } from "./remote-fixtures.js";

const ctx = withServers();
const url = (name) => ctx.url(name);
const proxy = {
  fault: (m, t) => ctx.proxy.fault(m, t),
  reset: () => ctx.proxy.reset(),
};

equalitySuite(ctx, true);

describe("what a query fetches", () => {
  it("opens with one request, answers cold in two waves and warm in none", async () => {
    const f = fixture("l2-1");
    const col = await Collection.openRemote(url("l2-1.v2.shoal"), { bootstrapBytes: f.bootstrapLen });
    expect(col.opened.requests).toBe(1);
    const req = request(f.requests[0]); // default settings
    const cold = await col.search(req);
    expect(cold.io.waves).toBe(2); // partitions, then the candidates' vectors (1 bit: never a third)
    expect(cold.io.bytes).toBeGreaterThan(0);
    expect(cold.io.bytes).toBeLessThan(f.rows * f.dim * 4);
    const warm = await col.search(req);
    expect(warm.io).toEqual({ waves: 0, requests: 0, bytes: 0, retries: 0, persistedBytes: 0 });
    expect(rows(warm)).toEqual(rows(cold));
    // Without the hint: the first 256 KiB hold this small segment's bootstrap region.
    const plain = await Collection.openRemote(url("l2-1.v2.shoal"));
    expect(plain.opened.waves).toBe(1);
  });

  it("a cache budget of 0 keeps nothing between searches (the same answer, fetched again)", async () => {
    const f = fixture("dot-4");
    const col = await Collection.openRemote(url("dot-4.v2.shoal"), { cacheBytes: 0 });
    const req = request(f.requests[0]);
    const a = await col.search(req);
    const b = await col.search(req);
    expect(b.io.requests).toBeGreaterThan(0);
    expect(rows(a)).toEqual(f.results[0]);
    expect(rows(b)).toEqual(f.results[0]);
  });

  it("a wider merge gap fetches fewer requests, never other results", async () => {
    const f = fixture("cosine-2");
    const narrow = await Collection.openRemote(url("cosine-2.v2.shoal"), { mergeGap: 0 });
    const wide = await Collection.openRemote(url("cosine-2.v2.shoal"), { mergeGap: 1 << 20 });
    let [n, w] = [0, 0];
    for (let q = 0; q < 10; q++) {
      const a = await narrow.search(request(f.requests[q]));
      const b = await wide.search(request(f.requests[q]));
      expect(rows(a)).toEqual(f.results[q]);
      expect(rows(b)).toEqual(f.results[q]);
      n += a.io.requests;
      w += b.io.requests;
    }
    expect(w).toBeLessThan(n);
  });

  it("multipartRanges: each wave in one request, the same results", async () => {
    const f = fixture("cosine-2");
    const opts = { cacheBytes: 0, bootstrapBytes: f.bootstrapLen };
    // The same merge gap as one range per request (16 KiB), and the multipart default (1 KiB).
    const multi = await Collection.openRemote(url("cosine-2.v2.shoal"), { ...opts, multipartRanges: true, mergeGap: 16384 });
    const fine = await Collection.openRemote(url("cosine-2.v2.shoal"), { ...opts, multipartRanges: true });
    const single = await Collection.openRemote(url("cosine-2.v2.shoal"), opts);
    let [m, n, fineBytes, singleBytes] = [0, 0, 0, 0];
    for (let q = 0; q < f.requests.length; q++) {
      const a = await multi.search(request(f.requests[q]));
      const b = await single.search(request(f.requests[q]));
      const c = await fine.search(request(f.requests[q]));
      expect(rows(a), `query ${q}`).toEqual(f.results[q]);
      expect(rows(b), `query ${q}`).toEqual(f.results[q]);
      expect(rows(c), `query ${q}`).toEqual(f.results[q]);
      expect(a.io.requests, `query ${q}`).toBe(a.io.waves); // fewer than 64 ranges per wave here
      expect(a.io.bytes).toBe(b.io.bytes);
      expect(c.io.bytes).toBeLessThanOrEqual(b.io.bytes);
      [m, n, fineBytes, singleBytes] = [m + a.io.requests, n + b.io.requests, fineBytes + c.io.bytes, singleBytes + b.io.bytes];
    }
    expect(m).toBeLessThan(n);
    expect(fineBytes).toBeLessThan(singleBytes);
    // A flipped byte in a multipart answer (its middle byte: a part's bytes here) is caught by
    // its CRC and fetched again.
    await proxy.fault("flip", 1);
    const res = await multi.search(request(f.requests[3]));
    expect(rows(res)).toEqual(f.results[3]);
    expect(res.io.retries).toBe(1);
    await proxy.reset();
  });

  it("reads the request when search is called: a vector changed next is not the one searched", async () => {
    const f = fixture("l2-1");
    const col = await Collection.openRemote(url("l2-1.v2.shoal"));
    const v = Float32Array.from(f.requests[0].vector);
    const pending = [];
    for (let q = 0; q < 6; q++) {
      v.set(f.requests[q].vector);
      pending.push(col.search({ ...f.requests[q], vector: v }));
    }
    v.fill(0);
    const all = await Promise.all(pending);
    all.forEach((res, q) => expect(rows(res), `query ${q}`).toEqual(f.results[q]));
    await expectRejection(() => col.search({ vector: "no" }), "invalid_request");
  });

  it("a server that does not answer in timeoutMs is a transport error", async () => {
    const slow = (await import("./servers.mjs")).startProxy;
    const lagging = await slow(ctx.nginx.base, 400);
    try {
      await expectRejection(() => Collection.openRemote(`${lagging.base}/l2-1.v2.shoal`, { timeoutMs: 100 }), "transport");
      const col = await Collection.openRemote(`${lagging.base}/l2-1.v2.shoal`, { timeoutMs: 5_000 });
      expect(col.version).toBe(2);
    } finally {
      lagging.stop();
    }
  });

  it("refuses what a segment read by ranges does not answer", async () => {
    const col = await Collection.openRemote(url("l2-1.v2.shoal"));
    const v = new Float32Array(col.dim);
    // A filter: on a field the collection does not have, as locally; `has_id` is not read by ranges.
    await expectRejection(() => col.search({ vector: v, filter: { must: [{ key: "a", match: { value: 1 } }] } }), "invalid_request");
    await expectRejection(() => col.search({ vector: v, filter: { must: [{ has_id: [1] }] } }), "unsupported");
    await expectRejection(() => col.search({ vector: v, text: "word" }), "invalid_request"); // no text fields
    await expectRejection(() => col.search({ vector: v, prefetch: [{ vector: v }] }), "unsupported");
    // A segment without payloads answers `with_payload` as a local one: `{}` for each point.
    const res = await col.search({ vector: v, limit: 3, with_payload: true });
    expect(res.points.map((p) => p.payload)).toEqual([{}, {}, {}]);
    await expectRejection(() => col.search({ vector: new Float32Array(3) }), "dimension_mismatch");
    await expectRejection(() => col.search({ vector: v.map(() => NaN) }), "non_finite");
    col.free();
    await expectRejection(() => col.search({ vector: v }), "freed");
  });
});

describe("faults through the proxy", () => {
  const f = () => fixture("l2-1");
  const fresh = async (opts = {}) => {
    await proxy.reset();
    return Collection.openRemote(url("l2-1.v2.shoal"), opts);
  };
  const search = (col, q = 0) => col.search(request(f().requests[q]));
  afterAll(() => proxy.reset());

  it("404 and 403 are remote_status; a 500 is retried", async () => {
    await proxy.fault("status-404");
    await expectRejection(() => Collection.openRemote(url("l2-1.v2.shoal")), "remote_status");
    const col = await fresh();
    await proxy.fault("status-403");
    await expectRejection(() => search(col), "remote_status");
    await proxy.fault("status-500", 2);
    expect(rows(await search(col, 1))).toEqual(f().results[1]);
    await proxy.fault("status-503");
    await expectRejection(() => search(col, 2), "remote_status");
    await proxy.reset();
    expect(rows(await search(col, 2))).toEqual(f().results[2]);
  });

  it("a body cut short is retried, then a transport error", async () => {
    const col = await fresh();
    await proxy.fault("truncate", 1);
    expect(rows(await search(col, 3))).toEqual(f().results[3]);
    await proxy.fault("truncate");
    await expectRejection(() => search(col, 4), "transport");
  });

  it("a flipped byte fails its checksum: fetched again once, or bad_segment", async () => {
    // One probe: the first wave is one request, one partition block, and the proxy flips the
    // middle byte of the next answer — inside that block, under its CRC. (With more probes the
    // flip could land in a gap merged between blocks, bytes no query checks or uses.)
    const one = { ...request(f().requests[5]), params: { nprobe: 1 } };
    const want = rows(await (await fresh()).search(one));
    const col = await fresh();
    await proxy.fault("flip", 1);
    const res = await col.search(one);
    expect(rows(res)).toEqual(want);
    expect(res.io.retries).toBe(1);
    await proxy.fault("flip");
    await expectRejection(() => search(col, 6), "bad_segment");
    await proxy.reset();
    expect(rows(await search(col, 6))).toEqual(f().results[6]);
  });

  it("a server ignoring Range: the whole object within the cap, range_unsupported beyond", async () => {
    await proxy.reset();
    await proxy.fault("ignore-range");
    const col = await Collection.openRemote(url("l2-1.v2.shoal"));
    for (let q = 0; q < 3; q++) expect(rows(await search(col, q))).toEqual(f().results[q]);
    await expectRejection(() => Collection.openRemote(url("l2-1.v2.shoal"), { wholeBodyCap: 1 << 20 }), "range_unsupported");
  });

  it("a wrong Content-Range is bad_response", async () => {
    const col = await fresh();
    await proxy.fault("wrong-range");
    await expectRejection(() => search(col, 7), "bad_response");
  });

  it("another ETag, or the object replaced while open, is object_changed", async () => {
    const col = await fresh();
    await proxy.fault("etag");
    await expectRejection(() => search(col, 8), "object_changed");
    await proxy.reset();
    ctx.nginx.put("replaced.shoal", file("l2-1", 2));
    const open = await Collection.openRemote(url("replaced.shoal"));
    ctx.nginx.put("replaced.shoal", file("dot-4", 2));
    await expectRejection(() => open.search(request(f().requests[9])), "object_changed");
  });

  it("a set: a flipped byte in one segment costs a retry; a missing segment is remote_status", async () => {
    const set = fixture("set");
    await proxy.reset();
    // One probe per segment: each segment's first request is one partition block, so the
    // flipped middle byte of the first answer lies under a CRC (as in the test above).
    const one = { ...request(set.requests[4]), params: { nprobe: 1 } };
    const col = await Collection.openRemote(url("set/manifest.json"));
    const want = rows(await col.search(one));
    col.free();
    const fresh = await Collection.openRemote(url("set/manifest.json"));
    await proxy.fault("flip", 1);
    const res = await fresh.search(one);
    expect(rows(res)).toEqual(want);
    expect(res.io.retries).toBe(1);
    await proxy.reset();
    const manifest = JSON.parse(readFileSync(join(import.meta.dirname, "../../target/conformance/remote/set/manifest.json"), "utf8"));
    manifest.segments[1].file = manifest.segments[1].file.replace("seg-0000000002", "seg-0000000009");
    ctx.nginx.put("set/missing.json", JSON.stringify(manifest));
    await expectRejection(() => Collection.openRemote(url("set/missing.json")), "remote_status");
    await expectRejection(() => Collection.openRemote(url("set/manifest.json?sig=1")), "invalid_argument");
    await expectRejection(() => Collection.openRemote(url("set/manifest.json"), { bootstrapBytes: 4096 }), "invalid_argument");
  });

  it("bad arguments are invalid_argument", async () => {
    await expectRejection(() => Collection.openRemote(42), "invalid_argument");
    await expectRejection(() => Collection.openRemote(url("l2-1.v2.shoal"), { cacheBytes: -1 }), "invalid_argument");
    await expectRejection(() => Collection.openRemote(url("l2-1.v2.shoal"), { bootstrapBytes: 8 }), "invalid_argument");
    await expectRejection(() => Collection.openRemote({ read: () => "no" }), "invalid_argument");
    // `persist`: Node has no Cache API; a `read` function keeps what it likes; not a Cache.
    expect(typeof globalThis.caches).toBe("undefined");
    await expectRejection(() => Collection.openRemote(url("l2-1.v2.shoal"), { persist: true }), "invalid_argument");
    await expectRejection(() => Collection.openRemote({ read: () => new Uint8Array(0) }, { persist: { match() {}, put() {}, keys() {}, delete() {} } }), "invalid_argument");
    await expectRejection(() => Collection.openRemote(url("l2-1.v2.shoal"), { persist: {} }), "invalid_argument");
  });
});
