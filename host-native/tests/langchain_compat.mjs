// LangChain.js's QdrantVectorStore (@langchain/qdrant, on the official @qdrant/js-client-rest;
// versions pinned in package.json) against `shoal serve`, unmodified: its documented basic use —
// fromTexts with metadata, similarity search with and without a metadata filter, delete by id —
// with real embeddings (the demo's wordllama model through examples/gcide/embed.js, over GCIDE
// definitions), every answer checked against a brute-force cosine ranking computed here.
//   node host-native/tests/langchain_compat.mjs   (after scripts/gcide-demo-data.sh)
import { Embeddings } from "@langchain/core/embeddings";
import { QdrantVectorStore } from "@langchain/qdrant";
import { check, finish } from "../../bindings-js/test/edge/checks.mjs";
import { shoalServe } from "../../bindings-js/test/edge/serve.mjs";
import { cosine, embed, entries as gcide, root } from "./gcide_compat.mjs";

const N = 1500;

class GcideEmbeddings extends Embeddings {
  constructor() {
    super({});
  }
  async embedDocuments(texts) {
    return texts.map(embed);
  }
  async embedQuery(text) {
    return embed(text);
  }
}

const entries = gcide(N);
const texts = entries.map((e) => e.definition);
const metadatas = entries.map((e) => ({ headword: e.headword, pos: e.pos, sizes: { letters: e.letters } }));
const embeddings = new GcideEmbeddings();
const vectors = await embeddings.embedDocuments(texts);
async function brute(query, keep, k) {
  const q = await embeddings.embedQuery(query);
  return texts
    .map((t, i) => [i, cosine(q, vectors[i])])
    .filter(([i]) => keep(i))
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([i]) => texts[i]);
}

const server = await shoalServe(root);
try {
  const store = await QdrantVectorStore.fromTexts(texts, metadatas, embeddings, {
    url: server.base,
    collectionName: "gcide",
  });
  check("fromTexts stores every document", (await store.client.count("gcide")).count === N);
  let same = 0;
  let asked = 0;
  for (const query of ["a large animal with a trunk", "to move quickly on foot", "a small boat", "the color of the sky"]) {
    const plain = await store.similaritySearch(query, 5);
    asked++;
    if (JSON.stringify(plain.map((d) => d.pageContent)) === JSON.stringify(await brute(query, () => true, 5))) same++;
    const filter = { must: [{ key: "metadata.pos", match: { value: "verb" } }] };
    const filtered = await store.similaritySearchWithScore(query, 5, filter);
    asked++;
    const want = await brute(query, (i) => metadatas[i].pos === "verb", 5);
    const q = await embeddings.embedQuery(query);
    const scoresOk = filtered.every(([d, s]) => Math.abs(s - cosine(q, vectors[texts.indexOf(d.pageContent)])) < 1e-4);
    if (JSON.stringify(filtered.map(([d]) => d.pageContent)) === JSON.stringify(want) && scoresOk) same++;
    const nested = { must: [{ key: "metadata.sizes.letters", range: { lte: 4 } }] };
    const short = await store.similaritySearch(query, 5, nested);
    asked++;
    if (JSON.stringify(short.map((d) => d.pageContent)) === JSON.stringify(await brute(query, (i) => entries[i].letters <= 4, 5))) same++;
  }
  check("similarity searches (plain, metadata filter, nested path) equal brute force", same === asked, `${same}/${asked}`);
  const first = (await store.client.scroll("gcide", { limit: 3 })).points.map((p) => p.id);
  await store.delete({ ids: first });
  check("delete by id", (await store.client.count("gcide")).count === N - 3 && (await store.client.retrieve("gcide", { ids: first })).length === 0);
} finally {
  await server.close();
}
finish();
