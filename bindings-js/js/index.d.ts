// Types of the npm package `shoal`.

/** How vectors are compared. `cosine` and `dot` scores are similarities (higher is better),
 * `l2` scores are squared distances (lower is better). */
export type Metric = "l2" | "dot" | "cosine";

/** An id given to Shoal: a non-negative integer, as a number (at most 2^53) or a BigInt
 * (below 2^64), or a UUID string (36 characters with hyphens, 32 hex digits, in `{}`, or after
 * `urn:uuid:`; either case). Integers and UUIDs are different points. */
export type Id = number | bigint | string;

/** An id as Shoal returns it: a number up to `Number.MAX_SAFE_INTEGER`, a BigInt above, a
 * UUID as its canonical text (36 characters, lowercase). */
export type PointId = number | bigint | string;

/** Ids of a batch. Numbers must be integers in 0..=2^53; use a `BigUint64Array` (or BigInts)
 * beyond; UUID strings may be mixed with integers in an array. */
export type Ids = ArrayLike<number> | readonly Id[] | Uint32Array | Float64Array | BigUint64Array;

/** Stable error codes (`ShoalError.code`). */
export type ErrorCode =
  | "bad_segment"
  | "dimension_mismatch"
  | "non_finite"
  | "length_mismatch"
  | "invalid_id"
  | "invalid_config"
  | "invalid_request"
  | "unsupported"
  | "no_pending_batch"
  | "capacity_exceeded"
  | "invalid_payload"
  | "codes_only"
  | "bad_set"
  // raised by the JavaScript wrapper itself
  | "invalid_argument"
  | "detached_batch"
  | "not_initialized"
  | "freed"
  | "internal"
  | "not_found"
  // reading by ranges (Collection.openRemote)
  | "remote_status"
  | "object_changed"
  | "range_unsupported"
  | "bad_response"
  | "transport"
  | "no_progress";

/** Error thrown by every Shoal call. Nothing changed when it is thrown — except `internal`: the
 * engine trapped inside WebAssembly (a bug), and that module instance refuses every later call. */
export class ShoalError extends Error {
  constructor(code: ErrorCode | string, message: string, options?: ErrorOptions);
  readonly name: "ShoalError";
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
}

/** Where the wasm module can come from. */
export type WasmSource =
  | WebAssembly.Module
  | BufferSource
  | URL
  | string
  | Response
  | Promise<Response>;

export interface InitOptions {
  /** `false` forces the scalar build; `true` requires SIMD128 (throws without it). Default:
   * SIMD128 when the engine supports it. */
  simd?: boolean;
  /** The wasm module of the chosen build, where the runtime or a bundler provides it: a compiled
   * `WebAssembly.Module` (Cloudflare Workers / workerd: `import wasm from "shoal/wasm/simd.wasm"`),
   * bytes, a URL or a `Response`. Default: the file shipped in the package, read from disk
   * (Node, Deno) or fetched relative to the module (browsers, bundlers). */
  module?: WasmSource;
  /** The same as `module` (older name). */
  wasm?: WasmSource;
}

export interface InitResult {
  /** Whether the SIMD128 build was loaded. */
  readonly simd: boolean;
  /** The kernel implementation in use: "simd128" or "scalar". */
  readonly kernels: string;
}

/** Loads the WebAssembly module (options, or the module's source directly). Only the first call
 * loads; later calls return the same. */
export function init(opts?: InitOptions | WasmSource): Promise<InitResult>;

/** Whether this engine supports WebAssembly SIMD128. */
export function simdSupported(): boolean;

/** The type of a payload field. */
export type FieldType = "keyword" | "integer" | "float" | "bool" | "text" | "text_en";

/** A point's payload: field name -> a value, an array of values, or null. */
export type Payload = Record<string, unknown>;

/** A collection's configuration: one dense vector (`dim`, `metric`) or named ones (`vectors`). */
export type CollectionConfig = CollectionOptions &
  (
    | {
        /** Vector dimension, 1..=65536 (one dense vector, named ""). */
        dim: number;
        /** Default "l2". */
        metric?: Metric;
        vectors?: undefined;
      }
    | {
        /** Named dense vectors (1 to 16): every point holds all of them, requests search one
         * by name (`using`), `get` returns one by name (`withVector`). */
        vectors: Record<string, { dim: number; metric: Metric }>;
        dim?: undefined;
        metric?: undefined;
      }
  );

/** What a collection's configuration holds besides its dense vectors. */
export interface CollectionOptions {
  /** Payload fields; without them points carry no payload. */
  fields?: Record<string, FieldType>;
  /** Nested payloads: any JSON object is a payload, filter keys are JSON paths
   * (`metadata.topic`, `tags[].name`), `nested` conditions apply; `fields` declare the paths
   * built as columns when points are sealed (filters on other paths read every document). */
  nested?: boolean;
  /** Sparse vectors beside the dense one, by name (at most 16): `modifier` `"none"` (the
   * default) or `"idf"` (each index weighted by its inverse document frequency). */
  sparse?: Record<string, { modifier?: "none" | "idf" }>;
}

/** A sparse vector: unique indices (u32) and finite values, at most 65,536 pairs. */
export interface SparseVector {
  indices: ArrayLike<number>;
  values: ArrayLike<number>;
}

/** A reserved batch: views straight into wasm memory. Make no other Shoal call between
 * `reserve()` and `commit()`. */
export class Batch {
  private constructor();
  /** Number of points. */
  readonly length: number;
  /** Id slots as u64. */
  readonly ids: BigUint64Array;
  /** The same slots as JavaScript numbers; commit with `{ numberIds: true }` after writing here. */
  readonly idsAsNumbers: Float64Array;
  /** Vectors, row-major, `length * dim` floats. */
  readonly vectors: Float32Array;
  /** Checks the batch (and the payloads: one object or null per point, checked against the
   * collection's fields) and makes it visible; returns the number of points committed. */
  commit(
    opts?: readonly (Payload | null)[] | { numberIds?: boolean; payloads?: readonly (Payload | null)[] },
  ): number;
}

export interface SearchParams {
  exact?: boolean;
  nprobe?: number;
  rerank?: number;
}

/** A filter: Qdrant's filter language over the payload fields. A point passes when every `must`
 * condition holds, at least one `should` (when there are any), no `must_not`, and at least
 * `min_count` of `min_should.conditions`. Filters nest (a condition may be a filter), 32 levels
 * deep at most. A malformed filter is an `invalid_request` naming its path. */
export interface Filter {
  must?: Condition | readonly Condition[] | null;
  should?: Condition | readonly Condition[] | null;
  must_not?: Condition | readonly Condition[] | null;
  min_should?: { conditions: readonly Condition[]; min_count: number };
}

/** One condition of a filter. */
export type Condition =
  | MatchCondition
  | RangeCondition
  | IsEmptyCondition
  | IsNullCondition
  | HasIdCondition
  | NestedCondition
  | Filter;

/** Collections with nested payloads: some element of the array(s) at `key` satisfies the whole
 * `filter`, its keys resolved inside that element. */
export interface NestedCondition {
  nested: { key: string; filter: Filter };
}

/** A value a `match` compares with: a keyword, an integer or a bool (of the field's type). */
export type MatchValue = string | number | boolean;

/** Some value of field `key` equals `value`, is `any` of the list, or is not in the `except`
 * list (a point without a value never matches). */
export interface MatchCondition {
  key: string;
  match: { value: MatchValue } | { any: readonly MatchValue[] } | { except: readonly MatchValue[] };
}

/** Some value of field `key` lies inside the bounds (numbers compare as f64). */
export interface RangeCondition {
  key: string;
  range: { gt?: number; gte?: number; lt?: number; lte?: number };
}

/** The field is absent, `null` or `[]`. */
export interface IsEmptyCondition {
  is_empty: { key: string };
}

/** The field is `null`. */
export interface IsNullCondition {
  is_null: { key: string };
}

/** The point's id is one of these. */
export interface HasIdCondition {
  has_id: readonly Id[];
}

/** The search request (shoal-core's `SearchRequest`, the same JSON on every host). Unknown fields are rejected (`invalid_request`). */
export interface SearchRequest extends PrefetchRequest {
  /** 0..=100000, default 0. */
  offset?: number;
  with_payload?: boolean;
  timeout_ms?: number;
}

/** A search whose results a request fuses or re-scores (`prefetch`), and what every request
 * shares with it. */
export interface PrefetchRequest {
  vector?: Float32Array | readonly number[];
  /** A sparse query, searched in the sparse vector `using` names (a ranking of its own). */
  sparse?: SparseVector;
  /** The vector searched: a dense vector's name (with `vector`; none or `""`: the one named
   * `""`, or the only one) or a sparse vector's (with `sparse`). */
  using?: string;
  text?: string;
  /** 1..=10000, default 10. */
  limit?: number;
  /** Only points passing this filter (and the filters of the requests above). */
  filter?: Filter | null;
  params?: SearchParams;
  /** Searches whose results this request fuses (without `vector`) or re-scores exactly by its
   * `vector` (at most 16 per level, nested at most 4 deep). */
  prefetch?: readonly PrefetchRequest[];
  /** How rankings are fused (`vector` and `text`, or the prefetches): `"rrf"` (reciprocal rank
   * fusion, the default), `"dbsf"` (each ranking's scores normalised by mean ± 3 standard
   * deviations, then summed) or, for `vector` + `text`, `"weighted"` (each ranking's scores
   * scaled to 0..=1 and summed with weights `alpha`, `1 - alpha`). */
  fusion?: "rrf" | "dbsf" | "weighted";
  /** Reciprocal rank fusion's `k` (default 61): a ranking adds `1 / ((p + 1) / w + k - 1)` at
   * 0-based position `p`. */
  rrf_k?: number;
  /** Reciprocal rank fusion's weights `w`, one per ranking (default 1; `<= 0` adds nothing). */
  weights?: readonly number[];
  /** Weight of the vector ranking in `"weighted"` fusion, 0..=1, default 0.5. */
  alpha?: number;
  /** BM25 parameters of the text search: `k1` (default 1.2, 0..=1000), `b` (default 0.75, 0..=1). */
  bm25_k1?: number;
  bm25_b?: number;
  /** Leave out results worse than this: for an `l2` vector ranking a squared distance above it,
   * otherwise a score below it. */
  score_threshold?: number;
}

export interface ScoredPoint {
  /** A number when at most `Number.MAX_SAFE_INTEGER`, a BigInt otherwise, a UUID's text. */
  id: PointId;
  score: number;
  /** The stored payload (`{}` when none), when the request asked `with_payload`. */
  payload?: Payload;
}

export interface SearchStats {
  /** Points whose distance was estimated from quantized codes (IVF + RaBitQ). */
  estimated: number;
  /** Points whose exact distance was computed. */
  scanned: number;
  /** Segments searched. */
  segments: number;
  /** Whether every live point was considered exactly. */
  exact: boolean;
}

export interface SearchResponse {
  /** Best first; ties by ascending internal id. */
  points: ScoredPoint[];
  /** Whether a deadline cut the search short. */
  partial: boolean;
  stats: SearchStats;
}

/** A point read back by `get`, `scroll` or `points`. */
export interface PointRecord {
  /** A number when at most `Number.MAX_SAFE_INTEGER`, a BigInt otherwise, a UUID's text. */
  id: PointId;
  /** The stored payload (`{}` when none), unless `withPayload: false`. */
  payload?: Payload;
  /** The stored vector (normalised for `cosine`), with `withVector: true` (the first dense
   * vector) or a dense vector's name. */
  vector?: Float32Array;
}

/** What `get`, `scroll` and `points` return of each point. */
export interface RecordOptions {
  /** Return payloads (default true). */
  withPayload?: boolean;
  /** Return stored vectors (default false; `true`: the first dense vector; a name: that dense
   * vector); a codes-only collection has none (`codes_only`). */
  withVector?: boolean | string;
}

/** Options of `Collection.scroll`. */
export interface ScrollOptions extends RecordOptions {
  /** Only points passing this filter; all points without one. */
  filter?: Filter | null;
  /** Points per page, a positive integer (default 100). */
  limit?: number;
  /** Start after this id (a page's `next`); from the first point without it. */
  after?: Id | null;
}

/** Options of `Collection.points`: those of `scroll`, `limit` being the points read at a time. */
export type PointsOptions = Omit<ScrollOptions, "after">;

/** A page of `Collection.scroll`. */
export interface ScrollPage {
  /** Ids ascending. */
  points: PointRecord[];
  /** The `after` of the next page; `null` after the last. */
  next: PointId | null;
}

/** Options of `Collection.seal`. */
export interface SealOptions {
  /** "flat" (exact scan only) or "ivf-rabitq" (IVF partitions + RaBitQ codes + exact re-ranking). */
  index?: "flat" | "ivf-rabitq";
  /** Number of IVF partitions (default about 2·√n). */
  partitions?: number;
  /** Seed of k-means and the rotation (builds are deterministic for a seed). */
  seed?: number;
  /** Bits per dimension of the codes, 1..=8 (default: 4 up to 128 dimensions, 1 above): the sign bit scanned with FastScan plus
   * extra bits (extended RaBitQ) that refine the rows the sign bits find near: the candidates for
   * exact re-ranking are chosen by those refined estimates. */
  bits?: number;
  /** Keep only the codes, not the full vectors (needs bits 2..=8): a much smaller collection,
   * ranked by the codes' estimates, that refuses changes and exact search (`codes_only` errors). */
  codesOnly?: boolean;
}

export class Collection {
  constructor(config: CollectionConfig);
  /** Number of live points. */
  readonly len: number;
  /** The dimension of vector 0 (the first by name, with `vectors`). */
  readonly dim: number;
  /** The metric of vector 0. */
  readonly metric: Metric;
  /** The kernel implementation in use: "simd128" or "scalar". */
  readonly kernels: string;
  /** Reserves `n` points; fill the returned views, then `commit()`. (A collection of several
   * dense vectors takes them through `insert`, by name.) */
  reserve(n: number): Batch;
  /** Inserts (or replaces) points; returns how many were inserted. */
  insert(points: {
    ids: Ids;
    /** Row-major; with named dense vectors, each of them by name. */
    vectors: Float32Array | ArrayLike<number> | Record<string, Float32Array | ArrayLike<number>>;
    payloads?: readonly (Payload | null)[];
    /** Per sparse vector name, one vector (or `null`: the point does not hold it) per point. */
    sparse?: Record<string, readonly (SparseVector | null)[]>;
  }): number;
  /** Deletes points; returns how many existed. */
  delete(ids: Ids | Id): number;
  /**
   * Merges everything into one sealed segment. Without options the collection keeps its index;
   * `{ index: "ivf-rabitq" }` builds an IVF + RaBitQ index, `{ index: "flat" }` drops it.
   */
  seal(opts?: SealOptions): void;
  /** A vector search of a codes-only collection re-ranked exactly with full vectors read on
   * demand: `read(offset, length)` returns those bytes of the vectors file (raw f32, `dim` per
   * row, the segment's row order; `shoal build --codes-only --vectors-out FILE`). */
  searchLazy(
    req: SearchRequest,
    read: (offset: number, length: number) => Promise<Uint8Array | ArrayBuffer> | Uint8Array | ArrayBuffer,
  ): Promise<SearchResponse>;
  /** The sealed collection split for lazy re-ranking: the segment without its vectors, and
   * the vectors file (raw f32 in row order) that `searchLazy` reads. Needs an IVF index with
   * 2 or more bits. */
  splitVectors(): { segment: Uint8Array; vectors: Uint8Array };
  /** Whether the collection keeps index codes only (sealed with `codesOnly`). */
  readonly codesOnly: boolean;
  /** The index the next seal builds. */
  readonly index: "flat" | "ivf-rabitq";
  search(req: SearchRequest): SearchResponse;
  /** The points with these ids that are in the collection, in the order asked (ids not in it are
   * skipped); payloads by default, vectors with `withVector`. Bad ids throw `invalid_id`. */
  get(ids: Ids | Id, opts?: RecordOptions): PointRecord[];
  /** Number of live points passing `filter` (all without one); a malformed filter throws
   * `invalid_request`, as in `search`. */
  count(filter?: Filter | null): number;
  /** A page of the points passing `filter`, ids ascending: at most `limit` (default 100) after
   * `after`; `next` continues, `null` after the last page. */
  scroll(opts?: ScrollOptions): ScrollPage;
  /** Every point passing `filter`, ids ascending, read `limit` (default 100) at a time:
   * `for await (const p of col.points({ filter }))`. The matching ids are taken when the
   * iteration starts; points deleted before their page is read are skipped. */
  points(opts?: PointsOptions): AsyncGenerator<PointRecord, void, undefined>;
  /** The payload fields (`{}` when none). */
  readonly fields: Record<string, FieldType>;
  /** Adds payload fields; fields already there may be given with their type. Another type
   * throws `invalid_request`, an unknown type or bad name `invalid_config`, a codes-only
   * collection `codes_only`. Returns all the fields. */
  extendSchema(fields: Record<string, FieldType>): Record<string, FieldType>;
  /** Full check of every checksum of the sealed segment. */
  verify(): void;
  /** The collection as one segment file (seals and merges every segment first). */
  toBytes(): Uint8Array;
  /** Seals, then the collection as a segment set: the manifest (JSON) and the files it names
   * (every segment, and the live-rows files not returned before), the same bytes as natively. */
  toSet(): { manifest: string; files: Map<string, Uint8Array> };
  static fromBytes(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Collection;
  /** Opens a segment set from its manifest and the files it names (a `Map`, an object or a
   * function from name to bytes). A missing or inconsistent file throws `bad_set`. */
  static openSet(
    manifest: string,
    files: Map<string, Uint8Array> | Record<string, Uint8Array> | ((name: string) => Uint8Array | undefined),
  ): Collection;
  /** Opens a segment of `length` bytes from a stream (a `fetch`/R2 body or a Node file stream),
   * each chunk copied straight into wasm memory: no whole copy in JavaScript memory. */
  static fromStream(source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>, length: number): Promise<Collection>;
  /** Opens a segment where it lies (a static host, a CDN, an object store) and searches it by
   * byte ranges, without downloading it: a URL fetched with `Range` requests, or a `read`
   * function. Loads the remote module (its own wasm file) on first use. Opening a format-2
   * segment (`shoal build --layout ranges`) reads its bootstrap region: one request when
   * `bootstrapBytes` is its `bootstrapLen`. */
  static openRemote(source: RemoteSource, opts?: RemoteOptions): Promise<RemoteCollection>;
  /** Releases the collection's wasm memory now. */
  free(): void;
}

/** Where a remote segment is read from: its URL (a URL whose path ends in `.json` is a set's
 * manifest, its segments read beside it), or a function reading `length` bytes at `offset`
 * (fewer only where the object ends) — an R2 binding's `get` with a range, a file handle's
 * read. */
export type RemoteSource =
  | string
  | URL
  | { read(offset: number, length: number): Promise<Uint8Array | ArrayBuffer> | Uint8Array | ArrayBuffer; size?: number };

export interface RemoteOptions {
  /** Fetched bytes kept between searches (least recently read dropped first). Default 64 MiB. */
  cacheBytes?: number;
  /** The `fetch` used for a URL (signed requests, a service binding), called as given: bind a
   * method first (`env.SERVICE.fetch.bind(env.SERVICE)`). Default `globalThis.fetch`. */
  fetch?: typeof fetch;
  /** A request that has not answered after this many ms is a `transport` error (tried twice
   * more). Default 60,000; 0: none. */
  timeoutMs?: number;
  /** Headers sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
  /** Bytes read by the first request (at least 64; default 256 KiB): a format-2 segment's
   * `bootstrapLen` opens it with one request. */
  bootstrapBytes?: number;
  /** Ranges at most this many bytes apart are fetched as one range (default 16 KiB; 1 KiB with
   * `multipartRanges`). */
  mergeGap?: number;
  /** The largest whole object taken when a server ignores `Range` (default 16 MiB). */
  wholeBodyCap?: number;
  /** Each wave's ranges in one request (`Range: bytes=a-b,c-d`, up to 64), for servers that
   * answer `multipart/byteranges` (nginx, Apache; not S3). Default false. */
  multipartRanges?: boolean;
  /** Keep the ranges searches fetch across page loads: `true` (the Cache API,
   * `caches.open("shoal-ranges-v1")`: browsers, service workers, Deno) or a `Cache`. Kept per
   * object version (the URL without its query, the strong ETag and length pinned at open), only
   * for format-2 segments (every byte checked when used; bytes that fail are fetched again past
   * the cache and replace it); other versions' entries are deleted when an object is opened.
   * Opening still sends its request (it pins the version). The URL's path names the object in
   * the cache (its query and fragment are not part of the key: a presigned URL's path names its
   * object; `get?id=1` and `get?id=2` would share entries). A Cache API that fails reads from the
   * network. Default false. */
  persist?: boolean | Cache;
  /** `false` forces the scalar build of the remote module. */
  simd?: boolean;
  /** The remote module itself where the runtime cannot compile bytes (workerd:
   * `import wasm from "shoal/wasm/remote-simd.wasm"`), or bytes, a URL or a `Response`. */
  module?: WasmSource;
}

/** What a remote open or search fetched. */
export interface RemoteTrip {
  /** Dependent round trips (each wave's requests run at once). */
  waves: number;
  /** Requests sent (a multipart request counts once, a retried one each time). */
  requests: number;
  /** Bytes of the ranges read (without multipart headers). */
  bytes: number;
  /** Times bytes failed their checksum and were fetched again. */
  retries: number;
  /** Bytes read from the `persist` cache instead of the server (not in `bytes`). */
  persistedBytes: number;
}

/** A segment — or a set of segments, from its `manifest.json` (`shoal publish`) — searched by
 * byte ranges (`Collection.openRemote`): read-only, vector searches. (A type only: made by
 * `openRemote`.) */
export interface RemoteCollection {
  readonly dim: number;
  readonly metric: Metric;
  /** Number of points. */
  readonly len: number;
  /** Segments read: 1, or a set's. */
  readonly segments: number;
  /** 2 for a segment laid out for ranges (and a set); 1 is read section by section. */
  readonly version: number;
  /** The segment's length in bytes (a set's: the sum). */
  readonly fileLen: number;
  /** Bytes from offset 0 that open it (`bootstrapBytes` for one request; a set's: the sum). */
  readonly bootstrapLen: number;
  readonly codesOnly: boolean;
  /** Fetched bytes held in memory. */
  readonly cachedBytes: number;
  /** What opening fetched. */
  readonly opened: RemoteTrip;
  /** The remote module's kernels: "simd128" or "scalar". */
  readonly kernels: string;
  /** A search by the vector, by `text`, or both fused, with `with_payload` and `filter` (no
   * `has_id`; nested payloads by their indexed paths only; no sparse vector, prefetch, `exact`
   * or text deadline): the
   * local results, bit for bit, and
   * what it fetched. Server faults throw `remote_status`, `object_changed`,
   * `range_unsupported`, `bad_response`, `transport` or `no_progress`; bytes failing their
   * checksum are fetched again once, then throw `bad_segment`. */
  search(req: SearchRequest): Promise<SearchResponse & { io: RemoteTrip }>;
  /** Releases its wasm memory now. */
  free(): void;
}

/** Options of the IndexedDB helpers: database (default "shoal") and object store (default "segments"). */
export interface IndexedDBOptions {
  db?: string;
  store?: string;
}
/** Saves the collection's segment (sealing first) to the origin private file system (browsers). */
export function saveToOPFS(col: Collection, name: string): Promise<void>;
/** Opens a segment file from the origin private file system. */
export function openFromOPFS(name: string): Promise<Collection>;
/** Saves the collection's segment (sealing first) in IndexedDB under `key`. */
export function saveToIndexedDB(col: Collection, key: string, opts?: IndexedDBOptions): Promise<void>;
/** Opens a segment saved with `saveToIndexedDB`. */
export function openFromIndexedDB(key: string, opts?: IndexedDBOptions): Promise<Collection>;
/** Bytes of wasm linear memory reserved by the engine (grows, never shrinks; 0 before init()). */
export function wasmMemoryBytes(): number;

