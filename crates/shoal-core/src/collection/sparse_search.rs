//! Sparse vector requests (`docs/format.md`, "Sparse vectors"): each sealed segment scored
//! term at a time over its postings, the unsealed rows one by one through the reference
//! [`dot`], with weights from the set's statistics when the vector has the `idf` modifier;
//! merged by score, ties by internal id.

use alloc::format;
use alloc::vec::Vec;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;
use shoal_format::SparseEntry;
use shoal_index::order::{f32_key, f32_of};
use shoal_payload::Filter;

use super::Collection;
use super::search::sealed_passes;
use crate::sparse::{SparseVector, dot, weight};
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
                e.value = weight(e.value, true, n, df);
            }
        }
        let mut stats = SearchStats { exact: true, ..SearchStats::default() };
        let mut hits: Vec<(usize, f32)> = Vec::new();
        let mut acc: HashMap<u32, f32, FxBuildHasher> = HashMap::default();
        for (part, view) in self.parts.iter().zip(&views) {
            let Some(view) = view else { continue };
            acc.clear();
            // Term at a time, indices ascending: each row's score is summed in the order
            // `dot` sums it.
            for e in &w {
                if let Some((rows, values)) = view.postings(e.index)? {
                    for (&r, &x) in rows.iter().zip(values) {
                        *acc.entry(r).or_insert(0.0) += e.value * x;
                    }
                }
            }
            let (seg, deleted) = (&*part.seg, &part.deleted);
            let payload = seg.payload();
            let compiled = match (filter, &payload) {
                (Some(f), Some(v)) => Some(self.compile_filter(seg, v, f)?),
                _ => None,
            };
            stats.scanned += acc.len() as u64;
            stats.segments += 1;
            hits.extend(
                acc.iter()
                    .filter(|&(&r, _)| {
                        !deleted.contains(r as usize) && sealed_passes(seg, compiled.as_ref(), filter, r)
                    })
                    .map(|(&r, &score)| (part.base + r as usize, score)),
            );
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
        // Best score first, ties by internal id (< 2^32): sorted as one u64 per hit.
        let mut keys: Vec<u64> = hits.iter().map(|&(i, score)| u64::from(!f32_key(score)) << 32 | i as u64).collect();
        shoal_format::sort_u64(&mut keys);
        hits.clear();
        hits.extend(keys.iter().take(k).map(|&key| (key as u32 as usize, f32_of(!((key >> 32) as u32)))));
        Ok((hits, stats))
    }
}
