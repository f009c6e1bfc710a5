//! Filters over a set of format-2 segments read by byte ranges: every plan of the local planner
//! (the IVF search checking each candidate, the IVF search over the matching set, the exact
//! scan of a few matches; codes-only segments ranked by their estimates) answers as the same
//! set read whole — ids, score bits, payloads, statistics — with text and hybrid requests too;
//! a filter costs one wave the first time and none once its fields are kept; a damaged filter
//! block is an error, never an answer.

mod remote_common;

use remote_common::*;
use serde_json::{Value, json};
use shoal_core::remote::{RangeCache, RemoteSegment, Step};
use shoal_core::{AlignedBytes, Collection, CollectionConfig, IndexKind, IvfParams, Metric};
use shoal_testkit::{clustered_vectors, publish_with_twins as publish};

/// `segments` segments of `per` points with a tag (keyword, 4 values), `n` (integer, the
/// point's number in its segment), `odd` (bool), `title` (text); every 23rd point without a
/// payload. Segment `codes` keeps only its codes.
fn collection(segments: usize, per: usize, codes: Option<usize>) -> Collection {
    collection_with(segments, per, codes, true)
}

/// [`collection`], without the text field when `text` is false.
fn collection_with(segments: usize, per: usize, codes: Option<usize>, text: bool) -> Collection {
    let schema = if text {
        json!({"title": "text", "tag": "keyword", "n": "integer", "odd": "bool"})
    } else {
        json!({"tag": "keyword", "n": "integer", "odd": "bool"})
    };
    let config = CollectionConfig { dim: DIM, metric: Metric::L2 };
    let mut col = Collection::with_schema(config, Collection::parse_schema(&schema).unwrap()).unwrap();
    let words = words();
    let mut rng = Rng(99);
    for s in 0..segments {
        let data = clustered_vectors(40 + s as u64, per, DIM, 16);
        let ids: Vec<u64> = (0..per).map(|i| (s * per + i) as u64 * 3 + 1).collect();
        let payloads: Vec<Value> = (0..per)
            .map(|i| {
                if i % 23 == 7 {
                    return Value::Null;
                }
                let title: Vec<&str> = (0..1 + rng.next() % 4).map(|_| rng.word(&words)).collect();
                let mut doc = json!({"tag": format!("t{}", i % 4), "n": i, "odd": i % 2 == 1});
                if text {
                    doc["title"] = json!(title.join(" "));
                }
                doc
            })
            .collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        let params =
            IvfParams { partitions: Some(24), seed: 4, bits: Some(2 + s as u32 % 3), codes_only: codes == Some(s) };
        col.set_index_kind(IndexKind::IvfRabitq(params)).unwrap();
        col.seal();
    }
    assert_eq!(col.segments().len(), segments);
    col
}

/// Filters from every plan: with 3,000 rows a segment and `limit` 10, the exact-scan limit is
/// 640 rows.
fn filters() -> Vec<(&'static str, Value)> {
    let key = |k: &str, m: Value| json!({"key": k, "match": m});
    vec![
        // ~730 rows a segment, proven by the value -> rows counts: IVF, checking each row.
        ("checked", json!({"must": [key("tag", json!({"value": "t1"}))]})),
        ("checked range", json!({"must": [{"key": "n", "range": {"gte": 500}}]})),
        ("checked bool", json!({"must": [key("odd", json!({"value": true}))]})),
        // ~960 rows, not proven (an intersection): the IVF search over the matching set.
        ("set", json!({"must": [key("tag", json!({"any": ["t1", "t2"]})), {"key": "n", "range": {"lt": 2000}}]})),
        (
            "set should",
            json!({"should": [key("tag", json!({"value": "t3"})), {"key": "n", "range": {"lt": 300}}], "must_not": [{"key": "n", "range": {"gte": 1500, "lt": 1600}}]}),
        ),
        // A few matches: the exact scan.
        ("exact", json!({"must": [{"key": "n", "range": {"lt": 90}}]})),
        (
            "exact and",
            json!({"must": [key("tag", json!({"value": "t2"})), {"key": "n", "range": {"gte": 2500, "lt": 2700}}]}),
        ),
        ("exact empty", json!({"must": [{"is_empty": {"key": "tag"}}]})),
        ("none", json!({"must": [key("tag", json!({"value": "nosuch"}))]})),
        ("all but", json!({"must_not": [key("tag", json!({"value": "t0"}))]})),
    ]
}

#[test]
fn filtered_vector_text_and_hybrid_requests_answer_as_the_local_set() {
    let col = collection(3, 3000, None);
    let p = publish(&col);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
    assert!([33, 34, 35, 39].iter().all(|&k| head.entry(k).is_some()), "a filter index");
    let (set, opened) = open_set(&p);
    let w = words();
    let queries = clustered_vectors(77, 6, DIM, 16);
    let (mut exact, mut approximate) = (0, 0);
    let mut waves_seen: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, q) in queries.chunks_exact(DIM).enumerate() {
        for (name, filter) in filters() {
            let text = format!("{} {}", w[i % 8], w[8 + i * 7 % 390]);
            let cases = [
                ("vector", json!({"limit": 10, "filter": filter}), true),
                ("vector+payload", json!({"limit": 5, "offset": 2, "with_payload": true, "filter": filter}), true),
                ("vector nprobe", json!({"limit": 10, "params": {"nprobe": 3}, "filter": filter}), true),
                ("text", json!({"text": text, "limit": 10, "filter": filter}), false),
                ("hybrid", json!({"text": text, "limit": 10, "filter": filter}), true),
            ];
            for (kind, body, with_vector) in cases {
                let req = request(body.clone(), with_vector.then_some(q));
                let want = p.local.search(&req).unwrap();
                let mut cold = opened.clone();
                let (got, waves) = drive(&set, &p.files, &mut cold, &req).unwrap();
                assert_eq!(seen(&got), seen(&want), "{name} {kind}: {body}");
                assert_eq!(got.stats, want.stats, "{name} {kind}: {body}");
                if kind == "vector" {
                    if want.stats.exact { exact += 1 } else { approximate += 1 }
                }
                waves_seen.entry(format!("{name} {kind}")).or_default().push(waves);
                // Warm: nothing more to fetch.
                let (again, waves) = drive(&set, &p.files, &mut cold, &req).unwrap();
                assert_eq!((seen(&again), waves), (seen(&want), 0), "{name} {kind} warm");
            }
        }
    }
    eprintln!("cold waves: {waves_seen:?}");
    assert!(exact > 0 && approximate > 0, "both exact scans and IVF searches: {exact} / {approximate}");
    // A vector request with a filter: the filter's fields, the partitions, the re-ranking's
    // vectors; the exact scan: the fields, then its rows' vectors with their CRCs (ids in
    // memory: a text segment's).
    for (name, waves) in &waves_seen {
        if name.ends_with(" vector") {
            let most = if name.starts_with("exact") || name.starts_with("none") { 2 } else { 3 };
            assert!(waves.iter().all(|&w| w <= most), "{name}: {waves:?}");
        }
    }
}

#[test]
fn without_text_the_exact_scan_reads_its_results_ids_from_their_partitions() {
    let col = collection_with(2, 3000, None, false);
    let p = publish(&col);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
    assert!([69, 70].iter().all(|&k| head.entry(k).is_some()) && head.entry(53).is_none(), "vector CRCs, no text");
    let (set, opened) = open_set(&p);
    let queries = clustered_vectors(79, 4, DIM, 16);
    for q in queries.chunks_exact(DIM) {
        for (name, filter) in filters() {
            for body in [
                json!({"limit": 10, "filter": filter}),
                json!({"limit": 4, "offset": 3, "with_payload": true, "filter": filter}),
            ] {
                let req = request(body.clone(), Some(q));
                let want = p.local.search(&req).unwrap();
                let (got, waves) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
                assert_eq!((seen(&got), &got.stats), (seen(&want), &want.stats), "{name}: {body}");
                if name.starts_with("exact") && body.get("with_payload").is_none() {
                    assert_eq!(waves, 3, "{name}: the fields, the vectors and CRCs, the ids");
                }
            }
        }
    }
}

#[test]
fn a_codes_only_set_filters_as_the_local_one() {
    // (A codes-only segment is alone in its set.)
    let col = collection(1, 3000, Some(0));
    let p = publish(&col);
    let (set, opened) = open_set(&p);
    let queries = clustered_vectors(78, 4, DIM, 16);
    let mut estimated_only = 0;
    for q in queries.chunks_exact(DIM) {
        for (name, filter) in filters() {
            for body in [
                json!({"limit": 10, "filter": filter}),
                json!({"limit": 4, "offset": 3, "with_payload": true, "filter": filter}),
            ] {
                let req = request(body.clone(), Some(q));
                let want = p.local.search(&req).unwrap();
                let (got, _) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
                assert_eq!((seen(&got), &got.stats), (seen(&want), &want.stats), "{name}: {body}");
                estimated_only += usize::from(want.stats.scanned == 0 && want.stats.estimated > 0);
            }
        }
    }
    assert!(estimated_only > 0, "some filters take the codes-only exact branch");
}

#[test]
fn a_filter_reads_only_the_fields_it_names_once() {
    let col = collection(1, 3000, None);
    let p = publish(&col);
    let (set, opened) = open_set(&p);
    let q = clustered_vectors(5, 1, DIM, 16);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
    let sections: u64 = [33, 34, 35].iter().map(|&k| head.entry(k).unwrap().length).sum();
    // The first filtered request over `tag` fetches `tag`'s parts, not `n`'s or `title`'s.
    let req = request(json!({"limit": 10, "filter": {"must": [{"key": "tag", "match": {"value": "t1"}}]}}), Some(&q));
    let mut cache = opened.clone();
    let refs: Vec<&RangeCache> = cache.iter().collect();
    let first = match set.search(&req, &refs).unwrap() {
        shoal_core::remote::SetStep::Fetch(per) => per[0].1.clone(),
        shoal_core::remote::SetStep::Done(_) => panic!("nothing fetched"),
    };
    let fetched: u64 = first.iter().map(|r| r.end - r.start).sum();
    assert!(fetched * 2 < sections, "{fetched} of {sections} bytes for one field of four");
    let want = p.local.search(&req).unwrap();
    let (got, waves) = drive(&set, &p.files, &mut cache, &req).unwrap();
    assert_eq!(seen(&got), seen(&want));
    assert_eq!(waves, 3, "the field, the partitions, the vectors");
    // Another value of the same field: its bytes are kept.
    let req = request(json!({"limit": 10, "filter": {"must": [{"key": "tag", "match": {"value": "t3"}}]}}), Some(&q));
    let (got, waves) = drive(&set, &p.files, &mut cache, &req).unwrap();
    assert_eq!(seen(&got), seen(&p.local.search(&req).unwrap()));
    assert!(waves <= 2, "no wave for the filter: {waves}");
}

#[test]
fn a_single_segment_filters_as_its_local_twin() {
    let col = collection(1, 3000, None);
    let seg = col.segment(0).unwrap();
    let v2 = shoal_core::remote::write_for_ranges(seg).unwrap().as_slice().to_vec();
    let v1 = shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice().to_vec();
    let local = Collection::from_bytes(&v1).unwrap();
    // A format-1 segment read by ranges has no filter index by field: refused, not read whole.
    let mut c1 = RangeCache::new(u64::MAX);
    let old = loop {
        match RemoteSegment::open(&c1).unwrap() {
            Step::Done(s) => break s,
            Step::Fetch(r) => r.iter().for_each(|r| fill(&mut c1, &v1, r)),
        }
    };
    let q = clustered_vectors(8, 1, DIM, 16);
    let req = request(json!({"limit": 3, "filter": {"must": [{"key": "tag", "match": {"value": "t1"}}]}}), Some(&q));
    assert_eq!(old.search(&req, &c1).unwrap_err().code(), "unsupported");
    let mut cache = RangeCache::new(u64::MAX);
    let seg = loop {
        match RemoteSegment::open(&cache).unwrap() {
            Step::Done(s) => break s,
            Step::Fetch(r) => r.iter().for_each(|r| fill(&mut cache, &v2, r)),
        }
    };
    for (name, filter) in filters() {
        let req = request(json!({"limit": 10, "with_payload": true, "filter": filter}), Some(&q));
        let want = local.search(&req).unwrap();
        let mut c = cache.clone();
        let got = loop {
            match seg.search(&req, &c).unwrap() {
                Step::Done(r) => break r,
                Step::Fetch(r) => r.iter().for_each(|r| fill(&mut c, &v2, r)),
            }
        };
        assert_eq!((seen(&got), &got.stats), (seen(&want), &want.stats), "{name}");
    }
    // A field the segment does not have, and a filter that is not one: typed errors.
    for (body, code) in [
        (json!({"limit": 3, "filter": {"must": [{"key": "nosuch", "match": {"value": 1}}]}}), "invalid_request"),
        (json!({"limit": 3, "filter": {"must": [{"key": "n", "match": {"value": "x"}}]}}), "invalid_request"),
        (json!({"limit": 3, "filter": {"must": 5}}), "invalid_request"),
        (json!({"limit": 3, "filter": {"must": [{"has_id": [1]}]}}), "unsupported"),
    ] {
        let req = shoal_core::SearchRequest::from_json(&body.to_string()).map(|mut r| {
            r.vector = Some(q.clone());
            r
        });
        let err = match req {
            Err(e) => e,
            Ok(req) => seg.search(&req, &cache).unwrap_err(),
        };
        assert_eq!(err.code(), code, "{body}: {err}");
        assert_eq!(
            local.search(&request(body.clone(), Some(&q))).map(|_| ()).map_err(|e| e.code()).err().unwrap_or("ok"),
            if code == "unsupported" { "ok" } else { code },
            "{body} locally"
        );
    }
}

#[test]
fn damaged_filter_blocks_are_errors_not_answers() {
    let col = collection(1, 3000, None);
    let p = publish(&col);
    let (set, opened) = open_set(&p);
    let q = clustered_vectors(5, 1, DIM, 16);
    let req = request(
        json!({"limit": 10, "filter": {"must": [{"key": "tag", "match": {"any": ["t1", "t2"]}}, {"key": "n", "range": {"lt": 2000}}]}}),
        Some(&q),
    );
    let (good, _) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
    assert_eq!(good.points.len(), 10);
    let (mut caught, mut same) = (0, 0);
    // The exact scan's vectors and their CRCs (most of both read by a range of `n`).
    let rare = request(json!({"limit": 10, "filter": {"must": [{"key": "n", "range": {"lt": 600}}]}}), Some(&q));
    let (rare_good, _) = drive(&set, &p.files, &mut opened.clone(), &rare).unwrap();
    assert!(rare_good.stats.exact, "an exact scan");
    for (kind, req, good, samples) in [
        (69u32, &rare, &rare_good, 97),
        (3, &rare, &rare_good, 97),
        (33, &req, &good, 61),
        (34, &req, &good, 61),
        (35, &req, &good, 61),
    ] {
        let (c, s) = flip_each_byte_of(&set, &p, &opened, req, good, kind, samples, 0x10);
        caught += c;
        same += s;
    }
    eprintln!("flipped bytes: {caught} caught, {same} not read");
    assert!(caught > 100 && same > 10, "{caught} / {same}");
}

#[test]
fn nested_payloads_filter_by_their_declared_paths() {
    // Qdrant's collections: any JSON payload, filter keys are paths; the declared ones have
    // columns. A filter on declared paths whose values the columns hold reads no document.
    let schema = Collection::parse_nested_schema(&json!({"meta.tag": "keyword", "meta.n": "integer"})).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::Cosine }, schema).unwrap();
    for s in 0..2u64 {
        let data = clustered_vectors(60 + s, 2500, DIM, 16);
        let ids: Vec<u64> = (0..2500).map(|i| s * 2500 + i).collect();
        let payloads: Vec<Value> = (0..2500)
            .map(|i| {
                // Segment 1: a few `meta.n` that are not integers (strays of that path).
                let n = if s == 1 && i % 97 == 5 { json!("many") } else { json!(i) };
                json!({"meta": {"tag": format!("t{}", i % 3), "n": n}, "note": {"x": i % 2}})
            })
            .collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        let params = IvfParams { partitions: Some(20), seed: 4, bits: Some(2), codes_only: false };
        col.set_index_kind(IndexKind::IvfRabitq(params)).unwrap();
        col.seal();
    }
    let p = publish(&col);
    let (set, opened) = open_set(&p);
    let q = clustered_vectors(9, 1, DIM, 16);
    let tag = |t: &str| json!({"key": "meta.tag", "match": {"value": t}});
    for filter in [
        json!({"must": [tag("t1")]}),
        json!({"must_not": [tag("t0")]}),
        json!({"should": [tag("t2"), {"is_empty": {"key": "meta.tag"}}]}),
    ] {
        for body in
            [json!({"limit": 10, "filter": filter}), json!({"limit": 3, "with_payload": true, "filter": filter})]
        {
            let req = request(body.clone(), Some(&q));
            let want = p.local.search(&req).unwrap();
            let (got, _) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
            assert_eq!((seen(&got), &got.stats), (seen(&want), &want.stats), "{body}");
        }
    }
    // What needs documents: a path without a column, `nested`, a path with strays.
    for filter in [
        json!({"must": [{"key": "note.x", "match": {"value": 1}}]}),
        json!({"must": [{"nested": {"key": "meta", "filter": {"must": [tag("t1")]}}}]}),
        json!({"must": [{"key": "meta.n", "range": {"lt": 50}}]}),
    ] {
        let req = request(json!({"limit": 5, "filter": filter}), Some(&q));
        assert!(p.local.search(&req).is_ok(), "{filter} locally");
        let err = drive(&set, &p.files, &mut opened.clone(), &req).unwrap_err();
        assert_eq!(err.code(), "unsupported", "{filter}: {err}");
    }
}

/// Segments of `per` rows of `dim` dimensions (a tag, a number, a title when `text`), point `i`
/// of segment `s` with id `id(s, i)`.
fn collection_dim(dim: usize, segments: usize, per: usize, text: bool, id: &dyn Fn(usize, usize) -> u64) -> Collection {
    let schema = if text {
        json!({"title": "text", "tag": "keyword", "n": "integer"})
    } else {
        json!({"tag": "keyword", "n": "integer"})
    };
    let config = CollectionConfig { dim, metric: Metric::L2 };
    let mut col = Collection::with_schema(config, Collection::parse_schema(&schema).unwrap()).unwrap();
    let words = words();
    let mut rng = Rng(7);
    for s in 0..segments {
        let data = clustered_vectors(40 + s as u64, per, dim, 16);
        let ids: Vec<u64> = (0..per).map(|i| id(s, i)).collect();
        let payloads: Vec<Value> = (0..per)
            .map(|i| {
                if i % 23 == 7 {
                    return Value::Null;
                }
                let title: Vec<&str> = (0..1 + rng.next() % 4).map(|_| rng.word(&words)).collect();
                let mut doc = json!({"tag": format!("t{}", i % 4), "n": i});
                if text {
                    doc["title"] = json!(title.join(" "));
                }
                doc
            })
            .collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        let params = IvfParams { partitions: Some(24), seed: 4, bits: Some(2 + s as u32 % 3), codes_only: false };
        col.set_index_kind(IndexKind::IvfRabitq(params)).unwrap();
        col.seal();
    }
    col
}

/// Filters of a few matches: exact scans.
fn exact_filters() -> Vec<Value> {
    let key = |k: &str, m: Value| json!({"key": k, "match": m});
    vec![
        json!({"must": [{"key": "n", "range": {"lt": 90}}]}),
        json!({"must": [{"key": "n", "range": {"gte": 1000, "lt": 1300}}]}),
        json!({"must": [key("tag", json!({"value": "t2"})), {"key": "n", "range": {"gte": 2500, "lt": 2700}}]}),
        json!({"should": [{"key": "n", "range": {"lt": 40}}, {"key": "n", "range": {"gte": 2950}}, {"key": "n", "range": {"gte": 1500, "lt": 1540}}]}),
        json!({"must": [{"is_empty": {"key": "tag"}}]}),
    ]
}

/// Exact scans of `col` published, against the local set; `expect_waves` without payloads.
fn check(col: &Collection, dim: usize, expect_waves: Option<usize>) -> usize {
    let p = publish(col);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
    assert!([69, 70].iter().all(|&k| head.entry(k).is_some()), "vector CRCs");
    let (set, opened) = open_set(&p);
    let queries = clustered_vectors(91, 4, dim, 16);
    let mut exact = 0;
    for q in queries.chunks_exact(dim) {
        for filter in exact_filters() {
            for body in [
                json!({"limit": 10, "filter": filter}),
                json!({"limit": 4, "offset": 3, "filter": filter}),
                json!({"limit": 7, "with_payload": true, "filter": filter}),
            ] {
                let req = request(body.clone(), Some(q));
                let want = p.local.search(&req).unwrap();
                let (got, waves) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
                assert_eq!((seen(&got), &got.stats), (seen(&want), &want.stats), "dim {dim}: {body}");
                if want.stats.exact {
                    exact += 1;
                    if let (Some(w), None) = (expect_waves, body.get("with_payload")) {
                        assert_eq!(waves, w, "dim {dim}: {body}");
                    }
                }
            }
        }
    }
    assert!(exact > 0, "dim {dim}: some exact scans");
    exact
}

#[test]
fn exact_scans_by_vector_crcs_at_every_block_shape() {
    // One row a vector block (dim >= 64), several CRC chunks; many rows a block (dim 9).
    for dim in [128usize, 64, 9] {
        for text in [true, false] {
            let col = collection_dim(dim, 2, 3000, text, &|s, i| (s * 3000 + i) as u64 * 3 + 1);
            let n = check(&col, dim, Some(if text { 2 } else { 3 }));
            eprintln!("dim {dim} text {text}: {n} exact");
        }
    }
}

#[test]
fn exact_scans_with_ids_in_row_id_blocks() {
    let col = collection_dim(24, 1, 33_000, true, &|_, i| (i as u64) << 48 | 1);
    let p = publish(&col);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
    assert!(head.entry(67).is_some() && head.entry(68).is_none(), "ids in blocks");
    drop(p);
    // The fields, the vectors with their CRCs, the results' id blocks.
    let n = check(&col, 24, Some(3));
    eprintln!("row id blocks: {n} exact");
}
