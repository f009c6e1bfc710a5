"""What the framework tests (langchain_compat.py, llamaindex_compat.py) share: GCIDE
definitions, wordllama's embeddings of texts (the demo's model, offline) and the cosine of the
brute-force rankings they check answers against."""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import datasets  # noqa: E402  (bench/datasets.py: GCIDE and wordllama, offline)

_WL = None


def embed(texts):
    """wordllama's mean-pooled token vectors of `texts`, as lists of floats."""
    global _WL
    if _WL is None:
        _WL = datasets.load_wordllama(install=False)
    return [[float(x) for x in row] for row in _WL.embed(texts, norm=False)]


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def definitions(n, chars=300):
    """The first `n` GCIDE entries as `(headword, definition cut to chars)`."""
    return [(e[0], e[1][:chars]) for e in datasets.read_gcide()[0][:n]]
