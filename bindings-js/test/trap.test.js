// A trap inside WebAssembly (a Rust panic compiles to `unreachable`) surfaces as a ShoalError
// with the code "internal", and the instance refuses every later call: its memory may be in
// any state. In its own file: vitest gives each file a fresh module instance.
import { describe, expect, it } from "vitest";
import { Collection, ShoalError, init } from "../js/index.js";
import { call } from "../js/errors.js";

// (module (func (export "t") unreachable)): a real trap, raised by the engine.
const TRAPPING = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00, 0x07,
  0x05, 0x01, 0x01, 0x74, 0x00, 0x00, 0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b,
]);

describe("a trap inside wasm", () => {
  it("is an internal ShoalError, and the instance is not used again", async () => {
    await init();
    const col = new Collection({ dim: 2 });
    col.insert({ ids: [1], vectors: [0.5, 0.5] });
    const trap = /** @type {() => void} */ (new WebAssembly.Instance(new WebAssembly.Module(TRAPPING)).exports.t);
    expect(() => trap()).toThrow(WebAssembly.RuntimeError);
    let thrown;
    try {
      call(trap);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ShoalError);
    expect(thrown).toMatchObject({ code: "internal" });
    expect(/** @type {any} */ (thrown).cause).toBeInstanceOf(WebAssembly.RuntimeError);
    // Every later call through the engine fails the same way, existing collections included.
    for (const later of [() => col.len, () => col.search({ vector: [1, 0], limit: 1 }), () => new Collection({ dim: 2 })]) {
      expect(later).toThrow(/trapped inside WebAssembly/);
    }
  });
});
