//! The collection: a set of sealed segments ([`Part`]s, in set order) plus the mutable segment
//! that takes new points. This file holds the set and id lookups; writes (upserts, the
//! zero-copy path, deletes) are in `upsert.rs`, payload schema changes in `schema.rs`; searching is in
//! `query.rs` (the request as a whole: prefetches, fusion, thresholds), `search.rs` (vectors,
//! filters, the planner), `text_search.rs` (BM25 with the set's
//! statistics, hybrid fusion) and `lazy.rs` (lazy re-ranking of codes-only segments); seals,
//! merges and persistence in `seal.rs`.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::{AlignedBytes, PointId};
use shoal_index::ivf::IvfScratch;
use shoal_index::{Candidate, FlatScratch, Metric, TopK};
use shoal_kernels::Kernels;
use shoal_payload::Schema;
use shoal_text::Clock;

use crate::bitset::Bitset;
use crate::dense::DenseSpec;
use crate::mutable::Mutable;
use crate::pool::Pool;
use crate::sparse::{SparseSpec, SparseVector};
use crate::{Error, IndexKind, SealedSegment, SegmentBytes};

mod lazy;
mod query;
mod schema;
mod seal;
mod search;
mod sparse_search;
mod text_search;
mod upsert;

#[cfg(feature = "remote")]
pub(crate) use query::cut;
#[cfg(feature = "remote")]
pub(crate) use search::{parse_filter, prepare_vector, push_exact};
#[cfg(feature = "remote")]
pub(crate) use text_search::best_first;
pub(crate) use upsert::{check_payloads_against, first_non_finite};

pub use seal::{Checkpoint, MergeSnapshot, SealSnapshot, SegmentInfo};

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
    /// Each slot of [`Collection::pending_ids`] holds a `u64`.
    U64,
    /// Each slot of [`Collection::pending_ids`] holds the bits of an `f64` (a JavaScript
    /// number) that must be an integer in `0..=2^53`.
    F64,
}

/// Largest id a JavaScript number represents exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A filtered search scans the matching points exactly when there are at most this many per
/// requested result (`offset + limit`) ...
pub const FILTER_EXACT_PER_RESULT: u64 = 64;
/// ... or at most this fraction (1 / `FILTER_EXACT_DIVISOR`, 5%) of the segment's rows; beyond
/// both it searches the IVF index with the filter checked on each candidate. (On GloVe 400k,
/// scanning 5% of the rows exactly costs about what a default IVF search does.)
pub const FILTER_EXACT_DIVISOR: u64 = 20;

/// One sealed segment of the set.
pub(crate) struct Part {
    /// The segment (shared with a host's background merge).
    pub(crate) seg: Arc<SealedSegment>,
    /// Its deleted rows.
    pub(crate) deleted: Bitset,
    /// Internal id of its row 0 (`docs/format.md`, "Internal ids, ties and uniqueness").
    pub(crate) base: usize,
    /// The number in its file name, unique in the collection.
    pub(crate) number: u64,
    /// The manifest generation whose live-rows file records `deleted` (`None`: none written).
    pub(crate) live_file: Option<u64>,
    /// Whether `deleted` changed since the last manifest was written.
    pub(crate) changed: bool,
}

/// A set of points (external id — an integer or a UUID, [`PointId`] — + vector, and a JSON
/// payload when the collection has a schema) that can be searched.
///
/// Inserting an id that exists replaces the old point (upsert). The points live in sealed
/// segments (a set, in order) and a mutable segment; internal ids, which break score ties,
/// number the sealed segments' rows in set order, then the mutable segment's in insertion
/// order.
pub struct Collection {
    dim: usize,
    metric: Metric,
    /// Payload fields (`None`: points carry no payload).
    schema: Option<Schema>,
    /// Dense vectors, by name ascending: vector 0 is `dim` and `metric`.
    dense: Vec<DenseSpec>,
    /// Sparse vectors, by name ascending.
    sparse: Vec<SparseSpec>,
    /// Overrides the planner's exact-scan limit (tests and benchmarks).
    filter_exact_limit: Option<u64>,
    kernels: Kernels,
    /// The sealed segments, in set order.
    parts: Vec<Part>,
    mutable: Mutable,
    /// The index the next seal builds.
    index: IndexKind,
    /// Whether some segment was built with another index than `index`.
    reindex: bool,
    /// The number the next segment's file name gets.
    next_number: u64,
    /// The generation of the last manifest written (0: none).
    generation: u64,
    /// The merge policy of [`seal`](Self::seal).
    policy: crate::set::MergePolicy,
    /// Per-query buffers, reused across searches.
    scratch: Pool<QueryScratch>,
    /// The host's clock, for `timeout_ms`.
    clock: Option<Box<dyn Clock + Send + Sync>>,
}

/// The buffers of one search.
#[derive(Default)]
struct QueryScratch {
    query: Vec<f32>,
    topk: TopK,
    /// One sealed segment's own top-k, merged into `topk` after its search.
    part: TopK,
    best: Vec<Candidate>,
    flat: FlatScratch,
    ivf: IvfScratch,
}

/// Scratch slots per collection: enough for the native host's query threads.
const SCRATCH_SLOTS: usize = 16;

/// Where an internal id lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Row of the `i`-th sealed segment.
    Sealed(usize, usize),
    /// Row of the mutable segment.
    Mutable(usize),
}

impl core::fmt::Debug for Collection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Collection")
            .field("dim", &self.dim)
            .field("metric", &self.metric)
            .field("len", &self.len())
            .field("segments", &self.parts.len())
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
            dense: alloc::vec![DenseSpec { name: String::new(), dim: config.dim, metric: config.metric }],
            schema: None,
            sparse: Vec::new(),
            filter_exact_limit: None,
            kernels: Kernels::best(),
            parts: Vec::new(),
            mutable: Mutable::default(),
            index: IndexKind::Flat,
            reindex: false,
            next_number: 1,
            generation: 0,
            policy: crate::set::MergePolicy::default(),
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

    /// Parses the declared paths of a collection with nested payloads (`{"metadata.topic":
    /// "keyword"}`; any JSON object is a payload, filter keys are paths) for
    /// [`with_schema`](Self::with_schema). `{}` declares none.
    pub fn parse_nested_schema(json: &serde_json::Value) -> Result<Schema, Error> {
        let flat = Schema::from_value(json).map_err(Error::InvalidSchema)?;
        let fields: Vec<(&str, shoal_payload::FieldType)> = flat.fields().collect();
        Schema::nested(&fields).map_err(Error::InvalidSchema)
    }

    /// Gives an empty collection its sparse vectors, sorted by name (see [`SparseSpec`];
    /// [`SparseSpec::list_from_value`] reads them from JSON). They are fixed once the
    /// collection holds a point or a segment.
    pub fn set_sparse_vectors(&mut self, mut specs: Vec<SparseSpec>) -> Result<(), Error> {
        self.check_empty()?;
        crate::sparse::sort_specs(&mut specs);
        crate::sparse::check_specs(&specs)?;
        check_namespace(&self.dense, &specs)?;
        self.sparse = specs;
        Ok(())
    }

    /// Gives an empty collection its dense vectors (1 to 16, each with its name, dimension and
    /// metric; see [`DenseSpec`], [`DenseSpec::list_from_value`]), replacing the one
    /// [`new`](Self::new) gave: vector 0 is the first by name. Every point holds all of them.
    /// Fixed once the collection holds a point or a segment. Two or more cannot be codes-only.
    pub fn set_dense_vectors(&mut self, mut specs: Vec<DenseSpec>) -> Result<(), Error> {
        self.check_empty()?;
        crate::dense::sort_specs(&mut specs);
        crate::dense::check_specs(&specs)?;
        check_namespace(&specs, &self.sparse)?;
        if specs.len() > 1 && matches!(self.index, IndexKind::IvfRabitq(p) if p.codes_only) {
            return Err(Error::InvalidConfig("codes-only segments hold one dense vector"));
        }
        (self.dim, self.metric) = (specs[0].dim, specs[0].metric);
        self.dense = specs;
        Ok(())
    }

    /// Refuses a configuration change once the collection holds a point or a segment.
    fn check_empty(&self) -> Result<(), Error> {
        if !self.parts.is_empty() || self.mutable.rows() > 0 || self.mutable.reserved {
            return Err(Error::InvalidConfig("vectors are set before the first point"));
        }
        Ok(())
    }

    /// The dense vectors, by name ascending (one named `""` unless
    /// [`set_dense_vectors`](Self::set_dense_vectors) said otherwise).
    pub fn dense_vectors(&self) -> &[DenseSpec] {
        &self.dense
    }

    /// The position of dense vector `name` in [`dense_vectors`](Self::dense_vectors).
    pub fn dense_position(&self, name: &str) -> Option<usize> {
        self.dense.iter().position(|s| s.name == name)
    }

    /// Point `id`'s dense vector `d` (normalised for cosine; `None`: no such point or vector, or
    /// a codes-only segment).
    pub fn dense_vector(&self, id: PointId, d: usize) -> Option<&[f32]> {
        self.dense_at(self.internal_of(id)?, d)
    }

    /// The stored dense vector `d` of an internal id (`None`: no such vector, or a codes-only
    /// segment).
    fn dense_at(&self, internal: usize, d: usize) -> Option<&[f32]> {
        match self.locate(internal) {
            Loc::Sealed(p, row) => self.parts[p].seg.space(d)?.vector(row),
            Loc::Mutable(row) => {
                let (v, dim) = match d {
                    0 => (&self.mutable.vectors, self.dim),
                    _ => self.mutable.dense.get(d - 1).map(|(v, dim)| (v, *dim))?,
                };
                Some(&v[row * dim..(row + 1) * dim])
            }
        }
    }

    /// The sparse vectors, by name ascending.
    pub fn sparse_vectors(&self) -> &[SparseSpec] {
        &self.sparse
    }

    /// The position of sparse vector `name` in [`sparse_vectors`](Self::sparse_vectors).
    pub fn sparse_position(&self, name: &str) -> Option<usize> {
        self.sparse.iter().position(|s| s.name == name)
    }

    /// Point `id`'s sparse vector `name` (`None`: no such point or vector, or the point does
    /// not hold it; an error when its segment's bytes are damaged).
    pub fn sparse_vector(&self, id: PointId, name: &str) -> Result<Option<SparseVector>, Error> {
        let (Some(t), Some(internal)) = (self.sparse_position(name), self.internal_of(id)) else { return Ok(None) };
        let entries = match self.locate(internal) {
            Loc::Sealed(p, row) => match self.parts[p].seg.sparse(t) {
                Some(view) => view.row(row)?.map(<[_]>::to_vec),
                None => None,
            },
            Loc::Mutable(row) => self.mutable.sparse.get(t).and_then(|s| s.row(row)).map(<[_]>::to_vec),
        };
        Ok(entries.map(SparseVector::from_sorted))
    }

    /// The payload fields (`None` when points carry no payload).
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// Whether payloads are nested (any JSON object; filter keys are paths).
    pub fn nested(&self) -> bool {
        self.schema.as_ref().is_some_and(Schema::is_nested)
    }

    /// Overrides the planner of filtered searches: scan a sealed segment's matching points
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

    /// Opens one sealed segment as a collection (cheap checks only; see [`verify`](Self::verify)).
    pub fn open(storage: Box<dyn SegmentBytes>) -> Result<Collection, Error> {
        let seg = SealedSegment::open(storage)?;
        let mut col = Collection::new(CollectionConfig { dim: seg.dim(), metric: seg.metric() })?;
        col.schema = seg.schema().filter(|s| !s.is_empty()).cloned();
        col.sparse = seg.sparse_specs();
        col.dense = seg.dense_specs().to_vec();
        // Later seals build the same kind of index, sized for their own rows; when every
        // vector's codes have its dimension's default width, the width is left to each seal
        // (each vector then gets its own default).
        let default_widths = seg.default_code_widths();
        col.index = match seg.index_kind() {
            IndexKind::IvfRabitq(p) => IndexKind::IvfRabitq(shoal_index::ivf::IvfParams {
                partitions: None,
                bits: p.bits.filter(|_| !default_widths),
                ..p
            }),
            flat => flat,
        };
        col.push_part(Arc::new(seg), Bitset::default(), None);
        Ok(col)
    }

    /// Opens a copy of segment bytes that may sit at any address.
    pub fn from_bytes(bytes: &[u8]) -> Result<Collection, Error> {
        Collection::open(Box::new(AlignedBytes::from_slice(bytes)))
    }

    /// Appends a sealed segment to the set (numbered next) with its deleted rows.
    fn push_part(&mut self, seg: Arc<SealedSegment>, deleted: Bitset, live_file: Option<u64>) {
        self.push_numbered(seg, deleted, live_file, self.next_number);
    }

    /// Appends a sealed segment to the set with the given file-name number.
    fn push_numbered(&mut self, seg: Arc<SealedSegment>, deleted: Bitset, live_file: Option<u64>, number: u64) {
        let base = self.sealed_rows();
        self.next_number = self.next_number.max(number + 1);
        self.parts.push(Part { seg, deleted, base, number, live_file, changed: false });
    }

    /// Recomputes every segment's base after the set changed.
    fn rebase(&mut self) {
        let mut base = 0;
        for p in &mut self.parts {
            p.base = base;
            base += p.seg.rows();
        }
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

    /// Number of sealed segments.
    pub fn segment_count(&self) -> usize {
        self.parts.len()
    }

    /// The `i`-th sealed segment, in set order.
    pub fn segment(&self, i: usize) -> Option<&SealedSegment> {
        self.parts.get(i).map(|p| &*p.seg)
    }

    /// Rows of every sealed segment, deleted ones included.
    fn sealed_rows(&self) -> usize {
        self.parts.last().map_or(0, |p| p.base + p.seg.rows())
    }

    /// Live rows of the sealed segments.
    pub fn sealed_len(&self) -> usize {
        self.parts.iter().map(|p| p.seg.rows() - p.deleted.count()).sum()
    }

    /// Number of live points.
    pub fn len(&self) -> usize {
        self.sealed_len() + self.mutable.live()
    }

    /// Whether the collection holds no live point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a live point has external id `id`.
    pub fn contains(&self, id: PointId) -> bool {
        self.mutable.index.contains_key(&id) || self.sealed_row(id).is_some()
    }

    /// The segment and row holding the live sealed point `id`.
    fn sealed_row(&self, id: PointId) -> Option<(usize, usize)> {
        self.parts
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.seg.row_of(id).filter(|&r| !p.deleted.contains(r)).map(|r| (i, r)))
    }

    /// The internal id of the live point `id`.
    fn internal_of(&self, id: PointId) -> Option<usize> {
        match self.mutable.index.get(&id) {
            Some(&row) => Some(self.sealed_rows() + row as usize),
            None => self.sealed_row(id).map(|(p, row)| self.parts[p].base + row),
        }
    }

    /// Where internal id `internal` lives.
    fn locate(&self, internal: usize) -> Loc {
        let i = self.parts.partition_point(|p| p.base <= internal);
        match i.checked_sub(1) {
            Some(p) if internal < self.parts[p].base + self.parts[p].seg.rows() => {
                Loc::Sealed(p, internal - self.parts[p].base)
            }
            _ => Loc::Mutable(internal - self.sealed_rows()),
        }
    }

    /// The stored vector of a live point (normalised for cosine); `None` also for the points
    /// of a codes-only segment, which keeps no vectors.
    pub fn vector(&self, id: PointId) -> Option<&[f32]> {
        self.dense_at(self.internal_of(id)?, 0)
    }

    /// Whether the collection keeps index codes only (a codes-only segment, see
    /// [`Error::CodesOnly`]).
    pub fn codes_only(&self) -> bool {
        self.parts.iter().any(|p| p.seg.codes_only())
    }

    /// Refuses changes to a codes-only collection.
    fn writable(&self, what: &'static str) -> Result<(), Error> {
        if self.codes_only() { Err(Error::CodesOnly(what)) } else { Ok(()) }
    }

    /// The payload of a live point (`{}` when it has none).
    pub fn payload(&self, id: PointId) -> Option<Value> {
        self.internal_of(id).map(|internal| self.payload_of(internal))
    }

    /// The stored payload of an internal id.
    fn payload_of(&self, internal: usize) -> Value {
        let doc = match self.locate(internal) {
            Loc::Sealed(p, row) => self.parts[p].seg.payload().and_then(|v| v.document(row as u32).ok()),
            Loc::Mutable(row) => self.mutable.payloads.get(row).cloned(),
        };
        match doc {
            Some(d @ Value::Object(_)) => d,
            _ => Value::Object(serde_json::Map::new()),
        }
    }

    /// The external id of an internal id.
    fn external_id(&self, internal: usize) -> PointId {
        match self.locate(internal) {
            Loc::Sealed(p, row) => self.parts[p].seg.id(row),
            Loc::Mutable(row) => self.mutable.ids[row],
        }
    }

    /// The ids of the live points that pass `filter` (Qdrant's filter JSON; `None` or `null`:
    /// every live point), ascending ([`PointId`] order: integers, then UUIDs). For counting,
    /// scrolling and deleting by filter.
    pub fn matching_ids(&self, filter: Option<&Value>) -> Result<Vec<PointId>, Error> {
        let filter = self.parse_filter(filter)?;
        let filter = filter.as_ref();
        let mut ids = Vec::new();
        for part in &self.parts {
            let seg = &part.seg;
            match filter {
                None => ids.extend((0..seg.rows()).filter(|&r| !part.deleted.contains(r)).map(|r| seg.id(r))),
                Some(f) => {
                    let view = seg.payload();
                    let compiled = view.as_ref().map(|v| self.compile_filter(seg, v, f)).transpose()?;
                    ids.extend(self.sealed_matching(part, compiled.as_ref(), f).iter().map(|r| seg.id(r as usize)));
                }
            }
        }
        let m = &self.mutable;
        ids.extend((0..m.rows()).filter(|&r| m.passes(r, filter, self.nested())).map(|r| m.ids[r]));
        crate::ids::sort_ids(&mut ids);
        Ok(ids)
    }

    /// The index the next seal builds: what [`seal_with`](Self::seal_with) set, or for a
    /// collection opened from a segment, that segment's kind of index with its partition count
    /// left to each new segment (about `2 √rows`); [`SealedSegment::index_kind`] tells what a
    /// segment carries.
    pub fn index_kind(&self) -> IndexKind {
        self.index
    }
}

/// Checks that no dense vector shares a name with a sparse one (Qdrant's one namespace).
fn check_namespace(dense: &[DenseSpec], sparse: &[SparseSpec]) -> Result<(), Error> {
    if dense.iter().any(|d| sparse.iter().any(|s| s.name == d.name)) {
        return Err(Error::InvalidConfig("a dense and a sparse vector share a name"));
    }
    Ok(())
}
