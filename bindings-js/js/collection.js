// Collections: the engine's objects in wasm memory, and the batch path that writes into it.
//
// Wasm memory can grow on any call that allocates, and growth detaches every typed-array view
// on the old buffer: views are created right after the call that may grow memory and never
// kept across calls.

import { ShoalError, call, checkNotTrapped } from "./errors.js";
import { memoryBuffer, wasmGlue } from "./load.js";
import { filterJson, records, requestParts, results, toJson, withOptions } from "./requests.js";
import { idJson, normalizeIds, toFloat32, userIds } from "./values.js";

/** @typedef {import("./index.js").FieldType} FieldType */
/** @typedef {(batch: Batch, numberIds: boolean, payloads: any) => number} CommitFn */

/** Marks a constructor call that wraps an existing wasm collection. */
const WRAP = Symbol("wrap");

/**
 * A reserved batch: typed-array views straight into wasm memory. Fill `ids` (or
 * `idsAsNumbers`) and `vectors`, then call `commit()`. Make no other Shoal call in between:
 * one that allocates may grow wasm memory and detach these views.
 */
export class Batch {
  /** @type {CommitFn} */
  #commit;
  /** @type {Float64Array | null} */
  #numbers = null;

  /**
   * @internal
   * @param {CommitFn} commit
   * @param {number} n
   * @param {number} idsPtr
   * @param {number} vectorsPtr
   * @param {number} dim
   */
  constructor(commit, n, idsPtr, vectorsPtr, dim) {
    this.#commit = commit;
    const buffer = memoryBuffer();
    /** Number of points in the batch. */
    this.length = n;
    /** The id slots as unsigned 64-bit integers. @type {BigUint64Array} */
    this.ids = new BigUint64Array(buffer, idsPtr, n);
    /** The vectors, row-major, `length * dim` floats. @type {Float32Array} */
    this.vectors = new Float32Array(buffer, vectorsPtr, n * dim);
  }

  /**
   * The same id slots seen as JavaScript numbers (write ids <= 2^53 here, then
   * `commit({ numberIds: true })`).
   * @type {Float64Array}
   */
  get idsAsNumbers() {
    if (!this.#numbers) {
      this.#numbers = new Float64Array(this.ids.buffer, this.ids.byteOffset, this.length);
    }
    return this.#numbers;
  }

  /**
   * Checks the batch and makes its points visible (replacing points with the same ids, payloads
   * included). On error nothing changes. Returns the number of points committed.
   * `commit(payloads)` or `commit({ payloads, numberIds })`: `payloads` is an optional array of
   * one payload object (or `null`) per point, checked against the collection's `fields`;
   * `numberIds`: the ids were written as numbers through `idsAsNumbers`.
   * @param {ReadonlyArray<Record<string, any> | null> | { numberIds?: boolean, payloads?: ReadonlyArray<Record<string, any> | null> }} [arg]
   */
  commit(arg = {}) {
    /** @type {{ numberIds?: boolean, payloads?: any }} */
    const opts = Array.isArray(arg) ? { payloads: arg } : /** @type {{ numberIds?: boolean, payloads?: any }} */ (arg ?? {});
    return this.#commit(this, opts.numberIds === true, opts.payloads);
  }
}

/** The largest segment `fromBytes`/`fromStream` take: one wasm32 allocation is at most
 * `isize::MAX` (2 GiB) bytes, 63 of them for alignment. */
const MAX_SEGMENT_BYTES = 2 ** 31 - 64;

/** A collection of vectors with `u64` ids. */
export class Collection {
  /** @type {any} */
  #w;
  #dim;
  /** The dense vectors' names, vector 0 first (fixed with the collection). @type {string[]} */
  #names;
  /** @type {Batch | null} the batch reserved last and not committed yet */
  #pending = null;

  /**
   * `fields` declares payload fields: `{ title: "text", tag: "keyword", year: "integer" }`
   * (types `keyword`, `integer`, `float`, `bool`, `text`, and `text_en`: full text searched by
   * English stems, so `runs` finds `running`); without it points carry no payload.
   * With `nested: true` a payload is any JSON object (stored as it is), filter keys are JSON
   * paths (`metadata.topic`, `tags[].name`) and `nested` conditions apply; `fields` then
   * declare paths (`keyword`, `integer`, `float`, `bool`).
   * `sparse` declares sparse vectors beside the dense one: `{ "text-sparse": { modifier: "idf" } }`
   * (`modifier` `"none"`, the default, or `"idf"`); points may carry them (`insert`'s `sparse`)
   * and requests search them (`{ sparse: { indices, values }, using: "text-sparse" }`).
   * `vectors` declares named dense vectors instead of `dim` and `metric` (1 to 16, each with
   * its own dimension and metric): `{ text: { dim: 384, metric: "cosine" }, image: { dim: 512,
   * metric: "dot" } }`; every point holds all of them (`insert`'s `vectors` by name), requests
   * search one by name (`{ vector, using: "text" }`) and points give them back by name
   * (`withVector: "text"`). The same as collections built by `shoal serve` with named vectors.
   * @param {{ dim?: number, metric?: "l2" | "dot" | "cosine", vectors?: Record<string, { dim: number, metric: "l2" | "dot" | "cosine" }>, fields?: Record<string, FieldType>, nested?: boolean, sparse?: Record<string, { modifier?: "none" | "idf" }> }} config
   */
  constructor(config) {
    const g = wasmGlue();
    const wrapped = /** @type {any} */ (config)?.[WRAP];
    if (wrapped) {
      this.#w = wrapped;
    } else {
      const { vectors, fields, nested = false, sparse } = config ?? {};
      const named = vectors !== undefined && vectors !== null;
      // With named vectors, `dim` and `metric` are the wasm side's placeholders, replaced.
      const { dim, metric = "l2" } = named ? { dim: 1 } : /** @type {{ dim: number, metric?: string }} */ (config ?? {});
      if (named && (config?.dim !== undefined || config?.metric !== undefined)) {
        throw new ShoalError("invalid_config", "invalid collection config: give vectors, or dim and metric, not both");
      }
      if (typeof nested !== "boolean") {
        throw new ShoalError("invalid_config", "invalid collection config: nested must be a boolean");
      }
      if (!Number.isInteger(dim) || dim < 1 || dim > 65536) {
        throw new ShoalError("invalid_config", "invalid collection config: dim must be an integer in 1..=65536");
      }
      if (typeof metric !== "string") {
        throw new ShoalError("invalid_config", 'invalid collection config: metric must be "l2", "dot" or "cosine"');
      }
      /** @type {string | undefined} */
      let fieldsJson;
      if (fields !== undefined && fields !== null) {
        if (typeof fields !== "object" || Array.isArray(fields)) {
          throw new ShoalError("invalid_config", 'invalid collection config: fields must be an object like { tag: "keyword" }');
        }
        fieldsJson = JSON.stringify(fields);
      }
      const sparseJson = sparse === undefined || sparse === null ? undefined : jsonOf(sparse, "invalid_config", "sparse");
      const vectorsJson = named ? jsonOf(vectors, "invalid_config", "vectors") : undefined;
      this.#w = call(() => new g.WasmCollection(dim, metric, fieldsJson, nested, sparseJson, vectorsJson));
    }
    this.#dim = this.#w.dim();
    this.#names = this.#w.dense_names();
  }

  #get() {
    checkNotTrapped();
    if (!this.#w) throw new ShoalError("freed", "this collection was freed");
    return this.#w;
  }

  /** Number of live points. */
  get len() {
    return this.#get().len();
  }

  /** Vector dimension (of vector 0, the first by name, in a collection of several). */
  get dim() {
    return this.#dim;
  }

  /** Metric: "l2", "dot" or "cosine". */
  get metric() {
    return this.#get().metric();
  }

  /** Kernel implementation in use: "simd128" or "scalar". */
  get kernels() {
    return this.#get().kernels();
  }

  /**
   * Reserves room for `n` points and returns views into wasm memory to fill in place.
   * A batch reserved before and not committed is dropped.
   * @param {number} n
   * @returns {Batch}
   */
  reserve(n) {
    if (this.#names.length > 1) {
      throw new ShoalError(
        "invalid_request",
        "reserve(): this collection has several dense vectors: insert() them by name ({ vectors: { name: floats } })",
      );
    }
    return this.#reserve(n, this.#dim);
  }

  /** `reserve(n)` of points whose vectors take `floats` f32 each (all dense vectors' dims). */
  #reserve(/** @type {number} */ n, /** @type {number} */ floats) {
    const w = this.#get();
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new ShoalError("invalid_argument", "reserve(n): n must be a non-negative integer");
    }
    // wasm32 memory is at most 4 GiB: refuse what can never fit instead of aborting.
    if (n * (floats * 4 + 8) >= 2 ** 32) {
      throw new ShoalError("capacity_exceeded", `a batch of ${n} points of dimension ${this.#dim} does not fit in wasm memory`);
    }
    this.#pending = null;
    call(() => w.reserve(n));
    // Pointers and views only now: reserve may have grown memory.
    const idsPtr = w.pending_ids_ptr();
    const vectorsPtr = w.pending_vectors_ptr();
    const batch = new Batch((b, numberIds, payloads) => this.#commit(b, numberIds, payloads), n, idsPtr, vectorsPtr, this.#dim);
    this.#pending = batch;
    return batch;
  }

  #commit(/** @type {Batch} */ batch, /** @type {boolean} */ numberIds, /** @type {any} */ payloads, /** @type {string | undefined} */ idsJson = undefined, filled = false) {
    const w = this.#get();
    if (this.#pending !== batch) {
      throw new ShoalError("no_pending_batch", "this batch was already committed or replaced by a later reserve()");
    }
    this.#pending = null;
    /** @type {string | undefined} */
    let payloadsJson;
    if (payloads !== undefined && payloads !== null) {
      try {
        if (!Array.isArray(payloads)) throw new Error("payloads must be an array with one object per point");
        payloadsJson = JSON.stringify(payloads);
      } catch (e) {
        call(() => w.reserve(0));
        throw new ShoalError("invalid_payload", `invalid payloads: ${e instanceof Error ? e.message : e}`);
      }
    }
    if (!filled && batch.length > 0 && batch.vectors.buffer !== memoryBuffer()) {
      // Memory grew while the batch was being filled: writes after that went nowhere.
      call(() => w.reserve(0));
      throw new ShoalError(
        "detached_batch",
        "wasm memory grew while the batch was being filled (another Shoal call allocated); " +
          "reserve again and make no other Shoal call before commit()",
      );
    }
    return call(() => w.commit(numberIds, payloadsJson, idsJson));
  }

  /**
   * Inserts (or replaces) points with one bulk copy of the ids and one of the vectors.
   * All input is checked before anything changes. Returns the number of points inserted.
   * `vectors`: the points' vectors, row-major. `payloads`: optional, one payload object (or
   * `null`) per point. `sparse`: optional, per sparse vector name one `{ indices, values }` (or
   * `null`: the point does not hold it) per point. A collection with named dense vectors
   * takes `vectors` by name, every one of them: `{ text: Float32Array, image: Float32Array }`
   * (each row-major at its own dimension).
   * @param {{ ids: any, vectors: Float32Array | ArrayLike<number> | Record<string, Float32Array | ArrayLike<number>>, payloads?: ReadonlyArray<Record<string, any> | null>, sparse?: Record<string, ReadonlyArray<{ indices: ArrayLike<number>, values: ArrayLike<number> } | null>> }} points
   */
  insert({ ids, vectors, payloads, sparse } = /** @type {any} */ ({})) {
    this.#get();
    const norm = normalizeIds(ids);
    const n = "big" in norm ? norm.big.length : "numbers" in norm ? norm.numbers.length : norm.n;
    const [first, ...rest] = this.#names;
    const byName = vectors !== null && typeof vectors === "object" && !Array.isArray(vectors) && !ArrayBuffer.isView(vectors);
    const named = /** @type {Record<string, any>} */ (byName ? vectors : {});
    const keys = Object.keys(named);
    if (byName ? keys.length !== rest.length + 1 || !keys.every((k) => k === first || rest.includes(k)) : rest.length > 0) {
      throw new ShoalError(
        "invalid_request",
        `vectors: give { name: vectors } for each dense vector of the collection (${JSON.stringify([first, ...rest])})`,
      );
    }
    const vec = toFloat32(byName ? named[first] : vectors, "length_mismatch", "vectors");
    if (vec.length !== n * this.#dim) {
      throw new ShoalError(
        "length_mismatch",
        `${n} ids need ${n * this.#dim} floats at dimension ${this.#dim}, got ${vec.length}`,
      );
    }
    const extra = rest.map((name) => toFloat32(named[name], "length_mismatch", `vectors.${name}`));
    const hasSparse = sparse !== undefined && sparse !== null;
    const staged = hasSparse || extra.length > 0;
    const idsJson = "json" in norm ? norm.json : staged ? idListJson(norm) : undefined;
    // Room for every dense vector counted up front (the extra ones are copied in when staged).
    const batch = this.#reserve(n, extra.reduce((sum, v) => sum + v.length / Math.max(n, 1), this.#dim));
    batch.vectors.set(vec);
    if (staged) {
      // After the batch is filled: staging may grow wasm memory, which detaches the batch's
      // views but not what was written through them. A bad vector drops the batch (and all
      // that was staged) as every failed commit does.
      try {
        rest.forEach((name, i) => call(() => this.#get().stage_dense(name, extra[i])));
        if (hasSparse) stageSparse(this.#get(), sparse, n);
      } catch (e) {
        call(() => this.#get().reserve(0));
        this.#pending = null;
        throw e;
      }
    }
    if ("json" in norm || idsJson !== undefined) return this.#commit(batch, false, payloads, idsJson, staged);
    if ("big" in norm) {
      batch.ids.set(norm.big);
      return batch.commit({ payloads });
    }
    batch.idsAsNumbers.set(/** @type {any} */ (norm.numbers));
    return batch.commit({ numberIds: true, payloads });
  }

  /**
   * Deletes points by id; returns how many existed. Number ids must be integers in 0..=2^53;
   * on an invalid id nothing is deleted.
   * @param {any} ids
   */
  delete(ids) {
    const w = this.#get();
    const norm = normalizeIds(ids);
    if ("json" in norm) return call(() => w.delete_json(norm.json));
    if ("big" in norm) return call(() => w.delete(norm.big));
    const f = norm.numbers instanceof Float64Array ? norm.numbers : Float64Array.from(/** @type {any} */ (norm.numbers));
    return call(() => w.delete_f64(f));
  }

  /**
   * Retrieves points by id: `{ id, payload?, vector? }` for each of `ids` that is in the
   * collection, in the order asked (ids not in it are skipped). `withPayload` (default true)
   * adds the payload (`{}` when none), `withVector` (default false) the stored vector as a
   * Float32Array (normalised for the cosine metric); a codes-only collection keeps no vectors
   * (`codes_only`). Ids as for `delete`: numbers must be integers in 0..=2^53 (`invalid_id`).
   * @param {any} ids
   * @param {{ withPayload?: boolean, withVector?: boolean | string }} [opts]
   */
  get(ids, opts) {
    const w = this.#get();
    const norm = normalizeIds(ids);
    const list = "json" in norm ? norm.json : idListJson(norm);
    const [withPayload, withVector] = withOptions(opts);
    return this.#points(w, `{"ids":${list}`, withPayload, withVector);
  }

  /** One call of the wasm `points` export: `head` is the request JSON without its closing brace. */
  #points(/** @type {any} */ w, /** @type {string} */ head, /** @type {boolean} */ withPayload, /** @type {boolean | string} */ withVector) {
    const json = `${head},"payload":${withPayload},"vector":${JSON.stringify(withVector)}}`;
    return records(call(() => w.points(json)), this.#dim, withPayload, withVector !== false);
  }

  /**
   * Number of live points passing `filter` (the filter language of `search`; all points
   * without one). A malformed filter throws `invalid_request`, as in `search`.
   * @param {Record<string, any> | null} [filter]
   */
  count(filter) {
    const w = this.#get();
    const json = `{"filter":${filterJson(filter)}}`;
    if (json === '{"filter":null}') return w.len();
    const out = call(() => w.points(json));
    try {
      return out.ids().length;
    } finally {
      out.free();
    }
  }

  /**
   * One page of the points passing `filter` (all without one), ids ascending: at most `limit`
   * (default 100) points with ids above `after` (from the first without it). `next` is the id to
   * give as `after` for the next page, `null` after the last. Each call goes over the matching
   * ids once; `points()` iterates over them all going over them once in all.
   * @param {{ filter?: Record<string, any> | null, limit?: number, after?: number | bigint | string | null, withPayload?: boolean, withVector?: boolean | string }} [opts]
   * @returns {{ points: Array<{ id: number | bigint | string, payload?: Record<string, any>, vector?: Float32Array }>, next: number | bigint | string | null }}
   */
  scroll(opts = {}) {
    const w = this.#get();
    const { filter, limit = 100, after } = opts ?? {};
    // One more than `limit` is asked for (to know whether a page follows); wasm32's usize.
    if (!Number.isSafeInteger(limit) || limit < 1 || limit >= 2 ** 32 - 1) {
      throw new ShoalError("invalid_argument", "scroll: limit must be an integer in 1..2^32 - 1");
    }
    const [withPayload, withVector] = withOptions(opts);
    const from = after === undefined || after === null ? "null" : idJson(after, "scroll: after");
    // One more than the page: whether there is a next page.
    const head = `{"filter":${filterJson(filter)},"after":${from},"limit":${limit + 1}`;
    const points = this.#points(w, head, withPayload, withVector);
    const more = points.length > limit;
    if (more) points.length = limit;
    return { points, next: more ? points[limit - 1].id : null };
  }

  /**
   * Every point passing `filter` (all without one), ids ascending, read `limit` (default 100)
   * at a time: `for await (const p of col.points({ filter }))`. The matching ids are taken when
   * the iteration starts; points deleted meanwhile are skipped. Options as for `scroll`.
   * @param {{ filter?: Record<string, any> | null, limit?: number, withPayload?: boolean, withVector?: boolean | string }} [opts]
   * @returns {AsyncGenerator<{ id: number | bigint | string, payload?: Record<string, any>, vector?: Float32Array }, void, undefined>}
   */
  async *points(opts = {}) {
    const { filter, limit = 100 } = opts ?? {};
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new ShoalError("invalid_argument", "points: limit must be a positive integer");
    }
    const [withPayload, withVector] = withOptions(opts);
    const idsJson = `{"filter":${filterJson(filter)}`;
    const out = call(() => this.#get().points(`${idsJson}}`));
    let ids;
    try {
      ids = userIds(out);
    } finally {
      out.free();
    }
    for (let at = 0; at < ids.length; at += limit) {
      const page = ids.slice(at, at + limit).map((id) => idJson(id, "id")).join(",");
      // `#get` per page: the collection may have been freed meanwhile.
      yield* this.#points(this.#get(), `{"ids":[${page}]`, withPayload, withVector);
    }
  }

  /**
   * The payload fields: `{ title: "text", tag: "keyword", ... }` (`{}` when there are none).
   * @returns {Record<string, FieldType>}
   */
  get fields() {
    return JSON.parse(call(() => this.#get().fields("{}")));
  }

  /**
   * Adds payload fields (`{ year: "integer" }`, the types of `fields` in the constructor).
   * Fields already there may be given again with their type; another type throws
   * `invalid_request`, an unknown type or a bad name `invalid_config`, and a codes-only
   * collection refuses new fields (`codes_only`). Points already in the collection have no
   * value for the new fields. Returns all the fields.
   * @param {Record<string, FieldType>} fields
   * @returns {Record<string, FieldType>}
   */
  extendSchema(fields) {
    const w = this.#get();
    if (fields === null || typeof fields !== "object" || Array.isArray(fields)) {
      throw new ShoalError("invalid_config", 'invalid collection config: fields must be an object like { tag: "keyword" }');
    }
    return JSON.parse(call(() => w.fields(JSON.stringify(fields))));
  }

  /**
   * Merges everything into one sealed segment. Without options the collection keeps its index;
   * `{ index: "ivf-rabitq", partitions?, seed?, bits?, codesOnly? }` builds an IVF + RaBitQ
   * index (bits by default 4 up to 128 dimensions, 1 above) and `{ index: "flat" }` drops it. `codesOnly: true` (with bits 2..=8)
   * drops the full vectors: a far smaller, read-only collection ranked by the codes' estimates.
   * @param {{ index?: "flat" | "ivf-rabitq", partitions?: number, seed?: number, bits?: number, codesOnly?: boolean }} [opts]
   */
  seal(opts) {
    const w = this.#get();
    if (opts === undefined || opts === null) {
      call(() => w.seal());
      return;
    }
    if (typeof opts !== "object") {
      throw new ShoalError("invalid_request", "seal(opts): opts must be an object like { index: \"ivf-rabitq\" }");
    }
    // Options are camelCase like every option of the JavaScript API; the JSON the Rust side
    // parses (and checks, as the native host's seal options) is snake_case.
    const { codesOnly, ...rest } = /** @type {Record<string, unknown>} */ (opts);
    if ("codes_only" in rest) {
      throw new ShoalError("invalid_request", "seal(opts): the option is spelled codesOnly (JavaScript options are camelCase)");
    }
    const json = JSON.stringify(codesOnly === undefined ? rest : { ...rest, codes_only: codesOnly });
    call(() => w.seal_with(json));
  }

  /**
   * Splits the collection (sealed with `{ index: "ivf-rabitq", bits: 2..8 }`; later changes
   * are sealed in first) for lazy re-ranking: `segment` is it without the vectors (open it with `fromBytes` or
   * `fromStream`), `vectors` the vectors file `searchLazy` reads (raw f32, the segment's row
   * order). The same split as `shoal build --codes-only --vectors-out`.
   * @returns {{ segment: Uint8Array, vectors: Uint8Array }}
   */
  splitVectors() {
    const w = this.#get();
    const segment = call(() => w.segment_without_vectors());
    const f = call(() => w.stored_vectors());
    return { segment, vectors: new Uint8Array(f.buffer, f.byteOffset, f.byteLength) };
  }

  /** Whether the collection keeps index codes only (read-only, no exact search, no vectors). */
  get codesOnly() {
    return this.#get().codes_only();
  }

  /** The index the next seal builds: "flat" or "ivf-rabitq". */
  get index() {
    return this.#get().index();
  }

  /**
   * Runs a search request (the JSON shape of `SearchRequest` in index.d.ts; `vector` may be a Float32Array).
   * @param {Record<string, any>} req
   */
  search(req) {
    const w = this.#get();
    const [json, v] = requestParts(req);
    return results(call(() => w.search(json, v)));
  }

  /**
   * A vector search of a codes-only collection (built with `shoal build --codes-only
   * --vectors-out FILE`, or sealed with `codesOnly`) re-ranked exactly with the full vectors
   * kept out of wasm memory: the codes pick the rows whose exact distance can decide the
   * results, `read` fetches just those rows' vectors (consecutive rows in one read; in two
   * rounds: the best-estimated first, then only the rest that can still beat them) from the
   * vectors file — raw little-endian f32, `dim` per row, in the segment's row order — and the
   * results are exact over them. `read(offset, length)` returns (a promise of) those bytes: a
   * file handle's read in Node, a `Range` fetch or an R2 `get` with a range at the edge.
   * @param {Record<string, any>} req
   * @param {(offset: number, length: number) => Promise<Uint8Array | ArrayBuffer> | Uint8Array | ArrayBuffer} read
   */
  async searchLazy(req, read) {
    const w = this.#get();
    const [json, v] = requestParts(req);
    const rowBytes = this.#dim * 4;
    /** Reads `rows` (ascending) as one Float32Array, runs of consecutive rows in one read each.
     * @param {Uint32Array} rows */
    const readRows = async (rows) => {
      const bytes = new Uint8Array(rows.length * rowBytes);
      const reads = [];
      for (let i = 0; i < rows.length; ) {
        let j = i + 1;
        while (j < rows.length && rows[j] === rows[j - 1] + 1) j++;
        const [at, offset, length] = [i * rowBytes, rows[i] * rowBytes, (j - i) * rowBytes];
        reads.push(
          Promise.resolve(read(offset, length)).then((got) => {
            const u8 = got instanceof Uint8Array ? got : new Uint8Array(got);
            if (u8.byteLength !== length) {
              throw new ShoalError("invalid_argument", `searchLazy: read(${offset}, ${length}) returned ${u8.byteLength} bytes`);
            }
            bytes.set(u8, at);
          }),
        );
        i = j;
      }
      await Promise.all(reads);
      return new Float32Array(bytes.buffer);
    };
    // `#get` again after each await: the collection may have been freed meanwhile.
    const answer = async (/** @type {Uint32Array} */ rows) => {
      const vectors = await readRows(rows);
      return results(call(() => this.#get().search_reranked(json, v, rows, vectors)));
    };
    const ascending = (/** @type {ArrayLike<number>} */ a) => Uint32Array.from(a).sort();
    // The candidates, best estimate first. Round 1 reads the best 2 x (offset + limit) and
    // answers exactly over them; round 2 reads only the rest that can still beat the last
    // result of round 1 (usually few), and answers over both.
    const candidates = call(() => w.rerank_rows(json, v, undefined));
    const limit = req.limit ?? 10;
    const first = ascending(candidates.subarray(0, 2 * ((req.offset ?? 0) + limit)));
    if (first.length === candidates.length) return answer(first);
    const round1 = await answer(first);
    let rest;
    if (round1.points.length < limit) {
      rest = candidates.subarray(first.length);
    } else {
      const last = round1.points[round1.points.length - 1].score;
      const seen = new Set(first);
      rest = call(() => this.#get().rerank_rows(json, v, last)).filter((/** @type {number} */ r) => !seen.has(r));
    }
    if (rest.length === 0) return round1;
    return answer(ascending([...first, ...rest]));
  }

  /** Full check of every checksum of the sealed segment. */
  verify() {
    const w = this.#get();
    call(() => w.verify());
  }

  /**
   * The collection as one segment file (sealing and merging every segment first): the same
   * bytes as natively. A segment that fails its checksums throws `bad_segment`.
   */
  toBytes() {
    const w = this.#get();
    return call(() => w.to_bytes());
  }

  /**
   * Seals, then returns the collection as a segment set (`docs/format.md`, "Collections as
   * segment sets"): the manifest (JSON text) and the files it names — every segment, and the
   * live-rows files not returned by an earlier call — the same bytes as natively. Store the
   * files under their names and the manifest last; `Collection.openSet` opens them again.
   * @returns {{ manifest: string, files: Map<string, Uint8Array> }}
   */
  toSet() {
    const parts = call(() => this.#get().to_set());
    /** @type {Map<string, Uint8Array>} */
    const files = new Map();
    for (let i = 1; i < parts.length; i += 2) files.set(parts[i], parts[i + 1]);
    return { manifest: parts[0], files };
  }

  /**
   * Opens a segment where it lies — a static host, a CDN, an object store — searching it by
   * byte ranges without downloading it (js/remote.js; its own wasm module, loaded by the first
   * call). Resolves to a `RemoteCollection` whose `search` is async.
   * @param {string | URL | { read: (offset: number, length: number) => any, size?: number }} source
   * @param {Record<string, any>} [opts]
   */
  static async openRemote(source, opts) {
    const { openRemote } = await import("./remote.js");
    return openRemote(source, opts);
  }

  /**
   * Opens a segment set: its manifest (JSON text) and the files it names, as a `Map` or an
   * object from name to bytes, or a function returning a file's bytes (each segment is copied
   * once into wasm memory). A missing or inconsistent file is a `ShoalError` (`bad_set`).
   * @param {string} manifest
   * @param {Map<string, Uint8Array> | Record<string, Uint8Array> | ((name: string) => Uint8Array | undefined)} files
   */
  static openSet(manifest, files) {
    const g = wasmGlue();
    const get =
      typeof files === "function"
        ? files
        : files instanceof Map
          ? (/** @type {string} */ n) => files.get(n)
          : (/** @type {string} */ n) => /** @type {Record<string, Uint8Array>} */ (files)[n];
    const opener = call(() => new g.SetOpener(manifest));
    try {
      const names = call(() => opener.files());
      const segments = names.filter((/** @type {string} */ n) => n.endsWith(".shoal"));
      for (const name of names) {
        const bytes = get(name);
        if (!(bytes instanceof Uint8Array)) throw new ShoalError("bad_set", `segment set: ${name}: file not given`);
        if (segments.includes(name)) {
          const buf = call(() => new g.SegmentBuffer(bytes.length));
          new Uint8Array(memoryBuffer(), buf.ptr(), bytes.length).set(bytes);
          call(() => opener.add_segment(name, buf));
        } else {
          call(() => opener.add_live(name, bytes));
        }
      }
    } catch (e) {
      opener.free();
      throw e;
    }
    return new Collection(/** @type {any} */ ({ [WRAP]: call(() => opener.open()) }));
  }

  /**
   * Opens segment bytes (copied once into wasm memory; the caller's bytes are not kept).
   * @param {Uint8Array | ArrayBuffer | ArrayBufferView} bytes
   */
  static fromBytes(bytes) {
    const g = wasmGlue();
    let u8;
    if (bytes instanceof Uint8Array) u8 = bytes;
    else if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
    else if (ArrayBuffer.isView(bytes)) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    else throw new ShoalError("invalid_argument", "fromBytes expects a Uint8Array, an ArrayBuffer or a typed array");
    // One copy: straight from the caller's bytes into an aligned buffer in wasm memory, which
    // the collection then uses in place.
    const buf = call(() => new g.SegmentBuffer(u8.length));
    new Uint8Array(memoryBuffer(), buf.ptr(), u8.length).set(u8);
    return new Collection(/** @type {any} */ ({ [WRAP]: call(() => buf.open()) }));
  }

  /**
   * Opens a segment of `length` bytes read from a stream (a `ReadableStream` such as a
   * `fetch` or R2 body, or any async iterable of byte chunks such as a Node file stream), each
   * chunk copied straight into wasm memory: no whole copy of the file ever sits in JavaScript
   * memory, which is what lets a large segment open inside a 128 MB isolate.
   * @param {ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>} source
   * @param {number} length
   * @returns {Promise<Collection>}
   */
  static async fromStream(source, length) {
    const g = wasmGlue();
    if (!Number.isSafeInteger(length) || length < 0 || length > MAX_SEGMENT_BYTES) {
      throw new ShoalError("invalid_argument", `fromStream(source, length): length must be the segment's byte count, at most ${MAX_SEGMENT_BYTES}`);
    }
    const buf = call(() => new g.SegmentBuffer(length));
    /** @type {ReadableStreamDefaultReader<Uint8Array> | null} */
    let reader = null;
    try {
      const ptr = buf.ptr();
      let at = 0;
      /** @param {any} chunk */
      const put = (chunk) => {
        const u8 = chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk.buffer ?? chunk, chunk.byteOffset ?? 0, chunk.byteLength);
        if (u8.length > length - at) throw new ShoalError("bad_segment", `the stream holds more than ${length} bytes`);
        // Re-read `memory.buffer` per chunk: other calls may grow (and so replace) it meanwhile.
        new Uint8Array(memoryBuffer(), ptr + at, u8.length).set(u8);
        at += u8.length;
      };
      if (typeof (/** @type {any} */ (source).getReader) === "function") {
        reader = /** @type {ReadableStream<Uint8Array>} */ (source).getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) put(r.value);
      } else {
        for await (const chunk of /** @type {AsyncIterable<Uint8Array>} */ (source)) put(chunk);
      }
      if (at !== length) throw new ShoalError("bad_segment", `the stream ended after ${at} of ${length} bytes`);
    } catch (e) {
      buf.free();
      // Release the body (a fetch or R2 stream) rather than leave it open and locked.
      reader?.cancel(e).catch(() => {});
      throw e;
    }
    return new Collection(/** @type {any} */ ({ [WRAP]: call(() => buf.open()) }));
  }

  /** Releases the wasm memory of this collection now (otherwise at garbage collection). */
  free() {
    if (this.#w) {
      this.#w.free();
      this.#w = null;
    }
  }
}

if (typeof Symbol.dispose === "symbol") {
  /** @type {any} */ (Collection.prototype)[Symbol.dispose] = Collection.prototype.free;
}

/**
 * Integer ids (`normalizeIds`' `big` or `numbers`) as a JSON list.
 * @param {any} norm
 */
function idListJson(norm) {
  const ids = "big" in norm ? norm.big : norm.numbers;
  const json = new Array(ids.length);
  for (let i = 0; i < ids.length; i++) json[i] = idJson(ids[i], `id of point ${i}`);
  return `[${json.join(",")}]`;
}

/**
 * Stages `insert`'s sparse vectors (name -> one `{ indices, values }` or `null` per point) in
 * the wasm collection as flat typed arrays: per point its pair count (`0xFFFFFFFF` for none).
 * @param {any} w
 * @param {any} sparse
 * @param {number} n
 */
function stageSparse(w, sparse, n) {
  if (typeof sparse !== "object" || Array.isArray(sparse)) {
    throw new ShoalError("invalid_request", "invalid sparse: expected an object of name -> one vector (or null) per point");
  }
  // Every list converted (and checked) before any is staged: a bad one stages nothing.
  /** @type {[string, Uint32Array, Uint32Array, Float32Array][]} */
  const columns = [];
  for (const [name, list] of Object.entries(sparse)) {
    if (!Array.isArray(list) || list.length !== n) {
      throw new ShoalError("invalid_request", `invalid sparse.${name}: expected one vector (or null) per point (${n})`);
    }
    const counts = new Uint32Array(n);
    let total = 0;
    list.forEach((v, i) => {
      const ok = v === null || (v && v.indices && v.values && v.indices.length === v.values.length);
      if (!ok) throw new ShoalError("invalid_request", `invalid sparse.${name}[${i}]: expected { indices, values } of one length, or null`);
      counts[i] = v === null ? 0xffffffff : v.indices.length;
      total += v === null ? 0 : v.indices.length;
    });
    const indices = new Uint32Array(total);
    const values = new Float32Array(total);
    let at = 0;
    for (const v of list) {
      if (v === null) continue;
      for (let k = 0; k < v.indices.length; k++, at++) {
        const i = v.indices[k];
        if (!Number.isInteger(i) || i < 0 || i > 0xffffffff) {
          throw new ShoalError("invalid_request", `invalid sparse.${name}: an index is not an integer in 0..2^32`);
        }
        indices[at] = i;
        values[at] = v.values[k];
      }
    }
    columns.push([name, counts, indices, values]);
  }
  for (const [name, counts, indices, values] of columns) call(() => w.stage_sparse(name, counts, indices, values));
}

/**
 * `value` (an object) as JSON text, or a `ShoalError` of `code` naming `what`.
 * @param {any} value
 * @param {string} code
 * @param {string} what
 */
function jsonOf(value, code, what) {
  try {
    if (typeof value !== "object" || Array.isArray(value)) throw new Error("expected an object");
    return toJson(value);
  } catch (e) {
    throw new ShoalError(code, `invalid ${what}: ${e instanceof Error ? e.message : e}`);
  }
}
