//! Fusion of rankings into one (`docs/format.md`, "Fusion"): reciprocal rank fusion with
//! Qdrant's `k` and weights, distribution-based score fusion (DBSF) and Shoal's weighted fusion
//! of a vector and a text ranking. One routine serves a hybrid request (`vector` + `text`) and
//! a request that fuses its `prefetch` lists.

use alloc::vec::Vec;

use hashbrown::hash_map::Entry;
use shoal_format::PointId;
use shoal_index::order::f32_key;

use crate::mutable::IdMap;

/// Constant `k` of reciprocal rank fusion as Cormack et al. (2009) write it: a result at rank
/// `r` (from 1) of a ranking adds `1 / (RRF_K + r)` to its fused score. A request's `rrf_k`
/// is Qdrant's `k` (`1 / (p + k)` at 0-based position `p`), whose default here is
/// [`DEFAULT_RRF_K`] = `RRF_K + 1`: the same terms.
pub const RRF_K: f32 = 60.0;

/// The default `rrf_k` of a request (Qdrant's own default is 2; `shoal serve` passes that for
/// Qdrant's requests).
pub const DEFAULT_RRF_K: u32 = 61;

/// Each ranking fused by a hybrid request holds at least this many results (more when
/// `offset + limit` is larger).
pub const FUSION_DEPTH: usize = 100;

/// How rankings are fused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fusion<'w> {
    /// Reciprocal rank fusion: a ranking of weight `w` adds `1 / ((p + 1) / w + k - 1)` at
    /// 0-based position `p`, nothing when `w <= 0`; `weights` default to 1.
    Rrf { k: u32, weights: Option<&'w [f32]> },
    /// Distribution-based score fusion: each ranking's scores normalised by its mean ± 3
    /// sample standard deviations (one score: 0.5), then summed.
    Dbsf,
    /// Weighted score fusion of two rankings: each one's scores scaled to 0..=1 by its best and
    /// worst (the best 1; all 1 when they are equal), the first weighted by `alpha`, the second
    /// by `1 - alpha`.
    Weighted { alpha: f32 },
}

/// One ranking to fuse: `(id, score)` best first; `lower_is_better` for squared L2 distances.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ranking<'a> {
    pub(crate) points: &'a [(PointId, f32)],
    pub(crate) lower_is_better: bool,
}

/// A score made finite, as every fusion reads it: NaN as the worst, infinities as `±f32::MAX`
/// (no overflow or NaN, whose sign differs between CPUs, reaches the order).
fn finite(s: f32, lower_is_better: bool) -> f32 {
    if s.is_nan() { if lower_is_better { f32::MAX } else { -f32::MAX } } else { s.clamp(-f32::MAX, f32::MAX) }
}

/// The term each point of `ranking` adds under `fusion`, in list order; `list` is the
/// ranking's place among the fused ones.
fn terms(fusion: &Fusion<'_>, list: usize, ranking: &Ranking<'_>, out: &mut Vec<f32>) {
    out.clear();
    let points = ranking.points;
    match *fusion {
        Fusion::Rrf { k, weights } => {
            let w = weights.map_or(1.0, |w| w[list]);
            out.extend(
                (0..points.len()).map(|p| if w <= 0.0 { 0.0 } else { 1.0 / ((p + 1) as f32 / w + k as f32 - 1.0) }),
            );
        }
        Fusion::Weighted { alpha } => {
            let (lower, weight) = if list == 0 { (ranking.lower_is_better, alpha) } else { (false, 1.0 - alpha) };
            // Scaled in f64 (the bounds' difference can overflow f32).
            let s = |&(_, s): &(PointId, f32)| f64::from(finite(s, lower));
            let lo = points.iter().map(s).fold(f64::INFINITY, f64::min);
            let hi = points.iter().map(s).fold(f64::NEG_INFINITY, f64::max);
            out.extend(points.iter().map(|p| match s(p) {
                _ if hi <= lo => weight,
                x if lower => weight * ((hi - x) / (hi - lo)) as f32,
                x => weight * ((x - lo) / (hi - lo)) as f32,
            }));
        }
        Fusion::Dbsf => {
            // Larger is better: squared distances enter as negated distances (Qdrant's Euclid
            // scores, whose order its fix of DBSF for distances keeps).
            let lower = ranking.lower_is_better;
            out.extend(
                points
                    .iter()
                    .map(|&(_, s)| if lower { -libm::sqrtf(finite(s, true).max(0.0)) } else { finite(s, false) }),
            );
            if out.len() < 2 {
                out.iter_mut().for_each(|s| *s = 0.5);
                return;
            }
            // Welford's mean and sample variance, in f32 in this order (Qdrant's).
            let (mut mean, mut agg) = (0.0f32, 0.0f32);
            for (j, &s) in out.iter().enumerate() {
                let d = s - mean;
                mean += d / (j + 1) as f32;
                agg += d * (s - mean);
            }
            let sigma = libm::sqrtf(agg / (out.len() - 1) as f32);
            let (lo, hi) = (mean - 3.0 * sigma, mean + 3.0 * sigma);
            for s in out.iter_mut() {
                let x = if lo == hi { 0.5 } else { (*s - lo) / (hi - lo) };
                *s = if x.is_nan() { 0.0 } else { x };
            }
        }
    }
}

/// Fuses `rankings` under `fusion` (`Rrf`'s weights, when given, one per ranking; `Weighted`
/// takes two rankings): a point's fused score is its first term, then `+=` each later one,
/// rankings in order. Best first (fused score descending), ties by the best 0-based position
/// the point had in any ranking, then by ascending id. Each ranking holds at most
/// [`MAX_LIMIT`](crate::MAX_LIMIT) points, once each.
pub(crate) fn fuse(fusion: &Fusion<'_>, rankings: &[Ranking<'_>]) -> Vec<(PointId, f32)> {
    // (id, score, best position), in order of first appearance; `at` finds an id's entry.
    let mut fused: Vec<(PointId, f32, u32)> = Vec::new();
    let mut at = IdMap::default();
    let mut t = Vec::new();
    for (list, ranking) in rankings.iter().enumerate() {
        terms(fusion, list, ranking, &mut t);
        // Every term finite (NaN as 0, infinities as ±f32::MAX: a weight far above `k` or a
        // tiny spread can overflow), and so is every sum below.
        t.iter_mut().for_each(|x| *x = if x.is_nan() { 0.0 } else { x.clamp(-f32::MAX, f32::MAX) });
        for (p, (&(id, _), &term)) in ranking.points.iter().zip(&t).enumerate() {
            let p = p as u32;
            match at.entry(id) {
                Entry::Occupied(e) => {
                    let f = &mut fused[*e.get() as usize];
                    f.1 += term;
                    f.2 = f.2.min(p);
                }
                Entry::Vacant(e) => {
                    e.insert(fused.len() as u32);
                    fused.push((id, term, p));
                }
            }
        }
    }
    // The order through two integer sorts (the package's one sort routine, not a comparator's
    // own): first the ties' order — best position, then the id's place among the ids sorted —
    // then the fused score (descending) above each entry's place in that order.
    let mut ids: Vec<PointId> = fused.iter().map(|f| f.0).collect();
    crate::ids::sort_ids(&mut ids);
    let mut ties: Vec<u64> =
        fused.iter().map(|&(id, _, p)| u64::from(p) << 32 | ids.binary_search(&id).unwrap_or(0) as u64).collect();
    shoal_format::sort_u64(&mut ties);
    // `ids` now gives each entry by its place.
    for f in &mut fused {
        f.1 = f.1.clamp(-f32::MAX, f32::MAX);
    }
    let entry = |tie: u64| &fused[at[&ids[tie as u32 as usize]] as usize];
    let mut keys: Vec<u64> =
        ties.iter().enumerate().map(|(n, &tie)| u64::from(!f32_key(entry(tie).1)) << 32 | n as u64).collect();
    shoal_format::sort_u64(&mut keys);
    keys.iter()
        .map(|&k| {
            let e = entry(ties[k as u32 as usize]);
            (e.0, e.1)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use shoal_testkit::oracle::{Fused, fused};

    fn n(id: u64) -> PointId {
        PointId::Num(id)
    }

    fn ranked(ids: &[u64]) -> Vec<(PointId, f32)> {
        ids.iter().map(|&id| (n(id), 0.0)).collect()
    }

    fn lists(points: &[Vec<(PointId, f32)>]) -> Vec<Ranking<'_>> {
        points.iter().map(|p| Ranking { points: p, lower_is_better: false }).collect()
    }

    #[test]
    fn weighted_fusion_scales_each_ranking() {
        // Vector: squared distances (lower is better) 1, 2, 5; text: BM25 scores 9, 3.
        let v = [(n(1), 1.0), (n(2), 2.0), (n(3), 5.0)];
        let t = [(n(3), 9.0), (n(4), 3.0)];
        let two = |v: &[(PointId, f32)], t: &[(PointId, f32)], alpha: f32| {
            let r = [Ranking { points: v, lower_is_better: true }, Ranking { points: t, lower_is_better: false }];
            fuse(&Fusion::Weighted { alpha }, &r)
        };
        let fused = two(&v, &t, 0.75);
        let score = |id: u64| fused.iter().find(|f: &&(PointId, f32)| f.0 == id).unwrap().1;
        assert_eq!(score(1), 0.75);
        assert_eq!(score(2), 0.75 * (3.0 / 4.0));
        assert_eq!(score(3), 0.75 * 0.0 + 0.25);
        assert_eq!(score(4), 0.0);
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
        // Overflowing or NaN scores stay ordered: -inf and NaN as the worst, scaled in f64.
        let r = [Ranking { points: &[(n(1), -3e38), (n(2), f32::NAN), (n(3), 3e38)], lower_is_better: false }];
        let fused = fuse(&Fusion::Weighted { alpha: 1.0 }, &r);
        let (lo, hi) = (f64::from(-f32::MAX), f64::from(3e38f32));
        let one = ((f64::from(-3e38f32) - lo) / (hi - lo)) as f32;
        assert!(one > 0.0 && one < 0.1);
        assert_eq!(fused, [(n(3), 1.0), (n(1), one), (n(2), 0.0)]);
        // alpha 0: the text ranking alone decides; equal scores all count as the best.
        let fused = two(&v, &[(n(7), 2.0), (n(8), 2.0)], 0.0);
        assert_eq!(fused[..2], [(n(7), 1.0), (n(8), 1.0)]);
    }

    #[test]
    fn rrf_at_the_default_k_sums_reciprocal_ranks() {
        let (a, b) = (ranked(&[1, 2, 3]), ranked(&[3, 4, 1]));
        let fused = fuse(&Fusion::Rrf { k: DEFAULT_RRF_K, weights: None }, &lists(&[a, b]));
        let score = |id| fused.iter().find(|f| f.0 == id).unwrap().1;
        assert_eq!(score(1), 1.0 / 61.0 + 1.0 / 63.0);
        assert_eq!(score(3), 1.0 / 63.0 + 1.0 / 61.0);
        assert_eq!(score(2), 1.0 / 62.0);
        // 1 and 3 tie on the sum (the same two terms) and on the best position: the lower id wins.
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 3, 2, 4]);
        assert!(fuse(&Fusion::Rrf { k: 2, weights: None }, &[]).is_empty());
    }

    /// Qdrant's own test values (`reciprocal_rank_fusion.rs`, k = 2).
    #[test]
    fn rrf_gives_qdrants_values() {
        let l = [ranked(&[2, 1]), ranked(&[1, 2, 3]), ranked(&[5, 3, 1])];
        let fused = fuse(&Fusion::Rrf { k: 2, weights: None }, &lists(&l));
        assert_eq!(fused, [(n(1), 1.0833334), (n(2), 0.8333334), (n(3), 0.5833334), (n(5), 0.5)]);
        // One point: 1 / (0 + 2).
        assert_eq!(fuse(&Fusion::Rrf { k: 2, weights: None }, &lists(&[ranked(&[1])])), [(n(1), 0.5)]);
        // Weights 3:1 favour the first list; a zero weight adds nothing.
        let l = [ranked(&[1, 2]), ranked(&[2, 1])];
        let fused = fuse(&Fusion::Rrf { k: 2, weights: Some(&[3.0, 1.0]) }, &lists(&l));
        assert_eq!(fused[0].0, n(2));
        assert!(fused[0].1 > fused[1].1);
        let l = [ranked(&[1]), ranked(&[2])];
        let fused = fuse(&Fusion::Rrf { k: 2, weights: Some(&[1.0, 0.0]) }, &lists(&l));
        assert_eq!(fused, [(n(1), 0.5), (n(2), 0.0)]);
    }

    #[test]
    fn dbsf_normalises_by_three_sigma() {
        // Scores 1, 2, 3: mean 2, sample variance 1, so 0..=1 spans -1..=5.
        let a = vec![(n(1), 3.0), (n(2), 2.0), (n(3), 1.0)];
        let fused = fuse(&Fusion::Dbsf, &lists(&[a]));
        assert_eq!(fused, [(n(1), 4.0 / 6.0), (n(2), 0.5), (n(3), 2.0 / 6.0)]);
        // One score: 0.5; equal scores: 0.5 each; distances enter negated.
        let one = vec![(n(9), 7.0)];
        let same = vec![(n(9), 4.0), (n(8), 4.0)];
        let fused = fuse(&Fusion::Dbsf, &lists(&[one, same]));
        assert_eq!(fused, [(n(9), 1.0), (n(8), 0.5)]);
        let d = [(n(1), 1.0), (n(2), 4.0), (n(3), 9.0)]; // squared: distances 1, 2, 3
        let fused = fuse(&Fusion::Dbsf, &[Ranking { points: &d, lower_is_better: true }]);
        assert_eq!(fused, [(n(1), 4.0 / 6.0), (n(2), 0.5), (n(3), 2.0 / 6.0)]);
        // Overflow to infinity normalises to NaN, which counts as 0.
        let big = vec![(n(1), f32::MAX), (n(2), -f32::MAX)];
        assert_eq!(fuse(&Fusion::Dbsf, &lists(&[big])), [(n(1), 0.0), (n(2), 0.0)]);
        // A weight far above k: the term overflows, and counts as f32::MAX.
        let fused = fuse(&Fusion::Rrf { k: 1, weights: Some(&[2e7]) }, &lists(&[ranked(&[4])]));
        assert_eq!(fused, [(n(4), f32::MAX)]);
    }

    fn score() -> impl proptest::strategy::Strategy<Value = f32> {
        use proptest::prelude::*;
        prop_oneof![
            8 => -100.0f32..100.0,
            1 => prop::num::f32::ANY,
            1 => Just(f32::MAX),
            1 => Just(0.0f32),
        ]
    }

    proptest::proptest! {
        /// Fused scores (bits) and order equal the literal formulas, for any rankings: ids
        /// shared between them or not, integers and UUIDs, NaN, infinities and overflow.
        #[test]
        fn fusion_equals_the_formulas(
            lists in proptest::collection::vec(
                (proptest::collection::btree_map(0u64..40, score(), 0..25), proptest::bool::ANY),
                0..5,
            ),
            k in 1u32..100,
            weights in proptest::collection::vec(-1.0f32..4.0, 5),
            use_weights in proptest::bool::ANY,
            dbsf in proptest::bool::ANY,
        ) {
            // Ids 20.. as UUIDs; each list in a shuffled order (by its score's bits).
            let id = |i: u64| if i < 20 { PointId::Num(i) } else { PointId::Uuid([i as u8; 16]) };
            let points: Vec<Vec<(PointId, f32)>> = lists
                .iter()
                .map(|(m, _)| {
                    let mut v: Vec<(PointId, f32)> = m.iter().map(|(&i, &s)| (id(i), s)).collect();
                    v.sort_by_key(|p| p.1.to_bits().rotate_left(7));
                    v
                })
                .collect();
            let rankings: Vec<Ranking<'_>> =
                points.iter().zip(&lists).map(|(p, (_, lower))| Ranking { points: p, lower_is_better: *lower }).collect();
            let w = &weights[..rankings.len()];
            let fusion = if dbsf { Fusion::Dbsf } else { Fusion::Rrf { k, weights: use_weights.then_some(w) } };
            let got = fuse(&fusion, &rankings);
            let literal: Vec<(&[(PointId, f32)], bool)> = rankings.iter().map(|r| (r.points, r.lower_is_better)).collect();
            let want = match fusion {
                Fusion::Dbsf => fused(Fused::Dbsf, &literal),
                _ => fused(Fused::Rrf { k, weights: use_weights.then_some(w) }, &literal),
            };
            let bits = |v: &[(PointId, f32)]| v.iter().map(|&(id, s)| (id, s.to_bits())).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&got), bits(&want));
        }
    }
}
