//! Text and hybrid requests: BM25 in every segment with the set's statistics (documents,
//! lengths and document frequencies summed over all segments, `docs/format.md`, "Statistics
//! shared by the set"), merged by score (`query.rs` fuses it with a vector ranking).

use alloc::vec::Vec;

use shoal_index::order::{f32_key, f32_of};
use shoal_payload::Filter;
use shoal_text::{Corpus, Deadline, Query, TextError, TextIndex};

use super::Collection;
use super::search::sealed_passes;
use crate::text;
use crate::{Error, SearchRequest, SearchStats};

/// The text ranking of a request: `(internal id, BM25 score)` best first, whether the
/// deadline fired, and counters.
pub(super) struct TextRanking {
    pub(super) hits: Vec<(usize, f32)>,
    pub(super) partial: bool,
    pub(super) stats: SearchStats,
}

impl Collection {
    /// Every text index of the set with the internal id of its document 0: the sealed
    /// segments' in set order, then the mutable segment's.
    fn text_indexes(&self) -> Vec<(usize, Option<usize>, TextIndex<'_>)> {
        let mut out: Vec<(usize, Option<usize>, TextIndex<'_>)> =
            self.parts.iter().enumerate().filter_map(|(i, p)| Some((p.base, Some(i), p.seg.text()?))).collect();
        if let Some(sections) = &self.mutable.text {
            out.push((self.sealed_rows(), None, text::open(sections)));
        }
        out
    }

    /// The text ranking of a request: up to `k` `(internal id, BM25 score)` pairs, best first
    /// (ties by internal id), from every segment, with the request's filter and `deadline`, and
    /// whether the deadline fired.
    pub(super) fn text_ranking(
        &self,
        req: &SearchRequest,
        filter: Option<&Filter>,
        k: usize,
        deadline: Option<Deadline<'_>>,
    ) -> Result<TextRanking, Error> {
        let text = req.text.as_deref().unwrap_or("");
        if !self.schema.as_ref().is_some_and(text::has_text) {
            return Err(Error::InvalidRequest("`text`: the collection has no text fields".into()));
        }
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let mut hits: Vec<(usize, f32)> = Vec::new();
        let mut partial = false;
        let d = shoal_text::Bm25::default();
        let bm25 = shoal_text::Bm25 { k1: req.bm25_k1.unwrap_or(d.k1), b: req.bm25_b.unwrap_or(d.b) };
        let indexes = self.text_indexes();
        // The set's statistics: sums over every index (field 0: the joined text fields). A
        // segment written before the schema had text fields has no index: its rows are
        // documents without text (length 0), as they would be in a merged segment.
        let doc_count: u64 = indexes.iter().map(|(_, _, i)| u64::from(i.meta().doc_count)).sum::<u64>()
            + self.parts.iter().filter(|p| p.seg.text().is_none()).map(|p| p.seg.rows() as u64).sum::<u64>();
        let total_len: u64 = indexes.iter().map(|(_, _, i)| i.meta().total_len.first().copied().unwrap_or(0)).sum();
        let doc_freq = |term: &str| -> Result<u32, TextError> {
            let mut df = 0u64;
            for (_, _, index) in &indexes {
                df += index.term(0, term)?.map_or(0, |t| u64::from(t.doc_freq));
            }
            Ok(u32::try_from(df).unwrap_or(u32::MAX))
        };
        let corpus = Corpus { doc_count: u32::try_from(doc_count).unwrap_or(u32::MAX), total_len, doc_freq: &doc_freq };
        for (first, part, index) in &indexes {
            let query = Query::parse(&index.analyzer(), text);
            let run = |pass: &dyn Fn(u32) -> bool| {
                let params = shoal_text::SearchParams { k, bm25, filter: Some(pass), deadline, corpus: Some(corpus) };
                index.search(0, &query, &params).map_err(Error::Text)
            };
            let res = match part {
                Some(p) => {
                    let part = &self.parts[*p];
                    let (seg, deleted) = (&*part.seg, &part.deleted);
                    let view = seg.payload();
                    let compiled = match (filter, &view) {
                        (Some(f), Some(v)) => Some(self.compile_filter(seg, v, f)?),
                        _ => None,
                    };
                    run(&|row: u32| {
                        !deleted.contains(row as usize) && sealed_passes(seg, compiled.as_ref(), filter, row)
                    })?
                }
                None => {
                    let m = &self.mutable;
                    run(&|row: u32| (row as usize) < m.rows() && m.passes(row as usize, filter, self.nested()))?
                }
            };
            partial |= res.partial;
            stats.scanned += res.stats.scored;
            stats.segments += 1;
            hits.extend(res.hits.iter().map(|h| (first + h.doc as usize, h.score)));
        }
        best_first(&mut hits, k);
        stats.exact = !partial;
        Ok(TextRanking { hits, partial, stats })
    }
}

/// Keeps the best `k` of `(internal id, score)` hits, best score first, ties by internal id
/// (< 2^32): sorted as one `u64` per hit (the package's one integer sort).
#[inline(never)]
pub(crate) fn best_first(hits: &mut Vec<(usize, f32)>, k: usize) {
    let mut keys: Vec<u64> = hits.iter().map(|&(i, score)| u64::from(!f32_key(score)) << 32 | i as u64).collect();
    shoal_format::sort_u64(&mut keys);
    hits.clear();
    hits.extend(keys.iter().take(k).map(|&key| (key as u32 as usize, f32_of(!((key >> 32) as u32)))));
}
