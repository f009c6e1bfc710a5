#!/usr/bin/env python3
"""10M x 128-d into `shoal serve` inside a 2 GiB memory cgroup: a collection as a set of segments.

    python3 bench/large.py ingest   [--n 10000000] [--limit-mib 2048] [--batch 10000]
    python3 bench/large.py search   # the ingested set, then the same points as one segment
                                    # (--only set: the set alone, after a new ingest)
    python3 bench/large.py plot     # docs/img/ingest-10m.png from the results

`ingest`: a fresh server runs inside a memory cgroup (v1 `memory.limit_in_bytes` or v2
`memory.max`; needs root) with the default durability (fsync per request) and settings. One
client streams synthetic-10m-128 (bench/datasets.py) as binary batches; two more clients
search (1,000 held-out queries, top 10) all along. Seals and merges run in the background as
the server decides. Recorded: the ingest rate over time (per 10 s), search latency
(p50/p99) during the ingest, the cgroup's peak memory and OOM kills; at the end every point
must be counted and the background work settled.

`search`: the ingested folder served (no memory limit; page cache warmed by one pass) with
1 and 2 concurrent clients: recall@10 against the exact ground truth, QPS, p50/p99. Then
the same 10M points built into one segment by `shoal build` (timed: the 10M build time,
2 threads), imported as a second collection and measured the same way.

Results: ~/.cache/shoal/results/large-10m.json (and the ingest timeline for the plot).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ram import Cgroup, shoal_binary  # noqa: E402
from shoal_server import BINARY, Server, binary_batch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache" / "shoal"))
DATASET = CACHE / "datasets" / "synthetic-10m-128"
WORK = CACHE / "large"
RESULTS = CACHE / "results" / "large-10m.json"
NAME = "large"


def load_results():
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {}


def save_results(update):
    res = load_results()
    res.update(update)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(res, indent=1) + "\n")


def metric(url, name, collection=NAME):
    text = requests.get(f"{url}/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(f'{name}{{collection="{collection}"}}'):
            return int(float(line.split()[-1]))
    return None


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p / 100 * len(xs))) - 1))] if xs else None


def ingest(args):
    base = np.load(DATASET / "base.npy", mmap_mode="r")
    queries = np.load(DATASET / "queries.npy").tolist()
    n = min(args.n, base.shape[0])
    data = WORK / "data"
    subprocess.run(["rm", "-rf", str(data)], check=True)
    cg = Cgroup(args.limit_mib << 20)
    server = None
    try:
        server = Server(shoal_binary(), data, wrap=f"echo $$ > {cg.dir}/cgroup.procs")
        url = server.url
        requests.put(f"{url}/collections/{NAME}", json={"dim": base.shape[1], "metric": "l2"}).raise_for_status()
        acks = []  # (seconds since start, points acknowledged)
        lat = []  # (seconds since start, search latency in seconds)
        mem = []  # (seconds since start, cgroup usage bytes, segments)
        done = threading.Event()
        searching = threading.Event()
        searching.set()
        t0 = time.perf_counter()

        def searcher(c):
            s = requests.Session()
            i = c
            while searching.is_set():
                t = time.perf_counter()
                r = s.post(f"{url}/collections/{NAME}/search", json={"vector": queries[i % len(queries)], "limit": 10},
                           timeout=600)
                r.raise_for_status()
                lat.append((t - t0, time.perf_counter() - t))
                i += 2

        def sampler():
            usage = cg.dir / ("memory.usage_in_bytes" if cg.v == 1 else "memory.current")
            anon = "rss" if cg.v == 1 else "anon"  # the process's own memory, page cache apart
            while not done.is_set():
                try:
                    stat = dict(line.split() for line in (cg.dir / "memory.stat").read_text().splitlines())
                    mem.append((time.perf_counter() - t0, int(usage.read_text()), metric(url, "shoal_segments"),
                                int(stat[anon])))
                except (OSError, ValueError, KeyError, requests.RequestException):
                    pass
                done.wait(5)

        threads = [threading.Thread(target=searcher, args=(c,), daemon=True) for c in range(2)]
        threads.append(threading.Thread(target=sampler, daemon=True))
        for t in threads:
            t.start()
        s = requests.Session()
        for lo in range(0, n, args.batch):
            hi = min(n, lo + args.batch)
            s.post(f"{url}/collections/{NAME}/points/binary", data=binary_batch(np.arange(lo, hi), base[lo:hi]),
                   headers=BINARY, timeout=600).raise_for_status()
            acks.append((time.perf_counter() - t0, hi))
            if hi % 1_000_000 == 0:
                print(f"  {hi:,} points in {acks[-1][0]:.0f} s; cgroup peak {(cg.peak() or 0) / 2**20:,.0f} MiB",
                      flush=True)
        ingest_s = acks[-1][0]
        searching.clear()  # latency is measured during the ingest
        # The last points (fewer than a seal's worth) sealed too, then the merges settle.
        s.post(f"{url}/collections/{NAME}/seal", timeout=3600).raise_for_status()
        while metric(url, "shoal_background_jobs"):
            if not server.alive():
                raise SystemExit("the server died")
            time.sleep(2)
        settled_s = time.perf_counter() - t0
        searching.clear()
        done.set()
        for t in threads:
            t.join(timeout=600)
        count = s.post(f"{url}/collections/{NAME}/points/count", json={}).json()["result"]["count"]
        segments = metric(url, "shoal_segments")
    finally:
        if server:
            server.stop()
        peak, ooms = cg.peak(), cg.oom_kills()
        cg.close()
    # Ingest rate per 10 s window.
    windows = []
    for w in range(0, int(ingest_s) + 1, 10):
        inside = [p for t, p in acks if w <= t < w + 10]
        before = [p for t, p in acks if t < w]
        if inside:
            windows.append((w, (inside[-1] - (before[-1] if before else 0)) / min(10, ingest_s - w)))
    first_minute = n_at(acks, 60) / 60 if ingest_s >= 60 else n / ingest_s
    rolling = [(t, (p - n_at_interp(acks, t - 60)) / 60) for t, p in acks if t >= 60]
    lats = [x for _, x in lat]
    res = {
        "n": n, "limit_mib": args.limit_mib, "batch": args.batch, "count": count, "segments": segments,
        "ingest_s": round(ingest_s, 1), "settled_s": round(settled_s, 1), "rate": n / ingest_s,
        "first_minute_rate": first_minute, "min_window_rate": min(r for _, r in windows[:-1] or windows),
        "min_minute_rate": min((r for _, r in rolling), default=None),
        "peak_anon_mib": max((m[3] for m in mem), default=0) / 2**20,
        "peak_mib": (peak or 0) / 2**20, "oom_kills": ooms,
        "search_during_ingest": {"queries": len(lats), "p50_ms": 1e3 * percentile(lats, 50),
                                 "p99_ms": 1e3 * percentile(lats, 99)},
        "timeline": {"acks": acks[::10], "rate_windows": windows, "rolling_minute": rolling[::10], "memory": mem,
                     "latency": [(round(t, 1), round(x * 1e3, 2)) for t, x in lat[::5]]},
    }
    save_results({"ingest": res})
    print(json.dumps({k: v for k, v in res.items() if k != "timeline"}, indent=1))
    if count != n:
        raise SystemExit(f"count {count} != {n}")


def n_at(acks, secs):
    before = [p for t, p in acks if t <= secs]
    return before[-1] if before else 0


def n_at_interp(acks, secs):
    """Points acknowledged by `secs`, interpolated between acknowledgements."""
    prev = (0.0, 0)
    for t, p in acks:
        if t >= secs:
            return prev[1] + (p - prev[1]) * (secs - prev[0]) / (t - prev[0]) if t > prev[0] else p
        prev = (t, p)
    return prev[1]


def measure(url, collection, queries, gt, clients, warm=True):
    q = queries.tolist()
    if warm:  # one pass to fault the pages in, not timed
        run_queries(url, collection, q, 2)
    got, lats, secs = run_queries(url, collection, q, clients)
    recall = sum(len(set(got[i]) & set(gt[i, :10].tolist())) for i in range(len(q))) / (10 * len(q))
    return {"clients": clients, "qps": len(q) / secs, "recall_at_10": recall,
            "p50_ms": 1e3 * percentile(lats, 50), "p99_ms": 1e3 * percentile(lats, 99)}


def run_queries(url, collection, q, clients):
    got = [None] * len(q)
    lat = [0.0] * len(q)
    todo = iter(range(len(q)))
    lock = threading.Lock()

    def worker():
        s = requests.Session()
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            t = time.perf_counter()
            r = s.post(f"{url}/collections/{collection}/search", json={"vector": q[i], "limit": 10}, timeout=600)
            r.raise_for_status()
            lat[i] = time.perf_counter() - t
            got[i] = [p["id"] for p in r.json()["points"]]

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got, lat, time.perf_counter() - t0


def peak_anon_while_running(proc, every=0.1):
    """The largest RssAnon (bytes) of `proc`, sampled from /proc until it exits."""
    peak = 0
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("RssAnon:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except OSError:
            break
        time.sleep(every)
    return peak


def search(args):
    queries = np.load(DATASET / "queries.npy")
    gt = np.load(DATASET / "gt.npy")
    data = WORK / "data"
    # `--only set` keeps the one-segment results (and build time) of an earlier run.
    out = load_results().get("search", {}) if args.only == "set" else {}
    # The same points as one segment: `shoal build` (the 10M build time), then `shoal import`.
    seg = WORK / "one.shoal"
    merged = "merged"
    if args.only != "set" and not (data / "collections" / merged).exists():
        t = time.perf_counter()
        proc = subprocess.Popen([str(shoal_binary()), "--threads", "2", "build", str(DATASET / "base.npy"),
                                 "--metric", "l2", "--index", "ivf-rabitq", "--bits", "4", "--out", str(seg),
                                 "--quiet"])
        anon = peak_anon_while_running(proc)
        if proc.wait() != 0:
            sys.exit("shoal build failed")
        out["build_10m_s"] = round(time.perf_counter() - t, 1)
        out["build_10m_anon_peak_mib"] = round(anon / 2**20)
        print(f"shoal build (2 threads): {out['build_10m_s']} s, peak anonymous memory "
              f"{out['build_10m_anon_peak_mib']} MiB", flush=True)
        subprocess.run([str(shoal_binary()), "import", "--data", str(data), "--name", merged, str(seg)], check=True)
        seg.unlink()
    server = Server(shoal_binary(), data)
    try:
        layouts = ((NAME, "set"),) if args.only == "set" else ((NAME, "set"), (merged, "one_segment"))
        for name, label in layouts:
            out[label] = {"segments": metric(server.url, "shoal_segments", name)}
            for clients in (1, 2):
                r = measure(server.url, name, queries, gt, clients)
                out[label][f"clients_{clients}"] = r
                print(f"{label} ({out[label]['segments']} segments), {clients} client(s): {r}", flush=True)
    finally:
        server.stop()
    save_results({"search": out})


def plot(args):
    import plots

    plots.ingest_plot(load_results()["ingest"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["ingest", "search", "plot"])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--limit-mib", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--only", choices=["set", "both"], default="both",
                    help="search: measure only the ingested set, keeping an earlier run's one-segment results")
    args = ap.parse_args()
    {"ingest": ingest, "search": search, "plot": plot}[args.step](args)


if __name__ == "__main__":
    main()
