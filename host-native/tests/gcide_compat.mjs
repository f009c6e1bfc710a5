// What the JavaScript client tests share (as gcide_compat.py does for the Python ones): the
// repository root, the demo's wordllama embedder (examples/gcide/embed.js) and GCIDE definitions
// from the demo data (scripts/gcide-demo-data.sh), and the cosine of the brute-force rankings.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Embedder } from "../../examples/gcide/embed.js";

/** The repository's root folder. */
export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const cache = join(process.env.SHOAL_CACHE ?? join(homedir(), ".cache", "shoal"), "gcide-demo");

const dir = join(cache, "embed");
const table = readFileSync(join(dir, "table.bin"));
const embedder = new Embedder(
  JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8")),
  table.buffer.slice(table.byteOffset, table.byteOffset + table.byteLength),
);

/** The embedding of `text`, as an array of numbers. */
export const embed = (/** @type {string} */ text) => Array.from(embedder.embed(text));

/** The first `n` GCIDE entries of the demo data: `{ headword, pos, letters, definition, ... }`. */
export function entries(/** @type {number} */ n) {
  return readFileSync(join(cache, "payloads.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .slice(0, n)
    .map((l) => JSON.parse(l));
}

/** Cosine similarity in double precision. */
export function cosine(/** @type {number[]} */ a, /** @type {number[]} */ b) {
  let d = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return d / Math.sqrt(na * nb);
}
