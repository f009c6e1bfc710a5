// init() fetching the module by URL over HTTP (what browsers do), and errors before init.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { Collection, ShoalError, init, simdSupported } from "../js/index.js";

const scalarWasm = readFileSync(new URL("../pkg/scalar/shoal_js_bg.wasm", import.meta.url));

describe("init", () => {
  it("refuses use before init", () => {
    let err;
    try {
      new Collection({ dim: 2, metric: "l2" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ShoalError);
    expect(err.code).toBe("not_initialized");
  });

  it("detects SIMD128 support", () => {
    expect(simdSupported()).toBe(true);
  });

  it("fetches the module by URL (the browser path)", async () => {
    const server = createServer((req, res) => {
      res.writeHead(200, { "content-type": "application/wasm" });
      res.end(scalarWasm);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = new URL(`http://127.0.0.1:${server.address().port}/shoal_js_bg.wasm`);
    let info;
    try {
      info = await init({ simd: false, wasm: url });
    } finally {
      server.close();
    }
    expect(info).toEqual({ simd: false, kernels: "scalar" });
    const col = new Collection({ dim: 2, metric: "dot" });
    col.insert({ ids: [1, 2], vectors: [1, 0, 0, 1] });
    expect(col.kernels).toBe("scalar");
    expect(col.search({ vector: [0, 1], limit: 1 }).points).toEqual([{ id: 2, score: 1 }]);
    // Later calls return the first result, whatever they ask for.
    expect(await init({ simd: true })).toBe(info);
  });
});
