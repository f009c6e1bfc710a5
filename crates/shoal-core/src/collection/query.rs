//! A search request as a whole: what it ranks by — a vector (`search.rs`), text
//! (`text_search.rs`), both fused (two rankings, as if prefetched), or its `prefetch` searches
//! fused or re-scored by its vector (`docs/format.md`, "Fusion") — then its `score_threshold`,
//! `offset` and payloads.

use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::PointId;
use shoal_index::Metric;
use shoal_payload::Filter;
use shoal_text::Deadline;

use super::Collection;
use super::text_search::TextRanking;
use crate::fusion::{DEFAULT_RRF_K, FUSION_DEPTH, Fusion, Ranking, fuse};
use crate::mutable::IdMap;
use crate::{Error, ScoredPoint, SearchRequest, SearchResponse, SearchStats};

/// What the searches of one request did, summed over its prefetches.
struct Tally {
    stats: SearchStats,
    partial: bool,
}

impl Tally {
    fn add(&mut self, stats: SearchStats, partial: bool) {
        self.stats.scanned += stats.scanned;
        self.stats.estimated += stats.estimated;
        self.stats.segments += stats.segments;
        self.stats.exact &= stats.exact;
        self.partial |= partial;
    }
}

impl Collection {
    /// Runs a search request.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse, Error> {
        req.check()?;
        // Not in `check`: a host may set `vector` after parsing the JSON.
        req.check_shape()?;
        let mut tally = Tally { stats: SearchStats { exact: true, ..SearchStats::default() }, partial: false };
        // One deadline for the whole request, every text ranking in it (a request without text
        // needs no clock: its budget does not apply).
        fn has_text(r: &SearchRequest) -> bool {
            r.text.is_some() || r.prefetch.iter().any(has_text)
        }
        let deadline = match (req.timeout_ms.filter(|_| has_text(req)), &self.clock) {
            (None, _) => None,
            (Some(ms), Some(clock)) => Some(Deadline::after(clock.as_ref(), ms.saturating_mul(1000))),
            (Some(_), None) => return Err(Error::Unsupported("timeout_ms on a host without a clock")),
        };
        let (mut points, _) = self.ranked(req, None, deadline, &mut tally)?;
        if req.with_payload {
            for p in points.iter_mut().filter(|p| p.payload.is_none()) {
                p.payload = Some(self.payload(p.id).unwrap_or(Value::Null));
            }
        }
        Ok(SearchResponse { points, partial: tally.partial, stats: tally.stats })
    }

    /// The results of `req` (the top request or one of its prefetches, under the request's
    /// `deadline`),
    /// best first, `offset` skipped, `score_threshold` applied, and whether lower scores are
    /// better (squared L2 distances). `outer` is the filter of the requests above it, which
    /// applies as well as its own.
    fn ranked(
        &self,
        req: &SearchRequest,
        outer: Option<&Value>,
        deadline: Option<Deadline<'_>>,
        tally: &mut Tally,
    ) -> Result<(Vec<ScoredPoint>, bool), Error> {
        let both;
        let filter_json = match (outer, req.filter.as_ref().filter(|f| !f.is_null())) {
            (Some(a), Some(b)) => {
                // `{"must": [a, b]}`, built by hand (`json!` would serialise `a` and `b`).
                let mut must = serde_json::Map::new();
                must.insert("must".into(), Value::Array(alloc::vec![a.clone(), b.clone()]));
                both = Value::Object(must);
                Some(&both)
            }
            (a, b) => a.or(b),
        };
        let mut points = Vec::new();
        let hybrid = req.prefetch.is_empty() && req.vector.is_some() && req.text.is_some();
        let lower_is_better = if req.prefetch.is_empty() && !hybrid {
            let filter = self.parse_filter(filter_json)?;
            self.leaf(req, filter.as_ref(), deadline, &mut points, tally)?
        } else {
            // The rankings: the prefetches, or a hybrid request's vector and text searches, each
            // to `FUSION_DEPTH` results (or `offset + limit`).
            let pair;
            let subs = if hybrid {
                let depth = (req.offset + req.limit).clamp(FUSION_DEPTH, crate::MAX_LIMIT);
                let (vector, text) = (req.vector.clone(), req.text.clone());
                let params = req.params.clone();
                pair = [
                    SearchRequest {
                        vector,
                        using: req.using.clone(),
                        limit: depth,
                        params,
                        ..SearchRequest::default()
                    },
                    SearchRequest {
                        text,
                        limit: depth,
                        bm25_k1: req.bm25_k1,
                        bm25_b: req.bm25_b,
                        ..SearchRequest::default()
                    },
                ];
                &pair[..]
            } else {
                &req.prefetch[..]
            };
            let mut lists = Vec::with_capacity(subs.len());
            for p in subs {
                let (found, lower) = self.ranked(p, filter_json, deadline, tally)?;
                lists.push((found.iter().map(|p| (p.id, p.score)).collect::<Vec<(PointId, f32)>>(), lower));
            }
            match &req.vector {
                Some(v) if !hybrid => {
                    let ids = lists.iter().flat_map(|l| l.0.iter().map(|p| p.0));
                    tally.add(self.rescore(req, v, ids, &mut points)?, false);
                    self.dense[self.dense_of(req)?].metric == Metric::L2
                }
                _ => {
                    let fusion = match req.fusion.as_deref() {
                        Some("dbsf") => Fusion::Dbsf,
                        Some("weighted") => Fusion::Weighted { alpha: req.alpha.unwrap_or(0.5) },
                        _ => Fusion::Rrf { k: req.rrf_k.unwrap_or(DEFAULT_RRF_K), weights: req.weights.as_deref() },
                    };
                    let rankings: Vec<Ranking<'_>> =
                        lists.iter().map(|(points, lower)| Ranking { points, lower_is_better: *lower }).collect();
                    let fused = fuse(&fusion, &rankings);
                    points.extend(fused.into_iter().skip(req.offset).take(req.limit).map(|(id, score)| ScoredPoint {
                        id,
                        score,
                        payload: None,
                    }));
                    false
                }
            }
        };
        cut(&mut points, req.score_threshold, lower_is_better);
        Ok((points, lower_is_better))
    }

    /// A request that ranks by a vector or by text alone.
    fn leaf(
        &self,
        req: &SearchRequest,
        filter: Option<&Filter>,
        deadline: Option<Deadline<'_>>,
        points: &mut Vec<ScoredPoint>,
        tally: &mut Tally,
    ) -> Result<bool, Error> {
        if let Some(v) = &req.vector {
            tally.add(self.search_vector(req, v, filter, points)?, false);
            return Ok(self.dense[self.dense_of(req)?].metric == Metric::L2);
        }
        let k = req.offset + req.limit;
        if let Some(q) = &req.sparse {
            let (hits, stats) = self.sparse_ranking(req, q, filter, k)?;
            points.extend(hits.into_iter().skip(req.offset).map(|(internal, score)| ScoredPoint {
                id: self.external_id(internal),
                score,
                payload: None,
            }));
            tally.add(stats, false);
            return Ok(false);
        }
        let TextRanking { hits, partial, stats } = self.text_ranking(req, filter, k, deadline)?;
        points.extend(hits.into_iter().skip(req.offset).map(|(internal, score)| ScoredPoint {
            id: self.external_id(internal),
            score,
            payload: None,
        }));
        tally.add(stats, partial);
        Ok(false)
    }

    /// The points `ids` (each once, whatever the repeats) ranked exactly by `vector`: the
    /// best `offset + limit` of `req`, `offset` skipped.
    fn rescore(
        &self,
        req: &SearchRequest,
        vector: &[f32],
        ids: impl Iterator<Item = PointId>,
        out: &mut Vec<ScoredPoint>,
    ) -> Result<SearchStats, Error> {
        // Each point once (the order does not matter: ties break by internal id).
        let d = self.dense_of(req)?;
        let mut seen = IdMap::default();
        let mut rows = Vec::new();
        for id in ids.filter(|&id| seen.insert(id, 0).is_none()) {
            let internal = self.internal_of(id).ok_or(Error::CodesOnly("re-scoring by a vector"))?;
            let v = self.dense_at(internal, d).ok_or(Error::CodesOnly("re-scoring by a vector"))?;
            rows.push((internal, v));
        }
        let metric = self.dense[d].metric;
        self.scratch.with(|s| {
            self.prepare_query(d, vector, &mut s.query)?;
            s.topk.reset(req.offset + req.limit);
            super::search::push_exact(self.kernels, metric, &s.query, &mut rows.iter().copied(), &mut s.topk);
            s.topk.drain_sorted(&mut s.best);
            self.emit(req, metric, &s.best, out);
            Ok(SearchStats { scanned: rows.len() as u64, estimated: 0, segments: 0, exact: true })
        })
    }
}

/// Leaves out the points scoring worse than `threshold` (a squared distance above it when lower
/// scores are better, else a score below it). The points are in score order, so this keeps a
/// leading run, whether applied before or after an offset.
pub(crate) fn cut(points: &mut Vec<ScoredPoint>, threshold: Option<f32>, lower_is_better: bool) {
    if let Some(t) = threshold {
        points.retain(|p| if lower_is_better { p.score <= t } else { p.score >= t });
    }
}
