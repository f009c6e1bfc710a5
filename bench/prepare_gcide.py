#!/usr/bin/env python3
"""Prepare the GCIDE dictionary collection of ``make demo``: entries, vectors, and the embedder.

The entries of the 15,000 headwords used most often in GCIDE's own definitions (about 25,000
dictionary entries: Debian ``dict-gcide``, read by ``bench/datasets.py``), each with a 256-d
vector from wordllama's ``l2_supercat`` token embeddings (PyPI ``wordllama``; offline) and the
payload fields ``headword`` (keyword), ``pos`` (keyword: noun, verb, adjective, adverb, other),
``letters`` (integer: the headword's length), ``source`` (keyword: webster-1913, wordnet,
other) and ``definition`` (text). Writes, under ``~/.cache/shoal/gcide-demo/`` (or
``$SHOAL_CACHE/gcide-demo``):

- ``vectors.npy``: n x 256 float32, row i the mean of the token vectors of entry i's text;
- ``payloads.jsonl``: line i the payload of row i; ``fields.json``: the fields' types;
- ``embed/table.bin``: the embedder's token table, quantised so a browser can fetch it
  (32,000 float32 row scales, then 32,000 x 256 int8; row t = scale[t] * int8[t]); the
  vectors above are computed from this quantised table, so a query embedded in the page
  (``examples/gcide/embed.js``) lives in the same space as the entries;
- ``embed/tokenizer.json``: the tokenizer (Llama's BPE with byte fallback) as ``vocab`` (the
  token of each id) and ``merges`` (``"a b"``, by rank);
- ``embed/check.json``: 200 texts with their token ids and vectors, for the test that
  holds the JavaScript embedder to this one.

Idempotent: does nothing when ``embed/check.json`` (written last) exists and ``params.json``
names the settings of this script; otherwise (or with ``--force``) ``check.json`` goes first,
so an interrupted run is never taken for a complete one. Usage::

    python3 bench/prepare_gcide.py [--out DIR] [--force]
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets  # noqa: E402  (bench/datasets.py: GCIDE reading, wordllama loading)

HEADWORDS = 15_000
DEFINITION_CHARS = 600
DIM = 256
POS = [(re.compile(r"^(n|noun)\.?$"), "noun"), (re.compile(r"^(v|vb|verb)\.?( ?[ti]\.)?$"), "verb"),
       (re.compile(r"^(a|adj)\.$"), "adjective"), (re.compile(r"^adv\.$"), "adverb")]
_RE_POS = re.compile(r"\\[^\\\n]{0,80}\\,?\s*(?:\([^)\n]{0,40}\),?\s*)?([a-z]{1,5}\.(?: ?[ti]\.)?)")


def log(msg):
    print(f"prepare_gcide: {msg}", file=sys.stderr, flush=True)


def part_of_speech(raw):
    m = _RE_POS.search(raw.split("\n", 1)[0])
    if m:
        for pattern, name in POS:
            if pattern.match(m.group(1)):
                return name
    return "other"


def source(raw):
    if "1913 Webster" in raw or "Webster 1913" in raw:
        return "webster-1913"
    return "wordnet" if "WordNet" in raw else "other"


_RE_BRACKETS = re.compile(r"\s*\[[^\[\]]*\]")
_RE_PRONOUNCED = re.compile(r"^(\S+) \([^()]{1,40}\)")


def definition_of(text):
    """The entry's text without its etymologies (``[F. tronc, L. truncus ...]``) and the
    pronunciation after the headword: what a reader (and the embedding) should see."""
    return _RE_PRONOUNCED.sub(r"\1", _RE_BRACKETS.sub("", text)).strip()


def clip(text, n):
    """The first ``n`` characters of ``text``, cut at a word boundary."""
    if len(text) <= n:
        return text
    cut = text.rfind(" ", 0, n)
    return text[:cut if cut > n // 2 else n] + " …"


def quantise(table):
    """Per-row symmetric int8: scale = max |x| / 127."""
    import numpy as np

    scale = (np.abs(table).max(axis=1) / 127.0).astype(np.float32)
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(table / scale[:, None]), -127, 127).astype(np.int8)
    return scale, q


def embed(tokenizer, table, texts):
    """Mean of the token rows (no special tokens), float32, as wordllama pools."""
    import numpy as np

    out = np.empty((len(texts), table.shape[1]), dtype=np.float32)
    ids = []
    for i, enc in enumerate(tokenizer.encode_batch(texts, add_special_tokens=False)):
        ids.append(enc.ids)
        if not enc.ids:
            raise SystemExit(f"text {i} has no tokens: {texts[i]!r}")
        out[i] = table[np.asarray(enc.ids)].sum(axis=0, dtype=np.float32) / np.float32(len(enc.ids))
    return out, ids


def ensure_wordllama():
    """Installs the pinned wordllama of bench/requirements-bench.txt (with numpy, tokenizers)
    if missing, and nothing else of the benchmarks' requirements."""
    import importlib.util

    if importlib.util.find_spec("wordllama") is None:
        pin = next(line.strip() for line in open(datasets.REQUIREMENTS) if line.startswith("wordllama=="))
        log(f"installing {pin}")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", pin])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=datasets.cache_root() / "gcide-demo")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    out = args.out
    params = {"headwords": HEADWORDS, "definition_chars": DEFINITION_CHARS, "dim": DIM, "version": 2}
    ready = out / "embed" / "check.json"
    try:
        same = json.loads((out / "params.json").read_text()) == params
    except (OSError, ValueError):
        same = False
    if ready.exists() and same and not args.force:
        log(f"{out} is ready")
        return
    ready.unlink(missing_ok=True)
    ensure_wordllama()
    import numpy as np

    t0 = time.perf_counter()
    entries, _ = datasets.read_gcide(with_raw=True)
    freq = collections.Counter(w for _, text, _ in entries for w in re.findall(r"[a-z]+", text.lower()))
    heads = sorted({h.lower() for h, _, _ in entries}, key=lambda h: (-freq[h], h))
    keep = set(heads[:HEADWORDS])
    entries = [e for e in entries if e[0].lower() in keep]
    log(f"{len(entries)} entries of the {HEADWORDS} headwords most used in the definitions")

    wl = datasets.load_wordllama(install=False)
    scale, q = quantise(np.asarray(wl.embedding, dtype=np.float32))
    table = q.astype(np.float32) * scale[:, None]
    tok_src = datasets.cache_root() / "wordllama" / "tokenizers" / datasets.WORDLLAMA_TOKENIZER
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tok_src))
    tokenizer.no_padding()
    tokenizer.no_truncation()

    payloads, texts = [], []
    for head, text, raw in entries:
        definition = clip(definition_of(text), DEFINITION_CHARS)
        payloads.append({"headword": head, "pos": part_of_speech(raw), "letters": len(head),
                         "source": source(raw), "definition": definition})
        texts.append(definition)
    vectors, _ = embed(tokenizer, table, texts)

    out.mkdir(parents=True, exist_ok=True)
    (out / "embed").mkdir(exist_ok=True)
    np.save(out / "vectors.npy", np.ascontiguousarray(vectors))
    with open(out / "payloads.jsonl", "w", encoding="utf-8") as f:
        for p in payloads:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    fields = {"headword": "keyword", "pos": "keyword", "letters": "integer", "source": "keyword",
              "definition": "text"}
    (out / "fields.json").write_text(json.dumps(fields))
    (out / "params.json").write_text(json.dumps(params))
    with open(out / "embed" / "table.bin", "wb") as f:
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
    spec = json.loads(tok_src.read_text(encoding="utf-8"))
    vocab = spec["model"]["vocab"]
    by_id = [None] * len(vocab)
    for token, i in vocab.items():
        by_id[i] = token
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"]["merges"]]
    (out / "embed" / "tokenizer.json").write_text(
        json.dumps({"vocab": by_id, "merges": merges}, ensure_ascii=False), encoding="utf-8")

    # The JavaScript embedder's test: headwords, definitions, and awkward strings.
    rng = np.random.default_rng(19)
    sample = [texts[i] for i in rng.choice(len(texts), 150, replace=False)]
    sample += [payloads[i]["headword"] for i in rng.choice(len(texts), 40, replace=False)]
    sample += ["a large grey animal with a trunk", "  two  spaces ", "naïve café — déjà vu", "x",
               "UPPER case and MiXeD", "numbers 1913 and 3.14", "emoji 🐟 and 中文", "tab\tand\nnewline",
               "<s> literal", "end."]
    check_vectors, check_ids = embed(tokenizer, table, sample)
    check = [{"text": t, "ids": ids, "vector": [float(x) for x in v]}
             for t, ids, v in zip(sample, check_ids, check_vectors)]
    tmp = out / "embed" / "check.json.tmp"
    tmp.write_text(json.dumps(check, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, out / "embed" / "check.json")
    log(f"wrote {out} ({len(entries)} x {DIM}) in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
