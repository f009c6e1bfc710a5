// UUID point ids through the npm API: mixed with integer ids in insert, delete, get, scroll,
// points() and has_id filters; given back as their canonical text; a malformed id is
// `invalid_id` and changes nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

/** A UUID made of `i` (deterministic; the first half scrambled so they do not sort like `i`). */
function uuidOf(i) {
  const hi = ((i * 2654435761) >>> 0).toString(16).padStart(8, "0");
  const lo = i.toString(16).padStart(12, "0");
  return `${hi}-${(i % 65536).toString(16).padStart(4, "0")}-4000-8000-${lo}`;
}

/** UUIDs compared as Shoal orders them: by their bytes, i.e. their lowercase hex text. */
const byBytes = (a, b) => (a.replace(/-/g, "") < b.replace(/-/g, "") ? -1 : 1);

describe("UUID ids", () => {
  const dim = 5;
  const n = 90;
  // Every third id an integer, the others UUIDs.
  const ids = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? i * 10 : uuidOf(i)));
  const vectors = randomVectors(n, dim, 7);
  const payloads = ids.map((_, i) => ({ n: i }));

  function build() {
    const col = new Collection({ dim, metric: "l2", fields: { n: "integer" } });
    col.insert({ ids: ids.slice(0, 50), vectors: vectors.subarray(0, 50 * dim), payloads: payloads.slice(0, 50) });
    col.seal();
    col.insert({ ids: ids.slice(50), vectors: vectors.subarray(50 * dim), payloads: payloads.slice(50) });
    return col;
  }

  it("search finds points by either kind of id and gives UUIDs back as text", () => {
    const col = build();
    for (const i of [0, 1, 2, 49, 50, 89]) {
      const res = col.search({ vector: vectors.subarray(i * dim, (i + 1) * dim), limit: 1, params: { exact: true } });
      expect(res.points[0].id).toBe(ids[i]);
    }
    expect(col.len).toBe(n);
  });

  it("get takes UUIDs in any form Qdrant reads and integers, mixed", () => {
    const col = build();
    const u = ids[1];
    const forms = [u, u.toUpperCase(), u.replace(/-/g, ""), `{${u}}`, `urn:uuid:${u}`];
    for (const form of forms) {
      const got = col.get([form, 30], { withVector: true });
      expect(got.map((p) => p.id)).toEqual([u, 30]);
      expect(got[0].payload).toEqual({ n: 1 });
      expect(Array.from(got[0].vector)).toEqual(Array.from(vectors.subarray(dim, 2 * dim)));
    }
    expect(col.get(["00000000-0000-0000-0000-000000000000"])).toEqual([]);
  });

  it("has_id filters, count and scroll order integers first, then UUIDs by bytes", () => {
    const col = build();
    const filter = { must: [{ has_id: [ids[2], 60, ids[80].toUpperCase(), 7] }] };
    expect(col.count(filter)).toBe(3);
    const res = col.search({ vector: vectors.subarray(0, dim), limit: 10, filter });
    expect(res.points.map((p) => p.id).sort()).toEqual([ids[2], 60, ids[80]].sort());

    const ints = ids.filter((x) => typeof x === "number").sort((a, b) => a - b);
    const uuids = ids.filter((x) => typeof x === "string").sort(byBytes);
    const seen = [];
    let after = null;
    for (;;) {
      const page = col.scroll({ limit: 13, after });
      seen.push(...page.points.map((p) => p.id));
      if (page.next === null) break;
      after = page.next;
    }
    expect(seen).toEqual([...ints, ...uuids]);
  });

  it("delete and upsert by UUID; the set and byte round trips keep the ids", async () => {
    const col = build();
    expect(col.delete([ids[1], ids[3], uuidOf(1000)])).toBe(2);
    col.insert({ ids: [ids[4].toUpperCase()], vectors: new Float32Array(dim), payloads: [{ n: -1 }] });
    expect(col.len).toBe(n - 2);
    expect(col.get([ids[4]])[0].payload).toEqual({ n: -1 });
    const again = Collection.fromBytes(col.toBytes());
    expect(again.count()).toBe(n - 2);
    const got = [];
    for await (const p of again.points({ limit: 7 })) got.push(p.id);
    const live = ids.filter((_, i) => i !== 1 && i !== 3);
    expect(got.sort()).toEqual(live.sort());
  });

  it("one UUID alone is an id list of one; scroll refuses a malformed after", () => {
    const col = build();
    const u = uuidOf(5000);
    expect(col.insert({ ids: u, vectors: new Float32Array(dim), payloads: [{ n: 5000 }] })).toBe(1);
    expect(col.get(u)[0].payload).toEqual({ n: 5000 });
    expect(col.delete(u)).toBe(1);
    expectShoalError(() => col.scroll({ after: "not-a-uuid" }), "invalid_id");
  });

  it("a malformed id is invalid_id and changes nothing", () => {
    const col = build();
    const bad = [ids[1].slice(0, 35), "not-a-uuid", `${ids[1]} `, -1, 1.5];
    for (const x of bad) {
      expectShoalError(() => col.insert({ ids: [ids[2], x], vectors: new Float32Array(2 * dim) }), "invalid_id");
      expectShoalError(() => col.delete([ids[2], x]), "invalid_id");
    }
    expect(col.len).toBe(n);
    expect(col.get([ids[2]]).length).toBe(1);
  });
});
