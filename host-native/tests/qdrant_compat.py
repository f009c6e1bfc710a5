#!/usr/bin/env python3
"""The official qdrant-client (PyPI, REST) against `shoal serve`, unmodified.

    python3 host-native/tests/qdrant_compat.py PATH/TO/shoal

Starts the server on a fresh data folder with an API key, then: create collections (Cosine,
Euclid), exists/get/list, payload indexes, upsert (points and Batch), query_points with
filters (results checked against a brute-force answer computed here), retrieve, count, scroll
(paged), delete by ids and by filter, UUID ids mixed with integers (every form Qdrant reads),
errors (wrong dimension, a malformed id, missing collection, wrong key) and delete_collection. Then every "not supported" row of docs/qdrant-compat.md,
sent as raw HTTP (its case in qdrant_unsupported.json): a 400 naming it, nothing changed; and
an unknown field in each typed body: a 400 naming the field. Exits non-zero on the first
mismatch.
"""

import json
import math
import random
import re
import shutil
from pathlib import Path
import sys
import tempfile
import urllib.error
import urllib.request
import warnings

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from shoal_server import Server  # noqa: E402  (the repository's bench/ helpers)

import numpy  # noqa: E402  (qdrant-client's own dependency)
from qdrant_client import QdrantClient
from qdrant_client.http import models as m
from qdrant_client.http.exceptions import UnexpectedResponse

# An API key over plain http warns in the client; that is the client's business.
warnings.filterwarnings("ignore", message="Api key is used with an insecure connection")


def expect_error(fn, status, needle):
    try:
        fn()
    except UnexpectedResponse as e:
        assert e.status_code == status, (e.status_code, e.content)
        msg = json.loads(e.content)["status"]["error"]
        assert needle in msg, (needle, msg)
        return
    raise AssertionError(f"expected HTTP {status} mentioning {needle!r}")


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    binary = sys.argv[1]
    data = tempfile.mkdtemp(prefix="shoal-qdrant-")
    server = Server(binary, data, ["--api-key", "sesame"])
    try:
        run(server.url)
        unsupported(server.url)
    finally:
        server.stop()
        shutil.rmtree(data, ignore_errors=True)
    print("qdrant-client: all calls behaved as against Qdrant")


def run(url):
    client = QdrantClient(url=url, api_key="sesame", prefer_grpc=False, timeout=30)
    dim = 6
    rng = random.Random(5)
    colors = ["red", "green", "blue"]
    vectors = {i: [rng.uniform(-1, 1) for _ in range(dim)] for i in range(1, 401)}
    payload = {i: {"color": colors[i % 3], "size": i % 17, "price": (i % 50) / 2, "sale": i % 4 == 0}
               for i in vectors}

    # Collections.
    assert not client.collection_exists("shop")
    assert client.create_collection("shop", vectors_config=m.VectorParams(size=dim, distance=m.Distance.COSINE))
    assert client.create_collection("geo", vectors_config=m.VectorParams(size=2, distance=m.Distance.EUCLID))
    assert client.collection_exists("shop")
    assert sorted(c.name for c in client.get_collections().collections) == ["geo", "shop"]
    client.create_payload_index("shop", field_name="color", field_schema=m.PayloadSchemaType.KEYWORD)
    client.create_payload_index("shop", field_name="size", field_schema="integer")

    # Upserts: PointStruct list, then a Batch.
    ids = sorted(vectors)
    half = ids[:200]
    client.upsert("shop", points=[m.PointStruct(id=i, vector=vectors[i], payload=payload[i]) for i in half], wait=True)
    rest = ids[200:]
    client.upsert("shop", points=m.Batch(ids=rest, vectors=[vectors[i] for i in rest],
                                         payloads=[payload[i] for i in rest]), wait=True)
    info = client.get_collection("shop")
    assert info.points_count == 400, info
    assert info.config.params.vectors.size == dim
    assert info.config.params.vectors.distance == m.Distance.COSINE
    # As in Qdrant: the indexed fields only.
    assert set(info.payload_schema) == {"color", "size"}, info.payload_schema
    # An index removed is no longer listed; filters on its field (`price` below) still work.
    client.create_payload_index("shop", field_name="price", field_schema=m.PayloadSchemaType.FLOAT)
    assert set(client.get_collection("shop").payload_schema) == {"color", "size", "price"}
    assert client.delete_payload_index("shop", field_name="price", wait=True).status == m.UpdateStatus.COMPLETED
    assert set(client.get_collection("shop").payload_schema) == {"color", "size"}

    # Query with filters against brute force.
    q = [0.3, -0.2, 0.9, 0.1, -0.5, 0.4]
    flt = m.Filter(must=[m.FieldCondition(key="color", match=m.MatchValue(value="red")),
                         m.FieldCondition(key="size", range=m.Range(gte=3, lt=12))],
                   must_not=[m.FieldCondition(key="sale", match=m.MatchValue(value=True))])

    def passes(i):
        p = payload[i]
        return p["color"] == "red" and 3 <= p["size"] < 12 and not p["sale"]

    want = sorted((i for i in ids if passes(i)), key=lambda i: -cosine(q, vectors[i]))[:5]
    res = client.query_points("shop", query=q, query_filter=flt, limit=5, with_payload=True)
    assert [p.id for p in res.points] == want, ([p.id for p in res.points], want)
    for p in res.points:
        assert abs(p.score - cosine(q, vectors[p.id])) < 1e-5
        assert p.payload == payload[p.id]
    anyf = m.Filter(should=[m.FieldCondition(key="color", match=m.MatchAny(any=["green", "blue"]))],
                    must=[m.FieldCondition(key="price", range=m.Range(lte=5.0))])
    want = sorted((i for i in ids if payload[i]["color"] != "red" and payload[i]["price"] <= 5.0),
                  key=lambda i: -cosine(q, vectors[i]))[:7]
    res = client.query_points("shop", query=q, query_filter=anyf, limit=7, with_vectors=True)
    assert [p.id for p in res.points] == want
    assert res.points[0].payload == payload[want[0]] and len(res.points[0].vector) == dim, res.points[0]

    # Batches: each answer as the single call's, in order; an error names its search.
    batch = client.query_batch_points("shop", requests=[
        m.QueryRequest(query=q, filter=flt, limit=5, with_payload=True),
        m.QueryRequest(query=q, filter=anyf, limit=7)])
    assert [[p.id for p in r.points] for r in batch] == [
        [p.id for p in client.query_points("shop", query=q, query_filter=flt, limit=5).points], want]
    status, res = http(url, "POST", "/collections/shop/points/search/batch",
                       {"searches": [{"vector": q, "limit": 3}, {"vector": q, "limit": 2, "filter": flt.model_dump(
                           exclude_none=True)}]})
    assert status == 200 and [len(r) for r in res["result"]] == [3, 2], res
    status, res = http(url, "POST", "/collections/shop/points/query/batch",
                       {"searches": [{"query": q}, {"query": q, "using": "image"}]})
    assert status == 400 and "searches[1]" in res["status"]["error"], res

    res = client.query_points("shop", query=q, limit=2, with_payload=False)
    assert all(p.payload is None and p.vector is None for p in res.points), res

    prefetch_fusion(client, vectors, payload)

    # Retrieve, count, scroll.
    got = client.retrieve("shop", ids=[3, 7, 999], with_payload=True, with_vectors=False)
    assert [(r.id, r.payload) for r in got] == [(3, payload[3]), (7, payload[7])]
    assert client.count("shop", exact=True).count == 400
    red = m.Filter(must=[m.FieldCondition(key="color", match=m.MatchValue(value="red"))])
    n_red = sum(1 for i in ids if payload[i]["color"] == "red")
    assert client.count("shop", count_filter=red, exact=True).count == n_red
    seen, offset = [], None
    while True:
        points, offset = client.scroll("shop", scroll_filter=red, limit=50, offset=offset, with_payload=True)
        seen += [p.id for p in points]
        assert all(p.payload["color"] == "red" for p in points)
        if offset is None:
            break
    assert seen == [i for i in ids if payload[i]["color"] == "red"]

    # Payload changes: set keys, overwrite, delete keys, clear — vectors kept, filters see them.
    client.set_payload("shop", payload={"color": "violet", "tag": "new"}, points=[10, 11], wait=True)
    got = {r.id: r for r in client.retrieve("shop", ids=[10, 11], with_payload=True, with_vectors=True)}
    assert got[10].payload == {**payload[10], "color": "violet", "tag": "new"}, got[10].payload
    assert all(abs(a - b / math.sqrt(sum(x * x for x in vectors[10]))) < 1e-5
               for a, b in zip(got[10].vector, vectors[10])), "the vector is kept"
    violet = m.Filter(must=[m.FieldCondition(key="color", match=m.MatchValue(value="violet"))])
    assert client.count("shop", count_filter=violet).count == 2
    client.overwrite_payload("shop", payload={"color": "blue", "size": 1}, points=[11], wait=True)
    assert client.retrieve("shop", ids=[11])[0].payload == {"color": "blue", "size": 1}
    client.delete_payload("shop", keys=["tag", "price"], points=[10], wait=True)
    want10 = {k: v for k, v in {**payload[10], "color": "violet", "tag": "new"}.items() if k not in ("tag", "price")}
    assert client.retrieve("shop", ids=[10])[0].payload == want10
    client.set_payload("shop", payload={"sale": True}, points=m.FilterSelector(filter=violet), wait=True)
    assert client.retrieve("shop", ids=[10])[0].payload["sale"] is True
    client.clear_payload("shop", points_selector=m.PointIdsList(points=[10, 11]), wait=True)
    assert [r.payload for r in client.retrieve("shop", ids=[10, 11])] == [{}, {}]
    expect_error(lambda: client.set_payload("shop", payload={"a": 1}, points=[99999]), 404, "99999")
    for i in (10, 11):  # as before, for what follows
        client.overwrite_payload("shop", payload=payload[i], points=[i], wait=True)
    assert client.count("shop").count == 400

    # Deletes: by ids, then by filter.
    client.delete("shop", points_selector=m.PointIdsList(points=[3, 6, 9]))
    assert client.count("shop").count == 397
    client.delete("shop", points_selector=m.FilterSelector(filter=red))
    assert client.count("shop", count_filter=red).count == 0
    assert client.count("shop").count == 397 - (n_red - 3)

    # Euclid scores are distances.
    client.upsert("geo", points=[m.PointStruct(id=1, vector=[0, 0]), m.PointStruct(id=2, vector=[3, 4])])
    res = client.query_points("geo", query=[0, 0], limit=2)
    assert [(p.id, round(p.score, 5)) for p in res.points] == [(1, 0.0), (2, 5.0)], res

    euclid_fusion(client)

    # Errors: typed 4xx, nothing written.
    expect_error(lambda: client.upsert("shop", points=[m.PointStruct(id=1, vector=[1.0, 2.0])]), 400, "dimension")
    expect_error(lambda: client.upsert("shop", points=[m.PointStruct(id="5c56c793-69f3-4fbf-87e6",
                                                                     vector=[0.0] * dim)]), 400, "UUID")
    expect_error(lambda: client.get_collection("nope"), 404, "doesn't exist")
    # A key no point has matches nothing (Qdrant: no error without strict mode); a malformed
    # path is a 400.
    nokey = m.Filter(must=[m.FieldCondition(key="colour", match=m.MatchValue(value="red"))])
    assert client.count("shop", count_filter=nokey).count == 0
    bad = m.Filter(must=[m.FieldCondition(key="colour..x", match=m.MatchValue(value="red"))])
    expect_error(lambda: client.count("shop", count_filter=bad), 400, "colour..x")
    assert client.count("shop").count == 397 - (n_red - 3)
    wrong = QdrantClient(url=url, api_key="open", prefer_grpc=False, check_compatibility=False)
    expect_error(lambda: wrong.get_collections(), 401, "api-key")

    uuid_ids(client)
    nested_payloads(client, url)

    assert client.delete_collection("geo")
    assert not client.collection_exists("geo")
    client.close()


def fused(lists, rrf_k=None, weights=None):
    """Qdrant's fusion formulas in float32, literally: RRF (k, weights) when rrf_k is given,
    else DBSF; each list is [(id, score)] best first. Fused score descending, then the best
    position, then the id."""
    f32 = numpy.float32
    sums, best = {}, {}
    for li, points in enumerate(lists):
        if rrf_k is not None:
            w = f32(1.0 if weights is None else weights[li])
            terms = [f32(0.0) if w <= 0 else f32(1.0) / (f32(p + 1) / w + f32(rrf_k) - f32(1.0))
                     for p in range(len(points))]
        elif len(points) == 1:
            terms = [f32(0.5)]
        else:
            scores = [f32(s) for _, s in points]
            mean, agg = f32(0.0), f32(0.0)
            for j, s in enumerate(scores, 1):
                d = s - mean
                mean = mean + d / f32(j)
                agg = agg + d * (s - mean)
            sigma = numpy.sqrt(agg / f32(len(scores) - 1))
            lo, hi = mean - f32(3.0) * sigma, mean + f32(3.0) * sigma
            terms = [f32(0.5) if lo == hi else (s - lo) / (hi - lo) for s in scores]
        for p, ((i, _), t) in enumerate(zip(points, terms)):
            sums[i] = sums[i] + t if i in sums else t
            best[i] = min(best.get(i, p), p)
    # Ids in Qdrant's order: integers, then UUIDs (by their bytes: their lowercase hex).
    order = lambda i: (0, i, "") if isinstance(i, int) else (1, 0, i)  # noqa: E731
    return sorted(sums.items(), key=lambda kv: (-kv[1], best[kv[0]], order(kv[0])))


def prefetch_fusion(client, vectors, payload):
    """The Query API's prefetch: each prefetch equals brute force under its filter and the
    query's; RRF (Qdrant's k = 2, and k with weights) and DBSF equal the formulas over them;
    a vector query re-scores the prefetched points exactly."""
    q1 = [0.9, 0.1, -0.3, 0.2, 0.0, -0.6]
    q2 = [-0.2, 0.7, 0.4, -0.1, 0.8, 0.3]
    q3 = [0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    cheap = m.Filter(must=[m.FieldCondition(key="price", range=m.Range(lte=20.0))])
    red = m.Filter(must=[m.FieldCondition(key="color", match=m.MatchValue(value="red"))])

    def brute(q, keep, n):
        ids = [i for i in sorted(vectors) if keep(i) and payload[i]["price"] <= 20.0]
        return sorted(ids, key=lambda i: -cosine(q, vectors[i]))[:n]

    pre = [m.Prefetch(query=q1, filter=red, limit=20), m.Prefetch(query=q2, limit=15)]
    alone = [client.query_points("shop", query=q1, query_filter=m.Filter(must=[cheap, red]), limit=20).points,
             client.query_points("shop", query=q2, query_filter=cheap, limit=15).points]
    assert [p.id for p in alone[0]] == brute(q1, lambda i: payload[i]["color"] == "red", 20)
    assert [p.id for p in alone[1]] == brute(q2, lambda i: True, 15)
    lists = [[(p.id, p.score) for p in a] for a in alone]
    for query, want in [(m.FusionQuery(fusion=m.Fusion.RRF), fused(lists, rrf_k=2)),
                        (m.RrfQuery(rrf=m.Rrf(k=60, weights=[2.0, 0.5])), fused(lists, rrf_k=60, weights=[2.0, 0.5])),
                        (m.FusionQuery(fusion=m.Fusion.DBSF), fused(lists))]:
        res = client.query_points("shop", prefetch=pre, query=query, query_filter=cheap, limit=12, offset=2,
                                  with_payload=True).points
        got = [(p.id, p.score) for p in res]
        assert [i for i, _ in got] == [i for i, _ in want[2:14]], (query, got, want[2:14])
        assert all(abs(a - float(b)) <= 1e-6 for (_, a), (_, b) in zip(got, want[2:14])), (got, want)
        assert all(p.payload == payload[p.id] for p in res)
    # A vector query re-scores the union exactly (cosine), best first.
    union = {p.id for a in alone for p in a}
    res = client.query_points("shop", prefetch=pre, query=q3, query_filter=cheap, limit=10).points
    assert [p.id for p in res] == sorted(union, key=lambda i: -cosine(q3, vectors[i]))[:10]
    assert all(abs(p.score - cosine(q3, vectors[p.id])) < 1e-5 for p in res)
    # Nested: an inner fusion prefetched by an outer one; a threshold inside a prefetch.
    inner = m.Prefetch(prefetch=pre, query=m.FusionQuery(fusion=m.Fusion.DBSF), limit=10)
    low = m.Prefetch(query=q3, limit=30, score_threshold=0.5)
    res = client.query_points("shop", prefetch=[inner, low], query=m.FusionQuery(fusion=m.Fusion.RRF),
                              query_filter=cheap, limit=8).points
    low_alone = [(p.id, p.score) for p in client.query_points("shop", query=q3, query_filter=cheap, limit=30,
                                                                score_threshold=0.5).points]
    assert low_alone and low_alone[-1][1] >= 0.5
    want = fused([fused(lists)[:10], low_alone], rrf_k=2)[:8]
    assert [p.id for p in res] == [i for i, _ in want], (res, want)
    expect_error(lambda: client.query_points("shop", prefetch=pre, query=m.RrfQuery(rrf=m.Rrf(weights=[1.0]))),
                 400, "weights")


def euclid_fusion(client):
    """On a Euclid collection, prefetches rank by distance (smaller first) and DBSF fuses the
    negated distances, so the nearest points of both lists come first; a negative distance
    threshold keeps nothing."""
    rng = random.Random(21)
    assert client.create_collection("euclid", vectors_config=m.VectorParams(size=3, distance=m.Distance.EUCLID))
    pts = {i: [rng.uniform(-1, 1) for _ in range(3)] for i in range(80)}
    client.upsert("euclid", points=[m.PointStruct(id=i, vector=v) for i, v in pts.items()], wait=True)
    qa, qb = [0.2, 0.1, -0.3], [0.25, 0.05, -0.2]
    dist = lambda q, v: math.sqrt(sum((a - b) ** 2 for a, b in zip(q, v)))
    alone = [client.query_points("euclid", query=q, limit=12).points for q in (qa, qb)]
    for a, q in zip(alone, (qa, qb)):
        assert [p.id for p in a] == sorted(pts, key=lambda i: dist(q, pts[i]))[:12]
    pre = [m.Prefetch(query=qa, limit=12), m.Prefetch(query=qb, limit=12)]
    res = client.query_points("euclid", prefetch=pre, query=m.FusionQuery(fusion=m.Fusion.DBSF), limit=6).points
    want = fused([[(p.id, -p.score) for p in a] for a in alone])[:6]
    assert [p.id for p in res] == [i for i, _ in want], (res, want)
    assert all(abs(p.score - float(s)) <= 1e-6 for p, (_, s) in zip(res, want))
    # Fusing two identical lists keeps their order (Qdrant's DBSF fix for distances).
    twice = client.query_points("euclid", prefetch=[pre[0], pre[0]], query=m.FusionQuery(fusion=m.Fusion.DBSF),
                                limit=12).points
    assert [p.id for p in twice] == [p.id for p in alone[0]]
    none = client.query_points("euclid", prefetch=[m.Prefetch(query=qa, limit=12, score_threshold=-1.0), pre[1]],
                               query=m.FusionQuery(fusion=m.Fusion.RRF), limit=12).points
    assert [p.id for p in none] == [p.id for p in alone[1]], "a negative distance threshold keeps nothing"
    assert client.delete_collection("euclid")


def nested_payloads(client, url):
    """Payloads as LangChain and LlamaIndex write them (objects in objects, arrays of objects),
    stored faithfully and filtered by path, with and without `nested` — each answer checked
    against a direct evaluation here."""
    rng = random.Random(13)
    assert client.create_collection("docs", vectors_config={"": m.VectorParams(size=3, distance=m.Distance.COSINE)})
    docs = {}
    for i in range(120):
        meta = {"topic": ["sea", "sky", "land"][i % 3], "year": 1990 + i % 30,
                "authors": [{"name": f"a{(i + j) % 4}", "main": j == 0} for j in range(i % 3)]}
        docs[i] = {"page_content": f"text {i}", "metadata": meta}
    client.upsert("docs", points=[m.PointStruct(id=i, vector={"": [rng.uniform(-1, 1) for _ in range(3)]}, payload=d)
                                  for i, d in docs.items()])
    assert client.retrieve("docs", ids=[7])[0].payload == docs[7]

    def count(flt):
        return client.count("docs", count_filter=flt, exact=True).count

    topic = m.Filter(must=[m.FieldCondition(key="metadata.topic", match=m.MatchValue(value="sky"))])
    assert count(topic) == sum(d["metadata"]["topic"] == "sky" for d in docs.values())
    years = m.Filter(must=[m.FieldCondition(key="metadata.year", range=m.Range(gte=2000, lt=2010))])
    assert count(years) == sum(2000 <= d["metadata"]["year"] < 2010 for d in docs.values())
    # Without `nested` each condition may hold on another author; with it, on the same one.
    a1_main = [m.FieldCondition(key="name", match=m.MatchValue(value="a1")),
               m.FieldCondition(key="main", match=m.MatchValue(value=True))]
    loose = m.Filter(must=[m.FieldCondition(key="metadata.authors[].name", match=m.MatchValue(value="a1")),
                           m.FieldCondition(key="metadata.authors[].main", match=m.MatchValue(value=True))])
    tight = m.Filter(must=[m.NestedCondition(nested=m.Nested(key="metadata.authors", filter=m.Filter(must=a1_main)))])
    authors = {i: d["metadata"]["authors"] for i, d in docs.items()}
    assert count(loose) == sum(any(a["name"] == "a1" for a in v) and any(a["main"] for a in v) for v in authors.values())
    assert count(tight) == sum(any(a["name"] == "a1" and a["main"] for a in v) for v in authors.values())
    assert count(tight) < count(loose)
    hits = client.query_points("docs", query=[1, 0, 0], query_filter=tight, limit=50, with_payload=True).points
    assert hits and all(any(a["name"] == "a1" and a["main"] for a in p.payload["metadata"]["authors"]) for p in hits)
    # with_payload include / exclude by JSON path, as Qdrant selects.
    got = client.retrieve("docs", ids=[4], with_payload=m.PayloadSelectorInclude(include=["metadata.topic",
                                                                                         "metadata.authors[].name"]))
    want = {"metadata": {"topic": docs[4]["metadata"]["topic"],
                         "authors": [{"name": a["name"]} for a in docs[4]["metadata"]["authors"]]}}
    assert got[0].payload == want, got[0].payload
    got = client.retrieve("docs", ids=[4], with_payload=m.PayloadSelectorExclude(exclude=["metadata.authors[].main",
                                                                                         "page_content"]))
    want = {"metadata": {**docs[4]["metadata"], "authors": [{"name": a["name"]} for a in docs[4]["metadata"]["authors"]]}}
    assert got[0].payload == want, got[0].payload
    hits = client.query_points("docs", query=[1, 0, 0], limit=3, with_payload=["metadata.year"]).points
    assert all(h.payload == {"metadata": {"year": docs[h.id]["metadata"]["year"]}} for h in hits), hits
    # Set payload with a `key` (a JSON path): merged into the object(s) there, created as needed.
    client.set_payload("docs", payload={"checked": True}, points=[4], key="metadata.review", wait=True)
    client.set_payload("docs", payload={"seen": 1}, points=[4, 5], key="metadata.authors[]", wait=True)
    client.set_payload("docs", payload={"n": 2}, points=[4], key="extra[2]", wait=True)
    want4 = json.loads(json.dumps(docs[4]))
    want4["metadata"]["review"] = {"checked": True}
    for a in want4["metadata"]["authors"]:
        a["seen"] = 1
    want4["extra"] = [None, None, {"n": 2}]
    assert client.retrieve("docs", ids=[4])[0].payload == want4, client.retrieve("docs", ids=[4])[0].payload
    assert all(a.get("seen") == 1 for a in client.retrieve("docs", ids=[5])[0].payload["metadata"]["authors"])
    reviewed = m.Filter(must=[m.FieldCondition(key="metadata.review.checked", match=m.MatchValue(value=True))])
    assert count(reviewed) == 1
    # Bounded: a key nesting the payload past 64 levels, arrays grown past 1,024 elements, a
    # with_payload key that is not a path — each a 400 that changes nothing.
    before = client.retrieve("docs", ids=[4, 5])
    expect_error(lambda: client.set_payload("docs", payload={"x": 1}, points=[4], key=".".join(["k"] * 70)),
                 400, "64 levels")
    expect_error(lambda: client.set_payload("docs", payload={"x": 1}, points=[4, 5], key="extra[1500]"), 400, "1024")
    expect_error(lambda: client.retrieve("docs", ids=[4], with_payload=["metadata..topic"]), 400, "not a JSON path")
    assert client.retrieve("docs", ids=[4, 5]) == before
    for i in (4, 5):  # as before, for what follows
        client.overwrite_payload("docs", payload=docs[i], points=[i], wait=True)
    # A collection of Shoal's flat fields has no paths to set into.
    assert http(url, "PUT", "/collections/flat", {"dim": 3, "metric": "cosine", "fields": {"a": "keyword"}})[0] == 200
    assert http(url, "PUT", "/collections/flat/points", {"points": [{"id": 1, "vector": [1, 0, 0]}]})[0] == 200
    status, res = http(url, "POST", "/collections/flat/points/payload", {"payload": {"a": "x"}, "points": [1], "key": "b"})
    assert status == 400 and "flat fields" in res["status"]["error"], res
    assert http(url, "DELETE", "/collections/flat")[0] == 200
    client.delete("docs", points_selector=m.FilterSelector(filter=topic))
    assert client.count("docs").count == 120 - 40
    assert client.delete_collection("docs")


def uuid_ids(client):
    """UUID ids mixed with integer ids, as Qdrant takes them: written, read, filtered, paged,
    deleted; results give UUIDs back in their canonical text."""
    import uuid

    dim = 4
    rng = random.Random(9)
    assert client.create_collection("mixed", vectors_config=m.VectorParams(size=dim, distance=m.Distance.DOT))
    keys = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(60)] + list(range(100, 140))
    vectors = {k: [rng.uniform(-1, 1) for _ in range(dim)] for k in keys}
    # LangChain writes `uuid4().hex` (no hyphens); Qdrant answers with the hyphenated form.
    client.upsert("mixed", points=[m.PointStruct(id=(uuid.UUID(k).hex if isinstance(k, str) and i % 2 else k),
                                                 vector=vectors[k], payload={"n": i})
                                   for i, k in enumerate(keys)], wait=True)
    assert client.count("mixed").count == 100
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    q = [0.5, -0.25, 0.75, 0.1]
    want = sorted(keys, key=lambda k: (-dot(q, vectors[k])))[:10]
    got = client.query_points("mixed", query=q, limit=10, search_params=m.SearchParams(exact=True)).points
    assert [p.id for p in got] == want, ([p.id for p in got], want)
    # Retrieve by either form; has_id with both kinds.
    u = keys[3]
    recs = client.retrieve("mixed", ids=[u.upper(), 100, uuid.UUID(keys[4]).hex], with_vectors=True)
    assert sorted(str(r.id) for r in recs) == sorted([u, "100", keys[4]]), recs
    flt = m.Filter(must=[m.HasIdCondition(has_id=[keys[0], 101, keys[1]])])
    assert client.count("mixed", count_filter=flt).count == 3
    # Scroll: integers ascending, then UUIDs by their bytes (Qdrant's order), paged by UUID.
    seen, offset = [], None
    while True:
        page, offset = client.scroll("mixed", limit=17, offset=offset)
        seen += [p.id for p in page]
        if offset is None:
            break
    ints = [k for k in keys if isinstance(k, int)]
    uuids = sorted((k for k in keys if isinstance(k, str)), key=lambda k: uuid.UUID(k).bytes)
    assert seen == sorted(ints) + uuids, seen[:5]
    # Delete by UUID and by integer; upsert replaces by UUID.
    client.delete("mixed", points_selector=m.PointIdsList(points=[keys[0], 100]))
    assert client.count("mixed").count == 98
    assert client.retrieve("mixed", ids=[keys[0], 100]) == []
    client.upsert("mixed", points=[m.PointStruct(id=keys[5], vector=[1, 0, 0, 0], payload={"n": -1})])
    assert client.count("mixed").count == 98
    assert client.retrieve("mixed", ids=[keys[5]])[0].payload == {"n": -1}
    assert client.delete_collection("mixed")


ROOT = Path(__file__).resolve().parents[2]


def http(url, method, path, body=None):
    """`(status, parsed JSON body)` of a raw request with the test's API key."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"api-key": "sesame", "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def not_supported_rows():
    """`(endpoint, option)` of every "not supported" row of docs/qdrant-compat.md."""
    rows = []
    for line in (ROOT / "docs" / "qdrant-compat.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2] == "not supported":
            rows.append((cells[0].replace("`", ""), cells[1].replace("`", "")))
    return rows


def documented_endpoints():
    """`(method, path)` of every row of the endpoint table, path parameters as `{}`."""
    out = set()
    for line in (ROOT / "docs" / "qdrant-compat.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1] == "—":
            method, path = cells[0].replace("`", "").split(" ", 1)
            out.add((method, re.sub(r"\{[^}]*\}", "{}", path)))
    return out


def client_endpoints():
    """`(method, path)` of every call qdrant-client's REST API makes, path parameters as `{}`."""
    import qdrant_client.http.api as api
    out = set()
    for f in Path(api.__file__).parent.glob("*.py"):
        text = f.read_text()
        for method, path in re.findall(r'method="([A-Z]+)",\s*url="([^"]+)"', text):
            out.add((method, re.sub(r"\{[^}]*\}", "{}", path)))
    assert len(out) > 50, f"found only {len(out)} endpoints in qdrant-client"
    return out


def unsupported(url):
    missing = client_endpoints() - documented_endpoints()
    assert not missing, f"qdrant-client calls endpoints docs/qdrant-compat.md does not list: {sorted(missing)}"
    cases = json.loads((Path(__file__).parent / "qdrant_unsupported.json").read_text())
    documented = not_supported_rows()
    tested = [(c["endpoint"], c["option"]) for c in cases]
    assert sorted(documented) == sorted(tested), (
        "docs/qdrant-compat.md's 'not supported' rows and qdrant_unsupported.json differ: "
        f"undocumented {sorted(set(tested) - set(documented))}, untested {sorted(set(documented) - set(tested))}")
    status, _ = http(url, "PUT", "/collections/u", {"vectors": {"size": 3, "distance": "Cosine"}})
    assert status == 200
    status, _ = http(url, "PUT", "/collections/u/points", {"points": [{"id": 1, "vector": [0.1, 0.2, 0.3],
                                                                       "payload": {"price": 3}}]})
    assert status == 200

    def state():
        info = http(url, "GET", "/collections/u")[1]["result"]
        return (http(url, "GET", "/collections")[1]["result"], info["payload_schema"], info["points_count"],
                http(url, "POST", "/collections/u/points/scroll", {"with_vector": True})[1]["result"])

    before = state()
    for c in cases:
        method, path = c["endpoint"].split(" ", 1)
        # A new collection's name for creations (so a wrongly accepted one would show).
        path = path.replace("{name}", "v" if c["endpoint"] == "PUT /collections/{name}" else "u")
        path = path.replace("{field}", "price").replace("{snapshot}", "s")
        status, body = http(url, method, path, c["body"])
        where = f"{c['endpoint']} / {c['option']}"
        assert status == 400, (where, status, body)
        msg = body["status"]["error"]
        assert c["needle"] in msg, (where, c["needle"], msg)
        assert state() == before, f"{where} changed something"
    # A field Qdrant does not define: named in the 400, for every typed body.
    for method, path, body in [
        ("PUT", "/collections/w", {"vectors": {"size": 3, "distance": "Cosine"}, "colour": 1}),
        ("PUT", "/collections/w", {"vectors": {"size": 3, "distance": "Cosine", "colour": 1}}),
        ("PUT", "/collections/u/index", {"field_name": "price", "field_schema": "integer", "colour": 1}),
        ("PUT", "/collections/u/points", {"points": [{"id": 2, "vector": [0.1, 0.2, 0.3], "colour": 1}]}),
        ("PUT", "/collections/u/points", {"batch": {"ids": [2], "vectors": [[0.1, 0.2, 0.3]], "colour": 1}}),
        ("POST", "/collections/u/points", {"ids": [1], "colour": 1}),
        ("POST", "/collections/u/points/query", {"query": [0.1, 0.2, 0.3], "colour": 1}),
        ("POST", "/collections/u/points/query", {"query": [0.1, 0.2, 0.3], "params": {"colour": 1}}),
        ("POST", "/collections/u/points/search", {"vector": [0.1, 0.2, 0.3], "limit": 1, "colour": 1}),
        ("POST", "/collections/u/points/scroll", {"colour": 1}),
        ("POST", "/collections/u/points/count", {"colour": 1}),
        ("POST", "/collections/u/points/delete", {"points": [1], "colour": 1}),
        ("POST", "/collections/u/points/payload", {"payload": {"a": 1}, "points": [1], "colour": 1}),
        ("PUT", "/collections/u/points/payload", {"payload": {"a": 1}, "points": [1], "colour": 1}),
        ("POST", "/collections/u/points/payload/delete", {"keys": ["price"], "points": [1], "colour": 1}),
        ("POST", "/collections/u/points/payload/clear", {"points": [1], "colour": 1}),
        ("POST", "/collections/u/points/query/batch", {"searches": [{"query": [0.1, 0.2, 0.3], "colour": 1}]}),
        ("POST", "/collections/u/points/search/batch", {"searches": [{"vector": [0.1, 0.2, 0.3], "colour": 1}]}),
    ]:
        status, res = http(url, method, path, body)
        assert status == 400 and "colour" in res["status"]["error"], (method, path, status, res)
        assert state() == before, f"{method} {path} changed something"
    # `with_vector` by name: the unnamed vector only.
    status, res = http(url, "POST", "/collections/u/points", {"ids": [1], "with_vector": [""]})
    # (Cosine vectors are stored normalised, as Qdrant stores them.)
    norm = math.sqrt(0.1 ** 2 + 0.2 ** 2 + 0.3 ** 2)
    got = res["result"][0]["vector"] if status == 200 else None
    assert got and all(abs(a - b / norm) < 1e-6 for a, b in zip(got, [0.1, 0.2, 0.3])), res
    status, res = http(url, "POST", "/collections/u/points", {"ids": [1], "with_vector": ["image"]})
    assert status == 400 and "image" in res["status"]["error"], res
    # A collection may not take the name of Qdrant's alias route.
    status, res = http(url, "PUT", "/collections/aliases", {"vectors": {"size": 3, "distance": "Dot"}})
    assert status == 405 and "other methods" in res["status"]["error"], (status, res)
    # Tuning-only settings are accepted.
    status, res = http(url, "PUT", "/collections/t", {"vectors": {"size": 3, "distance": "Dot", "on_disk": False,
                                                                  "hnsw_config": {"m": 32}},
                                                      "hnsw_config": {"m": 16}, "optimizers_config": {},
                                                      "shard_number": 1, "replication_factor": 1})
    assert status == 200, res
    status, res = http(url, "POST", "/collections/u/points/query",
                       {"query": {"nearest": [0.1, 0.2, 0.3]}, "using": "", "params": {"hnsw_ef": 128}})
    assert status == 200 and [p["id"] for p in res["result"]["points"]] == [1], res
    print(f"qdrant REST: {len(cases)} unsupported rows refused with a 400 naming them; unknown fields named")


if __name__ == "__main__":
    main()
