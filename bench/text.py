#!/usr/bin/env python3
"""Full-text search on the GCIDE dictionary: Shoal (native and wasm) against tantivy,
MiniSearch, FlexSearch and Orama — issue 5's benchmark.

Corpus: one document per distinct GCIDE entry text (``datasets.read_gcide()``: headword line
and definitions, markup removed; about 126k documents). Queries (seeded, drawn from the
corpus so every query matches something), 500 of each kind:

- ``term``: one word of a random document;
- ``and``: two words of one random document, both required (``+a +b``);
- ``phrase``: two adjacent words of a random document (``"a b"``).

Words are runs of ASCII letters of 3+ characters, lowercased. Relevance: 1,000 sampled entries
whose definition (the text after the headword) has at least 4 distinct words; the query is up
to 8 of those words (any may match, BM25-ranked, the headword itself left out) and a hit is the
entry's own document in the top 10.

Steps (``make bench-text`` runs them in order)::

    python3 bench/text.py prepare          # docs.jsonl, queries.json, relevance.json
    cargo bench -p shoal-host --bench text  # Shoal native: results/text-shoal.json
    python3 bench/text.py tantivy          # tantivy (PyPI): results/text-tantivy.json
    node bench/node/text.mjs               # Shoal wasm + MiniSearch, FlexSearch, Orama
    python3 bench/text.py report

tantivy: the ``tantivy`` PyPI package (0.27), one text field with positions, tokenizer
``default`` (split on non-alphanumerics, lowercase: the closest to Shoal's analyser, which also
folds accents; no stemming on either side), BM25 as tantivy computes it, queries through its
query parser (same ``+a +b`` and ``"a b"`` syntax), ``searcher.search(query, 10)``, one thread.
Latency is measured around each call from Python (tantivy's includes the binding's overhead,
a few microseconds; reported).
"""

import argparse
import json
import os
import random
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import peers  # noqa: E402

SEED = 20261123
PER_KIND = 500
WORD = re.compile(r"[A-Za-z]{3,}")


def log(msg):
    print(f"[text {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def work_dir():
    return peers.cache_root() / "datasets" / "gcide-text"


def prepare(args):
    import datasets

    entries, _ = datasets.read_gcide()
    out = work_dir()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "docs.jsonl.tmp", "w") as f:
        for head, text in entries:
            f.write(json.dumps({"head": head, "text": text}) + "\n")
    os.replace(out / "docs.jsonl.tmp", out / "docs.jsonl")
    rng = random.Random(SEED)
    words = [[w.lower() for w in WORD.findall(t)] for _, t in entries]
    queries = []
    while len(queries) < 2 * PER_KIND:
        kind = ("term", "and")[len(queries) // PER_KIND]
        ws = words[rng.randrange(len(words))]
        if len(set(ws)) < 2:
            continue
        if kind == "term":
            q = rng.choice(ws)
        else:
            a, b = rng.sample(sorted(set(ws)), 2)
            q = f"+{a} +{b}"
        queries.append({"kind": kind, "q": q})
    # Phrases: pick adjacent words from the raw text so they are adjacent for every analyser.
    phrases = []
    while len(phrases) < PER_KIND:
        _, text = entries[rng.randrange(len(entries))]
        m = re.findall(r"(?<![A-Za-z])([A-Za-z]{3,}) ([A-Za-z]{3,})(?![A-Za-z])", text)
        if m:
            a, b = rng.choice(m)
            phrases.append({"kind": "phrase", "q": f'"{a.lower()} {b.lower()}"'})
    queries += phrases
    (out / "queries.json").write_text(json.dumps(queries))
    rel = []
    while len(rel) < 1000:
        i = rng.randrange(len(entries))
        head, text = entries[i]
        body = text[len(head):] if text.lower().startswith(head.lower()) else text
        hw = {w.lower() for w in WORD.findall(head)}
        ws = []
        for w in WORD.findall(body):
            w = w.lower()
            if w not in hw and w not in ws:
                ws.append(w)
        if len(ws) < 4:
            continue
        rel.append({"doc": i, "head": head, "q": " ".join(ws[:8])})
    (out / "relevance.json").write_text(json.dumps(rel))
    log(f"wrote {out}: {len(entries)} documents, {len(queries)} queries, {len(rel)} relevance queries")


def summarize(lat_us, kinds):
    import numpy as np

    out = {}
    lat = np.array(lat_us)
    for kind in ("term", "and", "phrase", "all"):
        sel = lat if kind == "all" else lat[[k == kind for k in kinds]]
        out[kind] = {"mean_us": float(sel.mean()), "p50_us": float(np.percentile(sel, 50)),
                     "p99_us": float(np.percentile(sel, 99)), "n": int(len(sel))}
    return out


def run_tantivy(args):
    import tantivy

    out = work_dir()
    docs = [json.loads(l) for l in open(out / "docs.jsonl")]
    queries = json.loads((out / "queries.json").read_text())
    rel = json.loads((out / "relevance.json").read_text())
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name="default", index_option="position")
    schema = sb.build()
    path = Path(args.work_dir) / "tantivy-gcide"
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    index = tantivy.Index(schema, path=str(path))
    t = time.perf_counter()
    w = index.writer(heap_size=256 << 20, num_threads=1)
    for i, d in enumerate(docs):
        w.add_document(tantivy.Document(id=i, text=d["text"]))
    w.commit()
    w.wait_merging_threads()
    build = time.perf_counter() - t
    index.reload()
    searcher = index.searcher()
    log(f"tantivy {tantivy.__version__ if hasattr(tantivy, '__version__') else ''}: {len(docs)} docs indexed in {build:.1f} s, {searcher.num_segments} segments")

    def top10(q):
        query = index.parse_query(q, ["text"])
        return [searcher.doc(a)["id"][0] for _, a in searcher.search(query, 10).hits]

    def timed(q):
        query = index.parse_query(q, ["text"])
        return searcher.search(query, 10)

    for q in queries[:50]:
        timed(q["q"])
    best = None
    for _ in range(3):
        lat = []
        for q in queries:
            a = time.perf_counter()
            timed(q["q"])
            lat.append((time.perf_counter() - a) * 1e6)
        if best is None or sum(lat) < sum(best):
            best = lat
    hits = sum(1 for r in rel if r["doc"] in top10(r["q"]))
    res = {"engine": "tantivy", "version": peers.pkg_version("tantivy"), "build_seconds": build,
           "index_bytes": sum(p.stat().st_size for p in path.rglob("*") if p.is_file()),
           "latency": summarize(best, [q["kind"] for q in queries]),
           "relevance_top10": hits / len(rel),
           "counts": [len(searcher.search(index.parse_query(q["q"], ["text"]), 10).hits) for q in queries[:20]]}
    shutil.rmtree(path, ignore_errors=True)
    write("text-tantivy.json", res)
    log(f"tantivy: mean {res['latency']['all']['mean_us']:.1f} us, p99 {res['latency']['all']['p99_us']:.1f} us, "
        f"relevance {res['relevance_top10']:.3f}")


def write(name, doc):
    p = peers.cache_root() / "results" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, indent=1))


def report(args):
    import plots

    print(plots.text_table(plots.text_engines(peers.cache_root() / "results")))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=["prepare", "tantivy", "report"])
    ap.add_argument("--work-dir", default=str(peers.cache_root() / "peers-work"))
    args = ap.parse_args()
    Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    {"prepare": prepare, "tantivy": run_tantivy, "report": report}[args.step](args)


if __name__ == "__main__":
    main()
