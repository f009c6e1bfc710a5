//! Full-text and hybrid search through the collection: the text fields of payloads indexed in
//! the mutable and the sealed segment, BM25 results equal to the standalone text index's,
//! filters and deletes respected, reciprocal rank fusion, deadlines, and bad requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, PointId, Schema, SearchRequest};
use shoal_testkit::{Rng, clustered_vectors};
use shoal_text::{IndexBuilder, Query, SearchParams, TextIndex};

const WORDS: [&str; 24] = [
    "whale", "ocean", "salt", "river", "fish", "shoal", "reef", "coral", "tide", "storm", "harbor", "ship", "net",
    "deep", "blue", "current", "wave", "sand", "shell", "kelp", "gull", "moon", "night", "light",
];

fn schema() -> Schema {
    Schema::from_json(r#"{"title": "text", "body": "text", "tag": "keyword", "year": "integer"}"#).unwrap()
}

/// A payload with a title and a body of Zipf-ish words (low indexes common).
fn doc(rng: &mut Rng, i: u64) -> Value {
    let mut word = || {
        let r = rng.below(WORDS.len() as u64 * WORDS.len() as u64);
        WORDS[(r as f64).sqrt() as usize % WORDS.len()]
    };
    let title: Vec<&str> = (0..3).map(|_| word()).collect();
    let body: Vec<&str> = (0..(5 + i % 20)).map(|_| word()).collect();
    if i.is_multiple_of(31) {
        return json!({"tag": "none", "year": 2000});
    }
    let tag = ["a", "b", "c"][(i % 3) as usize];
    json!({"title": title.join(" "), "body": body.join(" "), "tag": tag, "year": 1990 + i % 30})
}

fn text_req(text: &str, limit: usize, extra: &str) -> SearchRequest {
    SearchRequest::from_json(&format!(r#"{{"text": {}, "limit": {limit}{extra}}}"#, json!(text))).unwrap()
}

struct Data {
    ids: Vec<u64>,
    vectors: Vec<f32>,
    docs: Vec<Value>,
}

fn data(n: usize, dim: usize) -> Data {
    let mut rng = Rng::new(5);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
    let docs = ids.iter().map(|&i| doc(&mut rng, i)).collect();
    Data { ids, vectors: clustered_vectors(8, n, dim, 16), docs }
}

/// The standalone index over the same documents (title then body: the collection joins its
/// text fields in name order, `body` before `title`).
fn standalone(docs: &[Value]) -> shoal_text::Sections {
    let mut b = IndexBuilder::new(Default::default());
    for (i, d) in docs.iter().enumerate() {
        let mut text = String::new();
        for f in ["body", "title"] {
            if let Some(s) = d[f].as_str() {
                text.push_str(s);
                text.push('\n');
            }
        }
        b.add(i as u32, &[text.as_str()]).unwrap();
    }
    b.finish().unwrap()
}

const QUERIES: [&str; 6] = ["whale", "ocean salt", "+river fish", "\"moon night\"", "reef -coral", "storm harbor ship"];

#[test]
fn text_search_equals_the_standalone_index_before_and_after_sealing() {
    let d = data(2000, 8);
    let s = standalone(&d.docs);
    let index = TextIndex::open(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: 8, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&d.ids, &d.vectors, &d.docs).unwrap();
    for round in 0..3 {
        for q in QUERIES {
            let want =
                index.search(0, &Query::parse(&index.analyzer(), q), &SearchParams { k: 20, ..Default::default() });
            let want: Vec<(u64, f32)> = want.unwrap().hits.iter().map(|h| (d.ids[h.doc as usize], h.score)).collect();
            assert!(!want.is_empty(), "{q}");
            let res = col.search(&text_req(q, 20, "")).unwrap();
            let got: Vec<(u64, f32)> = res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score)).collect();
            if round < 2 {
                assert_eq!(got, want, "round {round}: {q}");
            } else {
                // Rows permuted by the IVF build: equal scores tie-break by the new row order.
                // Same scores; the same ids in every tie group but the last (cut at k).
                let scores = |v: &[(u64, f32)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
                assert_eq!(scores(&got), scores(&want), "{q}");
                let last = want.last().unwrap().1;
                let groups = |v: &[(u64, f32)]| {
                    let mut v: Vec<(u64, u32)> =
                        v.iter().filter(|x| x.1 != last).map(|x| (x.0, x.1.to_bits())).collect();
                    v.sort_by_key(|x| (std::cmp::Reverse(x.1), x.0));
                    v
                };
                assert_eq!(groups(&got), groups(&want), "{q}");
            }
            assert!(!res.partial);
            // offset: the same ranking, shifted.
            let res = col.search(&text_req(q, 5, r#", "offset": 3"#)).unwrap();
            let full = col.search(&text_req(q, 20, "")).unwrap();
            assert_eq!(res.points, full.points[3..8.min(full.points.len())], "{q}");
            if round < 2 {
                assert_eq!(
                    res.points.iter().map(|p| p.id.as_num().unwrap()).collect::<Vec<_>>(),
                    want[3..8.min(want.len())].iter().map(|w| w.0).collect::<Vec<_>>()
                );
            }
        }
        // Round 0: mutable; round 1: sealed flat; round 2: sealed with an IVF index (rows
        // permuted by partition) and through bytes.
        match round {
            0 => col.seal(),
            _ => {
                col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: Some(8), ..IvfParams::default() })).unwrap();
                col = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
            }
        }
    }
}

#[test]
fn filters_deletes_and_upserts_apply_to_text_results() {
    let d = data(1500, 8);
    let mut col = Collection::with_schema(CollectionConfig { dim: 8, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&d.ids[..1000], &d.vectors[..1000 * 8], &d.docs[..1000]).unwrap();
    col.seal();
    col.insert_with_payloads(&d.ids[1000..], &d.vectors[1000 * 8..], &d.docs[1000..]).unwrap();
    let filter = r#", "filter": {"must": [{"key": "tag", "match": {"value": "a"}}], "must_not": [{"key": "year", "range": {"lt": 1995}}]}"#;
    for q in QUERIES {
        let all = col.search(&text_req(q, 10_000, r#", "with_payload": true"#)).unwrap();
        let want: Vec<u64> = all
            .points
            .iter()
            .filter(|p| {
                let doc = p.payload.as_ref().unwrap();
                doc["tag"] == "a" && doc["year"].as_i64().unwrap() >= 1995
            })
            .map(|p| p.id.as_num().unwrap())
            .take(10)
            .collect();
        let got = col.search(&text_req(q, 10, filter)).unwrap();
        assert_eq!(got.points.iter().map(|p| p.id.as_num().unwrap()).collect::<Vec<_>>(), want, "{q}");
    }
    // Delete every hit of "whale" in both segments; upsert one point with new text.
    let hits: Vec<u64> =
        col.search(&text_req("whale", 10_000, "")).unwrap().points.iter().map(|p| p.id.as_num().unwrap()).collect();
    assert!(hits.iter().any(|&id| id < d.ids[1000]) && hits.iter().any(|&id| id >= d.ids[1000]));
    col.delete(&nums(&hits[1..])).unwrap();
    col.insert_with_payloads(&[hits[0]], &[0.0; 8], &[json!({"title": "zebra"})]).unwrap();
    for _ in 0..2 {
        assert!(col.search(&text_req("whale", 10, "")).unwrap().points.is_empty());
        let z = col.search(&text_req("zebra", 10, r#", "with_payload": true"#)).unwrap();
        assert_eq!(z.points.len(), 1);
        assert_eq!(z.points[0].id, hits[0]);
        assert_eq!(z.points[0].payload, Some(json!({"title": "zebra"})));
        col.seal();
    }
}

#[test]
fn hybrid_requests_fuse_the_vector_and_text_rankings() {
    let d = data(3000, 16);
    let mut col = Collection::with_schema(CollectionConfig { dim: 16, metric: Metric::Cosine }, schema()).unwrap();
    col.insert_with_payloads(&d.ids, &d.vectors, &d.docs).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams::default())).unwrap();
    let q = &d.vectors[16 * 77..16 * 78];
    let vector = json!(q).to_string();
    for text in ["whale ocean", "+storm reef"] {
        for filter in ["", r#", "filter": {"must": [{"key": "tag", "match": {"any": ["a", "b"]}}]}"#] {
            let v = SearchRequest::from_json(&format!(r#"{{"vector": {vector}, "limit": 100{filter}}}"#)).unwrap();
            let v: Vec<u64> = col.search(&v).unwrap().points.iter().map(|p| p.id.as_num().unwrap()).collect();
            let t: Vec<u64> = col
                .search(&text_req(text, 100, filter))
                .unwrap()
                .points
                .iter()
                .map(|p| p.id.as_num().unwrap())
                .collect();
            let mut want: Vec<(u64, f32, usize)> = Vec::new();
            for id in v.iter().chain(&t) {
                if want.iter().any(|w| w.0 == *id) {
                    continue;
                }
                let (rv, rt) = (v.iter().position(|x| x == id), t.iter().position(|x| x == id));
                let score = rv.map_or(0.0, |r| 1.0 / (60.0 + (r + 1) as f32))
                    + rt.map_or(0.0, |r| 1.0 / (60.0 + (r + 1) as f32));
                want.push((*id, score, rv.unwrap_or(usize::MAX).min(rt.unwrap_or(usize::MAX))));
            }
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
            let req = SearchRequest::from_json(&format!(
                r#"{{"vector": {vector}, "text": {}, "limit": 10, "fusion": "rrf"{filter}}}"#,
                json!(text)
            ))
            .unwrap();
            let got = col.search(&req).unwrap();
            let got: Vec<(u64, f32)> = got.points.iter().map(|p| (p.id.as_num().unwrap(), p.score)).collect();
            let want: Vec<(u64, f32)> = want.iter().take(10).map(|w| (w.0, w.1)).collect();
            assert_eq!(got, want, "{text} {filter}");
            // The query's own point is first in the vector ranking; if the text ranking holds it
            // too, it leads the fused ranking.
            assert_eq!(v[0], d.ids[77]);
        }
    }
}

#[test]
fn a_deadline_returns_partial_results() {
    let d = data(20_000, 4);
    let mut col = Collection::with_schema(CollectionConfig { dim: 4, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&d.ids, &d.vectors, &d.docs).unwrap();
    col.seal();
    let req = text_req("whale ocean salt river fish", 10, r#", "timeout_ms": 2"#);
    assert!(matches!(col.search(&req), Err(Error::Unsupported(_))), "no clock: timeout_ms is refused");
    // A clock that advances 100 µs per reading: the deadline fires after ~20 readings.
    let now = Arc::new(AtomicU64::new(0));
    let c = now.clone();
    col.set_clock(Box::new(move || c.fetch_add(100, Ordering::Relaxed)));
    let res = col.search(&req).unwrap();
    assert!(res.partial, "the deadline fired");
    assert!(!res.stats.exact);
    let full = col.search(&text_req("whale ocean salt river fish", 10, "")).unwrap();
    assert!(!full.partial && full.points.len() == 10);
    // A generous budget: the same results as without one.
    let res = col.search(&text_req("whale ocean salt river fish", 10, r#", "timeout_ms": 1000000"#)).unwrap();
    assert!(!res.partial);
    assert_eq!(res.points, full.points);
}

#[test]
fn bad_text_requests_are_clear_errors() {
    let mut plain = Collection::new(CollectionConfig { dim: 2, metric: Metric::L2 }).unwrap();
    plain.insert(&[1], &[0.0, 1.0]).unwrap();
    let err = plain.search(&text_req("whale", 10, "")).unwrap_err();
    assert!(err.to_string().contains("no text fields"), "{err}");
    let bad = [
        (r#"{"vector": [0, 1], "text": "a", "fusion": "max"}"#, "fusion must be"),
        (r#"{"text": "a", "fusion": "rrf"}"#, "fusion needs both"),
        (r#"{"text": "a", "timeout_ms": 0}"#, "timeout_ms"),
        (r#"{"limit": 3}"#, ""),
    ];
    for (json, needle) in bad {
        let err = SearchRequest::from_json(json).and_then(|r| plain.search(&r)).unwrap_err();
        assert!(err.to_string().contains(needle), "{json}: {err}");
    }
    let long = "w ".repeat(10_000);
    assert!(SearchRequest::from_json(&format!(r#"{{"text": "{long}"}}"#)).is_err());
    // An empty or all-punctuation query matches nothing.
    let mut col = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&[1], &[0.0, 1.0], &[json!({"title": "whale"})]).unwrap();
    assert!(col.search(&text_req("  ... ", 10, "")).unwrap().points.is_empty());
    assert_eq!(col.search(&text_req("WHALE", 10, "")).unwrap().points.len(), 1);
}

#[test]
fn text_en_fields_match_by_english_stems_everywhere() {
    let docs = [
        json!({"title": "Whales running", "body": "the whale ran"}),
        json!({"title": "a whale", "body": "it runs"}),
        json!({"title": "generously salted", "tag": "x"}),
        json!({"title": "runner"}),
    ];
    let ids = [10u64, 11, 12, 13];
    let vectors = [0.0f32, 1.0, 1.0, 0.0, 0.5, 0.5, 0.2, 0.8];
    let config = CollectionConfig { dim: 2, metric: Metric::L2 };
    let stemmed = Schema::from_json(r#"{"title": "text_en", "body": "text_en", "tag": "keyword"}"#).unwrap();
    assert!(stemmed.stems_english() && !schema().stems_english());
    let mut col = Collection::with_schema(config, stemmed).unwrap();
    col.insert_with_payloads(&ids, &vectors, &docs).unwrap();
    let mut plain = Collection::with_schema(config, schema()).unwrap();
    plain.insert_with_payloads(&ids, &vectors, &docs).unwrap();
    let found = |c: &Collection, q: &str| {
        let mut v: Vec<u64> =
            c.search(&text_req(q, 10, "")).unwrap().points.iter().map(|p| p.id.as_num().unwrap()).collect();
        v.sort_unstable();
        v
    };
    for round in 0..3 {
        // "runs" and "running" share the stem "run"; "ran" and "runner" do not (Porter2).
        assert_eq!(found(&col, "runs"), [10, 11], "round {round}");
        assert_eq!(found(&col, "whale"), [10, 11]);
        assert_eq!(found(&col, "\"whale running\""), [10], "phrases match stems in order");
        assert_eq!(found(&col, "salt generous"), [12]);
        // With plain `text` fields only exact words match.
        assert_eq!(found(&plain, "runs"), [11]);
        assert_eq!(found(&plain, "salt generous"), Vec::<u64>::new());
        // The payload keeps the original text.
        let res = col.search(&text_req("runs", 10, r#", "with_payload": true"#)).unwrap();
        assert!(res.points.iter().any(|p| p.payload.as_ref().unwrap()["title"] == "Whales running"));
        // Round 0: mutable; 1: sealed; 2: through bytes.
        match round {
            0 => {
                col.seal();
                plain.seal();
            }
            _ => {
                col = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
                plain = Collection::from_bytes(plain.to_bytes().unwrap()).unwrap();
            }
        }
    }
    assert!(col.schema().unwrap().stems_english(), "the schema survives the byte round trip");
    // text and text_en share one index: mixing them is a typed error naming the field.
    let err = Schema::from_json(r#"{"title": "text", "body": "text_en"}"#).unwrap_err();
    assert!(err.to_string().contains("schema.title") && err.to_string().contains("text_en"), "{err}");
}

#[test]
fn weighted_fusion_and_bm25_parameters() {
    let d = data(3000, 16);
    let mut col = Collection::with_schema(CollectionConfig { dim: 16, metric: Metric::L2 }, schema()).unwrap();
    col.insert_with_payloads(&d.ids, &d.vectors, &d.docs).unwrap();
    col.seal();
    let q = &d.vectors[16 * 77..16 * 78];
    let vector = json!(q).to_string();
    let scored = |json: String| -> Vec<(u64, f32)> {
        let req = SearchRequest::from_json(&json).unwrap();
        col.search(&req).unwrap().points.iter().map(|p| (p.id.as_num().unwrap(), p.score)).collect()
    };
    let v = scored(format!(r#"{{"vector": {vector}, "limit": 100}}"#));
    let t = scored(r#"{"text": "whale ocean", "limit": 100}"#.to_string());
    for alpha in [0.0f32, 0.3, 1.0] {
        // The naive weighted sum: each ranking min-max scaled (squared distances inverted).
        let scale = |list: &[(u64, f32)], id: u64, lower_better: bool| -> f32 {
            let (lo, hi) = list
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(f64::from(x.1)), h.max(f64::from(x.1))));
            list.iter().find(|x| x.0 == id).map_or(0.0, |x| {
                let s = f64::from(x.1);
                if hi <= lo {
                    1.0
                } else if lower_better {
                    ((hi - s) / (hi - lo)) as f32
                } else {
                    ((s - lo) / (hi - lo)) as f32
                }
            })
        };
        let mut want: Vec<(u64, f32, usize)> = Vec::new();
        for &(id, _) in v.iter().chain(&t) {
            if want.iter().any(|w| w.0 == id) {
                continue;
            }
            let (in_v, in_t) = (v.iter().position(|x| x.0 == id), t.iter().position(|x| x.0 == id));
            let mut score = 0.0f32;
            if in_v.is_some() {
                score += alpha * scale(&v, id, true);
            }
            if in_t.is_some() {
                score += (1.0 - alpha) * scale(&t, id, false);
            }
            want.push((id, score, in_v.unwrap_or(usize::MAX).min(in_t.unwrap_or(usize::MAX))));
        }
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
        let got = scored(format!(
            r#"{{"vector": {vector}, "text": "whale ocean", "limit": 10, "fusion": "weighted", "alpha": {alpha}}}"#
        ));
        let want: Vec<(u64, f32)> = want.iter().take(10).map(|w| (w.0, w.1)).collect();
        assert_eq!(got, want, "alpha {alpha}");
    }
    // alpha 1: the vector ranking's order; the query's own point first with score 1.
    let got = scored(format!(r#"{{"vector": {vector}, "text": "whale", "fusion": "weighted", "alpha": 1}}"#));
    assert_eq!(got[0], (d.ids[77], 1.0));
    // BM25 parameters change the text scores (b = 0: no length normalisation) and are checked.
    let default = scored(r#"{"text": "whale", "limit": 5}"#.to_string());
    let flat = scored(r#"{"text": "whale", "limit": 5, "bm25_k1": 1.2, "bm25_b": 0.0}"#.to_string());
    assert_ne!(default, flat);
    assert_eq!(default, scored(r#"{"text": "whale", "limit": 5, "bm25_k1": 1.2, "bm25_b": 0.75}"#.to_string()));
    for (json, needle) in [
        (r#"{"text": "a", "bm25_k1": -1}"#, "bm25_k1"),
        (r#"{"text": "a", "bm25_k1": 3e38}"#, "bm25_k1"),
        (r#"{"text": "a", "bm25_b": 2}"#, "bm25_b"),
        (r#"{"text": "a", "bm25": {"k1": 1}}"#, "unknown field"),
        (r#"{"text": "a", "vector": [0], "fusion": "rrf", "alpha": 0.5}"#, "alpha goes with"),
        (r#"{"text": "a", "vector": [0], "fusion": "weighted", "alpha": 1.5}"#, "alpha must be"),
    ] {
        let err = SearchRequest::from_json(json).unwrap_err();
        assert!(err.to_string().contains(needle), "{json}: {err}");
    }
}

#[test]
fn weighted_fusion_scores_stay_numbers_when_distances_overflow() {
    // A squared L2 distance past f32::MAX is +inf; scaling it must not make NaN (whose sign,
    // and so its place in the order, differs between CPUs).
    let mut col = Collection::with_schema(CollectionConfig { dim: 2, metric: Metric::L2 }, schema()).unwrap();
    let docs = [json!({"title": "whale"}), json!({"title": "whale reef"}), json!({"title": "reef"})];
    col.insert_with_payloads(&[1, 2, 3], &[3e19, 0.0, 0.0, 1.0, 1.0, 0.0], &docs).unwrap();
    for round in 0..2 {
        let req = SearchRequest::from_json(r#"{"vector": [0, 0], "text": "whale", "fusion": "weighted"}"#).unwrap();
        let res = col.search(&req).unwrap();
        assert_eq!(res.points.len(), 3, "round {round}");
        assert!(res.points.iter().all(|p| !p.score.is_nan()), "round {round}: {:?}", res.points);
        // The overflowing point is the vector ranking's worst: only its text term counts.
        assert_eq!(res.points.iter().find(|p| p.id == 1).unwrap().score, 0.5);
        col.seal();
    }
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}
