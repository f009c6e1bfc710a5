// Reading the `.npy` files of `bench/datasets.py` in Node, shared by the Node benchmarks.
import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** Reads a C-order .npy of float32 or int32 into a typed array; returns { data, shape }. */
export async function npy(path) {
  const buf = await readFile(path);
  if (buf.toString("latin1", 0, 6) !== "\x93NUMPY") throw new Error(`${path}: not an .npy file`);
  const [lenBytes, len] = buf[6] === 1 ? [2, buf.readUInt16LE(8)] : [4, buf.readUInt32LE(8)];
  const offset = 8 + lenBytes + len;
  const dict = buf.toString("latin1", 8 + lenBytes, offset);
  const descr = /'descr':\s*'([^']*)'/.exec(dict)[1];
  if (/'fortran_order':\s*True/.test(dict)) throw new Error(`${path}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(dict)[1].split(",").map((s) => s.trim()).filter(Boolean).map(Number);
  const bytes = buf.buffer.slice(buf.byteOffset + offset, buf.byteOffset + buf.length);
  const data = descr === "<f4" ? new Float32Array(bytes) : descr === "<i4" ? new Int32Array(bytes) : null;
  if (!data) throw new Error(`${path}: unsupported dtype ${descr}`);
  return { data, shape };
}

/** A dataset of `bench/datasets.py`: its meta.json, base vectors, queries and ground truth. */
export async function loadDataset(dir) {
  const meta = JSON.parse(await readFile(join(dir, "meta.json"), "utf8"));
  const base = await npy(join(dir, "base.npy"));
  const queries = await npy(join(dir, "queries.npy"));
  const gt = await npy(join(dir, "gt.npy"));
  return { meta, base, queries, gt, n: base.shape[0], dim: base.shape[1], nq: queries.shape[0], gtK: gt.shape[1] };
}
