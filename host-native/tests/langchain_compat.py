#!/usr/bin/env python3
"""LangChain's QdrantVectorStore (PyPI langchain-qdrant, pinned by the Makefile) against
`shoal serve`, unmodified: its documented basic use — add documents with metadata, similarity
search with a metadata filter, delete by id — with real embeddings (wordllama's 256-d
l2_supercat model over GCIDE definitions, the demo's data and model), each answer checked
against a brute-force cosine ranking computed here; then its hybrid mode
(`RetrievalMode.HYBRID`: the dense vector and a sparse one fused by RRF), with a lexical sparse
embedding defined here (hashed words, term counts), checked against the dense and sparse brute
force fused by Qdrant's formula.

    python3 host-native/tests/langchain_compat.py PATH/TO/shoal
"""

import logging
import re
import shutil
import sys
import tempfile
import uuid
import warnings
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gcide_compat import cosine, definitions, embed  # noqa: E402
from shoal_server import Server  # noqa: E402

from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_qdrant import QdrantVectorStore, RetrievalMode, SparseEmbeddings, SparseVector  # noqa: E402
from qdrant_client.http import models as m  # noqa: E402
import numpy  # noqa: E402  (qdrant-client's own dependency)

N = 1500
logging.getLogger("httpx").setLevel(logging.WARNING)
# An API key over plain http warns in the client; that is the client's business.
warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")


class WordLlamaEmbeddings(Embeddings):
    """wordllama's mean-pooled token vectors, as floats."""

    def embed_documents(self, texts):
        return embed(texts)

    def embed_query(self, text):
        return embed([text])[0]


class HashedWords(SparseEmbeddings):
    """A lexical sparse embedding: each word (lowercase letters) hashed to an index (CRC-32 of
    the word, 20 bits); its value the word's count plus a fraction fixed by the word, so that
    scores rarely tie."""

    @staticmethod
    def one(text):
        counts = {}
        for word in re.findall(r"[a-z]+", text.lower()):
            i = zlib.crc32(word.encode()) & 0xFFFFF
            counts[i] = counts.get(i, 0.0) + 1.0 + (zlib.crc32(word.encode()[::-1]) % 997) / 9970.0
        return SparseVector(indices=list(counts), values=list(counts.values()))

    def embed_documents(self, texts):
        return [self.one(t) for t in texts]

    def embed_query(self, text):
        return self.one(text)


def sparse_dot(q, d):
    """Shoal's and Qdrant's sparse score: the shared indices' products, summed by index in f32."""
    dv = dict(zip(d.indices, d.values))
    score, shared = numpy.float32(0.0), False
    for i, w in sorted(zip(q.indices, q.values)):
        if i in dv:
            score = numpy.float32(score + numpy.float32(numpy.float32(w) * numpy.float32(dv[i])))
            shared = True
    return score if shared else None


def hybrid(server, texts, metadatas, vectors, embeddings):
    """RetrievalMode.HYBRID: the server's dense and sparse answers each equal the brute force
    (scores; ids wherever scores do not tie — common words give equal sparse scores, whose order
    is the engine's), and each hybrid answer is Qdrant's RRF (k = 2) over those two answers (ties
    by best position, then id)."""
    sparse = HashedWords()
    docs_sparse = sparse.embed_documents(texts)
    ids = [str(uuid.UUID(int=(i * 2654435761) % (1 << 128))) for i in range(len(texts))]
    at = {pid: i for i, pid in enumerate(ids)}
    store = QdrantVectorStore.from_texts(texts, embeddings, metadatas=metadatas, ids=ids, url=server.url,
                                         api_key="sesame", prefer_grpc=False, collection_name="gcide-hybrid",
                                         sparse_embedding=sparse, retrieval_mode=RetrievalMode.HYBRID)
    f32 = numpy.float32
    k = 5

    def check(got, want, every, what):
        """`got` (points) against `want` ((index, score) best first); `every`: each point's
        brute-force score by index."""
        assert [round(p.score, 4) for p in got] == [round(float(s), 4) for _, s in want], what
        for p, (i, s) in zip(got, want):
            tied = sum(1 for t in every if abs(float(t) - float(s)) < 1e-6) > 1
            assert tied or at[p.id] == i, what
            assert abs(p.score - float(every[at[p.id]])) < 1e-4, what

    checked = 0
    for query in ["a large animal with a trunk", "to move quickly on foot", "a small boat", "the color of the sky",
                  "a tree that bears nuts"]:
        for letter in [None, "b"]:
            keep = (lambda i: True) if letter is None else (lambda i: metadatas[i]["letter"] == letter)
            flt = None if letter is None else m.Filter(
                must=[m.FieldCondition(key="metadata.letter", match=m.MatchValue(value=letter))])
            q = embeddings.embed_query(query)
            qs = sparse.embed_query(query)
            dense_want = sorted(((i, cosine(q, vectors[i])) for i in range(N) if keep(i)), key=lambda x: -x[1])[:k]
            dense_got = store.client.query_points("gcide-hybrid", query=q, using="", query_filter=flt, limit=k).points
            check(dense_got, dense_want, [cosine(q, v) for v in vectors], (query, letter, "dense"))
            scored = [(i, sparse_dot(qs, docs_sparse[i])) for i in range(N) if keep(i)]
            lexical_want = sorted(((i, s) for i, s in scored if s is not None), key=lambda x: -x[1])[:k]
            lexical_got = store.client.query_points(
                "gcide-hybrid", query=m.SparseVector(indices=qs.indices, values=qs.values), using="langchain-sparse",
                query_filter=flt, limit=k).points
            check(lexical_got, lexical_want, [sparse_dot(qs, d) or 0.0 for d in docs_sparse], (query, letter, "sparse"))
            sums, best = {}, {}
            for ranking in (dense_got, lexical_got):
                for p, point in enumerate(ranking):
                    i = at[point.id]
                    sums[i] = f32(sums.get(i, f32(0.0)) + f32(1.0) / (f32(p + 1) + f32(2) - f32(1.0)))
                    best[i] = min(best.get(i, p), p)
            want = sorted(sums, key=lambda i: (-sums[i], best[i], ids[i]))[:k]
            got = store.similarity_search_with_score(query, k=k, filter=flt)
            assert [d.page_content for d, _ in got] == [texts[i] for i in want], (query, letter)
            assert [round(s, 6) for _, s in got] == [round(float(sums[i]), 6) for i in want], (query, got)
            checked += 1
    # The sparse mode alone (the same collection, its sparse vector): the same answer.
    lexical_only = QdrantVectorStore(client=store.client, collection_name="gcide-hybrid", sparse_embedding=sparse,
                                     retrieval_mode=RetrievalMode.SPARSE)
    got = lexical_only.similarity_search_with_score("a small boat", k=5)
    qs = sparse.embed_query("a small boat")
    alone = store.client.query_points("gcide-hybrid", query=m.SparseVector(indices=qs.indices, values=qs.values),
                                      using="langchain-sparse", limit=5).points
    assert [d.page_content for d, _ in got] == [texts[at[p.id]] for p in alone]
    assert all(abs(s - p.score) < 1e-6 for (_, s), p in zip(got, alone))
    # Delete by id leaves the hybrid answers.
    assert store.delete(ids=ids[:3])
    assert all(d.page_content not in texts[:3] or texts.count(d.page_content) > 1
               for d in store.similarity_search(texts[0], k=10))
    return checked + 1


def main():
    binary = sys.argv[1]
    entries = definitions(N)
    texts = [text for _, text in entries]
    metadatas = [{"headword": head, "letter": head[:1].lower(), "details": {"length": len(text)}}
                 for head, text in entries]
    embeddings = WordLlamaEmbeddings()
    vectors = embeddings.embed_documents(texts)
    data = tempfile.mkdtemp(prefix="shoal-langchain-")
    server = Server(binary, data, ["--api-key", "sesame"])
    try:
        store = QdrantVectorStore.from_texts(texts, embeddings, metadatas=metadatas, url=server.url,
                                             api_key="sesame", prefer_grpc=False, collection_name="gcide")
        ids = store.client.scroll("gcide", limit=N + 10)[0]
        assert len(ids) == N, len(ids)

        def brute(query, keep, k):
            q = embeddings.embed_query(query)
            ranked = sorted((i for i in range(N) if keep(i)), key=lambda i: -cosine(q, vectors[i]))
            return [texts[i] for i in ranked[:k]]

        checked = 0
        for query in ["a large animal with a trunk", "to move quickly on foot", "a small boat", "the color of the sky"]:
            got = store.similarity_search(query, k=5)
            assert [d.page_content for d in got] == brute(query, lambda i: True, 5), query
            # A metadata filter, as LangChain's documentation writes it: the key under `metadata`.
            flt = m.Filter(must=[m.FieldCondition(key="metadata.letter", match=m.MatchValue(value="b"))])
            got = store.similarity_search_with_score(query, k=5, filter=flt)
            want = brute(query, lambda i: metadatas[i]["letter"] == "b", 5)
            assert [d.page_content for d, _ in got] == want, query
            assert all(d.metadata["letter"] == "b" for d, _ in got)
            q = embeddings.embed_query(query)
            for d, score in got:
                i = texts.index(d.page_content)
                assert abs(score - cosine(q, vectors[i])) < 1e-4, (score, cosine(q, vectors[i]))
            nested = m.Filter(must=[m.FieldCondition(key="metadata.details.length", range=m.Range(lt=60))])
            got = store.similarity_search(query, k=5, filter=nested)
            assert [d.page_content for d in got] == brute(query, lambda i: len(entries[i][1]) < 60, 5), query
            checked += 3
        # Delete by id (LangChain's ids are UUIDs): the points are gone from every answer.
        first = [p.id for p in store.client.scroll("gcide", limit=3)[0]]
        assert store.delete(ids=first)
        assert store.client.count("gcide").count == N - 3
        assert store.client.retrieve("gcide", ids=first) == []
        checked += hybrid(server, texts, metadatas, vectors, embeddings)
        print(f"langchain-qdrant: {checked} searches equal to brute force (dense, hybrid, sparse); add, filter, "
              "delete as against Qdrant")
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
