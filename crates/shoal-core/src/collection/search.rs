//! Vector search over the set: every sealed segment (its IVF index or an exact scan, with the
//! filter planner) and the mutable segment, into one top-k whose ties break by internal id.

use alloc::format;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_index::ivf::{Bounds, IvfData, IvfIndex, IvfQuery, IvfScratch, IvfSearch, Prefetch, Refined};
use shoal_index::{Candidate, FlatScan, FlatScratch, Metric, TopK, normalize};
use shoal_payload::{CompiledFilter, Filter, PayloadView, Schema, reference};

use super::{Collection, FILTER_EXACT_DIVISOR, FILTER_EXACT_PER_RESULT, Part, QueryScratch, first_non_finite};
use crate::dense::Space;
use crate::{Error, ScoredPoint, SealedSegment, SearchRequest, SearchStats};

/// Rows per batch-kernel call when scoring chosen rows exactly (a filter's few matches).
const EXACT_BLOCK: usize = 32;

/// The dense vector a search ranks by, and its scan (metric and prepared query).
type On<'a, 'q> = (usize, &'a FlatScan<'q>);

/// The buffers a segment's search works in.
struct Buffers<'s> {
    flat: &'s mut FlatScratch,
    ivf: &'s mut IvfScratch,
    topk: &'s mut TopK,
}

impl Collection {
    /// The dense vector a request searches: `using` names it; without a name (or `""`), the
    /// vector named `""`, or the collection's only one.
    pub(super) fn dense_of(&self, req: &SearchRequest) -> Result<usize, Error> {
        let name = req.using.as_deref().unwrap_or("");
        match self.dense_position(name) {
            Some(d) => Ok(d),
            None if name.is_empty() && self.dense.len() == 1 => Ok(0),
            // One message for every case (each formatted message is code in the package).
            None => Err(Error::InvalidRequest(format!(
                "`using`: \"{name}\" is not a dense vector of the collection (with several, name the one to \
                 search; a sparse vector is searched with `sparse`)"
            ))),
        }
    }

    /// Checks a query vector for dense vector `d` and copies it into `out`, prepared for its
    /// metric (normalised for cosine).
    pub(super) fn prepare_query(&self, d: usize, vector: &[f32], out: &mut Vec<f32>) -> Result<(), Error> {
        let spec = &self.dense[d];
        prepare_vector(self.kernels, (spec.dim, spec.metric), vector, out)
    }

    /// Runs a search request, writing the results into `out` (cleared first). Query buffers come
    /// from the collection's scratch pool: once they and `out` have grown to size, a search
    /// without a filter allocates nothing (natively, a set of several segments searched in
    /// parallel allocates each segment's short list of results).
    ///
    /// This is the vector search alone: a request with `text` or `prefetch` goes through
    /// [`search`](Self::search).
    pub fn search_into(&self, req: &SearchRequest, out: &mut Vec<ScoredPoint>) -> Result<SearchStats, Error> {
        req.check()?;
        if !req.is_vector_only() {
            return Err(Error::InvalidRequest(
                "`text` and `prefetch` requests go through search(), not search_into()".into(),
            ));
        }
        let vector = req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))?;
        let filter = self.parse_filter(req.filter.as_ref())?;
        let stats = self.search_vector(req, vector, filter.as_ref(), out)?;
        let metric = self.dense[self.dense_of(req)?].metric;
        super::query::cut(out, req.score_threshold, metric == shoal_index::Metric::L2);
        Ok(stats)
    }

    /// The vector search of a checked request with its parsed filter (`req.vector` and
    /// `req.filter` are not read again).
    pub(super) fn search_vector(
        &self,
        req: &SearchRequest,
        vector: &[f32],
        filter: Option<&Filter>,
        out: &mut Vec<ScoredPoint>,
    ) -> Result<SearchStats, Error> {
        let d = self.dense_of(req)?;
        self.scratch.with(|s| {
            self.prepare_query(d, vector, &mut s.query)?;
            let stats = self.search_prepared(req, d, filter, s, None)?;
            s.topk.drain_sorted(&mut s.best);
            self.emit(req, self.dense[d].metric, &s.best, out);
            Ok(stats)
        })
    }

    /// Writes the results of `req` from its best candidates (internal ids, sorted, keys of
    /// `metric`): skips `offset`, maps ids and scores, adds payloads when asked.
    pub(super) fn emit(&self, req: &SearchRequest, metric: Metric, best: &[Candidate], out: &mut Vec<ScoredPoint>) {
        out.clear();
        out.extend(best.iter().skip(req.offset).map(|c| ScoredPoint {
            id: self.external_id(c.id as usize),
            score: metric.score(c.key),
            payload: None,
        }));
        if req.with_payload {
            for (p, c) in out.iter_mut().zip(best.iter().skip(req.offset)) {
                p.payload = Some(self.payload_of(c.id as usize));
            }
        }
    }

    /// Parses a request's filter and checks it against the schema (`null` means none).
    pub(super) fn parse_filter(&self, filter: Option<&Value>) -> Result<Option<Filter>, Error> {
        parse_filter(filter, self.schema.as_ref().unwrap_or(&Schema::default()))
    }

    /// `filter` bound to a sealed segment's payload `view` (`has_id` ids resolved to its rows),
    /// checked against the collection's schema: a field added after the segment was written
    /// holds no value in it.
    pub(super) fn compile_filter<'v, 'a>(
        &self,
        seg: &SealedSegment,
        view: &'v PayloadView<'a>,
        filter: &'v Filter,
    ) -> Result<CompiledFilter<'v, 'a>, Error> {
        let schema = self.schema.as_ref().unwrap_or_else(|| view.schema());
        view.compile_for(filter, schema, &|id| seg.row_of(id).map(|r| r as u32))
            .map_err(|e| Error::InvalidRequest(format!("{e}")))
    }

    /// The IVF settings of a request. Filtered searches use the same settings: the search
    /// widens its probes until enough candidates pass, and the calibrated defaults keep
    /// recall@10 >= 0.95 down to the planner's exact-scan limit without probing more
    /// (`tests/payload.rs`, `filtered_ivf_recall_at_every_selectivity`).
    pub(crate) fn ivf_query(req: &SearchRequest, defaults: IvfQuery) -> IvfQuery {
        IvfQuery {
            nprobe: req.params.nprobe.map_or(defaults.nprobe, |n| n as usize),
            rerank: req.params.rerank.map_or(defaults.rerank, |r| r as usize),
            epsilon: defaults.epsilon,
            // An explicit nprobe is probed exactly.
            probe_ratio: if req.params.nprobe.is_some() { 0.0 } else { defaults.probe_ratio },
            passing: 1.0,
        }
    }

    /// Fills `s.topk` with the best `offset + limit` candidates for the prepared `s.query`:
    /// every sealed segment, then the mutable segment. Each sealed segment is searched into a
    /// top-k of its own — its IVF re-ranking stops on its own k-th key, never on another
    /// segment's — and the per-segment top-ks are merged by the canonical order (key, then
    /// internal id), so the answer does not depend on the order segments are searched in: natively they
    /// are searched in parallel (feature `parallel`), elsewhere one after another, with the same
    /// result. With `bounds` (lazy re-ranking of a codes-only collection, one segment), the
    /// refined candidates go there instead of `s.topk`.
    pub(super) fn search_prepared(
        &self,
        req: &SearchRequest,
        d: usize,
        filter: Option<&Filter>,
        s: &mut QueryScratch,
        mut bounds: Option<&mut Bounds>,
    ) -> Result<SearchStats, Error> {
        let QueryScratch { query, topk, part: part_topk, flat, ivf, .. } = s;
        let k = req.offset + req.limit;
        topk.reset(k);
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let spec = &self.dense[d];
        let scan = FlatScan { kernels: self.kernels, metric: spec.metric, query };
        let on = (d, &scan);
        if bounds.is_some() || !self.search_parts_parallel(req, filter, on, topk, &mut stats)? {
            for part in &self.parts {
                part_topk.reset(k);
                let mut bufs = Buffers { flat, ivf, topk: part_topk };
                self.search_part(part, req, filter, on, &mut bufs, bounds.as_deref_mut(), &mut stats)?;
                part_topk.drain_into(topk);
            }
        }
        let m = &self.mutable;
        if m.rows() > 0 {
            // The mutable segment is always scanned exactly; its filter runs on the JSON.
            let skip = |r: usize| !m.passes(r, filter, self.nested());
            let skip: Option<&dyn Fn(usize) -> bool> = (m.deleted.count() > 0 || filter.is_some()).then_some(&skip);
            let vectors = if d == 0 { &m.vectors[..] } else { &m.dense[d - 1].0[..] };
            scan.scan(&vectors[..m.rows() * spec.dim], self.sealed_rows() as u64, skip, flat, topk);
            stats.scanned += m.rows() as u64;
            stats.segments += 1;
        }
        Ok(stats)
    }

    /// Searches the sealed segments in parallel, each into its own top-k (with buffers from
    /// the scratch pool), and merges them into `topk`. Returns `false`, having done nothing,
    /// when there is no gain to be had (one segment, or a build without the `parallel` feature).
    fn search_parts_parallel(
        &self,
        req: &SearchRequest,
        filter: Option<&Filter>,
        on: On<'_, '_>,
        topk: &mut TopK,
        stats: &mut SearchStats,
    ) -> Result<bool, Error> {
        if !cfg!(feature = "parallel") || self.parts.len() < 2 {
            return Ok(false);
        }
        let k = req.offset + req.limit;
        let results = shoal_index::par::map(self.parts.len(), |i| {
            self.scratch.with(|s| {
                let mut part_stats = SearchStats { exact: true, ..SearchStats::default() };
                s.part.reset(k);
                let mut bufs = Buffers { flat: &mut s.flat, ivf: &mut s.ivf, topk: &mut s.part };
                self.search_part(&self.parts[i], req, filter, on, &mut bufs, None, &mut part_stats)?;
                let mut best = Vec::with_capacity(k);
                s.part.drain_sorted(&mut best);
                Ok::<_, Error>((best, part_stats))
            })
        });
        // In segment order, so that the first error is the same one a serial search returns.
        for r in results {
            let (best, st) = r?;
            best.into_iter().for_each(|c| topk.push(c));
            stats.scanned += st.scanned;
            stats.estimated += st.estimated;
            stats.segments += st.segments;
            stats.exact &= st.exact;
        }
        Ok(true)
    }

    /// Searches one sealed segment's dense vector `on.0` into the shared top-k.
    #[allow(clippy::too_many_arguments)]
    fn search_part(
        &self,
        part: &Part,
        req: &SearchRequest,
        filter: Option<&Filter>,
        (d, scan): On<'_, '_>,
        bufs: &mut Buffers<'_>,
        bounds: Option<&mut Bounds>,
        stats: &mut SearchStats,
    ) -> Result<(), Error> {
        let seg = &*part.seg;
        if req.params.exact && seg.codes_only() {
            return Err(Error::CodesOnly("exact search"));
        }
        let space = seg.space(d).ok_or(Error::Unsupported("a segment without the collection's dense vectors"))?;
        let deleted = &part.deleted;
        let index = space.ivf.filter(|_| !req.params.exact);
        match filter {
            Some(f) => self.search_sealed_filtered(part, f, req, (&space, index), scan, bufs, bounds, stats)?,
            None => {
                let skip = |r: usize| deleted.contains(r);
                let skip: Option<&dyn Fn(usize) -> bool> = (deleted.count() > 0).then_some(&skip);
                match index {
                    Some(index) => self.search_ivf(part, req, index, skip, 1.0, scan, bufs, bounds, stats),
                    None => {
                        self.scan_space(&space, part.base, skip, scan, bufs);
                        stats.scanned += seg.rows() as u64;
                    }
                }
            }
        }
        stats.segments += 1;
        Ok(())
    }

    /// Scans every row of a segment's dense vector exactly, ignoring the rows `skip` names.
    fn scan_space(
        &self,
        space: &Space<'_>,
        base: usize,
        skip: Option<&dyn Fn(usize) -> bool>,
        scan: &FlatScan<'_>,
        bufs: &mut Buffers<'_>,
    ) {
        let vectors = space.vectors.expect("a codes-only segment has an index (checked at open)");
        match space.rows {
            None => scan.scan(vectors, base as u64, skip, bufs.flat, bufs.topk),
            Some(rows) => {
                // Stored by position: each position's row is its id.
                let dim = space.dim;
                let mut all = rows
                    .iter()
                    .enumerate()
                    .filter(|&(_, &r)| !skip.is_some_and(|f| f(r as usize)))
                    .map(|(pos, &r)| (base + r as usize, &vectors[pos * dim..(pos + 1) * dim]));
                push_exact(self.kernels, scan.metric, scan.query, &mut all, bufs.topk);
            }
        }
    }

    /// Searches a sealed segment's IVF index, ignoring the rows `skip` names.
    #[allow(clippy::too_many_arguments)]
    fn search_ivf(
        &self,
        part: &Part,
        req: &SearchRequest,
        (index, mut data, defaults): (&IvfIndex, IvfData<'_>, IvfQuery),
        skip: Option<&dyn Fn(usize) -> bool>,
        passing: f32,
        scan: &FlatScan<'_>,
        bufs: &mut Buffers<'_>,
        bounds: Option<&mut Bounds>,
        stats: &mut SearchStats,
    ) {
        let seg = &*part.seg;
        let hint = |v: &[f32], now: bool| {
            if !now {
                seg.prefetch(v)
            }
        };
        if seg.prefetches() {
            data.prefetch = Some(Prefetch(&hint));
        }
        let mut params = Self::ivf_query(req, defaults);
        if req.params.nprobe.is_none() {
            // Explicit probes are probed as asked; the defaults widen for a filter.
            params.passing = passing;
        }
        let search = IvfSearch { kernels: self.kernels, metric: scan.metric, query: scan.query, params };
        let base = part.base as u64;
        let st = match bounds {
            Some(b) => index.search_refined(&search, &data, skip, base, bufs.ivf, bufs.topk.capacity_k(), b),
            None => index.search(&search, &data, skip, base, bufs.ivf, bufs.topk),
        };
        stats.scanned += st.reranked;
        stats.estimated += st.estimated;
        stats.exact = false;
    }

    /// The filtered search of a sealed segment (the planner). When the indexes prove that
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
        part: &Part,
        filter: &Filter,
        req: &SearchRequest,
        (space, index): (&Space<'_>, Option<(&IvfIndex, IvfData<'_>, IvfQuery)>),
        scan: &FlatScan<'_>,
        bufs: &mut Buffers<'_>,
        bounds: Option<&mut Bounds>,
        stats: &mut SearchStats,
    ) -> Result<(), Error> {
        let seg = &*part.seg;
        let deleted = &part.deleted;
        let rows = seg.rows();
        let view = seg.payload();
        let compiled = match &view {
            Some(v) => Some(self.compile_filter(seg, v, filter)?),
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
                self.search_ivf(part, req, index, Some(&skip), passing, scan, bufs, bounds, stats);
                return Ok(());
            }
        }
        let matching = self.sealed_matching(part, compiled.as_ref(), filter);
        let count = matching.count();
        let base = part.base;
        match (index, space.vectors) {
            (Some(index), _) if count > limit => {
                let skip = |r: usize| !matching.contains(r as u32);
                let passing = count as f32 / rows as f32;
                self.search_ivf(part, req, index, Some(&skip), passing, scan, bufs, bounds, stats);
            }
            (Some((index, data, defaults)), None) => {
                // Codes only: the matches ranked by their estimates, as the IVF search ranks.
                let params = Self::ivf_query(req, defaults);
                let search = IvfSearch { kernels: self.kernels, metric: scan.metric, query: scan.query, params };
                let mut rows = matching.iter().map(|r| r as usize);
                let sink: &mut dyn Refined = match bounds {
                    Some(b) => b,
                    None => bufs.topk,
                };
                stats.estimated += index.estimate_rows(&search, &data, &mut rows, base as u64, bufs.ivf, sink);
                stats.exact = false;
            }
            (_, Some(_)) if count.saturating_mul(4) > rows as u64 => {
                // Dense: the blocked scan with the set as its skip list.
                let skip = |r: usize| !matching.contains(r as u32);
                self.scan_space(space, base, Some(&skip), scan, bufs);
                stats.scanned += count;
            }
            (_, Some(_)) => {
                // (`vectors` is there: the branch above takes codes-only segments.)
                let mut rows = matching.iter().map(|r| r as usize).map(|r| (base + r, space.vector(r).unwrap_or(&[])));
                push_exact(self.kernels, scan.metric, scan.query, &mut rows, bufs.topk);
                stats.scanned += count;
            }
            (None, None) => unreachable!("a codes-only segment has an index (checked at open)"),
        }
        Ok(())
    }

    /// The live rows of a sealed segment that pass `filter` (`compiled`: the filter bound to
    /// its payload sections, `None` when it has none).
    pub(super) fn sealed_matching(
        &self,
        part: &Part,
        compiled: Option<&CompiledFilter<'_, '_>>,
        filter: &Filter,
    ) -> shoal_payload::Bitset {
        let seg = &*part.seg;
        let mut matching = match compiled {
            Some(c) => c.matching_points(),
            None => {
                // No payload sections: the segment's rows hold no payload, so only `has_id`
                // conditions (and their boolean combinations) can pass.
                let mut b = shoal_payload::Bitset::empty(seg.rows() as u32);
                for r in 0..seg.rows() as u32 {
                    if sealed_passes(seg, None, Some(filter), r) {
                        b.insert(r);
                    }
                }
                b
            }
        };
        part.deleted.iter().for_each(|r| matching.remove(r as u32));
        matching
    }
}

/// Parses a request's filter and checks it against `schema` (`null` means none): what every
/// reader of a collection does, local or by ranges.
pub(crate) fn parse_filter(filter: Option<&Value>, schema: &Schema) -> Result<Option<Filter>, Error> {
    let Some(v) = filter.filter(|v| !v.is_null()) else { return Ok(None) };
    let invalid = |e: shoal_payload::FilterError| Error::InvalidRequest(format!("{e}"));
    let f = Filter::from_value(v).map_err(invalid)?;
    f.validate(schema).map_err(invalid)?;
    Ok(Some(f))
}

/// Offers each `(internal id, vector)` to `topk` with its exact key of `metric` against `query`
/// (prepared), in blocks of [`EXACT_BLOCK`] rows, each one batch-kernel call: what an exact scan
/// of chosen rows does, locally and over a segment read by ranges.
pub(crate) fn push_exact(
    kernels: shoal_kernels::Kernels,
    metric: Metric,
    query: &[f32],
    rows: &mut dyn Iterator<Item = (usize, &[f32])>,
    topk: &mut TopK,
) {
    let mut block: Vec<f32> = Vec::with_capacity(EXACT_BLOCK * query.len());
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
        metric.keys(&kernels, query, &block, &mut keys[..n]);
        for (&id, &key) in ids[..n].iter().zip(&keys[..n]) {
            topk.push(Candidate { key: if key.is_nan() { f32::INFINITY } else { key }, id: id as u64 });
        }
    }
}

/// Whether sealed row `row` passes `filter` (none: every row). `compiled` is the filter bound to
/// the segment's payload sections; without them the segment's rows hold no payload, so only
/// `has_id` conditions (and their boolean combinations) can pass, checked on the row's id.
pub(super) fn sealed_passes(
    seg: &SealedSegment,
    compiled: Option<&CompiledFilter<'_, '_>>,
    filter: Option<&Filter>,
    row: u32,
) -> bool {
    match (compiled, filter) {
        (Some(c), _) => c.matches(row),
        (None, Some(f)) => reference::matches(f, &Value::Null, seg.id(row as usize)),
        (None, None) => true,
    }
}

/// Checks a query `vector` for a dense vector of `dim` dimensions and `metric`, and copies it
/// into `out` prepared for the metric (normalised for cosine).
#[inline(always)]
pub(crate) fn prepare_vector(
    kernels: shoal_kernels::Kernels,
    (dim, metric): (usize, Metric),
    vector: &[f32],
    out: &mut Vec<f32>,
) -> Result<(), Error> {
    if vector.len() != dim {
        return Err(Error::DimensionMismatch { expected: dim, found: vector.len() });
    }
    if let Some(element) = first_non_finite(vector) {
        return Err(Error::NonFinite { point: 0, element });
    }
    out.clear();
    out.extend_from_slice(vector);
    if metric.normalizes() {
        normalize(&kernels, out);
    }
    Ok(())
}
