// Text → 256-d vector in the page, with no network after loading: wordllama's l2_supercat token
// embeddings (quantised to int8 per row by bench/prepare_gcide.py) averaged over the tokens of
// Llama's BPE tokenizer, reimplemented here. The dictionary entries' vectors were computed the
// same way from the same table, so a typed query and the entries share one space.
// Works in browsers, Node and Deno (it only needs `fetch`-like bytes and JSON).

const SPECIAL = ["<unk>", "<s>", "</s>"]; // added tokens: matched in the raw text, never merged
const SPACE = "\u2581"; // "▁": the tokenizer's normalised space
const SPECIAL_RE = new RegExp(SPECIAL.map((s) => s.replace(/[<>/]/g, (c) => `\\${c}`)).join("|"), "g");
const UTF8 = new TextEncoder();

export class Embedder {
  /**
   * @param {{ vocab: string[], merges: string[] }} tokenizer the vocabulary (token of each id)
   *   and the merges by rank, as prepare_gcide.py writes them
   * @param {ArrayBuffer} table `vocab.length` float32 row scales, then `vocab.length × dim` int8
   */
  constructor(tokenizer, table) {
    const n = tokenizer.vocab.length;
    this.dim = (table.byteLength - 4 * n) / n;
    if (!Number.isInteger(this.dim) || this.dim <= 0) throw new Error(`embed: table of ${table.byteLength} bytes does not fit ${n} tokens`);
    this.scales = new Float32Array(table, 0, n);
    this.rows = new Int8Array(table, 4 * n);
    /** @type {Map<string, number>} */
    this.ids = new Map(tokenizer.vocab.map((t, i) => [t, i]));
    /** @type {Map<string, number>} "a b" → rank */
    this.ranks = new Map(tokenizer.merges.map((m, i) => [m, i]));
    this.unk = this.ids.get("<unk>") ?? 0;
  }

  /** Loads `tokenizer.json` and `table.bin` from a base URL (ending in "/"). */
  static async load(base, fetchImpl = fetch) {
    const [tok, table] = await Promise.all([
      fetchImpl(new URL("tokenizer.json", base)).then((r) => ok(r).json()),
      fetchImpl(new URL("table.bin", base)).then((r) => ok(r).arrayBuffer()),
    ]);
    return new Embedder(tok, table);
  }

  /** Token ids of `text` (no start token), as the Hugging Face tokenizer gives them. */
  tokenize(text) {
    const out = [];
    // Special tokens split the text; every other piece is normalised and encoded on its own.
    let at = 0;
    for (const m of text.matchAll(SPECIAL_RE)) {
      this.#piece(text.slice(at, m.index), out);
      out.push(this.ids.get(m[0]) ?? this.unk);
      at = m.index + m[0].length;
    }
    this.#piece(text.slice(at), out);
    return out;
  }

  /** BPE over one piece: characters (bytes as <0xNN> when not in the vocabulary), then the
   * lowest-ranked adjacent pair merged, leftmost first, until no pair has a merge. */
  #piece(text, out) {
    if (text === "") return;
    const normalised = SPACE + text.replaceAll(" ", SPACE);
    /** @type {string[]} */
    let symbols = [];
    for (const ch of normalised) {
      if (this.ids.has(ch)) symbols.push(ch);
      else for (const b of UTF8.encode(ch)) symbols.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    }
    for (;;) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const rank = this.ranks.get(`${symbols[i]} ${symbols[i + 1]}`);
        if (rank !== undefined && rank < bestRank) {
          bestRank = rank;
          best = i;
        }
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
    }
    for (const s of symbols) out.push(this.ids.get(s) ?? this.unk);
  }

  /** The mean of the tokens' rows, or null for a text without tokens. */
  embed(text) {
    const ids = this.tokenize(text);
    if (ids.length === 0) return null;
    const sum = new Float64Array(this.dim);
    for (const id of ids) {
      const scale = this.scales[id];
      const row = this.rows.subarray(id * this.dim, (id + 1) * this.dim);
      for (let d = 0; d < this.dim; d++) sum[d] += scale * row[d];
    }
    return Float32Array.from(sum, (x) => x / ids.length);
  }
}

function ok(response) {
  if (!response.ok) throw new Error(`embed: ${response.url}: HTTP ${response.status}`);
  return response;
}
