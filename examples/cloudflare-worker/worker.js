// Shoal in a Cloudflare Worker: vector search over a segment bundled with the worker.
//
// Workers may not compile WebAssembly from bytes at run time: the module is imported (the
// bundler — wrangler, or workerd's config — compiles it) and handed to `init({ module })`.
// The segment file (built by `node build-segment.mjs`, or natively by `shoal build`) is
// bundled as a data module (an ArrayBuffer) and opened once per isolate.
//
//   GET  /          -> { kernels, points, dim, metric, index }
//   POST /search    -> the search request (SearchRequest, crates/shoal-core/src/request.rs) as JSON ({ "vector": [...], "limit": 10 })
//                      -> { points: [{ id, score }], partial, stats }
import { Collection, ShoalError, init } from "shoal";
import wasmModule from "shoal/wasm/simd.wasm";
import segment from "./segment.shoal";

/** @type {Promise<{ col: Collection, kernels: string }> | null} */
let ready = null;

function load() {
  ready ??= init({ module: wasmModule }).then(
    (info) => ({ col: Collection.fromBytes(new Uint8Array(segment)), kernels: info.kernels }),
    (e) => {
      ready = null;
      throw e;
    },
  );
  return ready;
}

function json(body, status = 200) {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

export default {
  /** @param {Request} request */
  async fetch(request) {
    const url = new URL(request.url);
    const { col, kernels } = await load();
    if (url.pathname === "/" && request.method === "GET") {
      return json({ kernels, points: col.len, dim: col.dim, metric: col.metric, index: col.index });
    }
    if (url.pathname === "/search" && request.method === "POST") {
      let req;
      try {
        req = await request.json();
      } catch {
        return json({ error: { code: "invalid_request", message: "the body is not JSON" } }, 400);
      }
      try {
        const res = col.search(req);
        // Ids beyond 2^53 come back as BigInts: send them as strings.
        const points = res.points.map((p) => ({ ...p, id: typeof p.id === "bigint" ? String(p.id) : p.id }));
        return json({ points, partial: res.partial, stats: res.stats });
      } catch (e) {
        if (e instanceof ShoalError) return json({ error: { code: e.code, message: e.message } }, 400);
        throw e;
      }
    }
    return json({ error: { code: "not_found", message: `no route ${request.method} ${url.pathname}` } }, 404);
  },
};
