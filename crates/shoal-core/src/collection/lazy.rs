//! Lazy exact re-ranking of a codes-only collection (one segment without its vectors): the
//! rows whose exact distance could matter, then the answer from vectors the host read.

use alloc::vec::Vec;

use shoal_index::ivf::Bounds;

use super::search::sealed_passes;
use super::{Collection, first_non_finite};
use crate::{Error, SearchRequest, SearchResponse, SearchStats};

impl Collection {
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
            self.prepare_query(0, vector, &mut s.query)?;
            self.search_prepared(req, 0, filter.as_ref(), s, Some(&mut bounds))
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
        let part = &self.parts[0];
        let seg = &*part.seg;
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
            (Some(f), Some(v)) => Some(self.compile_filter(seg, v, f)?),
            _ => None,
        };
        let mut points = Vec::new();
        let stats = self.scratch.with(|s| {
            self.prepare_query(0, vector, &mut s.query)?;
            s.topk.reset(req.offset + req.limit);
            let mut passing = rows
                .iter()
                .zip(vectors.chunks_exact(self.dim))
                .filter(|(r, _)| sealed_passes(seg, compiled.as_ref(), filter.as_ref(), **r))
                .map(|(&r, v)| (part.base + r as usize, v));
            super::search::push_exact(self.kernels, self.metric, &s.query, &mut passing, &mut s.topk);
            s.topk.drain_sorted(&mut s.best);
            self.emit(req, self.metric, &s.best, &mut points);
            super::query::cut(&mut points, req.score_threshold, self.metric == shoal_index::Metric::L2);
            Ok::<_, Error>(SearchStats { scanned: rows.len() as u64, segments: 1, ..SearchStats::default() })
        })?;
        Ok(SearchResponse { points, partial: false, stats })
    }

    /// Checks a lazy re-ranking request: a codes-only collection, a vector search without text.
    fn lazy_request<'r>(&self, req: &'r SearchRequest) -> Result<&'r [f32], Error> {
        req.check()?;
        if !self.codes_only() || self.parts.len() != 1 {
            return Err(Error::InvalidRequest("lazy re-ranking is for codes-only collections (one segment)".into()));
        }
        if !req.is_vector_only() || req.params.exact {
            return Err(Error::InvalidRequest(
                "lazy re-ranking answers vector searches (no `text`, `prefetch`, fusion or `exact`)".into(),
            ));
        }
        req.vector.as_deref().ok_or_else(|| Error::InvalidRequest("missing field `vector`".into()))
    }
}
