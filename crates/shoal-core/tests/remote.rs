//! A segment read by byte ranges (`shoal_core::remote`) answers as the same segment read
//! whole: the same ids and the same score bits, for every metric, code width, codes-only or
//! not, and request settings — in the few waves of fetches it promises.

use serde_json::json;
use shoal_core::remote::{RangeCache, RemoteSegment, Step};
use shoal_core::{Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_testkit::clustered_vectors;

/// What a search cost: waves of fetches, ranges fetched, bytes fetched.
#[derive(Clone, Copy, Debug, Default)]
struct Trips {
    waves: usize,
    ranges: usize,
    bytes: u64,
}

/// Runs `step` to completion, fetching what it names from `file` (as a server would: a range
/// past the end is cut there).
fn drive<T>(
    file: &[u8],
    cache: &mut RangeCache,
    mut step: impl FnMut(&RangeCache) -> Result<Step<T>, Error>,
) -> Result<(T, Trips), Error> {
    let mut trips = Trips::default();
    loop {
        match step(cache)? {
            Step::Done(t) => return Ok((t, trips)),
            Step::Fetch(ranges) => {
                assert!(!ranges.is_empty());
                assert!(ranges.windows(2).all(|w| w[0].end < w[1].start), "sorted and apart: {ranges:?}");
                assert!(trips.waves < 8, "a search that does not converge");
                trips.waves += 1;
                for r in ranges {
                    assert!(r.start % 64 == 0 && r.start < r.end);
                    let end = r.end.min(file.len() as u64);
                    cache.insert(r.start, &file[r.start as usize..end as usize]);
                    trips.ranges += 1;
                    trips.bytes += end - r.start;
                }
            }
        }
    }
}

fn segment(metric: Metric, dim: usize, n: usize, params: IvfParams) -> Vec<u8> {
    let data = clustered_vectors(dim as u64 * 7 + n as u64, n, dim, 30);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
    let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
    col.to_bytes().unwrap().to_vec()
}

fn open(file: &[u8], cache: &mut RangeCache) -> (RemoteSegment, Trips) {
    drive(file, cache, RemoteSegment::open).unwrap()
}

fn request(body: serde_json::Value, q: &[f32]) -> SearchRequest {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = Some(q.to_vec());
    req
}

/// The results as `(id, score bits)`.
fn bits(res: &shoal_core::SearchResponse) -> Vec<(u64, u32)> {
    res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect()
}

#[test]
fn remote_equals_local_bit_for_bit() {
    let (n, dim) = (4000, 40);
    let cases = [
        (Metric::L2, 1, false),
        (Metric::Cosine, 1, false),
        (Metric::Dot, 1, false),
        (Metric::L2, 3, false),
        (Metric::Cosine, 4, true),
        (Metric::L2, 2, true),
    ];
    let bodies = [
        json!({"limit": 10}),
        json!({"limit": 10, "params": {"nprobe": 3}}),
        json!({"limit": 5, "offset": 7, "params": {"nprobe": 12, "rerank": 2}}),
        json!({"limit": 20, "params": {"rerank": 1}}),
    ];
    for (metric, bits_per, codes_only) in cases {
        let params = IvfParams { partitions: Some(60), seed: 5, bits: bits_per, codes_only };
        let file = segment(metric, dim, n, params);
        let local = Collection::from_bytes(&file).unwrap();
        let mut cache = RangeCache::new(u64::MAX);
        let (seg, opened) = open(&file, &mut cache);
        assert_eq!((seg.dim(), seg.metric(), seg.rows(), seg.codes_only()), (dim, metric, n, codes_only));
        assert_eq!(seg.file_len(), file.len() as u64);
        assert!(opened.waves <= 2, "{opened:?}");
        let queries = clustered_vectors(99, 25, dim, 30);
        let mut waves = [0usize; 8];
        for body in &bodies {
            for q in queries.chunks_exact(dim) {
                let req = request(body.clone(), q);
                let want = local.search(&req).unwrap();
                // Cold: each search from the bytes fetched at open only.
                let mut cold = RangeCache::new(u64::MAX);
                drive(&file, &mut cold, RemoteSegment::open).unwrap();
                let (got, trips) = drive(&file, &mut cold, |c| seg.search(&req, c)).unwrap();
                assert_eq!(bits(&got), bits(&want), "{metric:?} {bits_per} bits, codes only {codes_only}, {body}");
                assert_eq!(got.stats, want.stats);
                waves[trips.waves] += 1;
                // Warm: the shared cache; a second search fetches nothing.
                drive(&file, &mut cache, |c| seg.search(&req, c)).unwrap();
                let (again, trips) = drive(&file, &mut cache, |c| seg.search(&req, c)).unwrap();
                assert_eq!((bits(&again), trips.waves), (bits(&want), 0));
            }
        }
        eprintln!("{metric:?} {bits_per} bits, codes only {codes_only}: cold searches by waves {waves:?}");
        let within = if codes_only { waves[1] } else { waves[2] };
        assert!(waves[3..].iter().sum::<usize>() * 10 <= within, "a third wave is the exception: {waves:?}");
        assert_eq!(waves[0], 0);
    }
}

#[test]
fn few_points_per_partition_probe_on_as_locally() {
    // 300 points in 150 partitions: the probed partitions hold fewer than `limit` points, so a
    // search probes on in order — and a reader by ranges fetches the next ones.
    for metric in [Metric::L2, Metric::Dot] {
        let file = segment(metric, 16, 300, IvfParams { partitions: Some(150), seed: 2, bits: 1, codes_only: false });
        let local = Collection::from_bytes(&file).unwrap();
        let mut cache = RangeCache::new(u64::MAX);
        let (seg, _) = open(&file, &mut cache);
        for (i, q) in clustered_vectors(4, 10, 16, 30).chunks_exact(16).enumerate() {
            let req = request(json!({"limit": 40, "params": {"nprobe": 2}}), q);
            let want = local.search(&req).unwrap();
            assert_eq!(want.points.len(), 40);
            let (got, _) = drive(&file, &mut cache, |c| seg.search(&req, c)).unwrap();
            assert_eq!(bits(&got), bits(&want), "{metric:?} query {i}");
        }
    }
}

#[test]
fn a_cache_trimmed_between_searches_gives_the_same_answers() {
    let file = segment(Metric::L2, 32, 3000, IvfParams { partitions: Some(40), seed: 9, bits: 1, codes_only: false });
    let local = Collection::from_bytes(&file).unwrap();
    let mut cache = RangeCache::new(64 * 1024);
    let (seg, _) = open(&file, &mut cache);
    for q in clustered_vectors(8, 20, 32, 30).chunks_exact(32) {
        cache.trim();
        assert!(cache.held() <= 64 * 1024);
        let req = request(json!({"limit": 10}), q);
        let (got, _) = drive(&file, &mut cache, |c| seg.search(&req, c)).unwrap();
        assert_eq!(bits(&got), bits(&local.search(&req).unwrap()));
    }
}

#[test]
fn open_checks_what_it_reads_and_refuses_what_it_cannot_search() {
    let file = segment(Metric::L2, 16, 500, IvfParams { partitions: Some(10), seed: 1, bits: 1, codes_only: false });
    let reader = shoal_format::SegmentReader::open(shoal_format::AlignedBytes::from_slice(&file).as_slice())
        .unwrap()
        .sections()
        .to_vec();
    let offset_of = |kind: u32| reader.iter().find(|e| e.kind == kind).unwrap().offset as usize;
    // A flipped byte in the header, in the table, in META or in the centroids.
    for at in [9, 70, offset_of(shoal_format::KIND_META) + 2, offset_of(shoal_format::KIND_IVF_CENTROIDS) + 5] {
        let mut bad = file.clone();
        bad[at] ^= 0x10;
        let err = drive(&bad, &mut RangeCache::new(u64::MAX), RemoteSegment::open).unwrap_err();
        assert!(matches!(err, Error::Format(_)), "byte {at}: {err:?}");
    }
    // Not a segment.
    let err = drive(&[7u8; 200], &mut RangeCache::new(u64::MAX), RemoteSegment::open).unwrap_err();
    assert!(matches!(err, Error::Format(shoal_format::FormatError::BadMagic)), "{err:?}");
    // A segment without an index would be read whole.
    let mut col = Collection::new(CollectionConfig { dim: 4, metric: Metric::L2 }).unwrap();
    col.insert(&[1, 2], &[0.0; 8]).unwrap();
    col.seal();
    let flat = col.to_bytes().unwrap().to_vec();
    let err = drive(&flat, &mut RangeCache::new(u64::MAX), RemoteSegment::open).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
}

#[test]
fn requests_it_cannot_answer_are_refused_before_any_fetch() {
    let file = segment(Metric::Cosine, 8, 400, IvfParams { partitions: Some(8), seed: 1, bits: 1, codes_only: false });
    let mut cache = RangeCache::new(u64::MAX);
    let (seg, _) = open(&file, &mut cache);
    let q = [0.5f32; 8];
    let refused = [
        (json!({"filter": {"must": [{"key": "a", "match": {"value": 1}}]}}), "unsupported"),
        (json!({"with_payload": true}), "unsupported"),
        (json!({"params": {"exact": true}}), "unsupported"),
        (json!({"text": "word"}), "unsupported"),
        (json!({"using": "other"}), "invalid_request"),
    ];
    for (body, code) in refused {
        let err = seg.search(&request(body.clone(), &q), &cache).unwrap_err();
        assert_eq!(err.code(), code, "{body}: {err}");
    }
    let err = seg.search(&request(json!({}), &[0.5; 7]), &cache).unwrap_err();
    assert!(matches!(err, Error::DimensionMismatch { expected: 8, found: 7 }));
    let err = seg.search(&request(json!({}), &[0.5, f32::NAN, 0., 0., 0., 0., 0., 0.]), &cache).unwrap_err();
    assert!(matches!(err, Error::NonFinite { .. }));
}
