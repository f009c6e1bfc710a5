/* tslint:disable */
/* eslint-disable */

/**
 * The result of [`WasmCollection::search`] (and of [`WasmCollection::points`]).
 */
export class SearchOutput {
    private constructor();
    free(): void;
    [Symbol.dispose](): void;
    /**
     * External ids, best first (a `BigUint64Array`; `0` for a UUID, see [`uuids`](Self::uuids)).
     */
    ids(): BigUint64Array;
    /**
     * Whether a deadline cut the search short.
     */
    partial(): boolean;
    /**
     * The payloads aligned with [`ids`](Self::ids) as a JSON array, when the request asked
     * `with_payload`.
     */
    payloads_json(): string | undefined;
    /**
     * Scores aligned with [`ids`](Self::ids) (a `Float32Array`).
     */
    scores(): Float32Array;
    /**
     * The search statistics as JSON.
     */
    stats_json(): string;
    /**
     * Empty when no id is a UUID; otherwise 17 bytes per point aligned with
     * [`ids`](Self::ids): `1` and the UUID's 16 bytes, or `0` and 16 zeros for an integer id.
     */
    uuids(): Uint8Array;
    /**
     * The vectors of [`WasmCollection::points`] aligned with [`ids`](Self::ids), row-major
     * (a `Float32Array`; empty unless asked for).
     */
    vectors(): Float32Array;
}

/**
 * An aligned buffer in wasm memory that JavaScript copies a segment into (at once, or chunk
 * by chunk from a stream), then opens in place: the segment's only copy in wasm memory.
 */
export class SegmentBuffer {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * A zeroed buffer of `len` bytes; `capacity_exceeded` when wasm memory cannot hold it.
     */
    constructor(len: number);
    /**
     * Opens the segment written into the buffer (cheap checks only), which it then owns.
     */
    open(): WasmCollection;
    /**
     * Its address in wasm memory (stable until it is opened or freed).
     */
    ptr(): number;
}

/**
 * Opens a segment set: JavaScript gives the manifest, then every file it names
 * ([`SetOpener::files`]): segments through [`SegmentBuffer`]s (copied once into wasm memory),
 * live-rows files as bytes.
 */
export class SetOpener {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Hands over a live-rows file.
     */
    add_live(name: string, bytes: Uint8Array | number[]): void;
    /**
     * Hands over a segment file (its buffer is then owned here).
     */
    add_segment(name: string, buffer: SegmentBuffer): void;
    /**
     * The files the manifest names, segments first (in set order), then live-rows files.
     */
    files(): string[];
    /**
     * Parses and checks a manifest (`docs/format.md`, "Collections as segment sets").
     */
    constructor(manifest: string);
    /**
     * Opens the set (cheap checks of every file against the manifest).
     */
    open(): WasmCollection;
}

/**
 * A Shoal collection living in wasm memory.
 */
export class WasmCollection {
    free(): void;
    [Symbol.dispose](): void;
    /**
     * Whether the sealed segment keeps index codes only.
     */
    codes_only(): boolean;
    /**
     * Checks the reserved batch and makes it visible; returns the number of points committed.
     *
     * `ids_are_f64` says the id slots hold JavaScript numbers (written through a
     * `Float64Array` view) rather than `u64`s; they must then be integers in `0..=2^53`.
     * `payloads`, when given, is a JSON array with one payload object (or `null`) per point.
     * `ids`, when given, is a JSON array of the batch's ids (integers and UUID strings, mixed)
     * and the id slots are ignored. The sparse vectors staged since the last commit go with
     * the batch. On error the batch is dropped and the collection is unchanged.
     */
    commit(ids_are_f64: boolean, payloads?: string | null, ids?: string | null): number;
    /**
     * Deletes points by id (a `BigUint64Array`); returns how many existed.
     */
    delete(ids: BigUint64Array | bigint[]): number;
    /**
     * Deletes points by id given as JavaScript numbers (a `Float64Array`); every id must be
     * an integer in `0..=2^53`, otherwise nothing is deleted. Returns how many existed.
     */
    delete_f64(ids: Float64Array | number[]): number;
    /**
     * Deletes points by id given as a JSON array (integers and UUID strings, mixed); nothing
     * is deleted when one is not an id. Returns how many existed.
     */
    delete_json(ids: string): number;
    /**
     * Vector dimension.
     */
    dim(): number;
    /**
     * The payload fields as JSON (`{"name": "type", ...}`, `{}` when there are none) after
     * adding `add` (the same shape, `{}` adding nothing) with `Collection::extend_schema`: a
     * field already there must keep its type. One export for the `fields` getter and
     * `extendSchema` of `js/collection.js`.
     */
    fields(add: string): string;
    /**
     * `"flat"` or `"ivf-rabitq"`: the index the next seal builds.
     */
    index(): string;
    /**
     * Whether the collection holds no live point.
     */
    is_empty(): boolean;
    /**
     * Name of the kernel implementation in use: `"simd128"` or `"scalar"`.
     */
    kernels(): string;
    /**
     * Number of live points.
     */
    len(): number;
    /**
     * The metric's canonical name.
     */
    metric(): string;
    /**
     * An empty collection of `dim`-dimensional vectors compared with `metric`
     * (`"l2"`, `"dot"` or `"cosine"`); `fields`, when given, is the payload schema as JSON
     * (`{"tag": "keyword", "year": "integer"}`); `nested`: payloads are any JSON objects and
     * `fields` declare paths (`docs/format.md`, "Nested payloads"); `sparse`, when given, the
     * sparse vectors as JSON (`{"name": {"modifier": "none" | "idf"}}`).
     */
    constructor(dim: number, metric: string, fields: string | null | undefined, nested: boolean, sparse?: string | null);
    /**
     * Byte offset in wasm memory of the reserved batch's id slots (8 bytes each).
     */
    pending_ids_ptr(): number;
    /**
     * Byte offset in wasm memory of the reserved batch's vectors (`n * dim` f32, row-major).
     */
    pending_vectors_ptr(): number;
    /**
     * Points by id or by filter: the one export behind `get`, `count` and `scroll` in
     * `js/collection.js` (one rather than three: the package's size budget). `json` is
     * `{"ids": [...]}` (the live points among these ids, in their order) or
     * `{"filter": F, "after": ID, "limit": N}` (the live points passing the filter, ids
     * ascending and greater than `after`, at most `limit`); `"payload": true` adds their
     * payloads, `"vector": true` their stored vectors ([`SearchOutput::vectors`]), which a
     * codes-only collection does not have (`codes_only`). Scores are 0. (Stored sparse
     * vectors are not read back here: the package's size budget.)
     */
    points(json: string): SearchOutput;
    /**
     * Lazy re-ranking, step 1 (`Collection::rerank_rows`): the rows (a `Uint32Array`, best
     * estimate first) whose full vectors decide the search of a codes-only collection; with
     * `below`, only those that can still score better than it.
     */
    rerank_rows(json: string, vector?: Float32Array | number[] | null, below?: number | null): Uint32Array;
    /**
     * Reserves a batch of `n` points, dropping any batch reserved before and not committed.
     * May grow wasm memory: call the `pending_*_ptr` methods afterwards.
     */
    reserve(n: number): void;
    /**
     * Merges everything into one sealed segment, with the index it had.
     */
    seal(): void;
    /**
     * Seals with the index of the JSON seal options (`{"index": "ivf-rabitq", ...}`, parsed by
     * `IndexKind::from_json`); later seals rebuild the same kind of index.
     */
    seal_with(options: string): void;
    /**
     * Runs a search request given as JSON (the shape of `SearchRequest` in shoal-core; typed in `index.d.ts`). `vector`, when given,
     * is the query vector (it replaces any `vector` field of the JSON).
     */
    search(json: string, vector?: Float32Array | number[] | null): SearchOutput;
    /**
     * Lazy re-ranking, step 2 (`Collection::search_reranked`): the search answered exactly
     * over `rows` with their `vectors`.
     */
    search_reranked(json: string, vector: Float32Array | number[] | null | undefined, rows: Uint32Array | number[], vectors: Float32Array | number[]): SearchOutput;
    /**
     * The sealed segment without its vectors (`SealedSegment::without_vectors`): a codes-only
     * segment for [`search_reranked`](Self::search_reranked).
     */
    segment_without_vectors(): Uint8Array;
    /**
     * Stages sparse vector `name` of the next commit's points: point `i` holds `counts[i]`
     * pairs (`0xFFFF_FFFF`: it does not hold the vector), taken in order from `indices` and
     * `values`. Each pair list is checked here: a typed error drops every staged vector.
     */
    stage_sparse(name: string, counts: Uint32Array | number[], indices: Uint32Array | number[], values: Float32Array | number[]): void;
    /**
     * The sealed segment's vectors in row order (a `Float32Array`).
     */
    stored_vectors(): Float32Array;
    /**
     * The collection as one sealed segment file (sealing and merging first), copied into a
     * `Uint8Array`. A segment that fails its checksums is an error.
     */
    to_bytes(): Uint8Array;
    /**
     * Seals, then writes the collection as a segment set: `[manifest JSON, name, bytes, name,
     * bytes, ...]` with every segment file and the live-rows files the manifest names that
     * were not written by an earlier call.
     */
    to_set(): Array<any>;
    /**
     * Checks every checksum of the sealed segment.
     */
    verify(): void;
}

/**
 * Name of the kernel implementation this build uses: `"simd128"` or `"scalar"`.
 */
export function kernels_name(): string;

export type InitInput = RequestInfo | URL | Response | BufferSource | WebAssembly.Module;

export interface InitOutput {
    readonly memory: WebAssembly.Memory;
    readonly __wbg_searchoutput_free: (a: number, b: number) => void;
    readonly __wbg_segmentbuffer_free: (a: number, b: number) => void;
    readonly __wbg_setopener_free: (a: number, b: number) => void;
    readonly __wbg_wasmcollection_free: (a: number, b: number) => void;
    readonly kernels_name: () => [number, number];
    readonly searchoutput_ids: (a: number) => [number, number];
    readonly searchoutput_partial: (a: number) => number;
    readonly searchoutput_payloads_json: (a: number) => [number, number];
    readonly searchoutput_scores: (a: number) => [number, number];
    readonly searchoutput_stats_json: (a: number) => [number, number];
    readonly searchoutput_uuids: (a: number) => [number, number];
    readonly searchoutput_vectors: (a: number) => any;
    readonly segmentbuffer_new: (a: number) => [number, number, number];
    readonly segmentbuffer_open: (a: number) => [number, number, number];
    readonly segmentbuffer_ptr: (a: number) => number;
    readonly setopener_add_live: (a: number, b: number, c: number, d: number, e: number) => void;
    readonly setopener_add_segment: (a: number, b: number, c: number, d: number) => void;
    readonly setopener_files: (a: number) => [number, number];
    readonly setopener_new: (a: number, b: number) => [number, number, number];
    readonly setopener_open: (a: number) => [number, number, number];
    readonly wasmcollection_codes_only: (a: number) => number;
    readonly wasmcollection_commit: (a: number, b: number, c: number, d: number, e: number, f: number) => [number, number, number];
    readonly wasmcollection_delete: (a: number, b: number, c: number) => [number, number, number];
    readonly wasmcollection_delete_f64: (a: number, b: number, c: number) => [number, number, number];
    readonly wasmcollection_delete_json: (a: number, b: number, c: number) => [number, number, number];
    readonly wasmcollection_dim: (a: number) => number;
    readonly wasmcollection_fields: (a: number, b: number, c: number) => [number, number, number, number];
    readonly wasmcollection_index: (a: number) => [number, number];
    readonly wasmcollection_is_empty: (a: number) => number;
    readonly wasmcollection_kernels: (a: number) => [number, number];
    readonly wasmcollection_len: (a: number) => number;
    readonly wasmcollection_metric: (a: number) => [number, number];
    readonly wasmcollection_new: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number) => [number, number, number];
    readonly wasmcollection_pending_ids_ptr: (a: number) => number;
    readonly wasmcollection_pending_vectors_ptr: (a: number) => number;
    readonly wasmcollection_points: (a: number, b: number, c: number) => [number, number, number];
    readonly wasmcollection_rerank_rows: (a: number, b: number, c: number, d: number, e: number, f: number) => [number, number, number, number];
    readonly wasmcollection_reserve: (a: number, b: number) => [number, number];
    readonly wasmcollection_seal: (a: number) => void;
    readonly wasmcollection_seal_with: (a: number, b: number, c: number) => [number, number];
    readonly wasmcollection_search: (a: number, b: number, c: number, d: number, e: number) => [number, number, number];
    readonly wasmcollection_search_reranked: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number) => [number, number, number];
    readonly wasmcollection_segment_without_vectors: (a: number) => [number, number, number];
    readonly wasmcollection_stage_sparse: (a: number, b: number, c: number, d: number, e: number, f: number, g: number, h: number, i: number) => [number, number];
    readonly wasmcollection_stored_vectors: (a: number) => [number, number, number];
    readonly wasmcollection_to_bytes: (a: number) => [number, number, number];
    readonly wasmcollection_to_set: (a: number) => any;
    readonly wasmcollection_verify: (a: number) => [number, number];
    readonly __wbindgen_exn_store: (a: number) => void;
    readonly __externref_table_alloc: () => number;
    readonly __wbindgen_externrefs: WebAssembly.Table;
    readonly __wbindgen_free: (a: number, b: number, c: number) => void;
    readonly __externref_table_dealloc: (a: number) => void;
    readonly __wbindgen_malloc: (a: number, b: number) => number;
    readonly __wbindgen_realloc: (a: number, b: number, c: number, d: number) => number;
    readonly __externref_drop_slice: (a: number, b: number) => void;
    readonly __wbindgen_start: () => void;
}

export type SyncInitInput = BufferSource | WebAssembly.Module;

/**
 * Instantiates the given `module`, which can either be bytes or
 * a precompiled `WebAssembly.Module`.
 *
 * @param {{ module: SyncInitInput }} module - Passing `SyncInitInput` directly is deprecated.
 *
 * @returns {InitOutput}
 */
export function initSync(module: { module: SyncInitInput } | SyncInitInput): InitOutput;

/**
 * If `module_or_path` is {RequestInfo} or {URL}, makes a request and
 * for everything else, calls `WebAssembly.instantiate` directly.
 *
 * @param {{ module_or_path: InitInput | Promise<InitInput> }} module_or_path - Passing `InitInput` directly is deprecated.
 *
 * @returns {Promise<InitOutput>}
 */
export default function __wbg_init (module_or_path?: { module_or_path: InitInput | Promise<InitInput> } | InitInput | Promise<InitInput>): Promise<InitOutput>;
