#!/usr/bin/env python3
"""Several named dense vectors through the official qdrant-client (PyPI, REST) against
`shoal serve`, unmodified:

    python3 host-native/tests/named_compat.py PATH/TO/shoal

A collection with three named dense vectors of their own sizes and distances ("image":
Cosine 6-d, "text": Euclid 9-d, "code": Dot 4-d) and a sparse vector, 500 points upserted in
batches (integer and UUID ids) through a server that seals every 150 points, so the set has
several segments, each vector with its own IVF index. Per vector, exact searches equal a
brute-force answer computed here (numpy float32); default (IVF) searches give each point its
exact score and recall@10 >= 0.9; filtered searches, the older search call with a
`NamedVector`, prefetches of two vectors fused by RRF, `with_vector` by name and a payload
change keeping every vector. A point without one of the dense vectors, a wrong size, an
unknown or missing `using` are 400s that change nothing. Then the server restarts on the same
folder and every answer is the same.
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

N = 500
VECTORS = {"image": (6, m.Distance.COSINE), "text": (9, m.Distance.EUCLID), "code": (4, m.Distance.DOT)}
f32 = numpy.float32


def point_id(i):
    return str(uuid.UUID(int=(i * 7919) << 64 | i)) if i % 3 == 1 else i


def make_points(seed):
    rng = random.Random(seed)
    points = {}
    for i in range(N):
        dense = {name: [rng.uniform(-1, 1) for _ in range(dim)] for name, (dim, _) in VECTORS.items()}
        sparse = {k: float(f32(rng.uniform(0, 2))) for k in rng.sample(range(30), 3)}
        points[point_id(i)] = (dense, sparse, {"group": i % 4})
    return points


def score(name, query, stored):
    """Qdrant's score of `stored` for `query` in vector `name`, in float32."""
    q, x = numpy.array(query, dtype=f32), numpy.array(stored, dtype=f32)
    distance = VECTORS[name][1]
    if distance == m.Distance.COSINE:
        q, x = q / numpy.linalg.norm(q), x / numpy.linalg.norm(x)
        return float(numpy.dot(q, x))
    if distance == m.Distance.EUCLID:
        return float(numpy.sqrt(numpy.sum((q - x) ** 2)))
    return float(numpy.dot(q, x))


def brute(points, name, query, keep, k):
    scored = [(pid, score(name, query, d[name])) for pid, (d, _, p) in points.items() if keep(p)]
    lower = VECTORS[name][1] == m.Distance.EUCLID
    return sorted(scored, key=lambda x: x[1] if lower else -x[1])[:k]


def close(a, b):
    return abs(a - b) <= 1e-4 * max(1.0, abs(b))


def check_exact(got, want, what):
    """The same scores rank by rank; the same ids except among scores this close."""
    assert len(got) == len(want), (what, got, want)
    for (gid, gs), (wid, ws) in zip(got, want):
        assert close(gs, ws), (what, got, want)
        assert gid == wid or any(i == gid and close(s, ws) for i, s in want), (what, got, want)


def queries(client, url, points, seed):
    """Every check of the queries; returns the answers (to compare after a restart)."""
    rng = random.Random(seed)
    answers, hits, total = [], 0, 0
    g2 = m.Filter(must=[m.FieldCondition(key="group", match=m.MatchValue(value=2))])
    for _ in range(6):
        for name, (dim, _) in VECTORS.items():
            q = [rng.uniform(-1, 1) for _ in range(dim)]
            for flt, keep in ((None, lambda p: True), (g2, lambda p: p["group"] == 2)):
                want = brute(points, name, q, keep, 10)
                exact = client.query_points("n", query=q, using=name, query_filter=flt, limit=10,
                                            search_params=m.SearchParams(exact=True)).points
                check_exact([(p.id, p.score) for p in exact], want, (name, "exact", flt is not None))
                got = client.query_points("n", query=q, using=name, query_filter=flt, limit=10).points
                for p in got:
                    assert close(p.score, score(name, q, points[p.id][0][name])), (name, p.id, p.score)
                    assert keep(points[p.id][2]), (name, p.id)
                hits += len({p.id for p in got} & {i for i, _ in want})
                total += len(want)
                answers.append([(p.id, p.score) for p in got])
            # A threshold in the vector's own terms (a distance for Euclid, a similarity else).
            cut = brute(points, name, q, lambda p: True, 10)[4][1]
            kept = client.query_points("n", query=q, using=name, limit=10, score_threshold=cut,
                                       search_params=m.SearchParams(exact=True)).points
            lower = VECTORS[name][1] == m.Distance.EUCLID
            assert kept and all((p.score <= cut + 1e-4) if lower else (p.score >= cut - 1e-4) for p in kept), name
            assert len(kept) in range(4, 7), (name, len(kept))
            # Qdrant's older search call (gone from this client) with a NamedVector.
            status, old = http(url, "POST", "/collections/n/points/search",
                               {"vector": {"name": name, "vector": q}, "limit": 10})
            assert status == 200, old
            assert [(p["id"], p["score"]) for p in old["result"]] == answers[-2], name
        # Two vectors fused, each ranking its own prefetch.
        qi, qt = ([rng.uniform(-1, 1) for _ in range(VECTORS[n][0])] for n in ("image", "text"))
        image = [(p.id, p.score) for p in client.query_points("n", query=qi, using="image", limit=12).points]
        text = [(p.id, p.score) for p in client.query_points("n", query=qt, using="text", limit=12).points]
        pre = [m.Prefetch(query=qi, using="image", limit=12), m.Prefetch(query=qt, using="text", limit=12)]
        got = client.query_points("n", prefetch=pre, query=m.FusionQuery(fusion=m.Fusion.RRF), limit=10).points
        want = fused([image, text], rrf_k=2)[:10]
        assert [p.id for p in got] == [i for i, _ in want], (got, want)
        answers.append([(p.id, p.score) for p in got])
    assert hits / total >= 0.9, f"recall@10 {hits / total:.3f}"
    return answers


def main():
    binary = sys.argv[1]
    data = tempfile.mkdtemp(prefix="shoal-named-")
    points = make_points(5)
    server = Server(binary, data, ["--api-key", "sesame", "--seal-rows", "150"])
    try:
        client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False, timeout=30)
        assert client.create_collection(
            "n",
            vectors_config={name: m.VectorParams(size=dim, distance=d) for name, (dim, d) in VECTORS.items()},
            sparse_vectors_config={"keywords": m.SparseVectorParams()},
        )
        params = client.get_collection("n").config.params
        assert {k: (v.size, v.distance) for k, v in params.vectors.items()} == VECTORS, params.vectors
        items = list(points.items())
        for at in range(0, N, 100):
            part = items[at:at + 100]
            sparse = [m.SparseVector(indices=list(s), values=list(s.values())) for _, (_, s, _) in part]
            if at % 200 == 0:
                batch = [m.PointStruct(id=pid, payload=p, vector={**d, "keywords": sv})
                         for (pid, (d, _, p)), sv in zip(part, sparse)]
            else:  # Qdrant's columnar batch: per vector name, one vector per id
                columns = {name: [d[name] for _, (d, _, _) in part] for name in VECTORS}
                batch = m.Batch(ids=[pid for pid, _ in part], payloads=[p for _, (_, _, p) in part],
                                vectors={**columns, "keywords": sparse})
            client.upsert("n", batch)
        assert client.count("n").count == N
        first = queries(client, server.url, points, 1)
        # Bad input: a 400 naming it, nothing written.
        d = dict(items[0][1][0])
        bad = [({"image": d["image"], "text": d["text"]}, "code"),
               ({**d, "text": d["text"][:8]}, "dimension"),
               ({**d, "audio": [0.0]}, "audio"),
               (d["image"], "several dense vectors")]
        for vector, needle in bad:
            expect_error(lambda: client.upsert("n", [m.PointStruct(id=10_000, vector=vector)]), 400, needle)
        assert client.count("n").count == N
        expect_error(lambda: client.query_points("n", query=[0.0] * 6, using="audio"), 400, "audio")
        expect_error(lambda: client.query_points("n", query=[0.0] * 6), 400, "name the one")
        expect_error(lambda: client.query_points("n", query=[0.0] * 6, using="text"), 400, "dimension")
        # Vectors by name; a payload change keeps them.
        pid = items[7][0]
        rec = client.retrieve("n", [pid], with_vectors=True)[0]
        assert set(rec.vector) == set(VECTORS) | {"keywords"}, rec.vector
        for name in ("text", "code"):  # stored as given (Cosine ones are normalised)
            assert numpy.allclose(rec.vector[name], points[pid][0][name], atol=1e-6), name
        image = numpy.array(points[pid][0]["image"])
        assert numpy.allclose(rec.vector["image"], image / numpy.linalg.norm(image), atol=1e-6)
        only = client.retrieve("n", [pid], with_vectors=["code"])[0]
        assert set(only.vector) == {"code"}, only.vector
        client.set_payload("n", payload={"tag": "x"}, points=[pid])
        points[pid][2]["tag"] = "x"
        again = client.retrieve("n", [pid], with_vectors=True)[0]
        assert again.payload == points[pid][2] and again.vector == rec.vector
        # Deletes, then a restart on the same folder: the segments and the log hold every vector.
        gone = [items[i][0] for i in range(0, N, 9)]
        client.delete("n", points_selector=m.PointIdsList(points=gone))
        for g in gone:
            del points[g]
        after = queries(client, server.url, points, 2)
        client.close()
        server.stop()
        server = Server(binary, data, ["--api-key", "sesame", "--seal-rows", "150"])
        client = QdrantClient(url=server.url, api_key="sesame", prefer_grpc=False, timeout=30)
        assert client.count("n").count == len(points)
        assert queries(client, server.url, points, 2) == after
        assert client.retrieve("n", [pid], with_vectors=True)[0].vector == again.vector
        assert first  # (answered before the deletes)
        client.close()
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    print("named vectors: qdrant-client queries per vector equal brute force, before and after a restart")


if __name__ == "__main__":
    main()
