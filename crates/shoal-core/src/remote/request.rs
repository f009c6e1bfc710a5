//! A search request over segments read by ranges (one segment, or a set's): its ranking — a
//! vector, text, or both fused as a local hybrid request fuses them — then the point ids of
//! its text hits and, with `with_payload`, its documents. Every part names what it lacks and
//! the request fetches all of it at once, so the waves are: (1) probed partitions and the
//! query terms' dictionary groups, (2) re-rank vectors and the terms' records, (3) the
//! results' documents. Text hits' ids are in memory (packed, hot) except in segments with too
//! many: their blocks then come in (3), with the documents of a text request's results, and a
//! hybrid request's documents in (4).

use alloc::borrow::Cow;
use alloc::vec::Vec;
use core::ops::Range;

use serde_json::Value;
use shoal_format::PointId;
use shoal_index::{Candidate, Metric, TopK};
use shoal_payload::{Filter, Schema};
use shoal_text::Query;

use super::set::SetStep;
use super::text_query::{Key, doc_freqs, query_keys};
use super::{RangeCache, RemoteSegment, Step, coalesce, respond};
use crate::collection::{best_first, cut};
use crate::fusion::{DEFAULT_RRF_K, FUSION_DEPTH, Fusion, Ranking, fuse};
use crate::{Error, ScoredPoint, SearchRequest, SearchResponse, SearchStats};

/// One segment of a request: its reader, the bytes fetched of it, its row 0's internal id.
pub(super) struct Part<'a> {
    pub(super) seg: &'a RemoteSegment,
    pub(super) cache: &'a RangeCache,
    pub(super) base: u64,
}

/// The ranges each part lacks.
struct Wants(Vec<Vec<Range<u64>>>);

impl Wants {
    fn add(&mut self, part: usize, ranges: impl IntoIterator<Item = Range<u64>>) {
        self.0[part].extend(ranges);
    }

    /// The ranges to fetch, per part, coalesced by each part's merge gap (`None`: nothing).
    fn fetch(&mut self, parts: &[Part<'_>]) -> Option<SetStep<SearchResponse>> {
        let empty = alloc::vec![Vec::new(); parts.len()];
        let out: Vec<(usize, Vec<Range<u64>>)> = core::mem::replace(&mut self.0, empty)
            .into_iter()
            .enumerate()
            .filter(|(_, r)| !r.is_empty())
            .map(|(i, mut r)| {
                r.sort_unstable_by_key(|r| (r.start, r.end));
                (i, coalesce(&r, parts[i].seg.merge_gap))
            })
            .collect();
        (!out.is_empty()).then_some(SetStep::Fetch(out))
    }
}

/// Checks what a request over segments read by ranges may ask: a vector and/or text ranking,
/// a filter (checked against `schema`, the collection's; no `has_id`), no prefetch, sparse
/// vector, exact search or text deadline. Returns the filter.
fn check(
    req: &SearchRequest,
    (dim, metric): (usize, Metric),
    text_fields: bool,
    schema: &Schema,
) -> Result<Option<Filter>, Error> {
    req.check()?;
    req.check_shape()?;
    if !req.prefetch.is_empty() || req.sparse.is_some() {
        return Err(Error::Unsupported("`prefetch` or `sparse` in a set read by ranges"));
    }
    let filter = crate::collection::parse_filter(req.filter.as_ref(), schema)?;
    if filter.as_ref().is_some_and(super::filter::has_id) {
        return Err(Error::Unsupported("`has_id` in a filter of a set read by ranges"));
    }
    if req.params.exact {
        return Err(Error::Unsupported("exact search of a set read by ranges (it reads every vector)"));
    }
    if req.using.as_deref().is_some_and(|u| !u.is_empty()) {
        return Err(Error::InvalidRequest(alloc::format!(
            "`using`: \"{}\" is not a dense vector of the collection",
            req.using.as_deref().unwrap_or("")
        )));
    }
    if let Some(v) = &req.vector {
        let mut out = Vec::new();
        crate::collection::prepare_vector(shoal_kernels::Kernels::scalar(), (dim, metric), v, &mut out)?;
    }
    if req.text.is_some() {
        if !text_fields {
            return Err(Error::InvalidRequest("`text`: the collection has no text fields".into()));
        }
        if req.timeout_ms.is_some() {
            return Err(Error::Unsupported("timeout_ms with `text` in a set read by ranges"));
        }
    }
    Ok(filter)
}

/// The part holding internal id `internal`, and its row there.
fn locate(parts: &[Part<'_>], internal: u64) -> (usize, usize) {
    let p = parts.partition_point(|p| p.base <= internal) - 1;
    (p, (internal - parts[p].base) as usize)
}

/// A text ranking: `(internal id, score)` best first, and what the search did.
struct TextHits {
    hits: Vec<(usize, f32)>,
    stats: SearchStats,
}

/// Searches `parts` with `req` over the bytes fetched so far: the response, or every part's
/// missing ranges at once. `text_fields`: whether the collection's schema has text fields;
/// `schema`: the collection's payload schema (filters are checked against it).
pub(super) fn search(
    parts: &[Part<'_>],
    req: &SearchRequest,
    shape: (usize, Metric),
    text_fields: bool,
    schema: &Schema,
) -> Result<SetStep<SearchResponse>, Error> {
    let filter = check(req, shape, text_fields, schema)?;
    let filter = filter.as_ref();
    let metric = shape.1;
    let hybrid = req.vector.is_some() && req.text.is_some();
    let depth = if hybrid { (req.offset + req.limit).clamp(FUSION_DEPTH, crate::MAX_LIMIT) } else { 0 };
    let vreq: Option<Cow<'_, SearchRequest>> = match (&req.vector, hybrid) {
        (None, _) => None,
        (Some(_), false) => Some(Cow::Borrowed(req)),
        (Some(v), true) => Some(Cow::Owned(SearchRequest {
            vector: Some(v.clone()),
            limit: depth,
            params: req.params.clone(),
            ..SearchRequest::default()
        })),
    };
    let k_text = if hybrid { depth } else { req.offset + req.limit };
    let mut wants = Wants(alloc::vec![Vec::new(); parts.len()]);

    // The rankings' waves.
    let vector = match &vreq {
        Some(v) => vector_ranking(parts, v, (filter, schema), &mut wants)?,
        None => None,
    };
    let text = match &req.text {
        Some(t) => text_ranking(parts, req, t, k_text, (filter, schema), &mut wants)?,
        None => None,
    };
    // A ranking is `None` when it lacks bytes, and then it has named them.
    let lacking = (vreq.is_some() && vector.is_none()) || (req.text.is_some() && text.is_none());
    if let Some(f) = wants.fetch(parts) {
        return Ok(f);
    }
    if lacking {
        // (A reader's bug, never a server's: each ranking names what it lacks.)
        return Err(Error::Format(shoal_format::FormatError::Malformed(
            "a search lacks bytes and names none to fetch",
        )));
    }
    let mut stats = SearchStats { exact: true, ..SearchStats::default() };
    let add = |stats: &mut SearchStats, s: &SearchStats| {
        stats.scanned += s.scanned;
        stats.estimated += s.estimated;
        stats.segments += s.segments;
        stats.exact &= s.exact;
    };
    // Ids of text hits: the results' (with their documents when asked), or all for fusion.
    let text_ids = match &text {
        Some(t) => {
            add(&mut stats, &t.stats);
            let wanted = if hybrid { &t.hits[..] } else { &t.hits[t.hits.len().min(req.offset)..] };
            let mut ids = Vec::with_capacity(wanted.len());
            for &(internal, _) in wanted {
                let (p, row) = locate(parts, internal as u64);
                let th = parts[p].seg.text.as_ref().expect("a hit of a segment with text");
                match th.id(row, parts[p].cache)? {
                    Ok(id) => ids.push(id),
                    Err(range) => wants.add(p, [range]),
                }
                if req.with_payload && !hybrid {
                    want_document(parts, internal as u64, &mut wants);
                }
            }
            ids
        }
        None => Vec::new(),
    };
    if let Some(f) = wants.fetch(parts) {
        return Ok(f);
    }
    // The results, with each one's internal id.
    let mut points: Vec<(ScoredPoint, u64)> = Vec::new();
    match (vector, text) {
        (Some((best, vstats)), None) => {
            add(&mut stats, &vstats);
            let response = respond(req, metric, &best, vstats);
            let internal = best.iter().skip(req.offset).map(|(c, _)| c.id);
            points.extend(response.points.into_iter().zip(internal));
        }
        (None, Some(t)) => {
            let hits = &t.hits[t.hits.len().min(req.offset)..];
            let mut scored: Vec<ScoredPoint> = hits
                .iter()
                .zip(&text_ids)
                .map(|(&(_, score), &id)| ScoredPoint { id: PointId::Num(id), score, payload: None })
                .collect();
            cut(&mut scored, req.score_threshold, false);
            points.extend(scored.into_iter().zip(hits.iter().map(|h| h.0 as u64)));
        }
        (Some((best, vstats)), Some(t)) => {
            add(&mut stats, &vstats);
            let sub = vreq.as_ref().expect("a vector ranking");
            let vpoints = respond(sub, metric, &best, vstats).points;
            let vlist: Vec<(PointId, f32)> = vpoints.iter().map(|p| (p.id, p.score)).collect();
            let tlist: Vec<(PointId, f32)> =
                t.hits.iter().zip(&text_ids).map(|(&(_, score), &id)| (PointId::Num(id), score)).collect();
            let fusion = match req.fusion.as_deref() {
                Some("dbsf") => Fusion::Dbsf,
                Some("weighted") => Fusion::Weighted { alpha: req.alpha.unwrap_or(0.5) },
                _ => Fusion::Rrf { k: req.rrf_k.unwrap_or(DEFAULT_RRF_K), weights: req.weights.as_deref() },
            };
            let rankings = [
                Ranking { points: &vlist, lower_is_better: metric == Metric::L2 },
                Ranking { points: &tlist, lower_is_better: false },
            ];
            let fused = fuse(&fusion, &rankings);
            let internal_of = |id: PointId| -> u64 {
                let v = best.iter().find(|(_, i)| PointId::Num(*i) == id).map(|(c, _)| c.id);
                let t = t.hits.iter().zip(&text_ids).find(|(_, i)| PointId::Num(**i) == id).map(|(h, _)| h.0 as u64);
                v.or(t).expect("a fused id is in a ranking")
            };
            let mut scored: Vec<ScoredPoint> = fused
                .into_iter()
                .skip(req.offset)
                .take(req.limit)
                .map(|(id, score)| ScoredPoint { id, score, payload: None })
                .collect();
            cut(&mut scored, req.score_threshold, false);
            points.extend(scored.into_iter().map(|p| {
                let i = internal_of(p.id);
                (p, i)
            }));
        }
        (None, None) => unreachable!("a request ranks by a vector or text (check_shape)"),
    }
    if req.with_payload {
        for (p, internal) in &mut points {
            let (part, row) = locate(parts, *internal);
            p.payload = match &parts[part].seg.docs {
                None => Some(Value::Object(serde_json::Map::new())),
                Some(d) => d.document(row, parts[part].cache)?,
            };
            if p.payload.is_none() {
                want_document(parts, *internal, &mut wants);
            }
        }
        if let Some(f) = wants.fetch(parts) {
            return Ok(f);
        }
    }
    Ok(SetStep::Done(SearchResponse { points: points.into_iter().map(|(p, _)| p).collect(), partial: false, stats }))
}

/// Notes the document block of `internal` when its segment has documents and lacks it.
fn want_document(parts: &[Part<'_>], internal: u64, wants: &mut Wants) {
    let (p, row) = locate(parts, internal);
    if let Some(d) = &parts[p].seg.docs {
        let r = d.range(row);
        if !parts[p].cache.contains(&r) {
            wants.add(p, [r]);
        }
    }
}

/// The vector ranking of `req` over every part (best `offset + limit`, internal ids, with their
/// point ids), or `None` with the ranges it lacks noted.
#[allow(clippy::type_complexity)]
fn vector_ranking(
    parts: &[Part<'_>],
    req: &SearchRequest,
    (filter, schema): (Option<&Filter>, &Schema),
    wants: &mut Wants,
) -> Result<Option<(Vec<(Candidate, u64)>, SearchStats)>, Error> {
    let k = req.offset + req.limit;
    let mut topk = TopK::new(k);
    let mut ids = Vec::new();
    let mut stats = SearchStats { exact: true, ..SearchStats::default() };
    let mut lacking = false;
    for (i, part) in parts.iter().enumerate() {
        match part.seg.search_hits(req, filter, schema, part.cache)? {
            Step::Fetch(ranges) => {
                wants.add(i, ranges);
                lacking = true;
            }
            Step::Done(hits) => {
                for (c, id) in hits.best {
                    let internal = part.base + c.id;
                    ids.push((internal, id));
                    topk.push(Candidate { key: c.key, id: internal });
                }
                stats.scanned += hits.stats.scanned;
                stats.estimated += hits.stats.estimated;
                stats.segments += 1;
                stats.exact &= hits.stats.exact;
            }
        }
    }
    if lacking {
        return Ok(None);
    }
    let mut best = Vec::new();
    topk.drain_sorted(&mut best);
    ids.sort_unstable();
    let best = best
        .into_iter()
        .map(|c| {
            let at = ids.binary_search_by_key(&c.id, |&(internal, _)| internal).expect("a segment's hit");
            (c, ids[at].1)
        })
        .collect();
    Ok(Some((best, stats)))
}

/// The text ranking of `text` over every part (its best `k`, internal ids), with the set's
/// statistics (`docs/format.md`, "Statistics shared by the set"), or `None` with the ranges it
/// lacks noted.
fn text_ranking(
    parts: &[Part<'_>],
    req: &SearchRequest,
    text: &str,
    k: usize,
    (filter, schema): (Option<&Filter>, &Schema),
    wants: &mut Wants,
) -> Result<Option<TextHits>, Error> {
    let mut queries: Vec<Option<Query>> = Vec::with_capacity(parts.len());
    let mut keys: Vec<Vec<Key>> = Vec::with_capacity(parts.len());
    let mut entries = Vec::with_capacity(parts.len());
    let mut passing: Vec<Option<shoal_payload::Bitset>> = Vec::with_capacity(parts.len());
    let mut lacking = false;
    for (i, part) in parts.iter().enumerate() {
        let Some(th) = &part.seg.text else {
            queries.push(None);
            keys.push(Vec::new());
            entries.push(Vec::new());
            passing.push(None);
            continue;
        };
        // The rows that pass the filter (BM25 scores only those, as locally).
        passing.push(match filter {
            None => None,
            Some(f) => match part.seg.filter_rows(f, schema, part.cache)? {
                Step::Fetch(ranges) => {
                    wants.add(i, ranges);
                    lacking = true;
                    None
                }
                Step::Done(rows) => Some(rows),
            },
        });
        let query = Query::parse(&th.analyzer()?, text);
        let ks = query_keys(&query);
        match th.entries(&ks, part.cache)? {
            Step::Fetch(ranges) => {
                wants.add(i, ranges);
                lacking = true;
                entries.push(Vec::new());
            }
            Step::Done(e) => entries.push(e),
        }
        queries.push(Some(query));
        keys.push(ks);
    }
    if lacking {
        return Ok(None);
    }
    // The set's statistics: every segment's documents (one without a text index counts its
    // rows, documents of length 0), lengths and document frequencies, summed.
    let (mut doc_count, mut total_len) = (0u64, 0u64);
    for part in parts {
        match &part.seg.text {
            Some(th) => {
                let (n, len) = th.stats()?;
                doc_count += n;
                total_len += len;
            }
            None => doc_count += part.seg.rows() as u64,
        }
    }
    let df = doc_freqs(&keys, &entries);
    let doc_freq = |term: &str| -> Result<u32, shoal_text::TextError> {
        let mut key = alloc::vec![0u8];
        key.extend_from_slice(term.as_bytes());
        Ok(u32::try_from(df.get(&key).copied().unwrap_or(0)).unwrap_or(u32::MAX))
    };
    let corpus =
        shoal_text::Corpus { doc_count: u32::try_from(doc_count).unwrap_or(u32::MAX), total_len, doc_freq: &doc_freq };
    let d = shoal_text::Bm25::default();
    let bm25 = shoal_text::Bm25 { k1: req.bm25_k1.unwrap_or(d.k1), b: req.bm25_b.unwrap_or(d.b) };
    let mut hits: Vec<(usize, f32)> = Vec::new();
    let mut stats = SearchStats { exact: true, ..SearchStats::default() };
    for (i, part) in parts.iter().enumerate() {
        let (Some(th), Some(query)) = (&part.seg.text, &queries[i]) else { continue };
        let pass = |row: u32| passing[i].as_ref().is_none_or(|p| p.contains(row));
        let params = shoal_text::SearchParams { k, bm25, filter: Some(&pass), deadline: None, corpus: Some(corpus) };
        let res = th.search(&keys[i], &entries[i], part.cache, query, &params)?;
        stats.scanned += res.stats.scored;
        stats.segments += 1;
        hits.extend(res.hits.iter().map(|h| (part.base as usize + h.doc as usize, h.score)));
    }
    best_first(&mut hits, k);
    Ok(Some(TextHits { hits, stats }))
}
