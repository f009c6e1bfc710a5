#!/usr/bin/env python3
"""Filtered vector search on GloVe 400k: Shoal, hnswlib (filter callback) and Lance (prefilter).

Issue 4's benchmark. Every base row gets two synthetic attributes, drawn with a fixed seed and
independent of the vectors:

- ``cat``: a keyword ``"c0"`` .. ``"c999"`` (uniform);
- ``price``: an integer 0 .. 999,999 (uniform).

Each selectivity s in 50% / 10% / 1% / 0.1% gets three filters (Qdrant's JSON for Shoal, the
equivalent predicate for hnswlib and SQL for Lance):

- ``keyword``: ``cat`` matches any of the first s x 1000 categories;
- ``range``: ``price < s x 10^6``;
- ``combo``: ``price < 2s x 10^6`` and **not** ``cat`` in ``c0 .. c499`` (must + must_not; the
  two attributes are independent, so about s of the rows pass).

The exact filtered top-10 of every query (cosine, the query's own row excluded as in the
unfiltered glove-400k set) is computed here with numpy over exactly the matching rows.

Steps (``make bench-filtered`` runs them in order, in one run)::

    python3 bench/filtered.py prepare              # attributes, payloads.jsonl, cases.json
    cargo bench -p shoal-host --bench filtered      # Shoal, writes results/filtered-shoal-*.json
    python3 bench/filtered.py peers                 # hnswlib + Lance, results/filtered-peers-*.json
    python3 bench/filtered.py report                # the table for docs/benchmarks.md

Peers, single-threaded with their documented good settings: hnswlib M 16, ef_construction 200,
``knn_query(filter=...)`` with a Python predicate (hnswlib's filter API), ef swept upwards;
Lance IVF_RQ (sqrt(n) partitions, the vectors zero-padded to a multiple of 8 dimensions) with
a BITMAP index on ``cat`` and a BTREE index on ``price``, ``prefilter=True``, refine_factor 8,
nprobes swept upwards. A sweep stops at the first point reaching recall 0.99 or when one pass
over the queries takes longer than ``--point-limit`` seconds; a point whose pass would take
more than half that is timed on the first queries only (at least 50, recorded). QPS: the
fastest of up to five passes over the queries, one call per query (peers.py's ``time_single``).
"""

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers  # noqa: E402  (same directory: Data, time_single, cache_root)

K = 10
SEED = 20261123
CATS = 1000
PRICES = 1_000_000
SELECTIVITIES = (0.5, 0.1, 0.01, 0.001)
TARGETS = (0.90, 0.95, 0.99)
HNSW_EFS = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
LANCE_NPROBES = [8, 16, 32, 64, 128, 256, 632]
LANCE_REFINE = 8


def log(msg):
    print(f"[filtered {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def work_dir(dataset):
    return peers.cache_root() / "datasets" / dataset / "filtered"


def pct(s):
    return f"{s * 100:g}%"


def cats(n):
    return [f"c{i}" for i in range(n)]


def sql_in(values):
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


def make_cases(cat, price):
    """Every case as (name, kind, selectivity, Qdrant filter, SQL, numpy mask)."""
    out = []
    for s in SELECTIVITIES:
        nc = max(1, round(s * CATS))
        out.append((f"keyword {pct(s)}", "keyword", s,
                    {"must": [{"key": "cat", "match": {"any": cats(nc)}}]},
                    f"cat IN {sql_in(cats(nc))}", cat < nc))
        hi = round(s * PRICES)
        out.append((f"range {pct(s)}", "range", s,
                    {"must": [{"key": "price", "range": {"lt": hi}}]},
                    f"price < {hi}", price < hi))
        hi2 = round(2 * s * PRICES)
        half = CATS // 2
        out.append((f"combo {pct(s)}", "combo", s,
                    {"must": [{"key": "price", "range": {"lt": hi2}}],
                     "must_not": [{"key": "cat", "match": {"any": cats(half)}}]},
                    f"price < {hi2} AND cat NOT IN {sql_in(cats(half))}", (price < hi2) & (cat >= half)))
    return out


def prepare(args):
    import numpy as np
    import datasets

    root = peers.cache_root() / "datasets" / args.dataset
    if not (root / "meta.json").exists():
        raise SystemExit(f"dataset {args.dataset} is not prepared: run python3 bench/datasets.py --only {args.dataset}")
    meta = json.loads((root / "meta.json").read_text())
    base = np.load(root / "base.npy")
    queries = np.load(root / "queries.npy")
    exclude = np.load(root / meta["exclude_self"]).astype(np.int64) if meta.get("exclude_self") else None
    n = len(base)
    rng = np.random.default_rng(SEED)
    cat = rng.integers(0, CATS, n)
    price = rng.integers(0, PRICES, n)
    out = work_dir(args.dataset)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "cat.npy", cat.astype(np.int32))
    np.save(out / "price.npy", price.astype(np.int64))
    with open(out / "payloads.jsonl.tmp", "w") as f:
        for c, p in zip(cat.tolist(), price.tolist()):
            f.write(f'{{"cat":"c{c}","price":{p}}}\n')
    os.replace(out / "payloads.jsonl.tmp", out / "payloads.jsonl")
    cases = [{"name": "unfiltered", "kind": "none", "selectivity": 1.0, "matching": n, "filter": None,
              "sql": None, "gt": np.load(root / "gt.npy")[:, :K].tolist()}]
    for name, kind, s, flt, sql, mask in make_cases(cat, price):
        rows = np.nonzero(mask)[0]
        t = time.perf_counter()
        sub_ids, _ = datasets.exact_topk(base[rows], queries, meta["metric"], k=K + 1)
        gt = []
        for i, ids in enumerate(rows[sub_ids]):
            ids = [int(x) for x in ids if exclude is None or x != exclude[i]]
            gt.append(ids[:K])
        log(f"{name}: {len(rows)} rows match ({len(rows) / n:.4%}), ground truth in {time.perf_counter() - t:.1f} s")
        cases.append({"name": name, "kind": kind, "selectivity": s, "matching": int(len(rows)),
                      "filter": flt, "sql": sql, "gt": gt})
    doc = {"dataset": args.dataset, "metric": meta["metric"], "seed": SEED, "k": K,
           "exclude_self": exclude.tolist() if exclude is not None else None, "cases": cases}
    (out / "cases.json.tmp").write_text(json.dumps(doc))
    os.replace(out / "cases.json.tmp", out / "cases.json")
    log(f"wrote {out}/payloads.jsonl and cases.json ({len(cases)} cases)")


class Case:
    """One case's queries, ground truth and recall, in peers.Data's terms."""

    def __init__(self, data, case, nq):
        self.queries = data.queries[:nq]
        self.gt = [set(g) for g in case["gt"][:nq]]
        self.exclude = data.exclude
        self.kq = data.kq

    def recall(self, results):
        return peers.recall_at_k(results, self.gt, self.exclude)


def subset(case, m):
    """The first m queries of a case."""
    sub = Case.__new__(Case)
    sub.queries, sub.gt, sub.exclude, sub.kq = case.queries[:m], case.gt[:m], case.exclude, case.kq
    return sub


def sweep(label, case, values, make_one, limit):
    """Times make_one(v)(i) (the search of query i) for each v of the sweep. A point whose pass
    over all queries would take longer than `limit` / 2 seconds (judged from its first 10
    queries) is measured on the first queries only (at least 50; its "queries" says how many)."""
    points = []
    for v in values:
        one = make_one(v)
        t = time.perf_counter()
        for i in range(min(10, len(case.queries))):
            one(i)
        per_query = (time.perf_counter() - t) / min(10, len(case.queries))
        m = len(case.queries)
        if per_query * m > limit / 2:
            m = max(50, min(m, int(limit / 2 / per_query)))
        sub = subset(case, m)
        raw, single = peers.time_single(sub, one, warmup=0)
        p = {"param": v, "recall": sub.recall(raw), "queries": m, **single}
        points.append(p)
        log(f"  {label} {v}: recall {p['recall']:.4f}, {p['qps']:.1f} QPS (p99 {p['lat_p99_us']:.0f} us, {m} queries)")
        if p["recall"] >= 0.99 or per_query * m > limit:
            break
    return points


def run_hnswlib(data, doc, masks, args):
    import hnswlib

    idx = hnswlib.Index(space="cosine", dim=data.d)
    t = time.perf_counter()
    idx.init_index(max_elements=data.n, ef_construction=200, M=16, random_seed=100)
    idx.set_num_threads(1)
    idx.add_items(data.base, num_threads=1)
    info = {"build_seconds": time.perf_counter() - t, "params": {"M": 16, "ef_construction": 200},
            "version": peers.pkg_version("hnswlib")}
    log(f"hnswlib built in {info['build_seconds']:.1f} s")
    res = {}
    for c in doc["cases"]:
        case = Case(data, c, args.queries)
        Q = case.queries
        allowed = masks[c["name"]].tolist() if c["filter"] is not None else None
        pred = allowed.__getitem__ if allowed is not None else None
        log(f"hnswlib {c['name']}")

        def point(ef):
            idx.set_ef(ef)
            return lambda i: idx.knn_query(Q[i], k=case.kq, num_threads=1, filter=pred)[0][0]
        res[c["name"]] = sweep("ef", case, [e for e in HNSW_EFS if e >= case.kq], point, args.point_limit)
    return info, res


def run_lance(data, doc, cat, price, args):
    import numpy as np
    import pyarrow as pa
    import lance

    base, queries = data.base, data.queries
    d = data.d
    if d % 8:
        base = np.pad(base, ((0, 0), (0, 8 - d % 8)))
        queries = np.pad(queries, ((0, 0), (0, 8 - d % 8)))
        d = base.shape[1]
    parts = max(1, int(round(data.n ** 0.5)))
    work = Path(tempfile.mkdtemp(prefix="lance-filtered-", dir=args.work_dir))
    path = str(work / "data.lance")
    table = pa.table({"id": pa.array(np.arange(data.n, dtype=np.int32)),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(base.reshape(-1)), d),
                      "cat": pa.array([f"c{c}" for c in cat.tolist()]),
                      "price": pa.array(price.astype(np.int64))})
    ds = lance.write_dataset(table, path)
    t = time.perf_counter()
    ds.create_index("vector", index_type="IVF_RQ", metric="cosine", num_partitions=parts)
    ds.create_scalar_index("cat", index_type="BITMAP")
    ds.create_scalar_index("price", index_type="BTREE")
    info = {"build_seconds": time.perf_counter() - t, "version": lance.__version__,
            "params": {"index_type": "IVF_RQ", "num_partitions": parts, "scalar": "BITMAP(cat), BTREE(price)",
                       "prefilter": True, "refine_factor": LANCE_REFINE, "padded_dim": d}}
    log(f"lance built in {info['build_seconds']:.1f} s")
    ds = lance.dataset(path)
    res = {}
    for c in doc["cases"]:
        case = Case(data, c, args.queries)
        log(f"lance {c['name']}")

        def point(nprobes, c=c):
            def one(i):
                return ds.to_table(nearest={"column": "vector", "q": queries[i], "k": case.kq, "nprobes": nprobes,
                                            "refine_factor": LANCE_REFINE, "query_parallelism": 1},
                                   filter=c["sql"], prefilter=True, columns=["id", "_distance"]).column("id").to_numpy()
            return one
        res[c["name"]] = sweep("nprobes", case, [p for p in LANCE_NPROBES if p <= parts], point, args.point_limit)
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return info, res


def run_peers(args):
    import numpy as np

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS",
                "LANCE_CPU_THREADS"):
        os.environ.setdefault(var, "1")
    out = work_dir(args.dataset)
    doc = json.loads((out / "cases.json").read_text())
    cat, price = np.load(out / "cat.npy"), np.load(out / "price.npy")
    masks = {name: mask for name, _, _, _, _, mask in make_cases(cat, price)}
    data = peers.Data(args.dataset, args.queries)
    Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    result = {"dataset": args.dataset, "queries": len(data.queries), "environment": peers.environment(), "peers": {}}
    for peer in args.peers.split(","):
        gc.collect()
        if peer == "hnswlib":
            info, res = run_hnswlib(data, doc, masks, args)
        elif peer == "lance":
            info, res = run_lance(data, doc, cat, price, args)
        else:
            raise SystemExit(f"unknown peer {peer}")
        result["peers"][peer] = {"info": info, "cases": res}
        path = peers.cache_root() / "results" / f"filtered-peers-{args.dataset}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1))
    log(f"wrote {path}")


def best_at(points, target):
    ok = [p["qps"] for p in points if p["recall"] >= target]
    return max(ok) if ok else None


def report(args):
    res = peers.cache_root() / "results"
    shoal = json.loads((res / f"filtered-shoal-{args.dataset}.json").read_text())
    peer = json.loads((res / f"filtered-peers-{args.dataset}.json").read_text())
    names = [c["name"] for c in shoal["cases"]]
    print(f"{args.dataset}, {shoal['queries']} queries, top-{K}; QPS single-threaded, one query per call")
    print()
    print("| filter | matching | Shoal recall | Shoal QPS | path | hnswlib QPS @0.95 (ef) | Lance QPS @0.95 (nprobes) | Shoal / hnswlib | Shoal / Lance |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|")
    for c in shoal["cases"]:
        cells = []
        ratios = []
        for p in ("hnswlib", "lance"):
            pts = peer["peers"].get(p, {}).get("cases", {}).get(c["name"], [])
            ok = [x for x in pts if x["recall"] >= 0.95]
            if ok:
                b = max(ok, key=lambda x: x["qps"])
                cells.append(f"{b['qps']:,.0f} ({b['param']})")
                ratios.append(f"{c['qps'] / b['qps']:.1f}x")
            elif pts:
                top = max(pts, key=lambda x: x["recall"])
                cells.append(f"not reached (best {top['recall']:.3f} at {top['qps']:,.0f} QPS)")
                ratios.append("-")
            else:
                cells.append("-")
                ratios.append("-")
        print(f"| {c['name']} | {c['matching']:,} | {c['recall']:.4f} | {c['qps']:,.0f} | {c['path']} | "
              f"{cells[0]} | {cells[1]} | {ratios[0]} | {ratios[1]} |")
    del names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=["prepare", "peers", "report"])
    ap.add_argument("dataset", nargs="?", default="glove-400k")
    ap.add_argument("--peers", default="hnswlib,lance")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--point-limit", type=float, default=60.0,
                    help="stop a sweep once one pass over the queries takes longer than this (s)")
    ap.add_argument("--work-dir", default=str(peers.cache_root() / "peers-work"))
    args = ap.parse_args()
    {"prepare": prepare, "peers": run_peers, "report": report}[args.step](args)


if __name__ == "__main__":
    main()
