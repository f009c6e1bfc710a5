// The official Qdrant JavaScript client (@qdrant/js-client-rest, version pinned in package.json)
// against `shoal serve`, unmodified: its documented basic use — create a collection, upsert points
// (integer and UUID ids, nested payloads), query with and without filters, the Query API's
// prefetch fused by RRF and DBSF, batches, scroll, count, retrieve, payload changes, deletes, and
// its hybrid use (a dense and a sparse vector fused) — with real embeddings (the demo's wordllama model through examples/gcide/embed.js, over GCIDE
// definitions). Every search is checked against a brute-force cosine ranking computed here, and
// every fusion against the formulas (bindings-js/test/fusion.mjs).
//   node host-native/tests/qdrant_js_compat.mjs   (after scripts/gcide-demo-data.sh)
import { QdrantClient } from "@qdrant/js-client-rest";
import { check, finish } from "../../bindings-js/test/edge/checks.mjs";
import { shoalServe } from "../../bindings-js/test/edge/serve.mjs";
import { fused } from "../../bindings-js/test/fusion.mjs";
import { cosine, embed, entries as gcide, root } from "./gcide_compat.mjs";

const N = 1000;
const entries = gcide(N);
// Every third point has a UUID id (as LangChain and LlamaIndex write them), the others integers.
const uuid = (/** @type {number} */ i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;
const ids = entries.map((_, i) => (i % 3 === 0 ? uuid(i) : i));
const vectors = entries.map((e) => embed(e.definition));
const payloads = entries.map((e) => ({
  headword: e.headword,
  pos: e.pos,
  meta: { letters: e.letters, tags: [{ name: e.pos, first: e.headword[0] }] },
}));
const at = new Map(ids.map((id, i) => [id, i]));
/** The ids of the `k` points passing `keep` nearest to `q` by cosine. */
const brute = (/** @type {number[]} */ q, /** @type {(i: number) => boolean} */ keep, /** @type {number} */ k) =>
  ids
    .map((id, i) => [id, i, cosine(q, vectors[i])])
    .filter(([, i]) => keep(/** @type {number} */ (i)))
    .sort((a, b) => /** @type {number} */ (b[2]) - /** @type {number} */ (a[2]))
    .slice(0, k)
    .map(([id]) => id);
/** JSON with object keys sorted at every level (Qdrant and Shoal give payload keys sorted). */
const canonical = (/** @type {any} */ v) =>
  JSON.stringify(v, (_, x) =>
    x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x,
  );
const same = (/** @type {unknown} */ a, /** @type {unknown} */ b) => canonical(a) === canonical(b);

/** A lexical sparse vector of `text`: each lowercase word hashed (FNV-1a, 20 bits) to an index,
 * its count plus a fraction fixed by the word (so that scores rarely tie) as the value. */
function words(/** @type {string} */ text) {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    let h = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0;
    const index = h & 0xfffff;
    counts.set(index, Math.fround((counts.get(index) ?? 0) + 1 + (h >>> 20) / 40960));
  }
  return { indices: [...counts.keys()], values: [...counts.values()] };
}

const server = await shoalServe(root);
try {
  const client = new QdrantClient({ url: server.base, checkCompatibility: false });
  const dim = vectors[0].length;
  check("createCollection", await client.createCollection("gcide", { vectors: { size: dim, distance: "Cosine" } }));
  check("collectionExists", (await client.collectionExists("gcide")).exists === true);
  await client.createPayloadIndex("gcide", { field_name: "pos", field_schema: "keyword", wait: true });
  for (let s = 0; s < N; s += 250) {
    const points = ids.slice(s, s + 250).map((id, j) => ({ id, vector: vectors[s + j], payload: payloads[s + j] }));
    await client.upsert("gcide", { wait: true, points });
  }
  const info = await client.getCollection("gcide");
  check(
    "getCollection: count, size, distance",
    info.points_count === N && info.config.params.vectors.size === dim && info.config.params.vectors.distance === "Cosine",
  );

  // Queries, plain and filtered (a keyword, a nested path), against brute force.
  const verb = { must: [{ key: "pos", match: { value: "verb" } }] };
  const short = { must: [{ key: "meta.letters", range: { lte: 5 } }] };
  let ok = 0;
  let asked = 0;
  for (const text of ["a large animal with a trunk", "to move quickly on foot", "a small boat"]) {
    const q = embed(text);
    for (const [filter, keep] of [
      [undefined, () => true],
      [verb, (/** @type {number} */ i) => payloads[i].pos === "verb"],
      [short, (/** @type {number} */ i) => payloads[i].meta.letters <= 5],
    ]) {
      const res = await client.query("gcide", { query: q, filter, limit: 6, with_payload: true });
      asked++;
      const scoresOk = res.points.every((p) => Math.abs(p.score - cosine(q, vectors[at.get(p.id)])) < 1e-4);
      const payloadsOk = res.points.every((p) => same(p.payload, payloads[at.get(p.id)]));
      if (same(res.points.map((p) => p.id), brute(q, keep, 6)) && scoresOk && payloadsOk) ok++;
    }
  }
  check("query: plain, keyword filter, nested path filter equal brute force", ok === asked, `${ok}/${asked}`);

  // The Query API's prefetch: each list as the same query alone (the top filter ANDed in), fused
  // as the formulas say; a vector query re-scores the prefetched points.
  const [qa, qb, qc] = ["water", "a loud noise", "something sweet to eat"].map(embed);
  const prefetch = [
    { query: qa, limit: 20, filter: verb },
    { query: qb, limit: 15 },
  ];
  const alone = [
    (await client.query("gcide", { query: qa, limit: 20, filter: { must: [short, verb] } })).points,
    (await client.query("gcide", { query: qb, limit: 15, filter: short })).points,
  ];
  for (const [query, how] of [
    [{ fusion: "rrf" }, { k: 2 }],
    [{ rrf: { k: 10, weights: [1, 3] } }, { k: 10, weights: [1, 3] }],
    [{ fusion: "dbsf" }, { dbsf: true }],
  ]) {
    const res = await client.query("gcide", { prefetch, query, filter: short, limit: 8 });
    const want = fused(alone, how).slice(0, 8);
    const close = res.points.length === want.length && res.points.every((p, i) => Math.abs(p.score - want[i].score) <= 1e-6);
    check(`query: prefetch fused by ${JSON.stringify(query)}`, same(res.points.map((p) => p.id), want.map((p) => p.id)) && close);
  }
  const union = new Set(alone.flat().map((p) => p.id));
  const rescored = await client.query("gcide", { prefetch, query: qc, filter: short, limit: 8 });
  check(
    "query: a vector re-scores the prefetched points",
    same(rescored.points.map((p) => p.id), brute(qc, (i) => union.has(ids[i]), 8)),
  );
  const batch = await client.queryBatch("gcide", { searches: [{ query: qa, limit: 3 }, { query: qb, limit: 4, filter: verb }] });
  check(
    "queryBatch",
    same(batch.map((r) => r.points.map((p) => p.id)), [brute(qa, () => true, 3), brute(qb, (i) => payloads[i].pos === "verb", 4)]),
  );

  // Scroll (ids in Qdrant's order: integers, then UUIDs), count, retrieve.
  let seen = [];
  let offset;
  do {
    const page = await client.scroll("gcide", { filter: verb, limit: 40, offset, with_payload: false });
    seen = seen.concat(page.points.map((p) => p.id));
    offset = page.next_page_offset ?? undefined;
  } while (offset !== undefined);
  const verbs = ids.filter((_, i) => payloads[i].pos === "verb");
  const order = [...verbs.filter((id) => typeof id === "number").sort((a, b) => a - b), ...verbs.filter((id) => typeof id === "string").sort()];
  check("scroll with a filter, page by page", same(seen, order));
  check("count with a filter", (await client.count("gcide", { filter: verb })).count === verbs.length);
  const got = await client.retrieve("gcide", { ids: [ids[0], ids[1]], with_payload: true, with_vector: true });
  check("retrieve", got.length === 2 && same(got.find((p) => p.id === ids[1])?.payload, payloads[1]));

  // Payload changes, then deletes by id and by filter.
  await client.setPayload("gcide", { payload: { seen: true }, points: [ids[1], ids[3]], wait: true });
  await client.deletePayload("gcide", { keys: ["meta"], points: [ids[3]], wait: true });
  const [p1, p3] = await client.retrieve("gcide", { ids: [ids[1], ids[3]] });
  check(
    "setPayload, deletePayload",
    same(p1.payload, { ...payloads[1], seen: true }) && same(p3.payload, { headword: payloads[3].headword, pos: payloads[3].pos, seen: true }),
  );
  await client.delete("gcide", { points: [ids[0], ids[2]], wait: true });
  await client.delete("gcide", { filter: verb, wait: true });
  const left = ids.filter((id, i) => i !== 0 && i !== 2 && payloads[i].pos !== "verb").length;
  check("delete by ids and by filter", (await client.count("gcide")).count === left);

  // A request Shoal does not support is a 400 naming it.
  let error = "";
  try {
    await client.query("gcide", { query: qa, using: "image" });
  } catch (e) {
    error = `${/** @type {any} */ (e).status} ${JSON.stringify(/** @type {any} */ (e).data ?? e.message)}`;
  }
  check("an unsupported option is a 400 naming it", error.startsWith("400") && error.includes("using"), error);
  check("deleteCollection", await client.deleteCollection("gcide"));

  // Hybrid use: the dense vector "" and a sparse one ("lex", Qdrant's idf modifier) of hashed
  // words; the sparse query alone equals a brute-force dot product over the shared indices with
  // BM25's IDF, and both fused by RRF equal the formula over the two lists.
  check(
    "createCollection with sparse_vectors",
    await client.createCollection("hybrid", {
      vectors: { "": { size: dim, distance: "Cosine" } },
      sparse_vectors: { lex: { modifier: "idf" } },
    }),
  );
  const lexical = entries.map((e) => words(e.definition));
  for (let s = 0; s < N; s += 250) {
    const points = ids.slice(s, s + 250).map((id, j) => ({ id, vector: { "": vectors[s + j], lex: lexical[s + j] }, payload: payloads[s + j] }));
    await client.upsert("hybrid", { wait: true, points });
  }
  const df = new Map();
  for (const v of lexical) for (const i of v.indices) df.set(i, (df.get(i) ?? 0) + 1);
  const f = Math.fround;
  const bruteSparse = (/** @type {{ indices: number[], values: number[] }} */ q, /** @type {number} */ k) => {
    const w = new Map(q.indices.map((i, j) => [i, f(f(q.values[j]) * f(Math.log(1 + (N - (df.get(i) ?? 0) + 0.5) / ((df.get(i) ?? 0) + 0.5))))]));
    const order = [...w.keys()].sort((a, b) => a - b);
    return ids
      .map((id, n) => {
        const x = new Map(lexical[n].indices.map((i, j) => [i, lexical[n].values[j]]));
        let score = 0;
        let shared = false;
        for (const i of order) {
          if (x.has(i)) {
            score = f(score + f(w.get(i) * f(x.get(i))));
            shared = true;
          }
        }
        return { id, score, shared };
      })
      .filter((p) => p.shared)
      .sort((a, b) => b.score - a.score)
      .slice(0, k);
  };
  let sparseOk = 0;
  let hybridOk = 0;
  const texts = ["a large animal with a trunk", "to move quickly on foot", "a small boat", "the color of the sky"];
  for (const text of texts) {
    const q = words(text);
    const alone = (await client.query("hybrid", { query: q, using: "lex", limit: 10 })).points;
    const want = bruteSparse(q, 10);
    // The same scores; the same ids wherever scores do not tie (common words give equal
    // scores, whose order is the engine's).
    const close = (/** @type {number} */ a, /** @type {number} */ b) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(a));
    const all = bruteSparse(q, N);
    const tied = (/** @type {number} */ s) => all.filter((w) => close(w.score, s)).length > 1;
    if (
      alone.length === want.length &&
      alone.every((p, i) => close(p.score, want[i].score) && (tied(want[i].score) || p.id === want[i].id))
    ) {
      sparseOk++;
    }
    const dense = (await client.query("hybrid", { query: embed(text), using: "", limit: 10 })).points;
    const res = await client.query("hybrid", {
      prefetch: [
        { query: embed(text), using: "", limit: 10 },
        { query: q, using: "lex", limit: 10 },
      ],
      query: { fusion: "rrf" },
      limit: 10,
    });
    const fusedWant = fused([dense, alone], { k: 2 }).slice(0, 10);
    if (same(res.points.map((p) => p.id), fusedWant.map((p) => p.id)) && res.points.every((p, i) => Math.abs(p.score - fusedWant[i].score) <= 1e-6)) {
      hybridOk++;
    }
  }
  check("query: a sparse vector (idf) equals brute force", sparseOk === texts.length, `${sparseOk}/${texts.length}`);
  check("query: dense and sparse prefetches fused by RRF", hybridOk === texts.length, `${hybridOk}/${texts.length}`);
  const [withVectors] = await client.retrieve("hybrid", { ids: [ids[4]], with_vector: true });
  const stored = /** @type {any} */ (withVectors.vector);
  check(
    "retrieve: the dense and sparse vectors by name",
    stored && stored[""].length === dim && same(stored.lex.indices, [...lexical[4].indices].sort((a, b) => a - b)),
  );
  check("deleteCollection hybrid", await client.deleteCollection("hybrid"));
} finally {
  await server.close();
}
finish();
