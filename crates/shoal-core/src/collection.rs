use alloc::boxed::Box;
use alloc::vec::Vec;

use shoal_format::AlignedBytes;
use shoal_index::ivf::{IvfQuery, IvfScratch, IvfSearch};
use shoal_index::{Candidate, FlatScan, FlatScratch, Metric, TopK, normalize};
use shoal_kernels::Kernels;

use crate::bitset::Bitset;
use crate::mutable::Mutable;
use crate::pool::Pool;
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

/// A set of points (external `u64` id + vector) that can be searched.
///
/// Inserting an id that exists replaces the old point (upsert). Internal ids, which break score
/// ties, number the sealed segment's rows first, then the mutable segment's in insertion order.
pub struct Collection {
    dim: usize,
    metric: Metric,
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
            kernels: Kernels::best(),
            sealed: None,
            sealed_deleted: Bitset::default(),
            mutable: Mutable::default(),
            index: IndexKind::Flat,
            reindex: false,
            scratch: Pool::new(SCRATCH_SLOTS),
        })
    }

    /// Opens a sealed segment (cheap checks only; see [`verify`](Self::verify)).
    pub fn open(storage: Box<dyn SegmentBytes>) -> Result<Collection, Error> {
        let seg = SealedSegment::open(storage)?;
        let mut col = Collection::new(CollectionConfig { dim: seg.dim(), metric: seg.metric() })?;
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
        self.vector(id).is_some()
    }

    /// The stored vector of a live point (normalised for cosine).
    pub fn vector(&self, id: u64) -> Option<&[f32]> {
        if let Some(&row) = self.mutable.index.get(&id) {
            let row = row as usize;
            return Some(&self.mutable.vectors[row * self.dim..(row + 1) * self.dim]);
        }
        let seg = self.sealed.as_ref()?;
        let row = seg.row_of(id).filter(|&r| !self.sealed_deleted.contains(r))?;
        Some(seg.vector(row))
    }

    /// Inserts (or replaces) points: `vectors` holds `ids.len() * dim` floats, row-major.
    ///
    /// All input is checked before anything changes: on error the collection is as before.
    pub fn insert(&mut self, ids: &[u64], vectors: &[f32]) -> Result<(), Error> {
        if Some(vectors.len()) != ids.len().checked_mul(self.dim) {
            return Err(Error::LengthMismatch { ids: ids.len(), floats: vectors.len(), dim: self.dim });
        }
        self.reserve(ids.len())?;
        self.pending_ids().copy_from_slice(ids);
        self.pending_vectors().copy_from_slice(vectors);
        self.commit(IdEncoding::U64).map(|_| ())
    }

    /// Reserves a batch of `n` points to be filled in place through [`pending_ids`] and
    /// [`pending_vectors`] and made visible by [`commit`]. A batch reserved before and not
    /// committed is dropped.
    ///
    /// [`pending_ids`]: Self::pending_ids
    /// [`pending_vectors`]: Self::pending_vectors
    /// [`commit`]: Self::commit
    pub fn reserve(&mut self, n: usize) -> Result<(), Error> {
        self.mutable.discard_pending(self.dim);
        let total = self.sealed_rows() + self.mutable.rows();
        let rows = total.checked_add(n).filter(|&t| t < u32::MAX as usize).ok_or(Error::CapacityExceeded)?;
        let floats = (self.mutable.rows() + n).checked_mul(self.dim).ok_or(Error::CapacityExceeded)?;
        let _ = rows;
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
        if !self.mutable.reserved {
            return Err(Error::NoPendingBatch);
        }
        if let Err(e) = self.check_pending(ids) {
            self.mutable.discard_pending(self.dim);
            return Err(e);
        }
        let (first, dim) = (self.mutable.committed, self.dim);
        let end = self.mutable.ids.len();
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
        Ok(end - first)
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

    /// Deletes points by id; returns how many existed.
    pub fn delete(&mut self, ids: &[u64]) -> usize {
        ids.iter().filter(|&&id| self.mutable.delete(id) || self.delete_sealed(id)).count()
    }

    /// Seals with a (new) index: later seals rebuild the same kind of index.
    pub fn seal_with(&mut self, index: IndexKind) {
        self.reindex |= index != self.index;
        self.index = index;
        self.seal();
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
        if !dirty {
            return;
        }
        self.mutable.discard_pending(self.dim);
        let dim = self.dim;
        let live = self.len();
        let mut ids = Vec::with_capacity(live);
        let mut vectors = Vec::with_capacity(live * dim);
        if let Some(seg) = &self.sealed {
            for (row, &id) in seg.ids().iter().enumerate() {
                if !self.sealed_deleted.contains(row) {
                    ids.push(id);
                    vectors.extend_from_slice(seg.vector(row));
                }
            }
        }
        let m = &self.mutable;
        for row in 0..m.rows() {
            if !m.deleted.contains(row) {
                ids.push(m.ids[row]);
                vectors.extend_from_slice(&m.vectors[row * dim..(row + 1) * dim]);
            }
        }
        let bytes = SealedSegment::write(&self.kernels, dim, self.metric, &ids, &vectors, self.index);
        drop((ids, vectors));
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
        let stats = self.search_into(req, &mut points)?;
        Ok(SearchResponse { points, partial: false, stats })
    }

    /// Runs a search request, writing the results into `out` (cleared first). Query buffers come
    /// from the collection's scratch pool: once they and `out` have grown to size, a search
    /// allocates nothing.
    pub fn search_into(&self, req: &SearchRequest, out: &mut Vec<ScoredPoint>) -> Result<SearchStats, Error> {
        req.check()?;
        let vector = req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))?;
        self.scratch.with(|s| {
            self.prepare_query(vector, &mut s.query)?;
            let stats = self.search_prepared(req, s);
            out.clear();
            s.topk.drain_sorted(&mut s.best);
            out.extend(
                s.best
                    .iter()
                    .skip(req.offset)
                    .map(|c| ScoredPoint { id: self.external_id(c.id as usize), score: self.metric.score(c.key) }),
            );
            Ok(stats)
        })
    }

    /// Fills `s.topk` with the best `offset + limit` candidates for the prepared `s.query`.
    fn search_prepared(&self, req: &SearchRequest, s: &mut QueryScratch) -> SearchStats {
        let QueryScratch { query, topk, flat, ivf, .. } = s;
        topk.reset(req.offset + req.limit);
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let sealed_rows = self.sealed_rows();
        let scan = FlatScan { kernels: self.kernels, metric: self.metric, query };
        if let Some(seg) = &self.sealed {
            let deleted = &self.sealed_deleted;
            let skip = |r: usize| deleted.contains(r);
            let skip: Option<&dyn Fn(usize) -> bool> = (deleted.count() > 0).then_some(&skip);
            match seg.ivf().filter(|_| !req.params.exact) {
                Some((index, data, defaults)) => {
                    let params = IvfQuery {
                        nprobe: req.params.nprobe.map_or(defaults.nprobe, |n| n as usize),
                        rerank: req.params.rerank.map_or(defaults.rerank, |r| r as usize),
                        epsilon: defaults.epsilon,
                        // An explicit nprobe is probed exactly.
                        probe_ratio: if req.params.nprobe.is_some() { 0.0 } else { defaults.probe_ratio },
                    };
                    let search = IvfSearch { kernels: self.kernels, metric: self.metric, query, params };
                    let st = index.search(&search, &data, skip, 0, ivf, topk);
                    stats.scanned += st.reranked;
                    stats.estimated += st.estimated;
                    stats.exact = false;
                }
                None => {
                    scan.scan(seg.vectors(), 0, skip, flat, topk);
                    stats.scanned += seg.rows() as u64;
                }
            }
            stats.segments += 1;
        }
        let m = &self.mutable;
        if m.rows() > 0 {
            let skip = |r: usize| m.deleted.contains(r);
            let skip: Option<&dyn Fn(usize) -> bool> = (m.deleted.count() > 0).then_some(&skip);
            scan.scan(&m.vectors[..m.rows() * self.dim], sealed_rows as u64, skip, flat, topk);
            stats.scanned += m.rows() as u64;
            stats.segments += 1;
        }
        stats
    }

    fn external_id(&self, internal: usize) -> u64 {
        let sealed_rows = self.sealed_rows();
        match &self.sealed {
            Some(seg) if internal < sealed_rows => seg.ids()[internal],
            _ => self.mutable.ids[internal - sealed_rows],
        }
    }
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
