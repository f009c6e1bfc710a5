#!/usr/bin/env python3
"""Ingest into `shoal serve`: the binary batch route against the JSON route, same run.

A Python client (requests; --clients threads, one keep-alive connection each) sends N x DIM float32 vectors in batches
of BATCH to a fresh server: once as binary batches (`POST /collections/{name}/points/binary`,
docs/format.md), once as Qdrant-style JSON (`PUT /collections/{name}/points` with
`{"batch": {"ids", "vectors"}}`). Every request is acknowledged only after the server has
written and fdatasync'ed its write-ahead log record (the default durability). Client encoding
time counts: it is part of what a user pays.

    python3 bench/ingest.py [--n 1000000] [--dim 128] [--batch 10000] [--runs 3] [--clients 1]

Prints vectors/s per route (median of runs), the ratio, and the server's RSS.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import threading
import time

import numpy as np
import requests

from shoal_server import BINARY, Server, binary_batch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def json_body(ids, vecs):
    return json.dumps({"batch": {"ids": ids.tolist(), "vectors": vecs.tolist()}})


def run(server, name, ids, vecs, batch, binary, clients):
    """Sends every batch from `clients` threads (each its own connection, batches dealt round
    robin); returns vectors/s and the client encoding seconds (summed over threads)."""
    dim = vecs.shape[1]
    requests.put(f"{server.url}/collections/{name}", json={"dim": dim, "metric": "l2"}).raise_for_status()
    starts = list(range(0, len(ids), batch))
    encode = [0.0] * clients

    def client(c):
        with requests.Session() as session:
            encode[c] = send(server, name, ids, vecs, batch, binary, session, starts[c::clients])

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.perf_counter() - t0
    r = requests.post(f"{server.url}/collections/{name}/points/count", json={})
    if r.json()["result"]["count"] != len(ids):
        raise SystemExit(f"{name}: {r.text}")
    return len(ids) / secs, sum(encode)


def send(server, name, ids, vecs, batch, binary, session, starts):
    encode = 0.0
    for lo in starts:
        e0 = time.perf_counter()
        if binary:
            body = binary_batch(ids[lo:lo + batch], vecs[lo:lo + batch])
        else:
            body = json_body(ids[lo:lo + batch], vecs[lo:lo + batch])
        encode += time.perf_counter() - e0
        if binary:
            r = session.post(f"{server.url}/collections/{name}/points/binary", data=body,
                             headers=BINARY)
        else:
            r = session.put(f"{server.url}/collections/{name}/points", data=body,
                            headers={"content-type": "application/json"})
        if r.status_code != 200:
            raise SystemExit(f"{name}: {r.status_code} {r.text[:300]}")
    return encode


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--clients", type=int, default=1, help="client threads, one connection each")
    ap.add_argument("--json-n", type=int, default=None, help="vectors for the JSON route (default: --n)")
    ap.add_argument("--shoal", default=os.path.join(ROOT, "target", "release", "shoal"))
    ap.add_argument("--data", default=os.path.join(os.path.expanduser("~"), ".cache", "shoal", "ingest-data"))
    ap.add_argument("--seal-rows", type=int, default=None,
                    help="pass --seal-rows to the server (default: the server's default)")
    args = ap.parse_args()

    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((args.n, args.dim), dtype=np.float32)
    ids = np.arange(args.n, dtype=np.uint64)
    json_n = args.json_n or args.n
    extra = [] if args.seal_rows is None else ["--seal-rows", str(args.seal_rows)]
    results = {"binary": [], "json": []}
    rss = []
    for run_no in range(args.runs):
        for route in ("binary", "json"):
            shutil.rmtree(args.data, ignore_errors=True)
            os.makedirs(args.data)
            server = Server(args.shoal, args.data, extra)
            try:
                n = args.n if route == "binary" else json_n
                rate, enc = run(server, route, ids[:n], vecs[:n], args.batch, route == "binary", args.clients)
                rss.append(server.rss_mib())
            finally:
                server.stop()
            results[route].append(rate)
            print(f"run {run_no + 1} {route:6s}: {n:,} vectors in batches of {args.batch:,}: "
                  f"{args.clients} client(s): {rate:,.0f} vectors/s (client encoding {enc:.2f} s)", flush=True)
    shutil.rmtree(args.data, ignore_errors=True)
    b, j = statistics.median(results["binary"]), statistics.median(results["json"])
    print(f"\nmedian of {args.runs}: binary {b:,.0f} vectors/s, JSON {j:,.0f} vectors/s, ratio {b / j:.1f}x "
          f"(dim {args.dim}, batch {args.batch:,}, fsync per batch); server RSS after a run: "
          f"{min(rss):,.0f}-{max(rss):,.0f} MiB")


if __name__ == "__main__":
    sys.exit(main())
