// Segments searched where they lie — a static host, a CDN, an object store — by fetching the
// byte ranges each query needs: `Collection.openRemote` (and `openRemote` here).
//
// The reading is planned in WebAssembly, by a module of its own (`pkg/remote-*`, the crate
// `shoal-js-remote`, loaded by the first `openRemote`): it names the ranges a step lacks, this
// file fetches them — all of one step at once, a *wave* — and hands them back, until the step
// is done. The last step is the local search over the same bytes: the results are a local
// search's, bit for bit. Every byte read is checked against a CRC the segment holds (format 2);
// bytes that fail are fetched again once, from an empty cache.
//
// Nothing a server answers becomes a result unless it is what was asked: a status other than
// 206 (or a whole-object 200 up to `wholeBodyCap`), a `Content-Range` (or multipart part)
// that does not hold the range asked, a short body, or another object (its ETag, pinned at open and sent as `If-Match`, or
// its length) is a `ShoalError` (`remote_status`, `range_unsupported`, `bad_response`,
// `object_changed`, `transport`, `no_progress`) — the codes of the native reader.

import * as remoteGlue from "../pkg/remote-simd/shoal_js_remote.js";
import { ShoalError, call } from "./errors.js";
import { initOptions, instantiate } from "./load.js";
import { requestParts, results } from "./requests.js";
import { PersistedRanges, cacheOf } from "./remote-persist.js";

/** Bytes fetched first when no `bootstrapBytes` is given: a format-2 segment's header and
 * table, and in a small segment everything. */
const OPEN_PREFIX = 256 * 1024;
/** Default budget of fetched bytes kept between searches. */
const CACHE_BYTES = 64 * 1024 * 1024;
/** The largest whole object taken when a server ignores `Range` (200 instead of 206). */
const WHOLE_BODY_CAP = 16 * 1024 * 1024;
/** Times a request failing with a 5xx status or a network error is tried again. */
const RETRIES = 2;
/** Waves after which a step still naming ranges is abandoned (it converges in two or three). */
const MAX_WAVES = 12;

/** @type {Promise<{ simd: boolean, kernels: string }> | null} */
let loading = null;

/**
 * Loads the remote module (once; later calls return the first result).
 * @param {any} opts `{ simd, module }` as in `init`
 */
function initRemote(opts) {
  if (!loading) {
    const url = (/** @type {boolean} */ simd) =>
      simd
        ? new URL("../pkg/remote-simd/shoal_js_remote_bg.wasm", import.meta.url)
        : new URL("../pkg/remote-scalar/shoal_js_remote_bg.wasm", import.meta.url);
    loading = Promise.resolve()
      .then(() => instantiate(remoteGlue, url, initOptions({ simd: opts.simd, module: opts.module }, "openRemote")))
      .then(() => {
        const kernels = remoteGlue.kernels_name();
        return Object.freeze({ simd: kernels === "simd128", kernels });
      });
    loading.catch(() => (loading = null));
  }
  return loading;
}

/**
 * @param {string} code
 * @param {string} message
 */
const fail = (code, message) => new ShoalError(code, message);

/** `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`) as `[first, last, total | null]`, or null.
 * @param {string | null} v
 * @returns {[number, number, number | null] | null} */
function parseContentRange(v) {
  const m = /^\s*bytes (\d+)-(\d+)\/(\d+|\*)\s*$/.exec(v ?? "");
  if (!m) return null;
  const [first, last] = [Number(m[1]), Number(m[2])];
  return first <= last ? [first, last, m[3] === "*" ? null : Number(m[3])] : null;
}

/** The most ranges asked in one multipart request. */
const MAX_PARTS = 64;
/** The default merge gap with multipart requests (the core's, 16 KiB, otherwise): more ranges
 * cost no requests there, only a part header each, so only small gaps are worth reading. */
const MULTIPART_MERGE_GAP = 1024;

/** Reads byte ranges of one object over HTTP(S) with `fetch`: one range per request, or with
 * `multipart`, up to 64 per request (`Range: bytes=a-b,c-d`, answered as
 * `multipart/byteranges` by nginx, Apache and most static servers; not S3). */
class HttpRanges {
  /** @type {string | null} the ETag pinned by the first answer */
  #etag = null;
  /** @type {number | null} the object's length, from the first answer */
  length = null;
  /** @type {Uint8Array | null} the whole object, when the server ignored `Range` */
  #whole = null;
  /** Requests sent. */
  requests = 0;
  /** @type {number[]} where answers shorter than asked ended, before the length was known */
  shortEnds = [];

  /**
   * @param {string} url
   * @param {{ fetch: typeof fetch, headers: Record<string, string>, wholeBodyCap: number, multipart: boolean, timeoutMs: number }} o
   */
  constructor(url, o) {
    // Messages name the object without its query (a presigned URL's signature stays out).
    this.name = url.split("?")[0];
    this.url = url;
    this.fetch = o.fetch;
    this.headers = o.headers;
    this.wholeBodyCap = o.wholeBodyCap;
    this.multipart = o.multipart;
    this.timeoutMs = o.timeoutMs;
  }

  /** One wave: the bytes of each range (fewer where the object ends), all requests at once.
   * @param {[number, number][]} ranges */
  async readWave(ranges) {
    const per = this.multipart ? MAX_PARTS : 1;
    const groups = [];
    for (let i = 0; i < ranges.length; i += per) groups.push(ranges.slice(i, i + per));
    return (await Promise.all(groups.map((g) => this.#read(g)))).flat();
  }

  /** Some ranges in one request, retried on 5xx and network errors.
   * @param {[number, number][]} rs */
  async #read(rs) {
    for (let tries = 0; ; tries++) {
      if (this.#whole) return rs.map(([s, e]) => this.#slice(s, e));
      try {
        return await this.#tryRead(rs);
      } catch (e) {
        const code = /** @type {any} */ (e)?.code;
        const retry = code === "transport" || (code === "remote_status" && /** @type {any} */ (e).status >= 500);
        if (!retry || tries >= RETRIES) throw e;
      }
      await new Promise((r) => setTimeout(r, 50 << (tries + 1)));
    }
  }

  /** The object's version as pinned (a strong ETag and the length), or null: not yet
   * opened, or nothing strong enough to keep its bytes by (`persist`). */
  version() {
    return this.#etag !== null && !this.#etag.startsWith("W/") && this.length !== null ? `${this.#etag} ${this.length}` : null;
  }

  /** @param {number} start @param {number} end */
  #slice(start, end) {
    const whole = /** @type {Uint8Array} */ (this.#whole);
    if (start > whole.length) throw fail("bad_response", `${this.name}: range at ${start} past the object's end`);
    return whole.subarray(start, Math.min(end, whole.length));
  }

  /** @param {[number, number][]} rs */
  async #tryRead(rs) {
    const asked = rs.map(([s, e]) => `${s}-${e - 1}`).join(",");
    /** @type {Record<string, string>} */
    const headers = { ...this.headers, Range: `bytes=${asked}` };
    // A weak ETag never matches `If-Match` (RFC 9110): it is compared, not sent.
    if (this.#etag && !this.#etag.startsWith("W/")) headers["If-Match"] = this.#etag;
    /** @type {Response} */
    let resp;
    this.requests++;
    const f = this.fetch;
    /** @type {RequestInit} */
    const init = { headers };
    // A request that hangs is a transport error after `timeoutMs` (retried as one).
    if (this.timeoutMs > 0 && typeof AbortSignal?.timeout === "function") init.signal = AbortSignal.timeout(this.timeoutMs);
    try {
      resp = await f(this.url, init);
    } catch (e) {
      throw new ShoalError("transport", `${this.name}: ${e instanceof Error ? e.message : e}`, { cause: e });
    }
    const refuse = (/** @type {string} */ code, /** @type {string} */ message) => {
      // (The body is not read: released.)
      resp.body?.cancel().catch(() => {});
      return fail(code, `${this.name}: ${message}`);
    };
    const status = resp.status;
    if (status === 412) throw refuse("object_changed", "If-Match failed (412): the object was replaced");
    if (status !== 206 && status !== 200) {
      const err = refuse("remote_status", `HTTP ${status} for bytes ${asked.length > 80 ? `${asked.slice(0, 80)}…` : asked}`);
      /** @type {any} */ (err).status = status;
      throw err;
    }
    const tag = resp.headers.get("etag");
    if (this.#etag !== null && tag !== null && tag !== this.#etag) throw refuse("object_changed", `ETag ${tag}, opened as ${this.#etag}`);
    const lengthHeader = resp.headers.get("content-length");
    const declared = lengthHeader === null ? null : Number(lengthHeader);
    const type = resp.headers.get("content-type") ?? "";
    const boundary = status === 206 && /^\s*multipart\/byteranges/i.test(type) ? /boundary="?([^";]+)"?/i.exec(type)?.[1] ?? null : null;
    if (status === 200 && (declared === null || declared > this.wholeBodyCap)) {
      throw refuse(
        "range_unsupported",
        `the server ignored Range and sent the whole object (${declared ?? "unknown"} bytes; at most ${this.wholeBodyCap} are taken)`,
      );
    }
    /** @type {[number, number, number | null] | null} */
    const single = status === 206 && boundary === null ? parseContentRange(resp.headers.get("content-range")) : null;
    if (status === 206 && boundary === null && !single) {
      throw refuse(
        "bad_response",
        `206 with Content-Range ${JSON.stringify(resp.headers.get("content-range"))} (a server of another origin must expose it: Access-Control-Expose-Headers: Content-Range, ETag)`,
      );
    }
    // The most bytes an answer may hold: the span asked (a server may merge ranges into one
    // part) and, for multipart, the parts' headers.
    const span = rs[rs.length - 1][1] - rs[0][0];
    const cap = status === 200 ? this.wholeBodyCap : boundary !== null ? span + 256 * rs.length + 256 : span;
    if (declared !== null && declared > cap) throw refuse("bad_response", `a body of ${declared} bytes for ${rs.length} range(s) spanning ${span}`);
    let body;
    try {
      body = new Uint8Array(await resp.arrayBuffer());
    } catch (e) {
      throw new ShoalError("transport", `${this.name}: reading the body: ${e instanceof Error ? e.message : e}`, { cause: e });
    }
    if ((declared !== null && declared !== body.length) || body.length > cap) {
      throw fail("bad_response", `${this.name}: a body of ${body.length} bytes, Content-Length ${declared}`);
    }
    // (Another answer may have pinned an ETag meanwhile.)
    if (this.#etag !== null && tag !== null && tag !== this.#etag) throw fail("object_changed", `${this.name}: ETag ${tag}, opened as ${this.#etag}`);
    /** @type {{ first: number, bytes: Uint8Array }[]} */
    let parts;
    /** @type {number | null} */
    let total;
    if (status === 200) {
      [parts, total] = [[{ first: 0, bytes: body }], body.length];
    } else if (boundary !== null) {
      [parts, total] = parseMultipart(body, boundary, this.name);
    } else {
      const [first, last, t] = /** @type {[number, number, number | null]} */ (single);
      if (body.length !== last - first + 1) throw fail("bad_response", `${this.name}: ${body.length} bytes for Content-Range ${first}-${last}`);
      [parts, total] = [[{ first, bytes: body }], t];
    }
    const known = this.length;
    if (known !== null && total !== null && known !== total) {
      throw fail("object_changed", `${this.name}: ${total} bytes, opened with ${known}`);
    }
    this.#etag ??= tag;
    this.length ??= total;
    if (status === 200) {
      // Kept: the next ranges are cut from it, not downloaded whole again.
      this.#whole = body;
      return rs.map(([s, e]) => this.#slice(s, e));
    }
    // Each range asked, cut from the part that holds it (clipped where the object ends).
    return rs.map(([s, e]) => {
      const stop = Math.min(e, total ?? Infinity);
      const p = parts.find((p) => p.first <= s && stop <= p.first + p.bytes.length && s < stop);
      if (!p) {
        const got = parts.map((p) => `${p.first}-${p.first + p.bytes.length - 1}`).join(",");
        throw fail("bad_response", `${this.name}: asked bytes ${s}-${e - 1}, got ${got}`);
      }
      return p.bytes.subarray(s - p.first, stop - p.first);
    });
  }
}

/**
 * The parts of a `multipart/byteranges` body, each exactly as long as its `Content-Range`
 * says (bytes inside a part never pass for a boundary), and the object's length.
 * @param {Uint8Array} body @param {string} boundary @param {string} name
 * @returns {[{ first: number, bytes: Uint8Array }[], number | null]}
 */
function parseMultipart(body, boundary, name) {
  const bad = (/** @type {string} */ what) => fail("bad_response", `${name}: multipart/byteranges: ${what}`);
  const enc = new TextEncoder();
  const delimiter = enc.encode(`--${boundary}`);
  const crlf2 = enc.encode("\r\n\r\n");
  const find = (/** @type {number} */ from, /** @type {Uint8Array} */ needle) => {
    outer: for (let i = from; i + needle.length <= body.length; i++) {
      for (let j = 0; j < needle.length; j++) if (body[i + j] !== needle[j]) continue outer;
      return i;
    }
    return -1;
  };
  if (boundary.length === 0) throw bad("an empty boundary");
  const parts = [];
  /** @type {number | null} */
  let total = null;
  let at = find(0, delimiter);
  if (at < 0) throw bad("no boundary");
  for (;;) {
    at += delimiter.length;
    if (body[at] === 45 && body[at + 1] === 45) break; // "--": the closing boundary
    if (body[at] !== 13 || body[at + 1] !== 10) throw bad("a boundary not followed by a line end");
    const headEnd = find(at, crlf2);
    if (headEnd < 0) throw bad("a part without headers");
    const head = new TextDecoder().decode(body.subarray(at, headEnd));
    const line = head.split("\r\n").find((l) => /^\s*content-range\s*:/i.test(l));
    const cr = line ? parseContentRange(line.slice(line.indexOf(":") + 1)) : null;
    if (!cr) throw bad("a part without a Content-Range");
    const [first, last, t] = cr;
    if (total !== null && t !== total) throw bad("parts of different objects");
    total ??= t;
    const start = headEnd + 4;
    const end = start + (last - first + 1);
    if (end > body.length) throw bad("a part shorter than its Content-Range");
    parts.push({ first, bytes: body.subarray(start, end) });
    at = find(end, delimiter);
    if (at < 0) throw bad("no closing boundary");
    for (let i = end; i < at; i++) if (body[i] !== 13 && body[i] !== 10) throw bad("bytes between a part and the next boundary");
  }
  if (parts.length === 0) throw bad("no parts");
  return [parts, total];
}

/** Reads byte ranges with a function given by the caller (an R2 binding, a file handle, …). */
class ReadRanges {
  /**
   * @param {(offset: number, length: number) => any} read
   * @param {number | null} length
   */
  constructor(read, length) {
    this.name = "read()";
    this.readFn = read;
    this.length = length;
    /** Reads made. */
    this.requests = 0;
    /** @type {number[]} where answers shorter than asked ended, before the length was known */
    this.shortEnds = [];
  }

  /** One wave: every range read at once.
   * @param {[number, number][]} ranges */
  readWave(ranges) {
    this.requests += ranges.length;
    return Promise.all(ranges.map(([s, e]) => this.read(s, e)));
  }

  /** @param {number} start @param {number} end */
  async read(start, end) {
    const stop = this.length === null ? end : Math.min(end, this.length);
    let got;
    try {
      got = await this.readFn(start, stop - start);
    } catch (e) {
      if (e instanceof ShoalError) throw e;
      throw new ShoalError("transport", `read(${start}, ${stop - start}): ${e instanceof Error ? e.message : e}`, { cause: e });
    }
    if (got instanceof ArrayBuffer) return new Uint8Array(got);
    if (got instanceof Uint8Array) return got;
    throw fail("invalid_argument", `read(${start}, ${stop - start}) must return a Uint8Array or an ArrayBuffer`);
  }
}

/**
 * What a step of opening or searching read: waves (dependent round trips), requests, bytes
 * received, retries after bytes that failed their checksum, and bytes read from the
 * `persist` cache instead.
 * @typedef {{ waves: number, requests: number, bytes: number, retries: number, persistedBytes: number }} Trip
 */

/** Where a segment's bytes come from: a URL, a `read` function, or a URL through `persist`.
 * @typedef {HttpRanges | ReadRanges | PersistedRanges} Source */

/** A Trip of nothing yet. @returns {Trip} */
const trip = () => ({ waves: 0, requests: 0, bytes: 0, retries: 0, persistedBytes: 0 });

/** A segment searched by byte ranges, opened with `Collection.openRemote`. */
export class RemoteCollection {
  /** @type {any} the reader (`one(RemoteReader)` or a RemoteSetReader; null once freed) */
  #reader;
  /** @type {Source[]} a source per segment */
  #sources;
  /** @type {Promise<any>} operations run one at a time */
  #queue = Promise.resolve();
  /** @type {any} */
  #info;

  /**
   * (Use `openRemote`.)
   * @param {any} reader @param {Source[]} sources @param {Trip} opened @param {{ simd: boolean, kernels: string }} loaded
   */
  constructor(reader, sources, opened, loaded) {
    this.#reader = reader;
    this.#sources = sources;
    this.#info = JSON.parse(reader.info());
    /** What opening read. */
    this.opened = Object.freeze(opened);
    /** Which build of the remote module runs (`simd128` or `scalar`). */
    this.kernels = loaded.kernels;
  }

  /** Vector dimension. */
  get dim() {
    return this.#info.dim;
  }
  /** Metric: "l2", "dot" or "cosine". */
  get metric() {
    return this.#info.metric;
  }
  /** Number of points. */
  get len() {
    return this.#info.rows;
  }
  /** The segment's format version (2: laid out for ranges; 1 is read section by section). */
  get version() {
    return this.#info.version;
  }
  /** The segment file's length in bytes. */
  get fileLen() {
    return this.#info.fileLen;
  }
  /** The bytes from offset 0 that open it (format 2): `bootstrapBytes` for one request. */
  get bootstrapLen() {
    return this.#info.bootstrapLen;
  }
  /** Segments read (1, or a set's number of segments). */
  get segments() {
    return this.#info.segments ?? 1;
  }
  /** Whether it keeps index codes only (results rank by their estimates). */
  get codesOnly() {
    return this.#info.codesOnly;
  }
  /** Fetched bytes held in memory. */
  get cachedBytes() {
    return this.#reader ? this.#reader.held() : 0;
  }

  /**
   * A search (the request shape of `Collection.search`): by the vector, by `text` (BM25 with
   * the set's statistics), or both fused, with `with_payload` and `filter` (no `has_id`; nested
   * payloads by their indexed paths only) — no sparse vector, prefetch, exact search or text
   * deadline. Resolves to
   * the local results, bit for bit, with
   * `io`: what this search fetched.
   * @param {Record<string, any>} req
   */
  search(req) {
    // The request is read now (a vector the caller changes next is not the one searched);
    // searches then run one at a time.
    /** @type {[string, Float32Array | undefined]} */
    let parts;
    try {
      const [json, v] = requestParts(req);
      // (A Float32Array given is used as it is: copied, as it stands now.)
      parts = [json, v?.slice()];
    } catch (e) {
      return Promise.reject(e);
    }
    const run = () => this.#search(parts[0], parts[1]);
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => {});
    return next;
  }

  /** @param {string} json @param {Float32Array | undefined} v */
  async #search(json, v) {
    const reader = this.#get();
    call(() => reader.trim());
    const io = trip();
    await driveChecked(this.#sources, () => this.#get(), () => call(() => this.#get().search(json, v)), io);
    const out = call(() => this.#get().output());
    return { ...results(out), io };
  }

  /** Frees the wasm memory it holds; later calls throw `freed`. */
  free() {
    this.#reader?.free();
    this.#reader = null;
  }

  #get() {
    if (!this.#reader) throw fail("freed", "this remote collection was freed");
    return this.#reader;
  }
}

/**
 * `drive`, once more from empty caches when bytes fail their checksum (a fault in transit
 * then costs a retry; bytes wrong at the source stay a `bad_segment` error).
 * @param {Source[]} sources
 * @param {() => any} reader
 * @param {() => Float64Array | number[]} step
 * @param {Trip} io
 */
async function driveChecked(sources, reader, step, io) {
  try {
    await drive(sources, reader, step, io);
  } catch (e) {
    // (The remote module marks checksum failures: `checksum` on the error it threw.)
    if (!(e instanceof ShoalError) || /** @type {any} */ (e).cause?.checksum !== true) throw e;
    call(() => reader().clear());
    io.retries += 1;
    // Run again past any `persist` cache (what it reads replaces what the cache held).
    const persisted = sources.filter((s) => s instanceof PersistedRanges);
    persisted.forEach((s) => (s.bypass = true));
    try {
      await drive(sources, reader, step, io);
    } finally {
      persisted.forEach((s) => (s.bypass = false));
    }
  }
}

/**
 * Runs one step function of the reader until it names nothing more to fetch. A step names
 * ranges as `[segment, start, end, …]`; each wave reads every segment's ranges from its
 * source at once.
 * @param {Source[]} sources
 * @param {() => any} reader
 * @param {() => Float64Array | number[]} step
 * @param {Trip} io
 */
async function drive(sources, reader, step, io) {
  let waves = 0;
  for (;;) {
    const flat = step();
    if (flat.length === 0) return;
    if (waves >= MAX_WAVES) throw fail("no_progress", `${sources[flat[0]].name}: still reading after ${MAX_WAVES} waves`);
    /** @type {Map<number, [number, number][]>} */
    const wave = new Map();
    for (let i = 0; i < flat.length; i += 3) {
      const list = wave.get(flat[i]) ?? [];
      list.push([flat[i + 1], flat[i + 2]]);
      wave.set(flat[i], list);
    }
    const segs = [...wave.keys()];
    const sent = segs.map((g) => sources[g].requests);
    const kept = segs.map((g) => persistedOf(sources[g]));
    const answers = await Promise.all(segs.map((g) => sources[g].readWave(/** @type {[number, number][]} */ (wave.get(g)))));
    waves++;
    io.waves++;
    const r = reader();
    segs.forEach((g, k) => {
      const source = sources[g];
      const ranges = /** @type {[number, number][]} */ (wave.get(g));
      io.requests += source.requests - sent[k];
      // (Bytes the cache answered are not bytes received.)
      const fromCache = persistedOf(source) - kept[k];
      io.persistedBytes += fromCache;
      io.bytes -= fromCache;
      for (let i = 0; i < ranges.length; i++) {
        const [s, e] = ranges[i];
        const got = answers[k][i].length;
        // Fewer bytes only where the object ends (the first read asks past a small file's end);
        // before its length is known, where they ended is checked against the header's once open.
        const ends = source.length === null ? got < e - s : s + got === source.length && source.length < e;
        if (got !== e - s && !ends) throw fail("bad_response", `${source.name}: ${got} bytes for a range of ${e - s} at ${s}`);
        if (source.length === null && got < e - s) source.shortEnds.push(s + got);
        io.bytes += got;
        call(() => r.supply(g, s, answers[k][i]));
      }
    });
  }
}

/** Bytes a source answered from a `persist` cache so far. @param {any} source */
const persistedOf = (source) => (source instanceof PersistedRanges ? source.persistedBytes : 0);

/** `[start, end, …]` as `[0, start, end, …]`: one segment's ranges in a set's shape.
 * @param {Float64Array} flat */
function segment0(flat) {
  const out = new Array((flat.length / 2) * 3);
  for (let i = 0, j = 0; i < flat.length; i += 2, j += 3) {
    out[j] = 0;
    out[j + 1] = flat[i];
    out[j + 2] = flat[i + 1];
  }
  return out;
}

/** A wasm RemoteReader (one segment) with a RemoteSetReader's methods.
 * @param {any} r */
function one(r) {
  return {
    open: () => segment0(r.open()),
    search: (/** @type {string} */ json, /** @type {Float32Array | undefined} */ v) => segment0(r.search(json, v)),
    supply: (/** @type {number} */ _g, /** @type {number} */ s, /** @type {Uint8Array} */ b) => r.supply(s, b),
    output: () => r.output(),
    trim: () => r.trim(),
    clear: () => r.clear(),
    held: () => r.held(),
    info: () => r.info(),
    set_merge_gap: (/** @type {number} */ g) => r.set_merge_gap(g),
    free: () => r.free(),
  };
}

/** Checks what the first answers of `source` said against the length its header (or the set's
 * manifest) gives: answers that ended early, or another length.
 * @param {Source} source @param {number} fileLen */
function checkLength(source, fileLen) {
  source.length ??= fileLen;
  const early = source.shortEnds.find((end) => end !== fileLen);
  if (early !== undefined) throw fail("bad_response", `${source.name}: an answer ended at ${early}, before the object's end (${fileLen})`);
  if (source.length !== fileLen) {
    throw fail("object_changed", `${source.name}: the object holds ${source.length} bytes, its header says ${fileLen}`);
  }
}

/** The largest set manifest read (bytes). */
const MANIFEST_CAP = 4 << 20;

/**
 * Opens a segment where it lies, reading only what opening needs (format 2: one request of
 * `bootstrapBytes`, or of 256 KiB then the rest of its bootstrap region).
 *
 * `source`: the segment's URL (`http:`, `https:`, or relative to the page), fetched with
 * `Range` requests (and `If-Match` once its ETag is known); or an object `{ read(offset,
 * length), size? }` whose `read` returns (a promise of) those bytes — an R2 binding's `get`
 * with a range, a file handle's read.
 *
 * @param {string | URL | { read: (offset: number, length: number) => any, size?: number }} source
 * `persist`: `true` (the Cache API's `caches.open("shoal-ranges-v1")`) or a `Cache` keeps the
 * ranges a format-2 segment's searches fetch across page loads, per object version
 * (`remote-persist.js`): a later search that needs them sends no request.
 *
 * @param {{ cacheBytes?: number, fetch?: typeof fetch, headers?: Record<string, string>,
 *   bootstrapBytes?: number, mergeGap?: number, wholeBodyCap?: number, multipartRanges?: boolean,
 *   timeoutMs?: number, simd?: boolean, module?: any, persist?: boolean | Cache }} [opts]
 * @returns {Promise<RemoteCollection>}
 */
export async function openRemote(source, opts = {}) {
  if (opts === null || typeof opts !== "object") throw fail("invalid_argument", "openRemote: options must be an object");
  const num = (/** @type {any} */ v, /** @type {number} */ def, /** @type {string} */ name, min = 0) => {
    if (v === undefined) return def;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) {
      throw fail("invalid_argument", `openRemote: \`${name}\` must be an integer of at least ${min}`);
    }
    return v;
  };
  const cacheBytes = num(opts.cacheBytes, CACHE_BYTES, "cacheBytes");
  const prefix = num(opts.bootstrapBytes, OPEN_PREFIX, "bootstrapBytes", 64);
  const mergeGap = num(opts.mergeGap, opts.multipartRanges === true ? MULTIPART_MERGE_GAP : -1, "mergeGap");
  const wholeBodyCap = num(opts.wholeBodyCap, WHOLE_BODY_CAP, "wholeBodyCap");
  const timeoutMs = num(opts.timeoutMs, 60_000, "timeoutMs");
  /** @type {HttpRanges | ReadRanges} */
  let ranges;
  if (typeof source === "string" || source instanceof URL) {
    // A fetch of the caller's is called as given (bind a method first: `b.fetch.bind(b)`).
    const f = opts.fetch ?? (typeof globalThis.fetch === "function" ? globalThis.fetch.bind(globalThis) : undefined);
    if (typeof f !== "function") throw fail("invalid_argument", "openRemote: no `fetch` in this runtime: give one");
    const base = /** @type {any} */ (globalThis).location?.href;
    let url;
    try {
      url = new URL(source, base).href;
    } catch {
      throw fail("invalid_argument", `openRemote: not a URL: ${source}`);
    }
    ranges = new HttpRanges(url, { fetch: f, headers: { ...(opts.headers ?? {}) }, wholeBodyCap, multipart: opts.multipartRanges === true, timeoutMs });
  } else if (source !== null && typeof source === "object" && typeof source.read === "function") {
    ranges = new ReadRanges(source.read.bind(source), source.size === undefined ? null : num(source.size, 0, "size"));
  } else {
    throw fail("invalid_argument", "openRemote: give a URL or an object with read(offset, length)");
  }
  const cache = await cacheOf(opts.persist, fail);
  if (cache && !(ranges instanceof HttpRanges)) throw fail("invalid_argument", "openRemote: `persist` is for a URL (a `read` function keeps what it likes)");
  const loaded = await initRemote(opts);
  if (ranges instanceof HttpRanges && new URL(ranges.url).pathname.endsWith(".json")) {
    if (opts.bootstrapBytes !== undefined) throw fail("invalid_argument", "openRemote: `bootstrapBytes` is not for a set (its manifest gives each segment's)");
    return openSet(ranges, { cacheBytes, mergeGap, loaded, cache });
  }
  const reader = one(call(() => new remoteGlue.RemoteReader(cacheBytes, prefix)));
  const src = cache ? new PersistedRanges(ranges, cache) : ranges;
  const opened = trip();
  try {
    await driveChecked([src], () => reader, () => call(() => reader.open()), opened);
    const info = JSON.parse(reader.info());
    checkLength(src, info.fileLen);
    // (Format 1 is not kept: not every byte of it is checked when used.)
    if (src instanceof PersistedRanges) src.enabled = info.version === 2;
    if (mergeGap >= 0) reader.set_merge_gap(mergeGap);
  } catch (e) {
    free(reader);
    throw e;
  }
  return new RemoteCollection(reader, [src], opened, loaded);
}

/** Frees a reader that failed to open (after a trap it cannot: the error thrown is the first).
 * @param {any} reader */
function free(reader) {
  try {
    reader.free();
  } catch {
    // (See above.)
  }
}

/**
 * Opens the set whose manifest `manifest` reads: the manifest (one request), then every
 * segment beside it at once, each from its own URL with the manifest's options.
 * @param {HttpRanges} manifest
 * @param {{ cacheBytes: number, mergeGap: number, loaded: { simd: boolean, kernels: string }, cache: Cache | null }} o
 */
async function openSet(manifest, { cacheBytes, mergeGap, loaded, cache }) {
  if (new URL(manifest.url).search !== "") {
    throw fail("invalid_argument", `openRemote: ${manifest.name}: a set is read from a manifest URL without a query (a presigned URL names one object)`);
  }
  const opened = { ...trip(), waves: 1 };
  const [bytes] = await manifest.readWave([[0, MANIFEST_CAP]]);
  opened.requests = manifest.requests;
  opened.bytes = bytes.length;
  if (bytes.length >= MANIFEST_CAP) throw fail("bad_response", `${manifest.name}: a manifest of ${MANIFEST_CAP} bytes or more`);
  if (manifest.length !== null && manifest.length !== bytes.length) {
    throw fail("bad_response", `${manifest.name}: ${bytes.length} bytes of a ${manifest.length}-byte manifest`);
  }
  const reader = call(() => new remoteGlue.RemoteSetReader(new TextDecoder().decode(bytes), cacheBytes));
  try {
    /** @type {[string, number][]} */
    const files = JSON.parse(reader.files());
    const sources = files.map(([file]) => {
      const source = new HttpRanges(new URL(file, manifest.url).href, manifest);
      // (The manifest itself is never kept: it changes when the set is published again.)
      return cache ? new PersistedRanges(source, cache) : source;
    });
    await driveChecked(sources, () => reader, () => call(() => reader.open()), opened);
    sources.forEach((source, i) => checkLength(source, files[i][1]));
    // (A set's segments are format 2.)
    sources.forEach((source) => source instanceof PersistedRanges && (source.enabled = true));
    if (mergeGap >= 0) reader.set_merge_gap(mergeGap);
    return new RemoteCollection(reader, sources, opened, loaded);
  } catch (e) {
    free(reader);
    throw e;
  }
}
