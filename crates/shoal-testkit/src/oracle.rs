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

/// The naive sparse score: 0, plus `w_i * x_i` in `f32` for every query index the stored
/// vector holds, indices ascending (`None` when they share none).
pub fn sparse_dot(
    query: &std::collections::BTreeMap<u32, f32>,
    stored: &std::collections::BTreeMap<u32, f32>,
) -> Option<f32> {
    let mut score = 0.0f32;
    let mut shared = false;
    for (i, w) in query {
        if let Some(x) = stored.get(i) {
            score += w * x;
            shared = true;
        }
    }
    shared.then_some(score)
}

/// BM25's IDF, written out: `ln(1 + (n - df + 0.5) / (df + 0.5))` in `f32` with `libm::logf`.
pub fn bm25_idf(n: u64, df: u64) -> f32 {
    libm::logf(1.0 + ((n - df) as f32 + 0.5) / (df as f32 + 0.5))
}

/// How [`fused`] fuses: reciprocal rank fusion (`k`, optional weights) or DBSF.
#[derive(Clone, Copy, Debug)]
pub enum Fused<'w> {
    /// `1 / ((p + 1) / w + k - 1)` at 0-based position `p`, 0 when `w <= 0`.
    Rrf { k: u32, weights: Option<&'w [f32]> },
    /// Each ranking's scores normalised by its mean ± 3 sample standard deviations.
    Dbsf,
}

/// The fusion formulas of `docs/format.md` ("Fusion") written out literally (terms and sums made
/// finite), sharing no code
/// with the collection's: each ranking `(points best first, lower_is_better)` adds its terms to
/// a list of sums in ranking order, then a comparator sort — fused score descending, best
/// position, id.
pub fn fused(
    fusion: Fused<'_>,
    rankings: &[(&[(shoal_format::PointId, f32)], bool)],
) -> Vec<(shoal_format::PointId, f32)> {
    let mut sums: Vec<(shoal_format::PointId, f32, usize)> = Vec::new();
    for (l, &(points, lower)) in rankings.iter().enumerate() {
        let fin = |s: f32| match s {
            s if s.is_nan() && lower => f32::MAX,
            s if s.is_nan() => -f32::MAX,
            f32::INFINITY => f32::MAX,
            f32::NEG_INFINITY => -f32::MAX,
            s => s,
        };
        // Squared distances enter DBSF as negated distances.
        let scores: Vec<f32> =
            points.iter().map(|p| if lower { -fin(p.1).max(0.0).sqrt() } else { fin(p.1) }).collect();
        let n = scores.len();
        let (mut mean, mut a) = (0.0f32, 0.0f32);
        for j in 1..=n {
            let d = scores[j - 1] - mean;
            mean += d / j as f32;
            a += d * (scores[j - 1] - mean);
        }
        let sigma = (a / (n as f32 - 1.0)).sqrt();
        for (p, &(id, _)) in points.iter().enumerate() {
            let term = match fusion {
                Fused::Rrf { k, weights } => {
                    let w = weights.map_or(1.0, |w| w[l]);
                    if w <= 0.0 { 0.0 } else { 1.0 / ((p + 1) as f32 / w + k as f32 - 1.0) }
                }
                Fused::Dbsf if n == 1 => 0.5,
                Fused::Dbsf => {
                    let (lo, hi) = (mean - 3.0 * sigma, mean + 3.0 * sigma);
                    let x = if lo == hi { 0.5 } else { (scores[p] - lo) / (hi - lo) };
                    if x.is_nan() { 0.0 } else { x }
                }
            };
            let term = if term.is_nan() { 0.0 } else { term.clamp(-f32::MAX, f32::MAX) };
            match sums.iter_mut().find(|s| s.0 == id) {
                Some(s) => {
                    s.1 += term;
                    s.2 = s.2.min(p);
                }
                None => sums.push((id, term, p)),
            }
        }
    }
    for s in &mut sums {
        s.1 = s.1.clamp(-f32::MAX, f32::MAX);
    }
    sums.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    sums.into_iter().map(|(id, s, _)| (id, s)).collect()
}
