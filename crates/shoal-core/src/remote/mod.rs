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
//! (codes, factors, extra bits and ids), then (2) the full vectors the exact re-ranking
//! reads, predicted by running its loop with each candidate's upper bound for its exact
//! distance ([`RerankReads`]). A third comes only when an exact distance falls above its
//! bound and the re-ranking reads past the second wave's rows — the vectors it lacks count as
//! infinitely far, so one replay names every one it needs (while no exact distance also falls
//! below its lower bound) — or when the probed partitions hold fewer than `k` points and more
//! are probed. Only a run that lacks nothing answers, so a broken bound costs waves, never
//! a wrong result.
//!
//! A segment read by ranges answers searches by its one dense vector, by text or both fused,
//! with payloads and filters (`docs/format.md`, "Reading by ranges", lists the rest); the ranges of
//! a format-1 segment are checked only where whole sections are read (the header, the table
//! and the sections read at open).

mod cache;
pub mod docs;
mod filter;
mod layout;
mod probes;
mod request;
mod set;
pub mod text;
mod text_query;
mod vector;

use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::{
    FLAG_DENSE_VECTORS, FLAG_UUID_IDS, FormatError, KIND_ID_INDEX, KIND_IDS, KIND_IVF_BLOCKS, KIND_IVF_CENTROIDS,
    KIND_IVF_DIR, KIND_IVF_META, KIND_META, KIND_RABITQ_ROTATION, KIND_VECTORS, SECTION_HOT, SectionEntry, SegmentHead,
    VERSION_RANGES, crc32c,
};
use shoal_index::ivf::v2::{HotCentroids, IvfHot, PartitionBlock};
use shoal_index::ivf::{IvfSections, IvfSubset, PartitionBytes};
use shoal_index::{Candidate, Metric};
use shoal_kernels::Kernels;
use shoal_payload::{CompiledFilter, Schema};

pub use cache::{RangeCache, coalesce};
pub use filter::KIND_PAYLOAD_FILTER_DIR;
pub use layout::{MAX_HOT_CENTROIDS, write_for_ranges, write_for_ranges_with, write_reordered_v1};
pub use set::{MAX_BOOTSTRAP_HINT, RemoteSet, SetManifest, SetStep, check_publishable, lay_out_segment};
pub use shoal_index::ivf::codes::KIND_IVF_CENTROID_CODES;
pub use vector::{KIND_VECTOR_CRC_DIR, KIND_VECTOR_CRCS};

use crate::collection::cut;
use crate::sections::bad;
use crate::{Error, ScoredPoint, SearchRequest, SearchResponse, SearchStats};

/// What a reader by ranges does next.
#[derive(Debug, PartialEq)]
pub enum Step<T> {
    /// Fetch these ranges of the file (sorted, apart, each a whole number of 64-byte lines
    /// except where the file ends), insert them into the cache, and call again.
    Fetch(Vec<Range<u64>>),
    /// Finished.
    Done(T),
}

/// A search's best candidates before `offset` and `score_threshold`: each with its point id,
/// best first.
#[derive(Debug)]
pub(crate) struct Hits {
    pub(crate) best: Vec<(Candidate, u64)>,
    pub(crate) stats: SearchStats,
}

/// The response of `req` from its best candidates (best first, with their point ids): `offset`
/// skipped, keys turned into scores, `score_threshold` applied — as a local search answers.
pub(crate) fn respond(
    req: &SearchRequest,
    metric: Metric,
    best: &[(Candidate, u64)],
    stats: SearchStats,
) -> SearchResponse {
    let mut points: Vec<ScoredPoint> = best
        .iter()
        .skip(req.offset)
        .map(|(c, id)| ScoredPoint { id: shoal_format::PointId::Num(*id), score: metric.score(c.key), payload: None })
        .collect();
    cut(&mut points, req.score_threshold, metric == Metric::L2);
    SearchResponse { points, partial: false, stats }
}

/// Bytes read from offset 0 to open a segment: its header, its table and, in a small file,
/// everything.
pub const OPEN_PREFIX: u64 = 256 * 1024;

/// Ranges this close (in bytes) are fetched as one, by default ([`RemoteSegment::set_merge_gap`]).
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

/// The section kinds of format 2 (in this version: an IVF index over one dense vector).
const KNOWN_KINDS_V2: [u32; 8] = [
    KIND_META,
    KIND_IVF_META,
    KIND_IVF_CENTROIDS,
    KIND_RABITQ_ROTATION,
    KIND_IVF_DIR,
    KIND_IVF_BLOCKS,
    KIND_VECTORS,
    KIND_ID_INDEX,
];

/// What runs with a filter compiled over a segment (`None`: the segment holds no payload).
type FilteredBody<'b, R> = dyn FnMut(Option<&CompiledFilter<'_, '_>>) -> Result<Step<R>, Error> + 'b;

/// A filter over a segment with payloads but no filter index by field.
const NO_FILTER_INDEX: Error = Error::Unsupported(
    "a filter over a segment without a filter index by ranges (format 1, or format 2 written before it: publish it again)",
);

/// Where a segment's partitions and ids lie in its file.
#[derive(Debug)]
enum Parts {
    /// Format 1: a partition is a run of rows in each IVF section, its ids a run of `IDS`.
    V1 { sections: alloc::boxed::Box<IvfSections>, ids: Range<u64> },
    /// Format 2: a partition is one block of `IVF_BLOCKS` (at `blocks`), ids and vector
    /// block CRCs included; `centroids`: where `IVF_CENTROIDS` lies (read by partition when
    /// they are coded).
    V2 { blocks: u64, centroids: u64 },
}

/// What a segment read by ranges keeps in memory: its table, and the parts every query reads.
pub struct RemoteSegment {
    file_len: u64,
    table_crc: u32,
    bootstrap_len: u64,
    version: u32,
    dim: usize,
    metric: Metric,
    rows: usize,
    kernels: Kernels,
    merge_gap: u64,
    ivf: IvfHot,
    parts: Parts,
    /// `VECTORS` in the file (`None` in a codes-only segment).
    vectors: Option<Range<u64>>,
    /// The text index (format 2, a collection with text fields).
    text: Option<text_query::TextHot>,
    /// The documents (format 2, a collection with payloads).
    docs: Option<text_query::DocsHot>,
    /// The filter index (format 2, a collection with payloads).
    filter: Option<filter::FilterHot>,
    /// Whether the segment holds payloads (with or without a filter index).
    payload: bool,
    /// The vector blocks' CRCs outside the partitions (format 2, with a filter index).
    vector_crcs: Option<vector::VectorCrcs>,
}

impl core::fmt::Debug for RemoteSegment {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RemoteSegment")
            .field("version", &self.version)
            .field("dim", &self.dim)
            .field("metric", &self.metric)
            .field("rows", &self.rows)
            .field("partitions", &self.ivf.index.nlist)
            .field("bits", &self.ivf.bits)
            .field("file_len", &self.file_len)
            .field("bootstrap_len", &self.bootstrap_len)
            .finish()
    }
}

/// The bytes of `range` from a format-2 `IVF_BLOCKS` or `VECTORS` offset, or a table entry.
fn at(start: u64, len: u64) -> Range<u64> {
    start..start + len
}

/// The little-endian f32 values of `bytes` (fetched ranges: at any alignment).
fn le_f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes.chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

/// Checks a section read whole against its table CRC.
fn check_crc(e: &SectionEntry, bytes: &[u8]) -> Result<(), Error> {
    check_block(bytes, e.crc, shoal_format::kind_name(e.kind), e.kind)
}

/// Checks bytes read by range (a block, a record) against the CRC the segment holds for them:
/// a mismatch is a checksum error (`what`, `kind`: the section they lie in), which readers
/// answer by fetching once more.
pub(super) fn check_block(bytes: &[u8], stored: u32, what: &'static str, kind: u32) -> Result<(), Error> {
    let actual = crc32c(bytes);
    if actual != stored {
        return Err(FormatError::ChecksumMismatch { what, kind, stored, actual }.into());
    }
    Ok(())
}

impl RemoteSegment {
    /// Opens a segment from the bytes fetched so far: the header and table (from the first
    /// [`OPEN_PREFIX`] bytes), then, checked against their CRCs, the sections every query
    /// reads — in format 2 the bootstrap region, in format 1 `META` and the index's directory
    /// sections (centroids, offsets, rotation) wherever they lie.
    pub fn open(cache: &RangeCache) -> Result<Step<RemoteSegment>, Error> {
        Self::open_with(cache, OPEN_PREFIX)
    }

    /// [`open`](Self::open), reading the first `prefix` bytes first (at least 64): a format-2
    /// segment's `bootstrap_len` — a set manifest's `bootstrap` hint — opens it with one
    /// request.
    pub fn open_with(cache: &RangeCache, prefix: u64) -> Result<Step<RemoteSegment>, Error> {
        let first = shoal_format::align_up(prefix.max(64));
        let Some(header) = cache.get(0..64) else { return Ok(Step::Fetch(alloc::vec![0..first])) };
        let table_end = SegmentHead::table_end(header)?;
        let Some(prefix) = cache.get(0..table_end) else { return Ok(Step::Fetch(alloc::vec![0..table_end])) };
        let head = SegmentHead::read(prefix)?;
        let version = head.header.version;
        let known: &[u32] = if version == VERSION_RANGES { &KNOWN_KINDS_V2 } else { &KNOWN_KINDS };
        if let Some(e) =
            head.table.iter().find(|e| e.flags & shoal_format::SECTION_OPTIONAL == 0 && !known.contains(&e.kind))
        {
            return Err(FormatError::UnknownSection(e.kind).into());
        }
        let flags = head.header.flags;
        if flags & FLAG_UUID_IDS != 0 {
            return Err(Error::Unsupported("UUID point ids in a segment read by ranges"));
        }
        if flags & FLAG_DENSE_VECTORS != 0 {
            return Err(Error::Unsupported("several dense vectors in a segment read by ranges"));
        }
        if head.entry(KIND_IVF_META).is_none() {
            return Err(Error::Unsupported("a segment without an IVF index, read by ranges (it would be read whole)"));
        }
        // The sections read whole at open, each checked against its CRC.
        // Centroids too many for the bootstrap region are read when a query may probe them,
        // not at open: their codes are.
        let coded = version == VERSION_RANGES
            && head.entry(KIND_IVF_CENTROID_CODES).is_some()
            && head.entry(KIND_IVF_CENTROIDS).is_some_and(|e| e.flags & SECTION_HOT == 0);
        let centroids_kind = if coded { KIND_IVF_CENTROID_CODES } else { KIND_IVF_CENTROIDS };
        let hot_kinds: Vec<u32> = if version == VERSION_RANGES {
            let always = [KIND_META, KIND_IVF_META, centroids_kind, KIND_RABITQ_ROTATION, KIND_IVF_DIR];
            let optional = text_query::OPTIONAL_HOT
                .into_iter()
                .chain([filter::KIND_PAYLOAD_FILTER_DIR, vector::KIND_VECTOR_CRC_DIR])
                .filter(|&k| head.entry(k).is_some());
            always.into_iter().chain(optional).collect()
        } else {
            core::iter::once(KIND_META).chain(IvfSections::hot_kinds(0)).collect()
        };
        let hot: Vec<&SectionEntry> = hot_kinds.iter().filter_map(|&k| head.entry(k)).collect();
        let missing: Vec<Range<u64>> =
            hot.iter().map(|e| at(e.offset, e.length)).filter(|r| !cache.contains(r)).collect();
        if !missing.is_empty() {
            return Ok(Step::Fetch(coalesce(&missing, MERGE_GAP)));
        }
        for e in &hot {
            check_crc(e, cache.get(at(e.offset, e.length)).expect("fetched"))?;
        }
        let missing = |kind: u32| FormatError::MissingSection(shoal_format::kind_name(kind));
        let section = |kind: u32| head.entry(kind).and_then(|e| cache.get(at(e.offset, e.length))).ok_or(missing(kind));
        let (dim, metric, rows, codes_only) = crate::sealed::read_meta(section(KIND_META)?)?;
        let vectors = match head.entry(KIND_VECTORS) {
            Some(e) if !codes_only => {
                if Some(e.length) != (rows as u64).checked_mul(dim as u64 * 4) {
                    return Err(bad("VECTORS", "length does not match rows x dim"));
                }
                Some(at(e.offset, e.length))
            }
            Some(_) => return Err(bad("VECTORS", "present in a codes-only segment")),
            None if codes_only => None,
            None => return Err(missing(KIND_VECTORS).into()),
        };
        let payload = head.entry(shoal_payload::KIND_PAYLOAD_FIELDS).is_some();
        let (ivf, parts, text, docs, (filter, vector_crcs)) = if version == VERSION_RANGES {
            let blocks = head.entry(KIND_IVF_BLOCKS).ok_or(missing(KIND_IVF_BLOCKS))?;
            let [m, r, d] = [KIND_IVF_META, KIND_RABITQ_ROTATION, KIND_IVF_DIR].map(section);
            let c = section(centroids_kind)?;
            let c = if coded { HotCentroids::Coded(c) } else { HotCentroids::All(c) };
            let ivf = IvfHot::open([m?, r?, d?], c, (dim, rows), blocks.length, vectors.is_some())?;
            let centroids = head.entry(KIND_IVF_CENTROIDS).ok_or(missing(KIND_IVF_CENTROIDS))?;
            if Some(centroids.length) != (ivf.index.nlist as u64).checked_mul(dim as u64 * 4) {
                return Err(bad("IVF_CENTROIDS", "length does not match nlist x dim"));
            }
            let hot = |k: u32| section(k).map_err(Error::from);
            let (text, docs) = text_query::open_hot(&head, rows, &hot)?;
            let optional = |k: u32| head.entry(k).and_then(|e| cache.get(at(e.offset, e.length)));
            let fields = optional(shoal_payload::KIND_PAYLOAD_FIELDS);
            let filter = filter::FilterHot::open(&head, fields, optional(filter::KIND_PAYLOAD_FILTER_DIR))?;
            let crcs = match (optional(vector::KIND_VECTOR_CRC_DIR), head.entry(vector::KIND_VECTOR_CRCS)) {
                (None, None) => None,
                (Some(dir), Some(e)) if vectors.is_some() => {
                    Some(vector::VectorCrcs::open(dir, (e.offset, e.length), &ivf)?)
                }
                _ => return Err(bad("VECTOR_CRC_DIR", "kinds 69 and 70 come together, with VECTORS")),
            };
            let parts = Parts::V2 { blocks: blocks.offset, centroids: centroids.offset };
            (ivf, parts, text, docs, (filter, crcs))
        } else {
            let (ivf, parts) = Self::open_v1(&head, cache, (dim, rows), vectors.is_some())?;
            (ivf, parts, None, None, (None, None))
        };
        Ok(Step::Done(RemoteSegment {
            file_len: head.header.file_len,
            table_crc: head.header.table_crc,
            bootstrap_len: head.bootstrap_len(),
            version,
            dim,
            metric,
            rows,
            kernels: Kernels::best(),
            merge_gap: MERGE_GAP,
            ivf,
            parts,
            vectors,
            text,
            docs,
            filter,
            payload,
            vector_crcs,
        }))
    }

    /// The index of a format-1 segment: its sections checked as a local open checks them, the
    /// hot ones copied out.
    fn open_v1(
        head: &SegmentHead,
        cache: &RangeCache,
        (dim, rows): (usize, usize),
        with_vectors: bool,
    ) -> Result<(IvfHot, Parts), Error> {
        let missing = |kind: u32| FormatError::MissingSection(shoal_format::kind_name(kind));
        let ids = head.entry(KIND_IDS).ok_or(missing(KIND_IDS))?;
        if Some(ids.length) != (rows as u64).checked_mul(8) {
            return Err(bad("IDS", "length does not match the row count"));
        }
        let entry = |kind: u32| {
            let e = head.entry(kind).ok_or(missing(kind))?;
            let at = |x: u64| usize::try_from(x).map_err(|_| FormatError::Malformed("offset past usize"));
            Ok(at(e.offset)?..at(e.offset + e.length)?)
        };
        // Hot sections lie in what was fetched.
        let hot = |kind: u32| head.entry(kind).and_then(|e| cache.get(at(e.offset, e.length))).ok_or(missing(kind));
        let sections = IvfSections::open_parts((dim, 0), rows, entry, hot)?;
        let [c, rc, o, bo] = sections.hot_ranges();
        let copy = |r: Range<usize>| cache.get(r.start as u64..r.end as u64).expect("a hot section");
        let floats = |r| le_f32s(copy(r)).collect();
        let words = |r| copy(r).chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        let ivf = IvfHot {
            index: sections.index.clone(),
            bits: sections.bits,
            defaults: sections.defaults,
            centroids: floats(c),
            rot_centroids: floats(rc),
            offsets: words(o),
            block_offsets: words(bo),
            codes: None,
            dir: Vec::new(),
            vector_block_rows: 1,
            with_vectors,
        };
        Ok((ivf, Parts::V1 { sections: alloc::boxed::Box::new(sections), ids: at(ids.offset, ids.length) }))
    }

    /// Searches the segment with `req` over the bytes fetched so far: the results, or the
    /// ranges to fetch first. `req` ranks by the segment's dense vector, by text (a segment
    /// with a text index), or both fused, with or without payloads and a filter (no `has_id`;
    /// over nested payloads, none that reads documents) — no `sparse`, `prefetch`, `exact` or
    /// text deadline; its settings
    /// mean what they mean locally, and
    /// the answer is the local one, bit for bit. Bytes that fail their CRC give
    /// [`FormatError::ChecksumMismatch`] (a host may drop its cache and search once more: a
    /// transient fault then costs a retry, a persistent one stays an error).
    pub fn search(&self, req: &SearchRequest, cache: &RangeCache) -> Result<Step<SearchResponse>, Error> {
        let parts = [request::Part { seg: self, cache, base: 0 }];
        if self.payload && self.filter.is_none() && req.filter.as_ref().is_some_and(|f| !f.is_null()) {
            // (Its schema is not read either: it would be refused once checked.)
            return Err(NO_FILTER_INDEX);
        }
        let none = Schema::default();
        let schema = self.filter.as_ref().map_or(&none, |f| f.schema());
        Ok(match request::search(&parts, req, (self.dim, self.metric), self.text.is_some(), schema)? {
            SetStep::Fetch(mut ranges) => Step::Fetch(ranges.pop().map(|(_, r)| r).unwrap_or_default()),
            SetStep::Done(r) => Step::Done(r),
        })
    }

    /// The partition holding `row`.
    fn partition_of(&self, row: usize) -> usize {
        self.ivf.offsets.partition_point(|&o| o as usize <= row) - 1
    }

    /// Partition `p`'s byte ranges in the file: in format 1 its FastScan blocks, factors,
    /// extra-bit codes and factors (empty with 1 bit) and ids; in format 2 its block.
    fn partition_ranges(&self, p: usize) -> Vec<Range<u64>> {
        match &self.parts {
            Parts::V1 { sections, ids } => {
                let (o, b) = (&self.ivf.offsets, &self.ivf.block_offsets);
                let wide = |r: Range<usize>| r.start as u64..r.end as u64;
                let (r0, r1) = (u64::from(o[p]), u64::from(o[p + 1]));
                let mut out: Vec<Range<u64>> = sections.partition_ranges(p, o, b).into_iter().map(wide).collect();
                out.push(ids.start + r0 * 8..ids.start + r1 * 8);
                out
            }
            Parts::V2 { blocks, .. } => {
                let e = &self.ivf.dir[p];
                alloc::vec![at(blocks + e.offset, u64::from(e.length))]
            }
        }
    }

    /// Partition `p`'s arrays from the cache (in format 2 checked against its CRC).
    fn partition_block<'c>(&self, p: usize, cache: &'c RangeCache) -> Result<PartitionBlock<'c>, Error> {
        let ranges = self.partition_ranges(p);
        let get = |r: &Range<u64>| cache.get(r.clone()).unwrap_or(&[]);
        Ok(match &self.parts {
            Parts::V1 { .. } => PartitionBlock {
                bytes: PartitionBytes {
                    partition: p,
                    codes: get(&ranges[0]),
                    factors: get(&ranges[1]),
                    ex_codes: get(&ranges[2]),
                    ex_factors: get(&ranges[3]),
                },
                ids: get(&ranges[4]),
                vector_crcs: &[],
            },
            Parts::V2 { .. } => self.ivf.partition(p, get(&ranges[0]))?,
        })
    }

    /// The vector block holding `row`: its bytes in the file, and its rows (format 1: the row
    /// alone).
    fn vector_block(&self, row: usize) -> (Range<u64>, Range<usize>) {
        let v = self.vectors.as_ref().expect("a segment with vectors");
        let rows = match self.parts {
            Parts::V1 { .. } => row..row + 1,
            Parts::V2 { .. } => self.ivf.vector_block(self.partition_of(row), row).0,
        };
        let row_bytes = self.dim as u64 * 4;
        (v.start + rows.start as u64 * row_bytes..v.start + rows.end as u64 * row_bytes, rows)
    }

    /// Sets every vector of `subset` whose block the cache holds (in format 2 checked against
    /// its CRC in the partition's block).
    fn fill_vectors(
        &self,
        subset: &mut IvfSubset,
        blocks: &[PartitionBlock<'_>],
        parts: &[u32],
        cache: &RangeCache,
    ) -> Result<(), Error> {
        let mut pos = 0;
        let mut floats = Vec::new();
        for (&p, block) in parts.iter().zip(blocks) {
            let (first, end) = (self.ivf.offsets[p as usize] as usize, self.ivf.offsets[p as usize + 1] as usize);
            let mut row = first;
            let mut b = 0;
            while row < end {
                let (bytes, rows) = self.vector_block(row);
                if let Some(v) = cache.get(bytes) {
                    if let Parts::V2 { .. } = self.parts {
                        let stored =
                            u32::from_le_bytes(block.vector_crcs[b * 4..b * 4 + 4].try_into().expect("4 bytes"));
                        check_block(v, stored, "VECTORS", KIND_VECTORS)?;
                    }
                    floats.clear();
                    floats.extend(v.chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])));
                    for (j, vector) in floats.chunks_exact(self.dim).enumerate() {
                        subset.set_vector(pos + (rows.start - first) + j, vector);
                    }
                }
                row = rows.end;
                b += 1;
            }
            pos += end - first;
        }
        Ok(())
    }

    /// Sets how far apart (in bytes) two ranges a search needs may be and still be fetched as
    /// one request (default [`MERGE_GAP`]): over a high-latency link, a larger gap trades bytes
    /// for fewer requests. It changes what is fetched, never the results.
    pub fn set_merge_gap(&mut self, gap: u64) {
        self.merge_gap = gap;
    }

    /// Sets the kernels searches use (by default the best this CPU runs).
    pub fn set_kernels(&mut self, kernels: Kernels) {
        self.kernels = kernels;
    }

    /// The file's length, from its header (a host checks it against the object's).
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The file's format version (1, or 2: laid out for ranges).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The bytes from offset 0 that opening reads (format 2's `bootstrap_len`; format 1's
    /// table end — its other hot sections lie elsewhere).
    pub fn bootstrap_len(&self) -> u64 {
        self.bootstrap_len
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
