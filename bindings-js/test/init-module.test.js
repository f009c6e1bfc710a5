// init({ module }): a compiled WebAssembly.Module (what Cloudflare Workers and workerd hand
// over). The result reports the build actually loaded, whatever feature detection guessed.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { Collection, ShoalError, init } from "../js/index.js";

it("init({ module }) instantiates a compiled module and reports its kernels", async () => {
  const bytes = readFileSync(new URL("../pkg/scalar/shoal_js_bg.wasm", import.meta.url));
  const module = new WebAssembly.Module(bytes);
  await expect(init({ module, wasm: bytes })).rejects.toBeInstanceOf(ShoalError);
  const info = await init({ module });
  expect(info).toEqual({ simd: false, kernels: "scalar" });
  const col = new Collection({ dim: 2, metric: "l2" });
  col.insert({ ids: [5, 6], vectors: [0, 0, 3, 4] });
  expect(col.search({ vector: [3, 4], limit: 2 }).points).toEqual([
    { id: 6, score: 0 },
    { id: 5, score: 25 },
  ]);
});
