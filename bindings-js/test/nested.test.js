// Nested payloads through the npm API: any JSON object stored as it is, filters by JSON path
// and `nested` conditions, alike before and after a seal, a segment set and a byte round trip
// — each answer checked against a direct evaluation here.
import { beforeAll, describe, expect, it } from "vitest";
import { Collection, init } from "../js/index.js";
import { expectShoalError } from "./expect-error.js";
import { randomVectors } from "./scenario.mjs";

beforeAll(async () => {
  await init();
});

describe("nested payloads", () => {
  const dim = 4;
  const n = 120;
  const docs = Array.from({ length: n }, (_, i) => ({
    page_content: `text ${i}`,
    metadata: {
      topic: ["sea", "sky", "land"][i % 3],
      year: 1990 + (i % 30),
      authors: Array.from({ length: i % 3 }, (_, j) => ({ name: `a${(i + j) % 4}`, main: j === 0 })),
    },
  }));
  const vectors = randomVectors(n, dim, 3);
  const sky = { must: [{ key: "metadata.topic", match: { value: "sky" } }] };
  const tight = {
    must: [
      {
        nested: {
          key: "metadata.authors",
          filter: { must: [{ key: "name", match: { value: "a1" } }, { key: "main", match: { value: true } }] },
        },
      },
    ],
  };
  const loose = {
    must: [
      { key: "metadata.authors[].name", match: { value: "a1" } },
      { key: "metadata.authors[].main", match: { value: true } },
    ],
  };
  const want = {
    sky: docs.map((d, i) => [d, i]).filter(([d]) => d.metadata.topic === "sky").map(([, i]) => i),
    tight: docs
      .map((d, i) => [d, i])
      .filter(([d]) => d.metadata.authors.some((a) => a.name === "a1" && a.main))
      .map(([, i]) => i),
    loose: docs
      .map((d, i) => [d, i])
      .filter(([d]) => d.metadata.authors.some((a) => a.name === "a1") && d.metadata.authors.some((a) => a.main))
      .map(([, i]) => i),
  };

  function build() {
    const col = new Collection({ dim, metric: "cosine", nested: true });
    const ids = Array.from({ length: n }, (_, i) => i);
    col.insert({ ids: ids.slice(0, 70), vectors: vectors.subarray(0, 70 * dim), payloads: docs.slice(0, 70) });
    col.seal();
    col.insert({ ids: ids.slice(70), vectors: vectors.subarray(70 * dim), payloads: docs.slice(70) });
    return col;
  }

  /** The ids passing `filter`, by `scroll` and by an exhaustive search. */
  function passing(col, filter) {
    const scrolled = col.scroll({ filter, limit: 1000 }).points.map((p) => p.id);
    const searched = col
      .search({ vector: vectors.subarray(0, dim), limit: 1000, filter, params: { exact: true } })
      .points.map((p) => p.id)
      .sort((a, b) => a - b);
    expect(searched).toEqual(scrolled);
    return scrolled;
  }

  it("stores any object and filters by path and nested, before and after round trips", () => {
    const col = build();
    expect(col.get([7])[0].payload).toEqual(docs[7]);
    expect(want.tight.length).toBeLessThan(want.loose.length);
    const check = (c) => {
      expect(passing(c, sky)).toEqual(want.sky);
      expect(passing(c, tight)).toEqual(want.tight);
      expect(passing(c, loose)).toEqual(want.loose);
      expect(c.count({ must: [{ key: "metadata.year", range: { gte: 2015 } }] })).toBe(
        docs.filter((d) => d.metadata.year >= 2015).length,
      );
    };
    check(col);
    const { manifest, files } = col.toSet();
    expect(manifest).toContain('"payload":"nested"');
    const again = Collection.openSet(manifest, files);
    check(again);
    const one = Collection.fromBytes(again.toBytes());
    check(one);
    expect(one.get([99])[0].payload).toEqual(docs[99]);
  });

  it("a flat collection refuses nested payloads and conditions; a bad path is invalid_request", () => {
    const flat = new Collection({ dim, fields: { topic: "keyword" } });
    expectShoalError(() => flat.insert({ ids: [1], vectors: vectors.subarray(0, dim), payloads: [docs[1]] }), "invalid_payload");
    expectShoalError(() => flat.count(tight), "invalid_request");
    const col = build();
    expectShoalError(() => col.count({ must: [{ key: "metadata..topic", match: { value: "sky" } }] }), "invalid_request");
    expectShoalError(() => new Collection({ dim, nested: "yes" }), "invalid_config");
  });
});
