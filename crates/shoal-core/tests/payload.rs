//! Payloads and filters in the collection: filtered search against a brute-force reference
//! (the JSON evaluator `shoal_payload::reference` + the exact oracle), before and after
//! sealing, with deletes and upserts, flat and IVF; bad input changes nothing; `with_payload`
//! and the segment bytes keep every payload.

use serde_json::{Value, json};
use shoal_core::{
    Collection, CollectionConfig, Error, Filter, IdEncoding, IndexKind, IvfParams, Metric, PointId, Schema,
    SearchRequest, SearchResponse,
};
use shoal_payload::reference;
use shoal_testkit::oracle::{normalized, top_k};
use shoal_testkit::{Rng, clustered_vectors};

const SCHEMA: &str =
    r#"{"tag": "keyword", "year": "integer", "price": "float", "stock": "bool", "title": "text", "bucket": "integer"}"#;

fn schema() -> Schema {
    Schema::from_json(SCHEMA).unwrap()
}

/// A payload with every shape a field can take: absent, null, [], [null], one value, several.
fn payload(rng: &mut Rng, i: u64) -> Value {
    let mut m = serde_json::Map::new();
    let tags = ["red", "green", "blue", "cyan", "pink", "gold", "gray", "teal"];
    match rng.below(8) {
        0 => {}
        1 => {
            m.insert("tag".into(), Value::Null);
        }
        2 => {
            m.insert("tag".into(), json!([]));
        }
        3 => {
            m.insert("tag".into(), json!([null]));
        }
        4 | 5 => {
            m.insert("tag".into(), json!(tags[rng.below(8) as usize]));
        }
        _ => {
            let a = tags[rng.below(8) as usize];
            let b = tags[rng.below(8) as usize];
            m.insert("tag".into(), json!([a, null, b]));
        }
    }
    if rng.below(10) > 0 {
        m.insert("year".into(), json!(1990 + rng.below(30) as i64));
    }
    if rng.below(4) > 0 {
        m.insert("price".into(), json!(rng.below(10_000) as f64 / 100.0));
    }
    if rng.below(3) > 0 {
        m.insert("stock".into(), json!(rng.below(2) == 1));
    }
    if rng.below(2) == 0 {
        m.insert("title".into(), json!(format!("point number {i}")));
    }
    m.insert("bucket".into(), json!(i % 1000));
    if rng.below(50) == 0 {
        return Value::Null;
    }
    Value::Object(m)
}

/// The live points as the oracle sees them: `(id, stored vector, payload)` in internal-id
/// order (sealed rows, then mutable rows in insertion order).
#[derive(Clone, Default)]
struct Model {
    points: Vec<(u64, Vec<f32>, Value)>,
}

impl Model {
    fn upsert(&mut self, metric: Metric, ids: &[u64], vectors: &[f32], payloads: &[Value]) {
        let dim = vectors.len() / ids.len();
        let replaced: std::collections::HashSet<u64> = ids.iter().copied().collect();
        self.points.retain(|p| !replaced.contains(&p.0));
        for (i, &id) in ids.iter().enumerate() {
            let v = &vectors[i * dim..(i + 1) * dim];
            let v = if metric == Metric::Cosine { normalized(v) } else { v.to_vec() };
            let doc = payloads.get(i).cloned().unwrap_or(Value::Null);
            self.points.push((id, v, doc));
        }
    }

    fn delete(&mut self, ids: &[u64]) {
        let gone: std::collections::HashSet<u64> = ids.iter().copied().collect();
        self.points.retain(|p| !gone.contains(&p.0));
    }

    fn matching(&self, f: &Filter) -> Vec<(u64, Vec<f32>)> {
        self.points
            .iter()
            .filter(|p| reference::matches(f, &p.2, PointId::Num(p.0)))
            .map(|p| (p.0, p.1.clone()))
            .collect()
    }

    fn doc(&self, id: u64) -> Value {
        let d = &self.points.iter().find(|p| p.0 == id).unwrap().2;
        if d.is_null() { json!({}) } else { d.clone() }
    }
}

fn request(filter: &str, q: &[f32], limit: usize, extra: &str) -> SearchRequest {
    let mut req =
        SearchRequest::from_json(&format!(r#"{{"limit": {limit}, "filter": {filter}, "with_payload": true{extra}}}"#))
            .unwrap();
    req.vector = Some(q.to_vec());
    req
}

const FILTERS: &[&str] = &[
    r#"{"must": [{"key": "tag", "match": {"value": "red"}}]}"#,
    r#"{"must": [{"key": "tag", "match": {"any": ["blue", "gold"]}}, {"key": "year", "range": {"gte": 2000, "lt": 2010}}]}"#,
    r#"{"must_not": [{"key": "tag", "match": {"except": ["red", "green"]}}]}"#,
    r#"{"should": [{"is_empty": {"key": "tag"}}, {"is_null": {"key": "price"}}], "must": [{"key": "stock", "match": {"value": true}}]}"#,
    r#"{"must": [{"key": "price", "range": {"gt": 10.5, "lte": 40}}], "must_not": [{"key": "year", "match": {"any": [1995, 1996, 1997]}}]}"#,
    r#"{"must": [{"is_empty": {"key": "title"}}, {"has_id": [1, 4, 7, 10, 13, 301, 302, 9001]}]}"#,
    r#"{"min_should": {"conditions": [{"key": "stock", "match": {"value": false}}, {"key": "tag", "match": {"value": "pink"}}, {"key": "year", "range": {"lt": 1995}}], "min_count": 2}}"#,
    r#"{"must": [{"key": "bucket", "match": {"value": 7}}]}"#,
    r#"{"must": [{"key": "bucket", "range": {"lt": 10}}]}"#,
    r#"{"must": [{"must_not": [{"key": "tag", "match": {"value": "gray"}}]}, {"should": [{"key": "year", "range": {"gte": 2015}}, {"key": "bucket", "range": {"gte": 990}}]}]}"#,
    r#"{}"#,
];

/// Every filter and a few queries: exact searches equal the reference (ids and score bits,
/// payloads); approximate ones return `min(limit, matching)` matching points with exact
/// scores, best first.
fn check(col: &Collection, model: &Model, metric: Metric, queries: &[f32], dim: usize, what: &str) {
    let mut hits = 0;
    let mut total = 0;
    for filter in FILTERS {
        let f = Filter::from_json(filter).unwrap();
        let matching = model.matching(&f);
        let mut want_ids: Vec<u64> = matching.iter().map(|m| m.0).collect();
        want_ids.sort_unstable();
        let value: Value = serde_json::from_str(filter).unwrap();
        assert_eq!(col.matching_ids(Some(&value)).unwrap(), want_ids, "{what}: matching_ids, filter {filter}");
        for (qi, q) in queries.chunks_exact(dim).enumerate() {
            for limit in [1, 10, 37] {
                let want = top_k(metric, &matching, q, limit);
                let exact = col.search(&request(filter, q, limit, r#", "params": {"exact": true}"#)).unwrap();
                let got: Vec<(u64, u32)> =
                    exact.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect();
                let wanted: Vec<(u64, u32)> = want.iter().map(|(id, s)| (*id, s.to_bits())).collect();
                assert_eq!(got, wanted, "{what}: exact, filter {filter}, query {qi}, limit {limit}");
                assert!(exact.stats.exact);
                for p in &exact.points {
                    assert_eq!(
                        p.payload.as_ref(),
                        Some(&model.doc(p.id.as_num().unwrap())),
                        "{what}: payload of {}",
                        p.id
                    );
                }
                let res = col.search(&request(filter, q, limit, "")).unwrap();
                check_approx(&res, &matching, model, metric, q, limit, &format!("{what}: filter {filter}, query {qi}"));
                let want_ids: Vec<u64> = want.iter().map(|w| w.0).collect();
                hits += res.points.iter().filter(|p| p.id.as_num().is_some_and(|id| want_ids.contains(&id))).count();
                total += want.len();
                if res.stats.exact {
                    assert_eq!(res.points, exact.points, "{what}: planner chose exact, filter {filter}");
                }
            }
        }
    }
    let recall = hits as f64 / total.max(1) as f64;
    assert!(recall >= 0.9, "{what}: filtered recall {recall}");
}

fn check_approx(
    res: &SearchResponse,
    matching: &[(u64, Vec<f32>)],
    model: &Model,
    metric: Metric,
    q: &[f32],
    limit: usize,
    what: &str,
) {
    assert_eq!(res.points.len(), limit.min(matching.len()), "{what}: limit {limit}, {} match", matching.len());
    let all = top_k(metric, matching, q, matching.len());
    for w in res.points.windows(2) {
        let ordered = if metric == Metric::L2 { w[0].score <= w[1].score } else { w[0].score >= w[1].score };
        assert!(ordered, "{what}: results out of order");
    }
    for p in &res.points {
        let exact = all.iter().find(|a| p.id == a.0);
        assert!(exact.is_some(), "{what}: {} does not match the filter", p.id);
        assert_eq!(exact.unwrap().1.to_bits(), p.score.to_bits(), "{what}: score of {}", p.id);
        assert_eq!(p.payload.as_ref(), Some(&model.doc(p.id.as_num().unwrap())));
    }
}

fn scenario(metric: Metric, index: IndexKind) {
    let dim = 24;
    let n = 3000;
    let mut rng = Rng::new(42);
    let data = clustered_vectors(3, n, dim, 20);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
    let payloads: Vec<Value> = ids.iter().map(|&i| payload(&mut rng, i)).collect();
    let queries = clustered_vectors(4, 3, dim, 20);
    let what = format!("{metric:?} {index:?}");

    let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema()).unwrap();
    let mut model = Model::default();
    let half = n / 2;
    col.insert_with_payloads(&ids[..half], &data[..half * dim], &payloads[..half]).unwrap();
    model.upsert(metric, &ids[..half], &data[..half * dim], &payloads[..half]);
    check(&col, &model, metric, &queries, dim, &format!("{what} mutable"));

    col.seal_with(index).unwrap();
    check(&col, &model, metric, &queries, dim, &format!("{what} sealed"));

    // The rest through reserve/commit, upserts of sealed and mutable points (new payloads or
    // none), deletes in both segments.
    col.reserve(n - half).unwrap();
    col.pending_ids().copy_from_slice(&ids[half..]);
    col.pending_vectors().copy_from_slice(&data[half * dim..]);
    col.commit_with_payloads(IdEncoding::U64, &payloads[half..]).unwrap();
    model.upsert(metric, &ids[half..], &data[half * dim..], &payloads[half..]);
    let up_ids: Vec<u64> = (0..200).map(|i| ids[i * 13 % n]).collect();
    let up_vecs = clustered_vectors(5, up_ids.len(), dim, 20);
    let up_payloads: Vec<Value> = up_ids.iter().map(|&i| payload(&mut rng, i + 1)).collect();
    col.insert_with_payloads(&up_ids[..100], &up_vecs[..100 * dim], &up_payloads[..100]).unwrap();
    model.upsert(metric, &up_ids[..100], &up_vecs[..100 * dim], &up_payloads[..100]);
    col.insert(&up_ids[100..], &up_vecs[100 * dim..]).unwrap();
    model.upsert(metric, &up_ids[100..], &up_vecs[100 * dim..], &[]);
    let del: Vec<u64> = (0..300).map(|i| ids[i * 7 % n]).collect();
    col.delete(&nums(&del)).unwrap();
    model.delete(&del);
    assert_eq!(col.len(), model.points.len());
    check(&col, &model, metric, &queries, dim, &format!("{what} sealed + mutable"));

    col.seal();
    col.verify().unwrap();
    check(&col, &model, metric, &queries, dim, &format!("{what} resealed"));

    let bytes = col.to_bytes().unwrap().to_vec();
    let again = Collection::from_bytes(&bytes).unwrap();
    again.verify().unwrap();
    assert_eq!(again.schema(), Some(&schema()));
    check(&again, &model, metric, &queries, dim, &format!("{what} from bytes"));
    for p in &model.points {
        assert_eq!(again.payload(PointId::Num(p.0)), Some(model.doc(p.0)));
    }
}

#[test]
fn filtered_search_equals_reference_flat() {
    scenario(Metric::L2, IndexKind::Flat);
    scenario(Metric::Cosine, IndexKind::Flat);
}

#[test]
fn filtered_search_equals_reference_ivf() {
    let ivf = IndexKind::IvfRabitq(IvfParams { partitions: Some(24), seed: 3, bits: Some(1), codes_only: false });
    scenario(Metric::L2, ivf);
    scenario(
        Metric::Dot,
        IndexKind::IvfRabitq(IvfParams { partitions: Some(16), seed: 5, bits: Some(4), codes_only: false }),
    );
}

#[test]
fn bad_payloads_change_nothing() {
    let dim = 3;
    let fill = |col: &mut Collection| {
        col.insert_with_payloads(&[1, 2], &[0.0; 6], &[json!({"tag": "a"}), json!(null)]).unwrap();
        col.insert_with_payloads(&[3], &[1.0; 3], &[json!({"year": 2000})]).unwrap();
    };
    let mut col = Collection::with_schema(CollectionConfig { dim, metric: Metric::L2 }, schema()).unwrap();
    fill(&mut col);
    let mut reference = Collection::with_schema(CollectionConfig { dim, metric: Metric::L2 }, schema()).unwrap();
    fill(&mut reference);
    let cases: Vec<(Value, &str)> = vec![
        (json!({"year": "2000"}), "payload.year"),
        (json!({"year": 1.5}), "payload.year"),
        (json!({"colour": "red"}), "payload.colour"),
        (json!({"tag": ["a", 3]}), "payload.tag[1]"),
        (json!({"stock": [true, "no"]}), "payload.stock[1]"),
        (json!([1, 2]), "payload"),
        (json!("text"), "payload"),
    ];
    for (bad, path) in cases {
        let payloads = [json!({"tag": "x"}), json!({}), bad.clone()];
        // Upserting ids 1 and 3 would change the collection, had the batch been accepted.
        let e = col.insert_with_payloads(&[1, 4, 3], &[9.0; 9], &payloads).unwrap_err();
        match &e {
            Error::InvalidPayload { point, error } => {
                assert_eq!(*point, 2, "{bad}");
                assert_eq!(error.path, path, "{bad}");
            }
            other => panic!("{bad}: {other:?}"),
        }
        assert_eq!(e.code(), "invalid_payload");
        assert!(e.to_string().contains(path), "{e}");
        // The same through reserve/commit: the batch is dropped.
        col.reserve(3).unwrap();
        col.pending_ids().copy_from_slice(&[1, 4, 3]);
        assert!(matches!(col.commit_with_payloads(IdEncoding::U64, &payloads), Err(Error::InvalidPayload { .. })));
        assert_eq!(col.len(), 3);
        assert!(!col.contains(PointId::Num(4)));
        assert_eq!(col.payload(PointId::Num(1)), Some(json!({"tag": "a"})));
    }
    let e = col.insert_with_payloads(&[5, 6], &[0.0; 6], &[json!({})]).unwrap_err();
    assert_eq!(e, Error::PayloadCount { points: 2, payloads: 1 });
    assert_eq!(col.to_bytes().unwrap(), reference.to_bytes().unwrap());
}

#[test]
fn bad_filters_are_invalid_requests_naming_the_path() {
    let mut col = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&[1], &[0.0, 1.0], &[json!({"tag": "a", "year": 2000})]).unwrap();
    let cases = [
        (r#"{"must": [{"key": "colour", "match": {"value": "red"}}]}"#, "filter.must[0].key"),
        (r#"{"must": [{"key": "tag", "range": {"gte": 1}}]}"#, "filter.must[0].range"),
        (r#"{"must": [{"key": "year", "match": {"value": "2000"}}]}"#, "filter.must[0].match.value"),
        (r#"{"must": [{"key": "year", "range": {"gte": "a"}}]}"#, "filter.must[0].range.gte"),
        (r#"{"must_nt": []}"#, "filter.must_nt"),
        (r#"{"should": [{"key": "tag", "match": {"prefix": "a"}}]}"#, "filter.should[0].match.prefix"),
        (r#"[1, 2]"#, "filter"),
        (r#"{"must": [{"has_id": [-1]}]}"#, "filter.must[0].has_id[0]"),
    ];
    for seal in [false, true] {
        if seal {
            col.seal();
        }
        for (filter, path) in cases {
            let e = col.search(&request(filter, &[0.0, 0.0], 5, "")).unwrap_err();
            match &e {
                Error::InvalidRequest(msg) => assert!(msg.starts_with(path), "{filter}: {msg}"),
                other => panic!("{filter}: {other:?}"),
            }
        }
    }
    assert_eq!(col.len(), 1);
}

#[test]
fn with_payload_round_trips() {
    let docs = [
        json!({"tag": ["a", "b"], "year": 1999, "price": -0.5, "stock": false, "title": "Über café ☕"}),
        json!(null),
        json!({}),
        json!({"tag": [], "year": null, "price": [null], "bucket": [1, 2, 3]}),
        json!({"price": 1e300, "title": ["one", "two"]}),
    ];
    let ids = [10u64, 11, 12, 13, 14];
    let vectors: Vec<f32> = (0..10).map(|i| i as f32).collect();
    for index in [
        IndexKind::Flat,
        IndexKind::IvfRabitq(IvfParams { partitions: Some(2), seed: 1, bits: Some(1), codes_only: false }),
    ] {
        let mut col = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema()).unwrap();
        col.insert_with_payloads(&ids, &vectors, &docs).unwrap();
        let expect = |id: u64| {
            let d = &docs[(id - 10) as usize];
            if d.is_null() { json!({}) } else { d.clone() }
        };
        let all = |col: &Collection| {
            let res = col.search(&request("null", &[0.0, 0.0], 10, "")).unwrap();
            assert_eq!(res.points.len(), 5);
            for p in &res.points {
                assert_eq!(p.payload, Some(expect(p.id.as_num().unwrap())), "{index:?}");
            }
            // JSON carries the payload only when asked.
            let json = res.to_json();
            assert!(json.contains(r#""payload":{"#), "{json}");
            let mut plain = SearchRequest::nearest(vec![0.0, 0.0], 3);
            plain.with_payload = false;
            let res = col.search(&plain).unwrap();
            assert!(res.points.iter().all(|p| p.payload.is_none()));
            assert!(!res.to_json().contains("payload"));
        };
        all(&col);
        col.seal_with(index).unwrap();
        all(&col);
        let again = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
        again.verify().unwrap();
        all(&again);
        for id in ids {
            assert_eq!(again.payload(PointId::Num(id)), Some(expect(id)));
        }
        assert_eq!(again.payload(PointId::Num(99)), None);
    }
}

#[test]
fn collections_without_schema_store_no_payload() {
    let mut col = Collection::new(CollectionConfig { dim: 2, metric: Metric::L2 }).unwrap();
    col.insert(&[1, 2, 3], &[0.0, 0.0, 1.0, 0.0, 2.0, 0.0]).unwrap();
    // Empty payloads are accepted; fields are not.
    col.insert_with_payloads(&[4], &[3.0, 0.0], &[json!({})]).unwrap();
    assert!(matches!(
        col.insert_with_payloads(&[5], &[3.0, 0.0], &[json!({"tag": "a"})]),
        Err(Error::InvalidPayload { point: 0, .. })
    ));
    for seal in [false, true] {
        if seal {
            col.seal();
            assert!(col.segment(0).unwrap().schema().is_none());
            assert!(col.segment(0).unwrap().payload().is_none());
        }
        let res = col.search(&request(r#"{"must": [{"has_id": [2, 4, 77]}]}"#, &[0.0, 0.0], 10, "")).unwrap();
        assert_eq!(res.points.iter().map(|p| p.id.as_num().unwrap()).collect::<Vec<_>>(), [2, 4]);
        assert!(res.points.iter().all(|p| p.payload == Some(json!({}))));
        let e = col.search(&request(r#"{"must": [{"key": "tag", "match": {"value": "a"}}]}"#, &[0.0, 0.0], 10, ""));
        assert!(matches!(e, Err(Error::InvalidRequest(_))));
    }
    assert!(col.schema().is_none());
    assert!(
        Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, Schema::default())
            .unwrap()
            .schema()
            .is_none()
    );
    assert!(matches!(Collection::parse_schema(&json!({"a": "string"})), Err(Error::InvalidSchema(_))));
}

/// Selective filters (1%, 0.1%) on an IVF index: forced through the index (no exact scan) and
/// with the default planner, a filtered search returns `limit` results whenever that many
/// live points match — also after deleting most of them.
#[test]
fn selective_filters_always_return_limit_on_ivf() {
    let dim = 32;
    let n = 20_000;
    let data = clustered_vectors(11, n, dim, 64);
    let ids: Vec<u64> = (0..n as u64).collect();
    let payloads: Vec<Value> =
        ids.iter().map(|&i| json!({"bucket": i % 1000, "tag": format!("t{}", i % 100)})).collect();
    let mut col = Collection::with_schema(CollectionConfig { dim, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&ids, &data, &payloads).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: Some(128), seed: 2, bits: Some(1), codes_only: false }))
        .unwrap();
    let queries = clustered_vectors(12, 20, dim, 64);
    let mut model = Model::default();
    model.upsert(Metric::L2, &ids, &data, &payloads);
    let filters = [
        r#"{"must": [{"key": "bucket", "range": {"lt": 10}}]}"#,    // 1%
        r#"{"must": [{"key": "tag", "match": {"value": "t42"}}]}"#, // 1%
        r#"{"must": [{"key": "bucket", "match": {"value": 7}}]}"#,  // 0.1%
        r#"{"must": [{"key": "bucket", "match": {"any": [3, 999]}}], "must_not": [{"has_id": [3]}]}"#, // 0.1%
    ];
    for round in 0..2 {
        for forced in [true, false] {
            col.set_filter_exact_limit(forced.then_some(0));
            let mut hits = 0;
            let mut total = 0;
            for filter in filters {
                let f = Filter::from_json(filter).unwrap();
                let matching = model.matching(&f);
                for q in queries.chunks_exact(dim) {
                    for limit in [10, 50] {
                        let res = col.search(&request(filter, q, limit, "")).unwrap();
                        assert_eq!(res.stats.exact, !forced, "{filter}");
                        let what = format!("round {round} forced {forced} {filter}");
                        check_approx(&res, &matching, &model, Metric::L2, q, limit, &what);
                        let want = top_k(Metric::L2, &matching, q, limit);
                        hits += res.points.iter().filter(|p| want.iter().any(|w| p.id == w.0)).count();
                        total += want.len();
                    }
                }
            }
            let recall = hits as f64 / total as f64;
            eprintln!("round {round} forced {forced}: filtered recall {recall:.4}");
            // Forced through the index, 0.1% filters find their `limit` points but not always
            // the nearest (the default planner scans them exactly).
            assert!(recall >= if forced { 0.85 } else { 1.0 }, "recall {recall}");
        }
        // Delete 80% of every bucket below 10: 1% filters now match 0.2%.
        let del: Vec<u64> = ids.iter().copied().filter(|i| i % 1000 < 10 && i % 5 != 0).collect();
        col.delete(&nums(&del)).unwrap();
        model.delete(&del);
    }
}

/// Filters see a point's newest payload: an upsert replaces it, before and after sealing.
#[test]
fn upserts_replace_payloads() {
    let mut col = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&[1, 2], &[0.0, 0.0, 1.0, 1.0], &[json!({"tag": "old"}), json!({"tag": "old"})]).unwrap();
    col.seal();
    col.insert_with_payloads(&[1], &[0.0, 0.0], &[json!({"tag": "new"})]).unwrap();
    col.insert(&[2], &[1.0, 1.0]).unwrap();
    let ids = |col: &Collection, tag: &str| -> Vec<u64> {
        let f = format!(r#"{{"must": [{{"key": "tag", "match": {{"value": "{tag}"}}}}]}}"#);
        col.search(&request(&f, &[0.0, 0.0], 10, "")).unwrap().points.iter().map(|p| p.id.as_num().unwrap()).collect()
    };
    for _ in 0..2 {
        assert_eq!(ids(&col, "new"), [1]);
        assert!(ids(&col, "old").is_empty());
        assert_eq!(col.payload(PointId::Num(2)), Some(json!({})));
        col.seal();
    }
}

/// Recall@10 of filtered searches through the IVF index, against the exact answer: at 50% and
/// 10% (the planner's default choice above its exact-scan limit of 5%), and forced through the
/// index at 5%, 2% and 1%, where the search widens its probes for the filter.
#[test]
fn filtered_ivf_recall_at_every_selectivity() {
    let dim = 48;
    let n = 30_000;
    let data = clustered_vectors(31, n, dim, 64);
    let ids: Vec<u64> = (0..n as u64).collect();
    // `bucket` is uncorrelated with the clusters: a uniform 0..100.
    let mut rng = Rng::new(9);
    let payloads: Vec<Value> = ids.iter().map(|_| json!({"bucket": rng.below(100)})).collect();
    let mut col = Collection::with_schema(CollectionConfig { dim, metric: Metric::Cosine }, schema()).unwrap();
    col.insert_with_payloads(&ids, &data, &payloads).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams::default())).unwrap();
    let queries = clustered_vectors(32, 100, dim, 64);
    for percent in [50, 10, 5, 2, 1] {
        if percent == 5 {
            col.set_filter_exact_limit(Some(0));
        }
        let filter = format!(r#"{{"must": [{{"key": "bucket", "range": {{"lt": {percent}}}}}]}}"#);
        let (mut hits, mut total, mut estimated) = (0, 0, 0);
        for q in queries.chunks_exact(dim) {
            let approx = col.search(&request(&filter, q, 10, "")).unwrap();
            assert!(!approx.stats.exact, "{percent}%: expected the IVF path");
            assert_eq!(approx.points.len(), 10);
            let exact = col.search(&request(&filter, q, 10, r#", "params": {"exact": true}"#)).unwrap();
            hits += approx.points.iter().filter(|p| exact.points.iter().any(|e| e.id == p.id)).count();
            total += exact.points.len();
            estimated += approx.stats.estimated;
        }
        let recall = hits as f64 / total as f64;
        eprintln!("{percent}%: recall@10 {recall:.4}, {} codes estimated per query", estimated / 100);
        assert!(recall >= 0.95, "{percent}%: filtered recall@10 {recall} < 0.95");
    }
}

#[test]
fn matching_ids_of_no_filter_are_all_live_points() {
    let dim = 4;
    let mut col = Collection::with_schema(CollectionConfig { dim, metric: Metric::L2 }, schema()).unwrap();
    col.insert(&[9, 3, 7], &[0.5; 12]).unwrap();
    col.seal();
    col.insert(&[1, 3], &[0.25; 8]).unwrap();
    col.delete(&nums(&[7])).unwrap();
    assert_eq!(col.matching_ids(None).unwrap(), vec![1, 3, 9]);
    assert_eq!(col.matching_ids(Some(&Value::Null)).unwrap(), vec![1, 3, 9]);
    let bad = json!({"must": [{"key": "nope", "match": {"value": 1}}]});
    assert!(matches!(col.matching_ids(Some(&bad)), Err(Error::InvalidRequest(_))));
}

#[test]
fn extend_schema_adds_fields_and_keeps_points() {
    let dim = 8;
    let data = clustered_vectors(6, 400, dim, 4);
    let ids: Vec<u64> = (0..400).collect();
    let narrow = Schema::from_json(r#"{"tag": "keyword"}"#).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim, metric: Metric::Cosine }, narrow).unwrap();
    let docs: Vec<Value> = ids.iter().map(|i| json!({"tag": if i % 2 == 0 { "even" } else { "odd" }})).collect();
    col.insert_with_payloads(&ids[..300], &data[..300 * dim], &docs[..300]).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: Some(4), ..IvfParams::default() })).unwrap();
    col.insert_with_payloads(&ids[300..], &data[300 * dim..], &docs[300..]).unwrap();
    // A new field with a type clash is refused and changes nothing.
    let clash = Schema::from_json(r#"{"tag": "integer", "year": "integer"}"#).unwrap();
    assert!(matches!(col.extend_schema(clash), Err(Error::InvalidRequest(_))));
    let year = json!({"year": 2001});
    assert!(col.insert_with_payloads(&[1000], &data[..dim], std::slice::from_ref(&year)).is_err());
    let wide = Schema::from_json(r#"{"tag": "keyword", "year": "integer", "title": "text"}"#).unwrap();
    col.extend_schema(wide.clone()).unwrap();
    assert_eq!(col.schema(), Some(&wide));
    assert!(matches!(col.index_kind(), IndexKind::IvfRabitq(_)));
    assert_eq!(col.len(), 400);
    assert_eq!(col.payload(PointId::Num(5)), Some(json!({"tag": "odd"})));
    col.insert_with_payloads(&[1000], &data[..dim], &[json!({"year": 2001, "title": "new words"})]).unwrap();
    let even = json!({"must": [{"key": "tag", "match": {"value": "even"}}]});
    assert_eq!(col.matching_ids(Some(&even)).unwrap().len(), 200);
    let y = json!({"must": [{"key": "year", "range": {"gte": 2000}}]});
    assert_eq!(col.matching_ids(Some(&y)).unwrap(), vec![1000]);
    let res = col.search(&SearchRequest::from_json(r#"{"text": "words", "limit": 3}"#).unwrap()).unwrap();
    assert_eq!(res.points.iter().map(|p| p.id.as_num().unwrap()).collect::<Vec<_>>(), vec![1000]);
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}
