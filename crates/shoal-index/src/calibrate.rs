//! Default query settings chosen at build time from the data itself, so an index reaches its
//! recall target without the user tuning `nprobe` and `rerank`.
//!
//! A seeded sample of the indexed rows serves as queries. Their exact top-`k` (the row itself
//! left out) is computed by brute force; then, for every re-ranking depth in [`RERANK_STEPS`], the
//! smallest `nprobe` of [`nprobe_steps`] that reaches the target recall is found, and the pair
//! with the lowest [`work`] wins. Everything is counted, not timed, so the choice is the same on
//! every target and in every run.

use alloc::vec::Vec;

use shoal_kernels::Kernels;

use crate::ivf::{IvfData, IvfIndex, IvfQuery, IvfScratch, IvfSearch, IvfStats, MIN_PROBES};
use crate::progress::Progress;
use crate::rabitq::EPSILON0;
use crate::rng::Rng;
use crate::{Candidate, FlatScan, FlatScratch, Metric, TopK};

/// Recall@10 the defaults aim for on the sample (a margin above the 0.95 users are promised,
/// since held-out queries are usually a little harder than indexed rows).
pub const TARGET_RECALL: f64 = 0.97;
/// Sampled queries (at most; fewer when the collection is smaller).
pub const SAMPLE: usize = 100;
/// Results per sampled query.
const K: usize = 10;
/// Re-ranking depths tried.
pub const RERANK_STEPS: [usize; 5] = [4, 8, 16, 32, 64];
/// Adaptive probing ratios tried (on squared centroid distances).
pub const PROBE_RATIOS: [f32; 13] = [1.02, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0];

/// `nprobe` values tried, ascending, about 1.5x apart, ending at `nlist`.
pub fn nprobe_steps(nlist: usize) -> Vec<usize> {
    let mut steps = Vec::new();
    let mut p = 1usize;
    while p < nlist {
        steps.push(p);
        p = (p * 3 / 2).max(p + 1);
    }
    steps.push(nlist);
    steps
}

/// Modelled cost of a search from its counters, in units of about a third of a nanosecond:
/// the FastScan work per estimated code grows with the padded dimension; refining a row with
/// its extra bits reads codes the scan did not and decodes them; an exact distance reads a
/// (likely uncached) full vector. Fitted to GloVe 400k (400,000 rows, 50-d padded to 64, one
/// core): about 3.5 ns a row estimated, 130 ns a row refined with 4-bit codes, 290 ns an exact
/// distance.
pub fn work(stats: &IvfStats, padded: usize, dim: usize, bits: u32) -> u64 {
    stats.estimated * (padded as u64 / 32 + 8)
        + stats.refined * (padded as u64 * u64::from(bits) / 16 + 300)
        + stats.reranked * (dim as u64 / 8 + 800)
}

/// Chooses the default `nprobe` and `rerank` of a built index. `vectors` are the rows in the
/// build's order (sorted by partition), normalised for cosine; they give the sample's true
/// neighbours (one pass over them, however many rows). `data` is the index as written (its
/// `vectors` are ignored: with `codes_only` the sample is searched as a codes-only index is,
/// ranked by extended-bit estimates, and where no setting reaches [`TARGET_RECALL`] the
/// cheapest one within 0.01 of the best recall seen is chosen). Reports its two phases.
#[allow(clippy::too_many_arguments)]
pub fn calibrate(
    kernels: &Kernels,
    metric: Metric,
    index: &IvfIndex,
    data: IvfData<'_>,
    vectors: &[f32],
    seed: u64,
    codes_only: bool,
    progress: &dyn Progress,
) -> IvfQuery {
    let dim = data.dim;
    let n = vectors.len() / dim.max(1);
    let nlist = index.nlist;
    let fallback = crate::ivf::default_query(nlist);
    if n <= K + 1 || nlist <= 1 {
        return IvfQuery { nprobe: nlist.max(1), ..fallback };
    }
    // Distinct sample rows (partial Fisher-Yates over a seeded generator), ascending.
    let m = SAMPLE.min(n);
    let mut rng = Rng::new(seed ^ 0xca11_b7a7e);
    let mut rows: Vec<u32> = (0..n as u32).collect();
    for i in 0..m {
        let j = i + rng.below(n - i);
        rows.swap(i, j);
    }
    rows.truncate(m);
    shoal_format::sort_u32(&mut rows);

    // Queries: the first half are sampled rows (themselves excluded from their answers); the
    // second half are midpoints of two sampled rows, which lie between the data the way many
    // real queries do (rare words, questions against definitions) and need wider probing.
    let half = m / 2;
    let mut queries = Vec::with_capacity(m * dim);
    let mut exclude = Vec::with_capacity(m);
    for (i, &r) in rows.iter().enumerate() {
        let a = &vectors[r as usize * dim..(r as usize + 1) * dim];
        if i < half || m < 2 {
            queries.extend_from_slice(a);
            exclude.push(r as u64);
        } else {
            let o = rows[(i + half) % m] as usize;
            let b = &vectors[o * dim..(o + 1) * dim];
            let at = queries.len();
            queries.extend(a.iter().zip(b).map(|(x, y)| 0.5 * x + 0.5 * y));
            if metric.normalizes() {
                crate::normalize(kernels, &mut queries[at..]);
            }
            exclude.push(u64::MAX);
        }
    }
    progress.phase("calibrating: exact neighbours", 0);
    let truth = exact_neighbours(kernels, metric, &queries, &exclude, vectors, dim);
    progress.phase("calibrating: query settings", 0);
    let data = IvfData { vectors: (!codes_only).then_some(vectors), ..data };
    let (padded, bits) = (index.padded, data.bits);
    // Evaluates one setting: (recall, total work), one task per query (integer sums: the same
    // in any order).
    let evaluate = |params: IvfQuery| -> (f64, u64) {
        let per_query = crate::par::map(truth.len(), |qi| {
            let (query, skip, t) = (&queries[qi * dim..(qi + 1) * dim], exclude[qi], &truth[qi]);
            let search = IvfSearch { kernels: *kernels, metric, query, params };
            let mut topk = TopK::new(K + 1);
            let mut scratch = IvfScratch::default();
            let stats = index.search(&search, &data, None, 0, &mut scratch, &mut topk);
            let work = work(&stats, padded, dim, bits);
            let mut sorted = Vec::with_capacity(K + 1);
            topk.drain_sorted(&mut sorted);
            let hits = sorted.iter().filter(|c| c.id != skip).take(K).filter(|c| t.contains(&c.id)).count();
            (hits, work)
        });
        let hits: usize = per_query.iter().map(|q| q.0).sum();
        let total: u64 = per_query.iter().map(|q| q.1).sum();
        (hits as f64 / (K * truth.len()) as f64, total)
    };

    // Two ladders of settings, each from cheapest to most thorough: adaptive probing (a ratio
    // under a cap of a quarter of the partitions) where the metric allows it, and fixed nprobe.
    let setting =
        |nprobe: usize, probe_ratio: f32| IvfQuery { nprobe, rerank: 0, epsilon: EPSILON0, probe_ratio, passing: 1.0 };
    let mut ladders: Vec<Vec<IvfQuery>> = Vec::new();
    if metric != Metric::Dot {
        let cap = (nlist / 4).max(MIN_PROBES).min(nlist);
        ladders.push(PROBE_RATIOS.iter().map(|&r| setting(cap, r)).collect());
    }
    ladders.push(nprobe_steps(nlist).into_iter().map(|p| setting(p, 0.0)).collect());

    // Per ladder and depth: the first setting reaching the target (searching upward from the
    // deeper depth's answer, since a shallower re-rank never needs less probing).
    let mut best_recall: (f64, IvfQuery) = (-1.0, fallback);
    let climb = |target: f64, best_recall: &mut (f64, IvfQuery)| -> Option<(u64, IvfQuery)> {
        let mut best: Option<(u64, IvfQuery)> = None;
        for ladder in &ladders {
            let mut from = 0;
            for &rerank in RERANK_STEPS.iter().rev() {
                let mut found = None;
                for (si, q) in ladder.iter().enumerate().skip(from) {
                    let q = IvfQuery { rerank, ..*q };
                    let (recall, cost) = evaluate(q);
                    if recall > best_recall.0 {
                        *best_recall = (recall, q);
                    }
                    if recall >= target {
                        found = Some((cost, q, si));
                        break;
                    }
                }
                let Some((cost, q, si)) = found else { break };
                from = si;
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, q));
                }
            }
            // Adaptive probing that reaches the target wins over a fixed nprobe even when the
            // sample (indexed rows) finds the latter cheaper: queries unlike the data need the
            // extra partitions only adaptive probing gives them.
            if best.is_some() {
                break;
            }
        }
        best
    };
    // Codes only, estimates alone may cap the recall below the target: then a second pass aims
    // just under the best the sample reached (one call site keeps one copy of the climb).
    let mut best = None;
    for pass in 0..2 {
        let target = if pass == 0 { TARGET_RECALL } else { best_recall.0 - 0.01 };
        best = climb(target, &mut best_recall);
        if best.is_some() || !codes_only {
            break;
        }
    }
    // Held-out queries lie farther from their partitions' centroids than indexed rows, so
    // their estimates are looser: double the depth (re-ranking stops at the error bound, so a
    // deeper cap costs little where it is not needed). A fixed nprobe cannot widen for such
    // queries by itself as adaptive probing does: double it too.
    let q = best.map_or(best_recall.1, |(_, q)| q);
    let nprobe = if q.probe_ratio > 0.0 { q.nprobe } else { (q.nprobe * 2).min(nlist) };
    IvfQuery { nprobe, rerank: (q.rerank * 2).min(RERANK_STEPS[RERANK_STEPS.len() - 1]), ..q }
}

/// Rows per task of [`exact_neighbours`] (4 MiB of 128-d vectors: every query scans it from
/// cache).
const TRUTH_CHUNK: usize = 8192;

/// The `K` nearest rows of every query (row `exclude[q]` left out), in one pass over
/// `vectors`: each task ranks its chunk of rows for every query, and the chunks' candidates
/// merge by (key, row) — a total order, so the answer is the one a scan per query gives.
fn exact_neighbours(
    kernels: &Kernels,
    metric: Metric,
    queries: &[f32],
    exclude: &[u64],
    vectors: &[f32],
    dim: usize,
) -> Vec<[u64; K]> {
    let (m, n) = (exclude.len(), vectors.len() / dim);
    // Per chunk, every query's best `K + 1`, query after query: the exact scan of searches.
    let per_chunk: Vec<Vec<Candidate>> = crate::par::map(n.div_ceil(TRUTH_CHUNK), |c| {
        let rows = c * TRUTH_CHUNK..((c + 1) * TRUTH_CHUNK).min(n);
        let mut scratch = FlatScratch::default();
        let mut tops: Vec<TopK> = (0..m).map(|_| TopK::new(K + 1)).collect();
        for (qi, top) in tops.iter_mut().enumerate() {
            let scan = FlatScan { kernels: *kernels, metric, query: &queries[qi * dim..(qi + 1) * dim] };
            let skip = |r: usize| (rows.start + r) as u64 == exclude[qi];
            scan.scan(&vectors[rows.start * dim..rows.end * dim], rows.start as u64, Some(&skip), &mut scratch, top);
        }
        // `K + 1` slots per query, padded with a row that does not exist.
        let mut out = Vec::with_capacity(m * (K + 1));
        let mut sorted = Vec::with_capacity(K + 1);
        for mut top in tops {
            top.drain_sorted(&mut sorted);
            sorted.resize(K + 1, NONE);
            out.extend_from_slice(&sorted);
        }
        out
    });
    let mut sorted = Vec::with_capacity(K + 1);
    (0..m)
        .map(|qi| {
            let mut top = TopK::new(K + 1);
            for chunk in &per_chunk {
                for &c in &chunk[qi * (K + 1)..(qi + 1) * (K + 1)] {
                    if c.id != NONE.id {
                        top.push(c);
                    }
                }
            }
            top.drain_sorted(&mut sorted);
            let mut t = [u64::MAX; K];
            for (slot, c) in t.iter_mut().zip(&sorted) {
                *slot = c.id;
            }
            t
        })
        .collect()
}

/// The padding of a chunk's short list in [`exact_neighbours`].
const NONE: Candidate = Candidate { key: f32::INFINITY, id: u64::MAX };

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_ascend_and_end_at_nlist() {
        for nlist in [1usize, 2, 3, 10, 100, 690, 2000] {
            let s = nprobe_steps(nlist);
            assert_eq!(*s.last().unwrap(), nlist);
            assert!(s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
            assert!(s.len() <= 40, "{nlist}: {} steps", s.len());
        }
    }
}
