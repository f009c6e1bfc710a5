// The shared edge scenario (scenario.mjs) in Node under vitest. The same module runs in Deno,
// headless Chromium and workerd (test/edge/run.mjs, `make test-edge`), which require their
// summaries to equal Node's; here it checks the summary is sound and deterministic.
import { beforeAll, describe, expect, it } from "vitest";
import * as shoal from "../js/index.js";
import { SCENARIO_VERSION, runScenario } from "./scenario.mjs";

let info;
let summary;
beforeAll(async () => {
  info = await shoal.init();
  summary = runScenario(shoal);
}, 120_000);

describe("edge scenario (node)", () => {
  it("runs on the SIMD128 build", () => {
    expect(info.kernels).toBe("simd128");
    expect(summary.version).toBe(SCENARIO_VERSION);
    expect(Object.keys(summary.metrics)).toEqual(["l2", "cosine", "dot"]);
  });

  it("returns full result lists, and deleted points never come back", () => {
    for (const [metric, m] of Object.entries(summary.metrics)) {
      expect(m.committed + m.inserted, metric).toBe(1500);
      expect(m.deleted, metric).toBe(4);
      expect(m.len, metric).toBe(1496);
      const gone = new Set(["1", "7", "10", String((750 + 3) * 3 + 1)]);
      for (const step of [m.afterDelete, m.flat, m.ivfBits1.default, m.ivfBits4.default, m.ivfBits4.exact]) {
        expect(step).toHaveLength(6);
        for (const q of step) {
          expect(q.ids).toHaveLength(10);
          expect(q.scores).toHaveLength(10);
          for (const id of q.ids) expect(gone.has(id), `${metric}: deleted id ${id} returned`).toBe(false);
        }
      }
      expect(m.ivfBits1.index).toBe("ivf-rabitq");
      expect(m.ivfBits4.deletedAfterSeal).toBe(2);
      // Different code widths, different segment files.
      expect(m.ivfBits1.segment.fnv1a).not.toBe(m.ivfBits4.segment.fnv1a);
    }
  });

  it("filters, text and hybrid searches return results and respect deletes", () => {
    for (const [metric, m] of Object.entries(summary.metrics)) {
      const gone = new Set(["1", "7", "10", String((750 + 3) * 3 + 1)]);
      for (const p of [m.flatPayloads, m.ivfBits1.payloads, m.ivfBits4.payloads]) {
        expect(p.filtered).toHaveLength(6);
        for (const q of p.filtered) expect(q.ids, metric).toHaveLength(10);
        expect(p.text.filter((r) => r.ids.length > 0).length, metric).toBeGreaterThanOrEqual(4);
        for (const r of [...p.text, ...p.textFiltered, ...p.hybrid]) {
          for (const id of r.ids) expect(gone.has(id), `${metric}: deleted id ${id} returned`).toBe(false);
        }
        // Hybrid: the vector ranking alone fills the top 10.
        for (const r of p.hybrid) expect(r.ids).toHaveLength(10);
        // A filter only removes text results.
        p.textFiltered.forEach((r, i) => expect(r.ids.length).toBeLessThanOrEqual(p.text[i].ids.length));
      }
    }
  });

  it("is deterministic: a second run gives the same summary", () => {
    expect(JSON.stringify(runScenario(shoal))).toBe(JSON.stringify(summary));
  }, 120_000);
});
