//! A set of format-2 segments with payloads and text, read by byte ranges, answers text,
//! hybrid and vector requests — with their payloads — as the same set read whole: the same
//! ids, score bits, payloads and statistics, BM25 with the set's statistics; in the waves it
//! promises; and a damaged block is an error, never a wrong answer.

mod remote_common;

use remote_common::*;
use serde_json::json;
use shoal_core::remote::{RangeCache, RemoteSegment, Step};
use shoal_core::{AlignedBytes, Collection, Error};
use shoal_testkit::{clustered_vectors, publish_with_twins as publish};

#[test]
fn text_hybrid_and_payloads_answer_as_the_local_set() {
    let col = collection(3, 11);
    let p = publish(&col);
    let (set, opened) = open_set(&p);
    let w = words();
    let queries = clustered_vectors(77, 12, DIM, 12);
    let mut by_kind: std::collections::BTreeMap<&str, [usize; 8]> = Default::default();
    let mut nonempty = 0;
    for (i, q) in queries.chunks_exact(DIM).enumerate() {
        let (a, b, c) = (&w[i % 8], &w[8 + i * 7 % 390], &w[i * 13 % 400]);
        let texts = [
            format!("{a} {b}"),
            format!("+{a} {c}"),
            format!("\"{a} {b}\" {c}"),
            format!("{b} -{a}"),
            format!("{c} nosuchword"),
        ];
        for text in &texts {
            let cases = [
                ("text", json!({"text": text, "limit": 10}), false),
                ("text+payload", json!({"text": text, "limit": 5, "offset": 2, "with_payload": true}), false),
                ("text k1 b", json!({"text": text, "limit": 10, "bm25_k1": 0.9, "bm25_b": 0.3}), false),
                ("hybrid", json!({"text": text, "limit": 10}), true),
                (
                    "hybrid+payload",
                    json!({"text": text, "limit": 4, "offset": 1, "with_payload": true, "fusion": "dbsf"}),
                    true,
                ),
                (
                    "hybrid weighted",
                    json!({"text": text, "limit": 10, "fusion": "weighted", "alpha": 0.3, "params": {"nprobe": 4}}),
                    true,
                ),
            ];
            for (kind, body, with_vector) in cases {
                let req = request(body.clone(), with_vector.then_some(q));
                let want = p.local.search(&req).unwrap();
                let mut cold = opened.clone();
                let (got, waves) = drive(&set, &p.files, &mut cold, &req).unwrap();
                assert_eq!(seen(&got), seen(&want), "{kind}: {body}");
                assert_eq!(got.stats, want.stats, "{kind}: {body}");
                // Text alone does not depend on the row order: the original collection's
                // answer, up to the order of ties (fusion by rank does).
                if !with_vector {
                    agrees_with_original(&got, &col.search(&req).unwrap(), &format!("{kind}: {body}"));
                }
                nonempty += usize::from(!got.points.is_empty());
                by_kind.entry(kind).or_default()[waves] += 1;
                // Warm: nothing more to fetch.
                let (again, waves) = drive(&set, &p.files, &mut cold, &req).unwrap();
                assert_eq!((seen(&again), waves), (seen(&want), 0));
            }
        }
        for (kind, body) in [
            ("vector+payload", json!({"limit": 10, "with_payload": true})),
            ("vector", json!({"limit": 7, "offset": 3, "score_threshold": 0.2})),
        ] {
            let req = request(body.clone(), Some(q));
            let want = p.local.search(&req).unwrap();
            let (got, waves) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
            assert_eq!(seen(&got), seen(&want), "{kind}: {body}");
            agrees_with_original(&got, &col.search(&req).unwrap(), &format!("{kind}: {body}"));
            by_kind.entry(kind).or_default()[waves] += 1;
        }
    }
    eprintln!("cold searches by waves: {by_kind:?}");
    assert!(nonempty > 300, "most text queries find something: {nonempty}");
    // Text: dictionary groups, then records (the ids are hot in segments this small); the
    // results' documents one wave more, for a vector request after its exact re-ranking's.
    let most = |kind: &str, max: usize| {
        let w = by_kind[kind];
        assert!(w[max + 1..].iter().sum::<usize>() * 10 <= w[..=max].iter().sum::<usize>(), "{kind}: {w:?}");
    };
    for (kind, waves) in [("text", 2), ("text+payload", 3), ("hybrid", 2), ("hybrid+payload", 3), ("vector+payload", 3)]
    {
        most(kind, waves);
    }
    assert_eq!(by_kind["text"][3..].iter().sum::<usize>(), 0, "text never takes a third wave");
}

#[test]
fn ids_too_wide_to_keep_hot_come_from_their_blocks() {
    // 64-bit ids, 33,000 rows: 264 KB packed, over the hot budget: ROW_IDS blocks, one wave more.
    let col = collection_of(1, 33_000, 21, &|_, i| (i as u64) << 48 | 1, None);
    let p = publish(&col);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
    assert!(head.entry(67).is_some() && head.entry(68).is_none(), "ids in blocks");
    let small = publish(&collection(1, 21));
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&small.files[0][..4096]).as_slice()).unwrap();
    assert!(head.entry(67).is_none() && head.entry(68).is_some(), "ids packed");
    let (set, opened) = open_set(&p);
    let w = words();
    let mut waves_seen = [0usize; 8];
    for i in 0..30 {
        let body = json!({"text": format!("{} {}", w[i % 8], w[i * 11 % 400]), "limit": 10, "offset": i % 3, "with_payload": i % 2 == 0});
        let req = request(body.clone(), None);
        let want = p.local.search(&req).unwrap();
        let (got, waves) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
        assert_eq!(seen(&got), seen(&want), "{body}");
        assert!(!got.points.is_empty());
        waves_seen[waves] += 1;
    }
    assert_eq!(waves_seen[3], 30, "groups, records, then ids (with documents): {waves_seen:?}");
}

#[test]
fn a_segment_without_documents_in_a_text_set_keeps_its_text_index() {
    // Segment 1's points carry no payload: it is still a segment of a text collection.
    let col = collection_of(3, 300, 17, &|s, i| (s * 300 + i) as u64, Some(1));
    let p = publish(&col);
    let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[1][..4096]).as_slice()).unwrap();
    assert!(head.entry(53).is_some() && head.entry(37).is_some(), "a text index and documents");
    let (set, opened) = open_set(&p);
    let w = words();
    let q = clustered_vectors(5, 1, DIM, 12);
    for i in 0..20 {
        let text = format!("{} {}", w[i % 8], w[i * 11 % 400]);
        for (body, vector) in [
            (json!({"text": text, "limit": 10, "with_payload": true}), false),
            (json!({"text": text, "limit": 10, "with_payload": true}), true),
            (json!({"limit": 10, "with_payload": true}), true),
        ] {
            let req = request(body.clone(), vector.then_some(&q[..]));
            let want = p.local.search(&req).unwrap();
            let (got, _) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
            assert_eq!((seen(&got), &got.stats), (seen(&want), &want.stats), "{body}");
            if !(vector && body.get("text").is_some()) {
                agrees_with_original(&got, &col.search(&req).unwrap(), &body.to_string());
            }
        }
    }
    // Read alone, the bare segment answers a text request with nothing, as its twin does.
    let mut cache = opened[1].clone();
    let seg = match RemoteSegment::open(&cache).unwrap() {
        Step::Done(s) => s,
        Step::Fetch(r) => panic!("opened already: {r:?}"),
    };
    let req = request(json!({"text": w[0], "limit": 10}), None);
    let got = loop {
        match seg.search(&req, &cache).unwrap() {
            Step::Done(r) => break r,
            Step::Fetch(r) => r.iter().for_each(|r| fill(&mut cache, &p.files[1], r)),
        }
    };
    assert!(got.points.is_empty());
}

#[test]
fn a_single_segment_answers_text_as_its_local_twin() {
    let col = collection(1, 5);
    let seg = col.segment(0).unwrap();
    let v2 = shoal_core::remote::write_for_ranges(seg).unwrap().as_slice().to_vec();
    let local = Collection::from_bytes(shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    let mut cache = RangeCache::new(u64::MAX);
    let seg = loop {
        match RemoteSegment::open(&cache).unwrap() {
            Step::Done(s) => break s,
            Step::Fetch(r) => r.iter().for_each(|r| fill(&mut cache, &v2, r)),
        }
    };
    let w = words();
    for i in 0..40 {
        let body =
            json!({"text": format!("{} {}", w[i % 8], w[i * 11 % 400]), "limit": 10, "with_payload": i % 2 == 0});
        let req = request(body.clone(), None);
        let want = local.search(&req).unwrap();
        let mut c = cache.clone();
        let got = loop {
            match seg.search(&req, &c).unwrap() {
                Step::Done(r) => break r,
                Step::Fetch(r) => r.iter().for_each(|r| fill(&mut c, &v2, r)),
            }
        };
        assert_eq!(seen(&got), seen(&want), "{body}");
    }
}

#[test]
fn damaged_text_and_document_blocks_are_errors_not_answers() {
    let w = words();
    // A phrase: its terms' positions are read too.
    let req =
        request(json!({"text": format!("{} \"{} {}\"", w[1], w[3], w[5]), "limit": 10, "with_payload": true}), None);
    let (mut caught, mut same) = (0, 0);
    // Dictionary groups, term records, document blocks; and ids in blocks (64-bit ids).
    let wide = collection_of(1, 33_000, 9, &|_, i| (i as u64) << 48 | 1, None);
    for (col, kinds) in [(collection(1, 9), &[54u32, 55, 38][..]), (wide, &[67][..])] {
        let p = publish(&col);
        let (set, opened) = open_set(&p);
        let (good, _) = drive(&set, &p.files, &mut opened.clone(), &req).unwrap();
        assert!(!good.points.is_empty());
        for &kind in kinds {
            let (c, s) = flip_each_byte_of(&set, &p, &opened, &req, &good, kind, 97, 0x04);
            caught += c;
            same += s;
        }
    }
    eprintln!("flipped bytes: {caught} caught, {same} not read");
    assert!(caught > 10 && same > 10);
}

#[test]
fn requests_a_set_read_by_ranges_cannot_answer_are_refused() {
    let col = collection(1, 3);
    let p = publish(&col);
    let (set, opened) = open_set(&p);
    let q = [0.5f32; DIM];
    let refused = [
        (json!({"text": "sea0", "filter": {"must": [{"has_id": [7]}]}}), "unsupported"),
        (json!({"text": "sea0", "filter": {"must": [{"key": "nosuch", "match": {"value": "t1"}}]}}), "invalid_request"),
        (json!({"text": "sea0", "timeout_ms": 50}), "unsupported"),
        (json!({"prefetch": [{"text": "sea0"}], "fusion": "rrf"}), "unsupported"),
        (json!({"text": "sea0", "fusion": "dbsf"}), "invalid_request"),
    ];
    for (body, code) in refused {
        let refs: Vec<&RangeCache> = opened.iter().collect();
        let err = set.search(&request(body.clone(), None), &refs).unwrap_err();
        assert_eq!(err.code(), code, "{body}: {err}");
    }
    let refs: Vec<&RangeCache> = opened.iter().collect();
    let err = set.search(&request(json!({"text": "x"}), Some(&q[..5])), &refs).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { expected: DIM, found: 5 }), "{err:?}");
}
