//! A set of format-2 segments with payloads and text, read by byte ranges, answers text,
//! hybrid and vector requests — with their payloads — as the same set read whole: the same
//! ids, score bits, payloads and statistics, BM25 with the set's statistics; in the waves it
//! promises; and a damaged block is an error, never a wrong answer.

use serde_json::{Value, json};
use shoal_core::remote::{RangeCache, RemoteSegment, RemoteSet, SetStep, Step};
use shoal_core::{AlignedBytes, Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_testkit::{Published, clustered_vectors, publish_with_twins as publish};

const DIM: usize = 24;

/// Words: a few frequent, many rare.
fn words() -> Vec<String> {
    (0..400).map(|i| format!("{}{}", ["sea", "salt", "reef", "tide", "kelp"][i % 5], i / 5)).collect()
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn word<'w>(&mut self, words: &'w [String]) -> &'w str {
        let r = self.next() % 100;
        let i = if r < 40 { (self.next() % 8) as usize } else { (self.next() % words.len() as u64) as usize };
        &words[i]
    }
}

/// A collection of `segments` sealed segments of 700 points each: a title and a body (text), a
/// tag (keyword), a number (integer); some points without a payload.
fn collection(segments: usize, seed: u64) -> Collection {
    collection_of(segments, 700, seed, &|s, i| (s * 700 + i) as u64 * 5 + 2, None)
}

/// [`collection`] with `per` points a segment, point `i` of segment `s` with id `id(s, i)`;
/// no point of segment `bare` with a payload.
fn collection_of(
    segments: usize,
    per: usize,
    seed: u64,
    id: &dyn Fn(usize, usize) -> u64,
    bare: Option<usize>,
) -> Collection {
    let schema = json!({"title": "text", "body": "text", "tag": "keyword", "n": "integer"});
    let config = CollectionConfig { dim: DIM, metric: Metric::Cosine };
    let mut col = Collection::with_schema(config, Collection::parse_schema(&schema).unwrap()).unwrap();
    let words = words();
    let mut rng = Rng(seed | 1);
    for s in 0..segments {
        let data = clustered_vectors(seed + s as u64, per, DIM, 12);
        let ids: Vec<u64> = (0..per).map(|i| id(s, i)).collect();
        let payloads: Vec<Value> = (0..per)
            .map(|i| {
                if i % 23 == 7 || bare == Some(s) {
                    return Value::Null;
                }
                let title: Vec<&str> = (0..1 + rng.next() % 4).map(|_| rng.word(&words)).collect();
                let body: Vec<&str> = (0..rng.next() % 30).map(|_| rng.word(&words)).collect();
                json!({"title": title.join(" "), "body": body.join(" "), "tag": format!("t{}", i % 4), "n": i})
            })
            .collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        let params = IvfParams { partitions: Some(12), seed: 4, bits: 1 + s as u32 % 3, codes_only: false };
        // Each segment its own index (`seal_with` another would rebuild the set as one).
        col.set_index_kind(IndexKind::IvfRabitq(params)).unwrap();
        col.seal();
    }
    assert_eq!(col.segments().len(), segments);
    col
}

/// A set opened from `p`'s files, and a cache per segment holding what the opens read.
fn open_set(p: &Published) -> (RemoteSet, Vec<RangeCache>) {
    let mut caches: Vec<RangeCache> = p.files.iter().map(|_| RangeCache::new(u64::MAX)).collect();
    let mut segs = Vec::new();
    for (i, file) in p.files.iter().enumerate() {
        loop {
            match RemoteSegment::open_with(&caches[i], p.manifest.prefix(i)).unwrap() {
                Step::Done(s) => break segs.push(s),
                Step::Fetch(ranges) => ranges.iter().for_each(|r| fill(&mut caches[i], file, r)),
            }
        }
    }
    (RemoteSet::new(&p.manifest, segs).unwrap(), caches)
}

fn fill(cache: &mut RangeCache, file: &[u8], r: &core::ops::Range<u64>) {
    let end = r.end.min(file.len() as u64) as usize;
    cache.insert(r.start, &file[r.start as usize..end]);
}

/// Runs a search over the set to completion: the response and its waves.
fn drive(
    set: &RemoteSet,
    files: &[Vec<u8>],
    caches: &mut [RangeCache],
    req: &SearchRequest,
) -> Result<(shoal_core::SearchResponse, usize), Error> {
    for waves in 0..8 {
        let step = {
            let refs: Vec<&RangeCache> = caches.iter().collect();
            set.search(req, &refs)?
        };
        match step {
            SetStep::Done(r) => return Ok((r, waves)),
            SetStep::Fetch(per) => {
                for (i, ranges) in per {
                    ranges.iter().for_each(|r| fill(&mut caches[i], &files[i], r));
                }
            }
        }
    }
    panic!("no answer after 8 waves")
}

/// The results as `(id, score bits, payload)`.
fn seen(res: &shoal_core::SearchResponse) -> Vec<(u64, u32, Option<Value>)> {
    res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits(), p.payload.clone())).collect()
}

/// `got` (from the published set) agrees with `orig` (the collection it was published from,
/// rows in their first order): the same scores, bit for bit, best first, and the same stats;
/// a point in both with the same score and payload. Ties may sort their points differently
/// (ties go by row), so the ids themselves are compared only where scores differ.
fn agrees_with_original(got: &shoal_core::SearchResponse, orig: &shoal_core::SearchResponse, what: &str) {
    let scores = |r: &shoal_core::SearchResponse| r.points.iter().map(|p| p.score.to_bits()).collect::<Vec<_>>();
    assert_eq!(scores(got), scores(orig), "{what}: scores against the original collection");
    // (Not `scanned`: how many rows BM25 scores before its bounds stop it depends on their
    // order.)
    assert_eq!(got.stats.segments, orig.stats.segments, "{what}: segments against the original collection");
    for p in &got.points {
        if let Some(o) = orig.points.iter().find(|o| o.id == p.id) {
            assert_eq!((o.score.to_bits(), &o.payload), (p.score.to_bits(), &p.payload), "{what}: point {:?}", p.id);
        } else {
            let tied = orig.points.iter().filter(|o| o.score.to_bits() == p.score.to_bits()).count();
            assert!(tied > 0, "{what}: point {:?} is not in the original's answer and ties with none", p.id);
        }
    }
}

fn request(body: Value, q: Option<&[f32]>) -> SearchRequest {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = q.map(<[f32]>::to_vec);
    req
}

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
        let head = shoal_format::SegmentHead::read(AlignedBytes::from_slice(&p.files[0][..4096]).as_slice()).unwrap();
        for &kind in kinds {
            let e = head.entry(kind).unwrap();
            let step = (e.length / 97).max(1);
            for at in (e.offset..e.offset + e.length).step_by(step as usize) {
                let mut files = p.files.clone();
                files[0][at as usize] ^= 0x04;
                match drive(&set, &files, &mut opened.clone(), &req) {
                    Err(Error::Format(shoal_format::FormatError::ChecksumMismatch { .. })) => caught += 1,
                    Ok((res, _)) => {
                        assert_eq!(seen(&res), seen(&good), "kind {kind}: a flipped byte at {at} went unnoticed");
                        same += 1;
                    }
                    Err(e) => panic!("kind {kind}, byte {at}: {e:?}"),
                }
            }
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
        (json!({"text": "sea0", "filter": {"must": [{"key": "tag", "match": {"value": "t1"}}]}}), "unsupported"),
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
