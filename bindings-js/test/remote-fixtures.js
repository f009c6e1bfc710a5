// The fixtures of the tests of `Collection.openRemote` (remote.test.js, remote.scalar.test.js)
// and the servers they are read from: target/conformance/remote/, written by the native
// conformance test — IVF segments laid out for ranges (format 2) and their format-1 twins, with
// requests and the native results of reading the format-2 file by ranges — served by nginx
// through scripts/range-proxy.mjs.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { startNginx, startProxy } from "./servers.mjs";

const dir = join(import.meta.dirname, "../../target/conformance/remote");
export const NAMES = ["l2-1", "cosine-2", "dot-4", "l2-3-codes", "l2-2-coded"];
export const fixture = (name) => JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8"));
export const file = (name, v) => readFileSync(join(dir, `${name}.v${v}.shoal`));

/** A request of the fixture with its vector (when it has one) as a Float32Array. */
export const request = (r) => (r.vector ? { ...r, vector: Float32Array.from(r.vector) } : { ...r });
/** Results as [id text, f32 score bits] pairs, as the fixture writes them. */
export const rows = (res) => res.points.map((p) => [String(p.id), new Uint32Array(Float32Array.of(p.score).buffer)[0]]);

/**
 * Starts nginx (serving every fixture file) and the proxy before the file's tests, stops them
 * after. Returns `{ nginx, proxy, url(name) }`, filled in before the tests run.
 */
export function withServers() {
  const ctx = /** @type {any} */ ({});
  beforeAll(async () => {
    await init();
    ctx.nginx = await startNginx();
    ctx.proxy = await startProxy(ctx.nginx.base);
    ctx.url = (name) => `${ctx.proxy.base}/${name}`;
    for (const name of NAMES) {
      ctx.nginx.put(`${name}.v2.shoal`, file(name, 2));
      ctx.nginx.put(`${name}.v1.shoal`, file(name, 1));
    }
    for (const sub of ["set", "text"]) {
      for (const name of readdirSync(join(dir, sub))) ctx.nginx.put(`${sub}/${name}`, readFileSync(join(dir, sub, name)));
    }
  });
  afterAll(() => {
    ctx.proxy?.stop();
    ctx.nginx?.stop();
  });
  return ctx;
}

/**
 * Remote = native = local, bit for bit: each format-2 fixture read by ranges with the remote
 * module's SIMD128 or scalar build (`simd`), its twin read by ranges and its twin opened whole,
 * give the native results. The first `openRemote` of a process picks the build.
 */
export function equalitySuite(ctx, simd) {
  describe("remote = native = local", () => {
    for (const name of NAMES) {
      {
        it(`${name}, format 2 by ranges (${simd ? "simd128" : "scalar"} build)`, async () => {
          const f = fixture(name);
          const col = await Collection.openRemote(ctx.url(`${name}.v2.shoal`), { simd, bootstrapBytes: f.bootstrapLen });
          expect(col.kernels).toBe(simd ? "simd128" : "scalar");
          expect([col.dim, col.metric, col.len, col.version, col.codesOnly]).toEqual([f.dim, f.metric, f.rows, 2, f.codesOnly]);
          expect(col.opened).toEqual({ waves: 1, requests: 1, bytes: f.bootstrapLen, retries: 0, persistedBytes: 0 });
          for (let q = 0; q < f.requests.length; q++) {
            const res = await col.search(request(f.requests[q]));
            expect(rows(res), `query ${q}`).toEqual(f.results[q]);
          }
          col.free();
        });
      }
      it(`${name}, its format-1 twin by ranges and opened whole`, async () => {
        const f = fixture(name);
        const remote = await Collection.openRemote(ctx.url(`${name}.v1.shoal`));
        expect(remote.version).toBe(1);
        const local = Collection.fromBytes(file(name, 1));
        for (let q = 0; q < f.requests.length; q++) {
          expect(rows(await remote.search(request(f.requests[q]))), `query ${q} by ranges`).toEqual(f.results[q]);
          expect(rows(local.search(request(f.requests[q]))), `query ${q} whole`).toEqual(f.results[q]);
        }
        remote.free();
        local.free();
      });
    }

    it("a read function as the source gives the same results", async () => {
      const f = fixture("l2-1");
      const bytes = file("l2-1", 2);
      let reads = 0;
      const col = await Collection.openRemote({
        read: async (offset, length) => (reads++, bytes.subarray(offset, offset + length)),
        size: bytes.length,
      });
      for (let q = 0; q < 5; q++) expect(rows(await col.search(request(f.requests[q])))).toEqual(f.results[q]);
      expect(reads).toBeGreaterThan(2);
    });

    it(`a set of three segments from its manifest (${simd ? "simd128" : "scalar"} build): the local set's results`, async () => {
      const f = fixture("set");
      const col = await Collection.openRemote(ctx.url("set/manifest.json"), { simd });
      expect([col.dim, col.metric, col.len, col.segments, col.version]).toEqual([f.dim, f.metric, f.rows, f.segments, 2]);
      // The manifest, then every segment's bootstrap region at once (one request each).
      expect([col.opened.waves, col.opened.requests, col.opened.retries]).toEqual([2, 1 + f.segments, 0]);
      for (let q = 0; q < f.requests.length; q++) {
        const res = await col.search(request(f.requests[q]));
        expect(rows(res), `query ${q}`).toEqual(f.results[q]);
        if (q === 0) expect(res.io.waves).toBeLessThanOrEqual(3);
      }
      col.free();
    });

    it(`a set with payloads and text (${simd ? "simd128" : "scalar"} build): text, hybrid and payloads as the local set's`, async () => {
      const f = fixture("text");
      const col = await Collection.openRemote(ctx.url("text/manifest.json"), { simd });
      expect([col.dim, col.metric, col.len, col.segments]).toEqual([f.dim, f.metric, f.rows, f.segments]);
      for (let q = 0; q < f.requests.length; q++) {
        const res = await col.search(request(f.requests[q]));
        expect(rows(res), `query ${q}`).toEqual(f.results[q]);
        const withPayload = f.requests[q].with_payload === true;
        expect(res.points.map((p) => (withPayload ? p.payload : null)), `query ${q} payloads`).toEqual(f.payloads[q]);
        if (!withPayload) expect(res.points.every((p) => !("payload" in p)), `query ${q}: no payloads asked`).toBe(true);
      }
      col.free();
    });

    it("searches started together answer as one at a time", async () => {
      const f = fixture("cosine-2");
      const col = await Collection.openRemote(ctx.url("cosine-2.v2.shoal"));
      const all = await Promise.all(f.requests.map((r) => col.search(request(r))));
      all.forEach((res, q) => expect(rows(res), `query ${q}`).toEqual(f.results[q]));
    });
  });
}
