//! Coded centroids (`IVF_CENTROID_CODES`: centroids too many for the bootstrap region, their
//! 8-bit codes hot and each read when a query may probe its partition): a segment laid out so
//! answers as the same index read whole — ids, score bits and statistics — for every metric,
//! code width, codes-only or not, `nprobe` from 1 to every partition, partitions too small to
//! hold `k`, and filters of every plan; at one more wave than with hot centroids, reading few
//! of them; a damaged centroid is an error, never an answer.

use serde_json::{Value, json};
use shoal_core::remote::{RangeCache, RemoteSegment, Step, write_for_ranges_with, write_reordered_v1};
use shoal_core::{Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_format::FormatError;
use shoal_testkit::clustered_vectors;

/// `IVF_CENTROID_CODES`.
const KIND_CODES: u32 = 71;

/// Runs `step` to completion over `file`: the answer and its waves.
fn drive<T>(
    file: &[u8],
    cache: &mut RangeCache,
    mut step: impl FnMut(&RangeCache) -> Result<Step<T>, Error>,
) -> Result<(T, usize), Error> {
    for waves in 0..12 {
        match step(cache)? {
            Step::Done(t) => return Ok((t, waves)),
            Step::Fetch(ranges) => {
                assert!(ranges.windows(2).all(|w| w[0].end < w[1].start), "sorted and apart: {ranges:?}");
                for r in ranges {
                    let end = r.end.min(file.len() as u64) as usize;
                    cache.insert(r.start, &file[r.start as usize..end]);
                }
            }
        }
    }
    panic!("no answer after 12 waves")
}

/// A segment of `n` points with a payload (`tag`: 1 in 4; `n`: the point's number), in
/// format 2 with its centroids coded (`hot` bytes of centroids at most kept hot) and with
/// them hot, and the same index in format 1 (`write_reordered_v1`).
fn layouts(metric: Metric, dim: usize, n: usize, params: IvfParams, hot: usize) -> (Vec<u8>, Vec<u8>, Collection) {
    let schema = json!({"tag": "keyword", "n": "integer"});
    let config = CollectionConfig { dim, metric };
    let mut col = Collection::with_schema(config, Collection::parse_schema(&schema).unwrap()).unwrap();
    let data = clustered_vectors(dim as u64 + n as u64, n, dim, 40);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 7 + 3).collect();
    let payloads: Vec<Value> = (0..n).map(|i| json!({"tag": format!("t{}", i % 4), "n": i})).collect();
    col.insert_with_payloads(&ids, &data, &payloads).unwrap();
    col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
    let seg = col.segment(0).unwrap();
    let coded = write_for_ranges_with(seg, hot).unwrap().as_slice().to_vec();
    let flat = write_for_ranges_with(seg, usize::MAX).unwrap().as_slice().to_vec();
    let local = Collection::from_bytes(write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    (coded, flat, local)
}

/// Opens `file` as a set manifest's bootstrap hint opens it: the cache then holds its
/// bootstrap region alone (a plain open's first 256 KiB would hold all of a small file).
fn open(file: &[u8]) -> (RemoteSegment, RangeCache, usize) {
    let (probe, _) = drive(file, &mut RangeCache::new(u64::MAX), RemoteSegment::open).unwrap();
    let mut cache = RangeCache::new(u64::MAX);
    let hint = probe.bootstrap_len();
    let (seg, waves) = drive(file, &mut cache, |c| RemoteSegment::open_with(c, hint)).unwrap();
    (seg, cache, waves)
}

fn request(body: Value, q: &[f32]) -> SearchRequest {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = Some(q.to_vec());
    req
}

fn bits(res: &shoal_core::SearchResponse) -> Vec<(u64, u32)> {
    res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect()
}

/// The table entry of `kind` in `file`.
fn entry(file: &[u8], kind: u32) -> Option<shoal_format::SectionEntry> {
    let aligned = shoal_core::AlignedBytes::from_slice(&file[..4096.min(file.len())]);
    shoal_format::SegmentHead::read(aligned.as_slice()).unwrap().entry(kind).copied()
}

#[test]
fn coded_centroids_answer_as_the_local_index_at_every_nprobe_and_filter() {
    let cases = [
        (Metric::L2, 40, 1, false, 90),
        (Metric::Cosine, 96, 4, false, 120),
        (Metric::Dot, 24, 3, false, 70),
        (Metric::L2, 64, 4, true, 100),
        (Metric::Dot, 16, 2, true, 60),
    ];
    for (metric, dim, bits_per, codes_only, partitions) in cases {
        let params = IvfParams { partitions: Some(partitions), seed: 3, bits: Some(bits_per), codes_only };
        let (coded, flat, local) = layouts(metric, dim, 6000, params, 0);
        let what = format!("{metric:?} {dim}-d {bits_per} bits codes only {codes_only}");
        // The writer coded the centroids: the codes hot, the centroids cold; with hot room for
        // them, it did not.
        let (g, c) = (entry(&coded, KIND_CODES).unwrap(), entry(&coded, shoal_format::KIND_IVF_CENTROIDS));
        assert!(g.flags & shoal_format::SECTION_HOT != 0 && c.unwrap().flags & shoal_format::SECTION_HOT == 0);
        assert!(entry(&flat, KIND_CODES).is_none());
        let (mut seg, opened, open_waves) = open(&coded);
        assert_eq!(open_waves, 1, "{what}: one request opens it");
        // Ranges fetched as asked, not merged: a search reads some centroids, not all of them
        // (merged, a small index's centroids are one range).
        seg.set_merge_gap(0);
        let centroids = entry(&coded, shoal_format::KIND_IVF_CENTROIDS).unwrap();
        let (mut partial, mut most) = (0, 0);
        assert!(seg.bootstrap_len() < open(&flat).0.bootstrap_len(), "{what}: the bootstrap region shrank");
        let (flat_seg, flat_opened, _) = open(&flat);
        let mut extra = [0usize; 4];
        let queries = clustered_vectors(77, 36, dim, 40);
        for (i, q) in queries.chunks_exact(dim).enumerate() {
            let body = match i % 9 {
                0 => json!({"limit": 10}),
                1 => json!({"limit": 10, "params": {"nprobe": 1}}),
                2 => json!({"limit": 4, "offset": 3, "params": {"nprobe": 7}}),
                3 => json!({"limit": 10, "params": {"nprobe": partitions}}),
                4 => json!({"limit": 10, "params": {"nprobe": 100_000}}),
                // A filter: 1 in 4 rows (the IVF search checking rows), a few (the exact scan),
                // a range (the IVF search over the matching set or checking rows).
                5 => json!({"limit": 10, "filter": {"must": [{"key": "tag", "match": {"value": "t2"}}]}}),
                6 => json!({"limit": 5, "filter": {"must": [{"key": "n", "range": {"lt": 40}}]}}),
                7 => json!({"limit": 10, "filter": {"must": [{"key": "n", "range": {"gte": 1000, "lt": 3500}}]}}),
                _ => json!({"limit": 300}),
            };
            let req = request(body, q);
            let want = local.search(&req).unwrap();
            let mut cold = opened.clone();
            let (got, waves) = drive(&coded, &mut cold, |c| seg.search(&req, c)).unwrap();
            let read = (centroids.offset..centroids.offset + centroids.length)
                .step_by(dim * 4)
                .filter(|&at| cold.contains(&(at..at + 4)))
                .count();
            partial += usize::from(read > 0 && read < partitions);
            most = most.max(read);
            assert_eq!(bits(&got), bits(&want), "{what}, query {i}");
            assert_eq!(got.stats, want.stats, "{what}, query {i}");
            // Warm, it fetches nothing.
            let mut warm = opened.clone();
            drive(&coded, &mut warm, |c| seg.search(&req, c)).unwrap();
            assert_eq!(drive(&coded, &mut warm, |c| seg.search(&req, c)).unwrap().1, 0);
            let (_, flat_waves) = drive(&flat, &mut flat_opened.clone(), |c| flat_seg.search(&req, c)).unwrap();
            extra[(waves - flat_waves).min(3)] += 1;
        }
        eprintln!(
            "{what}: cold searches by waves more than with hot centroids {extra:?}; {partial} read some centroids, \
             at most {most} of {partitions}"
        );
        assert!(extra[1] > 0, "{what}: the centroids cost a wave");
        assert_eq!(extra[2] + extra[3], 0, "{what}: never more than one (the first members proven enough)");
        assert!(partial >= 20, "{what}: the searches that read some centroids only, proven enough: {partial}");
    }
}

#[test]
fn a_search_short_of_k_probes_on_through_more_centroids() {
    // 300 points in 150 partitions, 4 points each on average: a search for 60 probes on far
    // past `nprobe`, fetching centroids as it goes.
    let params = IvfParams { partitions: Some(150), seed: 8, bits: Some(2), codes_only: false };
    let (coded, _, local) = layouts(Metric::L2, 12, 300, params, 0);
    let (mut seg, opened, _) = open(&coded);
    seg.set_merge_gap(0);
    let mut most = 0;
    for (i, q) in clustered_vectors(5, 8, 12, 40).chunks_exact(12).enumerate() {
        for body in [json!({"limit": 60, "params": {"nprobe": 2}}), json!({"limit": 299}), json!({"limit": 1000})] {
            let req = request(body.clone(), q);
            let want = local.search(&req).unwrap();
            let (got, waves) = drive(&coded, &mut opened.clone(), |c| seg.search(&req, c)).unwrap();
            assert_eq!(bits(&got), bits(&want), "query {i}, {body}");
            most = most.max(waves);
        }
    }
    // Centroids, partitions, vectors: past 3 waves, a first set of centroids was proven short.
    assert!(most > 3, "at most {most} waves");
}

#[test]
fn damaged_centroids_or_codes_are_errors_never_answers() {
    let params = IvfParams { partitions: Some(80), seed: 1, bits: Some(1), codes_only: false };
    let (coded, _, local) = layouts(Metric::L2, 32, 4000, params, 0);
    let (mut seg, opened, _) = open(&coded);
    seg.set_merge_gap(0);
    let q = clustered_vectors(9, 1, 32, 40);
    let req = request(json!({"limit": 10}), &q);
    let want = local.search(&req).unwrap();
    let c = entry(&coded, shoal_format::KIND_IVF_CENTROIDS).unwrap();
    let (mut caught, mut same) = (0, 0);
    for at in (c.offset..c.offset + c.length).step_by(97) {
        let mut bad = coded.clone();
        bad[at as usize] ^= 0x10;
        match drive(&bad, &mut opened.clone(), |cache| seg.search(&req, cache)) {
            Err(Error::Format(FormatError::ChecksumMismatch { what: "IVF_CENTROIDS", .. })) => caught += 1,
            Ok((got, _)) => {
                assert_eq!(bits(&got), bits(&want), "a flipped byte at {at} went unnoticed");
                same += 1;
            }
            Err(e) => panic!("byte {at}: {e:?}"),
        }
    }
    eprintln!("flipped centroid bytes: {caught} caught, {same} not read");
    assert!(caught > 0 && same > 0);
    // The codes are read at open: a flipped byte there fails it.
    let g = entry(&coded, KIND_CODES).unwrap();
    for at in (g.offset..g.offset + g.length).step_by(53) {
        let mut bad = coded.clone();
        bad[at as usize] ^= 0x01;
        let err = drive(&bad, &mut RangeCache::new(u64::MAX), RemoteSegment::open).unwrap_err();
        assert!(matches!(err, Error::Format(FormatError::ChecksumMismatch { .. })), "byte {at}: {err:?}");
    }
}

#[test]
fn the_layout_is_deterministic_and_keeps_everything_else() {
    let params = IvfParams { partitions: Some(40), seed: 2, bits: Some(3), codes_only: false };
    let (a, flat, _) = layouts(Metric::Cosine, 20, 2000, params, 0);
    let (b, _, _) = layouts(Metric::Cosine, 20, 2000, params, 0);
    assert!(a == b, "the same segment, the same bytes");
    // The same sections but for the codes; the centroids the same bytes.
    for kind in [shoal_format::KIND_IVF_CENTROIDS, shoal_format::KIND_IVF_DIR, shoal_format::KIND_IVF_BLOCKS] {
        let (x, y) = (entry(&a, kind).unwrap(), entry(&flat, kind).unwrap());
        assert_eq!(x.crc, y.crc, "kind {kind}");
    }
    // Just at the budget the centroids stay hot; a byte under, they are coded.
    let bytes = 40 * 20 * 4;
    assert!(entry(&layouts(Metric::Cosine, 20, 2000, params, bytes).0, KIND_CODES).is_none());
    assert!(entry(&layouts(Metric::Cosine, 20, 2000, params, bytes - 1).0, KIND_CODES).is_some());
}

#[test]
fn filters_that_widen_the_probes_answer_as_locally() {
    // 5-10% of the rows pass (below the 10% at which a search widens its probes): the IVF
    // search checking rows, its probes widened, over coded centroids.
    for (metric, dim, bits_per, codes_only, partitions) in
        [(Metric::L2, 40, 1, false, 90), (Metric::Cosine, 96, 4, false, 120), (Metric::Dot, 24, 3, false, 70)]
    {
        let params = IvfParams { partitions: Some(partitions), seed: 3, bits: Some(bits_per), codes_only };
        let (coded, _, local) = layouts(metric, dim, 6000, params, 0);
        let (mut seg, opened, _) = open(&coded);
        seg.set_merge_gap(0);
        let mut widened = 0;
        for (i, q) in clustered_vectors(91, 12, dim, 40).chunks_exact(dim).enumerate() {
            for (lt, limit) in [(310, 1), (420, 3), (590, 2)] {
                let body = json!({"limit": limit, "filter": {"must": [{"key": "n", "range": {"lt": lt}}]}});
                let req = request(body.clone(), q);
                let want = local.search(&req).unwrap();
                let (got, _) = drive(&coded, &mut opened.clone(), |c| seg.search(&req, c)).unwrap();
                assert_eq!(bits(&got), bits(&want), "{metric:?} query {i}, {body}");
                assert_eq!(got.stats, want.stats, "{metric:?} query {i}, {body}");
                widened += usize::from(!want.stats.exact);
            }
        }
        assert!(widened > 0, "{metric:?}: some searches ran the IVF search with widened probes");
    }
}

#[test]
fn a_filter_whose_rows_lie_far_costs_a_wave_or_two_more_not_one_per_doubling() {
    // 6% of the rows pass, all far from the query, `nprobe` 1: the local search probes on
    // through most partitions. The centroids it needs are found by the rows their partitions
    // hold, not by doubling a guess a wave at a time.
    let (dim, n) = (8, 20_000);
    let data = clustered_vectors(5, n, dim, 400);
    let mut xs: Vec<f32> = data.chunks_exact(dim).map(|v| v[0]).collect();
    xs.sort_by(f32::total_cmp);
    let cut = xs[n * 94 / 100];
    let schema = json!({"tag": "keyword"});
    let config = CollectionConfig { dim, metric: Metric::L2 };
    let mut col = Collection::with_schema(config, Collection::parse_schema(&schema).unwrap()).unwrap();
    let payloads: Vec<Value> =
        data.chunks_exact(dim).map(|v| json!({"tag": if v[0] > cut { "far" } else { "near" }})).collect();
    col.insert_with_payloads(&(0..n as u64).collect::<Vec<_>>(), &data, &payloads).unwrap();
    let params = IvfParams { partitions: Some(1000), seed: 3, bits: Some(1), codes_only: false };
    col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
    let seg = col.segment(0).unwrap();
    let coded = write_for_ranges_with(seg, 0).unwrap().as_slice().to_vec();
    let flat = write_for_ranges_with(seg, usize::MAX).unwrap().as_slice().to_vec();
    let local = Collection::from_bytes(write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    let ((cseg, copened, _), (fseg, fopened, _)) = (open(&coded), open(&flat));
    let lowest = data.chunks_exact(dim).min_by(|a, b| a[0].total_cmp(&b[0])).unwrap().to_vec();
    let filter = json!({"must": [{"key": "tag", "match": {"value": "far"}}]});
    for body in
        [json!({"limit": 10, "params": {"nprobe": 1}, "filter": filter}), json!({"limit": 10, "filter": filter})]
    {
        let req = request(body.clone(), &lowest);
        let want = local.search(&req).unwrap();
        assert!(!want.stats.exact, "{body}: the IVF search");
        let (got, coded_waves) = drive(&coded, &mut copened.clone(), |c| cseg.search(&req, c)).unwrap();
        let (_, hot_waves) = drive(&flat, &mut fopened.clone(), |c| fseg.search(&req, c)).unwrap();
        assert_eq!(bits(&got), bits(&want), "{body}");
        assert!(coded_waves <= hot_waves + 2, "{body}: {coded_waves} waves, {hot_waves} with hot centroids");
    }
}
