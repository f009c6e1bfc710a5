#!/usr/bin/env python3
"""How many rows must an IVF search scan to reach a recall, by partition count and with spilled
assignments (SOAR)? A simulation of the partitioning alone, to choose what to build.

For a dataset prepared by ``bench/datasets.py`` (cosine sets: rows and queries normalised), it
trains k-means (FAISS's: 20 iterations, seed 1; ``faiss-cpu`` from bench/requirements-bench.txt)
with each given partition count, assigns every row to its nearest centroid, and optionally gives
each row a second, *spilled* partition chosen as SOAR does (Sun et al., "SOAR: Improved Indexing
for Approximate Nearest Neighbor Search", NeurIPS 2023): with ``r = x - c1`` the residual to the
first centroid, the second is the centroid ``c != c1`` minimising ``‖x - c‖² + λ ⟨x - c,
r/‖r‖⟩²`` (λ = 0 is plain second-nearest spilling). A query probes partitions in order of its
squared distances to the centroids, as Shoal's search does for l2 and cosine; a true neighbour
is found once a partition holding it (either assignment) is probed, and every row of every
probed partition counts as scanned (spilled copies included).

It prints, per configuration, the probes and rows scanned at which the mean recall@10 of the
found rows reaches 0.90 / 0.95 / 0.99, interpolated linearly between the probe counts around
each target. This is the recall of the partitions with exact distances for everything found:
a real search also loses what its estimates rank out, so read it as rows per recall, the
partitioning's share of the cost.

    python3 bench/partitions_sim.py glove-400k 1265,2530
"""

import argparse
import os
import time
from pathlib import Path

import faiss
import numpy as np


def load(name):
    root = Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache/shoal")) / "datasets" / name
    base = np.load(root / "base.npy").astype(np.float32)
    queries = np.load(root / "queries.npy").astype(np.float32)
    gt = np.load(root / "gt.npy")[:, :10]
    base /= np.linalg.norm(base, axis=1, keepdims=True) + 1e-30
    queries /= np.linalg.norm(queries, axis=1, keepdims=True) + 1e-30
    return base, queries, gt


def curve(queries, gt, centroids, first, second):
    """(probes, mean recall@10, mean rows scanned) for every probe count."""
    nlist = len(centroids)
    sizes = np.bincount(first, minlength=nlist)
    if second is not None:
        sizes = sizes + np.bincount(second, minlength=nlist)
    # Probe order as Shoal's for l2 and cosine: squared distance to the centroid (ties by number).
    order = np.argsort((centroids * centroids).sum(1)[None, :] - 2 * queries @ centroids.T, axis=1, kind="stable")
    rank = np.empty_like(order)
    rank[np.arange(len(queries))[:, None], order] = np.arange(nlist)[None, :]
    found_at = np.take_along_axis(rank, first[gt], axis=1)
    if second is not None:
        found_at = np.minimum(found_at, np.take_along_axis(rank, second[gt], axis=1))
    scanned = np.cumsum(sizes[order], axis=1).mean(axis=0)
    found = np.bincount(found_at.ravel(), minlength=nlist).cumsum() / found_at.size
    return [(p + 1, found[p], scanned[p]) for p in range(nlist)]


def at(points, target):
    prev = None
    for probes, recall, rows in points:
        if recall >= target:
            if prev is None:
                return probes, rows
            p0, r0, w0 = prev
            t = (target - r0) / (recall - r0)
            return p0 + t * (probes - p0), w0 + t * (rows - w0)
        prev = (probes, recall, rows)
    return float("nan"), float("nan")


def soar(base, centroids, first, lam, chunk=20000):
    residual = base - centroids[first]
    unit = residual / (np.linalg.norm(residual, axis=1, keepdims=True) + 1e-30)
    norms = (centroids * centroids).sum(1)
    second = np.empty(len(base), dtype=np.int64)
    for i in range(0, len(base), chunk):
        x, u = base[i : i + chunk], unit[i : i + chunk]
        l2 = (x * x).sum(1)[:, None] - 2 * x @ centroids.T + norms[None, :]
        along = (x * u).sum(1)[:, None] - u @ centroids.T
        loss = l2 + lam * along * along
        loss[np.arange(len(x)), first[i : i + chunk]] = np.inf
        second[i : i + chunk] = loss.argmin(1)
    return second


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("partitions", help="comma-separated partition counts")
    ap.add_argument("--lambdas", default="0,1,2", help="SOAR λ values to try (default 0,1,2)")
    args = ap.parse_args()
    base, queries, gt = load(args.dataset)
    d = base.shape[1]
    for nlist in (int(p) for p in args.partitions.split(",")):
        t = time.time()
        km = faiss.Kmeans(d, nlist, niter=20, seed=1, verbose=False)
        km.train(base)
        _, first = km.index.search(base, 1)
        first = first[:, 0]
        print(f"{args.dataset}, {nlist} partitions (k-means {time.time() - t:.0f} s)", flush=True)
        configs = [("one partition", None)]
        configs += [(f"SOAR λ={float(lam):g}", float(lam)) for lam in args.lambdas.split(",")]
        for label, lam in configs:
            second = None if lam is None else soar(base, km.centroids, first, lam)
            points = curve(queries, gt, km.centroids, first, second)
            cells = "  ".join(
                "@{}: {:.0f} probes, {:.0f} rows".format(target, *at(points, target)) for target in (0.9, 0.95, 0.99)
            )
            print(f"  {label:14s} {cells}", flush=True)


if __name__ == "__main__":
    main()
