#!/usr/bin/env python3
"""The plots and result tables of ``docs/benchmarks.md`` and the README, from the result files in
``bench/results/`` (committed: every plot and table can be redrawn from the repository).

- ``docs/img/recall-qps-<dataset>.png``: recall@10 against single-thread QPS, each engine's
  frontier (``bench/frontier.py``), from ``shoal-<dataset>*.json`` (``cargo bench -p shoal-host
  --bench ann``) and ``peers-<dataset>.json`` (``bench/peers.py``);
- ``docs/img/ingest-10m.png``: the 10M ingest into ``shoal serve`` (``large-10m.json``,
  ``bench/large.py``);
- ``docs/img/text-latency.png``: full-text query latency on GCIDE against tantivy and the
  JavaScript engines (``text-*.json``, ``make bench-text``), and its table between the
  ``<!-- results:text:begin/end -->`` markers of ``docs/benchmarks.md``;
- ``docs/img/ram-qps.png``: QPS and recall of ``shoal serve`` against its memory limit, 1M x
  100-d (``ram-bits*.json``, ``make bench-ram``);
- ``docs/img/package-size.png``: the npm package's gzipped wasm per change
  (``package-size.json``, the sizes ``bindings-js/scripts/sizes.sh`` printed);
- the QPS-at-recall tables, written between the ``<!-- results:recall-qps:begin/end -->``
  markers of ``docs/benchmarks.md`` and ``<!-- results:readme:begin/end -->`` of the README.

Usage::

    python3 bench/plots.py            # plots and tables from bench/results/ (make bench-plots)
    python3 bench/plots.py --collect  # first copy the latest results from ~/.cache/shoal/results/
"""

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
IMG = ROOT / "docs" / "img"
CACHE = Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache" / "shoal")) / "results"
sys.path.insert(0, str(HERE))
import frontier  # noqa: E402

TARGETS = (0.90, 0.95, 0.99)
DATASETS = ["glove-100k", "glove-400k", "gcide-256", "synthetic-1m-128"]
# The result files a run leaves in the cache that the plots and tables use.
COLLECT = [f"{kind}-{d}.json" for d in DATASETS for kind in ("peers", "shoal")] + \
    [f"shoal-{d}-b{b}.json" for d in DATASETS for b in range(2, 9)] + \
    [f"shoal-{d}-queries-parallel.json" for d in DATASETS] + \
    ["large-10m.json", "text-shoal.json", "text-tantivy.json", "text-node.json", "ram-bits1.json", "ram-bits4.json",
     "sparse-shoal.json"]
TEXT_KINDS = ("term", "and", "phrase")


def log(msg):
    print(f"plots: {msg}", file=sys.stderr)


def collect():
    RESULTS.mkdir(exist_ok=True)
    for name in COLLECT:
        if (CACHE / name).exists():
            shutil.copyfile(CACHE / name, RESULTS / name)
            log(f"collected {name}")


def pyplot():
    """matplotlib's pyplot on the file-only backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, name):
    """Writes ``fig`` to docs/img/``name`` and closes it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out = IMG / name
    fig.savefig(out, dpi=110)
    plt.close(fig)
    log(f"wrote {out.relative_to(ROOT)}")


# ---- recall / QPS ---------------------------------------------------------------------------

def engines(dataset, prefix=""):
    """Every configuration measured on ``dataset``: (label, index MB, [(recall, qps)], params),
    from ``<prefix>shoal-<dataset>*.json`` and ``<prefix>peers-<dataset>.json``."""
    out = []
    # (The queries-in-parallel runs have their own table, written by hand.)
    runs = [json.loads(p.read_text()) for p in RESULTS.glob(f"{prefix}shoal-{dataset}*.json")
            if not p.name.endswith("-queries-parallel.json")]
    for r in sorted(runs, key=lambda r: (r.get("codes_only", False), r.get("bits", 1))):
        if r.get("dataset") != dataset or r.get("threads", 1) != 1 or r.get("segments", 1) != 1:
            continue
        kind = "codes only" if r.get("codes_only") else f"{r['bits']}-bit"
        memory = (r["index_bytes"] + (0 if r.get("codes_only") else r["vector_bytes"])) / 1e6
        # The peers' driver reports each point's fastest pass: Shoal's fastest pass beside it.
        pts = [(p["recall"], p["qps_best"]) for p in r["points"]]
        out.append((f"Shoal IVF-RaBitQ {kind}", memory, pts, "shoal"))
    peers = RESULTS / f"{prefix}peers-{dataset}.json"
    if peers.exists():
        for cfg in json.loads(peers.read_text())["configs"]:
            if "error" in cfg:
                continue
            pts = [(p["recall"], p["qps"]) for p in cfg["points"] if p.get("qps")]
            out.append((f"{cfg['peer']} {cfg['config']}", cfg["index_bytes"] / 1e6, pts, cfg["peer"]))
    return out


def frontier_axes(ax, lines, xlim, legend_size):
    """Each ``(label, pts, style)`` as its frontier on ``ax``, the recall targets marked, QPS on a
    log scale."""
    for label, pts, style in lines:
        f = frontier.frontier(pts)
        ax.plot([r for r, _ in f], [q for _, q in f], marker="o", ms=3, label=label, **style)
    for t in TARGETS:
        ax.axvline(t, color="grey", lw=0.6, ls=":")
    ax.set_yscale("log")
    ax.set_xlim(xlim, 1.0)
    ax.set_xlabel("recall@10")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=legend_size, loc="lower left")


def recall_qps_plot(dataset, rows):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    peer_colors = iter(["tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray",
                        "tab:olive", "tab:cyan"])
    shoal_styles = iter(["-", "--", ":", "-."])
    lines = []
    for label, memory, pts, engine in rows:
        if engine == "shoal":
            style = dict(lw=2.6, color="#1f3b8f", ls=next(shoal_styles, "-"))
        else:
            style = dict(lw=1.2, color=next(peer_colors, "black"))
        top = max(r for r, _ in pts)
        note = f", max recall {top:.2f}" if top < 0.8 else ""
        lines.append((f"{label} ({memory:,.0f} MB{note})", pts, style))
    frontier_axes(ax, lines, 0.80, 7)
    ax.set_ylabel("queries per second, one thread (log)")
    ax.set_title(f"{dataset}: recall against speed (frontier of each engine's sweep; memory in brackets)", fontsize=9)
    save(fig, f"recall-qps-{dataset}.png")


def fmt(q):
    return "not reached" if q is None else f"{q:,.0f}"


def qps(pts, target):
    got = frontier.qps_at(pts, target)
    return None if got is None else got[0]


def recall_qps_tables(measured):
    """The full table (benchmarks.md) and the README's summary, as Markdown."""
    full, readme = [], []
    readme.append("| dataset | Shoal QPS at recall 0.95 | hnswlib QPS at 0.95 | ratio | Shoal at 0.99 | hnswlib at 0.99 |")
    readme.append("|---|---:|---:|---:|---:|---:|")
    for dataset, rows in measured.items():
        full.append(f"**{dataset}** ![recall/QPS on {dataset}](img/recall-qps-{dataset}.png)")
        full.append("")
        full.append("| engine / configuration | memory MB | " + " | ".join(f"QPS at {t:.2f}" for t in TARGETS)
                    + " | max recall |")
        full.append("|---|---:|" + "---:|" * len(TARGETS) + "---:|")
        for label, memory, pts, _ in rows:
            cells = " | ".join(fmt(qps(pts, t)) for t in TARGETS)
            full.append(f"| {label} | {memory:,.0f} | {cells} | {max(r for r, _ in pts):.4f} |")
        full.append("")
        shoal = [r for r in rows if r[3] == "shoal"]
        hnsw = [r for r in rows if r[3] == "hnswlib"]
        if shoal and hnsw:
            def best(rs, t):
                vals = [q for q in (qps(r[2], t) for r in rs) if q is not None]
                return max(vals) if vals else None
            s95, h95, s99, h99 = best(shoal, 0.95), best(hnsw, 0.95), best(shoal, 0.99), best(hnsw, 0.99)
            ratio = f"{s95 / h95:.2f}x" if s95 and h95 else "-"
            readme.append(f"| {dataset} | {fmt(s95)} | {fmt(h95)} | {ratio} | {fmt(s99)} | {fmt(h99)} |")
    full.append("QPS at a recall target: read off each configuration's frontier, interpolated between "
                "the two sweep points around the target (`bench/frontier.py`); one thread, one query "
                "per call. Memory: the index (Shoal: plus the full vectors it re-ranks with, memory-mapped).")
    return "\n".join(full), "\n".join(readme)


# ---- Shoal against hnswlib, one run -----------------------------------------------------------

# ``same-run-{shoal,peers}-<dataset>*.json``: Shoal (1- and 4-bit) and hnswlib measured one after
# another on one pinned core (the head-to-head the QPS targets are set against).
SAME_RUN = "same-run-"


def same_run_plot(measured):
    plt = pyplot()
    fig, axes = plt.subplots(1, len(measured), figsize=(4.2 * len(measured), 4.2), squeeze=False)
    for ax, (dataset, rows) in zip(axes[0], measured.items()):
        styles = iter(["-", "--", ":"])
        lines = [(f"{label} ({memory:,.0f} MB)", pts,
                  dict(lw=2.4, color="#1f3b8f", ls=next(styles, "-")) if engine == "shoal" else dict(lw=1.4, color="tab:orange"))
                 for label, memory, pts, engine in rows]
        frontier_axes(ax, lines, 0.85, 6.5)
        ax.set_title(dataset, fontsize=9)
    axes[0][0].set_ylabel("queries per second, one thread (log)")
    save(fig, "same-run-hnswlib.png")


def same_run_tables(measured):
    """The same-run table (benchmarks.md) and the README's summary, as Markdown."""
    full = ["![Shoal against hnswlib, one run](img/same-run-hnswlib.png)", "",
            "| dataset | engine / configuration | memory MB | " + " | ".join(f"QPS at {t:.2f}" for t in TARGETS)
            + " | / hnswlib at 0.95 | / hnswlib at 0.99 |",
            "|---|---|---:|" + "---:|" * len(TARGETS) + "---:|---:|"]
    readme = ["| dataset | Shoal QPS at recall 0.95 | hnswlib QPS at 0.95 | ratio | Shoal at 0.99 | hnswlib at 0.99 | ratio |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for dataset, rows in measured.items():
        hnsw = next(r for r in rows if r[3] == "hnswlib")
        h = [qps(hnsw[2], t) for t in TARGETS]
        for label, memory, pts, engine in rows:
            got = [qps(pts, t) for t in TARGETS]
            if engine == "shoal":
                ratios = " | ".join(f"{g / b:.2f}x" if g and b else "-" for g, b in zip(got[1:], h[1:]))
            else:
                ratios = " | "
            full.append(f"| {dataset} | {label} | {memory:,.0f} | " + " | ".join(fmt(q) for q in got) + f" | {ratios} |")
        best = [max((q for q in (qps(r[2], t) for r in rows if r[3] == "shoal") if q is not None), default=None)
                for t in (0.95, 0.99)]
        ratio = [f"{s / b:.2f}x" if s and b else "-" for s, b in zip(best, h[1:])]
        readme.append(f"| {dataset} | {fmt(best[0])} | {fmt(h[1])} | {ratio[0]} | {fmt(best[1])} | {fmt(h[2])} | {ratio[1]} |")
    full.append("")
    full.append("QPS read off each configuration's frontier, interpolated between the two sweep points around "
                "the target (`bench/frontier.py`); each engine's fastest pass per sweep point; one thread, one "
                "query per call. Memory: the index (Shoal: plus the full vectors it re-ranks with).")
    return "\n".join(full), "\n".join(readme)


STALE = []  # with --check: the tables that differ from what the results give


def replace_between(path, marker, text, check=False):
    """Writes ``text`` between the ``marker`` comments of ``path`` (with ``check``: only
    compares, recording a difference in STALE)."""
    s = path.read_text()
    begin, end = f"<!-- results:{marker}:begin -->", f"<!-- results:{marker}:end -->"
    if begin not in s or end not in s:
        log(f"{path.relative_to(ROOT)} has no {begin} ... {end}: table not written")
        STALE.append(f"{path.relative_to(ROOT)}: no {marker} markers")
        return
    new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{text}\n{end}", s, flags=re.S)
    if check:
        if new != s:
            STALE.append(f"{path.relative_to(ROOT)}: the {marker} table")
        return
    path.write_text(new)
    log(f"wrote the {marker} table into {path.relative_to(ROOT)}")


# ---- the 10M ingest --------------------------------------------------------------------------

def ingest_plot(res):
    """The 10M ingest: rate over time, memory against the cgroup's limit, segments."""
    plt = pyplot()
    tl = res["timeline"]
    fig, ax = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    w = [t / 60 for t, _ in tl["rate_windows"]]
    ax[0].step(w, [r / 1e3 for _, r in tl["rate_windows"]], where="post", lw=0.8, alpha=0.6,
               label="points/s, 10 s windows")
    if tl.get("rolling_minute"):
        ax[0].plot([t / 60 for t, _ in tl["rolling_minute"]], [r / 1e3 for _, r in tl["rolling_minute"]],
                   color="tab:orange", lw=2, label="points/s, last 60 s")
    ax[0].axhline(res["first_minute_rate"] / 2e3, color="grey", ls="--", lw=1, label="half the first minute's rate")
    ax[0].set_ylabel("ingest, thousand points/s")
    ax[0].set_ylim(bottom=0)
    ax[0].legend(loc="lower left", fontsize=8)
    ax[0].set_title(f"{res['n'] / 1e6:.0f}M x 128-d into shoal serve in a {res['limit_mib'] / 1024:.0f} GiB cgroup "
                    f"(fsync per batch; seals and merges in the background)", fontsize=9)
    m = tl["memory"]
    ax[1].plot([t / 60 for t, *_ in m], [x[1] / 2**20 for x in m], label="cgroup memory incl. page cache")
    if m and len(m[0]) > 3:
        ax[1].plot([t / 60 for t, *_ in m], [x[3] / 2**20 for x in m], label="process memory (anonymous)")
    ax[1].axhline(res["limit_mib"], color="red", ls="--", lw=1, label="limit")
    ax[1].set_ylabel("MiB")
    ax[1].set_xlabel("minutes")
    ax[1].set_ylim(bottom=0)
    ax2 = ax[1].twinx()
    seg_t, seg_n = [t / 60 for t, *_ in m], [x[2] or 0 for x in m]
    if res.get("settled_s") and res.get("segments"):
        # The last merge ends the run: its result is the count at the settle time.
        seg_t.append(res["settled_s"] / 60)
        seg_n.append(res["segments"])
    ax2.step(seg_t, seg_n, where="post", color="tab:green", lw=1, label="segments")
    ax2.set_ylabel("segments")
    ax2.set_ylim(bottom=0)
    h1, l1 = ax[1].get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax[1].legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    save(fig, "ingest-10m.png")


# ---- full text ---------------------------------------------------------------------------------

def text_engines(directory=RESULTS):
    """Every engine of the text benchmark in ``directory``: its result record (latency per
    query kind)."""
    rows = []
    for name in ("text-shoal.json", "text-tantivy.json", "text-node.json"):
        path = directory / name
        if path.exists():
            d = json.loads(path.read_text())
            rows.extend(d.get("engines", [d]))
    return rows


def text_plot(rows):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.45 * len(rows) * len(TEXT_KINDS) / 2))
    labels = [f"{e['engine']} ({e.get('where', 'native')})" for e in rows]
    height = 0.8 / len(TEXT_KINDS)
    for k, kind in enumerate(TEXT_KINDS):
        ys = [i + k * height for i in range(len(rows))]
        ax.barh(ys, [e["latency"][kind]["mean_us"] for e in rows], height=height, label=kind)
    ax.set_yticks([i + height for i in range(len(rows))], labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("mean latency per query, µs (log; one thread)")
    ax.set_title("Full text on GCIDE (126k entries): term, two required words, phrase", fontsize=9)
    ax.grid(True, axis="x", which="both", lw=0.3)
    ax.legend(fontsize=8)
    save(fig, "text-latency.png")


def text_table(rows):
    out = ["![Full-text latency on GCIDE](img/text-latency.png)", "",
           "| engine | where | term mean / p99 (µs) | and mean / p99 | phrase mean / p99 | all mean / p99 | relevance@10 |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for e in rows:
        lat = e["latency"]
        cell = lambda k: f"{lat[k]['mean_us']:,.1f} / {lat[k]['p99_us']:,.1f}"  # noqa: E731
        rel = e.get("relevance_top10")
        out.append(f"| {e['engine']} | {e.get('where', 'native')} | {cell('term')} | {cell('and')} | "
                   f"{cell('phrase')} | {cell('all')} | {'-' if rel is None else f'{rel:.3f}'} |")
    return "\n".join(out)


# ---- memory limit --------------------------------------------------------------------------------

def ram_plot(runs):
    """QPS against the cgroup memory limit, per code width (``{bits: [result, ...]}``)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for bits, results in sorted(runs.items()):
        served = sorted((r for r in results if r.get("served")), key=lambda r: r["limit_mib"])
        if not served:
            continue
        xs = [r["limit_mib"] for r in served]
        line, = ax.plot(xs, [r["qps"] for r in served], marker="o", label=f"{bits}-bit codes")
        for r in served:
            ax.annotate(f"{r['recall_at_10']:.2f}", (r["limit_mib"], r["qps"]), textcoords="offset points",
                        xytext=(0, 6), ha="center", fontsize=7, color=line.get_color())
        smallest = next((r for r in results if "smallest_serving_mib" in r), None)
        if smallest:
            ax.axvline(smallest["smallest_serving_mib"], color=line.get_color(), ls=":", lw=1,
                       label=f"{bits}-bit: smallest limit serving every query ({smallest['smallest_serving_mib']} MiB)")
    ax.set_xscale("log", base=2)
    from matplotlib.ticker import ScalarFormatter

    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlabel("memory limit of the server's cgroup, MiB (log; page cache dropped before each)")
    ax.set_ylabel("queries per second (8 clients)")
    ax.set_ylim(bottom=0)
    ax.set_title("1M x 100-d served from memory-mapped files under a memory limit (labels: recall@10)", fontsize=9)
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=7)
    save(fig, "ram-qps.png")


# ---- package size ------------------------------------------------------------------------------

def package_plot(doc):
    plt = pyplot()
    changes = doc["changes"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    xs = range(len(changes))
    ax.plot(xs, [c["simd"] / 1e3 for c in changes], marker="o", label="SIMD128 build")
    ax.plot(xs, [c["scalar"] / 1e3 if c.get("scalar") else None for c in changes], marker="s", ms=3, lw=1,
            label="scalar build")
    ax.axhline(doc["budget"] / 1e3, color="red", ls="--", lw=1, label=f"budget {doc['budget'] / 1e3:.0f} KB")
    ax.set_xticks(list(xs), [c["change"] for c in changes], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("wasm, KB gzipped (gzip -9)")
    ax.set_ylim(200, doc["budget"] / 1e3 * 1.04)
    ax.set_title("The npm package's wasm module, per change", fontsize=9)
    ax.grid(True, axis="y", lw=0.3)
    ax.legend(fontsize=8, loc="lower right")
    save(fig, "package-size.png")


def check_tables():
    """The tables of docs/benchmarks.md and the README against the committed results (make test)."""
    measured = {d: rows for d in DATASETS if (rows := engines(d))}
    if measured:
        full, _ = recall_qps_tables(measured)
        replace_between(ROOT / "docs" / "benchmarks.md", "recall-qps", full, check=True)
    same = {d: rows for d in DATASETS if (rows := engines(d, SAME_RUN))}
    if same:
        full, readme = same_run_tables(same)
        replace_between(ROOT / "docs" / "benchmarks.md", "same-run", full, check=True)
        replace_between(ROOT / "README.md", "readme", readme, check=True)
    text = text_engines()
    if text:
        replace_between(ROOT / "docs" / "benchmarks.md", "text", text_table(text), check=True)
    if STALE:
        sys.exit("plots: tables differ from bench/results/ (run `make bench-plots`): " + "; ".join(STALE))
    log("the tables match bench/results/")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--collect", action="store_true", help="copy the latest results from the cache first")
    ap.add_argument("--check", action="store_true",
                    help="draw nothing: fail if a table in the docs differs from what the results give")
    args = ap.parse_args()
    if args.collect:
        collect()
    if args.check:
        check_tables()
        return
    IMG.mkdir(parents=True, exist_ok=True)
    measured = {}
    for dataset in DATASETS:
        rows = engines(dataset)
        if rows:
            recall_qps_plot(dataset, rows)
            measured[dataset] = rows
    if measured:
        full, _ = recall_qps_tables(measured)
        replace_between(ROOT / "docs" / "benchmarks.md", "recall-qps", full)
    same = {d: rows for d in DATASETS if (rows := engines(d, SAME_RUN))}
    if same:
        same_run_plot(same)
        full, readme = same_run_tables(same)
        replace_between(ROOT / "docs" / "benchmarks.md", "same-run", full)
        replace_between(ROOT / "README.md", "readme", readme)
    text = text_engines()
    if text:
        text_plot(text)
        replace_between(ROOT / "docs" / "benchmarks.md", "text", text_table(text))
    ram = {b: json.loads((RESULTS / f"ram-bits{b}.json").read_text())
           for b in range(1, 9) if (RESULTS / f"ram-bits{b}.json").exists()}
    if ram:
        ram_plot(ram)
    if (RESULTS / "large-10m.json").exists():
        ingest_plot(json.loads((RESULTS / "large-10m.json").read_text())["ingest"])
    if (RESULTS / "package-size.json").exists():
        package_plot(json.loads((RESULTS / "package-size.json").read_text()))


if __name__ == "__main__":
    main()
