//! A segment searched where it lies — a static host, a CDN, an object store — by fetching the
//! byte ranges each query needs instead of the whole file.
//!
//! The core does no I/O. [`RemoteSegment::open`] and [`RemoteSegment::search`] run over the
//! bytes fetched so far (a [`RangeCache`]) and either finish or name the ranges they lack
//! ([`Step::Fetch`]); the host fetches those (all of one step concurrently: one *wave*),
//! inserts them and calls again. Each call starts over from the cache, so the last one is a
//! search over the same bytes a local search reads, in the same order: the results are the
//! local results, bit for bit.
//!
//! A vector search of an IVF-RaBitQ segment fetches in two waves: (1) the partitions it probes
//! (codes, factors, extra bits and ids), then (2) the full vectors of the candidates whose
//! error bounds let them still enter the top `k`. A third comes only when an exact distance
//! falls outside its estimate's bound and the re-ranking reads past the second wave's rows
//! (or when the probed partitions hold fewer than `k` points and more are probed).
//!
//! What a segment read by ranges answers is the vector search of its one dense vector, without
//! a filter or payloads (`docs/format.md`, "Reading by ranges", lists the rest); the ranges of
//! a format-1 segment are checked only where whole sections are read (the header, the table
//! and the sections read at open).

mod cache;

use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::{
    FLAG_DENSE_VECTORS, FLAG_UUID_IDS, KIND_IDS, KIND_META, KIND_VECTORS, SectionEntry, SegmentHead, crc32c,
};
use shoal_index::ivf::{Bounds, IvfScratch, IvfSearch, IvfSections, IvfSubset, PartitionBytes, Prefetch, Refined};
use shoal_index::{Metric, TopK};
use shoal_kernels::Kernels;

pub use cache::{RangeCache, coalesce};

use crate::collection::{cut, prepare_vector};
use crate::sections::bad;
use crate::{Collection, Error, ScoredPoint, SearchRequest, SearchResponse, SearchStats};

/// What a reader by ranges does next.
#[derive(Debug, PartialEq)]
pub enum Step<T> {
    /// Fetch these ranges of the file (sorted, apart, each a whole number of 64-byte lines
    /// except where the file ends), insert them into the cache, and call again.
    Fetch(Vec<Range<u64>>),
    /// Finished.
    Done(T),
}

/// Bytes read from offset 0 to open a segment: its header, its table and, in a small file,
/// everything.
pub const OPEN_PREFIX: u64 = 256 * 1024;

/// Ranges this close (in bytes) are fetched as one.
pub const MERGE_GAP: u64 = 16 * 1024;

/// The section kinds of format 1 that a reader by ranges knows (the others are optional).
const KNOWN_KINDS: [u32; 7] = [
    KIND_META,
    KIND_IDS,
    KIND_VECTORS,
    shoal_format::KIND_ID_INDEX,
    shoal_format::KIND_UUIDS,
    shoal_format::KIND_ID_KINDS,
    shoal_format::KIND_UUID_INDEX,
];

/// The rows whose vectors an exact re-ranking reads, as the refined candidates predict them:
/// the first `k` (read before any bound can exclude them) and those whose bounds let them
/// enter the top `k`.
struct Planned {
    bounds: Bounds,
    first: Vec<u64>,
    k: usize,
}

impl Refined for Planned {
    fn wants(&self, lower: f32) -> bool {
        self.first.len() < self.k || self.bounds.wants(lower)
    }

    fn offer(&mut self, id: u64, key: f32, err: f32) {
        if self.first.len() < self.k {
            // Candidates come in the order the re-ranking reads them.
            self.first.push(id);
        }
        self.bounds.offer(id, key, err);
    }
}

/// What a segment read by ranges keeps in memory: its table, and the parts every query reads.
#[derive(Debug)]
pub struct RemoteSegment {
    file_len: u64,
    table_crc: u32,
    dim: usize,
    metric: Metric,
    rows: usize,
    kernels: Kernels,
    ivf: IvfSections,
    centroids: Vec<f32>,
    rot_centroids: Vec<f32>,
    offsets: Vec<u32>,
    block_offsets: Vec<u32>,
    /// `IDS`, and `VECTORS` (`None` in a codes-only segment), in the file.
    ids: Range<u64>,
    vectors: Option<Range<u64>>,
}

/// The byte range a table entry gives.
fn span(e: &SectionEntry) -> Range<u64> {
    e.offset..e.offset + e.length
}

impl RemoteSegment {
    /// Opens a segment from the bytes fetched so far: the header and table (from the first
    /// [`OPEN_PREFIX`] bytes), then, checked against their CRCs, `META` and the index's
    /// partition directory (centroids, offsets, rotation).
    pub fn open(cache: &RangeCache) -> Result<Step<RemoteSegment>, Error> {
        let Some(header) = cache.get(0..64) else { return Ok(Step::Fetch(alloc::vec![0..OPEN_PREFIX])) };
        let table_end = SegmentHead::table_end(header)?;
        let Some(prefix) = cache.get(0..table_end) else { return Ok(Step::Fetch(alloc::vec![0..table_end])) };
        let head = SegmentHead::read(prefix)?;
        if let Some(e) =
            head.table.iter().find(|e| e.flags & shoal_format::SECTION_OPTIONAL == 0 && !KNOWN_KINDS.contains(&e.kind))
        {
            return Err(shoal_format::FormatError::UnknownSection(e.kind).into());
        }
        let flags = head.header.flags;
        if flags & FLAG_UUID_IDS != 0 {
            return Err(Error::Unsupported("UUID point ids in a segment read by ranges"));
        }
        if flags & FLAG_DENSE_VECTORS != 0 {
            return Err(Error::Unsupported("several dense vectors in a segment read by ranges"));
        }
        // The sections read whole at open, each checked against its CRC.
        let hot: Vec<&SectionEntry> =
            core::iter::once(KIND_META).chain(IvfSections::hot_kinds(0)).filter_map(|k| head.entry(k)).collect();
        let missing: Vec<Range<u64>> = hot.iter().map(|e| span(e)).filter(|r| !cache.contains(r)).collect();
        if !missing.is_empty() {
            return Ok(Step::Fetch(coalesce(&missing, MERGE_GAP)));
        }
        for e in &hot {
            let bytes = cache.get(span(e)).expect("fetched");
            let actual = crc32c(bytes);
            if actual != e.crc {
                let what = shoal_format::kind_name(e.kind);
                return Err(
                    shoal_format::FormatError::ChecksumMismatch { what, kind: e.kind, stored: e.crc, actual }.into()
                );
            }
        }
        let section = |kind: u32| head.entry(kind).and_then(|e| cache.get(span(e)));
        let meta = section(KIND_META).ok_or(shoal_format::FormatError::MissingSection("META"))?;
        let (dim, metric, rows, codes_only) = crate::sealed::read_meta(meta)?;
        let ids = span(head.entry(KIND_IDS).ok_or(shoal_format::FormatError::MissingSection("IDS"))?);
        if Some(ids.end - ids.start) != (rows as u64).checked_mul(8) {
            return Err(bad("IDS", "length does not match the row count"));
        }
        let vectors = match head.entry(KIND_VECTORS) {
            Some(e) if !codes_only => {
                if Some(e.length) != (rows as u64).checked_mul(dim as u64 * 4) {
                    return Err(bad("VECTORS", "length does not match rows x dim"));
                }
                Some(span(e))
            }
            Some(_) => return Err(bad("VECTORS", "present in a codes-only segment")),
            None if codes_only => None,
            None => return Err(shoal_format::FormatError::MissingSection("VECTORS").into()),
        };
        let missing = |kind: u32| shoal_format::FormatError::MissingSection(shoal_format::kind_name(kind));
        let entry = |kind: u32| {
            let e = head.entry(kind).ok_or(missing(kind))?;
            let at = |x: u64| usize::try_from(x).map_err(|_| shoal_format::FormatError::Malformed("offset past usize"));
            Ok(at(e.offset)?..at(e.offset + e.length)?)
        };
        // Hot sections lie in what was fetched: the copies below are made from `section`.
        let hot = |kind: u32| section(kind).ok_or(missing(kind));
        if head.entry(shoal_format::KIND_IVF_META).is_none() {
            return Err(Error::Unsupported("a segment without an IVF index, read by ranges (it would be read whole)"));
        }
        let ivf = IvfSections::open_parts((dim, 0), rows, entry, hot)?;
        let [c, rc, o, bo] = ivf.hot_ranges();
        let copy = |r: Range<usize>| cache.get(r.start as u64..r.end as u64).expect("a hot section");
        let floats = |r| copy(r).chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let words = |r| copy(r).chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        Ok(Step::Done(RemoteSegment {
            file_len: head.header.file_len,
            table_crc: head.header.table_crc,
            dim,
            metric,
            rows,
            kernels: Kernels::best(),
            centroids: floats(c),
            rot_centroids: floats(rc),
            offsets: words(o),
            block_offsets: words(bo),
            ivf,
            ids,
            vectors,
        }))
    }

    /// Searches the segment with `req` over the bytes fetched so far: the results, or the
    /// ranges to fetch first. `req` is a vector search of the segment's dense vector (no
    /// `text`, `sparse`, `prefetch`, filter, payloads or `exact`); its settings (`nprobe`,
    /// `rerank`, `offset`, `limit`, `score_threshold`) mean what they mean locally.
    pub fn search(&self, req: &SearchRequest, cache: &RangeCache) -> Result<Step<SearchResponse>, Error> {
        let vector = self.check_request(req)?;
        let mut query = Vec::new();
        prepare_vector(self.kernels, (self.dim, self.metric), vector, &mut query)?;
        let params = Collection::ivf_query(req, self.ivf.defaults);
        let search = IvfSearch { kernels: self.kernels, metric: self.metric, query: &query, params };
        let k = req.offset + req.limit;
        let index = &self.ivf.index;
        let mut scratch = IvfScratch::default();
        let mut order = Vec::new();
        let mut probed = index.probe_order(&search, &self.centroids, &mut scratch, &mut order);
        loop {
            // Wave 1: the probed partitions (in the segment's order, as the subset keeps them).
            let mut parts: Vec<u32> = order[..probed].to_vec();
            shoal_format::sort_u32(&mut parts);
            let ranges: Vec<[Range<u64>; 5]> = parts.iter().map(|&p| self.partition_ranges(p as usize)).collect();
            let missing: Vec<Range<u64>> =
                ranges.iter().flatten().filter(|r| r.start < r.end && !cache.contains(r)).cloned().collect();
            if !missing.is_empty() {
                return Ok(Step::Fetch(coalesce(&missing, MERGE_GAP)));
            }
            let bytes: Vec<PartitionBytes<'_>> = parts
                .iter()
                .zip(&ranges)
                .map(|(&p, [codes, factors, ex_codes, ex_factors, _])| {
                    let get = |r: &Range<u64>| cache.get(r.clone()).unwrap_or(&[]);
                    PartitionBytes {
                        partition: p as usize,
                        codes: get(codes),
                        factors: get(factors),
                        ex_codes: get(ex_codes),
                        ex_factors: get(ex_factors),
                    }
                })
                .collect();
            let shape = (self.dim, index.padded, self.ivf.bits);
            let mut subset = IvfSubset::new(shape, &self.offsets, &bytes, self.vectors.is_some())
                .map_err(|_| bad("RABITQ_CODES", "a partition's bytes are not its length"))?;
            let mut topk = TopK::new(k);
            let short = |found: usize| found < k && probed < order.len();
            let stats = match &self.vectors {
                None => {
                    let data = subset.data(&self.centroids, &self.rot_centroids, None);
                    let st = index.search(&search, &data, None, 0, &mut scratch, &mut topk);
                    if short(topk.len()) {
                        probed = (probed * 2).min(order.len());
                        continue;
                    }
                    st
                }
                Some(vectors) => {
                    // Wave 2: the vectors of the candidates whose bounds can still enter.
                    let data = subset.data(&self.centroids, &self.rot_centroids, None);
                    let mut plan = Planned { bounds: Bounds::new(k), first: Vec::new(), k };
                    let st = index.search_refined(&search, &data, None, 0, &mut scratch, k, &mut plan);
                    if short(st.refined as usize) {
                        probed = (probed * 2).min(order.len());
                        continue;
                    }
                    let mut wanted = Vec::new();
                    plan.bounds.finish(f32::INFINITY, &mut wanted);
                    wanted.extend(&plan.first);
                    let row_bytes = self.dim as u64 * 4;
                    let at = |row: u64| vectors.start + row * row_bytes..vectors.start + (row + 1) * row_bytes;
                    let missing: Vec<Range<u64>> =
                        wanted.iter().map(|&r| at(r)).filter(|r| !cache.contains(r)).collect();
                    if !missing.is_empty() {
                        return Ok(Step::Fetch(coalesce(&missing, MERGE_GAP)));
                    }
                    // Every vector of the subset's rows that was fetched (by this wave or an
                    // earlier one) goes in; the exact search notes any other it reads.
                    for (offset, piece) in cache.pieces_in(vectors.clone()) {
                        let first = offset.max(vectors.start);
                        let end = (offset + piece.len() as u64).min(vectors.end);
                        let rows = (first - vectors.start).div_ceil(row_bytes)..(end - vectors.start) / row_bytes;
                        let from = subset.rows().partition_point(|&r| u64::from(r) < rows.start);
                        let to = subset.rows().partition_point(|&r| u64::from(r) < rows.end);
                        for pos in from..to {
                            let r = at(u64::from(subset.rows()[pos]));
                            let v = &piece[(r.start - offset) as usize..(r.end - offset) as usize];
                            let v: Vec<f32> =
                                v.chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
                            subset.set_vector(pos, &v);
                        }
                    }
                    let hint = |v: &[f32], now: bool| {
                        if now {
                            subset.record(v)
                        }
                    };
                    let data = subset.data(&self.centroids, &self.rot_centroids, Some(Prefetch(&hint)));
                    let st = index.search(&search, &data, None, 0, &mut scratch, &mut topk);
                    let missed = subset.take_missed();
                    if !missed.is_empty() {
                        let ranges: Vec<Range<u64>> = missed.iter().map(|&r| at(u64::from(r))).collect();
                        return Ok(Step::Fetch(coalesce(&ranges, MERGE_GAP)));
                    }
                    st
                }
            };
            return Ok(self.respond(req, topk, stats, cache));
        }
    }

    /// The response of a finished search: its best candidates (segment rows) with their ids
    /// (fetched with their partitions), scores, `offset` and `score_threshold` applied.
    fn respond(
        &self,
        req: &SearchRequest,
        mut topk: TopK,
        st: shoal_index::ivf::IvfStats,
        cache: &RangeCache,
    ) -> Step<SearchResponse> {
        let mut best = Vec::new();
        topk.drain_sorted(&mut best);
        let id_at = |row: u64| self.ids.start + row * 8..self.ids.start + row * 8 + 8;
        let missing: Vec<Range<u64>> = best.iter().map(|c| id_at(c.id)).filter(|r| !cache.contains(r)).collect();
        if !missing.is_empty() {
            // (Fetched with the partitions; only a cache trimmed mid-search lacks them.)
            return Step::Fetch(coalesce(&missing, MERGE_GAP));
        }
        let mut points: Vec<ScoredPoint> = best
            .iter()
            .skip(req.offset)
            .map(|c| {
                let b = cache.get(id_at(c.id)).expect("checked above");
                let id = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                ScoredPoint { id: shoal_format::PointId::Num(id), score: self.metric.score(c.key), payload: None }
            })
            .collect();
        cut(&mut points, req.score_threshold, self.metric == Metric::L2);
        let stats = SearchStats { scanned: st.reranked, estimated: st.estimated, segments: 1, exact: false };
        Step::Done(SearchResponse { points, partial: false, stats })
    }

    /// Partition `p`'s byte ranges in the file: FastScan blocks, factors, extra-bit codes and
    /// factors (empty with 1 bit), and its rows' ids.
    fn partition_ranges(&self, p: usize) -> [Range<u64>; 5] {
        let [a, b, c, d] = self.ivf.partition_ranges(p, &self.offsets, &self.block_offsets);
        let wide = |r: Range<usize>| r.start as u64..r.end as u64;
        let (r0, r1) = (u64::from(self.offsets[p]), u64::from(self.offsets[p + 1]));
        [wide(a), wide(b), wide(c), wide(d), self.ids.start + r0 * 8..self.ids.start + r1 * 8]
    }

    /// Checks a request against what a segment read by ranges answers; its query vector.
    fn check_request<'r>(&self, req: &'r SearchRequest) -> Result<&'r [f32], Error> {
        req.check()?;
        if !req.is_vector_only() {
            return Err(Error::Unsupported("`text`, `sparse`, `prefetch` or fusion in a segment read by ranges"));
        }
        if req.filter.as_ref().is_some_and(|f| !f.is_null()) {
            return Err(Error::Unsupported("filters in a segment read by ranges"));
        }
        if req.with_payload {
            return Err(Error::Unsupported("payloads in a segment read by ranges"));
        }
        if req.params.exact {
            return Err(Error::Unsupported("exact search of a segment read by ranges (it reads every vector)"));
        }
        if req.using.as_deref().is_some_and(|u| !u.is_empty()) {
            return Err(Error::InvalidRequest(alloc::format!(
                "`using`: \"{}\" is not a dense vector of the segment",
                req.using.as_deref().unwrap_or("")
            )));
        }
        req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))
    }

    /// Sets the kernels searches use (by default the best this CPU runs).
    pub fn set_kernels(&mut self, kernels: Kernels) {
        self.kernels = kernels;
    }

    /// The file's length, from its header (a host checks it against the object's).
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The CRC-32C of the section table: with the file's length, what identifies the file.
    pub fn table_crc(&self) -> u32 {
        self.table_crc
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Metric.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the segment keeps only its codes (searches rank by their estimates).
    pub fn codes_only(&self) -> bool {
        self.vectors.is_none()
    }
}
