// Byte ranges of remote segments kept in a `Cache` (the Cache API: browsers, Deno, service
// workers) across page loads: `openRemote(url, { persist: true })`. A page opened again reads
// from the cache what an earlier one fetched, and sends no request for it.
//
// Ranges are kept per object *version*: the object's URL (without its query) with the strong
// ETag and length pinned when it was opened — the open's own request, sent as before — so a
// replaced object's old bytes are never used, and entries of its other versions are deleted
// when it is opened. Only format-2 segments are kept: every byte of them is checked against a
// CRC the segment holds when it is used, and a search whose bytes fail is run again once
// reading past the cache (the entries it reads then replace the bad ones). The browser's
// storage quota bounds the cache (it evicts whole origins under pressure); an entry gone
// meanwhile is fetched again.

/** The cache `persist: true` opens. */
export const CACHE_NAME = "shoal-ranges-v1";

/** @param {string} base @param {string} version @param {number} start @param {number} end */
function keyOf(base, version, start, end) {
  return `${base}?shoal-version=${encodeURIComponent(version)}&shoal-range=${start}-${end}`;
}

/** The URL `url` without its query and fragment: what names the object in the cache (its
 * path must name it: a presigned URL's does; `download?id=1` and `?id=2` would be one).
 * @param {string} url */
function baseOf(url) {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

/**
 * A source (`HttpRanges`) read through a `Cache`: the same interface (`readWave`, `requests`,
 * `length`, `name`, `shortEnds`), plus `persistedBytes` (bytes answered from the cache).
 */
export class PersistedRanges {
  /** @type {[number, number][] | null} kept ranges of the pinned version, by start (loaded once) */
  #extents = null;
  /** @type {string | null} the version the extents are of */
  #version = null;
  /** Bytes answered from the cache so far. */
  persistedBytes = 0;
  /** Whether reads go past the cache (a search run again after a checksum failure). */
  bypass = false;
  /** Whether the cache is used at all (set once the segment opened as format 2). */
  enabled = false;

  /** @param {any} inner @param {Cache} cache */
  constructor(inner, cache) {
    this.inner = inner;
    this.cache = cache;
    this.base = baseOf(inner.url);
  }

  /** @returns {string} */
  get name() {
    return this.inner.name;
  }
  /** @returns {string} */
  get url() {
    return this.inner.url;
  }
  /** @returns {number} */
  get requests() {
    return this.inner.requests;
  }
  /** @returns {number[]} */
  get shortEnds() {
    return this.inner.shortEnds;
  }
  /** @returns {number | null} */
  get length() {
    return this.inner.length;
  }
  set length(v) {
    this.inner.length = v;
  }

  /** The kept ranges of `version` (other versions' entries deleted). @param {string} version */
  async #load(version) {
    if (this.#version === version && this.#extents) return this.#extents;
    /** @type {[number, number][]} */
    const found = [];
    const stale = [];
    for (const req of await this.cache.keys(this.base, { ignoreSearch: true })) {
      const q = new URL(req.url).searchParams;
      const m = /^(\d+)-(\d+)$/.exec(q.get("shoal-range") ?? "");
      if (!m) continue;
      if (q.get("shoal-version") === version) found.push([Number(m[1]), Number(m[2])]);
      else stale.push(req);
    }
    await Promise.all(stale.map((r) => this.cache.delete(r).catch(() => false)));
    // By start, the longest first; one held inside another is not used (two pages may have
    // kept ranges that overlap).
    found.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    /** @type {[number, number][]} */
    const extents = [];
    let reach = -1;
    for (const [a, b] of found) {
      if (b > reach && a < b) {
        extents.push([a, b]);
        reach = b;
      }
    }
    this.#extents = extents;
    this.#version = version;
    return extents;
  }

  /**
   * One wave: what the cache holds of each range from it, the rest from the source in one
   * wave, then kept.
   * @param {[number, number][]} ranges
   */
  async readWave(ranges) {
    const version = this.enabled ? this.inner.version() : null;
    if (version === null) return this.inner.readWave(ranges);
    let extents;
    try {
      extents = await this.#load(version);
    } catch {
      // A Cache API that fails (storage blocked, an error of the browser): the network only.
      this.enabled = false;
      return this.inner.readWave(ranges);
    }
    const len = this.inner.length ?? Infinity;
    if (this.bypass) {
      // Everything from the source; what it overlaps in the cache replaced.
      const got = await this.inner.readWave(ranges);
      await Promise.all(ranges.map(([s], i) => this.#replace(version, s, got[i])));
      return got;
    }
    // The kept ranges each range overlaps, read at once.
    /** @type {Map<string, Promise<Uint8Array | null>>} kept range `a-b` → its bytes */
    const reads = new Map();
    const overlapping = (/** @type {number} */ s, /** @type {number} */ e) => extents.filter(([a, b]) => a < e && b > s);
    for (const [s, e0] of ranges) {
      for (const [a, b] of overlapping(s, Math.min(e0, len))) {
        if (!reads.has(`${a}-${b}`)) reads.set(`${a}-${b}`, this.#match(version, a, b));
      }
    }
    const held = new Map(await Promise.all([...reads].map(async ([k, p]) => /** @type {[string, Uint8Array | null]} */ ([k, await p]))));
    /** @type {[number, number][]} */
    const gaps = [];
    /** @type {(Uint8Array | number)[][]} each range's pieces: bytes, or a gap's index */
    const pieces = [];
    let fromCache = 0;
    for (const [s, e0] of ranges) {
      const e = Math.max(s, Math.min(e0, len));
      /** @type {(Uint8Array | number)[]} */
      const out = [];
      let at = s;
      for (const [a, b] of overlapping(s, e)) {
        const bytes = held.get(`${a}-${b}`);
        if (!bytes) continue;
        const from = Math.max(a, at);
        const to = Math.min(b, e);
        if (from >= to) continue;
        if (at < from) {
          out.push(gaps.length);
          gaps.push([at, from]);
        }
        out.push(bytes.subarray(from - a, to - a));
        fromCache += to - from;
        at = to;
      }
      if (at < e) {
        out.push(gaps.length);
        gaps.push([at, e]);
      }
      pieces.push(out);
    }
    const fetched = gaps.length > 0 ? await this.inner.readWave(gaps) : [];
    await Promise.all(gaps.map(([a, b], i) => (fetched[i].length === b - a ? this.#put(version, a, fetched[i]) : null)));
    this.persistedBytes += fromCache;
    return pieces.map((ps) => {
      const parts = ps.map((p) => (typeof p === "number" ? fetched[p] : p));
      if (parts.length === 1) return parts[0];
      const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
      let at = 0;
      for (const p of parts) {
        out.set(p, at);
        at += p.length;
      }
      return out;
    });
  }

  /** The kept bytes `start..end`, or null (gone, or not that long: forgotten).
   * @param {string} version @param {number} start @param {number} end */
  async #match(version, start, end) {
    const key = keyOf(this.base, version, start, end);
    try {
      const resp = await this.cache.match(key);
      const bytes = resp ? new Uint8Array(await resp.arrayBuffer()) : null;
      if (bytes && bytes.length === end - start) return bytes;
      // (Not what its key says: deleted, not only forgotten.)
      if (bytes) await this.cache.delete(key);
    } catch {
      // (A cache that fails to read is a miss.)
    }
    this.#forget(start, end);
    return null;
  }

  /** @param {number} start @param {number} end */
  #forget(start, end) {
    const i = this.#extents?.findIndex(([a, b]) => a === start && b === end) ?? -1;
    if (i >= 0) this.#extents?.splice(i, 1);
  }

  /** Keeps `bytes` at `start` (best effort: a full or refused cache is skipped).
   * @param {string} version @param {number} start @param {Uint8Array} bytes */
  async #put(version, start, bytes) {
    if (bytes.length === 0) return;
    const end = start + bytes.length;
    const extents = /** @type {[number, number][]} */ (this.#extents);
    // (Two gaps of a wave may start at one offset: the longer one is kept.)
    if (extents.some(([a, b]) => a === start && b >= end)) return;
    try {
      await this.cache.put(keyOf(this.base, version, start, end), new Response(bytes.slice()));
    } catch {
      return;
    }
    if (extents.some(([a, b]) => a === start && b >= end)) return;
    const i = extents.findIndex(([a]) => a > start);
    extents.splice(i < 0 ? extents.length : i, 0, [start, end]);
  }

  /** Keeps `bytes` at `start`, the kept ranges it overlaps deleted first.
   * @param {string} version @param {number} start @param {Uint8Array} bytes */
  async #replace(version, start, bytes) {
    const end = start + bytes.length;
    const extents = /** @type {[number, number][]} */ (this.#extents);
    const old = extents.filter(([a, b]) => a < end && b > start);
    await Promise.all(old.map(([a, b]) => this.cache.delete(keyOf(this.base, version, a, b)).catch(() => false)));
    for (const [a, b] of old) this.#forget(a, b);
    await this.#put(version, start, bytes);
  }
}

/**
 * The `Cache` of `persist` (`true`: `caches.open(CACHE_NAME)`; a `Cache` as it is), or null.
 * @param {any} persist @param {(code: string, message: string) => Error} fail
 * @returns {Promise<Cache | null>}
 */
export async function cacheOf(persist, fail) {
  if (persist === undefined || persist === false) return null;
  if (persist === true) {
    const caches = /** @type {any} */ (globalThis).caches;
    if (typeof caches?.open !== "function") throw fail("invalid_argument", "openRemote: `persist: true` needs the Cache API (`caches`), which this runtime lacks");
    // (Storage the browser refuses — blocked, a private mode — reads from the network only.)
    return caches.open(CACHE_NAME).catch(() => null);
  }
  if (typeof persist === "object" && ["match", "put", "keys", "delete"].every((m) => typeof persist[m] === "function")) return persist;
  throw fail("invalid_argument", "openRemote: `persist` must be true or a Cache");
}
