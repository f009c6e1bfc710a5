/* @ts-self-types="./shoal_js.d.ts" */

/**
 * The result of [`WasmCollection::search`] (and of [`WasmCollection::points`]).
 */
export class SearchOutput {
    static __wrap(ptr) {
        const obj = Object.create(SearchOutput.prototype);
        obj.__wbg_ptr = ptr;
        SearchOutputFinalization.register(obj, obj.__wbg_ptr, obj);
        return obj;
    }
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        SearchOutputFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_searchoutput_free(ptr, 0);
    }
    /**
     * External ids, best first (a `BigUint64Array`; `0` for a UUID, see [`uuids`](Self::uuids)).
     * @returns {BigUint64Array}
     */
    ids() {
        const ret = wasm.searchoutput_ids(this.__wbg_ptr);
        var v1 = getArrayU64FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 8, 8);
        return v1;
    }
    /**
     * Whether a deadline cut the search short.
     * @returns {boolean}
     */
    partial() {
        const ret = wasm.searchoutput_partial(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * The payloads aligned with [`ids`](Self::ids) as a JSON array, when the request asked
     * `with_payload`.
     * @returns {string | undefined}
     */
    payloads_json() {
        const ret = wasm.searchoutput_payloads_json(this.__wbg_ptr);
        let v1;
        if (ret[0] !== 0) {
            v1 = getStringFromWasm0(ret[0], ret[1]);
            wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        }
        return v1;
    }
    /**
     * Scores aligned with [`ids`](Self::ids) (a `Float32Array`).
     * @returns {Float32Array}
     */
    scores() {
        const ret = wasm.searchoutput_scores(this.__wbg_ptr);
        var v1 = getArrayF32FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
        return v1;
    }
    /**
     * The search statistics as JSON.
     * @returns {string}
     */
    stats_json() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.searchoutput_stats_json(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * Empty when no id is a UUID; otherwise 17 bytes per point aligned with
     * [`ids`](Self::ids): `1` and the UUID's 16 bytes, or `0` and 16 zeros for an integer id.
     * @returns {Uint8Array}
     */
    uuids() {
        const ret = wasm.searchoutput_uuids(this.__wbg_ptr);
        var v1 = getArrayU8FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 1, 1);
        return v1;
    }
    /**
     * The vectors of [`WasmCollection::points`] aligned with [`ids`](Self::ids), row-major
     * (a `Float32Array`; empty unless asked for).
     * @returns {Float32Array}
     */
    vectors() {
        const ret = wasm.searchoutput_vectors(this.__wbg_ptr);
        return ret;
    }
}
if (Symbol.dispose) SearchOutput.prototype[Symbol.dispose] = SearchOutput.prototype.free;

/**
 * An aligned buffer in wasm memory that JavaScript copies a segment into (at once, or chunk
 * by chunk from a stream), then opens in place: the segment's only copy in wasm memory.
 */
export class SegmentBuffer {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        SegmentBufferFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_segmentbuffer_free(ptr, 0);
    }
    /**
     * A zeroed buffer of `len` bytes; `capacity_exceeded` when wasm memory cannot hold it.
     * @param {number} len
     */
    constructor(len) {
        const ret = wasm.segmentbuffer_new(len);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        SegmentBufferFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Opens the segment written into the buffer (cheap checks only), which it then owns.
     * @returns {WasmCollection}
     */
    open() {
        const ptr = this.__destroy_into_raw();
        const ret = wasm.segmentbuffer_open(ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return WasmCollection.__wrap(ret[0]);
    }
    /**
     * Its address in wasm memory (stable until it is opened or freed).
     * @returns {number}
     */
    ptr() {
        const ret = wasm.segmentbuffer_ptr(this.__wbg_ptr);
        return ret >>> 0;
    }
}
if (Symbol.dispose) SegmentBuffer.prototype[Symbol.dispose] = SegmentBuffer.prototype.free;

/**
 * Opens a segment set: JavaScript gives the manifest, then every file it names
 * ([`SetOpener::files`]): segments through [`SegmentBuffer`]s (copied once into wasm memory),
 * live-rows files as bytes.
 */
export class SetOpener {
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        SetOpenerFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_setopener_free(ptr, 0);
    }
    /**
     * Hands over a live-rows file.
     * @param {string} name
     * @param {Uint8Array | number[]} bytes
     */
    add_live(name, bytes) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArray8ToWasm0(bytes, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        wasm.setopener_add_live(this.__wbg_ptr, ptr0, len0, ptr1, len1);
    }
    /**
     * Hands over a segment file (its buffer is then owned here).
     * @param {string} name
     * @param {SegmentBuffer} buffer
     */
    add_segment(name, buffer) {
        let ptr0, len0, ptr1;
        try {
            ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            _assertClass(buffer, SegmentBuffer);
            ptr1 = buffer.__destroy_into_raw();
        } catch (e) {
            if (ptr1) wasm.__wbg_segmentbuffer_free(ptr1, 1);
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        wasm.setopener_add_segment(this.__wbg_ptr, ptr0, len0, ptr1);
    }
    /**
     * The files the manifest names, segments first (in set order), then live-rows files.
     * @returns {string[]}
     */
    files() {
        const ret = wasm.setopener_files(this.__wbg_ptr);
        var v1 = getArrayJsValueFromWasm0(ret[0], ret[1]);
        wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
        return v1;
    }
    /**
     * Parses and checks a manifest (`docs/format.md`, "Collections as segment sets").
     * @param {string} manifest
     */
    constructor(manifest) {
        const ptr0 = passStringToWasm0(manifest, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.setopener_new(ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        SetOpenerFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Opens the set (cheap checks of every file against the manifest).
     * @returns {WasmCollection}
     */
    open() {
        const ptr = this.__destroy_into_raw();
        const ret = wasm.setopener_open(ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return WasmCollection.__wrap(ret[0]);
    }
}
if (Symbol.dispose) SetOpener.prototype[Symbol.dispose] = SetOpener.prototype.free;

/**
 * A Shoal collection living in wasm memory.
 */
export class WasmCollection {
    static __wrap(ptr) {
        const obj = Object.create(WasmCollection.prototype);
        obj.__wbg_ptr = ptr;
        WasmCollectionFinalization.register(obj, obj.__wbg_ptr, obj);
        return obj;
    }
    __destroy_into_raw() {
        const ptr = this.__wbg_ptr;
        this.__wbg_ptr = 0;
        WasmCollectionFinalization.unregister(this);
        return ptr;
    }
    free() {
        const ptr = this.__destroy_into_raw();
        wasm.__wbg_wasmcollection_free(ptr, 0);
    }
    /**
     * Whether the sealed segment keeps index codes only.
     * @returns {boolean}
     */
    codes_only() {
        const ret = wasm.wasmcollection_codes_only(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Checks the reserved batch and makes it visible; returns the number of points committed.
     *
     * `ids_are_f64` says the id slots hold JavaScript numbers (written through a
     * `Float64Array` view) rather than `u64`s; they must then be integers in `0..=2^53`.
     * `payloads`, when given, is a JSON array with one payload object (or `null`) per point.
     * `ids`, when given, is a JSON array of the batch's ids (integers and UUID strings, mixed)
     * and the id slots are ignored. The sparse vectors staged since the last commit go with
     * the batch. On error the batch is dropped and the collection is unchanged.
     * @param {boolean} ids_are_f64
     * @param {string | null} [payloads]
     * @param {string | null} [ids]
     * @returns {number}
     */
    commit(ids_are_f64, payloads, ids) {
        const val3 = +ids_are_f64;
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = isLikeNone(payloads) ? 0 : passStringToWasm0(payloads, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(ids) ? 0 : passStringToWasm0(ids, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.wasmcollection_commit(this.__wbg_ptr, val3, ptr0, len0, ptr1, len1);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Deletes points by id (a `BigUint64Array`); returns how many existed.
     * @param {BigUint64Array | bigint[]} ids
     * @returns {number}
     */
    delete(ids) {
        const ptr0 = passArray64ToWasm0(ids, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.wasmcollection_delete(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Deletes points by id given as JavaScript numbers (a `Float64Array`); every id must be
     * an integer in `0..=2^53`, otherwise nothing is deleted. Returns how many existed.
     * @param {Float64Array | number[]} ids
     * @returns {number}
     */
    delete_f64(ids) {
        const ptr0 = passArrayF64ToWasm0(ids, wasm.__wbindgen_malloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.wasmcollection_delete_f64(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Deletes points by id given as a JSON array (integers and UUID strings, mixed); nothing
     * is deleted when one is not an id. Returns how many existed.
     * @param {string} ids
     * @returns {number}
     */
    delete_json(ids) {
        const ptr0 = passStringToWasm0(ids, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.wasmcollection_delete_json(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return ret[0] >>> 0;
    }
    /**
     * Vector dimension.
     * @returns {number}
     */
    dim() {
        const ret = wasm.wasmcollection_dim(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * The payload fields as JSON (`{"name": "type", ...}`, `{}` when there are none) after
     * adding `add` (the same shape, `{}` adding nothing) with `Collection::extend_schema`: a
     * field already there must keep its type. One export for the `fields` getter and
     * `extendSchema` of `js/collection.js`.
     * @param {string} add
     * @returns {string}
     */
    fields(add) {
        let deferred3_0;
        let deferred3_1;
        try {
            const ptr0 = passStringToWasm0(add, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            const len0 = WASM_VECTOR_LEN;
            const ret = wasm.wasmcollection_fields(this.__wbg_ptr, ptr0, len0);
            var ptr2 = ret[0];
            var len2 = ret[1];
            if (ret[3]) {
                ptr2 = 0; len2 = 0;
                throw takeFromExternrefTable0(ret[2]);
            }
            deferred3_0 = ptr2;
            deferred3_1 = len2;
            return getStringFromWasm0(ptr2, len2);
        } finally {
            wasm.__wbindgen_free(deferred3_0, deferred3_1, 1);
        }
    }
    /**
     * `"flat"` or `"ivf-rabitq"`: the index the next seal builds.
     * @returns {string}
     */
    index() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.wasmcollection_index(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * Whether the collection holds no live point.
     * @returns {boolean}
     */
    is_empty() {
        const ret = wasm.wasmcollection_is_empty(this.__wbg_ptr);
        return ret !== 0;
    }
    /**
     * Name of the kernel implementation in use: `"simd128"` or `"scalar"`.
     * @returns {string}
     */
    kernels() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.wasmcollection_kernels(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * Number of live points.
     * @returns {number}
     */
    len() {
        const ret = wasm.wasmcollection_len(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * The metric's canonical name.
     * @returns {string}
     */
    metric() {
        let deferred1_0;
        let deferred1_1;
        try {
            const ret = wasm.wasmcollection_metric(this.__wbg_ptr);
            deferred1_0 = ret[0];
            deferred1_1 = ret[1];
            return getStringFromWasm0(ret[0], ret[1]);
        } finally {
            wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
        }
    }
    /**
     * An empty collection of `dim`-dimensional vectors compared with `metric`
     * (`"l2"`, `"dot"` or `"cosine"`); `fields`, when given, is the payload schema as JSON
     * (`{"tag": "keyword", "year": "integer"}`); `nested`: payloads are any JSON objects and
     * `fields` declare paths (`docs/format.md`, "Nested payloads"); `sparse`, when given, the
     * sparse vectors as JSON (`{"name": {"modifier": "none" | "idf"}}`).
     * @param {number} dim
     * @param {string} metric
     * @param {string | null | undefined} fields
     * @param {boolean} nested
     * @param {string | null} [sparse]
     */
    constructor(dim, metric, fields, nested, sparse) {
        const val4 = +dim;
        const val5 = +nested;
        let ptr0, len0, ptr1, len1, ptr2, len2;
        try {
            ptr0 = passStringToWasm0(metric, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(fields) ? 0 : passStringToWasm0(fields, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = isLikeNone(sparse) ? 0 : passStringToWasm0(sparse, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len2 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.wasmcollection_new(val4, ptr0, len0, ptr1, len1, val5, ptr2, len2);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        this.__wbg_ptr = ret[0];
        WasmCollectionFinalization.register(this, this.__wbg_ptr, this);
        return this;
    }
    /**
     * Byte offset in wasm memory of the reserved batch's id slots (8 bytes each).
     * @returns {number}
     */
    pending_ids_ptr() {
        const ret = wasm.wasmcollection_pending_ids_ptr(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * Byte offset in wasm memory of the reserved batch's vectors (`n * dim` f32, row-major).
     * @returns {number}
     */
    pending_vectors_ptr() {
        const ret = wasm.wasmcollection_pending_vectors_ptr(this.__wbg_ptr);
        return ret >>> 0;
    }
    /**
     * Points by id or by filter: the one export behind `get`, `count` and `scroll` in
     * `js/collection.js` (one rather than three: the package's size budget). `json` is
     * `{"ids": [...]}` (the live points among these ids, in their order) or
     * `{"filter": F, "after": ID, "limit": N}` (the live points passing the filter, ids
     * ascending and greater than `after`, at most `limit`); `"payload": true` adds their
     * payloads, `"vector": true` their stored vectors ([`SearchOutput::vectors`]), which a
     * codes-only collection does not have (`codes_only`). Scores are 0. (Stored sparse
     * vectors are not read back here: the package's size budget.)
     * @param {string} json
     * @returns {SearchOutput}
     */
    points(json) {
        const ptr0 = passStringToWasm0(json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.wasmcollection_points(this.__wbg_ptr, ptr0, len0);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return SearchOutput.__wrap(ret[0]);
    }
    /**
     * Lazy re-ranking, step 1 (`Collection::rerank_rows`): the rows (a `Uint32Array`, best
     * estimate first) whose full vectors decide the search of a codes-only collection; with
     * `below`, only those that can still score better than it.
     * @param {string} json
     * @param {Float32Array | number[] | null} [vector]
     * @param {number | null} [below]
     * @returns {Uint32Array}
     */
    rerank_rows(json, vector, below) {
        const val3 = +(isLikeNone(below) ? Number.MAX_SAFE_INTEGER : Math.fround(below));
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(vector) ? 0 : passArrayF32ToWasm0(vector, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.wasmcollection_rerank_rows(this.__wbg_ptr, ptr0, len0, ptr1, len1, val3);
        if (ret[3]) {
            throw takeFromExternrefTable0(ret[2]);
        }
        var v4 = getArrayU32FromWasm0(ret[0], ret[1]).slice();
        wasm.__wbindgen_free(ret[0], ret[1] * 4, 4);
        return v4;
    }
    /**
     * Reserves a batch of `n` points, dropping any batch reserved before and not committed.
     * May grow wasm memory: call the `pending_*_ptr` methods afterwards.
     * @param {number} n
     */
    reserve(n) {
        const ret = wasm.wasmcollection_reserve(this.__wbg_ptr, n);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Merges everything into one sealed segment, with the index it had.
     */
    seal() {
        wasm.wasmcollection_seal(this.__wbg_ptr);
    }
    /**
     * Seals with the index of the JSON seal options (`{"index": "ivf-rabitq", ...}`, parsed by
     * `IndexKind::from_json`); later seals rebuild the same kind of index.
     * @param {string} options
     */
    seal_with(options) {
        const ptr0 = passStringToWasm0(options, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
        const len0 = WASM_VECTOR_LEN;
        const ret = wasm.wasmcollection_seal_with(this.__wbg_ptr, ptr0, len0);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * Runs a search request given as JSON (the shape of `SearchRequest` in shoal-core; typed in `index.d.ts`). `vector`, when given,
     * is the query vector (it replaces any `vector` field of the JSON).
     * @param {string} json
     * @param {Float32Array | number[] | null} [vector]
     * @returns {SearchOutput}
     */
    search(json, vector) {
        let ptr0, len0, ptr1, len1;
        try {
            ptr0 = passStringToWasm0(json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(vector) ? 0 : passArrayF32ToWasm0(vector, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.wasmcollection_search(this.__wbg_ptr, ptr0, len0, ptr1, len1);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return SearchOutput.__wrap(ret[0]);
    }
    /**
     * Lazy re-ranking, step 2 (`Collection::search_reranked`): the search answered exactly
     * over `rows` with their `vectors`.
     * @param {string} json
     * @param {Float32Array | number[] | null | undefined} vector
     * @param {Uint32Array | number[]} rows
     * @param {Float32Array | number[]} vectors
     * @returns {SearchOutput}
     */
    search_reranked(json, vector, rows, vectors) {
        let ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3;
        try {
            ptr0 = passStringToWasm0(json, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = isLikeNone(vector) ? 0 : passArrayF32ToWasm0(vector, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passArray32ToWasm0(rows, wasm.__wbindgen_malloc);
            len2 = WASM_VECTOR_LEN;
            ptr3 = passArrayF32ToWasm0(vectors, wasm.__wbindgen_malloc);
            len3 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr3) { wasm.__wbindgen_free(ptr3, len3 * 4, 4); }
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 4, 4); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.wasmcollection_search_reranked(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return SearchOutput.__wrap(ret[0]);
    }
    /**
     * The sealed segment without its vectors (`SealedSegment::without_vectors`): a codes-only
     * segment for [`search_reranked`](Self::search_reranked).
     * @returns {Uint8Array}
     */
    segment_without_vectors() {
        const ret = wasm.wasmcollection_segment_without_vectors(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Stages sparse vector `name` of the next commit's points: point `i` holds `counts[i]`
     * pairs (`0xFFFF_FFFF`: it does not hold the vector), taken in order from `indices` and
     * `values`. Each pair list is checked here: a typed error drops every staged vector.
     * @param {string} name
     * @param {Uint32Array | number[]} counts
     * @param {Uint32Array | number[]} indices
     * @param {Float32Array | number[]} values
     */
    stage_sparse(name, counts, indices, values) {
        let ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3;
        try {
            ptr0 = passStringToWasm0(name, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            len0 = WASM_VECTOR_LEN;
            ptr1 = passArray32ToWasm0(counts, wasm.__wbindgen_malloc);
            len1 = WASM_VECTOR_LEN;
            ptr2 = passArray32ToWasm0(indices, wasm.__wbindgen_malloc);
            len2 = WASM_VECTOR_LEN;
            ptr3 = passArrayF32ToWasm0(values, wasm.__wbindgen_malloc);
            len3 = WASM_VECTOR_LEN;
        } catch (e) {
            if (ptr3) { wasm.__wbindgen_free(ptr3, len3 * 4, 4); }
            if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 4, 4); }
            if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 4, 4); }
            if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
            throw e;
        }
        const ret = wasm.wasmcollection_stage_sparse(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2, ptr3, len3);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
    /**
     * The sealed segment's vectors in row order (a `Float32Array`).
     * @returns {Float32Array}
     */
    stored_vectors() {
        const ret = wasm.wasmcollection_stored_vectors(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * The collection as one sealed segment file (sealing and merging first), copied into a
     * `Uint8Array`. A segment that fails its checksums is an error.
     * @returns {Uint8Array}
     */
    to_bytes() {
        const ret = wasm.wasmcollection_to_bytes(this.__wbg_ptr);
        if (ret[2]) {
            throw takeFromExternrefTable0(ret[1]);
        }
        return takeFromExternrefTable0(ret[0]);
    }
    /**
     * Seals, then writes the collection as a segment set: `[manifest JSON, name, bytes, name,
     * bytes, ...]` with every segment file and the live-rows files the manifest names that
     * were not written by an earlier call.
     * @returns {Array<any>}
     */
    to_set() {
        const ret = wasm.wasmcollection_to_set(this.__wbg_ptr);
        return ret;
    }
    /**
     * Checks every checksum of the sealed segment.
     */
    verify() {
        const ret = wasm.wasmcollection_verify(this.__wbg_ptr);
        if (ret[1]) {
            throw takeFromExternrefTable0(ret[0]);
        }
    }
}
if (Symbol.dispose) WasmCollection.prototype[Symbol.dispose] = WasmCollection.prototype.free;

/**
 * Name of the kernel implementation this build uses: `"simd128"` or `"scalar"`.
 * @returns {string}
 */
export function kernels_name() {
    let deferred1_0;
    let deferred1_1;
    try {
        const ret = wasm.kernels_name();
        deferred1_0 = ret[0];
        deferred1_1 = ret[1];
        return getStringFromWasm0(ret[0], ret[1]);
    } finally {
        wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
    }
}
function __wbg_get_imports() {
    const import0 = {
        __proto__: null,
        __wbg___wbindgen_is_function_741ff2bb612836f5: function(arg0) {
            const ret = typeof(arg0) === 'function';
            return ret;
        },
        __wbg___wbindgen_is_undefined_be5b34249ff1fc15: function(arg0) {
            const ret = arg0 === undefined;
            return ret;
        },
        __wbg___wbindgen_number_get_934b640d0889af78: function(arg0, arg1) {
            const obj = arg1;
            const ret = typeof(obj) === 'number' ? obj : undefined;
            getDataViewMemory0().setFloat64((arg0 >>> 0) + 8 * 1, isLikeNone(ret) ? 0 : ret, true);
            getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, !isLikeNone(ret), true);
        },
        __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
            throw new Error(getStringFromWasm0(arg0, arg1));
        },
        __wbg_call_40b008ba32f73991: function() { return handleError(function (arg0, arg1) {
            const ret = arg0.call(arg1);
            return ret;
        }, arguments); },
        __wbg_get_2080c49015e35254: function() { return handleError(function (arg0, arg1) {
            const ret = Reflect.get(arg0, arg1);
            return ret;
        }, arguments); },
        __wbg_new_37eb45aaf5eeb820: function() {
            const ret = new Array();
            return ret;
        },
        __wbg_new_787b9fb330d55d78: function(arg0, arg1) {
            const ret = new Error(getStringFromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_new_from_slice_355c10c5d8f2addb: function(arg0, arg1) {
            const ret = new Float32Array(getArrayF32FromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_new_from_slice_b8daf545a41c6aa0: function(arg0, arg1) {
            const ret = new Uint8Array(getArrayU8FromWasm0(arg0, arg1));
            return ret;
        },
        __wbg_now_463ac581d2fc7ea3: function() {
            const ret = Date.now();
            return ret;
        },
        __wbg_push_c9f4893fc209f768: function(arg0, arg1) {
            const ret = arg0.push(arg1);
            return ret;
        },
        __wbg_set_2793479888329cb6: function() { return handleError(function (arg0, arg1, arg2) {
            const ret = Reflect.set(arg0, arg1, arg2);
            return ret;
        }, arguments); },
        __wbg_set_name_822e3903f3184979: function(arg0, arg1, arg2) {
            arg0.name = getStringFromWasm0(arg1, arg2);
        },
        __wbg_static_accessor_GLOBAL_THIS_003ee833af9699fc: function() {
            const ret = typeof globalThis === 'undefined' ? undefined : globalThis;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_static_accessor_GLOBAL_e4293fb22cbe77da: function() {
            const ret = typeof global === 'undefined' ? undefined : global;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_static_accessor_SELF_53bb20457401453d: function() {
            const ret = typeof self === 'undefined' ? undefined : self;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbg_static_accessor_WINDOW_b5e0810bfecb7feb: function() {
            const ret = typeof window === 'undefined' ? undefined : window;
            return isLikeNone(ret) ? 0 : addToExternrefTable0(ret);
        },
        __wbindgen_generic_0000000000000001: function(arg0, arg1) {
            // Cast intrinsic for `Ref(String) -> Externref`.
            const ret = getStringFromWasm0(arg0, arg1);
            return ret;
        },
        __wbindgen_init_externref_table: function() {
            const table = wasm.__wbindgen_externrefs;
            table.set(0, undefined);
            table.set(1024, undefined);
            table.set(1025, null);
            table.set(1026, true);
            table.set(1027, false);
        },
    };
    return {
        __proto__: null,
        "./shoal_js_bg.js": import0,
    };
}

const SearchOutputFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_searchoutput_free(ptr, 1));
const SegmentBufferFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_segmentbuffer_free(ptr, 1));
const SetOpenerFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_setopener_free(ptr, 1));
const WasmCollectionFinalization = (typeof FinalizationRegistry === 'undefined')
    ? { register: () => {}, unregister: () => {} }
    : new FinalizationRegistry(ptr => wasm.__wbg_wasmcollection_free(ptr, 1));

function addToExternrefTable0(obj) {
    const idx = wasm.__externref_table_alloc();
    wasm.__wbindgen_externrefs.set(idx, obj);
    return idx;
}

function _assertClass(instance, klass) {
    if (!(instance instanceof klass)) {
        throw new Error(`expected instance of ${klass.name}`);
    }
}

function getArrayF32FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getFloat32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}

function getArrayJsValueFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    const mem = getDataViewMemory0();
    const result = [];
    for (let i = ptr; i < ptr + 4 * len; i += 4) {
        result.push(wasm.__wbindgen_externrefs.get(mem.getUint32(i, true)));
    }
    wasm.__externref_drop_slice(ptr, len);
    return result;
}

function getArrayU32FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint32ArrayMemory0().subarray(ptr / 4, ptr / 4 + len);
}

function getArrayU64FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getBigUint64ArrayMemory0().subarray(ptr / 8, ptr / 8 + len);
}

function getArrayU8FromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);
}

let cachedBigUint64ArrayMemory0 = null;
function getBigUint64ArrayMemory0() {
    if (cachedBigUint64ArrayMemory0 === null || cachedBigUint64ArrayMemory0.byteLength === 0) {
        cachedBigUint64ArrayMemory0 = new BigUint64Array(wasm.memory.buffer);
    }
    return cachedBigUint64ArrayMemory0;
}

let cachedDataViewMemory0 = null;
function getDataViewMemory0() {
    if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || (cachedDataViewMemory0.buffer.detached === undefined && cachedDataViewMemory0.buffer !== wasm.memory.buffer)) {
        cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
    }
    return cachedDataViewMemory0;
}

let cachedFloat32ArrayMemory0 = null;
function getFloat32ArrayMemory0() {
    if (cachedFloat32ArrayMemory0 === null || cachedFloat32ArrayMemory0.byteLength === 0) {
        cachedFloat32ArrayMemory0 = new Float32Array(wasm.memory.buffer);
    }
    return cachedFloat32ArrayMemory0;
}

let cachedFloat64ArrayMemory0 = null;
function getFloat64ArrayMemory0() {
    if (cachedFloat64ArrayMemory0 === null || cachedFloat64ArrayMemory0.byteLength === 0) {
        cachedFloat64ArrayMemory0 = new Float64Array(wasm.memory.buffer);
    }
    return cachedFloat64ArrayMemory0;
}

function getStringFromWasm0(ptr, len) {
    ptr = ptr >>> 0;
    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
}

let cachedUint32ArrayMemory0 = null;
function getUint32ArrayMemory0() {
    if (cachedUint32ArrayMemory0 === null || cachedUint32ArrayMemory0.byteLength === 0) {
        cachedUint32ArrayMemory0 = new Uint32Array(wasm.memory.buffer);
    }
    return cachedUint32ArrayMemory0;
}

let cachedUint8ArrayMemory0 = null;
function getUint8ArrayMemory0() {
    if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
        cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
    }
    return cachedUint8ArrayMemory0;
}

function handleError(f, args) {
    try {
        return f.apply(this, args);
    } catch (e) {
        const idx = addToExternrefTable0(e);
        wasm.__wbindgen_exn_store(idx);
    }
}

function isLikeNone(x) {
    return x === undefined || x === null;
}

function passArray32ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 4, 4) >>> 0;
    getUint32ArrayMemory0().set(arg, ptr / 4);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArray64ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 8, 8) >>> 0;
    getBigUint64ArrayMemory0().set(arg, ptr / 8);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArray8ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 1, 1) >>> 0;
    getUint8ArrayMemory0().set(arg, ptr / 1);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArrayF32ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 4, 4) >>> 0;
    getFloat32ArrayMemory0().set(arg, ptr / 4);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passArrayF64ToWasm0(arg, malloc) {
    const ptr = malloc(arg.length * 8, 8) >>> 0;
    getFloat64ArrayMemory0().set(arg, ptr / 8);
    WASM_VECTOR_LEN = arg.length;
    return ptr;
}

function passStringToWasm0(arg, malloc, realloc) {
    if (realloc === undefined) {
        const buf = cachedTextEncoder.encode(arg);
        const ptr = malloc(buf.length, 1) >>> 0;
        getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
        WASM_VECTOR_LEN = buf.length;
        return ptr;
    }

    let len = arg.length;
    let ptr = malloc(len, 1) >>> 0;

    const mem = getUint8ArrayMemory0();

    let offset = 0;

    for (; offset < len; offset++) {
        const code = arg.charCodeAt(offset);
        if (code > 0x7F) break;
        mem[ptr + offset] = code;
    }
    if (offset !== len) {
        if (offset !== 0) {
            arg = arg.slice(offset);
        }
        ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
        const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
        const ret = cachedTextEncoder.encodeInto(arg, view);

        offset += ret.written;
        ptr = realloc(ptr, len, offset, 1) >>> 0;
    }

    WASM_VECTOR_LEN = offset;
    return ptr;
}

function takeFromExternrefTable0(idx) {
    const value = wasm.__wbindgen_externrefs.get(idx);
    wasm.__externref_table_dealloc(idx);
    return value;
}

let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
cachedTextDecoder.decode();
const MAX_SAFARI_DECODE_BYTES = 2146435072;
let numBytesDecoded = 0;
function decodeText(bytes) {
    numBytesDecoded += bytes.length;
    if (numBytesDecoded >= MAX_SAFARI_DECODE_BYTES) {
        cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
        cachedTextDecoder.decode();
        numBytesDecoded = bytes.length;
    }
    return cachedTextDecoder.decode(bytes);
}

const cachedTextEncoder = new TextEncoder();

if (!('encodeInto' in cachedTextEncoder)) {
    cachedTextEncoder.encodeInto = function (arg, view) {
        const buf = cachedTextEncoder.encode(arg);
        view.set(buf);
        return {
            read: arg.length,
            written: buf.length
        };
    };
}

let WASM_VECTOR_LEN = 0;

let wasmModule, wasmInstance, wasm;
function __wbg_finalize_init(instance, module) {
    wasmInstance = instance;
    wasm = instance.exports;
    wasmModule = module;
    cachedBigUint64ArrayMemory0 = null;
    cachedDataViewMemory0 = null;
    cachedFloat32ArrayMemory0 = null;
    cachedFloat64ArrayMemory0 = null;
    cachedUint32ArrayMemory0 = null;
    cachedUint8ArrayMemory0 = null;
    wasm.__wbindgen_start();
    return wasm;
}

async function __wbg_load(module, imports) {
    if (typeof Response === 'function' && module instanceof Response) {
        if (!module.ok) {
            throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
        }

        if (typeof WebAssembly.instantiateStreaming === 'function') {
            try {
                return await WebAssembly.instantiateStreaming(module, imports);
            } catch (e) {
                const validResponse = expectedResponseType(module.type);

                if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                    console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                } else { throw e; }
            }
        }

        const bytes = await module.arrayBuffer();
        return await WebAssembly.instantiate(bytes, imports);
    } else {
        const instance = await WebAssembly.instantiate(module, imports);

        if (instance instanceof WebAssembly.Instance) {
            return { instance, module };
        } else {
            return instance;
        }
    }

    function expectedResponseType(type) {
        switch (type) {
            case 'basic': case 'cors': case 'default': return true;
        }
        return false;
    }
}

function initSync(module) {
    if (wasm !== undefined) return wasm;


    if (module !== undefined) {
        if (Object.getPrototypeOf(module) === Object.prototype) {
            ({module} = module)
        } else {
            console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
        }
    }

    const imports = __wbg_get_imports();
    if (!(module instanceof WebAssembly.Module)) {
        module = new WebAssembly.Module(module);
    }
    const instance = new WebAssembly.Instance(module, imports);
    return __wbg_finalize_init(instance, module);
}

let __wbg_init_promise;
async function __wbg_init(module_or_path) {
    if (wasm !== undefined) return wasm;
    if (__wbg_init_promise === undefined) {
        __wbg_init_promise = __wbg_init_once(module_or_path);
        __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
    }
    return __wbg_init_promise;
}

async function __wbg_init_once(module_or_path) {

    if (module_or_path !== undefined) {
        if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
            ({module_or_path} = module_or_path)
        } else {
            console.warn('using deprecated parameters for the initialization function; pass a single object instead')
        }
    }

    if (module_or_path === undefined) {
        module_or_path = new URL('shoal_js_bg.wasm', import.meta.url);
    }
    const imports = __wbg_get_imports();

    if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
        module_or_path = fetch(module_or_path);
    }

    const { instance, module } = await __wbg_load(await module_or_path, imports);

    return __wbg_finalize_init(instance, module);
}

export { initSync, __wbg_init as default };
