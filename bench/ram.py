#!/usr/bin/env python3
"""The RAM experiment of Qdrant's "Minimal RAM you need to serve a million vectors", on Shoal.

1M x 100-d vectors (`mixed-1m-100` from bench/datasets.py: GloVe 400k padded + a clustered
mixture), ingested into `shoal serve` over the binary route and sealed into one segment with an
IVF-RaBitQ index; full vectors stay memory-mapped on disk. Then, for each memory limit, the
server is restarted inside a cgroup with that limit (v1 `memory.limit_in_bytes`, or v2
`memory.max`), with the page cache dropped first, and answers the 1,000 queries from CLIENTS
concurrent HTTP clients: QPS, recall@10 against exact ground truth, latency, peak memory.
Finally a binary search finds the smallest limit at which it still answers every query.

    python3 bench/datasets.py --only mixed-1m-100
    python3 bench/ram.py prepare          # ingest + seal (once)
    python3 bench/ram.py run [--limits 1024,256,128,64] [--clients 8] [--min-search]

Needs root (cgroups, drop_caches). Results: ~/.cache/shoal/results/ram-bits{B}.json.
SHOAL_BIN=path runs another build of the server.
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

from shoal_server import BINARY, Server, binary_batch

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache" / "shoal"))
DATASET = CACHE / "datasets" / "mixed-1m-100"
DATA = CACHE / "ram-data"  # + "-bits{N}" for extended codes
RESULTS = CACHE / "results" / "ram.json"
NAME = "ram"


def shoal_binary():
    return os.environ.get("SHOAL_BIN", str(ROOT / "target" / "release" / "shoal"))


def data_dir(bits):
    return DATA if bits == 1 else DATA.with_name(f"ram-data-bits{bits}")


def prepare(args):
    data = data_dir(args.bits)
    base = np.load(DATASET / "base.npy", mmap_mode="r")
    meta = json.loads((DATASET / "meta.json").read_text())
    n, d = base.shape
    subprocess.run(["rm", "-rf", str(data)], check=True)
    server = Server(shoal_binary(), data)
    url = server.url
    try:
        s = requests.Session()
        r = s.put(f"{url}/collections/{NAME}", json={"dim": d, "metric": meta["metric"],
                                                     "index": {"index": "ivf-rabitq", "bits": args.bits}})
        r.raise_for_status()
        t = time.perf_counter()
        for lo in range(0, n, 10_000):
            hi = min(n, lo + 10_000)
            r = s.post(f"{url}/collections/{NAME}/points/binary",
                       data=binary_batch(np.arange(lo, hi), base[lo:hi]), headers=BINARY)
            r.raise_for_status()
        print(f"ingested {n:,} x {d} in {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        s.post(f"{url}/collections/{NAME}/seal", timeout=3600).raise_for_status()
        print(f"sealed in {time.perf_counter() - t:.1f} s", flush=True)
        assert s.post(f"{url}/collections/{NAME}/points/count", json={}).json()["result"]["count"] == n
    finally:
        server.stop()
    for f in sorted((data / "collections" / NAME).iterdir()):
        print(f"  {f.name}: {f.stat().st_size / 2**20:,.1f} MiB")


class Cgroup:
    """A memory cgroup with a limit (v1 or v2), removed on close."""

    def __init__(self, limit_bytes):
        v1 = Path("/sys/fs/cgroup/memory")
        if v1.is_dir():
            self.dir = v1 / "shoal-ram"
            self.limit_file, self.peak_file, self.v = "memory.limit_in_bytes", "memory.max_usage_in_bytes", 1
        else:
            self.dir = Path("/sys/fs/cgroup/shoal-ram")
            self.limit_file, self.peak_file, self.v = "memory.max", "memory.peak", 2
        self.close()
        self.dir.mkdir()
        if self.v == 1:
            (self.dir / "memory.swappiness").write_text("0")
        (self.dir / self.limit_file).write_text(str(limit_bytes))

    def peak(self):
        try:
            return int((self.dir / self.peak_file).read_text())
        except (OSError, ValueError):
            return None

    def oom_kills(self):
        f = self.dir / ("memory.oom_control" if self.v == 1 else "memory.events")
        for line in f.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def close(self):
        if self.dir.exists():
            for pid in (self.dir / "cgroup.procs").read_text().split():
                try:
                    os.kill(int(pid), 9)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
            self.dir.rmdir()


def drop_caches():
    subprocess.run(["sync"], check=True)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3")
        return True
    except OSError:
        return False


def measure(limit_mib, clients, queries, gt, data, warmup=200, budget_s=300):
    """One run under `limit_mib`: returns a result dict (served=False if the server died)."""
    dropped = drop_caches()
    cg = Cgroup(limit_mib << 20)
    res = {"limit_mib": limit_mib, "clients": clients, "page_cache_dropped": dropped, "data": str(data)}
    server = None
    try:
        try:
            server = Server(shoal_binary(), data, wrap=f"echo $$ > {cg.dir}/cgroup.procs")
        except RuntimeError as e:
            res.update(served=False, error=str(e))
            return res
        url = server.url
        q = queries.tolist()
        got = [None] * len(q)
        lat = [0.0] * len(q)
        errors = []
        def run_pass(indices, record, deadline=None):
            """Sends the queries `indices` from `clients` threads; `record`: keep results."""
            todo = iter(indices)
            lock = threading.Lock()

            def worker():
                s = requests.Session()
                while True:
                    with lock:
                        qi = next(todo, None)
                    if qi is None or (deadline and time.perf_counter() > deadline):
                        return
                    t = time.perf_counter()
                    try:
                        r = s.post(f"{url}/collections/{NAME}/search", json={"vector": q[qi], "limit": 10},
                                   timeout=120)
                        r.raise_for_status()
                    except Exception as e:  # noqa: BLE001 - a dead server is a result here
                        errors.append(str(e)[:200])
                        return
                    if record:
                        lat[qi] = time.perf_counter() - t
                        got[qi] = [p["id"] for p in r.json()["points"]]

            threads = [threading.Thread(target=worker) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        run_pass(range(warmup), record=False)  # warm-up, not timed
        t0 = time.perf_counter()
        run_pass(range(len(q)), record=True, deadline=t0 + budget_s)  # every query once
        secs = time.perf_counter() - t0
        answered = [i for i in range(len(q)) if got[i] is not None]
        alive = server.alive()
        recall = (sum(len(set(got[i]) & set(gt[i, :10].tolist())) for i in answered) / (10 * len(answered))
                  if answered else 0.0)
        lats = sorted(lat[i] for i in answered)
        res.update(
            served=alive and not errors and len(answered) == len(q),
            answered=len(answered), errors=errors[:3], qps=len(answered) / secs, recall_at_10=recall,
            p50_ms=1e3 * lats[len(lats) // 2] if lats else None,
            p99_ms=1e3 * lats[int(len(lats) * 0.99) - 1] if lats else None,
            peak_mib=(cg.peak() or 0) / 2**20, oom_kills=cg.oom_kills())
        return res
    finally:
        if server:
            server.stop()
        cg.close()


def show(r):
    if not r.get("served"):
        print(f"{r['limit_mib']:>6} MiB: does not serve ({r.get('errors') or r.get('error')}, "
              f"oom_kills {r.get('oom_kills')})", flush=True)
        return
    print(f"{r['limit_mib']:>6} MiB: {r['qps']:8,.0f} QPS  recall@10 {r['recall_at_10']:.3f}  "
          f"p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms  peak {r['peak_mib']:.0f} MiB  "
          f"({r['clients']} clients, page cache dropped: {r['page_cache_dropped']})", flush=True)


def run(args):
    queries = np.load(DATASET / "queries.npy")
    gt = np.load(DATASET / "gt.npy")
    results = []
    for limit in [int(x) for x in args.limits.split(",")]:
        r = measure(limit, args.clients, queries, gt, data_dir(args.bits))
        show(r)
        results.append(r)
    if args.min_search:
        lo, hi = 4, min([r["limit_mib"] for r in results if r.get("served")] or [64])
        while hi - lo > 2:
            mid = (lo + hi) // 2
            r = measure(mid, args.clients, queries, gt, data_dir(args.bits), budget_s=120)
            show(r)
            results.append(r)
            if r.get("served"):
                hi = mid
            else:
                lo = mid
        print(f"smallest limit that serves every query: {hi} MiB (fails at {lo} MiB)")
        results.append({"smallest_serving_mib": hi, "fails_at_mib": lo})
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    out = RESULTS.with_name(f"ram-bits{args.bits}.json")
    out.write_text(json.dumps(results, indent=2) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--bits", type=int, default=1, help="RaBitQ bits per dimension (1-8)")
    r = sub.add_parser("run")
    r.add_argument("--bits", type=int, default=1, help="serve the collection prepared with --bits")
    r.add_argument("--limits", default="1024,256,128,64")
    r.add_argument("--clients", type=int, default=8)
    r.add_argument("--min-search", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0 and args.cmd == "run":
        raise SystemExit("ram.py run needs root (cgroups, drop_caches)")
    {"prepare": prepare, "run": run}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
