use alloc::boxed::Box;
use alloc::format;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::AlignedBytes;
use shoal_index::ivf::{Bounds, IvfData, IvfIndex, IvfQuery, IvfScratch, IvfSearch, Prefetch, Refined};
use shoal_index::order::{f32_key, f32_of};
use shoal_index::{Candidate, FlatScan, FlatScratch, Metric, TopK, normalize};
use shoal_kernels::Kernels;
use shoal_payload::{CompiledFilter, Filter, PayloadView, Schema, parse_payload, reference};
use shoal_text::{Clock, Deadline, Query, TextIndex};

use crate::bitset::Bitset;
use crate::mutable::Mutable;
use crate::pool::Pool;
use crate::sealed::PayloadInput;
use crate::text;
use crate::{Error, IndexKind, ScoredPoint, SealedSegment, SearchRequest, SearchResponse, SearchStats, SegmentBytes};

/// What a new collection holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectionConfig {
    /// Vector dimension, 1..=65536.
    pub dim: usize,
    /// How vectors are compared.
    pub metric: Metric,
}

/// How the ids of a reserved batch are encoded when it is committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdEncoding {
    /// Each slot holds a `u64`.
    U64,
    /// Each slot holds the bits of an `f64` (a JavaScript number) that must be an integer in
    /// `0..=2^53`; commit converts it in place.
    F64,
}

/// Largest id a JavaScript number represents exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A filtered search scans the matching points exactly when there are at most this many per
/// requested result (`offset + limit`) ...
pub const FILTER_EXACT_PER_RESULT: u64 = 64;
/// ... or at most this fraction (1 / `FILTER_EXACT_DIVISOR`, 5%) of the sealed rows; beyond
/// both it searches the IVF index with the filter checked on each candidate. (On GloVe 400k,
/// scanning 5% of the rows exactly costs about what a default IVF search does.)
pub const FILTER_EXACT_DIVISOR: u64 = 20;

/// Rows per batch-kernel call when scoring chosen rows exactly (a filter's few matches).
const EXACT_BLOCK: usize = 32;

/// A set of points (external `u64` id + vector, and a JSON payload when the collection has a
/// schema) that can be searched.
///
/// Inserting an id that exists replaces the old point (upsert). Internal ids, which break score
/// ties, number the sealed segment's rows first, then the mutable segment's in insertion order.
pub struct Collection {
    dim: usize,
    metric: Metric,
    /// Payload fields (`None`: points carry no payload).
    schema: Option<Schema>,
    /// Overrides the planner's exact-scan limit (tests and benchmarks).
    filter_exact_limit: Option<u64>,
    kernels: Kernels,
    sealed: Option<SealedSegment>,
    sealed_deleted: Bitset,
    mutable: Mutable,
    /// The index the next seal builds.
    index: IndexKind,
    /// Whether `index` differs from what the sealed segment carries.
    reindex: bool,
    /// Per-query buffers, reused across searches.
    scratch: Pool<QueryScratch>,
    /// The host's clock, for `timeout_ms`.
    clock: Option<Box<dyn Clock + Send + Sync>>,
}

/// The text ranking of a request: `(internal id, BM25 score)` best first, whether the
/// deadline fired, and counters.
struct TextRanking {
    hits: Vec<(usize, f32)>,
    partial: bool,
    stats: SearchStats,
}

/// The buffers of one search.
#[derive(Default)]
struct QueryScratch {
    query: Vec<f32>,
    topk: TopK,
    best: Vec<Candidate>,
    flat: FlatScratch,
    ivf: IvfScratch,
}

/// Scratch slots per collection: enough for the native host's query threads.
const SCRATCH_SLOTS: usize = 16;

impl core::fmt::Debug for Collection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Collection")
            .field("dim", &self.dim)
            .field("metric", &self.metric)
            .field("len", &self.len())
            .field("kernels", &self.kernels)
            .finish()
    }
}

impl Collection {
    /// An empty collection.
    pub fn new(config: CollectionConfig) -> Result<Collection, Error> {
        if config.dim == 0 || config.dim > shoal_format::MAX_DIM as usize {
            return Err(Error::InvalidConfig("dim must be in 1..=65536"));
        }
        Ok(Collection {
            dim: config.dim,
            metric: config.metric,
            schema: None,
            filter_exact_limit: None,
            kernels: Kernels::best(),
            sealed: None,
            sealed_deleted: Bitset::default(),
            mutable: Mutable::default(),
            index: IndexKind::Flat,
            reindex: false,
            scratch: Pool::new(SCRATCH_SLOTS),
            clock: None,
        })
    }

    /// An empty collection whose points carry payloads of the given fields (an empty schema
    /// means no payloads, as [`new`](Self::new)).
    ///
    /// ```
    /// use shoal_core::{Collection, CollectionConfig, Metric, Schema, SearchRequest};
    /// let schema = Schema::from_json(r#"{"tag": "keyword", "year": "integer"}"#).unwrap();
    /// let mut col = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema).unwrap();
    /// let payloads = [serde_json::json!({"tag": "a", "year": 2001}), serde_json::json!({"tag": "b"})];
    /// col.insert_with_payloads(&[1, 2], &[0.0, 0.0, 1.0, 1.0], &payloads).unwrap();
    /// let req = SearchRequest::from_json(
    ///     r#"{"vector": [1, 1], "filter": {"must": [{"key": "tag", "match": {"value": "a"}}]}, "with_payload": true}"#,
    /// ).unwrap();
    /// let res = col.search(&req).unwrap();
    /// assert_eq!(res.points.len(), 1);
    /// assert_eq!(res.points[0].payload, Some(payloads[0].clone()));
    /// ```
    pub fn with_schema(config: CollectionConfig, schema: Schema) -> Result<Collection, Error> {
        let mut col = Collection::new(config)?;
        col.schema = (!schema.is_empty()).then_some(schema);
        Ok(col)
    }

    /// Parses a schema given as JSON (`{"title": "text", "tag": "keyword", "year": "integer"}`;
    /// types `keyword`, `integer`, `float`, `bool`, `text`) for [`with_schema`](Self::with_schema).
    pub fn parse_schema(json: &serde_json::Value) -> Result<Schema, Error> {
        Schema::from_value(json).map_err(Error::InvalidSchema)
    }

    /// The payload fields (`None` when points carry no payload).
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// Overrides the planner of filtered searches: scan the sealed segment's matching points
    /// exactly when at most `limit` live points match, else search the IVF index (`None`
    /// restores the default rule, see [`FILTER_EXACT_DIVISOR`]). For tests and benchmarks.
    pub fn set_filter_exact_limit(&mut self, limit: Option<u64>) {
        self.filter_exact_limit = limit;
    }

    /// Gives the collection a monotonic clock (microseconds), which requests with `timeout_ms`
    /// need: the host supplies it (`Instant` natively, `performance.now()` in JavaScript).
    pub fn set_clock(&mut self, clock: Box<dyn Clock + Send + Sync>) {
        self.clock = Some(clock);
    }

    /// Opens a sealed segment (cheap checks only; see [`verify`](Self::verify)).
    pub fn open(storage: Box<dyn SegmentBytes>) -> Result<Collection, Error> {
        let seg = SealedSegment::open(storage)?;
        let mut col = Collection::new(CollectionConfig { dim: seg.dim(), metric: seg.metric() })?;
        col.schema = seg.schema().filter(|s| !s.is_empty()).cloned();
        col.index = seg.index_kind();
        col.sealed = Some(seg);
        Ok(col)
    }

    /// Opens a copy of segment bytes that may sit at any address.
    pub fn from_bytes(bytes: &[u8]) -> Result<Collection, Error> {
        Collection::open(Box::new(AlignedBytes::from_slice(bytes)))
    }

    /// Uses another kernel implementation (all give identical results; for tests and benchmarks).
    pub fn set_kernels(&mut self, kernels: Kernels) {
        self.kernels = kernels;
    }

    /// The kernel implementation in use.
    pub fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Metric.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// The sealed segment, if any.
    pub fn sealed(&self) -> Option<&SealedSegment> {
        self.sealed.as_ref()
    }

    fn sealed_rows(&self) -> usize {
        self.sealed.as_ref().map_or(0, |s| s.rows())
    }

    /// Number of live points.
    pub fn len(&self) -> usize {
        self.sealed_rows() - self.sealed_deleted.count() + self.mutable.live()
    }

    /// Whether the collection holds no live point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a live point has external id `id`.
    pub fn contains(&self, id: u64) -> bool {
        self.mutable.index.contains_key(&id) || self.sealed_row(id).is_some()
    }

    /// The live sealed row of external id `id`.
    fn sealed_row(&self, id: u64) -> Option<usize> {
        self.sealed.as_ref()?.row_of(id).filter(|&r| !self.sealed_deleted.contains(r))
    }

    /// The stored vector of a live point (normalised for cosine); `None` also for the points
    /// of a codes-only segment, which keeps no vectors.
    pub fn vector(&self, id: u64) -> Option<&[f32]> {
        if let Some(&row) = self.mutable.index.get(&id) {
            let row = row as usize;
            return Some(&self.mutable.vectors[row * self.dim..(row + 1) * self.dim]);
        }
        self.sealed.as_ref()?.vector(self.sealed_row(id)?)
    }

    /// Whether the sealed segment keeps index codes only (see [`Error::CodesOnly`]).
    pub fn codes_only(&self) -> bool {
        self.sealed.as_ref().is_some_and(SealedSegment::codes_only)
    }

    /// Refuses changes to a codes-only collection.
    fn writable(&self, what: &'static str) -> Result<(), Error> {
        if self.codes_only() { Err(Error::CodesOnly(what)) } else { Ok(()) }
    }

    /// The payload of a live point (`{}` when it has none).
    pub fn payload(&self, id: u64) -> Option<Value> {
        if let Some(&row) = self.mutable.index.get(&id) {
            return Some(self.payload_of(self.sealed_rows() + row as usize, None));
        }
        let row = self.sealed_row(id)?;
        Some(self.payload_of(row, self.sealed.as_ref()?.payload().as_ref()))
    }

    /// The stored payload of an internal id (`view`: the sealed segment's, for sealed rows).
    fn payload_of(&self, internal: usize, view: Option<&PayloadView<'_>>) -> Value {
        let sealed_rows = self.sealed_rows();
        let doc = match internal.checked_sub(sealed_rows) {
            None => view.and_then(|v| v.document(internal as u32).ok()),
            Some(row) => self.mutable.payloads.get(row).cloned(),
        };
        match doc {
            Some(d @ Value::Object(_)) => d,
            _ => Value::Object(serde_json::Map::new()),
        }
    }

    /// Inserts (or replaces) points: `vectors` holds `ids.len() * dim` floats, row-major.
    ///
    /// All input is checked before anything changes: on error the collection is as before.
    pub fn insert(&mut self, ids: &[u64], vectors: &[f32]) -> Result<(), Error> {
        self.insert_with_payloads(ids, vectors, &[])
    }

    /// Inserts (or replaces, payload included) points with their payloads: none (`&[]`), or
    /// one JSON object (or `null`) per point, checked against the schema.
    ///
    /// All input is checked before anything changes: on error the collection is as before.
    pub fn insert_with_payloads(&mut self, ids: &[u64], vectors: &[f32], payloads: &[Value]) -> Result<(), Error> {
        self.check_insert(ids, vectors, payloads, None)?;
        // `reserve` without its zero fill: the batch is appended straight from the slices.
        self.mutable.discard_pending(self.dim);
        self.mutable.ids.extend_from_slice(ids);
        self.mutable.vectors.extend_from_slice(vectors);
        self.mutable.reserved = true;
        self.commit_checked(IdEncoding::U64, payloads, true).map(|_| ())
    }

    /// Checks an insert without making it: the errors [`insert_with_payloads`] would give for
    /// these points (dimension, non-finite values, payloads against the schema, capacity), with
    /// the payloads checked against `schema` instead of the collection's when given (a host
    /// about to [`extend_schema`]). A host that logs writes before applying them calls this
    /// first, so that nothing it logs can fail to apply.
    ///
    /// [`insert_with_payloads`]: Self::insert_with_payloads
    /// [`extend_schema`]: Self::extend_schema
    pub fn check_insert(
        &self,
        ids: &[u64],
        vectors: &[f32],
        payloads: &[Value],
        schema: Option<&Schema>,
    ) -> Result<(), Error> {
        self.writable("insert")?;
        if Some(vectors.len()) != ids.len().checked_mul(self.dim) {
            return Err(Error::LengthMismatch { ids: ids.len(), floats: vectors.len(), dim: self.dim });
        }
        match schema {
            Some(s) => check_payloads_against(s, ids.len(), payloads)?,
            None => self.check_payloads(ids.len(), payloads)?,
        }
        if let Some(at) = first_non_finite(vectors) {
            return Err(Error::NonFinite { point: at / self.dim, element: at % self.dim });
        }
        self.check_capacity(ids.len())
    }

    /// Checks that `n` more rows fit: internal ids are `u32`.
    fn check_capacity(&self, n: usize) -> Result<(), Error> {
        let total = self.sealed_rows() + self.mutable.rows();
        match total.checked_add(n) {
            Some(t) if t < u32::MAX as usize => Ok(()),
            _ => Err(Error::CapacityExceeded),
        }
    }

    /// Reserves a batch of `n` points to be filled in place through [`pending_ids`] and
    /// [`pending_vectors`] and made visible by [`commit`]. A batch reserved before and not
    /// committed is dropped.
    ///
    /// [`pending_ids`]: Self::pending_ids
    /// [`pending_vectors`]: Self::pending_vectors
    /// [`commit`]: Self::commit
    pub fn reserve(&mut self, n: usize) -> Result<(), Error> {
        self.writable("insert")?;
        self.mutable.discard_pending(self.dim);
        self.check_capacity(n)?;
        let floats = (self.mutable.rows() + n).checked_mul(self.dim).ok_or(Error::CapacityExceeded)?;
        self.mutable.ids.resize(self.mutable.rows() + n, 0);
        self.mutable.vectors.resize(floats, 0.0);
        self.mutable.reserved = true;
        Ok(())
    }

    /// Ids of the reserved batch, to fill in place.
    pub fn pending_ids(&mut self) -> &mut [u64] {
        &mut self.mutable.ids[self.mutable.committed..]
    }

    /// Vectors of the reserved batch (row-major), to fill in place.
    pub fn pending_vectors(&mut self) -> &mut [f32] {
        &mut self.mutable.vectors[self.mutable.committed * self.dim..]
    }

    /// Checks the reserved batch and makes it visible; returns the number of points committed.
    ///
    /// On error the batch is dropped and the collection is as before.
    pub fn commit(&mut self, ids: IdEncoding) -> Result<usize, Error> {
        self.commit_with_payloads(ids, &[])
    }

    /// [`commit`](Self::commit) with payloads: none (`&[]`), or one JSON object (or `null`) per
    /// reserved point, checked against the schema before anything becomes visible.
    pub fn commit_with_payloads(&mut self, ids: IdEncoding, payloads: &[Value]) -> Result<usize, Error> {
        self.commit_checked(ids, payloads, false)
    }

    /// Commits; `checked`: the batch (`u64` ids) already passed [`check_insert`](Self::check_insert).
    fn commit_checked(&mut self, ids: IdEncoding, payloads: &[Value], checked: bool) -> Result<usize, Error> {
        if !self.mutable.reserved {
            return Err(Error::NoPendingBatch);
        }
        if !checked {
            let n = self.mutable.ids.len() - self.mutable.committed;
            if let Err(e) = self.check_payloads(n, payloads).and_then(|()| self.check_pending(ids)) {
                self.mutable.discard_pending(self.dim);
                return Err(e);
            }
        }
        let (first, dim) = (self.mutable.committed, self.dim);
        let end = self.mutable.ids.len();
        if let Some(schema) = &self.schema {
            if payloads.is_empty() {
                self.mutable.payloads.resize(end, Value::Null);
            } else {
                // One canonical form whatever language wrote the numbers (see `canonicalize`).
                self.mutable.payloads.extend(payloads.iter().map(|p| {
                    let mut p = p.clone();
                    shoal_payload::canonicalize(schema, &mut p);
                    p
                }));
            }
        }
        if self.metric.normalizes() {
            for v in self.mutable.vectors[first * dim..].chunks_exact_mut(dim) {
                normalize(&self.kernels, v);
            }
        }
        self.mutable.index.reserve(end - first);
        for row in first..end {
            let id = self.mutable.ids[row];
            match self.mutable.index.insert(id, row as u32) {
                Some(old) => {
                    self.mutable.deleted.insert(old as usize);
                }
                None => {
                    self.delete_sealed(id);
                }
            }
        }
        self.mutable.committed = end;
        self.mutable.reserved = false;
        if let Some(schema) = self.schema.as_ref().filter(|s| text::has_text(s)) {
            self.mutable.text = Some(text::build(schema, self.mutable.payloads.iter()));
        }
        Ok(end - first)
    }

    /// Checks that `payloads` is empty or holds one valid payload per point.
    fn check_payloads(&self, points: usize, payloads: &[Value]) -> Result<(), Error> {
        check_payloads_against(self.schema.as_ref().unwrap_or(&Schema::default()), points, payloads)
    }

    /// Validates the reserved batch, converting `f64` ids in place.
    fn check_pending(&mut self, ids: IdEncoding) -> Result<(), Error> {
        let first = self.mutable.committed;
        if ids == IdEncoding::F64 {
            for (point, slot) in self.mutable.ids[first..].iter_mut().enumerate() {
                let x = f64::from_bits(*slot);
                // `x == x as u64 as f64` rejects fractions; the range check rejects the rest.
                if !(0.0..=MAX_SAFE_INTEGER).contains(&x) || x != (x as u64) as f64 {
                    return Err(Error::InvalidId { point });
                }
                *slot = x as u64;
            }
        }
        let dim = self.dim;
        let pending = &self.mutable.vectors[first * dim..];
        if let Some(at) = first_non_finite(pending) {
            return Err(Error::NonFinite { point: at / dim, element: at % dim });
        }
        Ok(())
    }

    fn delete_sealed(&mut self, id: u64) -> bool {
        match self.sealed.as_ref().and_then(|s| s.row_of(id)) {
            Some(row) => self.sealed_deleted.insert(row),
            None => false,
        }
    }

    /// Deletes points by id; returns how many existed. A codes-only collection refuses.
    pub fn delete(&mut self, ids: &[u64]) -> Result<usize, Error> {
        self.writable("delete")?;
        Ok(ids.iter().filter(|&&id| self.mutable.delete(id) || self.delete_sealed(id)).count())
    }

    /// The ids of the live points that pass `filter` (Qdrant's filter JSON; `None` or `null`:
    /// every live point), ascending. For counting, scrolling and deleting by filter.
    pub fn matching_ids(&self, filter: Option<&Value>) -> Result<Vec<u64>, Error> {
        let filter = self.parse_filter(filter)?;
        let filter = filter.as_ref();
        let mut ids = Vec::new();
        if let Some(seg) = &self.sealed {
            let seg_ids = seg.ids();
            match filter {
                None => ids.extend(
                    seg_ids.iter().enumerate().filter(|&(r, _)| !self.sealed_deleted.contains(r)).map(|(_, &id)| id),
                ),
                Some(f) => {
                    let view = seg.payload();
                    let compiled = view.as_ref().map(|v| compile_filter(seg, v, f)).transpose()?;
                    ids.extend(self.sealed_matching(seg, compiled.as_ref(), f).iter().map(|r| seg_ids[r as usize]));
                }
            }
        }
        let m = &self.mutable;
        ids.extend((0..m.rows()).filter(|&r| m.passes(r, filter)).map(|r| m.ids[r]));
        ids.sort_unstable();
        Ok(ids)
    }

    /// Adds payload fields: `schema` must hold every current field with its type, and may add
    /// more. Existing points have no value for the new fields. The sealed segment is rewritten
    /// (with its index) so that its payload sections carry the new fields.
    ///
    /// On error (a field missing or retyped) the collection is as before.
    pub fn extend_schema(&mut self, schema: Schema) -> Result<(), Error> {
        if let Some(old) = &self.schema {
            for (name, ty) in old.fields() {
                if schema.field(name).map(|(_, t)| t) != Some(ty) {
                    return Err(Error::InvalidRequest(format!(
                        "schema change: field `{name}` ({}) must stay with its type",
                        ty.name()
                    )));
                }
            }
            if old.len() == schema.len() {
                return Ok(());
            }
        }
        if schema.is_empty() {
            return Ok(());
        }
        self.writable("schema change")?;
        let had_points = self.sealed.is_some() || self.mutable.rows() > 0;
        let had_schema = self.schema.is_some();
        self.schema = Some(schema);
        if !had_schema {
            // Rows committed without a schema hold no payload.
            self.mutable.payloads.resize(self.mutable.rows(), Value::Null);
        }
        if had_points {
            self.reindex = true;
            self.seal();
        }
        Ok(())
    }

    /// Seals with a (new) index: later seals rebuild the same kind of index. A codes-only
    /// collection refuses a different index (it has no vectors to build one from).
    pub fn seal_with(&mut self, index: IndexKind) -> Result<(), Error> {
        if index != self.index {
            self.writable("rebuild with another index")?;
        }
        self.reindex |= index != self.index;
        self.index = index;
        self.seal();
        Ok(())
    }

    /// The index the next seal builds.
    pub fn index_kind(&self) -> IndexKind {
        self.index
    }

    /// Merges the sealed segment's and the mutable segment's live points into a new sealed
    /// segment (sealed rows first, then mutable rows in insertion order; with an IVF index the
    /// new segment stores them sorted by partition, stably).
    pub fn seal(&mut self) {
        let dirty = self.mutable.rows() > 0 || self.sealed_deleted.count() > 0 || self.sealed.is_none() || self.reindex;
        // A codes-only collection refuses every change, so it is never dirty.
        if !dirty || self.codes_only() {
            return;
        }
        self.mutable.discard_pending(self.dim);
        let dim = self.dim;
        let live = self.len();
        let mut ids = Vec::with_capacity(live);
        let mut vectors = Vec::with_capacity(live * dim);
        let with_payloads = self.schema.is_some();
        let mut docs: Vec<Value> = Vec::with_capacity(if with_payloads { live } else { 0 });
        if let Some(seg) = &self.sealed {
            let view = if with_payloads { seg.payload() } else { None };
            for (row, &id) in seg.ids().iter().enumerate() {
                if !self.sealed_deleted.contains(row) {
                    ids.push(id);
                    vectors.extend_from_slice(seg.vector(row).expect("not codes-only (checked above)"));
                    if with_payloads {
                        docs.push(view.as_ref().and_then(|v| v.document(row as u32).ok()).unwrap_or(Value::Null));
                    }
                }
            }
        }
        // The mutable segment is cleared below: move its payloads rather than copy them.
        let mut mutable_docs = core::mem::take(&mut self.mutable.payloads);
        let m = &self.mutable;
        for row in 0..m.rows() {
            if !m.deleted.contains(row) {
                ids.push(m.ids[row]);
                vectors.extend_from_slice(&m.vectors[row * dim..(row + 1) * dim]);
                if with_payloads {
                    docs.push(mutable_docs.get_mut(row).map(core::mem::take).unwrap_or(Value::Null));
                }
            }
        }
        drop(mutable_docs);
        let payloads = self.schema.as_ref().map(|schema| PayloadInput { schema, docs: &docs });
        let bytes =
            SealedSegment::write_with_payloads(&self.kernels, dim, self.metric, &ids, &vectors, payloads, self.index);
        drop((ids, vectors, docs));
        self.sealed = Some(SealedSegment::open(Box::new(bytes)).expect("a freshly written segment opens"));
        self.sealed_deleted.clear();
        self.mutable.clear();
        self.reindex = false;
    }

    /// The collection as one sealed segment file (sealing first if needed).
    pub fn to_bytes(&mut self) -> &[u8] {
        self.seal();
        self.sealed.as_ref().expect("sealed above").bytes()
    }

    /// Full check of the sealed segment's bytes (see [`SealedSegment::verify`]).
    pub fn verify(&self) -> Result<(), Error> {
        self.sealed.as_ref().map_or(Ok(()), |s| s.verify())
    }

    /// Checks a query vector and copies it into `out`, prepared for the metric (normalised for
    /// cosine).
    fn prepare_query(&self, vector: &[f32], out: &mut Vec<f32>) -> Result<(), Error> {
        if vector.len() != self.dim {
            return Err(Error::DimensionMismatch { expected: self.dim, found: vector.len() });
        }
        if let Some(element) = first_non_finite(vector) {
            return Err(Error::NonFinite { point: 0, element });
        }
        out.clear();
        out.extend_from_slice(vector);
        if self.metric.normalizes() {
            normalize(&self.kernels, out);
        }
        Ok(())
    }

    /// Runs a search request.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse, Error> {
        let mut points = Vec::new();
        req.check()?;
        // Not in `check`: a host may set `vector` after parsing the JSON.
        if req.fusion.is_some() && (req.vector.is_none() || req.text.is_none()) {
            return Err(Error::InvalidRequest("fusion needs both `vector` and `text`".into()));
        }
        let filter = self.parse_filter(req.filter.as_ref())?;
        let filter = filter.as_ref();
        let (stats, partial) = match (&req.vector, &req.text) {
            (Some(v), None) => (self.search_vector(req, v, filter, &mut points)?, false),
            (None, Some(_)) => {
                let k = req.offset + req.limit;
                let TextRanking { hits, partial, stats } = self.text_ranking(req, filter, k)?;
                points.extend(hits.into_iter().skip(req.offset).map(|(internal, score)| ScoredPoint {
                    id: self.external_id(internal),
                    score,
                    payload: None,
                }));
                (stats, partial)
            }
            (Some(v), Some(_)) => self.search_hybrid(req, v, filter, &mut points)?,
            (None, None) => return Err(Error::InvalidRequest("give `vector`, `text` or both".into())),
        };
        if req.with_payload && req.text.is_some() {
            for p in &mut points {
                p.payload = Some(self.payload(p.id).unwrap_or(Value::Null));
            }
        }
        Ok(SearchResponse { points, partial, stats })
    }

    /// The text ranking of a request: up to `k` `(internal id, BM25 score)` pairs, best first
    /// (ties by internal id), from the sealed and the mutable segment, with the request's
    /// filter and deadline; and whether the deadline fired.
    fn text_ranking(&self, req: &SearchRequest, filter: Option<&Filter>, k: usize) -> Result<TextRanking, Error> {
        let text = req.text.as_deref().unwrap_or("");
        if !self.schema.as_ref().is_some_and(text::has_text) {
            return Err(Error::InvalidRequest("`text`: the collection has no text fields".into()));
        }
        let deadline = match (req.timeout_ms, &self.clock) {
            (None, _) => None,
            (Some(ms), Some(clock)) => Some(Deadline::after(clock.as_ref(), ms.saturating_mul(1000))),
            (Some(_), None) => return Err(Error::Unsupported("timeout_ms on a host without a clock")),
        };
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let mut hits: Vec<(usize, f32)> = Vec::new();
        let mut partial = false;
        let d = shoal_text::Bm25::default();
        let bm25 = shoal_text::Bm25 { k1: req.bm25_k1.unwrap_or(d.k1), b: req.bm25_b.unwrap_or(d.b) };
        let mut run = |index: &TextIndex<'_>, first: usize, pass: &dyn Fn(u32) -> bool| -> Result<(), Error> {
            let query = Query::parse(&index.analyzer(), text);
            let params = shoal_text::SearchParams { k, bm25, filter: Some(pass), deadline };
            let res = index.search(0, &query, &params).map_err(Error::Text)?;
            partial |= res.partial;
            stats.scanned += res.stats.scored;
            stats.segments += 1;
            hits.extend(res.hits.iter().map(|h| (first + h.doc as usize, h.score)));
            Ok(())
        };
        if let Some((seg, index)) = self.sealed.as_ref().and_then(|seg| Some((seg, seg.text()?))) {
            let deleted = &self.sealed_deleted;
            let view = seg.payload();
            let compiled = match (filter, &view) {
                (Some(f), Some(v)) => Some(compile_filter(seg, v, f)?),
                _ => None,
            };
            let pass = |row: u32| !deleted.contains(row as usize) && sealed_passes(seg, compiled.as_ref(), filter, row);
            run(&index, 0, &pass)?;
        }
        if let Some(sections) = &self.mutable.text {
            let m = &self.mutable;
            let pass = |row: u32| (row as usize) < m.rows() && m.passes(row as usize, filter);
            run(&text::open(sections), self.sealed_rows(), &pass)?;
        }
        // Best score first, ties by internal id (< 2^32): sorted as one u64 per hit.
        let mut keys: Vec<u64> = hits.iter().map(|&(i, score)| u64::from(!f32_key(score)) << 32 | i as u64).collect();
        keys.sort_unstable();
        hits.clear();
        hits.extend(keys.iter().take(k).map(|&key| (key as u32 as usize, f32_of(!((key >> 32) as u32)))));
        stats.exact = !partial;
        Ok(TextRanking { hits, partial, stats })
    }

    /// A request with both `vector` and `text`: each ranking to [`FUSION_DEPTH`](text::FUSION_DEPTH)
    /// (or `offset + limit`) results with the filter applied to both, fused by reciprocal rank
    /// or by weighted scores ([`text::fuse`]).
    fn search_hybrid(
        &self,
        req: &SearchRequest,
        vector: &[f32],
        filter: Option<&Filter>,
        out: &mut Vec<ScoredPoint>,
    ) -> Result<(SearchStats, bool), Error> {
        let depth = (req.offset + req.limit).clamp(text::FUSION_DEPTH, crate::MAX_LIMIT);
        let TextRanking { hits: text_hits, partial, stats: tstats } = self.text_ranking(req, filter, depth)?;
        // The vector ranking: the request's index parameters, `depth` results, no payloads.
        let vreq = SearchRequest {
            limit: depth,
            offset: 0,
            with_payload: false,
            params: req.params.clone(),
            ..SearchRequest::default()
        };
        let mut vpoints = Vec::new();
        let mut stats = self.search_vector(&vreq, vector, filter, &mut vpoints)?;
        let vector: Vec<(u64, f32)> = vpoints.iter().map(|p| (p.id, p.score)).collect();
        let text: Vec<(u64, f32)> = text_hits.iter().map(|&(i, s)| (self.external_id(i), s)).collect();
        let fusion = match req.fusion.as_deref() {
            Some("weighted") => text::Fusion::Weighted { alpha: req.alpha.unwrap_or(0.5) },
            _ => text::Fusion::Rrf,
        };
        let fused = text::fuse(fusion, &vector, self.metric == Metric::L2, &text);
        out.clear();
        out.extend(fused.into_iter().skip(req.offset).take(req.limit).map(|(id, score)| ScoredPoint {
            id,
            score,
            payload: None,
        }));
        stats.scanned += tstats.scanned;
        stats.exact &= tstats.exact;
        Ok((stats, partial))
    }

    /// Runs a search request, writing the results into `out` (cleared first). Query buffers come
    /// from the collection's scratch pool: once they and `out` have grown to size, a search
    /// without a filter allocates nothing.
    ///
    /// This is the vector search alone: a request with `text` goes through [`search`](Self::search).
    pub fn search_into(&self, req: &SearchRequest, out: &mut Vec<ScoredPoint>) -> Result<SearchStats, Error> {
        req.check()?;
        if req.text.is_some() {
            return Err(Error::InvalidRequest("`text` requests go through search(), not search_into()".into()));
        }
        let vector = req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))?;
        let filter = self.parse_filter(req.filter.as_ref())?;
        self.search_vector(req, vector, filter.as_ref(), out)
    }

    /// The vector search of a checked request with its parsed filter (`req.vector` and
    /// `req.filter` are not read again).
    fn search_vector(
        &self,
        req: &SearchRequest,
        vector: &[f32],
        filter: Option<&Filter>,
        out: &mut Vec<ScoredPoint>,
    ) -> Result<SearchStats, Error> {
        self.scratch.with(|s| {
            self.prepare_query(vector, &mut s.query)?;
            let stats = self.search_prepared(req, filter, s, None)?;
            s.topk.drain_sorted(&mut s.best);
            self.emit(req, &s.best, out);
            Ok(stats)
        })
    }

    /// Writes the results of `req` from its best candidates (internal ids, sorted): skips
    /// `offset`, maps ids and scores, adds payloads when asked.
    fn emit(&self, req: &SearchRequest, best: &[Candidate], out: &mut Vec<ScoredPoint>) {
        out.clear();
        out.extend(best.iter().skip(req.offset).map(|c| ScoredPoint {
            id: self.external_id(c.id as usize),
            score: self.metric.score(c.key),
            payload: None,
        }));
        if req.with_payload {
            let view = self.sealed.as_ref().and_then(|seg| seg.payload());
            for (p, c) in out.iter_mut().zip(best.iter().skip(req.offset)) {
                p.payload = Some(self.payload_of(c.id as usize, view.as_ref()));
            }
        }
    }

    /// Lazy re-ranking of a codes-only collection, step 1 of 2: the sealed rows whose exact
    /// distance could place them in the results of the vector search `req` (its filter
    /// applied), best estimate first. Each row's extended-bit estimate gives an interval; a row
    /// is kept when its interval's low end is at most the `offset + limit`-th smallest high
    /// end, and, with `below`, could still score better than that score (one already reached
    /// exactly: a host that read the best-estimated rows first asks only for the rest that can
    /// still matter). A host that keeps the full vectors out of memory (a file, object
    /// storage) reads these rows' vectors and calls [`search_reranked`](Self::search_reranked).
    pub fn rerank_rows(&self, req: &SearchRequest, below: Option<f32>) -> Result<Vec<u32>, Error> {
        let vector = self.lazy_request(req)?;
        let filter = self.parse_filter(req.filter.as_ref())?;
        let mut bounds = Bounds::new(req.offset + req.limit);
        self.scratch.with(|s| {
            self.prepare_query(vector, &mut s.query)?;
            self.search_prepared(req, filter.as_ref(), s, Some(&mut bounds))
        })?;
        let mut rows = Vec::new();
        let below = below.map_or(f32::INFINITY, |score| self.metric.key_of_score(score));
        bounds.finish(if below.is_nan() { f32::INFINITY } else { below }, &mut rows);
        Ok(rows.into_iter().map(|r| r as u32).collect())
    }

    /// Lazy re-ranking, step 2: answers `req` exactly over `rows` (rows that
    /// [`rerank_rows`](Self::rerank_rows) gave for the same request, sorted ascending), whose stored vectors
    /// (normalised for cosine, as `shoal build --vectors-out` writes them) are `vectors`,
    /// row-major. Rows that do not pass the request's filter are ignored.
    pub fn search_reranked(&self, req: &SearchRequest, rows: &[u32], vectors: &[f32]) -> Result<SearchResponse, Error> {
        let vector = self.lazy_request(req)?;
        let seg = self.sealed.as_ref().expect("checked by lazy_request");
        if Some(vectors.len()) != rows.len().checked_mul(self.dim) {
            return Err(Error::LengthMismatch { ids: rows.len(), floats: vectors.len(), dim: self.dim });
        }
        if rows.windows(2).any(|w| w[0] >= w[1]) || rows.last().is_some_and(|&r| r as usize >= seg.rows()) {
            return Err(Error::InvalidRequest("rows must ascend and lie in the segment".into()));
        }
        if let Some(at) = first_non_finite(vectors) {
            return Err(Error::NonFinite { point: at / self.dim, element: at % self.dim });
        }
        let filter = self.parse_filter(req.filter.as_ref())?;
        let view = seg.payload();
        let compiled = match (&filter, &view) {
            (Some(f), Some(v)) => Some(compile_filter(seg, v, f)?),
            _ => None,
        };
        let mut points = Vec::new();
        let stats = self.scratch.with(|s| {
            self.prepare_query(vector, &mut s.query)?;
            s.topk.reset(req.offset + req.limit);
            let mut passing = rows
                .iter()
                .zip(vectors.chunks_exact(self.dim))
                .filter(|(r, _)| sealed_passes(seg, compiled.as_ref(), filter.as_ref(), **r))
                .map(|(&r, v)| (r as usize, v));
            self.push_exact(&s.query, &mut passing, &mut s.topk);
            s.topk.drain_sorted(&mut s.best);
            self.emit(req, &s.best, &mut points);
            Ok::<_, Error>(SearchStats { scanned: rows.len() as u64, segments: 1, ..SearchStats::default() })
        })?;
        Ok(SearchResponse { points, partial: false, stats })
    }

    /// Checks a lazy re-ranking request: a codes-only collection, a vector search without text.
    fn lazy_request<'r>(&self, req: &'r SearchRequest) -> Result<&'r [f32], Error> {
        req.check()?;
        if !self.codes_only() {
            return Err(Error::InvalidRequest("lazy re-ranking is for codes-only collections".into()));
        }
        if req.text.is_some() || req.params.exact {
            return Err(Error::InvalidRequest(
                "lazy re-ranking answers vector searches (no `text`, no `exact`)".into(),
            ));
        }
        req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))
    }

    /// Parses a request's filter and checks it against the schema (`null` means none).
    fn parse_filter(&self, filter: Option<&Value>) -> Result<Option<Filter>, Error> {
        let Some(v) = filter.filter(|v| !v.is_null()) else { return Ok(None) };
        let invalid = |e: shoal_payload::FilterError| Error::InvalidRequest(format!("{e}"));
        let f = Filter::from_value(v).map_err(invalid)?;
        f.validate(self.schema.as_ref().unwrap_or(&Schema::default())).map_err(invalid)?;
        Ok(Some(f))
    }

    /// The IVF settings of a request. Filtered searches use the same settings: the search
    /// widens its probes until enough candidates pass, and the calibrated defaults keep
    /// recall@10 >= 0.95 down to the planner's exact-scan limit without probing more
    /// (`tests/payload.rs`, `filtered_ivf_recall_at_every_selectivity`).
    fn ivf_query(req: &SearchRequest, defaults: IvfQuery) -> IvfQuery {
        IvfQuery {
            nprobe: req.params.nprobe.map_or(defaults.nprobe, |n| n as usize),
            rerank: req.params.rerank.map_or(defaults.rerank, |r| r as usize),
            epsilon: defaults.epsilon,
            // An explicit nprobe is probed exactly.
            probe_ratio: if req.params.nprobe.is_some() { 0.0 } else { defaults.probe_ratio },
            passing: 1.0,
        }
    }

    /// Fills `s.topk` with the best `offset + limit` candidates for the prepared `s.query`.
    /// With `bounds` (lazy re-ranking of a codes-only collection), the sealed segment's refined
    /// candidates go there instead of `s.topk`.
    fn search_prepared(
        &self,
        req: &SearchRequest,
        filter: Option<&Filter>,
        s: &mut QueryScratch,
        bounds: Option<&mut Bounds>,
    ) -> Result<SearchStats, Error> {
        let QueryScratch { query, topk, flat, ivf, .. } = s;
        topk.reset(req.offset + req.limit);
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let sealed_rows = self.sealed_rows();
        let scan = FlatScan { kernels: self.kernels, metric: self.metric, query };
        if let Some(seg) = &self.sealed {
            if req.params.exact && seg.codes_only() {
                return Err(Error::CodesOnly("exact search"));
            }
            let deleted = &self.sealed_deleted;
            let index = seg.ivf().filter(|_| !req.params.exact);
            match filter {
                Some(f) => {
                    self.search_sealed_filtered(seg, f, req, index, &scan, flat, ivf, topk, bounds, &mut stats)?
                }
                None => {
                    let skip = |r: usize| deleted.contains(r);
                    let skip: Option<&dyn Fn(usize) -> bool> = (deleted.count() > 0).then_some(&skip);
                    match (index, seg.vectors()) {
                        (Some(index), _) => {
                            self.search_ivf(req, index, skip, 1.0, &scan, ivf, topk, bounds, &mut stats)
                        }
                        (None, Some(vectors)) => {
                            scan.scan(vectors, 0, skip, flat, topk);
                            stats.scanned += seg.rows() as u64;
                        }
                        (None, None) => unreachable!("a codes-only segment has an index (checked at open)"),
                    }
                }
            }
            stats.segments += 1;
        }
        let m = &self.mutable;
        if m.rows() > 0 {
            // The mutable segment is always scanned exactly; its filter runs on the JSON.
            let skip = |r: usize| !m.passes(r, filter);
            let skip: Option<&dyn Fn(usize) -> bool> = (m.deleted.count() > 0 || filter.is_some()).then_some(&skip);
            scan.scan(&m.vectors[..m.rows() * self.dim], sealed_rows as u64, skip, flat, topk);
            stats.scanned += m.rows() as u64;
            stats.segments += 1;
        }
        Ok(stats)
    }

    /// Searches the sealed segment's IVF index, ignoring the rows `skip` names.
    #[allow(clippy::too_many_arguments)]
    fn search_ivf(
        &self,
        req: &SearchRequest,
        (index, mut data, defaults): (&IvfIndex, IvfData<'_>, IvfQuery),
        skip: Option<&dyn Fn(usize) -> bool>,
        passing: f32,
        scan: &FlatScan<'_>,
        scratch: &mut IvfScratch,
        topk: &mut TopK,
        bounds: Option<&mut Bounds>,
        stats: &mut SearchStats,
    ) {
        let seg = self.sealed.as_ref().expect("an IVF index lives in the sealed segment");
        let hint = |v: &[f32]| seg.prefetch(v);
        if seg.prefetches() {
            data.prefetch = Some(Prefetch(&hint));
        }
        let mut params = Self::ivf_query(req, defaults);
        if req.params.nprobe.is_none() {
            // Explicit probes are probed as asked; the defaults widen for a filter.
            params.passing = passing;
        }
        let search = IvfSearch { kernels: self.kernels, metric: self.metric, query: scan.query, params };
        let st = match bounds {
            Some(b) => index.search_refined(&search, &data, skip, 0, scratch, topk.capacity_k(), b),
            None => index.search(&search, &data, skip, 0, scratch, topk),
        };
        stats.scanned += st.reranked;
        stats.estimated += st.estimated;
        stats.exact = false;
    }

    /// The filtered search of the sealed segment (the planner). When the indexes prove that
    /// more points match than an exact scan should take (see [`FILTER_EXACT_DIVISOR`]), the
    /// IVF index is searched checking each candidate against the columns. Otherwise the
    /// matching rows are computed from the value → rows indexes; at most that limit are scanned
    /// exactly, more go to the IVF index (with the matching set as its filter). Without an
    /// index (or with `params.exact`) the matching rows are always scanned exactly. The IVF
    /// search widens its probes until `offset + limit` candidates pass, so a filtered search
    /// returns `limit` results whenever that many live points match.
    #[allow(clippy::too_many_arguments)]
    fn search_sealed_filtered(
        &self,
        seg: &SealedSegment,
        filter: &Filter,
        req: &SearchRequest,
        index: Option<(&IvfIndex, IvfData<'_>, IvfQuery)>,
        scan: &FlatScan<'_>,
        flat: &mut FlatScratch,
        ivf: &mut IvfScratch,
        topk: &mut TopK,
        bounds: Option<&mut Bounds>,
        stats: &mut SearchStats,
    ) -> Result<(), Error> {
        let deleted = &self.sealed_deleted;
        let rows = seg.rows();
        let view = seg.payload();
        let compiled = match &view {
            Some(v) => Some(compile_filter(seg, v, filter)?),
            None => None,
        };
        let k = (req.offset + req.limit) as u64;
        let limit = self
            .filter_exact_limit
            .unwrap_or_else(|| (rows as u64 / FILTER_EXACT_DIVISOR).max(k.saturating_mul(FILTER_EXACT_PER_RESULT)));
        if let (Some(index), Some(c)) = (index, compiled.as_ref()) {
            let est = c.estimate_cardinality();
            if est.min > limit {
                let skip = |r: usize| deleted.contains(r) || !c.matches(r as u32);
                let passing = est.expected as f32 / rows as f32;
                self.search_ivf(req, index, Some(&skip), passing, scan, ivf, topk, bounds, stats);
                return Ok(());
            }
        }
        let matching = self.sealed_matching(seg, compiled.as_ref(), filter);
        let count = matching.count();
        match (index, seg.vectors()) {
            (Some(index), _) if count > limit => {
                let skip = |r: usize| !matching.contains(r as u32);
                let passing = count as f32 / rows as f32;
                self.search_ivf(req, index, Some(&skip), passing, scan, ivf, topk, bounds, stats);
            }
            (Some((index, data, defaults)), None) => {
                // Codes only: the matches ranked by their estimates, as the IVF search ranks.
                let params = Self::ivf_query(req, defaults);
                let search = IvfSearch { kernels: self.kernels, metric: self.metric, query: scan.query, params };
                let mut rows = matching.iter().map(|r| r as usize);
                let sink: &mut dyn Refined = match bounds {
                    Some(b) => b,
                    None => topk,
                };
                stats.estimated += index.estimate_rows(&search, &data, &mut rows, 0, ivf, sink);
                stats.exact = false;
            }
            (_, Some(vectors)) if count.saturating_mul(4) > rows as u64 => {
                // Dense: the blocked scan with the set as its skip list.
                let skip = |r: usize| !matching.contains(r as u32);
                scan.scan(vectors, 0, Some(&skip), flat, topk);
                stats.scanned += count;
            }
            (_, Some(vectors)) => {
                let dim = self.dim;
                let mut rows = matching.iter().map(|r| r as usize).map(|r| (r, &vectors[r * dim..(r + 1) * dim]));
                self.push_exact(scan.query, &mut rows, topk);
                stats.scanned += count;
            }
            (None, None) => unreachable!("a codes-only segment has an index (checked at open)"),
        }
        Ok(())
    }

    /// The live rows of the sealed segment `seg` that pass `filter` (`compiled`: the filter
    /// bound to its payload sections, `None` when it has none).
    fn sealed_matching(
        &self,
        seg: &SealedSegment,
        compiled: Option<&CompiledFilter<'_, '_>>,
        filter: &Filter,
    ) -> shoal_payload::Bitset {
        let mut matching = match compiled {
            Some(c) => c.matching_points(),
            None => {
                // No payload sections: the filter was validated against no fields, so only
                // `has_id` conditions (and their boolean combinations) are left.
                let mut b = shoal_payload::Bitset::empty(seg.rows() as u32);
                for r in 0..seg.rows() as u32 {
                    if sealed_passes(seg, None, Some(filter), r) {
                        b.insert(r);
                    }
                }
                b
            }
        };
        self.sealed_deleted.iter().for_each(|r| matching.remove(r as u32));
        matching
    }

    /// Offers each `(internal id, vector)` to `topk` with its exact key against `query`
    /// (prepared). Vectors are copied into blocks of [`EXACT_BLOCK`] rows, each one batch-kernel
    /// call (a row's key does not depend on the batch it is in: the kernels' equivalence tests).
    fn push_exact(&self, query: &[f32], rows: &mut dyn Iterator<Item = (usize, &[f32])>, topk: &mut TopK) {
        let mut block: Vec<f32> = Vec::with_capacity(EXACT_BLOCK * self.dim);
        let mut ids = [0usize; EXACT_BLOCK];
        let mut keys = [0.0f32; EXACT_BLOCK];
        loop {
            block.clear();
            let mut n = 0;
            for (row, v) in (&mut *rows).take(EXACT_BLOCK) {
                block.extend_from_slice(v);
                ids[n] = row;
                n += 1;
            }
            if n == 0 {
                return;
            }
            self.metric.keys(&self.kernels, query, &block, &mut keys[..n]);
            for (&id, &key) in ids[..n].iter().zip(&keys[..n]) {
                topk.push(Candidate { key: if key.is_nan() { f32::INFINITY } else { key }, id: id as u64 });
            }
        }
    }

    fn external_id(&self, internal: usize) -> u64 {
        let sealed_rows = self.sealed_rows();
        match &self.sealed {
            Some(seg) if internal < sealed_rows => seg.ids()[internal],
            _ => self.mutable.ids[internal - sealed_rows],
        }
    }
}

/// Whether sealed row `row` passes `filter` (none: every row). `compiled` is the filter bound to
/// the segment's payload sections; without them the filter was validated against no fields, so
/// only `has_id` conditions (and their boolean combinations) are left, checked on the row's id.
fn sealed_passes(
    seg: &SealedSegment,
    compiled: Option<&CompiledFilter<'_, '_>>,
    filter: Option<&Filter>,
    row: u32,
) -> bool {
    match (compiled, filter) {
        (Some(c), _) => c.matches(row),
        (None, Some(f)) => reference::matches(f, &Value::Null, seg.ids()[row as usize]),
        (None, None) => true,
    }
}

/// `filter` bound to a sealed segment's payload `view` (`has_id` ids resolved to its rows).
fn compile_filter<'v, 'a>(
    seg: &SealedSegment,
    view: &'v PayloadView<'a>,
    filter: &Filter,
) -> Result<CompiledFilter<'v, 'a>, Error> {
    view.compile(filter, &|id| seg.row_of(id).map(|r| r as u32)).map_err(|e| Error::InvalidRequest(format!("{e}")))
}

/// Checks that `payloads` is empty or holds one payload valid under `schema` per point.
fn check_payloads_against(schema: &Schema, points: usize, payloads: &[Value]) -> Result<(), Error> {
    if payloads.is_empty() {
        return Ok(());
    }
    if payloads.len() != points {
        return Err(Error::PayloadCount { points, payloads: payloads.len() });
    }
    for (point, doc) in payloads.iter().enumerate() {
        parse_payload(schema, doc).map_err(|error| Error::InvalidPayload { point, error })?;
    }
    Ok(())
}

/// Index of the first NaN or infinity. The common all-finite case is a branch-free pass
/// (exponent bits all ones means non-finite) that compilers vectorise, so validating a large
/// batch runs at memory speed.
fn first_non_finite(v: &[f32]) -> Option<usize> {
    const EXP: u32 = 0x7f80_0000;
    for (i, chunk) in v.chunks(1024).enumerate() {
        let bad = chunk.iter().fold(0u32, |bad, x| bad | u32::from((x.to_bits() & EXP) == EXP));
        if bad != 0 {
            return chunk.iter().position(|x| !x.is_finite()).map(|j| i * 1024 + j);
        }
    }
    None
}
