#!/usr/bin/env python3
"""LangChain's QdrantVectorStore (PyPI langchain-qdrant, pinned by the Makefile) against
`shoal serve`, unmodified: its documented basic use — add documents with metadata, similarity
search with a metadata filter, delete by id — with real embeddings (wordllama's 256-d
l2_supercat model over GCIDE definitions, the demo's data and model), each answer checked
against a brute-force cosine ranking computed here.

    python3 host-native/tests/langchain_compat.py PATH/TO/shoal
"""

import logging
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gcide_compat import cosine, definitions, embed  # noqa: E402
from shoal_server import Server  # noqa: E402

from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_qdrant import QdrantVectorStore  # noqa: E402
from qdrant_client.http import models as m  # noqa: E402

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
        print(f"langchain-qdrant: {checked} searches equal to brute force; add, filter, delete as against Qdrant")
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
