//! The IVF + RaBitQ index: recall against exact search with default settings, determinism,
//! and its interplay with deletes, upserts and re-sealing.

use shoal_core::{
    Collection, CollectionConfig, DenseSpec, IndexKind, IvfParams, Kernels, Metric, PointId, SearchRequest,
};
use shoal_testkit::clustered_vectors;

fn build(metric: Metric, dim: usize, n: usize, seed: u64) -> (Collection, Vec<f32>) {
    let data = clustered_vectors(seed, n, dim, 64);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
    let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams::default())).unwrap();
    (col, clustered_vectors(seed + 1000, 200, dim, 64))
}

fn ids(col: &Collection, json: &str, q: &[f32]) -> Vec<u64> {
    let mut req = SearchRequest::from_json(json).unwrap();
    req.vector = Some(q.to_vec());
    col.search(&req).unwrap().points.iter().map(|p| p.id.as_num().unwrap()).collect()
}

fn recall(col: &Collection, queries: &[f32], dim: usize, params: &str) -> f64 {
    let mut hit = 0;
    let mut total = 0;
    for q in queries.chunks_exact(dim) {
        let exact = ids(col, r#"{"limit": 10, "params": {"exact": true}}"#, q);
        let approx = ids(col, &format!(r#"{{"limit": 10, "params": {params}}}"#), q);
        hit += approx.iter().filter(|id| exact.contains(id)).count();
        total += exact.len();
    }
    hit as f64 / total as f64
}

#[test]
fn default_settings_reach_recall_095() {
    // (4-bit codes by default up to 128 dimensions, 1-bit above.)
    for (metric, dim) in [(Metric::L2, 64), (Metric::Cosine, 50), (Metric::Dot, 96), (Metric::L2, 160)] {
        let (col, queries) = build(metric, dim, 20_000, dim as u64);
        let r = recall(&col, &queries, dim, "{}");
        eprintln!("{metric:?} {dim}-d: recall@10 {r:.4}");
        assert!(r >= 0.95, "{metric:?}: recall@10 {r} < 0.95 with default settings");
        // Probing every partition with deeper re-ranking never loses recall here.
        let wide = recall(&col, &queries, dim, r#"{"nprobe": 1000000, "rerank": 128}"#);
        assert!(wide >= r - 1e-9, "{metric:?}: wider search lost recall ({wide} < {r})");
    }
}

#[test]
fn builds_are_deterministic_across_kernels() {
    let data = clustered_vectors(7, 3000, 40, 16);
    let ids: Vec<u64> = (0..3000).collect();
    let mut segments = Vec::new();
    for k in Kernels::available() {
        let mut col = Collection::new(CollectionConfig { dim: 40, metric: Metric::Cosine }).unwrap();
        col.set_kernels(k);
        col.insert(&ids, &data).unwrap();
        col.seal_with(IndexKind::IvfRabitq(IvfParams {
            partitions: Some(30),
            seed: 9,
            bits: Some(1),
            codes_only: false,
        }))
        .unwrap();
        segments.push((k.name(), col.to_bytes().unwrap().to_vec()));
    }
    for (name, bytes) in &segments[1..] {
        assert!(bytes == &segments[0].1, "{name} built different bytes than {}", segments[0].0);
    }
    let col = Collection::from_bytes(&segments[0].1).unwrap();
    col.verify().unwrap();
    assert!(matches!(col.index_kind(), IndexKind::IvfRabitq(_)));
}

#[test]
fn deletes_upserts_and_reseal_keep_working() {
    let (mut col, queries) = build(Metric::L2, 32, 5000, 3);
    let q = &queries[..32];
    let first = ids(&col, r#"{"limit": 5}"#, q);
    // Deleting the best hit removes it from IVF results; an upsert lands in the mutable segment.
    assert_eq!(col.delete(&nums(&first[..1])).unwrap(), 1);
    let after = ids(&col, r#"{"limit": 5}"#, q);
    assert!(!after.contains(&first[0]));
    col.insert(&[999_999], q).unwrap();
    assert_eq!(ids(&col, r#"{"limit": 1}"#, q), [999_999]);
    col.seal();
    assert!(matches!(col.index_kind(), IndexKind::IvfRabitq(_)), "re-sealing keeps the index");
    assert!(col.segment(0).unwrap().ivf().is_some());
    assert_eq!(ids(&col, r#"{"limit": 1}"#, q), [999_999]);
    assert_eq!(col.len(), 5000);
    let bytes = col.to_bytes().unwrap().to_vec();
    let again = Collection::from_bytes(&bytes).unwrap();
    again.verify().unwrap();
    assert_eq!(ids(&again, r#"{"limit": 5}"#, q), ids(&col, r#"{"limit": 5}"#, q));
    // Nearly everything deleted: the probes widen until the survivors are found.
    let all: Vec<u64> = (0..5000u64).map(|i| i * 3 + 1).collect();
    col.delete(&nums(&all[5..])).unwrap();
    assert!(col.segment(0).unwrap().ivf().is_some(), "deletes are pending against the IVF segment");
    let left = ids(&col, r#"{"limit": 10}"#, q);
    assert_eq!(left.len(), col.len(), "every live point is found: {left:?}");
    assert!(col.len() >= 5);
    // Back to flat.
    col.seal_with(IndexKind::Flat).unwrap();
    assert!(col.segment(0).unwrap().ivf().is_none());
}

#[test]
fn extra_bits_keep_recall_with_fewer_exact_distances() {
    let (dim, n) = (64, 20_000);
    let data = clustered_vectors(21, n, dim, 64);
    let queries = clustered_vectors(22, 100, dim, 64);
    let row_ids: Vec<u64> = (0..n as u64).collect();
    let mut runs = Vec::new();
    for bits in [1u32, 4, 8] {
        let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
        col.insert(&row_ids, &data).unwrap();
        let opts = format!(r#"{{"index": "ivf-rabitq", "partitions": 140, "seed": 3, "bits": {bits}}}"#);
        col.seal_with(IndexKind::from_json(&opts).unwrap()).unwrap();
        assert_eq!(
            col.index_kind(),
            IndexKind::IvfRabitq(IvfParams { partitions: Some(140), seed: 3, bits: Some(bits), codes_only: false })
        );
        // The bytes open again with the same index.
        let reopened = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
        reopened.verify().unwrap();
        let (mut exact_distances, mut hits) = (0u64, 0usize);
        for q in queries.chunks_exact(dim) {
            let mut req = SearchRequest::from_json(r#"{"limit": 10, "params": {"nprobe": 16, "rerank": 32}}"#).unwrap();
            req.vector = Some(q.to_vec());
            let res = reopened.search(&req).unwrap();
            assert_eq!(res.points, col.search(&req).unwrap().points);
            exact_distances += res.stats.scanned;
            let truth = ids(&col, r#"{"limit": 10, "params": {"exact": true}}"#, q);
            hits += res.points.iter().filter(|p| p.id.as_num().is_some_and(|id| truth.contains(&id))).count();
        }
        runs.push((bits, hits as f64 / 1000.0, exact_distances));
    }
    eprintln!("(bits, recall, exact distances): {runs:?}");
    let (_, recall1, exact1) = runs[0];
    for &(bits, recall, exact) in &runs[1..] {
        assert!(recall >= recall1 - 0.005, "{bits} bits lost recall: {recall} vs {recall1}");
        assert!(exact * 2 < exact1, "{bits} bits computed {exact} exact distances, 1 bit {exact1}");
    }
}

#[test]
fn extra_bits_choose_the_candidates() {
    // With extra bits the candidates for exact distances are the best extended-bit estimates,
    // not the best 1-bit ones: a shallow re-ranking keeps the recall the deep one had with 1
    // bit, where 1-bit codes at the same depth lose it.
    let (dim, n) = (64, 20_000);
    let data = clustered_vectors(23, n, dim, 64);
    let queries = clustered_vectors(24, 100, dim, 64);
    let row_ids: Vec<u64> = (0..n as u64).collect();
    let mut recalls = Vec::new();
    for bits in [1u32, 4] {
        let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
        col.insert(&row_ids, &data).unwrap();
        col.seal_with(IndexKind::IvfRabitq(IvfParams {
            partitions: Some(140),
            seed: 3,
            bits: Some(bits),
            codes_only: false,
        }))
        .unwrap();
        for rerank in [2, 4, 32] {
            let params = format!(r#"{{"nprobe": 16, "rerank": {rerank}}}"#);
            recalls.push((bits, rerank, recall(&col, &queries, dim, &params)));
        }
    }
    eprintln!("(bits, rerank, recall): {recalls:?}");
    let at = |bits: u32, rerank: usize| recalls.iter().find(|r| r.0 == bits && r.1 == rerank).unwrap().2;
    // At a depth of 2 or 4 per result, 1-bit codes lose recall; 4-bit codes keep the deep
    // re-ranking's.
    for rerank in [2, 4] {
        assert!(at(1, rerank) < at(1, 32) - 0.1, "1 bit: rerank {rerank} {}, rerank 32 {}", at(1, rerank), at(1, 32));
    }
    assert!(at(4, 4) >= at(1, 32) - 0.01, "4 bits at rerank 4 {}; 1 bit at rerank 32 {}", at(4, 4), at(1, 32));
    assert!(at(4, 2) > at(1, 2) + 0.2, "rerank 2: 4 bits {}, 1 bit {}", at(4, 2), at(1, 2));
    assert!(at(4, 32) >= at(1, 32) - 0.005, "rerank 32: 4 bits {}, 1 bit {}", at(4, 32), at(1, 32));
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}

#[test]
fn queries_whose_distances_overflow_still_find_results() {
    // A query far enough out that its residuals' squares overflow f32 gives every row an
    // infinite 1-bit key and an infinite or NaN error bound. Every code width must still
    // return `limit` results (a NaN screened key once kept every row out with extra bits), and
    // a codes-only segment must rank them and name at least `limit` rows to re-rank.
    let (dim, n) = (16, 2_000);
    let data = clustered_vectors(31, n, dim, 8);
    let row_ids: Vec<u64> = (0..n as u64).collect();
    let mut query = clustered_vectors(32, 1, dim, 8);
    query[0] = 2e19;
    for bits in [1u32, 2, 4, 8] {
        let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
        col.insert(&row_ids, &data).unwrap();
        col.seal_with(IndexKind::IvfRabitq(IvfParams {
            partitions: Some(8),
            seed: 5,
            bits: Some(bits),
            codes_only: false,
        }))
        .unwrap();
        let body = r#"{"limit": 5, "params": {"nprobe": 2, "rerank": 4}}"#;
        let found = ids(&col, body, &query);
        assert_eq!(found.len(), 5, "bits {bits}: {found:?}");
        if bits > 1 {
            // Codes only: ranked by the estimates, and the rows a lazy re-ranking would read;
            // also through a filter few rows match (each match estimated on its own).
            let schema = Collection::parse_schema(&serde_json::json!({ "group": "integer" })).unwrap();
            let mut codes = Collection::with_schema(CollectionConfig { dim, metric: Metric::L2 }, schema).unwrap();
            let payloads: Vec<_> = row_ids.iter().map(|id| serde_json::json!({ "group": id % 100 })).collect();
            codes.insert_with_payloads(&row_ids, &data, &payloads).unwrap();
            codes
                .seal_with(IndexKind::IvfRabitq(IvfParams {
                    partitions: Some(8),
                    seed: 5,
                    bits: Some(bits),
                    codes_only: true,
                }))
                .unwrap();
            let filtered = r#"{"limit": 5, "filter": {"must": [{"key": "group", "match": {"value": 7}}]}}"#;
            for body in [body, filtered] {
                let found = ids(&codes, body, &query);
                assert_eq!(found.len(), 5, "bits {bits}, codes only, {body}: {found:?}");
                if body == filtered {
                    assert!(found.iter().all(|id| id % 100 == 7), "bits {bits}: {found:?} outside the filter");
                }
                let mut req = SearchRequest::from_json(body).unwrap();
                req.vector = Some(query.clone());
                let rows = codes.rerank_rows(&req, None).unwrap();
                assert!(rows.len() >= 5, "bits {bits}, {body}, rows to re-rank: {rows:?}");
            }
        }
    }
}

/// Without `bits`, a seal picks the dimension's default (4 up to 128 dimensions, 1 above) and
/// the segment says which; given bits are kept; codes only takes at least 2; the seal options
/// without bits stay without them (each seal picks again).
#[test]
fn code_bits_default_by_dimension() {
    use shoal_core::default_bits;
    assert_eq!((default_bits(50), default_bits(128), default_bits(129), default_bits(256)), (4, 4, 1, 1));
    let bits_of = |dim: usize, params: IvfParams| {
        let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
        let ids: Vec<u64> = (0..300).collect();
        col.insert(&ids, &clustered_vectors(dim as u64, 300, dim, 4)).unwrap();
        col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
        match col.segment(0).unwrap().index_kind() {
            IndexKind::IvfRabitq(p) => (p.bits, p.codes_only),
            IndexKind::Flat => panic!("{dim}-d: no IVF index"),
        }
    };
    let auto = IvfParams { partitions: Some(4), ..IvfParams::default() };
    assert_eq!(auto.bits, None);
    assert_eq!(bits_of(16, auto), (Some(4), false));
    assert_eq!(bits_of(128, auto), (Some(4), false));
    assert_eq!(bits_of(129, auto), (Some(1), false));
    assert_eq!(bits_of(200, IvfParams { bits: Some(3), ..auto }), (Some(3), false));
    assert_eq!(bits_of(16, IvfParams { bits: Some(1), ..auto }), (Some(1), false));
    assert_eq!(bits_of(200, IvfParams { codes_only: true, ..auto }), (Some(2), true));
    assert_eq!(bits_of(16, IvfParams { codes_only: true, ..auto }), (Some(4), true));
    // The options as JSON: bits only when given, and read back the same.
    let json = IndexKind::IvfRabitq(auto).to_json();
    assert_eq!(json.get("bits"), None, "{json}");
    assert_eq!(IndexKind::from_json(&json.to_string()).unwrap(), IndexKind::IvfRabitq(auto));
    let three = IndexKind::IvfRabitq(IvfParams { bits: Some(3), ..auto });
    assert_eq!(IndexKind::from_json(&three.to_json().to_string()).unwrap(), three);
    // Reopened, a segment with its dimension's default width leaves the width to each seal;
    // sealing with the default, or with that width given, seals the new rows on their own (no
    // rebuild); another width rebuilds the set as one segment.
    let (dim, seeds) = (16, [1u64, 2, 3]);
    let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
    col.insert(&(0..300).collect::<Vec<u64>>(), &clustered_vectors(seeds[0], 300, dim, 4)).unwrap();
    col.seal_with(IndexKind::IvfRabitq(auto)).unwrap();
    let mut col = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
    assert_eq!(col.index_kind(), IndexKind::IvfRabitq(IvfParams { partitions: None, ..auto }));
    // (No merges: the segment count tells a seal from a rebuild.)
    col.set_merge_policy(shoal_core::set::MergePolicy { merge_factor: 1000, ..Default::default() });
    for (i, (bits, segments)) in [(None, 2), (Some(4), 3), (Some(2), 1)].into_iter().enumerate() {
        let ids: Vec<u64> = (0..100).map(|r| 1000 * (i as u64 + 1) + r).collect();
        col.insert(&ids, &clustered_vectors(seeds[i], 100, dim, 4)).unwrap();
        col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: None, bits, ..auto })).unwrap();
        assert_eq!(col.segment_count(), segments, "sealed with bits {bits:?}");
    }
    assert!(matches!(col.segment(0).unwrap().index_kind(), IndexKind::IvfRabitq(p) if p.bits == Some(2)));
    // With a second, 200-d vector the defaults differ by vector (4 bits and 1): 4 bits given is
    // not the default for both, so it rebuilds, and a segment built with it reopens with it.
    let named = |bits: Option<u32>| {
        let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
        col.set_dense_vectors(vec![
            DenseSpec { name: "".into(), dim, metric: Metric::L2 },
            DenseSpec { name: "wide".into(), dim: 200, metric: Metric::L2 },
        ])
        .unwrap();
        let ids: Vec<PointId> = (0..300).map(PointId::Num).collect();
        let (main, wide) = (clustered_vectors(4, 300, dim, 4), clustered_vectors(5, 300, 200, 4));
        col.upsert_vectors(&ids, &[&main, &wide], &[], &[]).unwrap();
        col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: None, bits, ..auto })).unwrap();
        Collection::from_bytes(col.to_bytes().unwrap()).unwrap()
    };
    let mut col = named(None);
    assert_eq!(col.index_kind(), IndexKind::IvfRabitq(IvfParams { partitions: None, ..auto }));
    col.set_merge_policy(shoal_core::set::MergePolicy { merge_factor: 1000, ..Default::default() });
    let ids: Vec<PointId> = (1000..1100).map(PointId::Num).collect();
    let (main, wide) = (clustered_vectors(6, 100, dim, 4), clustered_vectors(7, 100, 200, 4));
    col.upsert_vectors(&ids, &[&main, &wide], &[], &[]).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: None, bits: Some(4), ..auto })).unwrap();
    assert_eq!(col.segment_count(), 1, "4 bits for the 200-d vector too: a rebuild");
    let four = IndexKind::IvfRabitq(IvfParams { partitions: None, bits: Some(4), ..auto });
    assert_eq!(named(Some(4)).index_kind(), four, "both vectors at 4 bits: reopened with 4");
}
