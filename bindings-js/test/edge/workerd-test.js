// The workerd test worker: the example worker (examples/cloudflare-worker/worker.js) plus two
// routes: GET /scenario runs the shared scenario inside workerd; POST /remote {segment,
// bootstrapLen, requests} opens a segment — or a set, `segment` being its manifest's URL — by
// byte ranges (`Collection.openRemote`, fetching from 127.0.0.1) and answers each request as
// [id, f32 score bits] pairs.
import * as shoal from "shoal";
import wasmModule from "shoal/wasm/simd.wasm";
import remoteModule from "shoal/wasm/remote-simd.wasm";
import example from "worker.js";
import { runScenario } from "scenario.mjs";

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/scenario") {
      try {
        const info = await shoal.init({ module: wasmModule });
        return Response.json({ runtime: "workerd", info, summary: runScenario(shoal) });
      } catch (e) {
        return Response.json({ error: String((e && e.stack) || e) }, { status: 500 });
      }
    }
    if (url.pathname === "/remote") {
      try {
        const { segment, bootstrapLen, requests } = await request.json();
        const col = await shoal.Collection.openRemote(segment, { module: remoteModule, bootstrapBytes: bootstrapLen });
        const bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];
        const rows = [];
        const io = [];
        for (const r of requests) {
          const res = await col.search({ ...r, vector: Float32Array.from(r.vector) });
          rows.push(res.points.map((p) => [String(p.id), bits(p.score)]));
          io.push(res.io);
        }
        return Response.json({ kernels: col.kernels, opened: col.opened, rows, io });
      } catch (e) {
        return Response.json({ error: String((e && e.stack) || e), code: e && e.code }, { status: 500 });
      }
    }
    return example.fetch(request, env, ctx);
  },
};
