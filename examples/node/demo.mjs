// Shoal in Node: GloVe 6B 50-d (400,000 words) straight from disk into wasm memory, then the
// nearest neighbours of a few words by cosine similarity.
//
//   python3 bench/prepare_glove.py   (prepares the data; `npm run build:js` builds the package)
//   node examples/node/demo.mjs [word ...]
//
// Reads ~/.cache/shoal/glove50/vectors.npy (float32, 400000 x 50, C order) and words.txt
// (line i = word of row i), both written by bench/prepare_glove.py. Row numbers are the ids.
import { open, readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Collection, init } from "../../bindings-js/js/index.js";

const dataDir = process.env.SHOAL_GLOVE_DIR ?? join(homedir(), ".cache", "shoal", "glove50");
const vectorsPath = join(dataDir, "vectors.npy");
const wordsPath = join(dataDir, "words.txt");
const queries = process.argv.length > 2 ? process.argv.slice(2) : ["king", "france", "computer"];

if (!existsSync(vectorsPath) || !existsSync(wordsPath)) {
  console.error(`GloVe data not found in ${dataDir} (need vectors.npy and words.txt).`);
  console.error("Run `python3 bench/prepare_glove.py` from the repository root: it prepares it.");
  process.exit(1);
}

/** Parses an .npy header: { descr, fortran, shape, offset } (format versions 1, 2 and 3). */
async function npyHeader(fh) {
  const head = Buffer.alloc(12);
  await fh.read(head, 0, 12, 0);
  if (head.toString("latin1", 0, 6) !== "\x93NUMPY") throw new Error(`${vectorsPath}: not an .npy file`);
  const major = head[6];
  const [lenBytes, len] = major === 1 ? [2, head.readUInt16LE(8)] : [4, head.readUInt32LE(8)];
  const offset = 8 + lenBytes + len;
  const text = Buffer.alloc(len);
  await fh.read(text, 0, len, 8 + lenBytes);
  const dict = text.toString("latin1");
  const descr = /'descr':\s*'([^']*)'/.exec(dict)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(dict)?.[1] === "True";
  const shape = /'shape':\s*\(([^)]*)\)/
    .exec(dict)?.[1]
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  return { descr, fortran, shape, offset };
}

const t0 = performance.now();
const info = await init();
const tInit = performance.now();

const words = (await readFile(wordsPath, "utf8")).split("\n");
if (words.at(-1) === "") words.pop();
const row = new Map(queries.map((w) => [w, words.indexOf(w)]).filter(([, i]) => i >= 0));

const fh = await open(vectorsPath);
const { descr, fortran, shape, offset } = await npyHeader(fh);
if (descr !== "<f4" || fortran || shape?.length !== 2) {
  throw new Error(`${vectorsPath}: expected a C-order float32 matrix, got ${descr} ${fortran ? "F" : "C"} ${shape}`);
}
const [n, dim] = shape;
if (n !== words.length) throw new Error(`${n} vectors but ${words.length} words`);
const tRead = performance.now();

// Zero-copy insert: the file is read straight into the reserved batch in wasm memory.
const col = new Collection({ dim, metric: "cosine" });
const batch = col.reserve(n);
const dst = new Uint8Array(batch.vectors.buffer, batch.vectors.byteOffset, batch.vectors.byteLength);
for (let done = 0; done < dst.length; ) {
  const { bytesRead } = await fh.read(dst, done, dst.length - done, offset + done);
  if (bytesRead === 0) throw new Error(`${vectorsPath}: truncated`);
  done += bytesRead;
}
await fh.close();
const tLoad = performance.now();
const ids = batch.idsAsNumbers;
for (let i = 0; i < n; i++) ids[i] = i;
// Keep the raw query vectors (commit normalises the stored ones in place).
const queryVectors = new Map();
for (const w of queries) {
  const r = row.get(w);
  if (r !== undefined) queryVectors.set(w, batch.vectors.slice(r * dim, (r + 1) * dim));
}
batch.commit({ numberIds: true });
const tCommit = performance.now();

console.log(`shoal ${info.kernels}: ${col.len.toLocaleString("en-US")} words x ${dim}-d, cosine`);
console.log(
  `  init ${(tInit - t0).toFixed(0)} ms, words ${(tRead - tInit).toFixed(0)} ms, ` +
    `vectors from disk into wasm ${(tLoad - tRead).toFixed(0)} ms, commit ${(tCommit - tLoad).toFixed(0)} ms`,
);

for (const w of queries) {
  const q = queryVectors.get(w);
  if (!q) {
    console.log(`\n"${w}": not in the vocabulary`);
    continue;
  }
  const t = performance.now();
  const res = col.search({ vector: q, limit: 11 });
  const ms = performance.now() - t;
  const self = row.get(w);
  const hits = res.points.filter((p) => p.id !== self).slice(0, 10);
  console.log(`\n"${w}" (${ms.toFixed(1)} ms, ${res.stats.scanned.toLocaleString("en-US")} scanned)`);
  for (const [i, p] of hits.entries()) {
    console.log(`  ${String(i + 1).padStart(2)}. ${words[p.id].padEnd(16)} ${p.score.toFixed(4)}`);
  }
}

const tSeal = performance.now();
col.seal();
const tSealed = performance.now();
const t = performance.now();
for (const q of queryVectors.values()) col.search({ vector: q, limit: 10 });
const perQuery = (performance.now() - t) / Math.max(1, queryVectors.size);
console.log(
  `\nseal ${(tSealed - tSeal).toFixed(0)} ms; search after seal ${perQuery.toFixed(1)} ms/query ` +
    `(exact scan of ${col.len.toLocaleString("en-US")} vectors)`,
);
col.free();
