//! Shoal for JavaScript: the wasm-bindgen layer under the npm package `shoal`.
//!
//! This crate is deliberately thin: every call forwards to [`shoal_core::Collection`], and
//! everything JavaScript-specific (typed arrays, `BigInt` ids, the `ShoalError` class) lives in
//! `js/collection.js` (and the rest of `js/`). Bulk inserts go through wasm memory without a per-float copy: JavaScript calls
//! [`WasmCollection::reserve`], asks for [`WasmCollection::pending_ids_ptr`] and
//! [`WasmCollection::pending_vectors_ptr`] (byte offsets into the module's linear memory, valid
//! until the next call that may allocate), fills typed-array views at those offsets and calls
//! [`WasmCollection::commit`].
//!
//! The module is built twice, with and without `-C target-feature=+simd128`; the kernels are
//! chosen at compile time ([`Kernels::best`]), and both builds return bit-identical results.
//!
//! No function here may be named `memory`: the linear memory is exported under that name.
//!
//! The kernel benchmark exports ([`bench`]) exist only with the `bench` feature, in the
//! benchmark build of the package (`SHOAL_JS_FEATURES=bench`), never in the published one.
//!
//! In wasm the crate is `no_std`: dlmalloc (std's own allocator on this target) is the global
//! allocator, and a panic traps at once. Nothing ever shows a panic's message here (the JS
//! side sees the trap and marks the instance unusable, `checkNotTrapped`), so the code that
//! would format those messages — `Debug` impls, Unicode tables, location printing — leaves the
//! package (the size budget).

#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOC: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// A panic traps (`unreachable`), as std's `panic = "abort"` does on this target, without
/// formatting its message first.
#[cfg(target_arch = "wasm32")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use shoal_core::{
    Collection, CollectionConfig, Error, IdEncoding, IndexKind, Kernels, Metric, PointId, SearchRequest,
    SearchResponse, point_id_from_json,
};
use wasm_bindgen::prelude::*;

#[cfg(feature = "bench")]
pub mod bench;

/// Largest id a JavaScript number represents exactly (2^53).
const MAX_SAFE_ID: f64 = 9_007_199_254_740_992.0;

/// Turns a core error into a JavaScript `Error` whose message is the error's `Display` and
/// whose `code` property is [`Error::code`]. The JS wrapper rethrows it as a `ShoalError`.
fn js_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&e.to_string());
    err.set_name("ShoalError");
    // Setting a property on a fresh ordinary object cannot fail.
    let _ = js_sys::Reflect::set(&err, &JsValue::from_str("code"), &JsValue::from_str(e.code()));
    err.into()
}

/// An aligned buffer in wasm memory that JavaScript copies a segment into (at once, or chunk
/// by chunk from a stream), then opens in place: the segment's only copy in wasm memory.
#[wasm_bindgen]
pub struct SegmentBuffer {
    bytes: shoal_core::AlignedBytes,
}

#[wasm_bindgen]
impl SegmentBuffer {
    /// A zeroed buffer of `len` bytes; `capacity_exceeded` when wasm memory cannot hold it.
    #[wasm_bindgen(constructor)]
    pub fn new(len: usize) -> Result<SegmentBuffer, JsValue> {
        match shoal_core::AlignedBytes::try_zeroed(len) {
            Some(bytes) => Ok(SegmentBuffer { bytes }),
            None => Err(js_error(&Error::CapacityExceeded)),
        }
    }

    /// Its address in wasm memory (stable until it is opened or freed).
    pub fn ptr(&mut self) -> *mut u8 {
        self.bytes.as_mut_slice().as_mut_ptr()
    }

    /// Opens the segment written into the buffer (cheap checks only), which it then owns.
    pub fn open(self) -> Result<WasmCollection, JsValue> {
        let inner = Collection::open(Box::new(self.bytes)).map_err(|e| js_error(&e))?;
        Ok(WasmCollection::wrap(inner))
    }
}

/// Opens a segment set: JavaScript gives the manifest, then every file it names
/// ([`SetOpener::files`]): segments through [`SegmentBuffer`]s (copied once into wasm memory),
/// live-rows files as bytes.
#[wasm_bindgen]
pub struct SetOpener {
    manifest: shoal_core::set::Manifest,
    segments: Vec<(String, shoal_core::AlignedBytes)>,
    live: Vec<(String, Vec<u8>)>,
}

#[wasm_bindgen]
impl SetOpener {
    /// Parses and checks a manifest (`docs/format.md`, "Collections as segment sets").
    #[wasm_bindgen(constructor)]
    pub fn new(manifest: &str) -> Result<SetOpener, JsValue> {
        let manifest = shoal_core::set::Manifest::from_json(manifest.as_bytes()).map_err(|e| js_error(&e))?;
        Ok(SetOpener { manifest, segments: Vec::new(), live: Vec::new() })
    }

    /// The files the manifest names, segments first (in set order), then live-rows files.
    pub fn files(&self) -> Vec<String> {
        let segments = self.manifest.segments.iter().map(|s| s.file.clone());
        let live = self.manifest.segments.iter().filter_map(|s| s.live.as_ref().map(|l| l.file.clone()));
        segments.chain(live).collect()
    }

    /// Hands over a segment file (its buffer is then owned here).
    pub fn add_segment(&mut self, name: String, buffer: SegmentBuffer) {
        self.segments.push((name, buffer.bytes));
    }

    /// Hands over a live-rows file.
    pub fn add_live(&mut self, name: String, bytes: &[u8]) {
        self.live.push((name, bytes.to_vec()));
    }

    /// Opens the set (cheap checks of every file against the manifest).
    pub fn open(self) -> Result<WasmCollection, JsValue> {
        let SetOpener { manifest, mut segments, live } = self;
        let missing = |name: &str| Error::BadSet(format!("{name}: file not given"));
        let inner = Collection::open_set(
            &manifest,
            &mut |e| {
                let i = segments.iter().position(|s| s.0 == e.file).ok_or_else(|| missing(&e.file))?;
                Ok(Box::new(segments.swap_remove(i).1))
            },
            &mut |l| live.iter().find(|f| f.0 == l.file).map(|f| f.1.clone()).ok_or_else(|| missing(&l.file)),
        )
        .map_err(|e| js_error(&e))?;
        Ok(WasmCollection::wrap(inner))
    }
}

/// A Shoal collection living in wasm memory.
#[wasm_bindgen]
pub struct WasmCollection {
    inner: Collection,
    /// Sparse vectors staged for the next commit ([`WasmCollection::stage_sparse`]).
    staged: Vec<Vec<Option<shoal_core::SparseVector>>>,
    /// Dense vectors `1..` staged for the next commit ([`WasmCollection::stage_dense`]).
    staged_dense: Vec<Vec<f32>>,
}

impl WasmCollection {
    /// The collection as one sealed segment, every change in (compacting is a no-op when it
    /// already is one, and always leaves a segment).
    fn sealed_now(&mut self) -> Result<&shoal_core::SealedSegment, JsValue> {
        self.inner.compact().map_err(|e| js_error(&e))?;
        Ok(self.inner.segment(0).expect("a compaction leaves one segment"))
    }

    fn wrap(mut inner: Collection) -> WasmCollection {
        inner.set_clock(Box::new(now_micros as fn() -> u64));
        WasmCollection { inner, staged: Vec::new(), staged_dense: Vec::new() }
    }
}

/// `performance.now()` (or `Date.now()` where there is no `performance`) in microseconds: the
/// clock of `timeout_ms`.
fn now_micros() -> u64 {
    let global = js_sys::global();
    let perf = js_sys::Reflect::get(&global, &JsValue::from_str("performance")).unwrap_or(JsValue::UNDEFINED);
    if !perf.is_undefined() {
        let now = js_sys::Reflect::get(&perf, &JsValue::from_str("now")).unwrap_or(JsValue::UNDEFINED);
        if let Some(f) = now.dyn_ref::<js_sys::Function>()
            && let Some(ms) = f.call0(&perf).ok().and_then(|v| v.as_f64())
        {
            return (ms * 1000.0) as u64;
        }
    }
    (js_sys::Date::now() * 1000.0) as u64
}

#[wasm_bindgen]
impl WasmCollection {
    /// An empty collection of `dim`-dimensional vectors compared with `metric`
    /// (`"l2"`, `"dot"` or `"cosine"`); `fields`, when given, is the payload schema as JSON
    /// (`{"tag": "keyword", "year": "integer"}`); `nested`: payloads are any JSON objects and
    /// `fields` declare paths (`docs/format.md`, "Nested payloads"); `sparse`, when given, the
    /// sparse vectors as JSON (`{"name": {"modifier": "none" | "idf"}}`); `vectors`, when
    /// given, the dense vectors as JSON (`{"name": {"dim": 384, "metric": "cosine"}}`), which
    /// replace `dim` and `metric`.
    #[wasm_bindgen(constructor)]
    pub fn new(
        dim: usize,
        metric: &str,
        fields: Option<String>,
        nested: bool,
        sparse: Option<String>,
        vectors: Option<String>,
    ) -> Result<WasmCollection, JsValue> {
        let metric = Metric::parse(metric)
            .ok_or_else(|| js_error(&Error::InvalidConfig("metric must be \"l2\", \"dot\" or \"cosine\"")))?;
        let config = CollectionConfig { dim, metric };
        let inner = match fields.as_deref().or(nested.then_some("{}")) {
            None => Collection::new(config),
            Some(json) => serde_json::from_slice(json.as_bytes())
                .map_err(|_| Error::InvalidConfig("fields must be an object of field name -> type"))
                .and_then(|v| if nested { Collection::parse_nested_schema(&v) } else { Collection::parse_schema(&v) })
                .and_then(|schema| Collection::with_schema(config, schema)),
        }
        .and_then(|mut col| {
            if let Some(json) = sparse {
                let v = serde_json::from_slice(json.as_bytes()).unwrap_or_default();
                col.set_sparse_vectors(shoal_core::SparseSpec::list_from_value(&v, false)?)?;
            }
            if let Some(json) = vectors {
                let v = serde_json::from_slice(json.as_bytes()).unwrap_or_default();
                col.set_dense_vectors(shoal_core::DenseSpec::list_from_value(&v)?)?;
            }
            Ok(col)
        })
        .map_err(|e| js_error(&e))?;
        Ok(WasmCollection::wrap(inner))
    }

    /// Reserves a batch of `n` points, dropping any batch reserved before and not committed.
    /// May grow wasm memory: call the `pending_*_ptr` methods afterwards.
    pub fn reserve(&mut self, n: usize) -> Result<(), JsValue> {
        // Vectors staged for an earlier batch never reach this one.
        self.staged.clear();
        self.staged_dense.clear();
        self.inner.reserve(n).map_err(|e| js_error(&e))
    }

    /// Byte offset in wasm memory of the reserved batch's id slots (8 bytes each).
    pub fn pending_ids_ptr(&mut self) -> usize {
        self.inner.pending_ids().as_mut_ptr() as usize
    }

    /// Byte offset in wasm memory of the reserved batch's vectors (`n * dim` f32, row-major).
    pub fn pending_vectors_ptr(&mut self) -> usize {
        self.inner.pending_vectors().as_mut_ptr() as usize
    }

    /// Checks the reserved batch and makes it visible; returns the number of points committed.
    ///
    /// `ids_are_f64` says the id slots hold JavaScript numbers (written through a
    /// `Float64Array` view) rather than `u64`s; they must then be integers in `0..=2^53`.
    /// `payloads`, when given, is a JSON array with one payload object (or `null`) per point.
    /// `ids`, when given, is a JSON array of the batch's ids (integers and UUID strings, mixed)
    /// and the id slots are ignored. The dense vectors `1..` and sparse vectors staged since the
    /// last commit go with the batch. On error the batch is dropped and the collection is
    /// unchanged.
    pub fn commit(
        &mut self,
        ids_are_f64: bool,
        payloads: Option<String>,
        ids: Option<String>,
    ) -> Result<usize, JsValue> {
        let sparse = core::mem::take(&mut self.staged);
        let dense = core::mem::take(&mut self.staged_dense);
        let enc = if ids_are_f64 { IdEncoding::F64 } else { IdEncoding::U64 };
        let parsed = payloads
            .map_or(Ok(Vec::new()), |json| {
                serde_json::from_slice(json.as_bytes()).map_err(|e| Error::InvalidRequest(format!("payloads: {e}")))
            })
            .and_then(|p| Ok((p, ids.as_deref().map(parse_ids).transpose()?)));
        let (payloads, ids): (Vec<serde_json::Value>, _) = match parsed {
            Ok(p) => p,
            Err(e) => {
                // Drop the batch, as every failed commit does.
                let _ = self.inner.reserve(0);
                return Err(js_error(&e));
            }
        };
        let extra: Vec<&[f32]> = dense.iter().map(Vec::as_slice).collect();
        self.inner.commit_vectors(enc, ids.as_deref(), &payloads, (&extra, &sparse)).map_err(|e| js_error(&e))
    }

    /// Stages dense vector `name` (one of vectors `1..`: vector 0 fills the reserved batch) of
    /// the reserved batch's points, row-major; checked at commit, with the batch.
    pub fn stage_dense(&mut self, name: &str, vectors: Vec<f32>) -> Result<(), JsValue> {
        let d = self.dense_position(name)?;
        if d == 0 {
            return Err(js_error(&Error::InvalidRequest(format!("\"{name}\" is the reserved batch's vector"))));
        }
        self.staged_dense.resize_with(self.inner.dense_vectors().len() - 1, Vec::new);
        self.staged_dense[d - 1] = vectors;
        Ok(())
    }

    /// The dense vectors' names, in order (vector 0 first: the one the reserved batch holds).
    pub fn dense_names(&self) -> Vec<String> {
        self.inner.dense_vectors().iter().map(|d| d.name.clone()).collect()
    }

    /// Stages sparse vector `name` of the reserved batch's points (call after
    /// [`reserve`](Self::reserve), which drops what was staged): point `i` holds `counts[i]`
    /// pairs (`0xFFFF_FFFF`: it does not hold the vector), taken in order from `indices` and
    /// `values`. Each pair list is checked here: a typed error drops every staged vector.
    pub fn stage_sparse(&mut self, name: &str, counts: &[u32], indices: &[u32], values: &[f32]) -> Result<(), JsValue> {
        let staged = self.staged_column(name, counts, indices, values);
        if staged.is_err() {
            self.staged.clear();
        }
        staged
    }
}

impl WasmCollection {
    /// The number of dense vector `name`, or a typed error naming it.
    fn dense_position(&self, name: &str) -> Result<usize, JsValue> {
        self.inner
            .dense_position(name)
            .ok_or_else(|| js_error(&Error::InvalidRequest(format!("the collection has no dense vector \"{name}\""))))
    }

    fn staged_column(&mut self, name: &str, counts: &[u32], indices: &[u32], values: &[f32]) -> Result<(), JsValue> {
        let bad = |m: String| js_error(&Error::InvalidRequest(m));
        let t = self
            .inner
            .sparse_position(name)
            .ok_or_else(|| bad(format!("sparse: the collection has no sparse vector \"{name}\"")))?;
        let mut column = Vec::with_capacity(counts.len());
        let mut at = 0usize;
        for &c in counts {
            if c == u32::MAX {
                column.push(None);
                continue;
            }
            let end = at.saturating_add(c as usize);
            let (Some(ix), Some(vs)) = (indices.get(at..end), values.get(at..end)) else {
                return Err(bad("sparse: the pair counts exceed the pairs given".into()));
            };
            column.push(Some(shoal_core::SparseVector::new(ix, vs).map_err(|e| bad(format!("sparse.{name}: {e}")))?));
            at = end;
        }
        self.staged.resize_with(self.inner.sparse_vectors().len(), Vec::new);
        self.staged[t] = column;
        Ok(())
    }
}

#[wasm_bindgen]
impl WasmCollection {
    /// Deletes points by id (a `BigUint64Array`); returns how many existed.
    pub fn delete(&mut self, ids: &[u64]) -> Result<usize, JsValue> {
        let ids: Vec<PointId> = ids.iter().map(|&id| PointId::Num(id)).collect();
        self.inner.delete(&ids).map_err(|e| js_error(&e))
    }

    /// Deletes points by id given as a JSON array (integers and UUID strings, mixed); nothing
    /// is deleted when one is not an id. Returns how many existed.
    pub fn delete_json(&mut self, ids: &str) -> Result<usize, JsValue> {
        let ids = parse_ids(ids).map_err(|e| js_error(&e))?;
        self.inner.delete(&ids).map_err(|e| js_error(&e))
    }

    /// Deletes points by id given as JavaScript numbers (a `Float64Array`); every id must be
    /// an integer in `0..=2^53`, otherwise nothing is deleted. Returns how many existed.
    pub fn delete_f64(&mut self, ids: &[f64]) -> Result<usize, JsValue> {
        let mut converted = Vec::with_capacity(ids.len());
        for (point, &x) in ids.iter().enumerate() {
            if !(0.0..=MAX_SAFE_ID).contains(&x) || x != (x as u64) as f64 {
                return Err(js_error(&Error::InvalidId { point }));
            }
            converted.push(PointId::Num(x as u64));
        }
        self.inner.delete(&converted).map_err(|e| js_error(&e))
    }

    /// Merges everything into one sealed segment, with the index it had.
    pub fn seal(&mut self) {
        self.inner.seal();
    }

    /// Seals with the index of the JSON seal options (`{"index": "ivf-rabitq", ...}`, parsed by
    /// `IndexKind::from_json`); later seals rebuild the same kind of index.
    pub fn seal_with(&mut self, options: &str) -> Result<(), JsValue> {
        let kind = IndexKind::from_json(options).map_err(|e| js_error(&e))?;
        self.inner.seal_with(kind).map_err(|e| js_error(&e))
    }

    /// The sealed segment without its vectors (`SealedSegment::without_vectors`): a codes-only
    /// segment for [`search_reranked`](Self::search_reranked).
    pub fn segment_without_vectors(&mut self) -> Result<js_sys::Uint8Array, JsValue> {
        let seg = self.sealed_now()?;
        Ok(js_sys::Uint8Array::from(seg.without_vectors().map_err(|e| js_error(&e))?.as_slice()))
    }

    /// Seals, then writes the collection as a segment set: `[manifest JSON, name, bytes, name,
    /// bytes, ...]` with every segment file and the live-rows files the manifest names that
    /// were not written by an earlier call.
    pub fn to_set(&mut self) -> js_sys::Array {
        self.inner.seal();
        let cp = self.inner.checkpoint(None);
        let out = js_sys::Array::new();
        out.push(&JsValue::from_str(&String::from_utf8_lossy(&cp.manifest.to_json())));
        for (i, info) in self.inner.segments().into_iter().enumerate() {
            let seg = self.inner.segment(i).expect("listed");
            out.push(&JsValue::from_str(&info.name));
            out.push(&js_sys::Uint8Array::from(seg.bytes()).into());
        }
        for (name, bytes) in &cp.live_files {
            out.push(&JsValue::from_str(name));
            out.push(&js_sys::Uint8Array::from(&bytes[..]).into());
        }
        self.inner.checkpoint_written(&cp);
        out
    }

    /// The sealed segment's vectors in row order (a `Float32Array`).
    pub fn stored_vectors(&mut self) -> Result<js_sys::Float32Array, JsValue> {
        let seg = self.sealed_now()?;
        let v = seg.vectors().ok_or_else(|| js_error(&Error::CodesOnly("stored vectors")))?;
        Ok(js_sys::Float32Array::from(v))
    }

    /// Whether the sealed segment keeps index codes only.
    pub fn codes_only(&self) -> bool {
        self.inner.codes_only()
    }

    /// `"flat"` or `"ivf-rabitq"`: the index the next seal builds.
    pub fn index(&self) -> String {
        match self.inner.index_kind() {
            IndexKind::Flat => "flat".into(),
            IndexKind::IvfRabitq(_) => "ivf-rabitq".into(),
        }
    }

    /// Number of live points.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether the collection holds no live point.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// The metric's canonical name.
    pub fn metric(&self) -> String {
        self.inner.metric().name().to_string()
    }

    /// Runs a search request given as JSON (the shape of `SearchRequest` in shoal-core; typed in `index.d.ts`). `vector`, when given,
    /// is the query vector (it replaces any `vector` field of the JSON).
    pub fn search(&self, json: &str, vector: Option<Vec<f32>>) -> Result<SearchOutput, JsValue> {
        let res = self.inner.search(&request(json, vector)?).map_err(|e| js_error(&e))?;
        Ok(SearchOutput { res, vectors: Vec::new() })
    }

    /// Points by id or by filter: the one export behind `get`, `count` and `scroll` in
    /// `js/collection.js` (one rather than three: the package's size budget). `json` is
    /// `{"ids": [...]}` (the live points among these ids, in their order) or
    /// `{"filter": F, "after": ID, "limit": N}` (the live points passing the filter, ids
    /// ascending and greater than `after`, at most `limit`); `"payload": true` adds their
    /// payloads, `"vector": true` their stored vectors ([`SearchOutput::vectors`]), which a
    /// codes-only collection does not have (`codes_only`). Scores are 0. (Stored sparse
    /// vectors are not read back here: the package's size budget.)
    pub fn points(&self, json: &str) -> Result<SearchOutput, JsValue> {
        use serde_json::Value;
        let req: Value =
            serde_json::from_slice(json.as_bytes()).map_err(|e| js_error(&Error::InvalidRequest(format!("{e}"))))?;
        let flag = |key: &str| req.get(key).and_then(Value::as_bool) == Some(true);
        // `"vector": true` is the first dense vector, `"vector": "name"` the one of that name.
        let d = match req.get("vector").and_then(Value::as_str) {
            Some(name) => Some(self.dense_position(name)?),
            None => flag("vector").then_some(0),
        };
        let (with_vector, with_payload) = (d.is_some(), flag("payload"));
        if with_vector && self.inner.codes_only() {
            return Err(js_error(&Error::CodesOnly("vectors")));
        }
        let all: Vec<PointId>;
        let ids = match req.get("ids").and_then(Value::as_array) {
            Some(ids) => {
                let ids = ids
                    .iter()
                    .enumerate()
                    .map(|(point, x)| point_id_from_json(x).ok_or(Error::InvalidId { point }))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| js_error(&e))?;
                all = ids.into_iter().filter(|&id| self.inner.contains(id)).collect();
                &all[..]
            }
            None => {
                all = self.inner.matching_ids(req.get("filter")).map_err(|e| js_error(&e))?;
                let after = match req.get("after").filter(|a| !a.is_null()) {
                    None => None,
                    Some(a) => Some(point_id_from_json(a).ok_or_else(|| js_error(&Error::InvalidId { point: 0 }))?),
                };
                let start = after.map_or(0, |a| all.partition_point(|&id| id <= a));
                let limit = req.get("limit").and_then(Value::as_u64).map_or(all.len(), |l| l as usize);
                &all[start..all.len().min(start.saturating_add(limit))]
            }
        };
        let mut vectors = Vec::new();
        let mut points = Vec::with_capacity(ids.len());
        for &id in ids {
            if with_vector {
                vectors.extend_from_slice(
                    self.inner
                        .dense_vector(id, d.unwrap_or(0))
                        .expect("a live point of a full collection has its vectors"),
                );
            }
            let payload = if with_payload { self.inner.payload(id) } else { None };
            points.push(shoal_core::ScoredPoint { id, score: 0.0, payload });
        }
        Ok(SearchOutput { res: SearchResponse { points, ..SearchResponse::default() }, vectors })
    }

    /// The payload fields as JSON (`{"name": "type", ...}`, `{}` when there are none) after
    /// adding `add` (the same shape, `{}` adding nothing) with `Collection::extend_schema`: a
    /// field already there must keep its type. One export for the `fields` getter and
    /// `extendSchema` of `js/collection.js`.
    pub fn fields(&mut self, add: &str) -> Result<String, JsValue> {
        let mut all: serde_json::Value = serde_json::from_slice(add.as_bytes())
            .map_err(|_| js_error(&Error::InvalidConfig("fields must be an object of field name -> type")))?;
        if let (Some(schema), Some(obj)) = (self.inner.schema(), all.as_object_mut()) {
            for (name, ty) in schema.fields() {
                obj.entry(name).or_insert(ty.name().into());
            }
        }
        let schema = Collection::parse_schema(&all).map_err(|e| js_error(&e))?;
        self.inner.extend_schema(schema).map_err(|e| js_error(&e))?;
        Ok(self.inner.schema().map_or_else(|| "{}".into(), |s| s.to_json()))
    }

    /// Lazy re-ranking, step 1 (`Collection::rerank_rows`): the rows (a `Uint32Array`, best
    /// estimate first) whose full vectors decide the search of a codes-only collection; with
    /// `below`, only those that can still score better than it.
    pub fn rerank_rows(&self, json: &str, vector: Option<Vec<f32>>, below: Option<f32>) -> Result<Vec<u32>, JsValue> {
        self.inner.rerank_rows(&request(json, vector)?, below).map_err(|e| js_error(&e))
    }

    /// Lazy re-ranking, step 2 (`Collection::search_reranked`): the search answered exactly
    /// over `rows` with their `vectors`.
    pub fn search_reranked(
        &self,
        json: &str,
        vector: Option<Vec<f32>>,
        rows: &[u32],
        vectors: &[f32],
    ) -> Result<SearchOutput, JsValue> {
        let res = self.inner.search_reranked(&request(json, vector)?, rows, vectors).map_err(|e| js_error(&e))?;
        Ok(SearchOutput { res, vectors: Vec::new() })
    }

    /// The collection as one sealed segment file (sealing and merging first), copied into a
    /// `Uint8Array`. A segment that fails its checksums is an error.
    pub fn to_bytes(&mut self) -> Result<js_sys::Uint8Array, JsValue> {
        Ok(js_sys::Uint8Array::from(self.inner.to_bytes().map_err(|e| js_error(&e))?))
    }

    /// Name of the kernel implementation in use: `"simd128"` or `"scalar"`.
    pub fn kernels(&self) -> String {
        self.inner.kernels().name().to_string()
    }

    /// Checks every checksum of the sealed segment.
    pub fn verify(&self) -> Result<(), JsValue> {
        self.inner.verify().map_err(|e| js_error(&e))
    }
}

/// Ids given as a JSON array: integers and UUID strings (read as a JSON value first: the
/// parser the package already has, not a deserializer of its own). An element that is neither
/// is `invalid_id` naming its place.
fn parse_ids(json: &str) -> Result<Vec<PointId>, Error> {
    let v: serde_json::Value =
        serde_json::from_slice(json.as_bytes()).map_err(|e| Error::InvalidRequest(format!("ids: {e}")))?;
    let list = v.as_array().ok_or_else(|| Error::InvalidRequest("ids: expected an array".into()))?;
    list.iter().enumerate().map(|(point, x)| point_id_from_json(x).ok_or(Error::InvalidId { point })).collect()
}

/// A search request from its JSON and, when given, the query vector (it replaces any `vector`
/// field of the JSON).
fn request(json: &str, vector: Option<Vec<f32>>) -> Result<SearchRequest, JsValue> {
    let mut req = SearchRequest::from_json(json).map_err(|e| js_error(&e))?;
    if vector.is_some() {
        req.vector = vector;
    }
    Ok(req)
}

/// The result of [`WasmCollection::search`] (and of [`WasmCollection::points`]).
#[wasm_bindgen]
pub struct SearchOutput {
    res: SearchResponse,
    /// The points' vectors, row-major, when [`WasmCollection::points`] was asked for them.
    vectors: Vec<f32>,
}

#[wasm_bindgen]
impl SearchOutput {
    /// External ids, best first (a `BigUint64Array`; `0` for a UUID, see [`uuids`](Self::uuids)).
    pub fn ids(&self) -> Vec<u64> {
        self.res.points.iter().map(|p| p.id.as_num().unwrap_or(0)).collect()
    }

    /// Empty when no id is a UUID; otherwise 17 bytes per point aligned with
    /// [`ids`](Self::ids): `1` and the UUID's 16 bytes, or `0` and 16 zeros for an integer id.
    pub fn uuids(&self) -> Vec<u8> {
        if self.res.points.iter().all(|p| p.id.as_num().is_some()) {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(17 * self.res.points.len());
        for p in &self.res.points {
            match p.id {
                PointId::Uuid(u) => {
                    out.push(1);
                    out.extend_from_slice(&u);
                }
                PointId::Num(_) => out.extend_from_slice(&[0; 17]),
            }
        }
        out
    }

    /// Scores aligned with [`ids`](Self::ids) (a `Float32Array`).
    pub fn scores(&self) -> Vec<f32> {
        self.res.points.iter().map(|p| p.score).collect()
    }

    /// The vectors of [`WasmCollection::points`] aligned with [`ids`](Self::ids), row-major
    /// (a `Float32Array`; empty unless asked for).
    pub fn vectors(&self) -> js_sys::Float32Array {
        js_sys::Float32Array::from(&self.vectors[..])
    }

    /// Whether a deadline cut the search short.
    pub fn partial(&self) -> bool {
        self.res.partial
    }

    /// The search statistics as JSON.
    pub fn stats_json(&self) -> String {
        serde_json::to_string(&self.res.stats).unwrap_or_default() // cannot fail
    }

    /// The payloads aligned with [`ids`](Self::ids) as a JSON array, when the request asked
    /// `with_payload`.
    pub fn payloads_json(&self) -> Option<String> {
        let all: Option<Vec<&serde_json::Value>> = self.res.points.iter().map(|p| p.payload.as_ref()).collect();
        all.filter(|a| !a.is_empty()).map(|a| serde_json::to_string(&a).unwrap_or_default() /* cannot fail */)
    }
}

/// Name of the kernel implementation this build uses: `"simd128"` or `"scalar"`.
#[wasm_bindgen]
pub fn kernels_name() -> String {
    Kernels::best().name().to_string()
}
