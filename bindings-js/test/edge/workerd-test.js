// The workerd test worker: the example worker (examples/cloudflare-worker/worker.js) plus one
// route, GET /scenario, that runs the shared scenario inside workerd.
import * as shoal from "shoal";
import wasmModule from "shoal/wasm/simd.wasm";
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
    return example.fetch(request, env, ctx);
  },
};
