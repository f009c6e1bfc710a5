#!/usr/bin/env python3
"""LlamaIndex's QdrantVectorStore (PyPI llama-index-vector-stores-qdrant, pinned by the
Makefile) against `shoal serve`, unmodified: its documented basic use — a VectorStoreIndex
built from documents with metadata, retrieval with and without metadata filters, deleting a
document — with real embeddings (wordllama's 256-d model over GCIDE definitions, the demo's
data and model), each answer checked against a brute-force cosine ranking computed here; then
its hybrid use (`enable_hybrid=True`: the named dense vector "text-dense" and the sparse vector
"text-sparse-new", a lexical sparse encoder of hashed words given here), each sparse answer
checked against a brute-force dot product and each hybrid answer against LlamaIndex's own
fusion of the dense and sparse answers.

    python3 host-native/tests/llamaindex_compat.py PATH/TO/shoal
"""

import json
import logging
import re
import zlib
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gcide_compat import cosine, definitions, embed  # noqa: E402
from shoal_server import Server  # noqa: E402

from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import BaseEmbedding  # noqa: E402
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters  # noqa: E402
from llama_index.vector_stores.qdrant import QdrantVectorStore  # noqa: E402
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode  # noqa: E402
from llama_index.vector_stores.qdrant.utils import relative_score_fusion  # noqa: E402
from qdrant_client import QdrantClient  # noqa: E402

N = 1200
logging.getLogger("httpx").setLevel(logging.WARNING)
warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")
class WordLlamaEmbedding(BaseEmbedding):
    """wordllama's mean-pooled token vectors."""

    def _get_query_embedding(self, query):
        return embed([query])[0]

    async def _aget_query_embedding(self, query):
        return embed([query])[0]

    def _get_text_embedding(self, text):
        return embed([text])[0]

    def _get_text_embeddings(self, texts):
        return embed(texts)


def hashed_words(texts):
    """LlamaIndex's sparse encoder shape, `(indices per text, values per text)`: each word
    (lowercase letters) hashed to an index (CRC-32, 20 bits), its count plus a fraction fixed by
    the word (so that scores rarely tie) as the value."""
    indices, values = [], []
    for text in texts:
        counts = {}
        for word in re.findall(r"[a-z]+", text.lower()):
            i = zlib.crc32(word.encode()) & 0xFFFFF
            counts[i] = counts.get(i, 0.0) + 1.0 + (zlib.crc32(word.encode()[::-1]) % 997) / 9970.0
        indices.append(list(counts))
        values.append(list(counts.values()))
    return indices, values


def sparse_dot(q, d):
    """The sparse score: the shared indices' products summed by index, in float32."""
    import numpy
    f32 = numpy.float32
    score, shared = f32(0.0), False
    for i, w in sorted(q.items()):
        if i in d:
            score = f32(score + f32(f32(w) * f32(d[i])))
            shared = True
    return score if shared else None


def hybrid(server, docs):
    """LlamaIndex's hybrid mode: a named dense vector and a sparse one, queried in sparse and
    hybrid modes."""
    client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False)
    store = QdrantVectorStore(client=client, collection_name="gcide-hybrid", enable_hybrid=True,
                              sparse_doc_fn=hashed_words, sparse_query_fn=hashed_words)
    index = VectorStoreIndex.from_documents(docs, storage_context=StorageContext.from_defaults(vector_store=store))
    info = client.get_collection("gcide-hybrid")
    assert set(info.config.params.vectors) == {"text-dense"}, info.config.params.vectors
    assert set(info.config.params.sparse_vectors) == {"text-sparse-new"}
    points = client.scroll("gcide-hybrid", limit=len(docs) + 10, with_payload=True, with_vectors=True)[0]
    assert len(points) == len(docs)
    texts = [json.loads(p.payload["_node_content"])["text"] for p in points]
    dense = [p.vector["text-dense"] for p in points]
    lexical = [dict(zip(p.vector["text-sparse-new"].indices, p.vector["text-sparse-new"].values)) for p in points]
    # The stored sparse vectors are the encoder's, as float32.
    import numpy
    ix, vs = hashed_words(texts)
    for i, v, lex in zip(ix, vs, lexical):
        assert {k: float(numpy.float32(x)) for k, x in zip(i, v)} == lex
    at = {str(p.id): n for n, p in enumerate(points)}
    checked = 0
    for query in ["a large animal with a trunk", "to move quickly on foot", "a small boat", "the color of the sky"]:
        qi, qv = hashed_words([query])
        q = dict(zip(qi[0], qv[0]))
        scored = [(n, sparse_dot(q, lexical[n])) for n in range(len(points))]
        lexical_top = sorted(((n, s) for n, s in scored if s is not None), key=lambda x: -x[1])[:5]
        e = embed([query])[0]
        # The sparse mode: Shoal's sparse answer against the brute force — the same scores, each
        # point's its own (common words give equal scores, whose order is the engine's).
        sparse = store.query(VectorStoreQuery(query_str=query, query_embedding=e, similarity_top_k=5,
                                              mode=VectorStoreQueryMode.SPARSE))
        assert all(abs(a - float(b)) < 1e-4 for a, (_, b) in zip(sparse.similarities, lexical_top)), query
        assert len(sparse.similarities) == len(lexical_top)
        for node_id, s in zip(sparse.ids, sparse.similarities):
            assert abs(float(scored[at[node_id]][1]) - s) < 1e-4, (query, node_id)
        # The dense mode against the brute force.
        dense_res = store.query(VectorStoreQuery(query_embedding=e, similarity_top_k=5))
        dense_top = sorted(range(len(points)), key=lambda n: -cosine(e, dense[n]))[:5]
        assert [at[i] for i in dense_res.ids] == dense_top, query
        # The hybrid mode: LlamaIndex's fusion of those two answers.
        want = relative_score_fusion(dense_res, sparse, alpha=0.5, top_k=5)
        got = index.as_retriever(similarity_top_k=5, sparse_top_k=5, vector_store_query_mode="hybrid").retrieve(query)
        assert [n.node.node_id for n in got] == [n.node_id for n in want.nodes], query
        checked += 1
    return checked


def main():
    binary = sys.argv[1]
    entries = definitions(N)
    Settings.embed_model = WordLlamaEmbedding()
    Settings.llm = None
    docs = []
    for head, text in entries:
        meta = {"headword": head, "letter": head[:1].lower(), "short": "yes" if len(text) < 80 else "no"}
        # Only the text is embedded (the brute force below embeds the same).
        docs.append(Document(text=text, metadata=meta, excluded_embed_metadata_keys=list(meta)))
    data = tempfile.mkdtemp(prefix="shoal-llamaindex-")
    server = Server(binary, data, ["--api-key", "sesame"])
    try:
        client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False)
        store = QdrantVectorStore(client=client, collection_name="gcide")
        index = VectorStoreIndex.from_documents(docs, storage_context=StorageContext.from_defaults(vector_store=store))
        assert client.count("gcide").count == N, client.count("gcide")
        # The nodes LlamaIndex stored (its splitter may reshape a text): their text and
        # metadata read back from the payloads, embedded here again for the brute force.
        points = client.scroll("gcide", limit=N + 10, with_payload=True)[0]
        node_texts = [json.loads(p.payload["_node_content"])["text"] for p in points]
        metas = [{k: p.payload[k] for k in ("letter", "short")} for p in points]
        node_vectors = embed(node_texts)

        def brute(query, keep, k):
            q = embed([query])[0]
            ranked = sorted((i for i in range(len(points)) if keep(metas[i])),
                            key=lambda i: -cosine(q, node_vectors[i]))
            return [node_texts[i] for i in ranked[:k]]

        checked = 0
        letter_b = MetadataFilters(filters=[MetadataFilter(key="letter", value="b")])
        short_or_c = MetadataFilters(
            filters=[MetadataFilter(key="short", value="yes"), MetadataFilter(key="letter", value="c")], condition="or")
        not_a = MetadataFilters(filters=[MetadataFilter(key="letter", value="a", operator=FilterOperator.NE)])
        for query in ["a large animal with a trunk", "to move quickly on foot", "a small boat"]:
            for filters, keep in [
                (None, lambda m: True),
                (letter_b, lambda m: m["letter"] == "b"),
                (short_or_c, lambda m: m["short"] == "yes" or m["letter"] == "c"),
                (not_a, lambda m: m["letter"] != "a"),
            ]:
                got = index.as_retriever(similarity_top_k=5, filters=filters).retrieve(query)
                assert [n.node.get_content() for n in got] == brute(query, keep, 5), (query, filters)
                q = embed([query])[0]
                for n in got:
                    want = cosine(q, node_vectors[node_texts.index(n.node.get_content())])
                    assert abs(n.score - want) < 1e-4, (n.score, want)
                checked += 1
        # Deleting a document removes its nodes (LlamaIndex deletes by a filter on doc_id).
        index.delete_ref_doc(docs[0].doc_id)
        assert client.count("gcide").count == N - 1
        checked += hybrid(server, docs)
        print(f"llama-index-vector-stores-qdrant: {checked} retrievals equal to brute force (dense, sparse, hybrid); "
              "build, filter, delete")
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
