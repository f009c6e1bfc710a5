//! What the tests of sets read by ranges share: a collection with payloads and text, a set
//! opened from its published files, a search driven to its answer.
#![allow(dead_code)]

use serde_json::{Value, json};
use shoal_core::remote::{RangeCache, RemoteSegment, RemoteSet, SetStep, Step};
use shoal_core::{Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_testkit::{Published, clustered_vectors};

pub const DIM: usize = 24;

/// Words: a few frequent, many rare.
pub fn words() -> Vec<String> {
    (0..400).map(|i| format!("{}{}", ["sea", "salt", "reef", "tide", "kelp"][i % 5], i / 5)).collect()
}

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn word<'w>(&mut self, words: &'w [String]) -> &'w str {
        let r = self.next() % 100;
        let i = if r < 40 { (self.next() % 8) as usize } else { (self.next() % words.len() as u64) as usize };
        &words[i]
    }
}

/// A collection of `segments` sealed segments of 700 points each: a title and a body (text), a
/// tag (keyword), a number (integer); some points without a payload.
pub fn collection(segments: usize, seed: u64) -> Collection {
    collection_of(segments, 700, seed, &|s, i| (s * 700 + i) as u64 * 5 + 2, None)
}

/// [`collection`] with `per` points a segment, point `i` of segment `s` with id `id(s, i)`;
/// no point of segment `bare` with a payload.
pub fn collection_of(
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
        let params = IvfParams { partitions: Some(12), seed: 4, bits: Some(1 + s as u32 % 3), codes_only: false };
        // Each segment its own index (`seal_with` another would rebuild the set as one).
        col.set_index_kind(IndexKind::IvfRabitq(params)).unwrap();
        col.seal();
    }
    assert_eq!(col.segments().len(), segments);
    col
}

/// A set opened from `p`'s files, and a cache per segment holding what the opens read.
pub fn open_set(p: &Published) -> (RemoteSet, Vec<RangeCache>) {
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

pub fn fill(cache: &mut RangeCache, file: &[u8], r: &core::ops::Range<u64>) {
    let end = r.end.min(file.len() as u64) as usize;
    cache.insert(r.start, &file[r.start as usize..end]);
}

/// Runs a search over the set to completion: the response and its waves.
pub fn drive(
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
pub fn seen(res: &shoal_core::SearchResponse) -> Vec<(u64, u32, Option<Value>)> {
    res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits(), p.payload.clone())).collect()
}

/// `got` (from the published set) agrees with `orig` (the collection it was published from,
/// rows in their first order): the same scores, bit for bit, best first, and the same stats;
/// a point in both with the same score and payload. Ties may sort their points differently
/// (ties go by row), so the ids themselves are compared only where scores differ.
pub fn agrees_with_original(got: &shoal_core::SearchResponse, orig: &shoal_core::SearchResponse, what: &str) {
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

pub fn request(body: Value, q: Option<&[f32]>) -> SearchRequest {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = q.map(<[f32]>::to_vec);
    req
}

/// Flips one byte (`^ mask`) of segment 0 at `samples` places spread over section `kind`, and
/// searches `req` over each damaged copy from the caches of its open (`opened`): each search
/// must fail its checksum or, the byte not read, answer `good`. Returns how many of each.
#[allow(clippy::too_many_arguments)]
pub fn flip_each_byte_of(
    set: &RemoteSet,
    p: &Published,
    opened: &[RangeCache],
    req: &SearchRequest,
    good: &shoal_core::SearchResponse,
    kind: u32,
    samples: u64,
    mask: u8,
) -> (usize, usize) {
    let aligned = shoal_core::AlignedBytes::from_slice(&p.files[0][..4096]);
    let head = shoal_format::SegmentHead::read(aligned.as_slice()).unwrap();
    let e = head.entry(kind).unwrap();
    let step = (e.length / samples).max(1);
    let (mut caught, mut same) = (0, 0);
    for at in (e.offset..e.offset + e.length).step_by(step as usize) {
        let mut files = p.files.clone();
        files[0][at as usize] ^= mask;
        match drive(set, &files, &mut opened.to_vec(), req) {
            Err(Error::Format(shoal_format::FormatError::ChecksumMismatch { .. })) => caught += 1,
            Ok((res, _)) => {
                assert_eq!(seen(&res), seen(good), "kind {kind}: a flipped byte at {at} went unnoticed");
                same += 1;
            }
            Err(e) => panic!("kind {kind}, byte {at}: {e:?}"),
        }
    }
    (caught, same)
}
