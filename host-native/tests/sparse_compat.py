#!/usr/bin/env python3
"""Sparse vectors through the official qdrant-client (PyPI, REST) against `shoal serve`,
unmodified:

    python3 host-native/tests/sparse_compat.py PATH/TO/shoal

A collection with the dense vector "" and two sparse vectors ("plain", and "weighted" with
Qdrant's `idf` modifier), 600 points upserted in batches (some points without a sparse vector,
some with an empty one; integer and UUID ids) through a server that seals every 150 points.
Each sparse query's results equal a brute-force dot product computed here (numpy float32, the
shared indices in ascending order; IDF from the points' document frequencies); prefetches of
the dense and a sparse vector fused by RRF and DBSF equal the formulas over the two lists;
`NamedSparseVector` search, `with_vector` by name, a payload change keeping the sparse vectors,
deletes; bad sparse input is a 400 that changes nothing. Then the server restarts on the same
folder and every answer is the same (the log and the segments hold the sparse vectors).
"""

import random
import shutil
import sys
import tempfile
import uuid
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from shoal_server import Server  # noqa: E402
from qdrant_compat import expect_error, fused, http  # noqa: E402

import numpy  # noqa: E402
from qdrant_client import QdrantClient  # noqa: E402
from qdrant_client.http import models as m  # noqa: E402

warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")

N, DIM, INDICES = 600, 8, 40
f32 = numpy.float32


def point_id(i):
    return str(uuid.UUID(int=(i * 7919) << 64 | i)) if i % 3 == 1 else i


def make_points(seed):
    rng = random.Random(seed)
    points = {}
    for i in range(N):
        dense = [rng.uniform(-1, 1) for _ in range(DIM)]
        sparse = {}
        for name in ("plain", "weighted"):
            r = rng.random()
            if r < 0.1:
                continue  # the point does not hold it
            n = 0 if r < 0.15 else rng.randint(1, 8)
            idx = rng.sample(range(INDICES), n)
            sparse[name] = {k: float(f32(rng.uniform(-2, 3))) for k in idx}
        points[point_id(i)] = (dense, sparse, {"group": i % 4})
    return points


def sparse_model(d):
    return m.SparseVector(indices=list(d), values=list(d.values()))


def dot(query, stored):
    """0, plus w * x for each shared index, ascending, in float32; None when none is shared."""
    score, shared = f32(0.0), False
    for i in sorted(query):
        if i in stored:
            score = f32(score + f32(f32(query[i]) * f32(stored[i])))
            shared = True
    return score if shared else None


def brute(points, name, query, keep, k):
    q = dict(query)
    if name == "weighted":
        holding = [s[name] for _, s, _ in points.values() if name in s]
        n = len(holding)
        for i in q:
            df = sum(1 for h in holding if i in h)
            idf = numpy.log(f32(1.0) + (f32(n - df) + f32(0.5)) / (f32(df) + f32(0.5)), dtype=f32)
            q[i] = f32(f32(q[i]) * idf)
    scored = [(pid, dot(q, s[name])) for pid, (_, s, p) in points.items() if name in s and keep(p)]
    scored = [(pid, sc) for pid, sc in scored if sc is not None]
    return sorted(scored, key=lambda x: -x[1])[:k]


def check(got, want, what):
    assert [p.id for p in got] == [i for i, _ in want], (what, [(p.id, p.score) for p in got], want)
    for p, (_, s) in zip(got, want):
        assert abs(p.score - float(s)) <= 1e-5 * max(1.0, abs(float(s))), (what, p.score, s)


def queries(client, url, points, seed):
    """Every check of the queries; returns the answers (to compare after a restart)."""
    rng = random.Random(seed)
    answers = []
    g2 = m.Filter(must=[m.FieldCondition(key="group", match=m.MatchValue(value=2))])
    for _ in range(8):
        q = {k: float(f32(rng.uniform(-1, 2))) for k in rng.sample(range(INDICES), rng.randint(1, 5))}
        for name in ("plain", "weighted"):
            for flt, keep in ((None, lambda p: True), (g2, lambda p: p["group"] == 2)):
                got = client.query_points("s", query=sparse_model(q), using=name, query_filter=flt, limit=10).points
                check(got, brute(points, name, q, keep, 10), (name, q))
                answers.append([(p.id, p.score) for p in got])
            # Qdrant's older search call (gone from this client) with a NamedSparseVector.
            vector = {"name": name, "vector": {"indices": list(q), "values": list(q.values())}}
            status, old = http(url, "POST", "/collections/s/points/search", {"vector": vector, "limit": 10})
            assert status == 200, old
            assert [(p["id"], p["score"]) for p in old["result"]] == answers[-2]
        # Dense + sparse fused, as LangChain's hybrid mode asks.
        dq = [rng.uniform(-1, 1) for _ in range(DIM)]
        dense = [(p.id, p.score) for p in client.query_points("s", query=dq, using="", limit=12).points]
        sparse = [(p.id, p.score) for p in client.query_points("s", query=sparse_model(q), using="weighted",
                                                                 limit=12).points]
        pre = [m.Prefetch(query=dq, using="", limit=12), m.Prefetch(query=sparse_model(q), using="weighted", limit=12)]
        for fusion, want in ((m.Fusion.RRF, fused([dense, sparse], rrf_k=2)), (m.Fusion.DBSF, fused([dense, sparse]))):
            got = client.query_points("s", prefetch=pre, query=m.FusionQuery(fusion=fusion), limit=10).points
            check(got, want[:10], fusion)
            answers.append([(p.id, p.score) for p in got])
    return answers


def main():
    binary = sys.argv[1]
    data = tempfile.mkdtemp(prefix="shoal-sparse-")
    points = make_points(3)
    server = Server(binary, data, ["--api-key", "sesame", "--seal-rows", "150"])
    try:
        client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False, timeout=30)
        assert client.create_collection(
            "s",
            vectors_config={"": m.VectorParams(size=DIM, distance=m.Distance.DOT)},
            sparse_vectors_config={"plain": m.SparseVectorParams(index=m.SparseIndexParams(on_disk=False)),
                                   "weighted": m.SparseVectorParams(modifier=m.Modifier.IDF)},
        )
        info = client.get_collection("s")
        assert set(info.config.params.sparse_vectors) == {"plain", "weighted"}
        assert info.config.params.sparse_vectors["weighted"].modifier == m.Modifier.IDF
        items = list(points.items())
        for at in range(0, N, 100):
            batch = [m.PointStruct(id=pid, payload=p,
                                   vector={"": d, **{k: sparse_model(v) for k, v in s.items()}})
                     for pid, (d, s, p) in items[at:at + 100]]
            client.upsert("s", batch)
        assert client.count("s").count == N
        first = queries(client, server.url, points, 1)
        # A restart on the same folder: the segments and the log hold the sparse vectors.
        client.close()
        server.stop()
        server = Server(binary, data, ["--api-key", "sesame", "--seal-rows", "150"])
        client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False, timeout=30)
        assert queries(client, server.url, points, 1) == first
        # Bad sparse input: a 400 naming it, nothing written.
        bad = [({"": [0.0] * DIM, "plain": m.SparseVector(indices=[1, 1], values=[1.0, 2.0])}, "twice"),
               ({"": [0.0] * DIM, "nope": m.SparseVector(indices=[1], values=[1.0])}, "nope"),
               ({"plain": m.SparseVector(indices=[1], values=[1.0])}, "dense vector")]
        for vector, needle in bad:
            expect_error(lambda: client.upsert("s", [m.PointStruct(id=10_000, vector=vector)]), 400, needle)
        assert client.count("s").count == N
        expect_error(lambda: client.query_points("s", query=m.SparseVector(indices=[1], values=[1.0]), using="nope"),
                     400, "nope")
        expect_error(lambda: client.query_points("s", query=m.SparseVector(indices=[1], values=[1.0])), 400, "using")
        # Vectors by name; a payload change keeps them.
        items = list(points.items())
        pid = items[5][0]
        rec = client.retrieve("s", [pid], with_vectors=True)[0]
        assert set(rec.vector) == {""} | set(points[pid][1]), rec.vector
        for name, d in points[pid][1].items():
            assert dict(zip(rec.vector[name].indices, rec.vector[name].values)) == d
        rec = client.retrieve("s", [pid], with_vectors=["weighted"])[0]
        assert set(rec.vector) == {"weighted"} & set(points[pid][1]), rec.vector
        client.set_payload("s", payload={"tag": "x"}, points=[pid])
        points[pid][2]["tag"] = "x"
        again = client.retrieve("s", [pid], with_vectors=True)[0]
        assert again.payload == points[pid][2]
        assert {k: dict(zip(v.indices, v.values)) for k, v in again.vector.items() if k} == points[pid][1]
        # Deletes. (The IDF of the weighted vector counts deleted points until a seal or merge
        # drops them, as BM25's statistics do: the plain vector is checked from here on.)
        gone = [items[i][0] for i in range(0, N, 7)]
        client.delete("s", points_selector=m.PointIdsList(points=gone))
        for g in gone:
            del points[g]

        def plain_checks():
            rng = random.Random(9)
            out = []
            for _ in range(6):
                q = {k: float(f32(rng.uniform(-1, 2))) for k in rng.sample(range(INDICES), 3)}
                got = client.query_points("s", query=sparse_model(q), using="plain", limit=10).points
                check(got, brute(points, "plain", q, lambda p: True, 10), q)
                out.append([(p.id, p.score) for p in got])
            return out

        after = plain_checks()
        client.close()
        server.stop()
        server = Server(binary, data, ["--api-key", "sesame"])
        client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False, timeout=30)
        assert client.count("s").count == len(points)
        assert plain_checks() == after
        assert client.retrieve("s", [pid], with_vectors=True)[0].vector == again.vector
        client.close()
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    print("sparse vectors: qdrant-client queries equal brute force and the fusion formulas, before and after a restart")


if __name__ == "__main__":
    main()
