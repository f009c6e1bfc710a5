//! Sparse vector requests (`docs/format.md`, "Sparse vectors"): each sealed segment scored
//! term at a time over its postings, the unsealed rows one by one through the reference
//! [`dot`], with weights from the set's statistics when the vector has the `idf` modifier;
//! merged by score, ties by internal id.

use alloc::format;
use alloc::vec::Vec;

use shoal_format::SparseEntry;
use shoal_payload::Filter;

use super::Collection;
use super::search::sealed_passes;
use crate::sparse::{SparseVector, dot, idf_weight};
use crate::{Error, SearchRequest, SearchStats};

impl Collection {
    /// Up to `k` `(internal id, score)` pairs of the sparse query `query` in the sparse vector
    /// `req.using`, best first (ties by internal id), among the live points that hold it, pass
    /// `filter` and share an index with the query.
    pub(super) fn sparse_ranking(
        &self,
        req: &SearchRequest,
        query: &SparseVector,
        filter: Option<&Filter>,
        k: usize,
    ) -> Result<(Vec<(usize, f32)>, SearchStats), Error> {
        let name = req.using.as_deref().unwrap_or("");
        let t = self
            .sparse_position(name)
            .ok_or_else(|| Error::InvalidRequest(format!("`using`: the collection has no sparse vector \"{name}\"")))?;
        let views: Vec<_> = self.parts.iter().map(|p| p.seg.sparse(t)).collect();
        let unsealed = self.mutable.sparse.get(t);
        let mut w: Vec<SparseEntry> = query.entries().to_vec();
        if self.sparse[t].idf {
            // The set's statistics: rows holding the vector and rows holding each index, over
            // every segment and the unsealed rows (deleted ones until a seal or merge drops them).
            let n = views.iter().flatten().map(|v| v.meta.present).sum::<u64>() + unsealed.map_or(0, |u| u.present());
            for e in &mut w {
                let df =
                    views.iter().flatten().map(|v| v.df(e.index)).sum::<u64>() + unsealed.map_or(0, |u| u.df(e.index));
                e.value = idf_weight(e.value, n, df);
            }
        }
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let mut hits: Vec<(usize, f32)> = Vec::new();
        // One key per posting of the query's indices: its row, then its place in query order
        // (indices ascending), with the product beside it. Sorted, each row's products come
        // together in the order `dot` sums them.
        let (mut keys, mut products): (Vec<u64>, Vec<f32>) = (Vec::new(), Vec::new());
        for (part, view) in self.parts.iter().zip(&views) {
            let Some(view) = view else { continue };
            keys.clear();
            products.clear();
            let seg_rows = part.seg.rows() as u32;
            for e in &w {
                if let Some((rows, values)) = view.postings(e.index)? {
                    for (&r, &x) in rows.iter().zip(values) {
                        if r >= seg_rows {
                            // A damaged file (open checks lengths, `verify` everything): a
                            // typed error, never another segment's point or a panic.
                            return Err(crate::sections::bad("SPARSE_POSTINGS", "a row out of range"));
                        }
                        keys.push(u64::from(r) << 32 | products.len() as u64);
                        products.push(e.value * x);
                    }
                }
            }
            shoal_format::sort_u64(&mut keys);
            let (seg, deleted) = (&*part.seg, &part.deleted);
            let payload = seg.payload();
            let compiled = match (filter, &payload) {
                (Some(f), Some(v)) => Some(self.compile_filter(seg, v, f)?),
                _ => None,
            };
            stats.segments += 1;
            let mut at = 0;
            while at < keys.len() {
                let row = (keys[at] >> 32) as u32;
                let mut score = 0.0f32;
                while at < keys.len() && (keys[at] >> 32) as u32 == row {
                    score += products[keys[at] as u32 as usize];
                    at += 1;
                }
                stats.scanned += 1;
                if !deleted.contains(row as usize) && sealed_passes(seg, compiled.as_ref(), filter, row) {
                    hits.push((part.base + row as usize, score));
                }
            }
        }
        if let Some(u) = unsealed {
            let (m, first) = (&self.mutable, self.sealed_rows());
            stats.segments += 1;
            for row in 0..m.rows() {
                let Some(x) = u.row(row) else { continue };
                stats.scanned += 1;
                if let Some(score) = dot(&w, x).filter(|_| m.passes(row, filter, self.nested())) {
                    hits.push((first + row, score));
                }
            }
        }
        super::text_search::best_first(&mut hits, k);
        Ok((hits, stats))
    }
}
