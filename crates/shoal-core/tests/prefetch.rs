//! Requests with `prefetch`: each prefetch's results equal the same search made alone with the
//! outer filters ANDed into its own; fused results equal the literal formulas over those lists
//! (bits); re-scored results equal an exact search over the prefetched points; thresholds,
//! nesting, payloads and bad shapes. Over a set of two IVF segments plus unsealed rows, for
//! every metric.

use serde_json::{Value, json};
use shoal_core::{
    Collection, CollectionConfig, Error, IndexKind, IvfParams, MAX_PREFETCH, MAX_PREFETCH_DEPTH, MAX_PREFETCH_TOTAL,
    Metric, PointId, Schema, SearchRequest,
};
use shoal_testkit::oracle::{Fused, fused};
use shoal_testkit::{Rng, clustered_vectors};

const DIM: usize = 8;
const WORDS: [&str; 8] = ["whale", "ocean", "salt", "river", "fish", "reef", "tide", "storm"];

/// 900 points: 400 in each of two IVF segments, 100 unsealed; point `i` has id [`id`]`(i)`
/// with a tag, a year and a title of three words.
fn collection(metric: Metric) -> Collection {
    let schema = Schema::from_json(r#"{"title": "text", "tag": "keyword", "year": "integer"}"#).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: DIM, metric }, schema).unwrap();
    let vectors = clustered_vectors(3, 900, DIM, 12);
    let mut rng = Rng::new(9);
    let docs: Vec<Value> = (0..900u64)
        .map(|i| {
            let title: Vec<&str> = (0..3).map(|_| WORDS[rng.below(8) as usize]).collect();
            let tag = ["a", "b", "c"][(i % 3) as usize];
            json!({"title": title.join(" "), "tag": tag, "year": 1990 + i % 40})
        })
        .collect();
    let ids: Vec<PointId> = (0..900).map(id).collect();
    let ivf = IndexKind::IvfRabitq(IvfParams { partitions: Some(8), ..IvfParams::default() });
    for (i, r) in [0..400, 400..800, 800..900].into_iter().enumerate() {
        col.upsert(&ids[r.clone()], &vectors[r.start * DIM..r.end * DIM], &docs[r]).unwrap();
        match i {
            0 => col.seal_with(ivf).unwrap(),
            1 => col.seal(),
            _ => {}
        }
    }
    assert_eq!(col.segment_count(), 2);
    col
}

/// Point `i`'s id: a UUID for every third point (ids of both kinds in every list fused and
/// re-scored), else `3 i`.
fn id(i: u64) -> PointId {
    if i % 3 == 1 {
        let mut u = [0u8; 16];
        u[8..].copy_from_slice(&(i * 7919).to_be_bytes());
        u[0] = (i % 5) as u8; // not in id order
        PointId::Uuid(u)
    } else {
        PointId::Num(i * 3)
    }
}

/// The tag of point `id` (`["a", "b", "c"][i % 3]`).
fn tag_of(id: PointId) -> u64 {
    match id {
        PointId::Num(n) => (n / 3) % 3,
        PointId::Uuid(_) => 1,
    }
}

fn req(v: Value) -> SearchRequest {
    SearchRequest::from_json(&v.to_string()).unwrap()
}

fn query(seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..DIM).map(|_| rng.below(2000) as f32 / 100.0 - 10.0).collect()
}

fn results(col: &Collection, r: &SearchRequest) -> Vec<(PointId, f32)> {
    col.search(r).unwrap().points.iter().map(|p| (p.id, p.score)).collect()
}

fn bits(v: &[(PointId, f32)]) -> Vec<(PointId, u32)> {
    v.iter().map(|&(id, s)| (id, s.to_bits())).collect()
}

/// `own` ANDed with the outer `filter`, as a request's prefetch sees it.
fn and(outer: &Value, own: Value) -> Value {
    json!({"must": [outer, own]})
}

#[test]
fn fused_prefetches_equal_the_formulas_over_each_search_alone() {
    for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
        let col = collection(metric);
        let root = json!({"must": [{"key": "year", "range": {"gte": 2000}}]});
        let tag_a = json!({"must": [{"key": "tag", "match": {"value": "a"}}]});
        let prefetches = json!([
            {"vector": query(1), "limit": 40, "filter": tag_a},
            {"text": "whale reef", "limit": 30},
            {"vector": query(2), "limit": 25, "params": {"exact": true}},
        ]);
        // Each list alone: the same search with the root filter ANDed in.
        let alone = [
            req(json!({"vector": query(1), "limit": 40, "filter": and(&root, tag_a.clone())})),
            req(json!({"text": "whale reef", "limit": 30, "filter": root})),
            req(json!({"vector": query(2), "limit": 25, "params": {"exact": true}, "filter": root})),
        ];
        let lists: Vec<Vec<(PointId, f32)>> = alone.iter().map(|r| results(&col, r)).collect();
        assert!(lists.iter().all(|l| l.len() >= 20), "{metric:?}: every list has results");
        let lower = [metric == Metric::L2, false, metric == Metric::L2];
        let rankings: Vec<(&[(PointId, f32)], bool)> = lists.iter().zip(lower).map(|(l, b)| (&l[..], b)).collect();
        let cases = [
            (json!({}), Fused::Rrf { k: 61, weights: None }),
            (
                json!({"fusion": "rrf", "rrf_k": 2, "weights": [1.0, 2.5, 0.0]}),
                Fused::Rrf { k: 2, weights: Some(&[1.0, 2.5, 0.0]) },
            ),
            (json!({"fusion": "dbsf"}), Fused::Dbsf),
        ];
        for (extra, fusion) in cases {
            let mut r = json!({"prefetch": prefetches, "filter": root, "limit": 15, "offset": 3});
            r.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let want: Vec<(PointId, f32)> = fused(fusion, &rankings).into_iter().skip(3).take(15).collect();
            assert_eq!(bits(&results(&col, &req(r.clone()))), bits(&want), "{metric:?} {extra}");
            // A threshold keeps the fused results scoring at least it.
            let t = want[7].1;
            r["score_threshold"] = json!(t);
            let kept: Vec<(PointId, f32)> = want.iter().copied().filter(|p| p.1 >= t).collect();
            assert_eq!(bits(&results(&col, &req(r))), bits(&kept), "{metric:?} {extra} threshold");
        }
    }
}

#[test]
fn vector_with_prefetch_rescores_the_prefetched_points_exactly() {
    for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
        let col = collection(metric);
        let tag_b = json!({"must": [{"key": "tag", "match": {"value": "b"}}]});
        let r = json!({
            "vector": query(3),
            "prefetch": [{"vector": query(4), "limit": 30}, {"text": "tide storm", "limit": 30}],
            "filter": tag_b,
            "limit": 12,
            "with_payload": true,
        });
        let got = col.search(&req(r)).unwrap();
        // The points the prefetches found, ranked by an exact search restricted to them.
        let mut union: Vec<PointId> = Vec::new();
        for p in [
            json!({"vector": query(4), "limit": 30, "filter": tag_b}),
            json!({"text": "tide storm", "limit": 30, "filter": tag_b}),
        ] {
            union.extend(results(&col, &req(p)).iter().map(|p| p.0));
        }
        let ids: Vec<Value> = union.iter().map(|id| json!(id)).collect();
        let exact = req(
            json!({"vector": query(3), "limit": 12, "params": {"exact": true}, "filter": {"must": [{"has_id": ids}]}, "with_payload": true}),
        );
        let want = col.search(&exact).unwrap();
        assert_eq!(got.points, want.points, "{metric:?}");
        assert_eq!(got.points.len(), 12);
        assert!(got.points.iter().all(|p| p.payload.as_ref().unwrap()["tag"] == "b"));
    }
}

#[test]
fn prefetches_nest_and_filters_reach_every_level() {
    let col = collection(Metric::L2);
    let outer = json!({"must": [{"key": "tag", "match": {"any": ["a", "b"]}}]});
    let mid = json!({"must_not": [{"key": "tag", "match": {"value": "a"}}]});
    let inner = json!({"must": [{"key": "year", "range": {"lt": 2015}}]});
    let leaf = |seed: u64, filter: Option<&Value>| {
        let mut l = json!({"vector": query(seed), "limit": 20});
        if let Some(f) = filter {
            l["filter"] = f.clone();
        }
        l
    };
    let r = json!({
        "filter": outer,
        "limit": 10,
        "prefetch": [
            {"filter": mid, "fusion": "dbsf", "limit": 30, "prefetch": [leaf(5, Some(&inner)), leaf(6, None)]},
            leaf(7, None),
        ],
    });
    // By hand: the inner lists under outer AND mid (AND inner), fused by DBSF to 30, then RRF.
    let om = and(&outer, mid.clone());
    let a = results(&col, &req(json!({"vector": query(5), "limit": 20, "filter": and(&om, inner)})));
    let b = results(&col, &req(json!({"vector": query(6), "limit": 20, "filter": om})));
    let c = results(&col, &req(json!({"vector": query(7), "limit": 20, "filter": outer})));
    let inner_fused: Vec<(PointId, f32)> = fused(Fused::Dbsf, &[(&a, true), (&b, true)]).into_iter().take(30).collect();
    let want: Vec<(PointId, f32)> =
        fused(Fused::Rrf { k: 61, weights: None }, &[(&inner_fused, false), (&c, true)]).into_iter().take(10).collect();
    assert_eq!(bits(&results(&col, &req(r))), bits(&want));
    assert!(want.iter().all(|p| tag_of(p.0) != 2));
    assert!(want.iter().any(|p| matches!(p.0, PointId::Uuid(_))) && want.iter().any(|p| p.0.as_num().is_some()));
}

#[test]
fn thresholds_and_hybrid_fusion_settings() {
    let col = collection(Metric::L2);
    // A vector search: squared distances up to the threshold.
    let all = results(&col, &req(json!({"vector": query(8), "limit": 20})));
    let t = all[9].1;
    let cut = results(&col, &req(json!({"vector": query(8), "limit": 20, "score_threshold": t})));
    assert_eq!(bits(&cut), bits(&all.iter().copied().filter(|p| p.1 <= t).collect::<Vec<_>>()));
    assert!(cut.len() >= 10 && cut.len() < 20);
    // `timeout_ms` bounds text rankings: a request without text needs no clock.
    let timed = results(&col, &req(json!({"vector": query(8), "limit": 20, "timeout_ms": 5})));
    assert_eq!(bits(&timed), bits(&all));
    let timed_text = req(json!({"prefetch": [{"text": "salt"}], "timeout_ms": 5}));
    assert!(matches!(col.search(&timed_text), Err(Error::Unsupported(_))), "text needs the host's clock");
    let mut into = Vec::new();
    col.search_into(&req(json!({"vector": query(8), "limit": 20, "score_threshold": t})), &mut into).unwrap();
    assert_eq!(into.iter().map(|p| (p.id, p.score)).collect::<Vec<_>>(), cut);
    // vector + text with DBSF, or RRF with k and weights: the formulas over the two rankings
    // (each to depth 100).
    let v = results(&col, &req(json!({"vector": query(8), "limit": 100})));
    let x = results(&col, &req(json!({"text": "salt fish", "limit": 100})));
    for (extra, fusion) in [
        (json!({"fusion": "dbsf"}), Fused::Dbsf),
        (json!({"rrf_k": 5, "weights": [0.5, 3]}), Fused::Rrf { k: 5, weights: Some(&[0.5, 3.0]) }),
    ] {
        let mut r = json!({"vector": query(8), "text": "salt fish", "limit": 10});
        r.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let want: Vec<(PointId, f32)> = fused(fusion, &[(&v, true), (&x, false)]).into_iter().take(10).collect();
        assert_eq!(bits(&results(&col, &req(r))), bits(&want), "{extra}");
    }
}

#[test]
fn bad_prefetch_requests_are_typed_errors() {
    let col = collection(Metric::Dot);
    let v = query(1);
    let leaf = json!({"vector": v});
    let deep = (0..5).fold(leaf.clone(), |inner, _| json!({"prefetch": [inner]}));
    let parse_errors = [
        (
            json!({"prefetch": [{"vector": v, "offset": 1}]}),
            "offset, with_payload and timeout_ms are the top request's",
        ),
        (json!({"prefetch": [{"vector": v, "with_payload": true}]}), "offset, with_payload and timeout_ms are the top"),
        (json!({"prefetch": [{"vector": v, "timeout_ms": 5}]}), "offset, with_payload and timeout_ms are the top"),
        (json!({"prefetch": leaf}), "prefetch"),
        (json!({"prefetch": vec![leaf.clone(); 17]}), &format!("at most {MAX_PREFETCH} per level")),
        (deep, &format!("nested at most {MAX_PREFETCH_DEPTH} deep")),
        (json!({"prefetch": [leaf], "rrf_k": 0}), "rrf_k must be at least 1"),
        (json!({"prefetch": [leaf], "fusion": "dbsf", "rrf_k": 3}), "rrf_k and weights go with fusion \"rrf\""),
        (json!({"prefetch": [leaf], "fusion": "max"}), "fusion must be"),
        (json!({"prefetch": [{"vector": v, "limit": 0}]}), "limit must be"),
        (json!({"prefetch": [leaf], "weights": ["x"]}), "weights"),
    ];
    for (body, message) in parse_errors {
        match SearchRequest::from_json(&body.to_string()) {
            Err(Error::InvalidRequest(m)) => assert!(m.contains(message), "{body}: {m}"),
            other => panic!("{body}: {other:?}"),
        }
    }
    let search_errors = [
        (json!({"prefetch": [leaf], "text": "whale"}), "`text` and `prefetch`"),
        (json!({"prefetch": [leaf], "vector": v, "fusion": "rrf"}), "re-scores"),
        (json!({"prefetch": [leaf, leaf], "weights": [1]}), "one per ranking fused (2)"),
        (json!({"prefetch": [leaf, leaf], "fusion": "weighted"}), "\"weighted\" fuses `vector` and `text`"),
        (json!({"vector": v, "fusion": "dbsf"}), "fusion needs both"),
        (json!({"vector": v, "text": "whale", "weights": [1, 2, 3]}), "one per ranking fused (2)"),
        (json!({"prefetch": [{"vector": [1.0, 2.0]}]}), "dimension"),
        (json!({"prefetch": [{"text": "x", "filter": {"must": [{"key": "nope", "match": {"value": 1}}]}}]}), "nope"),
        (json!({"limit": 3}), "give `vector`, `sparse`, `text`, `vector` and `text`, or `prefetch`"),
    ];
    for (body, message) in search_errors {
        let r = SearchRequest::from_json(&body.to_string()).unwrap();
        let e = col.search(&r).unwrap_err();
        assert!(format!("{e}").contains(message), "{body}: {e}");
        assert!(matches!(e, Error::InvalidRequest(_) | Error::DimensionMismatch { .. }), "{body}: {e:?}");
    }
    // The limits' edges: 4 deep, 16 at a level, 64 in all are taken; one more of each is not.
    let chain = |depth: usize| (0..depth).fold(leaf.clone(), |inner, _| json!({"prefetch": [inner], "limit": 5}));
    let wide = |n: usize| json!({"prefetch": vec![leaf.clone(); n], "limit": 5});
    let total =
        |n: usize| json!({"prefetch": vec![json!({"prefetch": vec![leaf.clone(); 15], "limit": 5}); n], "limit": 5});
    for (body, ok) in [(chain(4), true), (chain(5), false), (wide(16), true), (wide(17), false), (total(4), true)] {
        let parsed = SearchRequest::from_json(&body.to_string());
        assert_eq!(parsed.is_ok(), ok, "{body}");
        if ok {
            col.search(&parsed.unwrap()).unwrap();
        }
    }
    // 4 x (1 + 15) = 64 prefetches in all; 65 is one too many.
    let mut over = total(4);
    over["prefetch"].as_array_mut().unwrap().push(leaf.clone());
    match SearchRequest::from_json(&over.to_string()) {
        Err(Error::InvalidRequest(m)) => {
            assert!(m.contains(&format!("at most {MAX_PREFETCH_TOTAL} in a request")), "{m}")
        }
        other => panic!("{other:?}"),
    }
    // search_into is the vector search alone.
    for body in [json!({"prefetch": [leaf]}), json!({"vector": v, "rrf_k": 3}), json!({"vector": v, "weights": [1, 1]})]
    {
        let r = SearchRequest::from_json(&body.to_string()).unwrap();
        assert!(matches!(col.search_into(&r, &mut Vec::new()), Err(Error::InvalidRequest(_))), "{body}");
    }
}
