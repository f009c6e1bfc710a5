#!/usr/bin/env python3
"""Peer comparison driver: hnswlib, FAISS (HNSW and IVF-RaBitQ), usearch and Lance IVF_RQ, same data, same run.

For every dataset prepared by ``bench/datasets.py`` (``~/.cache/shoal/datasets/<name>/``) this
builds each peer SINGLE-THREADED with its documented good settings, sweeps its search knob, and
measures for every sweep point:

- recall@10 against the exact ground truth (first 10 columns of ``gt.npy``);
- single-query QPS: a Python loop over the queries, one call per query (comparable to a
  per-query engine API), with p50/p99 latency and the process CPU time / wall time ratio
  (about 1.0 confirms one busy thread);
- batched QPS, where the peer has a batch API (whole query matrix in one call, one thread);

and for every index: build time, index size (the library's own accessor or its serialised
size) and the RSS delta of the process across the build. Each index configuration runs in its
own subprocess so RSS deltas and thread settings do not leak between peers.

Threads: every worker starts with OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=
RAYON_NUM_THREADS=1 and LANCE_CPU_THREADS=1 (Lance's CPU pool; set before ``import lance``);
FAISS: ``faiss.omp_set_num_threads(1)``; hnswlib: ``set_num_threads(1)`` and ``num_threads=1``
on add/query; usearch: ``threads=1`` on add and search; Lance: ``query_parallelism=1`` per
query. (LANCE_IO_THREADS=1 deadlocked Lance's index build here, so Lance's I/O pool keeps its
default size; the data is local and cached.) Pass ``--pin`` to pin each worker to one CPU.

Output: a human table on stdout and ``~/.cache/shoal/results/peers-<dataset>.json`` with every
sweep point and a summary: for each configuration and recall target (0.90 / 0.95 / 0.99), the
QPS read off its recall/QPS frontier, interpolated between the two sweep points around the
target (``bench/frontier.py``), or "not reached".

Usage::

    pip install -r bench/requirements-bench.txt
    python3 bench/datasets.py --only glove-100k
    python3 bench/peers.py glove-100k [--peers hnswlib,faiss,usearch,lance] [--queries N]
"""

import argparse
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import frontier  # noqa: E402
REQUIREMENTS = HERE / "requirements-bench.txt"
K = 10
TARGETS = (0.90, 0.95, 0.99)
ALL_PEERS = ["hnswlib", "faiss", "usearch", "lance"]

HNSW_EFS = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
NPROBES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
FAISS_K_FACTORS = {1: [2, 4, 8, 16, 32, 64], 4: [1, 2, 4, 8]}  # by RaBitQ bits
LANCE_REFINE = [None, 2, 8]

THREAD_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "RAYON_NUM_THREADS": "1", "LANCE_CPU_THREADS": "1",
              "LANCE_INCLUDE_VECTOR_CENTROIDS": "false", "LANCE_LOG": "error",
              "HF_HUB_OFFLINE": "1"}

# (peer, config name) -> description; each config runs in its own worker process.
CONFIGS = {
    "hnswlib": ["hnsw-M16-efc200"],
    "faiss": ["hnsw32-flat", "ivf-rabitq1", "ivf-rabitq1-refine", "ivf-rabitq1fs-refine", "ivf-rabitq4-refine"],
    "usearch": ["hnsw-M16-efa128"],
    "lance": ["ivf-rq1", "ivf-rq-default"],
}


def cache_root():
    return Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache" / "shoal"))


def log(msg):
    print(f"[peers] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------
# measurement helpers (worker side)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss():
    try:  # Linux >= 4.0: writing 5 to clear_refs resets VmHWM
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def cpu_snapshot():
    """(busy, total) jiffies over all CPUs from /proc/stat (steal counts as busy)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except OSError:
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return user + nice + system + irq + softirq + steal, sum(v)


def busy_cores(a, b):
    if not a or not b or b[1] == a[1]:
        return None
    return (b[0] - a[0]) / (b[1] - a[1]) * (os.cpu_count() or 1)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def recall_at_k(results, truth, exclude=None):
    """Recall@K of `results` (per query, ids best first; negative ids are padding) against
    `truth` (per query, a set of ids); `exclude[i]` (optional) is left out of query i's ids."""
    total = 0
    for i, ids in enumerate(results):
        ids = [int(x) for x in ids if x >= 0]
        if exclude is not None:
            ids = [x for x in ids if x != exclude[i]]
        total += len(set(ids[:K]) & truth[i])
    want = sum(min(K, len(t)) for t in truth[: len(results)])
    return total / want if want else 0.0


class Data:
    def __init__(self, name, nq):
        import numpy as np

        root = cache_root() / "datasets" / name
        if not (root / "meta.json").exists():
            raise SystemExit(f"dataset {name} is not prepared: run python3 bench/datasets.py --only {name}")
        self.meta = json.loads((root / "meta.json").read_text())
        self.metric = self.meta["metric"]
        base = np.load(root / "base.npy")
        queries = np.load(root / "queries.npy")
        self.gt = np.load(root / "gt.npy")
        if nq:
            queries, self.gt = queries[:nq], self.gt[:nq]
        self.exclude = None
        if self.meta.get("exclude_self"):
            self.exclude = np.load(root / self.meta["exclude_self"])[: len(queries)].astype(np.int64)
        if self.metric == "cosine":
            # every peer gets the same L2-normalised vectors (cosine == inner product on them)
            base = base / np.maximum(np.linalg.norm(base, axis=1, keepdims=True), 1e-30)
            queries = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-30)
        self.base = np.ascontiguousarray(base, dtype=np.float32)
        self.queries = np.ascontiguousarray(queries, dtype=np.float32)
        self.n, self.d = self.base.shape
        self.kq = K + (1 if self.exclude is not None else 0)  # ask one more when self is excluded

    def recall(self, results):
        """results: list (per query) of id arrays, best first."""
        return recall_at_k(results, [set(g[:K].tolist()) for g in self.gt[: len(results)]], self.exclude)


REPEAT = 5          # at most this many timed passes per sweep point ...
POINT_SECONDS = 3.0  # ... and no more once passes after the first two add up to this


def time_single(data, search_one, warmup=50):
    """Loops over the queries one call at a time; search_one(i) -> raw result (converted later).

    After `warmup` calls, the whole loop runs at least twice and at most REPEAT times (stopping
    once POINT_SECONDS have been spent) and the fastest pass is reported: the machine may be
    shared, and interference only ever slows a pass down. cpu_per_wall well below 1.0 means the
    process was preempted.
    """
    import numpy as np

    nq = len(data.queries)
    for i in range(min(warmup, nq)):
        search_one(i)
    best = None
    pc = time.perf_counter
    spent, passes = 0.0, 0
    for rep in range(REPEAT):
        if rep >= min(2, REPEAT) and spent >= POINT_SECONDS:
            break
        passes += 1
        lat = np.empty(nq, dtype=np.float64)
        raw = [None] * nq
        cpu0 = time.process_time()
        t0 = pc()
        for i in range(nq):
            a = pc()
            raw[i] = search_one(i)
            lat[i] = pc() - a
        wall = pc() - t0
        cpu = time.process_time() - cpu0
        spent += wall
        if best is None or wall < best[0]:
            best = (wall, cpu, lat, raw)
    wall, cpu, lat, raw = best
    return raw, {"qps": nq / wall, "lat_p50_us": float(np.percentile(lat, 50) * 1e6),
                 "lat_p99_us": float(np.percentile(lat, 99) * 1e6), "cpu_per_wall": cpu / wall,
                 "passes": passes}


def time_batch(data, search_all, repeat=3):
    """Fastest of up to `repeat` calls on the whole query matrix (fewer once POINT_SECONDS spent)."""
    best, out, spent = None, None, 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = search_all()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
        spent += dt
        if spent >= POINT_SECONDS:
            break
    return out, len(data.queries) / best


# ---------------------------------------------------------------------------------------------
# peers (worker side). Each returns a dict with build info and a list of sweep points.


def run_hnswlib(data, config, args):
    import hnswlib

    space = {"cosine": "cosine", "l2": "l2", "dot": "ip"}[data.metric]
    idx = hnswlib.Index(space=space, dim=data.d)
    gc.collect()
    rss0 = rss_bytes()
    reset_peak_rss()
    t = time.perf_counter()
    idx.init_index(max_elements=data.n, ef_construction=200, M=16, random_seed=100)
    idx.set_num_threads(1)
    idx.add_items(data.base, num_threads=1)
    build = time.perf_counter() - t
    gc.collect()
    info = {"build_seconds": build, "rss_delta_bytes": rss_bytes() - rss0,
            "peak_rss_delta_bytes": peak_rss_bytes() - rss0,
            "index_bytes": int(idx.index_file_size()), "index_bytes_how": "hnswlib index_file_size()",
            "params": {"space": space, "M": 16, "ef_construction": 200},
            "version": getattr(hnswlib, "__version__", pkg_version("hnswlib"))}
    points = []
    Q = data.queries
    for ef in HNSW_EFS:
        if ef < data.kq:
            continue
        idx.set_ef(ef)
        raw, single = time_single(data, lambda i: idx.knn_query(Q[i], k=data.kq, num_threads=1)[0][0])
        (labels, _), bqps = time_batch(data, lambda: idx.knn_query(Q, k=data.kq, num_threads=1))
        points.append({"params": {"ef": ef}, "recall": data.recall(raw),
                       "recall_batch": data.recall(labels), **single, "qps_batch": bqps})
        report_point("hnswlib", config, points[-1])
    return info, points


def run_faiss(data, config, args):
    import faiss

    faiss.omp_set_num_threads(1)
    metric = faiss.METRIC_L2 if data.metric == "l2" else faiss.METRIC_INNER_PRODUCT
    if config.startswith("hnsw"):
        return run_faiss_hnsw(faiss, data, config, metric)
    nlist = max(1, int(round(4 * data.n ** 0.5)))
    bits = 4 if config.startswith("ivf-rabitq4") else 1
    fastscan = config.startswith("ivf-rabitq1fs")
    factory = f"IVF{nlist},RaBitQ" + ("fs" if fastscan else "") + ("" if bits == 1 else str(bits))
    refine = config.endswith("-refine")
    built = {}

    def build():
        base_index = faiss.index_factory(data.d, factory, metric)
        built["ivf"] = ivf = faiss.downcast_index(base_index)
        ivf.qb = 8  # quantise queries to 8 bits, as FAISS's own RaBitQ benchmark does
        index = faiss.IndexRefineFlat(base_index) if refine else base_index
        index.train(data.base)
        index.add(data.base)
        return index

    index, info = faiss_build(faiss, build, metric)
    ivf = built["ivf"]
    info["params"] = {"factory": factory + (" + IndexRefineFlat" if refine else ""), "nlist": nlist,
                      "class": type(ivf).__name__, "bits": bits, "qb": 8, **info["params"]}
    points = []
    for nprobe in NPROBES:
        if nprobe > nlist:
            continue
        for kf in (FAISS_K_FACTORS[bits] if refine else [None]):
            ivf.nprobe = nprobe
            params = {"nprobe": nprobe}
            if refine:
                index.k_factor = kf
                params["k_factor"] = kf
            points.append(faiss_point(data, index, config, params))
    return info, points


def run_faiss_hnsw(faiss, data, config, metric):
    """FAISS's graph index, ``IndexHNSWFlat``: M 32 (the wiki's usual ``HNSW32``), efConstruction
    200 (as hnswlib's build here), full vectors; the sweep is ``efSearch``."""
    m, efc = 32, 200

    def build():
        index = faiss.IndexHNSWFlat(data.d, m, metric)
        index.hnsw.efConstruction = efc
        index.add(data.base)
        return index

    index, info = faiss_build(faiss, build, metric)
    info["params"] = {"class": "IndexHNSWFlat", "M": m, "efConstruction": efc, **info["params"]}
    points = []
    for ef in HNSW_EFS:
        if ef < data.kq:
            continue
        index.hnsw.efSearch = ef
        points.append(faiss_point(data, index, config, {"ef": ef}))
    return info, points


def faiss_build(faiss, build, metric):
    """A FAISS index from ``build()``, measured as every peer's build is: the index and its info
    (build time, RSS delta, serialised size, the metric in ``params``)."""
    gc.collect()
    rss0 = rss_bytes()
    reset_peak_rss()
    t = time.perf_counter()
    index = build()
    seconds = time.perf_counter() - t
    gc.collect()
    ser = faiss.serialize_index(index)
    info = {"build_seconds": seconds, "rss_delta_bytes": rss_bytes() - rss0,
            "peak_rss_delta_bytes": peak_rss_bytes() - rss0,
            "index_bytes": int(ser.nbytes), "index_bytes_how": "len(faiss.serialize_index(index))",
            "params": {"metric": "L2" if metric == faiss.METRIC_L2 else "IP"},
            "version": faiss.__version__}
    del ser
    return index, info


def faiss_point(data, index, config, params):
    """One sweep point of a FAISS index as its current settings stand: single-query and batched
    QPS and recall, reported as it is measured."""
    Q, kq = data.queries, data.kq
    raw, single = time_single(data, lambda i: index.search(Q[i:i + 1], kq)[1][0])
    (_, labels), bqps = time_batch(data, lambda: index.search(Q, kq))
    point = {"params": params, "recall": data.recall(raw),
             "recall_batch": data.recall(labels), **single, "qps_batch": bqps}
    report_point("faiss", config, point)
    return point


def run_usearch(data, config, args):
    import numpy as np
    import usearch
    from usearch.index import Index

    metric = {"cosine": "cos", "l2": "l2sq", "dot": "ip"}[data.metric]
    gc.collect()
    rss0 = rss_bytes()
    reset_peak_rss()
    t = time.perf_counter()
    idx = Index(ndim=data.d, metric=metric, dtype="f32", connectivity=16, expansion_add=128)
    idx.add(np.arange(data.n, dtype=np.uint64), data.base, threads=1)
    build = time.perf_counter() - t
    gc.collect()
    info = {"build_seconds": build, "rss_delta_bytes": rss_bytes() - rss0,
            "peak_rss_delta_bytes": peak_rss_bytes() - rss0,
            "index_bytes": int(idx.memory_usage), "index_bytes_how": "usearch Index.memory_usage",
            "serialized_bytes": int(idx.serialized_length),
            "params": {"metric": metric, "dtype": "f32", "connectivity": 16, "expansion_add": 128},
            "version": usearch.__version__}
    points = []
    Q = data.queries
    kq = data.kq
    for ef in HNSW_EFS:
        idx.expansion_search = ef
        raw, single = time_single(data, lambda i: idx.search(Q[i], kq, threads=1).keys)
        res, bqps = time_batch(data, lambda: idx.search(Q, kq, threads=1))
        points.append({"params": {"expansion_search": ef}, "recall": data.recall(raw),
                       "recall_batch": data.recall(res.keys), **single, "qps_batch": bqps})
        report_point("usearch", config, points[-1])
    return info, points


def run_lance(data, config, args):
    import numpy as np
    import pyarrow as pa
    import lance

    notes = []
    base, queries = data.base, data.queries
    d = data.d
    if d % 8:
        pad = 8 - d % 8
        base = np.pad(base, ((0, 0), (0, pad)))
        queries = np.pad(queries, ((0, 0), (0, pad)))
        notes.append(f"IVF_RQ needs a dimension divisible by 8: vectors zero-padded {d} -> {d + pad} "
                     "(distances unchanged)")
        d += pad
    metric = {"cosine": "cosine", "l2": "l2", "dot": "dot"}[data.metric]
    parts = max(1, int(round(data.n ** 0.5)))
    kw = {"num_bits": 1} if config == "ivf-rq1" else {}
    work = Path(tempfile.mkdtemp(prefix="lance-", dir=args.work_dir))
    path = str(work / "data.lance")
    table = pa.table({"id": pa.array(np.arange(data.n, dtype=np.int32)),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(base.reshape(-1)), d)})
    t = time.perf_counter()
    ds = lance.write_dataset(table, path)
    write_s = time.perf_counter() - t
    del table
    gc.collect()
    rss0 = rss_bytes()
    reset_peak_rss()
    t = time.perf_counter()
    ds.create_index("vector", index_type="IVF_RQ", metric=metric, num_partitions=parts, **kw)
    build = time.perf_counter() - t
    gc.collect()
    ds = lance.dataset(path)
    stats = ds.stats.index_stats("vector_idx")
    sub = (stats.get("indices") or [{}])[0].get("sub_index", {})
    info = {"build_seconds": build, "write_seconds": write_s,
            "rss_delta_bytes": rss_bytes() - rss0, "peak_rss_delta_bytes": peak_rss_bytes() - rss0,
            "index_bytes": dir_bytes(os.path.join(path, "_indices")),
            "index_bytes_how": "size of the dataset's _indices/ directory (refine reads the raw "
                               "vectors from the dataset files, not counted)",
            "dataset_bytes": dir_bytes(path),
            "params": {"index_type": "IVF_RQ", "metric": metric, "num_partitions": parts,
                       "num_bits": sub.get("num_bits", kw.get("num_bits")),
                       "rotation": sub.get("rotation_type"), "code_dim": sub.get("code_dim"),
                       "query_parallelism": 1},
            "version": lance.__version__, "notes": notes}
    points = []
    kq = data.kq

    def nearest(q, nprobes, rf):
        return {"column": "vector", "q": q, "k": kq, "nprobes": nprobes, "refine_factor": rf,
                "query_parallelism": 1}

    for nprobes in NPROBES:
        if nprobes > parts:
            continue
        for rf in LANCE_REFINE:
            raw, single = time_single(
                data, lambda i: ds.to_table(nearest=nearest(queries[i], nprobes, rf),
                                            columns=["id", "_distance"]).column("id"))
            raw = [c.to_numpy() for c in raw]
            tbl, bqps = time_batch(data, lambda: ds.to_table(nearest=nearest(queries, nprobes, rf),
                                                           columns=["id", "_distance"]))
            qi = tbl.column("query_index").to_numpy()
            ids = tbl.column("id").to_numpy()
            order = np.argsort(qi, kind="stable")  # rows come grouped per query, best first
            qi, ids = qi[order], ids[order]
            bounds = np.searchsorted(qi, np.arange(len(queries) + 1))
            batch_res = [ids[bounds[i]:bounds[i + 1]] for i in range(len(queries))]
            points.append({"params": {"nprobes": nprobes, "refine_factor": rf},
                           "recall": data.recall(raw), "recall_batch": data.recall(batch_res),
                           **single, "qps_batch": bqps})
            report_point("lance", config, points[-1])
    del ds
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return info, points


RUNNERS = {"hnswlib": run_hnswlib, "faiss": run_faiss, "usearch": run_usearch, "lance": run_lance}


def pkg_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return None


def report_point(peer, config, p):
    params = " ".join(f"{k}={v}" for k, v in p["params"].items())
    print(f"  {peer:8s} {config:20s} {params:28s} recall@10 {p['recall']:.4f}  "
          f"QPS {p['qps']:8.0f} (p50 {p['lat_p50_us']:7.0f} us, cpu/wall {p['cpu_per_wall']:.2f})  "
          f"batch QPS {p['qps_batch']:8.0f}", flush=True)


def worker(args):
    global REPEAT
    REPEAT = max(1, args.repeat)
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})
    data = Data(args.dataset, args.queries)
    t = time.perf_counter()
    try:
        info, points = RUNNERS[args.worker](data, args.config, args)
        out = {"peer": args.worker, "config": args.config, **info, "points": points}
    except Exception as e:  # noqa: BLE001
        out = {"peer": args.worker, "config": args.config, "error": f"{type(e).__name__}: {e}",
               "traceback": traceback.format_exc()}
    out["worker_seconds"] = time.perf_counter() - t
    out["max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    Path(args.json).write_text(json.dumps(out, indent=1))


# ---------------------------------------------------------------------------------------------
# driver


def summarize(cfg):
    """Per mode (single, batch) and recall target: the QPS read off the configuration's
    recall/QPS frontier, interpolated between the sweep points around the target
    (``bench/frontier.py``), with those points' settings."""
    summary = {}
    pts = cfg.get("points", [])
    for mode, key in (("single", "qps"), ("batch", "qps_batch")):
        rkey = "recall" if mode == "single" else "recall_batch"
        swept = [p for p in pts if p.get(key)]
        by_point = {(p[rkey], p[key]): p["params"] for p in swept}
        for target in TARGETS:
            got = frontier.qps_at([(p[rkey], p[key]) for p in swept], target)
            if got is None:
                summary[f"{mode}@{target:.2f}"] = "not reached"
                continue
            qps, (lo, hi) = got
            summary[f"{mode}@{target:.2f}"] = {
                "qps": qps, "recall": target, "params": by_point[hi],
                "between": [by_point[lo] if lo else None, by_point[hi]]}
    summary["max_recall"] = max((p["recall"] for p in pts), default=None)
    return summary


def fmt_cell(s):
    if not isinstance(s, dict):
        return "not reached"
    lo, hi = s.get("between", [None, s["params"]])
    params = ",".join(f"{v}" for v in hi.values())
    if lo:
        params = ",".join(f"{v}" for v in lo.values()) + ".." + params
    return f"{s['qps']:.0f} ({params})"


def environment():
    env = {"python": platform.python_version(), "machine": platform.machine(),
           "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    env["packages"] = {p: pkg_version(p) for p in ("numpy", "faiss-cpu", "hnswlib", "usearch",
                                                     "pylance", "pyarrow")}
    return env


def run_dataset(name, args):
    out_dir = cache_root() / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = json.loads((cache_root() / "datasets" / name / "meta.json").read_text())
    nq = min(args.queries or meta["queries"], meta["queries"])
    log(f"dataset {name}: {meta['n']} x {meta['d']} {meta['metric']}, {nq} queries"
        + (f" ({meta['note']})" if meta.get("note") else ""))
    result = {"dataset": name, "meta": meta, "queries": nq, "k": K, "env": environment(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "configs": []}
    env = dict(os.environ, **THREAD_ENV)
    work_dir = Path(args.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    for peer in args.peers:
        for config in CONFIGS[peer]:
            if args.configs and config not in args.configs:
                continue
            log(f"{peer} / {config}: building (single-threaded) ...")
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False, dir=work_dir) as tf:
                jpath = tf.name
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", peer, "--config", config,
                   "--dataset", name, "--json", jpath, "--work-dir", str(work_dir)]
            if args.queries:
                cmd += ["--queries", str(args.queries)]
            if args.pin is not None:
                cmd += ["--pin", str(args.pin)]
            cmd += ["--repeat", str(args.repeat)]
            t = time.perf_counter()
            snap = cpu_snapshot()
            try:
                proc = subprocess.run(cmd, env=env, timeout=args.timeout)
                cfg = json.loads(Path(jpath).read_text()) if Path(jpath).stat().st_size else None
                if cfg is None:
                    cfg = {"peer": peer, "config": config, "error": f"worker exited {proc.returncode}"}
            except subprocess.TimeoutExpired:
                cfg = {"peer": peer, "config": config, "error": f"timed out after {args.timeout} s"}
            except (OSError, json.JSONDecodeError) as e:
                cfg = {"peer": peer, "config": config, "error": f"{type(e).__name__}: {e}"}
            finally:
                if os.path.exists(jpath):
                    os.unlink(jpath)
            cfg["wall_seconds"] = time.perf_counter() - t
            # the whole machine's CPU use while this configuration ran, in cores: about 1.0 when
            # the single-threaded worker had the machine to itself, more when other work ran
            cfg["machine_busy_cores"] = busy_cores(snap, cpu_snapshot())
            if "error" in cfg:
                log(f"{peer} / {config}: FAILED: {cfg['error']}")
            else:
                cfg["summary"] = summarize(cfg)
                log(f"{peer} / {config}: build {cfg['build_seconds']:.1f} s, index "
                    f"{cfg['index_bytes'] / 1e6:.1f} MB, RSS delta {cfg['rss_delta_bytes'] / 1e6:.1f} MB, "
                    f"machine busy {cfg['machine_busy_cores'] or 0:.2f} cores")
            result["configs"].append(cfg)
            result["env"]["loadavg_end"] = os.getloadavg()
            out_path = out_dir / f"peers-{name}.json"
            out_path.write_text(json.dumps(result, indent=1))  # rewritten after every config
    print_summary(result)
    log(f"wrote {out_dir / f'peers-{name}.json'}")
    return result


def print_summary(result):
    meta = result["meta"]
    print()
    print(f"== {result['dataset']}: {meta['n']} x {meta['d']} {meta['metric']}, {result['queries']} "
          f"queries, recall@{K}, single thread; load average {result['env']['loadavg_start'][0]:.2f} "
          f"-> {result['env'].get('loadavg_end', [0])[0]:.2f} ==")
    head = (f"{'peer / config':32s} {'build s':>8s} {'index MB':>9s} {'RSS+ MB':>8s} {'busy':>5s} {'max rec':>8s}  "
            + "  ".join(f"{'QPS@' + format(t, '.2f'):>22s}" for t in TARGETS)
            + "  " + "  ".join(f"{'batch QPS@' + format(t, '.2f'):>22s}" for t in TARGETS))
    print(head)
    print("-" * len(head))
    for cfg in result["configs"]:
        label = f"{cfg['peer']} / {cfg['config']}"
        if "error" in cfg:
            print(f"{label:32s} FAILED: {cfg['error'][:150]}")
            continue
        s = cfg["summary"]
        print(f"{label:32s} {cfg['build_seconds']:8.1f} {cfg['index_bytes'] / 1e6:9.1f} "
              f"{cfg['rss_delta_bytes'] / 1e6:8.1f} {cfg.get('machine_busy_cores') or 0:5.2f} "
              f"{s['max_recall']:8.4f}  "
              + "  ".join(f"{fmt_cell(s[f'single@{t:.2f}']):>22s}" for t in TARGETS) + "  "
              + "  ".join(f"{fmt_cell(s[f'batch@{t:.2f}']):>22s}" for t in TARGETS))
    for cfg in result["configs"]:
        for note in cfg.get("notes", []) or []:
            print(f"note ({cfg['peer']} / {cfg['config']}): {note}")
    print("QPS = queries/s, one query per call in a Python loop (batch: whole query matrix in one "
          "call, 1 thread); the cell is the QPS at the recall target on the configuration's frontier, "
          "interpolated between the sweep points around it, with their settings in parentheses (hnsw: ef; faiss: ef or nprobe,k_factor; lance: "
          "nprobes,refine_factor). busy = whole-machine CPU use in cores while that configuration "
          "ran (about 1.0 = the machine was otherwise idle).")


def check_imports(peers, install):
    import importlib.util

    mods = {"hnswlib": "hnswlib", "faiss": "faiss", "usearch": "usearch", "lance": "lance"}
    missing = [p for p in ["numpy"] + peers if importlib.util.find_spec(mods.get(p, p)) is None]
    if missing:
        if not install:
            sys.exit(f"missing Python packages for {', '.join(missing)}: run\n"
                     f"    pip install -r {os.path.relpath(REQUIREMENTS)}\nor pass --install")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-r", str(REQUIREMENTS)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", nargs="?", default="glove-100k",
                    help="dataset name under ~/.cache/shoal/datasets, or 'all' (default glove-100k)")
    ap.add_argument("--peers", default=",".join(ALL_PEERS), help=f"comma list of {ALL_PEERS}")
    ap.add_argument("--configs", default=None,
                    help="comma list of configuration names to run (default: all); "
                         + "; ".join(f"{p}: {','.join(c)}" for p, c in CONFIGS.items()))
    ap.add_argument("--queries", type=int, default=None, help="use only the first N queries")
    ap.add_argument("--timeout", type=float, default=7200, help="seconds per configuration")
    ap.add_argument("--repeat", type=int, default=5,
                    help="at most this many timed passes over the queries per sweep point (at least "
                         "2, fewer once 3 s are spent); the fastest pass is reported")
    ap.add_argument("--pin", type=int, default=None, help="pin each worker to this CPU")
    ap.add_argument("--install", action="store_true", help="pip install the requirements if missing")
    ap.add_argument("--work-dir", default=str(cache_root() / "peers-work"),
                    help="scratch space (Lance datasets); emptied per configuration")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    ap.add_argument("--dataset", dest="dataset_opt", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        args.dataset = args.dataset_opt
        worker(args)
        return
    args.peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    bad = [p for p in args.peers if p not in ALL_PEERS]
    if bad:
        ap.error(f"unknown peer(s) {bad}; choose from {ALL_PEERS}")
    args.configs = set(c.strip() for c in args.configs.split(",")) if args.configs else None
    check_imports(args.peers, args.install)
    root = cache_root() / "datasets"
    names = sorted(p.name for p in root.iterdir() if (p / "meta.json").exists()) \
        if args.dataset == "all" else [args.dataset]
    if not names:
        sys.exit("no prepared dataset: run python3 bench/datasets.py first")
    for name in names:
        if not (root / name / "meta.json").exists():
            sys.exit(f"dataset {name} is not prepared: run python3 bench/datasets.py --only {name}")
        run_dataset(name, args)


if __name__ == "__main__":
    main()
