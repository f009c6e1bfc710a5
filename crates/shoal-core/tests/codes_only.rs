//! Codes-only segments: an IVF-RaBitQ index without the full vectors. Searches rank by the
//! extended-bit estimates (unfiltered through the index, few filter matches by estimating each
//! one: the same keys either way); the collection refuses every change and exact search, and
//! its bytes round-trip unchanged.

use serde_json::json;
use shoal_core::{Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, PointId, SearchRequest};
use shoal_testkit::{clustered_vectors, oracle};

const N: usize = 6000;

/// A collection of `N` clustered points with a payload field `group = id % 100`, sealed with
/// the full vectors (IVF, `bits`) and a second one sealed codes-only with the same settings.
/// Points as `(integer id, stored vector)`.
type NumPoints = Vec<(u64, Vec<f32>)>;

fn pair(metric: Metric, dim: usize, bits: u32) -> (Collection, Collection, Vec<f32>, NumPoints) {
    let data = clustered_vectors(dim as u64, N, dim, 40);
    let ids: Vec<u64> = (0..N as u64).map(|i| i * 5 + 2).collect();
    let payloads: Vec<_> = ids.iter().map(|id| json!({ "group": id % 100 })).collect();
    let schema = Collection::parse_schema(&json!({ "group": "integer" })).unwrap();
    let params = IvfParams { partitions: Some(40), seed: 11, bits: Some(bits), codes_only: false };
    let cols = [false, true].map(|codes_only| {
        let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema.clone()).unwrap();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        col.seal_with(IndexKind::IvfRabitq(IvfParams { codes_only, ..params })).unwrap();
        col
    });
    let points: Vec<(u64, Vec<f32>)> =
        ids.iter().map(|&id| (id, cols[0].vector(PointId::Num(id)).expect("full vectors").to_vec())).collect();
    let [full, codes] = cols;
    (full, codes, clustered_vectors(dim as u64 + 500, 100, dim, 40), points)
}

fn search(col: &Collection, body: serde_json::Value, q: &[f32]) -> Result<Vec<(u64, f32)>, Error> {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = Some(q.to_vec());
    Ok(col.search(&req)?.points.iter().map(|p| (p.id.as_num().unwrap(), p.score)).collect())
}

#[test]
fn codes_only_drops_exactly_the_vectors_and_keeps_recall() {
    for (metric, dim, min_recall) in [(Metric::L2, 64, 0.85), (Metric::Cosine, 96, 0.85), (Metric::Dot, 48, 0.85)] {
        let (mut full, mut codes, queries, points) = pair(metric, dim, 6);
        assert!(codes.codes_only() && !full.codes_only());
        // Same index, same payloads: the codes-only file has every section of the other but
        // VECTORS, byte for byte, except META (its vector type) and IVF_META (its defaults are
        // calibrated for ranking by estimates).
        let (full_bytes, codes_bytes) = (full.to_bytes().unwrap().to_vec(), codes.to_bytes().unwrap());
        let (a, b) = (full.segment(0).unwrap().reader(), shoal_format::SegmentReader::open(codes_bytes).unwrap());
        let kinds = |r: &shoal_format::SegmentReader<'_>| r.sections().iter().map(|e| e.kind).collect::<Vec<_>>();
        let mut expected = kinds(&a);
        expected.retain(|&k| k != shoal_format::KIND_VECTORS);
        assert_eq!(kinds(&b), expected, "{metric:?}");
        let own = [shoal_format::KIND_META, shoal_format::KIND_IVF_META];
        for k in expected.into_iter().filter(|k| !own.contains(k)) {
            assert_eq!(a.section(k), b.section(k), "{metric:?}: section {k}");
        }
        assert!(full_bytes.len() - codes_bytes.len() >= N * dim * 4);
        codes.verify().unwrap();
        let (mut hits, mut total) = (0, 0);
        for q in queries.chunks_exact(dim) {
            let truth = oracle::top_k(metric, &points, q, 10);
            let got = search(&codes, json!({"limit": 10}), q).unwrap();
            assert_eq!(got.len(), 10);
            hits += got.iter().filter(|(id, _)| truth.iter().any(|(t, _)| t == id)).count();
            total += truth.len();
        }
        let recall = hits as f64 / total as f64;
        eprintln!("{metric:?} {dim}-d codes-only 6-bit: recall@10 {recall:.4}");
        assert!(recall >= min_recall, "{metric:?}: codes-only recall@10 {recall} < {min_recall}");
    }
}

#[test]
fn a_filter_with_few_matches_ranks_by_the_same_estimates() {
    for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
        let (_, codes, queries, _) = pair(metric, 32, 4);
        for q in queries.chunks_exact(32).take(20) {
            let unfiltered = search(&codes, json!({"limit": 5}), q).unwrap();
            // One `has_id` match each: estimated on its own, not found through the index.
            for &(id, score) in &unfiltered {
                let one = search(&codes, json!({"limit": 5, "filter": {"must": [{"has_id": [id]}]}}), q).unwrap();
                assert_eq!(one, vec![(id, score)], "{metric:?}: id {id}");
                assert_eq!(one[0].1.to_bits(), score.to_bits());
            }
            // A 5% filter (ids are 2 mod 5, so 20 groups): every result matches, in score order.
            let group =
                search(&codes, json!({"limit": 10, "filter": {"must": [{"key": "group", "match": {"value": 7}}]}}), q)
                    .unwrap();
            assert_eq!(group.len(), 10);
            assert!(group.iter().all(|(id, _)| id % 100 == 7));
            let better = |a: f32, b: f32| if metric == Metric::L2 { a <= b } else { a >= b };
            assert!(group.windows(2).all(|w| better(w[0].1, w[1].1)), "{metric:?}: {group:?}");
        }
    }
}

#[test]
fn a_codes_only_collection_refuses_changes_and_round_trips() {
    let (_, mut codes, queries, _) = pair(Metric::L2, 24, 3);
    let bytes = codes.to_bytes().unwrap().to_vec();
    let q = &queries[..24];
    let before = search(&codes, json!({"limit": 10}), q).unwrap();
    let refused = |r: Result<(), Error>| matches!(r, Err(Error::CodesOnly(_)));
    assert!(refused(codes.insert(&[1], &[0.5; 24])));
    assert!(refused(codes.reserve(1)));
    assert!(matches!(codes.delete(&nums(&[2])), Err(Error::CodesOnly("delete"))));
    assert!(refused(codes.seal_with(IndexKind::Flat)));
    let wider = Collection::parse_schema(&json!({ "group": "integer", "tag": "keyword" })).unwrap();
    assert!(refused(codes.extend_schema(wider)));
    assert!(matches!(search(&codes, json!({"limit": 3, "params": {"exact": true}}), q), Err(Error::CodesOnly(_))));
    assert_eq!(Error::CodesOnly("delete").code(), "codes_only");
    // Nothing changed: the same points, no vectors to return, the same bytes and results.
    assert_eq!(codes.len(), N);
    assert!(codes.contains(PointId::Num(2)) && codes.vector(PointId::Num(2)).is_none());
    assert_eq!(codes.payload(PointId::Num(2)), Some(json!({"group": 2})));
    codes.seal();
    assert_eq!(codes.to_bytes().unwrap(), &bytes[..]);
    assert_eq!(search(&codes, json!({"limit": 10}), q).unwrap(), before);
    // Resealing with the index it has is a no-op; a round trip keeps everything.
    codes.seal_with(codes.index_kind()).unwrap();
    let reopened = Collection::from_bytes(&bytes).unwrap();
    assert!(reopened.codes_only());
    assert_eq!(reopened.segment(0).unwrap().index_kind(), codes.segment(0).unwrap().index_kind());
    assert_eq!(search(&reopened, json!({"limit": 10}), q).unwrap(), before);
}

#[test]
fn codes_only_needs_extra_bits_and_a_consistent_file() {
    assert!(IndexKind::from_json(r#"{"index": "ivf-rabitq", "codes_only": true}"#).is_err());
    assert!(IndexKind::from_json(r#"{"index": "ivf-rabitq", "bits": 1, "codes_only": true}"#).is_err());
    assert!(IndexKind::from_json(r#"{"codes_only": true, "bits": 4}"#).is_err());
    assert!(matches!(
        IndexKind::from_json(r#"{"index": "ivf-rabitq", "bits": 4, "codes_only": true}"#),
        Ok(IndexKind::IvfRabitq(IvfParams { bits: Some(4), codes_only: true, .. }))
    ));
    // META's vector type (offset 16 of the META payload) must agree with the sections.
    let (mut full, mut codes, _, _) = pair(Metric::L2, 16, 2);
    let meta_at = |bytes: &[u8]| {
        let reader = shoal_format::SegmentReader::open(bytes).unwrap();
        let meta = reader.section(shoal_format::KIND_META).unwrap();
        meta.as_ptr() as usize - bytes.as_ptr() as usize + 16
    };
    let at = meta_at(full.to_bytes().unwrap());
    let mut with_vectors = full.to_bytes().unwrap().to_vec();
    with_vectors[at] = 1; // claims codes-only, yet has VECTORS
    assert!(matches!(Collection::from_bytes(&with_vectors), Err(Error::Format(_))));
    let at = meta_at(codes.to_bytes().unwrap());
    let mut without = codes.to_bytes().unwrap().to_vec();
    without[at] = 0; // claims full vectors, has none
    assert!(matches!(Collection::from_bytes(&without), Err(Error::Format(_))));
    without[at] = 2; // unknown
    assert!(matches!(Collection::from_bytes(&without), Err(Error::Format(_))));
}

/// A full collection (IVF, 4 bits, scalar kernels so scores match the oracle bit for bit) and
/// the codes-only collection stripped from it, plus its vectors in row order.
fn stripped(metric: Metric, dim: usize) -> (Collection, Collection, Vec<f32>, Vec<f32>, NumPoints) {
    let (mut full, _, queries, _) = pair(metric, dim, 4);
    full.set_kernels(shoal_core::Kernels::scalar());
    let seg = full.segment(0).unwrap();
    let mut codes = Collection::from_bytes(seg.without_vectors().unwrap().as_slice()).unwrap();
    codes.set_kernels(shoal_core::Kernels::scalar());
    let vectors = seg.vectors().unwrap().to_vec();
    let points = (0..seg.rows())
        .zip(vectors.chunks_exact(dim))
        .map(|(r, v)| (seg.id(r).as_num().unwrap(), v.to_vec()))
        .collect();
    (full, codes, vectors, queries, points)
}

/// Step 2 over `rows` (any order), their vectors taken from `vectors`.
fn reranked(col: &Collection, req: &SearchRequest, rows: &[u32], vectors: &[f32]) -> Result<Vec<(u64, f32)>, Error> {
    let mut rows = rows.to_vec();
    rows.sort_unstable();
    let dim = col.dim();
    let picked: Vec<f32> = rows.iter().flat_map(|&r| vectors[r as usize * dim..][..dim].iter().copied()).collect();
    Ok(col.search_reranked(req, &rows, &picked)?.points.iter().map(|p| (p.id.as_num().unwrap(), p.score)).collect())
}

/// Lazy re-ranking in one round: every candidate row read.
fn lazy(col: &Collection, body: serde_json::Value, q: &[f32], vectors: &[f32]) -> Result<Vec<(u64, f32)>, Error> {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = Some(q.to_vec());
    reranked(col, &req, &col.rerank_rows(&req, None)?, vectors)
}

/// Lazy re-ranking in two rounds, as `searchLazy` does: the best-estimated 2 x limit rows, then
/// only the candidates that can still beat the last result of that. Also returns the rows read.
fn lazy_two_rounds(col: &Collection, req: &SearchRequest, vectors: &[f32]) -> (Vec<(u64, f32)>, usize) {
    let all = col.rerank_rows(req, None).unwrap();
    let first = &all[..all.len().min(2 * req.limit)];
    let round1 = reranked(col, req, first, vectors).unwrap();
    if first.len() == all.len() || round1.len() < req.limit {
        return (reranked(col, req, &all, vectors).unwrap(), all.len());
    }
    let mut rows = first.to_vec();
    rows.extend(
        col.rerank_rows(req, Some(round1[req.limit - 1].1)).unwrap().into_iter().filter(|r| !first.contains(r)),
    );
    (reranked(col, req, &rows, vectors).unwrap(), rows.len())
}

#[test]
fn lazy_reranking_is_exact_over_the_rows_it_reads() {
    for (metric, dim) in [(Metric::L2, 48), (Metric::Cosine, 64), (Metric::Dot, 40)] {
        let (full, codes, vectors, queries, points) = stripped(metric, dim);
        // Stripped, not rebuilt: every section but VECTORS and META is the full one's.
        assert!(
            codes.codes_only()
                && codes.segment(0).unwrap().index_kind()
                    == IndexKind::IvfRabitq(IvfParams {
                        codes_only: true,
                        ..match full.segment(0).unwrap().index_kind() {
                            IndexKind::IvfRabitq(p) => p,
                            _ => unreachable!(),
                        }
                    })
        );
        let (mut hits, mut total, mut read, mut full_hits, mut two_hits, mut two_read) = (0, 0, 0, 0, 0, 0);
        for q in queries.chunks_exact(dim) {
            let truth = oracle::top_k(metric, &points, q, 10);
            let got = lazy(&codes, json!({"limit": 10}), q, &vectors).unwrap();
            let in_memory = search(&full, json!({"limit": 10}), q).unwrap();
            full_hits += in_memory.iter().filter(|(id, _)| truth.iter().any(|(t, _)| t == id)).count();
            // Every score is the exact one (the oracle's, bit for bit), best first.
            for (id, score) in &got {
                let v = &points.iter().find(|(i, _)| i == id).unwrap().1;
                let exact = oracle::top_k(metric, &[(*id, v.clone())], q, 1)[0].1;
                assert_eq!(score.to_bits(), exact.to_bits(), "{metric:?}: id {id}");
            }
            hits += got.iter().filter(|(id, _)| truth.iter().any(|(t, _)| t == id)).count();
            total += truth.len();
            let mut req = SearchRequest::nearest(q.to_vec(), 10);
            req.limit = 10;
            let all = codes.rerank_rows(&req, None).unwrap();
            read += all.len();
            // Narrowed by a score already reached (the 10th exact result): a subset.
            let below = codes.rerank_rows(&req, Some(got[9].1)).unwrap();
            assert!(below.len() <= all.len() && below.iter().all(|r| all.contains(r)));
            let (two, n) = lazy_two_rounds(&codes, &req, &vectors);
            two_hits += two.iter().filter(|(id, _)| truth.iter().any(|(t, _)| t == id)).count();
            two_read += n;
        }
        let (recall, full_recall) = (hits as f64 / total as f64, full_hits as f64 / total as f64);
        let nq = (queries.len() / dim) as f64;
        let per_query = read as f64 / nq;
        let (two_recall, two_per_query) = (two_hits as f64 / total as f64, two_read as f64 / nq);
        eprintln!(
            "{metric:?} {dim}-d lazy re-ranking: recall@10 {recall:.4} ({full_recall:.4} with the vectors in memory), {per_query:.1} rows read per query of {N}; two rounds: {two_recall:.4}, {two_per_query:.1} rows"
        );
        // Two rounds read fewer rows for (almost) the same recall.
        assert!(two_recall >= recall - 0.01 && two_per_query <= per_query, "{metric:?}: {two_recall} {two_per_query}");
        // Reading only the rows the bounds pick loses (almost) nothing against re-ranking with
        // every vector at hand: the same partitions are probed, so both share one recall limit.
        assert!(recall >= full_recall - 0.005, "{metric:?}: lazy recall@10 {recall} < in-memory {full_recall}");
        assert!(recall >= 0.85, "{metric:?}: lazy recall@10 {recall}");
        assert!(per_query < N as f64 / 10.0, "{metric:?}: reads {per_query} rows per query");
        // A filter holds in both steps: rows that fail it are ignored even if given.
        let q = &queries[..dim];
        let f = json!({"limit": 10, "filter": {"must": [{"key": "group", "match": {"value": 12}}]}});
        let got = lazy(&codes, f.clone(), q, &vectors).unwrap();
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|(id, _)| id % 100 == 12));
        let mut req = SearchRequest::from_json(&f.to_string()).unwrap();
        req.vector = Some(q.to_vec());
        let all: Vec<u32> = (0..N as u32).collect();
        let res = codes.search_reranked(&req, &all, &vectors).unwrap();
        let exact =
            oracle::top_k(metric, &points.iter().filter(|(id, _)| id % 100 == 12).cloned().collect::<Vec<_>>(), q, 10);
        let res: Vec<(u64, u32)> = res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect();
        let exact: Vec<(u64, u32)> = exact.iter().map(|&(id, s)| (id, s.to_bits())).collect();
        assert_eq!(res, exact, "{metric:?}: every row given, the filtered exact answer");
    }
}

#[test]
fn lazy_reranking_rejects_bad_input() {
    let (full, codes, vectors, queries, _) = stripped(Metric::L2, 16);
    let q = &queries[..16];
    let mut req = SearchRequest::nearest(q.to_vec(), 5);
    req.limit = 5;
    assert!(matches!(full.rerank_rows(&req, None), Err(Error::InvalidRequest(_))), "needs a codes-only collection");
    let mut rows = codes.rerank_rows(&req, None).unwrap();
    rows.sort_unstable();
    assert!(!rows.is_empty() && rows.windows(2).all(|w| w[0] < w[1]));
    let picked: Vec<f32> = rows.iter().flat_map(|&r| vectors[r as usize * 16..][..16].iter().copied()).collect();
    assert!(matches!(codes.search_reranked(&req, &rows, &picked[16..]), Err(Error::LengthMismatch { .. })));
    let mut reversed = rows.clone();
    reversed.reverse();
    if rows.len() > 1 {
        assert!(matches!(codes.search_reranked(&req, &reversed, &picked), Err(Error::InvalidRequest(_))));
    }
    let out_of_range = [N as u32];
    assert!(matches!(codes.search_reranked(&req, &out_of_range, &[0.0; 16]), Err(Error::InvalidRequest(_))));
    let mut nan = picked.clone();
    nan[3] = f32::NAN;
    assert!(matches!(codes.search_reranked(&req, &rows, &nan), Err(Error::NonFinite { point: 0, element: 3 })));
    let text = SearchRequest::from_json(r#"{"text": "x", "limit": 3}"#).unwrap();
    assert!(codes.rerank_rows(&text, None).is_err());
    // Prefetches and fusion settings are not a lazy search's: refused, never ignored.
    let mut prefetched = req.clone();
    prefetched.prefetch = vec![SearchRequest::nearest(q.to_vec(), 5)];
    prefetched.vector = Some(q.to_vec());
    assert!(matches!(codes.rerank_rows(&prefetched, None), Err(Error::InvalidRequest(_))));
    assert!(matches!(codes.search_reranked(&prefetched, &rows, &picked), Err(Error::InvalidRequest(_))));
    let mut rrf = req.clone();
    rrf.rrf_k = Some(3);
    assert!(matches!(codes.rerank_rows(&rrf, None), Err(Error::InvalidRequest(_))));
    // A threshold applies to the re-ranked answer as to any search.
    let all = codes.search_reranked(&req, &rows, &picked).unwrap().points;
    let mut cut = req.clone();
    cut.score_threshold = Some(all[2].score);
    let kept = codes.search_reranked(&cut, &rows, &picked).unwrap().points;
    assert_eq!(kept, all.iter().filter(|p| p.score <= all[2].score).cloned().collect::<Vec<_>>());
    assert!(kept.len() >= 3 && kept.len() < all.len());
    let mut wrong = req.clone();
    wrong.vector = Some(vec![0.5; 15]);
    assert!(matches!(codes.rerank_rows(&wrong, None), Err(Error::DimensionMismatch { .. })));
    // A flat segment cannot be stripped.
    let mut flat = Collection::new(CollectionConfig { dim: 4, metric: Metric::L2 }).unwrap();
    flat.insert(&[1, 2], &[0.0; 8]).unwrap();
    flat.seal();
    assert!(flat.segment(0).unwrap().without_vectors().is_err());
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}
