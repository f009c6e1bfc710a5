//! Sparse search skips posting lists that cannot reach the `k` best (MaxScore, `docs/format.md`
//! "Pruning that cannot change results"): its top `k` equals an exhaustive scorer's bit for bit
//! — scores, and ids in internal-id order among ties — on data made for pruning to happen
//! (skewed index frequencies and magnitudes, mixed signs, duplicate rows that tie, filters,
//! deletes, several segments), and a score that `f32` rounding lifts above the threshold is
//! never skipped.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, Metric, PointId, Schema, SearchRequest, SparseSpec, SparseVector};
use shoal_testkit::Rng;
use shoal_testkit::oracle::{bm25_idf, sparse_dot};

/// Distinct indices; index `i` is held by about `1 / (1 + i / 4)` of the points.
const INDICES: u64 = 120;

fn collection(idf: bool) -> Collection {
    let schema = Schema::from_json(r#"{"tag": "keyword"}"#).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: 1, metric: Metric::Dot }, schema).unwrap();
    col.set_sparse_vectors(vec![SparseSpec { name: "s".into(), idf }]).unwrap();
    col
}

/// A point's sparse vector: skewed index frequencies, each index with its own magnitude
/// (subnormal, 10^-3 .. 10^2, near `f32::MAX` / 8) and sign, values from a few levels (so rows
/// tie), and in `quiet` stretches of points every value 2^-12 of that (so whole blocks of a
/// list bound far below the others: block-max skips them).
fn random_point(rng: &mut Rng, quiet: bool) -> BTreeMap<u32, f32> {
    let mut m = BTreeMap::new();
    for i in 0..INDICES {
        if rng.below(4 + i) < 4 {
            let magnitude = [1e-3f32, 0.1, 1.0, 7.0, 100.0, 4e37, 1e-39][(i * 5 % 7) as usize];
            let sign = if i % 11 == 3 { -1.0 } else { 1.0 };
            let level = [1.0f32, 0.5, 2.0, 0.25][rng.below(4) as usize] / if quiet { 4096.0 } else { 1.0 };
            m.insert(i as u32, sign * magnitude * level);
        }
    }
    m
}

/// A query of 1 to 8 indices, or one in six of every index (every list walked at once).
fn random_query(rng: &mut Rng) -> BTreeMap<u32, f32> {
    let mut q = BTreeMap::new();
    let every = rng.below(6) == 0;
    for j in 0..if every { INDICES } else { 1 + rng.below(8) } {
        let w = match rng.below(4) {
            0 => -rng.unit_f32(),
            1 => 1.0,
            _ => rng.unit_f32() * 3.0,
        };
        q.insert(if every { j } else { rng.below(INDICES) } as u32, w);
    }
    q
}

fn sparse_json(m: &BTreeMap<u32, f32>) -> Value {
    json!({"indices": m.keys().collect::<Vec<_>>(), "values": m.values().collect::<Vec<_>>()})
}

/// What the search must return: the live points (in insertion order, which is internal-id
/// order here: each id inserted once) passing `tag`, by naive score descending then insertion
/// order, cut to `k`.
fn exhaustive(
    points: &[(PointId, BTreeMap<u32, f32>, String, bool)],
    q: &BTreeMap<u32, f32>,
    tag: Option<&str>,
    k: usize,
) -> Vec<(PointId, u32)> {
    let mut scored: Vec<(usize, f32)> = points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.3 && tag.is_none_or(|t| t == p.2))
        .filter_map(|(i, p)| Some((i, sparse_dot(q, &p.1)?)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.iter().take(k).map(|&(i, s)| (points[i].0, s.to_bits())).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Three segments and unsealed rows, a fifth of the points deleted, queries with `k` 1, 3
    /// and 10, with and without a filter and the idf modifier: the results equal the exhaustive
    /// scorer's, and most queries skip some rows.
    #[test]
    fn pruned_top_k_equals_the_exhaustive_one(seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        for idf_modifier in [false, true] {
            let mut col = collection(idf_modifier);
            let mut points: Vec<(PointId, BTreeMap<u32, f32>, String, bool)> = Vec::new();
            for part in 0..4u64 {
                let ids: Vec<PointId> = (part * 700..part * 700 + 700).map(PointId::Num).collect();
                let mut column = Vec::new();
                let mut docs = Vec::new();
                for &id in &ids {
                    // Every tenth point repeats the one before: equal scores, ordered by id.
                    let quiet = matches!(id, PointId::Num(n) if n / 150 % 2 == 1);
                    let x = match points.last() {
                        Some(last) if rng.below(10) == 0 => last.1.clone(),
                        _ => random_point(&mut rng, quiet),
                    };
                    let tag = ["a", "b"][rng.below(2) as usize].to_string();
                    let keys: Vec<u32> = x.keys().copied().collect();
                    let values: Vec<f32> = x.values().copied().collect();
                    column.push(Some(SparseVector::new(&keys, &values).unwrap()));
                    docs.push(json!({"tag": tag}));
                    points.push((id, x, tag, true));
                }
                col.upsert_sparse(&ids, &vec![0.0; ids.len()], &docs, &[column]).unwrap();
                if part < 3 {
                    col.seal();
                }
            }
            let deleted: Vec<PointId> = (0..500).map(|_| PointId::Num(rng.below(2800))).collect();
            col.delete(&deleted).unwrap();
            for p in points.iter_mut() {
                p.3 &= !deleted.contains(&p.0);
            }
            // The idf statistics count every stored row, deleted ones too (no seal since).
            let n = points.len() as u64;
            let mut pruned = 0;
            let queries = 24;
            for _ in 0..queries {
                let q = random_query(&mut rng);
                let mut w = q.clone();
                if idf_modifier {
                    for (i, v) in w.iter_mut() {
                        let df = points.iter().filter(|p| p.1.contains_key(i)).count() as u64;
                        *v *= bm25_idf(n, df);
                    }
                }
                // What an exhaustive scorer reads: the sealed rows (live or not) holding a query
                // index, and every unsealed row holding the vector (the last 700).
                let sealed = &points[..2100];
                let holding = sealed.iter().filter(|p| p.1.keys().any(|i| q.contains_key(i))).count() as u64 + 700;
                for k in [1usize, 3, 10] {
                    for tag in [None, Some("a")] {
                        let mut req = json!({"sparse": sparse_json(&q), "using": "s", "limit": k});
                        if let Some(tag) = tag {
                            req["filter"] = json!({"must": [{"key": "tag", "match": {"value": tag}}]});
                        }
                        let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
                        let got: Vec<(PointId, u32)> = res.points.iter().map(|p| (p.id, p.score.to_bits())).collect();
                        prop_assert_eq!(got, exhaustive(&points, &w, tag, k), "k {} tag {:?} idf {}", k, tag, idf_modifier);
                        // Rows summed: the live sealed rows passing the filter that hold a query
                        // index, unless skipped by their bound, and the unsealed ones.
                        let eligible = sealed
                            .iter()
                            .filter(|p| p.3 && tag.is_none_or(|t| t == p.2) && p.1.keys().any(|i| q.contains_key(i)))
                            .count() as u64
                            + 700;
                        prop_assert!(res.stats.scanned <= eligible);
                        pruned += u32::from(res.stats.scanned < eligible);
                        // `params.exact` scores every row the lists hold: the same results.
                        req["params"] = json!({"exact": true});
                        let all = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
                        prop_assert_eq!(&all.points, &res.points);
                        prop_assert_eq!(all.stats.scanned, holding);
                    }
                }
            }
            // Pruning happened: otherwise this test would not test it.
            prop_assert!(pruned * 3 >= queries * 6, "only {} of {} searches skipped rows", pruned, queries * 6);
        }
    }
}

/// Block-max passes whole blocks of a list that cannot reach the threshold, and not one row
/// more: the first row of the next block, the only one that can, is the result.
#[test]
fn block_max_skips_blocks_but_not_the_row_after_them() {
    for loud in [128u64, 191, 150] {
        let mut col = collection(false);
        // One list over rows 0..192, blocks of 64 postings: row 0 (50) sets the threshold of
        // `k` 1, rows 64..=127 (block 1) hold 1, and row `loud` in block 2 holds 60.
        let ids: Vec<PointId> = (0..192).map(PointId::Num).collect();
        let column: Vec<Option<SparseVector>> = (0..192u64)
            .map(|r| {
                let value = match r {
                    0 => 50.0,
                    r if r == loud => 60.0,
                    _ => 1.0,
                };
                Some(SparseVector::new(&[7], &[value]).unwrap())
            })
            .collect();
        col.upsert_sparse(&ids, &[0.0; 192], &vec![json!({}); 192], &[column]).unwrap();
        col.seal();
        let req = json!({"sparse": {"indices": [7], "values": [1.0]}, "using": "s", "limit": 1});
        let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
        assert_eq!(res.points.len(), 1);
        assert_eq!((res.points[0].id, res.points[0].score), (PointId::Num(loud), 60.0), "loud row {loud}");
        assert_eq!(res.stats.scanned, 2, "rows summed: row 0 and row {loud}");
    }
}

/// A row whose `f32` score rounds above the threshold is not skipped, though the lists that hold
/// it bound its score below the threshold in real numbers: the margin over rounding keeps it.
#[test]
fn a_score_rounded_above_the_threshold_is_not_skipped() {
    let mut col = collection(false);
    let ulp = f32::EPSILON;
    // Segment 1 (walked first): a row holding index 0 with 1 + 7 ulp, the threshold of `k` 1.
    // Segment 2: a row holding index 1 with 1 and indices 2..=9 with 0.75 ulp each: their bounds
    // sum to 1 + 6 ulp, but the `f32` sum rounds up at every step, to 1 + 8 ulp.
    let first = SparseVector::new(&[0], &[1.0 + 7.0 * ulp]).unwrap();
    col.upsert_sparse(&[PointId::Num(10)], &[0.0], &[json!({})], &[vec![Some(first)]]).unwrap();
    col.seal();
    let values: Vec<f32> = (1..=9).map(|i| if i == 1 { 1.0 } else { 0.75 * ulp }).collect();
    let second = SparseVector::new(&(1..=9).collect::<Vec<u32>>(), &values).unwrap();
    col.upsert_sparse(&[PointId::Num(11)], &[0.0], &[json!({})], &[vec![Some(second)]]).unwrap();
    col.seal();
    let (indices, weights) = ((0..=9).collect::<Vec<u32>>(), vec![1.0f32; 10]);
    let req = json!({"sparse": {"indices": indices, "values": weights}, "using": "s", "limit": 1});
    let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
    assert_eq!(res.points.len(), 1);
    assert_eq!((res.points[0].id, res.points[0].score), (PointId::Num(11), 1.0 + 8.0 * ulp));
}

/// Sums that overflow on the way (the reference's left-to-right `f32` sum reaches infinity though
/// the products cancel) and NaN scores neither hide a row nor become a threshold.
#[test]
fn overflow_on_the_way_and_nan_scores_are_not_pruned() {
    let ask = |col: &Collection, indices: &[u32], values: &[f32]| {
        let req = json!({"sparse": {"indices": indices, "values": values}, "using": "s", "limit": 1});
        let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
        res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()
    };
    let put = |col: &mut Collection, id: u64, indices: &[u32], values: &[f32]| {
        let v = SparseVector::new(indices, values).unwrap();
        col.upsert_sparse(&[PointId::Num(id)], &[0.0], &[json!({})], &[vec![Some(v)]]).unwrap();
    };
    // 3e38 + 3e38 = inf, and inf stays: point 20 scores inf though its products cancel.
    let mut col = collection(false);
    put(&mut col, 10, &[4], &[1e36]);
    col.seal();
    put(&mut col, 20, &[0, 1, 2, 3], &[3e38, 3e38, -3e38, -3e38]);
    put(&mut col, 21, &[2], &[3e38]);
    put(&mut col, 22, &[3], &[3e38]);
    col.seal();
    assert_eq!(ask(&col, &[0, 1, 2, 3, 4], &[1.0; 5]), vec![(PointId::Num(20), f32::INFINITY.to_bits())]);
    // Row 0 scores NaN (inf - inf): the best real score still wins.
    let mut col = collection(false);
    put(&mut col, 30, &[0, 1, 2], &[3e38, 3e38, -3e38]);
    put(&mut col, 31, &[3], &[1.0]);
    col.seal();
    let exact = {
        let req = json!({"sparse": {"indices": [0, 1, 2, 3], "values": [1.0, 1.0, 2.0, 1.0]}, "using": "s", "limit": 1, "params": {"exact": true}});
        let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
        res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()
    };
    assert_eq!(ask(&col, &[0, 1, 2, 3], &[1.0, 1.0, 2.0, 1.0]), exact);
}
