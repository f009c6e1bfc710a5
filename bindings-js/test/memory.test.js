// Memory wasm cannot give is a typed error, not a trap. In its own file: the test grows this
// instance's memory by 2 GiB (never shrinking), which would change what other tests see.
import { describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";

await init();

describe("memory wasm cannot give", () => {
  it("is capacity_exceeded when a segment is opened, not a trap, and the instance goes on", async () => {
    // Two buffers of almost 2 GiB cannot both exist in wasm32's 4 GiB: the first waits for a
    // stream that sends nothing yet, the second must be refused by the allocation itself.
    const big = 2 ** 31 - 64;
    /** @type {ReadableStreamDefaultController<Uint8Array> | undefined} */
    let first;
    const pending = Collection.fromStream(new ReadableStream({ start: (c) => void (first = c) }), big);
    const outcome = await Promise.race([pending.then(() => "opened", (e) => e.code), new Promise((r) => setTimeout(() => r("waiting"), 200))]);
    const second = await Collection.fromStream(new ReadableStream({ start: (c) => c.close() }), big).catch((e) => e.code);
    if (outcome === "waiting") {
      expect(second).toBe("capacity_exceeded");
      first?.close();
      await expect(pending).rejects.toMatchObject({ code: "bad_segment" });
    } else {
      // This engine could not give even one: the first was refused the same way.
      expect(outcome).toBe("capacity_exceeded");
    }
    const col = new Collection({ dim: 2 });
    col.insert({ ids: [1], vectors: [1, 0] });
    expect(Collection.fromBytes(col.toBytes()).len).toBe(1);
    // Two near-2 GiB allocations: seconds on a loaded machine, past vitest's 5 s default.
  }, 60_000);
});
