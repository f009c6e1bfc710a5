#!/usr/bin/env python3
"""LlamaIndex's QdrantVectorStore (PyPI llama-index-vector-stores-qdrant, pinned by the
Makefile) against `shoal serve`, unmodified: its documented basic use — a VectorStoreIndex
built from documents with metadata, retrieval with and without metadata filters, deleting a
document — with real embeddings (wordllama's 256-d model over GCIDE definitions, the demo's
data and model), each answer checked against a brute-force cosine ranking computed here.

    python3 host-native/tests/llamaindex_compat.py PATH/TO/shoal
"""

import json
import logging
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
        print(f"llama-index-vector-stores-qdrant: {checked} retrievals equal to brute force; build, filter, delete")
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
