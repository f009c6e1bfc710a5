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
                if trips.waves >= 8 {
                    // What a host answers when the bytes it gets never complete a range (an
                    // object shorter than its header says): an error, not an answer.
                    let what = "no progress after 8 waves";
                    return Err(Error::Format(shoal_format::FormatError::Truncated { what, needed: 0, available: 0 }));
                }
                trips.waves += 1;
                for r in ranges {
                    assert!(r.start % 64 == 0 && r.start < r.end);
                    if r.start >= file.len() as u64 {
                        // A server's 416: the host's typed error.
                        let (needed, available) = (r.end, file.len() as u64);
                        return Err(Error::Format(shoal_format::FormatError::Truncated {
                            what: "416",
                            needed,
                            available,
                        }));
                    }
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
        let params = IvfParams { partitions: Some(60), seed: 5, bits: Some(bits_per), codes_only };
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
    for (metric, code_bits, codes_only) in [(Metric::L2, 1, false), (Metric::Dot, 1, false), (Metric::Cosine, 3, true)]
    {
        let file =
            segment(metric, 16, 300, IvfParams { partitions: Some(150), seed: 2, bits: Some(code_bits), codes_only });
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
    let file =
        segment(Metric::L2, 32, 3000, IvfParams { partitions: Some(40), seed: 9, bits: Some(1), codes_only: false });
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
    let file =
        segment(Metric::L2, 16, 500, IvfParams { partitions: Some(10), seed: 1, bits: Some(1), codes_only: false });
    let reader = shoal_format::SegmentReader::open(shoal_format::AlignedBytes::from_slice(&file).as_slice())
        .unwrap()
        .sections()
        .to_vec();
    let offset_of = |kind: u32| reader.iter().find(|e| e.kind == kind).unwrap().offset as usize;
    // A flipped byte in the header, in the table, in META or in the centroids.
    for at in [26, 70, offset_of(shoal_format::KIND_META) + 2, offset_of(shoal_format::KIND_IVF_CENTROIDS) + 5] {
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
    let file =
        segment(Metric::Cosine, 8, 400, IvfParams { partitions: Some(8), seed: 1, bits: Some(1), codes_only: false });
    let mut cache = RangeCache::new(u64::MAX);
    let (seg, _) = open(&file, &mut cache);
    let q = [0.5f32; 8];
    let refused = [
        // (No payload schema: an unknown field, as locally.)
        (json!({"filter": {"must": [{"key": "a", "match": {"value": 1}}]}}), "invalid_request"),
        (json!({"params": {"exact": true}}), "unsupported"),
        (json!({"text": "word"}), "invalid_request"),
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

/// A segment in format 2 and the same index in format 1 (partitions in the same order).
fn both_layouts(metric: Metric, dim: usize, n: usize, params: IvfParams) -> (Vec<u8>, Vec<u8>) {
    let v1 = Collection::from_bytes(&segment(metric, dim, n, params)).unwrap();
    let seg = v1.segment(0).unwrap();
    let v2 = shoal_core::remote::write_for_ranges(seg).unwrap().as_slice().to_vec();
    let reordered = shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice().to_vec();
    (v2, reordered)
}

#[test]
fn format_2_answers_as_the_same_index_in_format_1() {
    let cases = [
        (Metric::L2, 40, 1, false),
        (Metric::Cosine, 96, 1, false),
        (Metric::Dot, 24, 3, false),
        (Metric::L2, 64, 4, true),
    ];
    for (metric, dim, bits_per, codes_only) in cases {
        let params = IvfParams { partitions: Some(70), seed: 6, bits: Some(bits_per), codes_only };
        let (v2, reordered) = both_layouts(metric, dim, 5000, params);
        let local = Collection::from_bytes(&reordered).unwrap();
        local.segment(0).unwrap().verify().unwrap();
        let mut cache = RangeCache::new(u64::MAX);
        let (seg, opened) = open(&v2, &mut cache);
        assert_eq!((seg.version(), opened.waves, opened.ranges), (2, 1, 1), "one request opens a small v2 segment");
        let head = shoal_format::SegmentHead::read(
            shoal_format::AlignedBytes::from_slice(&v2[..seg.bootstrap_len() as usize]).as_slice(),
        )
        .unwrap();
        assert_eq!(head.bootstrap_len(), seg.bootstrap_len());
        let mut waves = [0usize; 8];
        for (i, q) in clustered_vectors(31, 40, dim, 30).chunks_exact(dim).enumerate() {
            let body = if i % 2 == 0 {
                json!({"limit": 10})
            } else {
                json!({"limit": 4, "offset": 3, "params": {"nprobe": 9}})
            };
            let req = request(body, q);
            let want = local.search(&req).unwrap();
            let mut cold = RangeCache::new(u64::MAX);
            drive(&v2, &mut cold, RemoteSegment::open).unwrap();
            let (got, trips) = drive(&v2, &mut cold, |c| seg.search(&req, c)).unwrap();
            assert_eq!(
                bits(&got),
                bits(&want),
                "{metric:?} {dim}-d {bits_per} bits codes only {codes_only}, query {i}"
            );
            assert_eq!(got.stats, want.stats);
            waves[trips.waves] += 1;
        }
        eprintln!("v2 {metric:?} {dim}-d {bits_per} bits: cold searches by waves {waves:?}");
    }
}

#[test]
fn format_2_checks_every_block_it_reads() {
    let (v2, _) = both_layouts(
        Metric::L2,
        64,
        3000,
        IvfParams { partitions: Some(30), seed: 2, bits: Some(1), codes_only: false },
    );
    let mut cache = RangeCache::new(u64::MAX);
    let (seg, _) = open(&v2, &mut cache);
    let reader_table =
        shoal_format::SegmentHead::read(&shoal_format::AlignedBytes::from_slice(&v2[..4096]).as_slice()[..4096])
            .unwrap()
            .table;
    let section = |kind: u32| *reader_table.iter().find(|e| e.kind == kind).unwrap();
    let (blocks, vectors) = (section(shoal_format::KIND_IVF_BLOCKS), section(shoal_format::KIND_VECTORS));
    let q = clustered_vectors(3, 1, 64, 30);
    let req = request(json!({"limit": 10}), &q);
    let (good, _) = drive(&v2, &mut RangeCache::new(u64::MAX), |c| seg.search(&req, c)).unwrap();
    // Every byte of every block and of every vector this search reads is checked: flip one
    // in each and the search fails with a checksum error, or — when it does not read it —
    // answers as before.
    let (mut caught, mut same) = (0, 0);
    for (start, len, step) in [(blocks.offset, blocks.length, 997), (vectors.offset, vectors.length, 4093)] {
        for at in (start..start + len).step_by(step) {
            let mut bad = v2.clone();
            bad[at as usize] ^= 0x08;
            match drive(&bad, &mut RangeCache::new(u64::MAX), |c| seg.search(&req, c)) {
                Err(Error::Format(shoal_format::FormatError::ChecksumMismatch { .. })) => caught += 1,
                Ok((res, _)) => {
                    assert_eq!(bits(&res), bits(&good), "a flipped byte at {at} changed the answer unnoticed");
                    same += 1;
                }
                Err(e) => panic!("byte {at}: {e:?}"),
            }
        }
    }
    eprintln!("flipped bytes: {caught} caught, {same} not read");
    assert!(caught > 0 && same > 0);
    // A flipped byte in the bootstrap region fails the open.
    for at in [20usize, 100, seg.bootstrap_len() as usize - 100] {
        let mut bad = v2.clone();
        bad[at] ^= 0x01;
        assert!(drive(&bad, &mut RangeCache::new(u64::MAX), RemoteSegment::open).is_err(), "byte {at}");
    }
}

#[test]
fn format_2_refuses_what_it_cannot_hold() {
    // A segment without an IVF index is read whole, not by ranges.
    let mut col = Collection::new(CollectionConfig { dim: 8, metric: Metric::L2 }).unwrap();
    let ids: Vec<u64> = (0..500).collect();
    col.insert(&ids, &clustered_vectors(1, 500, 8, 10)).unwrap();
    col.seal_with(IndexKind::Flat).unwrap();
    let err = shoal_core::remote::write_for_ranges(col.segment(0).unwrap()).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err:?}");
    // A format-2 file is not opened whole: the reader names the version.
    let (v2, _) =
        both_layouts(Metric::L2, 8, 400, IvfParams { partitions: Some(4), seed: 1, bits: Some(1), codes_only: false });
    let err = Collection::from_bytes(&v2).unwrap_err();
    assert!(
        matches!(err, Error::Format(shoal_format::FormatError::UnsupportedVersion { found: 2, newest: 1 })),
        "{err:?}"
    );
}

#[test]
fn a_payload_schema_without_payloads_is_laid_out_without_payload_sections() {
    // A collection with a payload schema (a Qdrant one is nested) whose points carry none: its
    // segment has payload sections of empty documents, which format 2 leaves out — the same
    // file as the same points without a schema. One payload, and the documents are kept.
    let params = IvfParams { partitions: Some(5), seed: 1, bits: Some(1), codes_only: false };
    let data = clustered_vectors(3, 500, 8, 10);
    let ids: Vec<u64> = (0..500).collect();
    let build = |schema: Option<(serde_json::Value, bool)>, payload_of: &dyn Fn(u64) -> serde_json::Value| {
        let config = CollectionConfig { dim: 8, metric: Metric::L2 };
        let mut col = match schema {
            Some((s, true)) => Collection::with_schema(config, Collection::parse_nested_schema(&s).unwrap()).unwrap(),
            Some((s, false)) => Collection::with_schema(config, Collection::parse_schema(&s).unwrap()).unwrap(),
            None => Collection::new(config).unwrap(),
        };
        let payloads: Vec<_> = ids.iter().map(|&i| payload_of(i)).collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
        col
    };
    let plain = build(None, &|_| serde_json::Value::Null);
    let want = shoal_core::remote::write_for_ranges(plain.segment(0).unwrap()).unwrap();
    // Nested schemas (Qdrant's), with and without declared paths, and a flat one with a field
    // (a flat schema without fields writes no payload sections).
    for schema in [(json!({}), true), (json!({"g": "integer"}), true), (json!({"g": "integer"}), false)] {
        let empty = build(Some(schema.clone()), &|_| json!({}));
        assert!(empty.segment(0).unwrap().schema().is_some(), "payload sections are written");
        let got = shoal_core::remote::write_for_ranges(empty.segment(0).unwrap()).unwrap();
        assert!(got.as_slice() == want.as_slice(), "{schema:?}: the file without a schema");
        let one = build(Some(schema.clone()), &|i| if i == 377 { json!({"g": 1}) } else { json!({}) });
        let file = shoal_core::remote::write_for_ranges(one.segment(0).unwrap()).unwrap();
        let head = shoal_format::SegmentHead::read(file.as_slice()).unwrap();
        let kinds: Vec<u32> = head.table.iter().map(|e| e.kind).collect();
        assert!(kinds.contains(&37) && kinds.contains(&38) && !kinds.contains(&48), "{schema:?}: {kinds:?}");
    }
}

#[test]
fn format_2_answers_as_the_original_format_1_build() {
    // The partitions renumbered, the rows reordered: the same index, so the same answers
    // (unless two keys tie exactly, which these queries do not).
    let params = IvfParams { partitions: Some(50), seed: 3, bits: Some(1), codes_only: false };
    let original = segment(Metric::L2, 32, 4000, params);
    let local = Collection::from_bytes(&original).unwrap();
    let v2 = shoal_core::remote::write_for_ranges(local.segment(0).unwrap()).unwrap().as_slice().to_vec();
    let mut cache = RangeCache::new(u64::MAX);
    let (seg, _) = open(&v2, &mut cache);
    for q in clustered_vectors(17, 40, 32, 30).chunks_exact(32) {
        let req = request(json!({"limit": 10}), q);
        let (got, _) = drive(&v2, &mut cache, |c| seg.search(&req, c)).unwrap();
        assert_eq!(bits(&got), bits(&local.search(&req).unwrap()));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Damaged format-2 bytes (flipped, truncated, zeroed) never panic, loop or answer
    /// unnoticed: an open or a search either fails with a typed error or, when it reads none of
    /// the damage, answers as before.
    #[test]
    fn damaged_format_2_bytes_are_typed_errors(at in 0usize..40_000, xor in 1u8..=255, cut in proptest::option::of(0usize..40_000)) {
        let params = IvfParams { partitions: Some(12), seed: 4, bits: Some(2), codes_only: false };
        let v1 = Collection::from_bytes(&segment(Metric::L2, 16, 600, params)).unwrap();
        let good = shoal_core::remote::write_for_ranges(v1.segment(0).unwrap()).unwrap().as_slice().to_vec();
        let mut bad = good.clone();
        let at = at % bad.len();
        bad[at] ^= xor;
        if let Some(cut) = cut {
            bad.truncate(cut % good.len());
        }
        let q = clustered_vectors(5, 1, 16, 30);
        let req = request(json!({"limit": 10}), &q);
        let mut cache = RangeCache::new(u64::MAX);
        let (seg, _) = open(&good, &mut cache);
        let want = v1.search(&req).unwrap();
        let mut cache = RangeCache::new(u64::MAX);
        match drive(&bad, &mut cache, RemoteSegment::open) {
            Err(Error::Format(_)) => {}
            Err(e) => proptest::prop_assert!(false, "open: {e:?}"),
            Ok((opened, _)) => match drive(&bad, &mut cache, |c| opened.search(&req, c)) {
                Err(Error::Format(_)) => {}
                Err(e) => proptest::prop_assert!(false, "search: {e:?}"),
                Ok((res, _)) => proptest::prop_assert_eq!(bits(&res), bits(&want)),
            },
        }
        drop(seg);
    }
}

/// Many-bit codes over many points: the re-ranking reads candidates in order of their 1-bit
/// bounds, so before the good ones are read its threshold is high and it reads vectors a
/// ranking by the tighter bounds would not. The plan predicts exactly those reads: a search
/// still settles in two waves (a third only where a bound breaks), at any `nprobe`.
#[test]
fn many_bit_segments_settle_in_two_waves_at_any_nprobe() {
    let (n, dim) = (60_000, 128);
    for (metric, bits_per) in [(Metric::L2, 4), (Metric::Cosine, 3)] {
        let params = IvfParams { partitions: Some(240), seed: 8, bits: Some(bits_per), codes_only: false };
        let (v2, reordered) = both_layouts(metric, dim, n, params);
        let local = Collection::from_bytes(&reordered).unwrap();
        let mut cache = RangeCache::new(u64::MAX);
        let (seg, _) = open(&v2, &mut cache);
        for nprobe in [4, 16, 48] {
            let mut waves = [0usize; 9];
            let (mut ranges, mut kb, mut scanned) = (0, 0, 0);
            for q in clustered_vectors(n as u64 * 7 + dim as u64, 40, dim, 30).chunks_exact(dim) {
                let req = request(json!({"limit": 10, "params": {"nprobe": nprobe}}), q);
                let want = local.search(&req).unwrap();
                let mut cold = RangeCache::new(u64::MAX);
                drive(&v2, &mut cold, RemoteSegment::open).unwrap();
                let (got, trips) = drive(&v2, &mut cold, |c| seg.search(&req, c)).unwrap();
                assert_eq!(bits(&got), bits(&want), "{metric:?} {bits_per} bits, nprobe {nprobe}");
                waves[trips.waves] += 1;
                (ranges, kb, scanned) = (ranges + trips.ranges, kb + trips.bytes / 1024, scanned + got.stats.scanned);
            }
            eprintln!(
                "{metric:?} {bits_per} bits, nprobe {nprobe}: cold searches by waves {waves:?}; \
                 per search {} ranges, {} KB, {} vectors ranked",
                ranges / 40,
                kb / 40,
                scanned / 40
            );
            assert!(waves[4..].iter().all(|&w| w == 0), "at most three waves: {waves:?}");
            assert!(waves[3] * 10 <= waves[2], "a third wave is the exception: {waves:?}");
        }
    }
}
