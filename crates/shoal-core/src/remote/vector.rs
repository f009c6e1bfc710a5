//! A segment's vector ranking read by ranges: the IVF search (its probed partitions, then the
//! vectors its exact re-ranking reads), and with a filter the local planner replayed — the
//! filter's fields first, then the IVF search checking rows or over the matching set, or the
//! exact scan of a few matches.

use alloc::vec::Vec;
use core::ops::Range;

use shoal_index::ivf::v2::PartitionBlock;
use shoal_index::ivf::{IvfScratch, IvfSearch, IvfSubset, PartitionBytes, Prefetch, RerankReads};
use shoal_index::{Candidate, TopK};
use shoal_payload::{CompiledFilter, Filter, Schema};

use super::probes::ProbePlan;
use super::{FilteredBody, Hits, NO_FILTER_INDEX, Parts, RangeCache, RemoteSegment, Step, at, coalesce};
use crate::collection::{FILTER_EXACT_DIVISOR, FILTER_EXACT_PER_RESULT, prepare_vector};
use crate::sections::bad;
use crate::{Collection, Error, SearchRequest, SearchStats};

/// `VECTOR_CRCS`: every vector block's CRC-32C, in row order.
pub const KIND_VECTOR_CRCS: u32 = 69;
/// `VECTOR_CRC_DIR`: the CRC of each 4 KiB chunk of `VECTOR_CRCS`.
pub const KIND_VECTOR_CRC_DIR: u32 = 70;
/// CRCs in a chunk of `VECTOR_CRCS`.
const CRCS_PER_CHUNK: usize = 1024;

/// `(VECTOR_CRC_DIR, VECTOR_CRCS)` for the vector blocks' CRCs `crcs` (in row order).
pub(super) fn lay_out_vector_crcs(crcs: &[u32]) -> (Vec<u8>, Vec<u8>) {
    let all: Vec<u8> = bytemuck::cast_slice(crcs).to_vec();
    let chunks = crcs.len().div_ceil(CRCS_PER_CHUNK);
    let mut dir = Vec::with_capacity(8 + chunks * 4);
    dir.extend_from_slice(&(chunks as u32).to_le_bytes());
    dir.extend_from_slice(&(crcs.len() as u32).to_le_bytes());
    for chunk in all.chunks(CRCS_PER_CHUNK * 4) {
        dir.extend_from_slice(&shoal_format::crc32c(chunk).to_le_bytes());
    }
    (dir, all)
}

/// What a segment keeps in memory to check vector blocks read without their partitions.
#[derive(Debug)]
pub(super) struct VectorCrcs {
    /// `VECTOR_CRCS` in the file.
    at: u64,
    /// Vector blocks.
    blocks: u64,
    /// Each chunk's CRC.
    chunks: Vec<u32>,
    /// The index of each partition's first vector block.
    first_block: Vec<u64>,
}

impl VectorCrcs {
    /// Parses `VECTOR_CRC_DIR` (`dir`) against `VECTOR_CRCS` (at `at`, `len` bytes) and the
    /// partitions' sizes (`ivf`).
    pub(super) fn open(
        dir: &[u8],
        (at, len): (u64, u64),
        ivf: &shoal_index::ivf::v2::IvfHot,
    ) -> Result<VectorCrcs, Error> {
        let malformed = |why| bad("VECTOR_CRC_DIR", why);
        let word = |i: usize| dir.get(i..i + 4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")));
        let (Some(chunks), Some(blocks)) = (word(0), word(4)) else { return Err(malformed("truncated")) };
        let mut first_block = Vec::with_capacity(ivf.dir.len());
        let mut next = 0u64;
        for e in &ivf.dir {
            first_block.push(next);
            next += u64::from(e.rows).div_ceil(ivf.vector_block_rows as u64);
        }
        if u64::from(blocks) != next || len != next * 4 || u64::from(chunks) != next.div_ceil(CRCS_PER_CHUNK as u64) {
            return Err(malformed("a count that is not the segment's vector blocks"));
        }
        if dir.len() as u64 != 8 + u64::from(chunks) * 4 {
            return Err(malformed("a length that is not 8 + 4 bytes per chunk"));
        }
        let chunks = dir[8..].chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))).collect();
        Ok(VectorCrcs { at, blocks: next, chunks, first_block })
    }

    /// The chunk of `VECTOR_CRCS` holding block `b`'s CRC: its number and its bytes in the file.
    fn chunk(&self, b: u64) -> (usize, Range<u64>) {
        let c = b / CRCS_PER_CHUNK as u64;
        let start = self.at + c * CRCS_PER_CHUNK as u64 * 4;
        (c as usize, start..(start + CRCS_PER_CHUNK as u64 * 4).min(self.at + self.blocks * 4))
    }
}

impl RemoteSegment {
    /// The best `offset + limit` candidates of `req`'s vector (segment rows, best first, with
    /// their ids), before `offset` and `score_threshold`: what a set merges. `req` is checked
    /// by the caller (`request.rs`), its filter parsed and checked against the collection's
    /// `schema`. With a filter, the plan is the local one (`search_sealed_filtered`): the IVF
    /// search with a per-row check when the estimate proves many rows match, else the matching
    /// rows from the value -> rows lists, searched by the IVF index over that set when there are
    /// more than the exact-scan limit, scanned exactly when there are fewer.
    pub(crate) fn search_hits(
        &self,
        req: &SearchRequest,
        filter: Option<&Filter>,
        schema: &Schema,
        cache: &RangeCache,
    ) -> Result<Step<Hits>, Error> {
        let vector = req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))?;
        let mut query = Vec::new();
        prepare_vector(self.kernels, (self.dim, self.metric), vector, &mut query)?;
        let Some(f) = filter else { return self.ivf_hits(req, &query, None, 1.0, cache) };
        self.with_filter(f, schema, cache, &mut |compiled| self.filtered_hits(req, &query, f, compiled, cache))
    }

    /// Runs `body` with `filter` compiled over this segment's filter index (`None`: the segment
    /// holds no payload), once the fields it names are fetched — or names the ranges they lack.
    fn with_filter<R>(
        &self,
        filter: &Filter,
        schema: &Schema,
        cache: &RangeCache,
        body: &mut FilteredBody<'_, R>,
    ) -> Result<Step<R>, Error> {
        match &self.filter {
            Some(fh) => {
                let named = fh.named(filter);
                let bytes = match fh.fetch(&named, cache)? {
                    Ok(b) => b,
                    Err(lacking) => return Ok(Step::Fetch(coalesce(&lacking, self.merge_gap))),
                };
                let view = fh.view(&bytes, self.rows, &named)?;
                let c = view
                    .compile_for(filter, schema, &|_| None)
                    .map_err(|e| Error::InvalidRequest(alloc::format!("{e}")))?;
                if c.reads_documents() {
                    return Err(Error::Unsupported(
                        "a filter on nested payloads that reads documents (a path without a payload index, `nested`, or values no column holds) in a set read by ranges",
                    ));
                }
                body(Some(&c))
            }
            None if self.payload => Err(NO_FILTER_INDEX),
            None => body(None),
        }
    }

    /// The rows that pass `filter` (`compiled` over this segment, `None` without payload).
    fn matching(&self, filter: &Filter, compiled: Option<&CompiledFilter<'_, '_>>) -> shoal_payload::Bitset {
        match compiled {
            Some(c) => c.matching_points(),
            None => {
                // No payload: every row is the empty document (`has_id` is refused by ranges).
                let mut b = shoal_payload::Bitset::empty(self.rows as u32);
                if shoal_payload::reference::matches(filter, &serde_json::Value::Null, shoal_format::PointId::Num(0)) {
                    (0..self.rows as u32).for_each(|r| b.insert(r));
                }
                b
            }
        }
    }

    /// The rows of this segment that pass `filter`, or the ranges its filter index lacks: what
    /// a text ranking passes to BM25.
    pub(crate) fn filter_rows(
        &self,
        filter: &Filter,
        schema: &Schema,
        cache: &RangeCache,
    ) -> Result<Step<shoal_payload::Bitset>, Error> {
        self.with_filter(filter, schema, cache, &mut |c| Ok(Step::Done(self.matching(filter, c))))
    }

    /// [`search_hits`](Self::search_hits) with a filter, `compiled` over this segment.
    fn filtered_hits(
        &self,
        req: &SearchRequest,
        query: &[f32],
        filter: &Filter,
        compiled: Option<&CompiledFilter<'_, '_>>,
        cache: &RangeCache,
    ) -> Result<Step<Hits>, Error> {
        let rows = self.rows as u64;
        let k = (req.offset + req.limit) as u64;
        let limit = (rows / FILTER_EXACT_DIVISOR).max(k.saturating_mul(FILTER_EXACT_PER_RESULT));
        if let Some(c) = compiled {
            let est = c.estimate_cardinality();
            if est.min > limit {
                let skip = |r: usize| !c.matches(r as u32);
                return self.ivf_hits(req, query, Some(&skip), est.expected as f32 / rows as f32, cache);
            }
        }
        let matching = self.matching(filter, compiled);
        let count = matching.count();
        if count > limit {
            let skip = |r: usize| !matching.contains(r as u32);
            return self.ivf_hits(req, query, Some(&skip), count as f32 / rows as f32, cache);
        }
        self.exact_hits(req, query, &matching, cache)
    }

    /// The IVF search of `query` (prepared) for `req`, ignoring the rows `skip` names; with a
    /// filter (`passing`: the fraction of rows expected to pass), its probes widen as locally.
    fn ivf_hits(
        &self,
        req: &SearchRequest,
        query: &[f32],
        skip: Option<&dyn Fn(usize) -> bool>,
        passing: f32,
        cache: &RangeCache,
    ) -> Result<Step<Hits>, Error> {
        let mut params = Collection::ivf_query(req, self.ivf.defaults);
        if req.params.nprobe.is_none() {
            // Explicit probes are probed as asked; the defaults widen for a filter.
            params.passing = passing;
        }
        let search = IvfSearch { kernels: self.kernels, metric: self.metric, query, params };
        let k = req.offset + req.limit;
        let mut scratch = IvfScratch::default();
        // The rows of a partition the search may take (those that pass the filter).
        let passes = |p: u32| -> u64 {
            let (r0, r1) = (self.ivf.offsets[p as usize] as usize, self.ivf.offsets[p as usize + 1] as usize);
            match skip {
                None => (r1 - r0) as u64,
                Some(f) => (r0..r1).filter(|&r| !f(r)).count() as u64,
            }
        };
        let mut at_least = 0;
        loop {
            let ProbePlan { probes, order, probed } = match self.probe_plan(&search, (&passes, k), at_least, cache)? {
                Step::Fetch(ranges) => return Ok(Step::Fetch(ranges)),
                Step::Done(plan) => plan,
            };
            let index = &*probes.index;
            let all = self.ivf.index.nlist;
            // Wave 1: the probed partitions (in the segment's order, as the subset keeps them).
            let mut parts: Vec<u32> = order[..probed].to_vec();
            shoal_format::sort_u32(&mut parts);
            let missing: Vec<Range<u64>> = parts
                .iter()
                .flat_map(|&p| self.partition_ranges(p as usize))
                .filter(|r| r.start < r.end && !cache.contains(r))
                .collect();
            if !missing.is_empty() {
                return Ok(Step::Fetch(coalesce(&missing, self.merge_gap)));
            }
            let blocks: Vec<PartitionBlock<'_>> =
                parts.iter().map(|&p| self.partition_block(p as usize, cache)).collect::<Result<_, _>>()?;
            let bytes: Vec<PartitionBytes<'_>> = blocks.iter().map(|b| b.bytes).collect();
            let shape = (self.dim, index.padded, self.ivf.bits);
            let mut subset =
                IvfSubset::among(shape, &self.ivf.offsets, &probes.members(), &bytes, self.vectors.is_some())
                    .map_err(|_| bad("RABITQ_CODES", "a partition's bytes are not its length"))?;
            let (centroids, rot) = (&probes.centroids[..], &probes.rot_centroids[..]);
            let mut topk = TopK::new(k);
            // Short of `k`: probe twice as many (over coded centroids, more of them first).
            let short = |found: usize| found < k && probed < all;
            let stats = match &self.vectors {
                None => {
                    let data = subset.data(centroids, rot, None);
                    let st = index.search(&search, &data, skip, 0, &mut scratch, &mut topk);
                    // (Never, by the count above; kept so that a miscount costs a wave, not a
                    // wrong answer.)
                    if short(topk.len()) {
                        at_least = (probed * 2).min(all);
                        continue;
                    }
                    st
                }
                Some(_) => {
                    // Wave 2: the vectors the exact re-ranking reads, as the bounds predict.
                    let data = subset.data(centroids, rot, None);
                    let mut plan = RerankReads::new(k);
                    let st = index.search_refined(&search, &data, skip, 0, &mut scratch, k, &mut plan);
                    if short(st.refined as usize) {
                        at_least = (probed * 2).min(all);
                        continue;
                    }
                    let missing: Vec<Range<u64>> = plan
                        .reads()
                        .iter()
                        .map(|&r| self.vector_block(r as usize).0)
                        .filter(|r| !cache.contains(r))
                        .collect();
                    if !missing.is_empty() {
                        return Ok(Step::Fetch(coalesce(&missing, self.merge_gap)));
                    }
                    // Every vector block of the subset's rows that was fetched (by this wave or
                    // an earlier one) goes in, checked; the exact search notes any other it reads.
                    self.fill_vectors(&mut subset, &blocks, &parts, cache)?;
                    let hint = |v: &[f32], now: bool| {
                        if now {
                            subset.record(v)
                        }
                    };
                    let data = subset.data(centroids, rot, Some(Prefetch(&hint)));
                    let st = index.search(&search, &data, skip, 0, &mut scratch, &mut topk);
                    let missed = subset.take_missed();
                    if !missed.is_empty() {
                        let ranges: Vec<Range<u64>> = missed.iter().map(|&r| self.vector_block(r as usize).0).collect();
                        return Ok(Step::Fetch(coalesce(&ranges, self.merge_gap)));
                    }
                    st
                }
            };
            let stats = SearchStats { scanned: stats.reranked, estimated: stats.estimated, segments: 1, exact: false };
            return Ok(Step::Done(self.hits(topk, stats, (&parts, &blocks), cache)?));
        }
    }

    /// The exact scan of a filter's few `matching` rows, as locally (codes-only: ranked by
    /// their extended-bit estimates). With `VECTOR_CRCS`, see [`exact_by_crcs`](Self::exact_by_crcs);
    /// without, one wave brings the partition blocks that hold them (their ids, codes and
    /// vector-block CRCs) and their vector blocks.
    fn exact_hits(
        &self,
        req: &SearchRequest,
        query: &[f32],
        matching: &shoal_payload::Bitset,
        cache: &RangeCache,
    ) -> Result<Step<Hits>, Error> {
        if let (Some(_), Some(vc)) = (&self.vectors, &self.vector_crcs) {
            return self.exact_by_crcs(req, query, matching, vc, cache);
        }
        let k = req.offset + req.limit;
        let mut parts: Vec<u32> = matching.iter().map(|r| self.partition_of(r as usize) as u32).collect();
        parts.dedup();
        let mut missing: Vec<Range<u64>> = parts.iter().flat_map(|&p| self.partition_ranges(p as usize)).collect();
        if self.vectors.is_some() {
            missing.extend(matching.iter().map(|r| self.vector_block(r as usize).0));
        }
        missing.retain(|r| r.start < r.end && !cache.contains(r));
        // Codes-only, the estimates need the partitions' centroids (coded: fetched with them).
        let probes = match self.vectors {
            Some(_) => None,
            None => match self.probes_for(&parts, cache)? {
                Ok(probes) => Some(probes),
                Err(centroids) => {
                    missing.extend(centroids);
                    None
                }
            },
        };
        if !missing.is_empty() {
            missing.sort_unstable_by_key(|r| (r.start, r.end));
            return Ok(Step::Fetch(coalesce(&missing, self.merge_gap)));
        }
        let blocks: Vec<PartitionBlock<'_>> =
            parts.iter().map(|&p| self.partition_block(p as usize, cache)).collect::<Result<_, _>>()?;
        let mut topk = TopK::new(k);
        let count = matching.count();
        let stats = match &self.vectors {
            Some(_) => {
                let bytes: Vec<PartitionBytes<'_>> = blocks.iter().map(|b| b.bytes).collect();
                let shape = (self.dim, self.ivf.index.padded, self.ivf.bits);
                let mut subset = IvfSubset::new(shape, &self.ivf.offsets, &bytes, true)
                    .map_err(|_| bad("RABITQ_CODES", "a partition's bytes are not its length"))?;
                self.fill_vectors(&mut subset, &blocks, &parts, cache)?;
                let data = subset.data(&self.ivf.centroids, &self.ivf.rot_centroids, None);
                // (None when no row matches: the subset is empty.)
                let vectors = data.vectors.unwrap_or(&[]);
                let dim = self.dim;
                let mut rows = matching.iter().map(|r| {
                    let pos = subset.position(r).expect("a row of a fetched partition");
                    (r as usize, &vectors[pos * dim..(pos + 1) * dim])
                });
                crate::collection::push_exact(self.kernels, self.metric, query, &mut rows, &mut topk);
                SearchStats { scanned: count, estimated: 0, segments: 1, exact: true }
            }
            None => {
                let probes = probes.expect("codes-only");
                let bytes: Vec<PartitionBytes<'_>> = blocks.iter().map(|b| b.bytes).collect();
                let shape = (self.dim, self.ivf.index.padded, self.ivf.bits);
                let subset = IvfSubset::among(shape, &self.ivf.offsets, &probes.members(), &bytes, false)
                    .map_err(|_| bad("RABITQ_CODES", "a partition's bytes are not its length"))?;
                let data = subset.data(&probes.centroids, &probes.rot_centroids, None);
                let params = Collection::ivf_query(req, self.ivf.defaults);
                let search = IvfSearch { kernels: self.kernels, metric: self.metric, query, params };
                let mut positions = matching.iter().map(|r| subset.position(r).expect("a row of a fetched partition"));
                let mut scratch = IvfScratch::default();
                let estimated = probes.index.estimate_rows(&search, &data, &mut positions, 0, &mut scratch, &mut topk);
                SearchStats { scanned: 0, estimated, segments: 1, exact: false }
            }
        };
        Ok(Step::Done(self.hits(topk, stats, (&parts, &blocks), cache)?))
    }

    /// The exact scan of `matching` rows with their vectors checked by `VECTOR_CRCS`: one wave
    /// brings their vector blocks and the chunks of CRCs that check them, then the results'
    /// ids come from the text index's ids (in memory, or 512-byte blocks) or, in a segment
    /// without text, from the results' partition blocks.
    fn exact_by_crcs(
        &self,
        req: &SearchRequest,
        query: &[f32],
        matching: &shoal_payload::Bitset,
        vc: &VectorCrcs,
        cache: &RangeCache,
    ) -> Result<Step<Hits>, Error> {
        let vbr = self.ivf.vector_block_rows;
        // Each matching row's vector block: its bytes, its rows, its number.
        let blocks: Vec<(Range<u64>, Range<usize>, u64)> = matching
            .iter()
            .map(|r| {
                let p = self.partition_of(r as usize);
                let (bytes, rows) = self.vector_block(r as usize);
                let b = vc.first_block[p] + ((rows.start - self.ivf.offsets[p] as usize) / vbr) as u64;
                (bytes, rows, b)
            })
            .collect();
        let mut missing: Vec<Range<u64>> =
            blocks.iter().flat_map(|(bytes, _, b)| [bytes.clone(), vc.chunk(*b).1]).collect();
        missing.retain(|r| r.start < r.end && !cache.contains(r));
        if !missing.is_empty() {
            missing.sort_unstable_by_key(|r| (r.start, r.end));
            missing.dedup();
            return Ok(Step::Fetch(coalesce(&missing, self.merge_gap)));
        }
        // The chunks, each checked once.
        let mut chunks: alloc::collections::BTreeMap<usize, &[u8]> = alloc::collections::BTreeMap::new();
        for (_, _, b) in &blocks {
            let (c, range) = vc.chunk(*b);
            if let alloc::collections::btree_map::Entry::Vacant(e) = chunks.entry(c) {
                let bytes = cache.get(range).expect("fetched");
                super::check_block(bytes, vc.chunks[c], "VECTOR_CRCS", KIND_VECTOR_CRCS)?;
                e.insert(bytes);
            }
        }
        let (dim, row_bytes) = (self.dim, self.dim * 4);
        let mut floats: Vec<f32> = Vec::with_capacity(blocks.len() * dim);
        for (r, (bytes, rows, b)) in matching.iter().zip(&blocks) {
            let (c, _) = vc.chunk(*b);
            let i = (*b as usize % CRCS_PER_CHUNK) * 4;
            let stored = u32::from_le_bytes(chunks[&c][i..i + 4].try_into().expect("4 bytes"));
            let block = cache.get(bytes.clone()).expect("fetched");
            super::check_block(block, stored, "VECTORS", shoal_format::KIND_VECTORS)?;
            let at = (r as usize - rows.start) * row_bytes;
            let v = &block[at..at + row_bytes];
            floats.extend(v.chunks_exact(4).map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]])));
        }
        let mut topk = TopK::new(req.offset + req.limit);
        let mut rows = matching.iter().zip(floats.chunks_exact(dim.max(1))).map(|(r, v)| (r as usize, v));
        crate::collection::push_exact(self.kernels, self.metric, query, &mut rows, &mut topk);
        let mut best = Vec::new();
        topk.drain_sorted(&mut best);
        // The results' ids.
        let mut ids = Vec::with_capacity(best.len());
        let mut lacking = Vec::new();
        match &self.text {
            Some(th) => {
                for c in &best {
                    match th.id(c.id as usize, cache)? {
                        Ok(id) => ids.push(id),
                        Err(range) => lacking.push(range),
                    }
                }
            }
            None => {
                let mut parts: Vec<u32> = best.iter().map(|c| self.partition_of(c.id as usize) as u32).collect();
                shoal_format::sort_u32(&mut parts);
                parts.dedup();
                lacking.extend(parts.iter().flat_map(|&p| self.partition_ranges(p as usize)));
                lacking.retain(|r| !cache.contains(r));
                if lacking.is_empty() {
                    let pb: Vec<PartitionBlock<'_>> =
                        parts.iter().map(|&p| self.partition_block(p as usize, cache)).collect::<Result<_, _>>()?;
                    ids = self.ids_in_partitions(&best, (&parts, &pb), cache);
                }
            }
        }
        if !lacking.is_empty() {
            lacking.sort_unstable_by_key(|r| (r.start, r.end));
            lacking.dedup();
            return Ok(Step::Fetch(coalesce(&lacking, self.merge_gap)));
        }
        let stats = SearchStats { scanned: matching.count(), estimated: 0, segments: 1, exact: true };
        Ok(Step::Done(Hits { best: best.into_iter().zip(ids).collect(), stats }))
    }

    /// A finished search's best candidates (segment rows) with their ids (fetched with their
    /// partitions).
    fn hits(
        &self,
        mut topk: TopK,
        stats: SearchStats,
        (parts, blocks): (&[u32], &[PartitionBlock<'_>]),
        cache: &RangeCache,
    ) -> Result<Hits, Error> {
        let mut best = Vec::new();
        topk.drain_sorted(&mut best);
        let ids_of = self.ids_in_partitions(&best, (parts, blocks), cache);
        Ok(Hits { best: best.into_iter().zip(ids_of).collect(), stats })
    }

    /// The point ids of `best` (segment rows) from their partitions: in format 2 their blocks
    /// (`blocks` of `parts`, sorted), in format 1 the runs of `IDS` fetched with them.
    fn ids_in_partitions(
        &self,
        best: &[Candidate],
        (parts, blocks): (&[u32], &[PartitionBlock<'_>]),
        cache: &RangeCache,
    ) -> Vec<u64> {
        best.iter()
            .map(|c| {
                let row = c.id as usize;
                let p = self.partition_of(row);
                let i = row - self.ivf.offsets[p] as usize;
                let ids = match &self.parts {
                    Parts::V1 { ids, .. } => {
                        cache.get(at(ids.start + row as u64 * 8, 8)).expect("fetched with its partition")
                    }
                    Parts::V2 { .. } => {
                        let b = &blocks[parts.binary_search(&(p as u32)).expect("a fetched partition")];
                        &b.ids[i * 8..i * 8 + 8]
                    }
                };
                u64::from_le_bytes(ids[..8].try_into().expect("8 bytes"))
            })
            .collect()
    }
}
