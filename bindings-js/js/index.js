// Shoal for JavaScript: vector search in WebAssembly.
//
// This file wraps the wasm-bindgen glue of one of two builds of the `shoal-js` crate:
// `pkg/simd` (SIMD128 kernels) or `pkg/scalar` (for engines without SIMD128). Both return
// bit-identical results. Everything that touches wasm memory directly (the reserve → fill →
// commit batch path) lives here; the glue does the rest.
//
// Wasm memory can grow on any call that allocates, and growth detaches every typed-array view
// on the old buffer: views are created right after the call that may grow memory and never
// kept across calls.

// The wasm-bindgen glue. Both builds export the same functions, so their glue is the same file
// (`scripts/build.sh` checks it): imported statically, it loads with this module rather than
// after `init()` is called.
import * as glueModule from "../pkg/simd/shoal_js.js";

/** Error thrown by every Shoal call; `code` is stable and machine-readable. */
export class ShoalError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {ErrorOptions} [options]
   */
  constructor(code, message, options) {
    super(message, options);
    this.name = "ShoalError";
    this.code = code;
  }
}

// A minimal module using SIMD128 (i8x16.splat, i8x16.popcnt): validates only where the
// engine supports it.
const SIMD_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253,
  15, 253, 98, 11,
]);

/** Whether this engine supports WebAssembly SIMD128. */
export function simdSupported() {
  try {
    return typeof WebAssembly === "object" && WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}

/** @type {any} the wasm-bindgen glue module of the loaded build */
let glue = null;
/** @type {any} the wasm exports (for `memory`) */
let wasmExports = null;
/** @type {{ simd: boolean, kernels: string } | null} */
let loaded = null;
/** @type {Promise<{ simd: boolean, kernels: string }> | null} */
let loading = null;

const isNode =
  typeof process === "object" && process !== null && typeof process.versions?.node === "string";

/**
 * The default location of a build's wasm file, next to its glue (computed only when needed:
 * some runtimes have no `import.meta.url`).
 * @param {boolean} simd
 */
function wasmUrl(simd) {
  return simd ? new URL("../pkg/simd/shoal_js_bg.wasm", import.meta.url) : new URL("../pkg/scalar/shoal_js_bg.wasm", import.meta.url);
}

/**
 * Loads the WebAssembly module. Picks the SIMD128 build when the engine supports it and the
 * scalar build otherwise; `{ simd: false }` forces the scalar build. Only the first call loads;
 * later calls return the same result whatever their options.
 *
 * Where the module comes from:
 * - by default, the `.wasm` file next to the glue: read from disk where `import.meta.url` is a
 *   `file:` URL (Node, Deno), fetched relative to this module otherwise (browsers, bundlers —
 *   `new URL("../pkg/…", import.meta.url)` is the pattern Vite and webpack rewrite);
 * - `{ module }` (or `{ wasm }`, the same): a compiled `WebAssembly.Module` (Cloudflare Workers
 *   and workerd, which forbid compiling bytes at run time: `import wasm from
 *   "shoal/wasm/simd.wasm"`), bytes (`ArrayBuffer`, typed array), a `URL` or URL string, a
 *   `Response` or a promise of one;
 * - `init(source)`: the same sources, given directly instead of in an options object.
 *
 * The result says which build actually runs (`kernels` is read from the loaded module).
 *
 * @param {{ simd?: boolean, module?: any, wasm?: any } | any} [opts]
 * @returns {Promise<{ simd: boolean, kernels: string }>}
 */
export function init(opts = {}) {
  if (loaded) return Promise.resolve(loaded);
  if (!loading) {
    let options;
    try {
      options = initOptions(opts);
    } catch (e) {
      return Promise.reject(e);
    }
    loading = load(options).then(
      (info) => {
        loaded = info;
        return info;
      },
      (e) => {
        loading = null;
        throw e;
      },
    );
  }
  return loading;
}

/** `init`'s argument as options: a plain object is options, anything else is a wasm source. */
function initOptions(/** @type {any} */ opts) {
  if (opts === undefined || opts === null) return {};
  const proto = typeof opts === "object" ? Object.getPrototypeOf(opts) : undefined;
  if (proto === Object.prototype || proto === null) {
    if (opts.module !== undefined && opts.wasm !== undefined && opts.module !== opts.wasm) {
      throw new ShoalError("invalid_argument", "init: give the wasm module as `module` or `wasm`, not both");
    }
    return { simd: opts.simd, wasm: opts.module ?? opts.wasm };
  }
  return { wasm: opts };
}

/** @param {{ simd?: boolean, wasm?: any }} opts */
async function load(opts) {
  const simd = opts.simd === false ? false : simdSupported();
  if (opts.simd === true && !simd) {
    throw new ShoalError("unsupported", "this engine does not support WebAssembly SIMD128");
  }
  let source = opts.wasm;
  /** @type {Promise<WebAssembly.Module> | null} */
  let compiling = null;
  if (source === undefined) {
    const file = wasmUrl(simd);
    if (isNode || file.protocol === "file:") {
      // Node and Deno: read the file (fetch does not take file: URLs in Node). A computed
      // specifier: bundlers for browsers and Workers (esbuild, wrangler) leave it alone.
      const fsModule = "node:fs/promises";
      compiling = import(/* @vite-ignore */ /* webpackIgnore: true */ fsModule)
        .then(({ readFile }) => readFile(file))
        .then((bytes) => WebAssembly.compile(bytes));
    } else {
      // Browsers: fetch it (instantiateStreaming when served as application/wasm).
      source = file;
    }
  } else if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    compiling = WebAssembly.compile(/** @type {any} */ (source));
  } else if (source instanceof WebAssembly.Module) {
    compiling = Promise.resolve(source);
  }
  // An unawaited rejection would be reported before it is awaited below.
  compiling?.catch(() => {});
  const g = glueModule;
  let ex;
  if (compiling) {
    // A compiled module is instantiated directly. The glue's async path tests `typeof
    // Response`, which in Node loads the whole fetch implementation (~15 ms of a ~20 ms
    // start); instantiating a compiled module is ~1 ms.
    const module = await compiling;
    try {
      ex = g.initSync({ module });
    } catch (e) {
      // Older Chromium refuses a synchronous instantiation of a large module on the main
      // thread (RangeError): instantiate asynchronously there.
      if (!(e instanceof RangeError)) throw e;
      ex = await g.default({ module_or_path: module });
    }
  } else {
    ex = await g.default({ module_or_path: source });
  }
  glue = g;
  wasmExports = ex;
  // The two builds share one glue: report what the loaded module is, not what was guessed
  // (a given module may be either build).
  const kernels = g.kernels_name();
  return Object.freeze({ simd: kernels === "simd128", kernels });
}

function wasmGlue() {
  if (!glue) throw new ShoalError("not_initialized", "call `await init()` before using Shoal");
  return glue;
}

/** Runs `f`, turning errors thrown by the wasm side into `ShoalError`s. */
function call(f) {
  try {
    return f();
  } catch (e) {
    if (e instanceof ShoalError) throw e;
    if (e instanceof Error && typeof (/** @type {any} */ (e).code) === "string") {
      throw new ShoalError(/** @type {any} */ (e).code, e.message, { cause: e });
    }
    throw e;
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const U64_MAX = (1n << 64n) - 1n;
/** Marks a constructor call that wraps an existing wasm collection. */
const WRAP = Symbol("wrap");

/** An id as returned to users: a number when it is safe, a BigInt otherwise. */
function userId(/** @type {bigint} */ id) {
  return id <= MAX_SAFE ? Number(id) : id;
}

function isIdArray(ids) {
  return (
    Array.isArray(ids) ||
    ids instanceof BigUint64Array ||
    ids instanceof Float64Array ||
    ids instanceof Uint32Array ||
    ids instanceof Uint16Array ||
    ids instanceof Uint8Array ||
    ids instanceof Int32Array
  );
}

/**
 * Normalises user ids: a `BigUint64Array` as is (`u64`), a list of BigInts checked and
 * converted to a `BigUint64Array`, anything else (numbers) as an array-like of numbers that
 * the wasm side checks.
 * @returns {{ big: BigUint64Array } | { numbers: ArrayLike<number> }}
 */
function normalizeIds(ids) {
  if (typeof ids === "number" || typeof ids === "bigint") ids = [ids];
  if (!isIdArray(ids)) {
    throw new ShoalError(
      "invalid_id",
      "ids must be an array of numbers or BigInts, a Uint32Array, a Float64Array or a BigUint64Array",
    );
  }
  if (ids instanceof BigUint64Array) return { big: ids };
  if (Array.isArray(ids) && ids.some((x) => typeof x === "bigint")) {
    const big = new BigUint64Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const x = ids[i];
      const v = typeof x === "bigint" ? x : Number.isSafeInteger(x) ? BigInt(x) : -1n;
      if (v < 0n || v > U64_MAX) {
        throw new ShoalError("invalid_id", `id of point ${i} is not an integer in 0..2^64`);
      }
      big[i] = v;
    }
    return { big };
  }
  return { numbers: ids };
}

/** A `Float32Array` of the given vector data, converted once if needed. */
function toFloat32(/** @type {any} */ v, /** @type {string} */ code, /** @type {string} */ what) {
  if (v instanceof Float32Array) return v;
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return Float32Array.from(/** @type {any} */ (v));
  throw new ShoalError(code, `${what} must be a Float32Array or an array of numbers`);
}

/**
 * A reserved batch: typed-array views straight into wasm memory. Fill `ids` (or
 * `idsAsNumbers`) and `vectors`, then call `commit()`. Make no other Shoal call in between:
 * one that allocates may grow wasm memory and detach these views.
 */
export class Batch {
  #commit;
  #numbers = null;

  /** @internal */
  constructor(commit, n, idsPtr, vectorsPtr, dim) {
    this.#commit = commit;
    const buffer = wasmExports.memory.buffer;
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
    const opts = Array.isArray(arg) ? { payloads: arg } : (arg ?? {});
    return this.#commit(this, opts.numberIds === true, opts.payloads);
  }
}

/**
 * A search request's JSON (without `vector`) and its vector as a Float32Array.
 * @param {any} req
 * @returns {[string, Float32Array | undefined]}
 */
function requestParts(req) {
  if (req === null || typeof req !== "object" || Array.isArray(req)) {
    throw new ShoalError("invalid_request", "invalid search request: expected an object");
  }
  const { vector, ...rest } = req;
  const v = vector === undefined || vector === null ? undefined : toFloat32(vector, "invalid_request", "vector");
  try {
    return [JSON.stringify(rest), v];
  } catch (e) {
    throw new ShoalError("invalid_request", `invalid search request: ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * The JavaScript form of a wasm `SearchOutput`, which it frees.
 * @param {any} out
 */
function results(out) {
  try {
    const ids = out.ids();
    const scores = out.scores();
    const payloadsJson = out.payloads_json();
    const payloads = payloadsJson === undefined || payloadsJson === null ? null : JSON.parse(payloadsJson);
    const points = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      points[i] = payloads
        ? { id: userId(ids[i]), score: scores[i], payload: payloads[i] }
        : { id: userId(ids[i]), score: scores[i] };
    }
    return { points, partial: out.partial(), stats: JSON.parse(out.stats_json()) };
  } finally {
    out.free();
  }
}

/**
 * The JavaScript form of a wasm `SearchOutput` of `points`, which it frees: `{ id, payload?,
 * vector? }` per point (`payload`, `vector` only when asked for).
 * @param {any} out
 * @param {number} dim
 * @param {boolean} withPayload
 * @param {boolean} withVector
 */
function records(out, dim, withPayload, withVector) {
  try {
    const ids = out.ids();
    const payloadsJson = withPayload ? out.payloads_json() : null;
    const payloads = payloadsJson === undefined || payloadsJson === null ? [] : JSON.parse(payloadsJson);
    const vectors = withVector ? out.vectors() : null;
    const points = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      /** @type {{ id: number | bigint, payload?: any, vector?: Float32Array }} */
      const p = { id: userId(ids[i]) };
      if (withPayload) p.payload = payloads[i];
      if (vectors) p.vector = vectors.slice(i * dim, (i + 1) * dim);
      points[i] = p;
    }
    return points;
  } finally {
    out.free();
  }
}

/**
 * One id as JSON text (decimal digits): a number must be an integer in 0..=2^53, a BigInt one
 * in 0..2^64 (`invalid_id` otherwise, `what` naming it).
 * @param {any} x
 * @param {string} what
 */
function idJson(x, what) {
  if (typeof x === "bigint" ? x >= 0n && x <= U64_MAX : Number.isInteger(x) && x >= 0 && x <= 2 ** 53) return String(x);
  throw new ShoalError("invalid_id", `${what} is not an integer in 0..=2^53 (use BigInt ids beyond)`);
}

/**
 * The `filter` of `count`, `scroll` and `points` as JSON text (`null` when none).
 * @param {any} filter
 */
function filterJson(filter) {
  if (filter === undefined || filter === null) return "null";
  if (typeof filter !== "object" || Array.isArray(filter)) {
    throw new ShoalError("invalid_request", "invalid search request: filter: expected an object");
  }
  try {
    return JSON.stringify(filter);
  } catch (e) {
    throw new ShoalError("invalid_request", `invalid search request: filter: ${e instanceof Error ? e.message : e}`);
  }
}

/**
 * The `withPayload` (default true) and `withVector` (default false) options of `get`,
 * `scroll` and `points`.
 * @param {any} opts
 * @returns {[boolean, boolean]}
 */
function withOptions(opts) {
  if (opts === undefined || opts === null) return [true, false];
  if (typeof opts !== "object") throw new ShoalError("invalid_argument", "options must be an object like { withVector: true }");
  return [opts.withPayload !== false, opts.withVector === true];
}

/** The largest segment `fromBytes`/`fromStream` take: wasm32 memory is 4 GiB. */
const MAX_SEGMENT_BYTES = 2 ** 32 - 2 ** 16;

/** A collection of vectors with `u64` ids. */
export class Collection {
  /** @type {any} */
  #w;
  #dim;
  /** @type {Batch | null} the batch reserved last and not committed yet */
  #pending = null;

  /**
   * `fields` declares payload fields: `{ title: "text", tag: "keyword", year: "integer" }`
   * (types `keyword`, `integer`, `float`, `bool`, `text`, and `text_en`: full text searched by
   * English stems, so `runs` finds `running`); without it points carry no payload.
   * @param {{ dim: number, metric?: "l2" | "dot" | "cosine", fields?: Record<string, FieldType> }} config
   */
  constructor(config) {
    const g = wasmGlue();
    if (config && config[WRAP]) {
      this.#w = config[WRAP];
    } else {
      const { dim, metric = "l2", fields } = config ?? {};
      if (!Number.isInteger(dim) || dim < 1 || dim > 65536) {
        throw new ShoalError("invalid_config", "invalid collection config: dim must be an integer in 1..=65536");
      }
      if (typeof metric !== "string") {
        throw new ShoalError("invalid_config", 'invalid collection config: metric must be "l2", "dot" or "cosine"');
      }
      let fieldsJson;
      if (fields !== undefined && fields !== null) {
        if (typeof fields !== "object" || Array.isArray(fields)) {
          throw new ShoalError("invalid_config", 'invalid collection config: fields must be an object like { tag: "keyword" }');
        }
        fieldsJson = JSON.stringify(fields);
      }
      this.#w = call(() => new g.WasmCollection(dim, metric, fieldsJson));
    }
    this.#dim = this.#w.dim();
  }

  #get() {
    if (!this.#w) throw new ShoalError("freed", "this collection was freed");
    return this.#w;
  }

  /** Number of live points. */
  get len() {
    return this.#get().len();
  }

  /** Vector dimension. */
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
    const w = this.#get();
    if (!Number.isSafeInteger(n) || n < 0) {
      throw new ShoalError("invalid_argument", "reserve(n): n must be a non-negative integer");
    }
    // wasm32 memory is at most 4 GiB: refuse what can never fit instead of aborting.
    if (n * (this.#dim * 4 + 8) >= 2 ** 32) {
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

  #commit(/** @type {Batch} */ batch, /** @type {boolean} */ numberIds, /** @type {any} */ payloads) {
    const w = this.#get();
    if (this.#pending !== batch) {
      throw new ShoalError("no_pending_batch", "this batch was already committed or replaced by a later reserve()");
    }
    this.#pending = null;
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
    if (batch.length > 0 && batch.vectors.buffer !== wasmExports.memory.buffer) {
      // Memory grew while the batch was being filled: writes after that went nowhere.
      call(() => w.reserve(0));
      throw new ShoalError(
        "detached_batch",
        "wasm memory grew while the batch was being filled (another Shoal call allocated); " +
          "reserve again and make no other Shoal call before commit()",
      );
    }
    return call(() => w.commit(numberIds, payloadsJson));
  }

  /**
   * Inserts (or replaces) points with one bulk copy of the ids and one of the vectors.
   * All input is checked before anything changes. Returns the number of points inserted.
   * `payloads`: optional, one payload object (or `null`) per point.
   * @param {{ ids: any, vectors: Float32Array | ArrayLike<number>, payloads?: ReadonlyArray<Record<string, any> | null> }} points
   */
  insert({ ids, vectors, payloads } = /** @type {any} */ ({})) {
    this.#get();
    const norm = normalizeIds(ids);
    const n = "big" in norm ? norm.big.length : norm.numbers.length;
    const vec = toFloat32(vectors, "length_mismatch", "vectors");
    if (vec.length !== n * this.#dim) {
      throw new ShoalError(
        "length_mismatch",
        `${n} ids need ${n * this.#dim} floats at dimension ${this.#dim}, got ${vec.length}`,
      );
    }
    const batch = this.reserve(n);
    batch.vectors.set(vec);
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
   * @param {{ withPayload?: boolean, withVector?: boolean }} [opts]
   */
  get(ids, opts) {
    const w = this.#get();
    const norm = normalizeIds(ids);
    const list = "big" in norm ? norm.big : norm.numbers;
    const json = new Array(list.length);
    for (let i = 0; i < list.length; i++) json[i] = idJson(list[i], `id of point ${i}`);
    const [withPayload, withVector] = withOptions(opts);
    return this.#points(w, `{"ids":[${json.join(",")}]`, withPayload, withVector);
  }

  /** One call of the wasm `points` export: `head` is the request JSON without its closing brace. */
  #points(/** @type {any} */ w, /** @type {string} */ head, /** @type {boolean} */ withPayload, /** @type {boolean} */ withVector) {
    const json = `${head},"payload":${withPayload},"vector":${withVector}}`;
    return records(call(() => w.points(json)), this.#dim, withPayload, withVector);
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
   * @param {{ filter?: Record<string, any> | null, limit?: number, after?: number | bigint | null, withPayload?: boolean, withVector?: boolean }} [opts]
   * @returns {{ points: Array<{ id: number | bigint, payload?: Record<string, any>, vector?: Float32Array }>, next: number | bigint | null }}
   */
  scroll(opts = {}) {
    const w = this.#get();
    const { filter, limit = 100, after } = opts ?? {};
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new ShoalError("invalid_argument", "scroll: limit must be a positive integer");
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
   * @param {{ filter?: Record<string, any> | null, limit?: number, withPayload?: boolean, withVector?: boolean }} [opts]
   * @returns {AsyncGenerator<{ id: number | bigint, payload?: Record<string, any>, vector?: Float32Array }, void, undefined>}
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
      ids = out.ids();
    } finally {
      out.free();
    }
    for (let at = 0; at < ids.length; at += limit) {
      const page = Array.from(ids.subarray(at, at + limit), String).join(",");
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
   * `{ index: "ivf-rabitq", partitions?, seed?, bits?, codes_only? }` builds an IVF + RaBitQ
   * index (bits: 1) and `{ index: "flat" }` drops it. `codes_only: true` (with bits 2..=8)
   * drops the full vectors: a far smaller, read-only collection ranked by the codes' estimates.
   * @param {{ index?: "flat" | "ivf-rabitq", partitions?: number, seed?: number, bits?: number, codes_only?: boolean }} [opts]
   */
  seal(opts) {
    const w = this.#get();
    if (opts === undefined || opts === null) {
      w.seal();
      return;
    }
    if (typeof opts !== "object") {
      throw new ShoalError("invalid_request", "seal(opts): opts must be an object like { index: \"ivf-rabitq\" }");
    }
    // Parsed and checked by the same Rust code as the native host's seal options.
    call(() => w.seal_with(JSON.stringify(opts)));
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
   * --vectors-out FILE`, or sealed with `codes_only`) re-ranked exactly with the full vectors
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
      rest = call(() => this.#get().rerank_rows(json, v, last)).filter((r) => !seen.has(r));
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
      const names = opener.files();
      const segments = names.filter((n) => n.endsWith(".shoal"));
      for (const name of names) {
        const bytes = get(name);
        if (!(bytes instanceof Uint8Array)) throw new ShoalError("bad_set", `segment set: ${name}: file not given`);
        if (segments.includes(name)) {
          const buf = new g.SegmentBuffer(bytes.length);
          new Uint8Array(wasmExports.memory.buffer, buf.ptr(), bytes.length).set(bytes);
          opener.add_segment(name, buf);
        } else {
          opener.add_live(name, bytes);
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
    const buf = new g.SegmentBuffer(u8.length);
    new Uint8Array(wasmExports.memory.buffer, buf.ptr(), u8.length).set(u8);
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
    // wasm32 addresses 4 GiB: a larger length would wrap in the glue's usize.
    if (!Number.isSafeInteger(length) || length < 0 || length > MAX_SEGMENT_BYTES) {
      throw new ShoalError("invalid_argument", `fromStream(source, length): length must be the segment's byte count, at most ${MAX_SEGMENT_BYTES}`);
    }
    const buf = new g.SegmentBuffer(length);
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
        new Uint8Array(wasmExports.memory.buffer, ptr + at, u8.length).set(u8);
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
 * Bytes of wasm linear memory reserved by the engine (it grows and never shrinks; all
 * collections of this instance share it). 0 before `init()`.
 */
export function wasmMemoryBytes() {
  return wasmExports ? wasmExports.memory.buffer.byteLength : 0;
}

// ---- persistence in browsers: OPFS and IndexedDB -----------------------------------------
// A collection persists as its segment file (`toBytes()`): the same bytes as natively, so a
// segment saved here opens in the native host, and one built by `shoal build` opens here.

/**
 * Saves the collection's segment (sealing first) to the origin private file system as `name`.
 * @param {Collection} col
 * @param {string} name
 */
export async function saveToOPFS(col, name) {
  const root = await opfsRoot();
  const handle = await root.getFileHandle(name, { create: true });
  const w = await handle.createWritable();
  try {
    await w.write(col.toBytes());
  } finally {
    await w.close();
  }
}

/**
 * Opens a segment saved with {@link saveToOPFS} (or any segment file put there).
 * @param {string} name
 */
export async function openFromOPFS(name) {
  const root = await opfsRoot();
  let handle;
  try {
    handle = await root.getFileHandle(name);
  } catch (e) {
    throw new ShoalError("not_found", `no OPFS file named ${JSON.stringify(name)}`, { cause: e });
  }
  const file = await handle.getFile();
  return Collection.fromBytes(new Uint8Array(await file.arrayBuffer()));
}

async function opfsRoot() {
  const storage = /** @type {any} */ (globalThis.navigator)?.storage;
  if (!storage?.getDirectory) throw new ShoalError("unsupported", "this runtime has no origin private file system");
  return storage.getDirectory();
}

/**
 * Saves the collection's segment (sealing first) in IndexedDB under `key`
 * (database `opts.db`, default "shoal"; object store `opts.store`, default "segments").
 * @param {Collection} col
 * @param {string} key
 * @param {{ db?: string, store?: string }} [opts]
 */
export async function saveToIndexedDB(col, key, opts = {}) {
  const bytes = col.toBytes();
  await idbRequest(opts, "readwrite", (s) => s.put(bytes, key));
}

/**
 * Opens a segment saved with {@link saveToIndexedDB}.
 * @param {string} key
 * @param {{ db?: string, store?: string }} [opts]
 */
export async function openFromIndexedDB(key, opts = {}) {
  const bytes = await idbRequest(opts, "readonly", (s) => s.get(key));
  if (bytes === undefined) throw new ShoalError("not_found", `no IndexedDB segment under ${JSON.stringify(key)}`);
  return Collection.fromBytes(bytes);
}

/** Runs one request on the object store, opening (and creating) the database. */
function idbRequest({ db = "shoal", store = "segments" }, mode, make) {
  const idb = /** @type {any} */ (globalThis).indexedDB;
  if (!idb) return Promise.reject(new ShoalError("unsupported", "this runtime has no IndexedDB"));
  return new Promise((resolve, reject) => {
    const open = idb.open(db, 1);
    open.onupgradeneeded = () => open.result.createObjectStore(store);
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const conn = open.result;
      let tx, req;
      try {
        // Throws when the database exists without this store (it is created with version 1).
        tx = conn.transaction(store, mode);
        req = make(tx.objectStore(store));
      } catch (e) {
        conn.close();
        reject(e);
        return;
      }
      let value;
      req.onsuccess = () => (value = req.result);
      tx.oncomplete = () => {
        conn.close();
        resolve(value);
      };
      tx.onerror = () => {
        conn.close();
        reject(tx.error);
      };
    };
  });
}
