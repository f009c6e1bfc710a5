#!/usr/bin/env python3
"""Load: CLIENTS concurrent clients mixing searches and upserts against 1M points for DURATION.

Serves a copy of the collection `bench/ram.py prepare --bits B` built (1M x 100-d, IVF-RaBitQ,
vectors mapped). Each client loops: with probability UPSERT_SHARE it upserts a binary batch of
BATCH points that replace random existing ids (new vectors: base rows plus noise, so the
collection stays at 1M points while its unsealed part grows and background seals run), otherwise
it searches one of the 1,000 queries (limit 10). Every WINDOW seconds it prints the operations,
search and upsert p50/p99 latency, errors, and the server's RSS; the run fails on any error.

    python3 bench/load.py [--minutes 10] [--clients 4] [--bits 4]

Results: ~/.cache/shoal/results/load.json.
"""

import argparse
import json
import os
import random
import shutil
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
NAME = "ram"


def pct(xs, p):
    xs = sorted(xs)
    return 1e3 * xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--bits", type=int, default=4)
    ap.add_argument("--upsert-share", type=float, default=0.2)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--window", type=float, default=30)
    args = ap.parse_args()

    src = CACHE / ("ram-data" if args.bits == 1 else f"ram-data-bits{args.bits}")
    if not (src / "collections" / NAME).is_dir():
        raise SystemExit(f"{src}: run `python3 bench/ram.py prepare --bits {args.bits}` first")
    data = CACHE / "load-data"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(src, data)
    base = np.load(DATASET / "base.npy", mmap_mode="r")
    queries = np.load(DATASET / "queries.npy").tolist()
    n, d = base.shape

    server = Server(ROOT / "target" / "release" / "shoal", data)
    url = server.url

    lock = threading.Lock()
    window = {"search": [], "upsert": [], "errors": []}
    stop = threading.Event()

    def client(c):
        rng = random.Random(c)
        nrng = np.random.default_rng(c)
        s = requests.Session()
        while not stop.is_set():
            t = time.perf_counter()
            try:
                if rng.random() < args.upsert_share:
                    ids = np.sort(np.array(rng.sample(range(n), args.batch), dtype=np.uint64))
                    vecs = (np.asarray(base[ids], dtype=np.float32)
                            + nrng.standard_normal((args.batch, d), dtype=np.float32) * 0.01)
                    r = s.post(f"{url}/collections/{NAME}/points/binary", data=binary_batch(ids, vecs),
                               headers=BINARY, timeout=60)
                    kind = "upsert"
                else:
                    r = s.post(f"{url}/collections/{NAME}/search",
                               json={"vector": queries[rng.randrange(len(queries))], "limit": 10}, timeout=60)
                    kind = "search"
                if r.status_code != 200:
                    raise RuntimeError(f"{r.status_code} {r.text[:200]}")
                with lock:
                    window[kind].append(time.perf_counter() - t)
            except Exception as e:  # noqa: BLE001 - every error is reported and fails the run
                with lock:
                    window["errors"].append(str(e)[:200])

    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    rows = []
    t0 = time.perf_counter()
    end = t0 + args.minutes * 60
    try:
        while time.perf_counter() < end:
            time.sleep(min(args.window, max(0.0, end - time.perf_counter())))
            with lock:
                w = {k: v[:] for k, v in window.items()}
                for v in window.values():
                    v.clear()
            row = {"t_s": round(time.perf_counter() - t0), "searches": len(w["search"]), "upserts": len(w["upsert"]),
                   "search_p50_ms": pct(w["search"], 0.5), "search_p99_ms": pct(w["search"], 0.99),
                   "upsert_p50_ms": pct(w["upsert"], 0.5), "upsert_p99_ms": pct(w["upsert"], 0.99),
                   "errors": len(w["errors"]), "rss_mib": server.rss_mib()}
            rows.append(row)
            print(f"{row['t_s']:5d} s: {row['searches'] / args.window:7.0f} searches/s  p50 {row['search_p50_ms']:6.2f} "
                  f"p99 {row['search_p99_ms']:7.2f} ms | {row['upserts'] / args.window:5.1f} upserts/s "
                  f"(x{args.batch})  p50 {row['upsert_p50_ms']:6.2f} p99 {row['upsert_p99_ms']:7.2f} ms | "
                  f"errors {row['errors']} | RSS {row['rss_mib']:,.0f} MiB", flush=True)
            if w["errors"]:
                print("  first error:", w["errors"][0], flush=True)
    finally:
        stop.set()
        for t in threads:
            t.join()
    count = requests.post(f"{url}/collections/{NAME}/points/count", json={}).json()["result"]["count"]
    server.stop()
    shutil.rmtree(data, ignore_errors=True)
    errors = sum(r["errors"] for r in rows)
    rss = [r["rss_mib"] for r in rows]
    print(f"\n{args.minutes:g} min, {args.clients} clients: {sum(r['searches'] for r in rows):,} searches, "
          f"{sum(r['upserts'] for r in rows):,} upserts of {args.batch}; errors {errors}; points at the end "
          f"{count:,} (expected {n:,}); RSS {min(rss):,.0f}-{max(rss):,.0f} MiB")
    out = CACHE / "results" / "load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "rows": rows, "count": count}, indent=2) + "\n")
    return 1 if errors or count != n else 0


if __name__ == "__main__":
    sys.exit(main())
