//! IVF partitions over RaBitQ codes: k-means assigns every vector to a partition; a query
//! probes the `nprobe` nearest partitions, estimates every distance there with FastScan
//! lookups, keeps the `rerank * k` best estimates, and computes exact distances for those
//! (in order of their lower bounds) until the bound proves no remaining candidate can enter.
//! With extra bits per coordinate (extended RaBitQ), the rows whose 1-bit estimate comes near
//! the candidates' bound ([`SCREEN_ERR`]) are refined with their extra bits as the partition is
//! scanned, and the candidates are the best of those refined estimates: far fewer exact
//! distances for the same recall.
//!
//! Rows are stored sorted by partition, so partition `p` is the row range
//! `offsets[p]..offsets[p + 1]` and its codes are FastScan blocks
//! `block_offsets[p]..block_offsets[p + 1]`.

use alloc::vec::Vec;

use shoal_kernels::Kernels;

use crate::rabitq::{self, EPSILON0, ExFactors, Factors, QueryTerms, ex_code_bytes};
use crate::rotation::Rotation;
use crate::{Candidate, Metric, TopK};

mod build;
pub mod codes;
pub mod sections;
mod subset;
pub mod v2;
pub use build::{IvfCodes, IvfPlan, encode, plan};
pub use sections::IvfSections;
pub use subset::{IvfSubset, PartitionBytes, WrongLength};

/// Build settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IvfParams {
    /// Number of partitions; `None` picks [`default_partitions`].
    pub partitions: Option<usize>,
    /// Seed of k-means and the rotation.
    pub seed: u64,
    /// Bits per coordinate of the codes, 1..=[`MAX_BITS`](crate::rabitq::MAX_BITS): the sign bit searched with FastScan,
    /// plus `bits - 1` extra bits that refine the estimates of the rows the sign bits find
    /// near, from which the candidates for exact distances are chosen (extended RaBitQ).
    /// `None` picks [`default_bits`] for the dimension.
    pub bits: Option<u32>,
    /// Keep only the codes (no full vectors): searches rank by the extended-bit estimates, so
    /// it needs `bits >= 2`. A segment written so is read-only (nothing to rebuild it from).
    pub codes_only: bool,
}

impl Default for IvfParams {
    fn default() -> Self {
        IvfParams { partitions: None, seed: 0x5ea1, bits: None, codes_only: false }
    }
}

/// Bits per coordinate for `dim`-dimensional vectors: 4 up to 128 dimensions, 1 above. With
/// few dimensions the sign bits alone estimate distances loosely, and the extra bits' tighter
/// estimates cut the rows re-ranked by more than they cost (measured: 1.2-1.7x the QPS at
/// recall 0.95-0.99 on 50-d GloVe, 1.2x at 0.95 on 128-d); at 256 dimensions the sign bits
/// are close enough and the extra bits cost more than they save (0.84x).
pub fn default_bits(dim: usize) -> u32 {
    if dim <= 128 { 4 } else { 1 }
}

/// Partitions for `n` vectors: about `2 √n` (at least 1, at most `n`).
pub fn default_partitions(n: usize) -> usize {
    let p = 2.0 * libm::sqrt(n as f64);
    (libm::round(p) as usize).clamp(1, n.max(1))
}

/// Default `nprobe` for `nlist` partitions: about 1/16 of them, at least 8.
pub fn default_nprobe(nlist: usize) -> usize {
    nlist.div_ceil(16).max(8).min(nlist)
}

/// Default re-ranking depth: exact distances for up to this many candidates per result.
pub const DEFAULT_RERANK: usize = 16;

/// Bytes of one FastScan block for a padded dimension.
pub fn block_bytes(padded: usize) -> usize {
    padded / 4 * 16
}

/// A hint from the host that a row's full vector is about to be read: with vectors
/// memory-mapped from disk it starts the read (`madvise(WILLNEED)`), so the re-ranking of one
/// query keeps several reads in flight instead of faulting them in one at a time. Called with
/// `false` for a vector the search may read soon (with the crate's feature `read-ahead`), and
/// with `true` for each vector right before it is read (every vector a search reads is announced
/// so; a reader by byte ranges learns from it which vectors a search needed).
#[derive(Clone, Copy)]
pub struct Prefetch<'a>(pub &'a (dyn Fn(&[f32], bool) + Sync));

impl core::fmt::Debug for Prefetch<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Prefetch")
    }
}

/// Candidates whose vectors are hinted ahead of the one being re-ranked.
pub const PREFETCH_AHEAD: usize = 8;

/// Keys compared with the bound at once (one vector comparison per few lanes) before any is
/// looked at one by one.
const KEY_CHUNK: usize = 16;

/// With codes of more than one bit, the share of a row's 1-bit error bound by which its 1-bit
/// estimate may lie above the candidates' bound (the `depth`-th best extended-bit estimate so
/// far) and the row still be refined. Measured on GloVe 400k (50-d, 4-bit codes, nprobe 64-192):
/// 0 loses recall the partitions hold (0.925 against 0.952 at nprobe 64, 0.957 against 0.988 at
/// 192), 0.5 refines twice the rows for 0.005 more; 0.25 is between.
pub const SCREEN_ERR: f32 = 0.25;

/// Candidates whose in-memory vectors are prefetched ahead of the one being re-ranked.
pub const RERANK_AHEAD: usize = 4;

/// The index's data as borrowed slices (from a segment's sections).
#[derive(Clone, Copy, Debug)]
pub struct IvfData<'a> {
    /// Vector dimension.
    pub dim: usize,
    /// Centroids, `nlist * dim`.
    pub centroids: &'a [f32],
    /// Rotated centroids, `nlist * padded`.
    pub rot_centroids: &'a [f32],
    /// `nlist + 1` row offsets.
    pub offsets: &'a [u32],
    /// `nlist + 1` block offsets.
    pub block_offsets: &'a [u32],
    /// FastScan blocks.
    pub codes: &'a [u8],
    /// Factors by row.
    pub factors: &'a [Factors],
    /// Full vectors by row for exact re-ranking; `None` for a codes-only index, whose
    /// candidates are ranked by their extended-bit estimates (needs `bits >= 2`).
    pub vectors: Option<&'a [f32]>,
    /// Bits per coordinate of the codes (1: no extra bits).
    pub bits: u32,
    /// Extra bits by row ([`ex_code_bytes`] each; empty for 1-bit codes).
    pub ex_codes: &'a [u8],
    /// Extra-bit factors by row (empty for 1-bit codes).
    pub ex_factors: &'a [ExFactors],
    /// The host's read-ahead hint for full vectors (`None`: vectors are in memory).
    pub prefetch: Option<Prefetch<'a>>,
    /// The segment row of each stored position, when the index's positions are not the
    /// segment's rows (a segment's second dense vector): `skip` and the internal ids take
    /// rows. `None`: position = row.
    pub rows: Option<&'a [u32]>,
}

impl IvfData<'_> {
    /// The segment row of stored position `pos`.
    #[inline]
    fn row_of(&self, pos: usize) -> usize {
        match self.rows {
            Some(rows) => rows[pos] as usize,
            None => pos,
        }
    }
}

/// One search: kernels, metric, the prepared query and its settings.
#[derive(Clone, Copy, Debug)]
pub struct IvfSearch<'q> {
    /// Kernel implementation.
    pub kernels: Kernels,
    /// Metric.
    pub metric: Metric,
    /// Query vector, normalised for cosine.
    pub query: &'q [f32],
    /// Settings.
    pub params: IvfQuery,
}

/// Query-time settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IvfQuery {
    /// Partitions to probe.
    pub nprobe: usize,
    /// Candidates re-ranked exactly per result.
    pub rerank: usize,
    /// Confidence of the error bound, in standard deviations.
    pub epsilon: f32,
    /// Adaptive probing (`l2` and `cosine` only; 0 = off): probe the partitions whose squared
    /// centroid distance is at most this times the nearest one's, at least [`MIN_PROBES`] and
    /// at most `nprobe`.
    pub probe_ratio: f32,
    /// The fraction of rows a filtered search lets through (1 = unfiltered). Below
    /// [`WIDEN_BELOW`] the search probes `sqrt(WIDEN_BELOW / passing)` times as many partitions
    /// (after adaptive probing): the nearest passing points lie further out.
    pub passing: f32,
}

/// Filtered searches passing fewer rows than this fraction probe more partitions. Measured on
/// GloVe 400k (1,265 partitions): with 10% of the rows passing, the unfiltered probes keep
/// recall@10; with 1% it fell from 0.966 to 0.902 and took 2.5-3x the probes to recover.
pub const WIDEN_BELOW: f32 = 0.1;

/// How many times its `nprobe` a filtered search probes when `passing` of the rows pass:
/// `sqrt(WIDEN_BELOW / passing)` below [`WIDEN_BELOW`], else 1.
#[inline(always)]
pub fn widening(passing: f32) -> f32 {
    if passing < WIDEN_BELOW { libm::sqrtf(WIDEN_BELOW / passing.max(f32::MIN_POSITIVE)) } else { 1.0 }
}

/// The probe keys of `query` against `centroids` (`out.len()` of them) under `metric`, with
/// `kernels`: what a search orders partitions by (squared l2 for l2 and cosine, minus the inner
/// product for dot; NaN probes as +inf).
#[inline(always)]
pub fn probe_keys(kernels: &Kernels, metric: Metric, query: &[f32], centroids: &[f32], out: &mut [f32]) {
    match metric {
        Metric::Dot => metric.keys(kernels, query, centroids, out),
        Metric::L2 | Metric::Cosine => kernels.l2_sq_batch(query, centroids, out),
    }
}

/// Fewest partitions an adaptive search probes (fewer when the index has fewer).
pub const MIN_PROBES: usize = 4;

/// A partition's place in the probe order as one integer: its centroid key (NaN as +inf) in
/// the high half, mapped so that integer order is `f32::total_cmp` order, and the partition in
/// the low half (ties by partition). Sorting these is sorting `(key, partition)` pairs.
fn probe_key(key: f32, partition: u32) -> u64 {
    (u64::from(crate::order::f32_key(if key.is_nan() { f32::INFINITY } else { key })) << 32) | u64::from(partition)
}

/// The centroid key of a [`probe_key`].
fn probe_distance(probe: u64) -> f32 {
    crate::order::f32_of((probe >> 32) as u32)
}

/// A candidate of the estimate phase.
#[derive(Clone, Copy, Debug)]
struct Estimate {
    key: f32,
    lower: f32,
    row: u32,
}

/// An [`Estimate`]'s place in the candidate order, as one integer: its key (mapped so that
/// integer order is `f32::total_cmp` order) in the high half, its row in the low half.
fn estimate_order(e: &Estimate) -> u64 {
    u64::from(crate::order::f32_key(e.key)) << 32 | u64::from(e.row)
}

/// Keeps the `depth` (>= 1) best candidates of `cands` by (key, row) — in no particular order —
/// and returns the largest key kept. The selection runs over integer keys (`order` is scratch):
/// one select routine for the whole wasm build instead of one per element type.
fn keep_best(cands: &mut Vec<Estimate>, order: &mut Vec<u64>, depth: usize) -> f32 {
    order.clear();
    order.extend(cands.iter().map(estimate_order));
    let (_, &mut cut, _) = order.select_nth_unstable(depth - 1);
    // Rows are unique, so exactly `depth` candidates are at or below the cut.
    cands.retain(|e| estimate_order(e) <= cut);
    crate::order::f32_of((cut >> 32) as u32)
}

/// Sorts `cands` by lower bound (`f32::total_cmp` order), ties in the order
/// they are in (the scan's), with the plain integer sort only (a comparator's sort is one more
/// sort routine in the wasm package): `(lower, index)` keys. `order` and `sorted` are scratch.
fn sort_by_lower(cands: &mut Vec<Estimate>, order: &mut Vec<u64>, sorted: &mut Vec<Estimate>) {
    // Every lower bound comes from `lower_bound`, never NaN; the guard stays because the wasm
    // package is 56 bytes (gzipped) smaller with it than without (measured).
    let lower = |e: &Estimate| if e.lower.is_nan() { f32::INFINITY } else { e.lower };
    order.clear();
    order.extend(cands.iter().enumerate().map(|(i, e)| u64::from(crate::order::f32_key(lower(e))) << 32 | i as u64));
    shoal_format::sort_u64(order);
    sorted.clear();
    sorted.extend(order.iter().map(|&k| cands[(k & 0xFFFF_FFFF) as usize]));
    core::mem::swap(cands, sorted);
}

/// Reusable buffers of one query; sized on first use, then reused without allocating.
#[derive(Debug, Default)]
pub struct IvfScratch {
    qrot: Vec<f32>,
    y: Vec<f32>,
    levels: Vec<u8>,
    luts: Vec<u8>,
    sums: Vec<u32>,
    /// Partitions in probe order: [`probe_key`]s, sorted as plain integers.
    probes: Vec<u64>,
    centroid_keys: Vec<f32>,
    keys: Vec<f32>,
    /// A partition's rows (by index in it) under the candidates' bound.
    passing: Vec<u32>,
    cands: Vec<Estimate>,
    /// `(key, row)` of the candidates as integers, for selecting the best, then their
    /// `(lower, index)` ([`sort_by_lower`]).
    order: Vec<u64>,
    /// The candidates in their final order.
    sorted: Vec<Estimate>,
    xbar: Vec<f32>,
    part_terms: Vec<f32>,
    one: [f32; 1],
}

/// Counters of one IVF search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IvfStats {
    /// Codes whose distance was estimated.
    pub estimated: u64,
    /// Vectors whose exact distance was computed.
    pub reranked: u64,
    /// Estimates refined with the extra bits: with extra bits, every row refined while its
    /// partition was scanned; without, the candidates handed to a [`Refined`] sink. From
    /// [`IvfIndex::search_refined`] with a sink that wants its first `k`, it is below `k`
    /// exactly when the search found fewer than `k` candidates (a host reading by ranges then
    /// probes more partitions).
    pub refined: u64,
    /// Partitions probed.
    pub probed: u32,
}

/// The static part of a loaded index.
#[derive(Clone, Debug)]
pub struct IvfIndex {
    /// Number of partitions.
    pub nlist: usize,
    /// Padded dimension.
    pub padded: usize,
    /// The rotation.
    pub rotation: Rotation,
}

/// What a search ranking by estimates (codes only) does with its refined candidates.
pub trait Refined {
    /// Whether a candidate whose estimate is at least `lower` can still matter (candidates
    /// come in order of their lower bounds, so the first refused ends the search).
    fn wants(&self, lower: f32) -> bool;
    /// A refined candidate: its internal id, estimate and error bound (the distance lies in
    /// `key ± err` at the index's confidence). A search hands over `err` as its estimate less
    /// the lower bound it sorted by, which can differ from the refined bound by a rounding.
    fn offer(&mut self, id: u64, key: f32, err: f32);
}

impl Refined for TopK {
    fn wants(&self, lower: f32) -> bool {
        self.len() < self.capacity_k() || lower <= self.threshold()
    }

    fn offer(&mut self, id: u64, key: f32, _err: f32) {
        self.push(Candidate { key: if key.is_nan() { f32::INFINITY } else { key }, id });
    }
}

/// Collects the candidates whose exact distance could place them in the top `k`: those whose
/// lower bound is at most the `k`-th smallest upper bound. A host that keeps the full vectors
/// elsewhere (a file, object storage) reads just these and ranks them exactly.
#[derive(Debug, Default)]
pub struct Bounds {
    uppers: TopK,
    /// `(estimate, lower bound, id)` of every refined candidate.
    cands: Vec<(f32, f32, u64)>,
}

impl Bounds {
    /// Empty, for the top `k`.
    pub fn new(k: usize) -> Bounds {
        Bounds { uppers: TopK::new(k), cands: Vec::new() }
    }

    /// The internal ids (below 2^32) that can still enter the top `k`, best estimate first (ties
    /// by id): those whose lower bound is at most the `k`-th smallest upper bound, and at most
    /// `below` (a key already reached exactly, which only narrows the set).
    pub fn finish(&mut self, below: f32, out: &mut Vec<u64>) {
        let kth = if self.uppers.len() < self.uppers.capacity_k() { f32::INFINITY } else { self.uppers.threshold() };
        let t = kth.min(below);
        out.clear();
        // Sorted as one u64 each: the estimate's order key, then the id.
        let key =
            |k: f32, id: u64| u64::from(crate::order::f32_key(if k.is_nan() { f32::INFINITY } else { k })) << 32 | id;
        out.extend(self.cands.iter().filter(|c| c.1 <= t).map(|&(k, _, id)| key(k, id)));
        shoal_format::sort_u64(out);
        out.dedup();
        out.iter_mut().for_each(|k| *k &= u64::from(u32::MAX));
    }
}

impl Refined for Bounds {
    fn wants(&self, lower: f32) -> bool {
        self.uppers.wants(lower)
    }

    fn offer(&mut self, id: u64, key: f32, err: f32) {
        let err = if err.is_nan() { f32::INFINITY } else { err.abs() };
        self.uppers.offer(id, key + err, 0.0);
        // An undefined lower bound (an infinite estimate less an infinite error, or a NaN
        // estimate from a sink's other callers) rules nothing out.
        self.cands.push((key, lower_bound(key, err), id));
    }
}

/// Which vectors [`IvfIndex::search`]'s exact re-ranking reads, predicted from the refined
/// estimates [`IvfIndex::search_refined`] hands over for the same data and query (what a host
/// that fetches vectors by ranges asks for before re-ranking). It runs the re-ranking's own
/// loop — candidates in order of their lower bounds (extended-bit ones with extra bits), and the
/// same break — with each candidate's upper bound standing in for its exact distance. While no exact distance lies above its upper bound, the re-ranking's threshold is
/// never above this loop's, so what it reads is among [`reads`](Self::reads).
#[derive(Debug)]
pub struct RerankReads {
    uppers: TopK,
    reads: Vec<u64>,
}

impl RerankReads {
    /// Empty, for the top `k`.
    pub fn new(k: usize) -> RerankReads {
        RerankReads { uppers: TopK::new(k), reads: Vec::new() }
    }

    /// The internal ids whose vectors the re-ranking reads, in the order it reads them.
    pub fn reads(&self) -> &[u64] {
        &self.reads
    }

    fn full(&self) -> bool {
        self.uppers.len() >= self.uppers.capacity_k()
    }
}

impl Refined for RerankReads {
    fn wants(&self, lower: f32) -> bool {
        // The re-ranking's break, as it writes it.
        !(self.full() && lower > self.uppers.threshold())
    }

    fn offer(&mut self, id: u64, key: f32, err: f32) {
        self.reads.push(id);
        let upper = key + err.abs();
        self.uppers.push(Candidate { key: if upper.is_nan() { f32::INFINITY } else { upper }, id });
    }
}

/// How a search ends: exact distances into a top-k (estimates when the data has no vectors),
/// or every refined estimate to a [`Refined`] sink.
enum Finish<'t> {
    Best(&'t mut TopK),
    Refined(&'t mut dyn Refined),
}

impl IvfIndex {
    /// Orders the partitions for `search` into `s.probes` ([`probe_key`]s): the first `nprobe`
    /// (returned: after widening for a filter and adaptive probing) sorted, the rest after them
    /// in any order.
    #[inline(always)]
    fn order_probes(&self, search: &IvfSearch<'_>, centroids: &[f32], s: &mut IvfScratch) -> usize {
        let IvfSearch { kernels, metric, query, params: q } = *search;
        let kernels = &kernels;
        let nlist = self.nlist;
        // Probe order: nearest centroids (l2; inner product for dot), ties by partition.
        s.probes.clear();
        s.centroid_keys.resize(nlist, 0.0);
        let keys = &mut s.centroid_keys[..];
        probe_keys(kernels, metric, query, centroids, keys);
        s.probes.extend(keys.iter().enumerate().map(|(p, &k)| probe_key(k, p as u32)));
        let factor = widening(q.passing);
        let widen = |n: usize| ((n as f32 * factor) as usize).clamp(1, nlist);
        let mut nprobe = widen(q.nprobe.max(1));
        if nprobe < nlist {
            s.probes.select_nth_unstable(nprobe - 1);
        }
        shoal_format::sort_u64(&mut s.probes[..nprobe]);
        if q.probe_ratio > 0.0 && metric != Metric::Dot {
            let limit = probe_distance(s.probes[0]) * q.probe_ratio;
            let within = s.probes[..q.nprobe.clamp(1, nlist)].partition_point(|&p| probe_distance(p) <= limit);
            nprobe = widen(within.max(MIN_PROBES)).min(nprobe);
        }
        nprobe
    }

    /// The partitions `search` probes, in the order it probes them, into `out`: the first
    /// `n` (returned) always; then each next one in turn only while fewer than `k` candidates
    /// have been found (tiny or filtered partitions). `centroids` are the index's.
    pub fn probe_order(
        &self,
        search: &IvfSearch<'_>,
        centroids: &[f32],
        scratch: &mut IvfScratch,
        out: &mut Vec<u32>,
    ) -> usize {
        let n = self.order_probes(search, centroids, scratch);
        shoal_format::sort_u64(&mut scratch.probes[n..]);
        out.clear();
        out.extend(scratch.probes.iter().map(|&p| p as u32));
        n
    }

    /// Runs `search` over `data`, offering exact results to `topk` with internal ids
    /// `first_id + row` (estimates, for codes-only data). Rows with `skip(row)` are ignored.
    pub fn search(
        &self,
        search: &IvfSearch<'_>,
        data: &IvfData<'_>,
        skip: Option<&dyn Fn(usize) -> bool>,
        first_id: u64,
        scratch: &mut IvfScratch,
        topk: &mut TopK,
    ) -> IvfStats {
        self.run(search, data, skip, first_id, scratch, topk.capacity_k(), Finish::Best(topk))
    }

    /// [`search`](Self::search) for the top `k`, ranking by the extended-bit estimates whether
    /// or not `data` has vectors, and handing every refined candidate to `sink`.
    #[allow(clippy::too_many_arguments)]
    pub fn search_refined(
        &self,
        search: &IvfSearch<'_>,
        data: &IvfData<'_>,
        skip: Option<&dyn Fn(usize) -> bool>,
        first_id: u64,
        scratch: &mut IvfScratch,
        k: usize,
        sink: &mut dyn Refined,
    ) -> IvfStats {
        self.run(search, data, skip, first_id, scratch, k, Finish::Refined(sink))
    }

    // One copy for both entry points (inlined, the whole search would be twice in wasm).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        search: &IvfSearch<'_>,
        data: &IvfData<'_>,
        skip: Option<&dyn Fn(usize) -> bool>,
        first_id: u64,
        scratch: &mut IvfScratch,
        k: usize,
        finish: Finish<'_>,
    ) -> IvfStats {
        let IvfSearch { kernels, metric, query, params: q } = *search;
        let kernels = &kernels;
        let (dim, padded, nlist) = (data.dim, self.padded, self.nlist);
        let mut stats = IvfStats::default();
        let s = scratch;
        s.qrot.resize(padded, 0.0);
        s.y.resize(padded, 0.0);
        s.levels.resize(padded, 0);
        s.luts.resize(padded / 4 * 16, 0);
        self.rotation.apply(query, &mut s.qrot);
        s.part_terms.resize(nlist, 0.0);
        let nprobe = self.order_probes(search, data.centroids, s);
        let depth = k.saturating_mul(q.rerank.max(1)).max(k);
        // The `depth` best estimates: candidates under `bound` are appended, and whenever twice
        // `depth` have gathered the best `depth` are selected (by `estimate_order`: key, then row) and
        // `bound` falls to the worst of them. The same set as a heap of `depth` keeps, at O(1)
        // amortised per candidate instead of a sift per replacement.
        s.cands.clear();
        let mut bound = f32::INFINITY;
        let spill = depth.saturating_mul(2);
        let bb = block_bytes(padded);
        // Inner-product metrics quantize the query once; l2 per partition (residual to it).
        let bits = data.bits;
        let exb = ex_code_bytes(padded, bits);
        let qnorm = if bits > 1 && metric != Metric::L2 { libm::sqrtf(kernels.dot(&s.qrot, &s.qrot)) } else { 0.0 };
        s.xbar.resize(padded, 0.0);
        let ex = ExQuery { data, kernels, metric, bb, exb, qnorm, epsilon: q.epsilon };
        let mut terms = QueryTerms::default();
        if metric != Metric::L2 {
            terms = rabitq::quantize_query(kernels, &s.qrot, q.epsilon, &mut s.levels, &mut s.luts);
        }
        // Probe `nprobe` partitions; if they hold fewer than `k` live candidates (tiny or
        // mostly deleted partitions), keep probing in order until `k` are found or none is left.
        for pi in 0..nlist {
            if pi >= nprobe && s.cands.len() >= k {
                break;
            }
            if pi == nprobe {
                shoal_format::sort_u64(&mut s.probes[nprobe..]);
            }
            let p = s.probes[pi] as u32 as usize;
            let (r0, r1) = (data.offsets[p] as usize, data.offsets[p + 1] as usize);
            if r0 == r1 {
                continue;
            }
            stats.probed += 1;
            let mut centroid_ip = 0.0;
            if metric == Metric::L2 {
                for ((y, x), c) in s.y.iter_mut().zip(&s.qrot).zip(&data.rot_centroids[p * padded..(p + 1) * padded]) {
                    *y = x - c;
                }
                terms = rabitq::quantize_query(kernels, &s.y, q.epsilon, &mut s.levels, &mut s.luts);
            } else {
                centroid_ip = kernels.dot(query, &data.centroids[p * dim..(p + 1) * dim]);
            }
            // What refining this partition's candidates needs: `‖y‖²` (l2) or `<q, centroid>`.
            s.part_terms[p] = if metric == Metric::L2 { terms.norm_sq } else { centroid_ip };
            let (b0, b1) = (data.block_offsets[p] as usize, data.block_offsets[p + 1] as usize);
            if s.sums.len() < (b1 - b0) * 32 {
                s.sums.resize((b1 - b0) * 32, 0);
            }
            let sums = &mut s.sums[..(b1 - b0) * 32];
            kernels.fastscan(&s.luts, &data.codes[b0 * bb..b1 * bb], sums);
            // Keys for the whole partition in one branch-free pass per metric (it vectorises);
            // then only blocks of keys with one under `bound` are looked at further.
            let n = r1 - r0;
            s.keys.resize(s.keys.len().max(n), 0.0);
            let keys = &mut s.keys[..n];
            let factors = &data.factors[r0..r1];
            if metric == Metric::L2 {
                for ((key, &sum), f) in keys.iter_mut().zip(&sums[..n]).zip(factors) {
                    *key = finite(terms.l2_key(f, sum));
                }
            } else {
                for ((key, &sum), f) in keys.iter_mut().zip(&sums[..n]).zip(factors) {
                    *key = finite(-(centroid_ip + 0.5 * terms.twice_ip(f, sum)));
                }
            }
            if bits > 1 {
                // With extra bits, a row is refined when its 1-bit estimate less a share of its
                // error bound is under `bound` (an extended-bit estimate).
                for (key, f) in keys.iter_mut().zip(factors) {
                    let err = if metric == Metric::L2 { terms.l2_err(f) } else { terms.ip_err(f) };
                    *key = finite(*key - SCREEN_ERR * err);
                }
            }
            // The rows under `bound` as it stands, their extra bits requested ahead (refining
            // them reads codes the scan did not: the reads overlap instead of waiting in turn).
            s.passing.clear();
            for (c, chunk) in keys.chunks(KEY_CHUNK).enumerate() {
                let mut any = false;
                for &key in chunk {
                    any |= key <= bound;
                }
                if !any || depth == 0 {
                    continue;
                }
                for (j, &key) in chunk.iter().enumerate() {
                    if key <= bound {
                        s.passing.push((c * KEY_CHUNK + j) as u32);
                    }
                }
            }
            if bits > 1 {
                for &i in &s.passing {
                    let row = r0 + i as usize;
                    shoal_kernels::prefetch(&data.ex_codes[row * exb..(row + 1) * exb]);
                    shoal_kernels::prefetch(core::slice::from_ref(&data.ex_factors[row]));
                }
            }
            for &i in &s.passing {
                let (i, key) = (i as usize, keys[i as usize]);
                // `<=`: a tie on the key is decided by the row (`estimate_order`). (`bound` only
                // falls: these are the rows under it now.)
                if key > bound {
                    continue;
                }
                let row = r0 + i;
                if skip.is_some_and(|f| f(data.row_of(row))) {
                    continue;
                }
                let (key, err) = if bits > 1 {
                    // The candidates are the `depth` best extended-bit estimates, refined while
                    // the row's codes are in cache.
                    stats.refined += 1;
                    let (key, err) = ex.refine_in(row, p, &s.qrot, &s.part_terms, &mut s.xbar);
                    if key > bound {
                        continue;
                    }
                    (key, err)
                } else {
                    (key, if metric == Metric::L2 { terms.l2_err(&factors[i]) } else { terms.ip_err(&factors[i]) })
                };
                s.cands.push(Estimate { key, lower: lower_bound(key, err), row: row as u32 });
                if s.cands.len() >= spill {
                    bound = keep_best(&mut s.cands, &mut s.order, depth);
                }
            }
            stats.estimated += (r1 - r0) as u64;
        }
        // Exact distances in order of lower bounds, until no remaining bound can beat the k-th.
        if s.cands.len() > depth {
            keep_best(&mut s.cands, &mut s.order, depth);
        }
        sort_by_lower(&mut s.cands, &mut s.order, &mut s.sorted);
        let (topk, vectors) = match (finish, data.vectors) {
            (Finish::Best(topk), Some(vectors)) => (topk, vectors),
            (finish, _) => {
                // Ranked by estimates: the extended-bit estimate is the distance (without extra
                // bits, which a codes-only segment never has, the 1-bit one). Candidates come in
                // order of their lower bounds; the first the sink refuses ends it.
                let sink: &mut dyn Refined = match finish {
                    Finish::Best(topk) => topk,
                    Finish::Refined(sink) => sink,
                };
                for e in &s.cands {
                    if !sink.wants(e.lower) {
                        break;
                    }
                    if bits == 1 {
                        stats.refined += 1;
                    }
                    sink.offer(first_id + data.row_of(e.row as usize) as u64, e.key, e.key - e.lower);
                }
                return stats;
            }
        };
        #[cfg(feature = "read-ahead")]
        let mut ahead = 0;
        // Vectors in memory: the next candidates' lines are requested ahead of their distances
        // (a hint only), so their cache misses overlap instead of coming one after another.
        let vector = |r: u32| &vectors[r as usize * dim..(r as usize + 1) * dim];
        for e in s.cands.iter().take(RERANK_AHEAD) {
            shoal_kernels::prefetch(vector(e.row));
        }
        for j in 0..s.cands.len() {
            let e = s.cands[j];
            if let Some(next) = s.cands.get(j + RERANK_AHEAD) {
                shoal_kernels::prefetch(vector(next.row));
            }
            if topk.len() >= k && e.lower > topk.threshold() {
                break;
            }
            #[cfg(feature = "read-ahead")]
            if let Some(Prefetch(hint)) = data.prefetch {
                // Hint the vectors of the next candidates that can still enter, so their reads
                // overlap with this one's (the threshold only falls: a candidate that fails it
                // now fails it later too, and so do all after it, sorted by lower bound).
                while ahead < s.cands.len() && ahead < j + PREFETCH_AHEAD {
                    let c = s.cands[ahead];
                    ahead += 1;
                    if topk.len() >= k && c.lower > topk.threshold() {
                        ahead = s.cands.len();
                        break;
                    }
                    let r = c.row as usize;
                    hint(&vectors[r * dim..(r + 1) * dim], false);
                }
            }
            let row = e.row as usize;
            if let Some(Prefetch(hint)) = data.prefetch {
                hint(&vectors[row * dim..(row + 1) * dim], true);
            }
            metric.keys(kernels, query, &vectors[row * dim..(row + 1) * dim], &mut s.one);
            let key = if s.one[0].is_nan() { f32::INFINITY } else { s.one[0] };
            topk.push(Candidate { key, id: first_id + data.row_of(row) as u64 });
            stats.reranked += 1;
        }
        stats
    }
}

impl IvfIndex {
    /// The codes-only stand-in for an exact scan of chosen rows (a filter's few matches):
    /// offers each of `rows` to `sink` with the key a codes-only search ranks it by, its
    /// extended-bit estimate (and its error bound). Rows ascending cost least (each partition's query terms are
    /// computed once per run of its rows). Returns how many rows were estimated; none without
    /// extra bits (`data.bits < 2`), which a codes-only index always has.
    pub fn estimate_rows(
        &self,
        search: &IvfSearch<'_>,
        data: &IvfData<'_>,
        rows: &mut dyn Iterator<Item = usize>,
        first_id: u64,
        scratch: &mut IvfScratch,
        sink: &mut dyn Refined,
    ) -> u64 {
        let IvfSearch { kernels, metric, query, params: q } = *search;
        if data.bits < 2 {
            return 0;
        }
        let kernels = &kernels;
        let (dim, padded, nlist) = (data.dim, self.padded, self.nlist);
        let s = scratch;
        s.qrot.resize(padded, 0.0);
        s.y.resize(padded, 0.0);
        s.part_terms.resize(nlist, 0.0);
        s.xbar.resize(padded, 0.0);
        self.rotation.apply(query, &mut s.qrot);
        let bb = block_bytes(padded);
        let exb = ex_code_bytes(padded, data.bits);
        let qnorm = if metric != Metric::L2 { libm::sqrtf(kernels.dot(&s.qrot, &s.qrot)) } else { 0.0 };
        let ex = ExQuery { data, kernels, metric, bb, exb, qnorm, epsilon: q.epsilon };
        let (mut current, mut count) = (usize::MAX, 0u64);
        for row in rows {
            let p = partition_of(data.offsets, row);
            if p != current {
                // The same per-partition terms a search computes when it probes `p` (`‖y‖²` as
                // `quantize_query` computes it).
                current = p;
                if metric == Metric::L2 {
                    let rc = &data.rot_centroids[p * padded..(p + 1) * padded];
                    for ((y, x), c) in s.y.iter_mut().zip(&s.qrot).zip(rc) {
                        *y = x - c;
                    }
                    s.part_terms[p] = kernels.dot(&s.y, &s.y);
                } else {
                    s.part_terms[p] = kernels.dot(query, &data.centroids[p * dim..(p + 1) * dim]);
                }
            }
            let (key, err) = ex.refine_in(row, p, &s.qrot, &s.part_terms, &mut s.xbar);
            sink.offer(first_id + data.row_of(row) as u64, key, err);
            count += 1;
        }
        count
    }
}

/// What refining a candidate with its extra bits needs, besides the query's buffers.
struct ExQuery<'d, 'a> {
    data: &'d IvfData<'a>,
    kernels: &'d Kernels,
    metric: Metric,
    /// Bytes of a FastScan block.
    bb: usize,
    /// Bytes of a row's extra-bit code.
    exb: usize,
    /// `‖q_rot‖` (inner-product metrics).
    qnorm: f32,
    epsilon: f32,
}

impl ExQuery<'_, '_> {
    /// The extra-bit estimate of `row`, which lies in partition `p`, and its error bound:
    /// `(key, err)`. A NaN estimate is `+inf` (as every key of a search is).
    fn refine_in(&self, row: usize, p: usize, qrot: &[f32], part_terms: &[f32], xbar: &mut [f32]) -> (f32, f32) {
        let (data, bb, exb) = (self.data, self.bb, self.exb);
        let i = row - data.offsets[p] as usize;
        let block = (data.block_offsets[p] as usize + i / 32) * bb;
        let (codes, ex_code) = (&data.codes[block..block + bb], &data.ex_codes[row * exb..(row + 1) * exb]);
        let xq = rabitq::ex_dot(self.kernels, codes, i % 32, ex_code, data.bits, qrot, xbar);
        let ex = &data.ex_factors[row];
        let (key, err) = if self.metric == Metric::L2 {
            let ny = part_terms[p];
            let ip = ex.scale * (xq - ex.centroid_dot);
            (data.factors[row].norm_sq + ny - 2.0 * ip, 2.0 * ex.err * libm::sqrtf(ny) * self.epsilon)
        } else {
            (-(part_terms[p] + ex.scale * xq), ex.err * self.qnorm * self.epsilon)
        };
        (finite(key), err)
    }
}

/// A key with NaN as `+inf` (a search's keys are never NaN).
#[inline(always)]
fn finite(key: f32) -> f32 {
    if key.is_nan() { f32::INFINITY } else { key }
}

/// `key - err`, the lower bound of an estimate; an undefined one (an infinite key less an
/// infinite or NaN error) is `-inf`: it rules nothing out, in every path that reads it (the
/// exact re-ranking, [`RerankReads`], [`Bounds`]).
fn lower_bound(key: f32, err: f32) -> f32 {
    let lower = key - err;
    if lower.is_nan() { f32::NEG_INFINITY } else { lower }
}

/// The partition holding `row`, from the `nlist + 1` row offsets (`offsets[0]` is 0).
fn partition_of(offsets: &[u32], row: usize) -> usize {
    offsets.partition_point(|&o| o as usize <= row) - 1
}

/// Default query settings for an index of `nlist` partitions.
pub fn default_query(nlist: usize) -> IvfQuery {
    IvfQuery {
        nprobe: default_nprobe(nlist),
        rerank: DEFAULT_RERANK,
        epsilon: EPSILON0,
        probe_ratio: 0.0,
        passing: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn probe_keys_sort_as_key_then_partition() {
        let mut rng = Rng::new(3);
        let mut specials =
            alloc::vec![0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -f32::MIN_POSITIVE];
        specials.extend([f32::MAX, f32::MIN, 1.0, 1.0, -1.0]);
        let mut pairs: Vec<(f32, u32)> = specials.iter().enumerate().map(|(p, &k)| (k, p as u32)).collect();
        for p in pairs.len()..2000 {
            let k = f32::from_bits(rng.next_u64() as u32);
            pairs.push((if k.is_nan() { 2.5 } else { k }, p as u32));
        }
        let mut by_pair = pairs.clone();
        by_pair.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut by_key: Vec<u64> = pairs.iter().map(|&(k, p)| probe_key(k, p)).collect();
        by_key.sort_unstable();
        for (&(k, p), &key) in by_pair.iter().zip(&by_key) {
            assert_eq!(key as u32, p);
            assert_eq!(probe_distance(key).to_bits(), k.to_bits());
        }
        assert_eq!(probe_distance(probe_key(f32::NAN, 0)), f32::INFINITY);
    }
}
