//! A brute-force oracle that shares no code with the index: score every point with the scalar
//! reference kernel, sort everything, cut.

use shoal_core::Metric;
use shoal_kernels::arch::all;

/// Normalises like the collection does (canonical dot, libm-equivalent sqrt, division).
pub fn normalized(v: &[f32]) -> Vec<f32> {
    // f32::sqrt is correctly rounded like libm::sqrtf, so the oracle may use std's.
    let norm = all::dot(v, v).sqrt();
    if norm > 0.0 { v.iter().map(|x| x / norm).collect() } else { v.to_vec() }
}

/// Top `k` `(id, score)` of `query` over live points given as `(id, vector)` in internal-id
/// order (the order that breaks ties).
pub fn top_k<I: Copy>(metric: Metric, points: &[(I, Vec<f32>)], query: &[f32], k: usize) -> Vec<(I, f32)> {
    let q = if metric == Metric::Cosine { normalized(query) } else { query.to_vec() };
    let mut scored: Vec<(f32, usize, I)> = points
        .iter()
        .enumerate()
        .map(|(i, (id, v))| {
            let key = match metric {
                Metric::L2 => all::l2_sq(&q, v),
                Metric::Dot | Metric::Cosine => -all::dot(&q, v),
            };
            (if key.is_nan() { f32::INFINITY } else { key }, i, *id)
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(key, _, id)| (id, if metric == Metric::L2 { key } else { -key })).collect()
}
