//! Collection behaviour: upserts, deletes, seals, round trips, and bad input that must be
//! rejected with a typed error while changing nothing.

use proptest::prelude::*;
use shoal_core::{Collection, CollectionConfig, Error, FormatError, IdEncoding, Metric, PointId, SearchRequest};
use shoal_testkit::{oracle, uniform_vectors};

fn col(dim: usize, metric: Metric) -> Collection {
    Collection::new(CollectionConfig { dim, metric }).unwrap()
}

fn ids_of(c: &Collection, q: &[f32], k: usize) -> Vec<u64> {
    c.search(&SearchRequest::nearest(q.to_vec(), k)).unwrap().points.iter().map(|p| p.id.as_num().unwrap()).collect()
}

/// Everything observable about a collection, to prove a failed call changed nothing.
fn snapshot(c: &Collection) -> (usize, Vec<(u64, u32)>) {
    let q = vec![0.25; c.dim()];
    let res = c.search(&SearchRequest::nearest(q, 1000)).unwrap();
    (c.len(), res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect())
}

fn filled() -> Collection {
    let mut c = col(4, Metric::L2);
    c.insert(&[1, 2, 3], &uniform_vectors(7, 3, 4)).unwrap();
    c.seal();
    c.insert(&[4, 5], &uniform_vectors(8, 2, 4)).unwrap();
    c
}

#[test]
fn upsert_replaces_and_delete_removes() {
    let mut c = col(2, Metric::L2);
    c.insert(&[1, 2], &[0.0, 0.0, 10.0, 10.0]).unwrap();
    c.seal();
    c.insert(&[1], &[20.0, 20.0]).unwrap(); // replaces the sealed point 1
    assert_eq!(c.len(), 2);
    assert_eq!(c.vector(PointId::Num(1)), Some(&[20.0, 20.0][..]));
    assert_eq!(ids_of(&c, &[0.0, 0.0], 10), [2, 1]);
    c.insert(&[1, 1], &[5.0, 5.0, 1.0, 1.0]).unwrap(); // last write in a batch wins
    assert_eq!(c.vector(PointId::Num(1)), Some(&[1.0, 1.0][..]));
    assert_eq!(c.len(), 2);
    assert_eq!(c.delete(&nums(&[2, 2, 99])).unwrap(), 1);
    assert_eq!(ids_of(&c, &[0.0, 0.0], 10), [1]);
    let bytes = c.to_bytes().unwrap().to_vec();
    let again = Collection::from_bytes(&bytes).unwrap();
    again.verify().unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(ids_of(&again, &[0.0, 0.0], 10), [1]);
}

#[test]
fn ties_break_by_internal_id_and_offset_pages() {
    let mut c = col(2, Metric::Dot);
    // Same vector under ids inserted in a scrambled order: ties go by insertion order.
    c.insert(&[30, 10, 20], &[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]).unwrap();
    assert_eq!(ids_of(&c, &[1.0, 0.0], 3), [30, 10, 20]);
    let req = SearchRequest::from_json(r#"{"vector": [1, 0], "limit": 1, "offset": 1}"#).unwrap();
    assert_eq!(c.search(&req).unwrap().points[0].id, 10);
}

#[test]
fn cosine_normalises_and_scores_similarity() {
    let mut c = col(2, Metric::Cosine);
    c.insert(&[1, 2, 3], &[3.0, 4.0, 0.0, 0.0, -1.0, 0.0]).unwrap();
    assert_eq!(c.vector(PointId::Num(1)), Some(&[0.6, 0.8][..]));
    assert_eq!(c.vector(PointId::Num(2)), Some(&[0.0, 0.0][..]), "a zero vector stays zero");
    let res = c.search(&SearchRequest::nearest(vec![6.0, 8.0], 3)).unwrap();
    assert_eq!(res.points.iter().map(|p| p.id.as_num().unwrap()).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(res.points[0].score, 1.0);
    assert_eq!(res.points[2].score, -0.6);
}

#[test]
fn zero_copy_batch_commits_and_converts_number_ids() {
    let mut c = col(3, Metric::L2);
    c.reserve(2).unwrap();
    c.pending_ids().copy_from_slice(&[7f64.to_bits(), 9_007_199_254_740_992f64.to_bits()]);
    c.pending_vectors().copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(c.commit(IdEncoding::F64).unwrap(), 2);
    assert!(c.contains(PointId::Num(7)) && c.contains(PointId::Num(1 << 53)));
    assert_eq!(c.commit(IdEncoding::U64), Err(Error::NoPendingBatch));
}

#[test]
fn bad_inserts_change_nothing() {
    let mut c = filled();
    let before = snapshot(&c);
    assert_eq!(c.insert(&[9], &[1.0, 2.0, 3.0]), Err(Error::LengthMismatch { ids: 1, floats: 3, dim: 4 }));
    assert_eq!(c.insert(&[9, 10], &[0.0; 4]), Err(Error::LengthMismatch { ids: 2, floats: 4, dim: 4 }));
    assert_eq!(
        c.insert(&[1, 9], &[0.0, 0.0, 0.0, 0.0, 0.0, f32::NAN, 0.0, 0.0]),
        Err(Error::NonFinite { point: 1, element: 1 })
    );
    assert_eq!(c.insert(&[9], &[0.0, f32::INFINITY, 0.0, 0.0]), Err(Error::NonFinite { point: 0, element: 1 }));
    for bad in [-1.0f64, 0.5, 9_007_199_254_740_994.0, f64::NAN, f64::INFINITY] {
        c.reserve(1).unwrap();
        c.pending_ids()[0] = bad.to_bits();
        assert_eq!(c.commit(IdEncoding::F64), Err(Error::InvalidId { point: 0 }), "{bad}");
    }
    c.reserve(2).unwrap();
    c.pending_vectors()[5] = f32::NEG_INFINITY;
    assert_eq!(c.commit(IdEncoding::U64), Err(Error::NonFinite { point: 1, element: 1 }));
    assert_eq!(snapshot(&c), before, "failed writes must change nothing");
    assert!(matches!(Collection::new(CollectionConfig { dim: 0, metric: Metric::L2 }), Err(Error::InvalidConfig(_))));
}

#[test]
fn bad_requests_are_typed_errors() {
    let c = filled();
    let err = |json: &str| SearchRequest::from_json(json).and_then(|r| c.search(&r)).unwrap_err();
    assert_eq!(err(r#"{"vector": [1, 2]}"#), Error::DimensionMismatch { expected: 4, found: 2 });
    // JSON has no NaN; a number beyond f32 is rejected by the parser, NaN from a host by search.
    assert!(matches!(err(r#"{"vector": [1, 2, 3, 4e39]}"#), Error::InvalidRequest(_)));
    let nan = SearchRequest::nearest(vec![1.0, f32::NAN, 0.0, 0.0], 3);
    assert_eq!(c.search(&nan).unwrap_err(), Error::NonFinite { point: 0, element: 1 });
    assert!(matches!(err(r#"{"vector": [1, 2, 3, 4], "limt": 3}"#), Error::InvalidRequest(m) if m.contains("limt")));
    assert!(matches!(err(r#"{"vector": [1, 2, 3, 4], "limit": 0}"#), Error::InvalidRequest(_)));
    assert!(matches!(err(r#"{"vector": [1, 2, 3, 4], "limit": 100001}"#), Error::InvalidRequest(_)));
    assert!(matches!(err(r#"{"vector": [1, 2, 3, 4], "offset": 100001}"#), Error::InvalidRequest(_)));
    assert!(matches!(err(r#"{"vector": [1, 2, 3, "x"]}"#), Error::InvalidRequest(_)));
    assert!(matches!(err(r#"{"vector": [1, 2, 3, 4]"#), Error::InvalidRequest(_)));
    assert!(matches!(err(r#"{"limit": 3}"#), Error::InvalidRequest(m) if m.contains("vector")));
    assert!(matches!(
        err(r#"{"vector": [1, 2, 3, 4], "params": {"exact": true, "bogus": 1}}"#),
        Error::InvalidRequest(_)
    ));
    assert!(
        matches!(err(r#"{"vector": [1, 2, 3, 4], "text": "hi"}"#), Error::InvalidRequest(m) if m.contains("no text fields"))
    );
    let ok = SearchRequest::from_json(
        r#"{"vector": [1, 2, 3, 4], "params": {"exact": true, "nprobe": 4}, "with_payload": true}"#,
    );
    assert!(c.search(&ok.unwrap()).is_ok());
}

#[test]
fn corrupt_segments_are_typed_errors() {
    let mut c = filled();
    let bytes = c.to_bytes().unwrap().to_vec();
    for n in 0..bytes.len() {
        assert!(Collection::from_bytes(&bytes[..n]).is_err(), "truncated to {n} bytes must not open");
    }
    let mut v9 = bytes.clone();
    v9[8] = 9;
    let crc = shoal_format::crc32c(&v9[..32]);
    v9[32..36].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(
        Collection::from_bytes(&v9).unwrap_err(),
        Error::Format(FormatError::UnsupportedVersion { found: 9, newest: 1 })
    );
    // A flipped bit inside the vectors opens (open is cheap) but fails verification.
    let reader = shoal_format::SegmentReader::open(c.segment(0).unwrap().bytes()).unwrap();
    let vectors = reader.sections().iter().find(|e| e.kind == shoal_format::KIND_VECTORS).unwrap();
    let mut flipped = bytes.clone();
    flipped[vectors.offset as usize + 3] ^= 0x10;
    let opened = Collection::from_bytes(&flipped).unwrap();
    assert!(matches!(opened.verify(), Err(Error::Format(FormatError::ChecksumMismatch { kind: 3, .. }))));
}

#[derive(Clone, Debug)]
enum Step {
    Insert(Vec<u64>),
    Delete(Vec<u64>),
    Seal,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => proptest::collection::vec(0u64..40, 1..12).prop_map(Step::Insert),
        2 => proptest::collection::vec(0u64..40, 1..6).prop_map(Step::Delete),
        1 => Just(Step::Seal),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Any sequence of upserts, deletes and seals searches like a brute-force model.
    #[test]
    fn matches_a_brute_force_model(steps in proptest::collection::vec(step(), 1..12), metric in 0u32..3, seed in 0u64..1000) {
        let metric = Metric::from_code(metric).unwrap();
        let dim = 5;
        let mut c = col(dim, metric);
        // Model: (id, stored vector) in internal-id order; a seal keeps the order of the living.
        let mut model: Vec<(u64, Vec<f32>)> = Vec::new();
        let mut s = seed;
        for st in steps {
            match st {
                Step::Insert(ids) => {
                    s += 1;
                    let v = uniform_vectors(s, ids.len(), dim);
                    c.insert(&ids, &v).unwrap();
                    for (id, row) in ids.iter().zip(v.chunks_exact(dim)) {
                        model.retain(|p| p.0 != *id);
                        let row = if metric == Metric::Cosine { oracle::normalized(row) } else { row.to_vec() };
                        model.push((*id, row));
                    }
                }
                Step::Delete(ids) => {
                    let before = model.len();
                    model.retain(|p| !ids.contains(&p.0));
                    prop_assert_eq!(c.delete(&nums(&ids)).unwrap(), before - model.len());
                }
                Step::Seal => c.seal(),
            }
            prop_assert_eq!(c.len(), model.len());
            let q = uniform_vectors(s ^ 0xabc, 1, dim);
            let got: Vec<(u64, u32)> = c.search(&SearchRequest::nearest(q.clone(), 7)).unwrap().points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect();
            let want: Vec<(u64, u32)> = oracle::top_k(metric, &model, &q, 7).iter().map(|&(id, s)| (id, s.to_bits())).collect();
            prop_assert_eq!(got, want);
        }
    }
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}
