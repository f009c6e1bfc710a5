use alloc::vec::Vec;
use shoal_kernels::Kernels;

use crate::{Candidate, Metric, TopK};

/// Rows scored per kernel call: large enough to amortise the call, small enough to stay in L1.
const BLOCK_ROWS: usize = 256;

/// Reusable buffer for [`FlatScan::scan`].
#[derive(Default, Clone, Debug)]
pub struct FlatScratch {
    keys: Vec<f32>,
}

/// An exact scan of one query: the kernels, the metric and the (prepared) query vector.
#[derive(Clone, Copy, Debug)]
pub struct FlatScan<'q> {
    /// Kernel implementation.
    pub kernels: Kernels,
    /// Metric.
    pub metric: Metric,
    /// Query vector, already normalised for cosine.
    pub query: &'q [f32],
}

impl FlatScan<'_> {
    /// Offers every row of `rows` (row-major, `query.len()` floats each) to `topk`.
    ///
    /// Row `r` gets internal id `first_id + r`. Rows for which `skip(r)` is true are ignored
    /// (pass `None` when nothing is deleted, which keeps the inner loop free of the check).
    pub fn scan(
        &self,
        rows: &[f32],
        first_id: u64,
        skip: Option<&dyn Fn(usize) -> bool>,
        scratch: &mut FlatScratch,
        topk: &mut TopK,
    ) {
        let dim = self.query.len();
        if dim == 0 {
            return;
        }
        let n = rows.len() / dim;
        scratch.keys.resize(BLOCK_ROWS, 0.0);
        let mut start = 0;
        while start < n {
            let count = BLOCK_ROWS.min(n - start);
            let keys = &mut scratch.keys[..count];
            self.metric.keys(&self.kernels, self.query, &rows[start * dim..(start + count) * dim], keys);
            let mut threshold = topk.threshold();
            for (i, &key) in keys.iter().enumerate() {
                // Overflow can make a key NaN (inf - inf), and wasm leaves a NaN's sign bit
                // unspecified: every NaN ranks last, as +inf, on every target.
                let key = if key.is_nan() { f32::INFINITY } else { key };
                // `<=` keeps ties: an equal key with a lower id may still enter.
                if key <= threshold {
                    let r = start + i;
                    if skip.is_some_and(|s| s(r)) {
                        continue;
                    }
                    topk.push(Candidate { key, id: first_id + r as u64 });
                    threshold = topk.threshold();
                }
            }
            start += count;
        }
    }
}
