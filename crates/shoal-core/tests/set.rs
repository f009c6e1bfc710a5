//! Collections as segment sets: the same points in one segment or in several (with deletes
//! and an unsealed part) answer alike — exact vector results bit for bit, BM25 scores bit for
//! bit (the set's statistics); seals add segments, merges (by policy or on demand) drop deleted
//! rows; a set written as a manifest and files opens again with the same answers; a damaged or
//! inconsistent file is a typed error; a merge over a damaged segment fails and changes nothing;
//! the swaps of background seals and merges carry over the deletes made meanwhile.

use proptest::prelude::*;
use serde_json::{Value, json};
use shoal_core::set::{Manifest, MergePolicy};
use shoal_core::{
    AlignedBytes, Collection, CollectionConfig, Error, IndexKind, Metric, PointId, Schema, SearchRequest,
};
use shoal_testkit::scenario::{open_set, write_set};
use shoal_testkit::{Rng, clustered_vectors};

const WORDS: [&str; 12] =
    ["whale", "ocean", "salt", "river", "fish", "reef", "coral", "tide", "storm", "blue", "wave", "sand"];

fn schema() -> Schema {
    Schema::from_json(r#"{"title": "text", "tag": "keyword", "n": "integer"}"#).unwrap()
}

fn doc(rng: &mut Rng, i: u64) -> Value {
    let len = 1 + rng.below(8) as usize;
    let words: Vec<&str> = (0..len).map(|_| WORDS[(rng.below(144) as f64).sqrt() as usize]).collect();
    let tag = ["a", "b", "c"][(i % 3) as usize];
    json!({"title": words.join(" "), "tag": tag, "n": i % 50})
}

struct Points {
    ids: Vec<u64>,
    vectors: Vec<f32>,
    docs: Vec<Value>,
}

const DIM: usize = 12;

fn points(n: usize, seed: u64) -> Points {
    let mut rng = Rng::new(seed);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 5 + 2).collect();
    let docs = ids.iter().map(|&i| doc(&mut rng, i)).collect();
    Points { ids, vectors: clustered_vectors(seed, n, DIM, 8), docs }
}

fn empty() -> Collection {
    Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::L2 }, schema()).unwrap()
}

/// The points inserted in batches ending at each of `cuts`, each sealed into a segment of its
/// own (no merges), and the rest after the last cut left unsealed.
fn split(p: &Points, cuts: &[usize]) -> Collection {
    let mut col = empty();
    col.set_merge_policy(MergePolicy { merge_factor: 1000, ..MergePolicy::default() });
    let mut from = 0;
    let n = p.ids.len();
    for (i, &to) in cuts.iter().chain([&n]).enumerate() {
        col.insert_with_payloads(&p.ids[from..to], &p.vectors[from * DIM..to * DIM], &p.docs[from..to]).unwrap();
        if i < cuts.len() {
            col.seal();
        }
        from = to;
    }
    assert_eq!(col.segment_count(), cuts.len());
    col
}

/// `(id, score bits)` of a request's results.
fn answer(col: &Collection, json: &str) -> Vec<(u64, u32)> {
    let req = SearchRequest::from_json(json).unwrap();
    col.search(&req).unwrap().points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect()
}

fn vector_json(v: &[f32]) -> String {
    serde_json::to_string(v).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A document's BM25 score does not depend on which segment holds it: the set's statistics
    /// are sums over every segment and the unsealed part.
    #[test]
    fn bm25_scores_are_the_same_in_one_segment_or_five(seed in any::<u64>(), n in 40usize..200, q in 0usize..12) {
        let p = points(n, seed);
        let one = split(&p, &[n]);
        let cuts: Vec<usize> = (1..5).map(|i| i * n / 5).collect();
        let five = split(&p, &cuts);
        let query = format!("{} {}", WORDS[q], WORDS[(q * 7 + 3) % 12]);
        for extra in ["", r#", "filter": {"must": [{"key": "tag", "match": {"value": "b"}}]}"#] {
            let req = format!(r#"{{"text": {}, "limit": 20{extra}}}"#, json!(query));
            let (a, b) = (answer(&one, &req), answer(&five, &req));
            prop_assert_eq!(&a, &b, "{}", req);
        }
        // The same with the last fifth unsealed in both.
        let one_open = split(&p, &[cuts[3]]);
        let req = format!(r#"{{"text": {}, "limit": 20}}"#, json!(query));
        prop_assert_eq!(answer(&one_open, &req), answer(&five, &req));
    }

    /// Exact vector search over several segments and an unsealed part equals one segment's.
    #[test]
    fn exact_results_are_the_same_in_one_segment_or_several(seed in any::<u64>(), n in 20usize..300, k in 1usize..30) {
        let p = points(n, seed);
        let one = split(&p, &[n]);
        let several = split(&p, &[n / 4, n / 2, 3 * n / 4]);
        let q = &p.vectors[(seed as usize % n) * DIM..][..DIM];
        for filter in ["", r#", "filter": {"must": [{"key": "n", "range": {"gte": 10, "lt": 30}}]}"#] {
            let req = format!(r#"{{"vector": {}, "limit": {k}{filter}}}"#, vector_json(q));
            prop_assert_eq!(answer(&one, &req), answer(&several, &req));
        }
    }
}

#[test]
fn seals_add_segments_and_the_policy_merges_them_dropping_deleted_rows() {
    let p = points(900, 3);
    let mut col = empty();
    col.set_merge_policy(MergePolicy { merge_factor: 3, min_merge_rows: 1000, ..MergePolicy::default() });
    for b in 0..9 {
        let r = b * 100..(b + 1) * 100;
        col.insert_with_payloads(&p.ids[r.clone()], &p.vectors[r.start * DIM..r.end * DIM], &p.docs[r]).unwrap();
        col.delete(&nums(&[p.ids[b * 100 + 7]])).unwrap();
        col.seal();
    }
    // 9 seals of one tier: every third one merged three, then the three merged ones.
    assert_eq!(col.segment_count(), 1, "{:?}", col.segments());
    assert_eq!(col.len(), 900 - 9);
    assert_eq!(col.segments()[0].rows, 891, "deleted rows are dropped by merges");
    assert!(!col.contains(PointId::Num(p.ids[7])) && col.contains(PointId::Num(p.ids[8])));
    col.verify().unwrap();
}

#[test]
fn a_written_set_opens_with_the_same_answers_and_live_rows() {
    let p = points(600, 4);
    let mut col = split(&p, &[200, 400]);
    col.delete(&nums(&p.ids[100..150])).unwrap(); // segment 0
    col.delete(&nums(&p.ids[390..410])).unwrap(); // segments 1 and the unsealed part
    // Upserts: new versions of points of segment 0 go to the unsealed part.
    col.insert_with_payloads(&p.ids[..10], &p.vectors[DIM..11 * DIM], &p.docs[1..11]).unwrap();
    let q = vector_json(&p.vectors[5 * DIM..6 * DIM]);
    let reqs = [
        format!(r#"{{"vector": {q}, "limit": 25}}"#),
        format!(
            r#"{{"vector": {q}, "limit": 25, "filter": {{"must": [{{"key": "tag", "match": {{"value": "a"}}}}]}}}}"#
        ),
        r#"{"text": "whale ocean", "limit": 25}"#.to_string(),
        format!(r#"{{"vector": {q}, "text": "reef", "limit": 25}}"#),
    ];
    let (manifest, files) = write_set(&mut col);
    let want: Vec<_> = reqs.iter().map(|r| answer(&col, r)).collect();
    let m = Manifest::from_json(manifest.as_bytes()).unwrap();
    assert_eq!(m.segments.len(), 3);
    assert!(m.segments[0].live.is_some() && m.segments[1].live.is_some() && m.segments[2].live.is_none());
    assert_eq!(m.segments[0].live.as_ref().unwrap().rows, 200 - 50 - 10);
    let again = open_set(&manifest, &files);
    again.verify().unwrap();
    assert_eq!(again.len(), col.len());
    for (r, w) in reqs.iter().zip(&want) {
        assert_eq!(&answer(&again, r), w, "{r}");
    }
    // A second checkpoint without changes writes no live-rows file and the same entries.
    let cp = col.checkpoint(None);
    assert!(cp.live_files.is_empty());
    assert_eq!(cp.manifest.segments, m.segments);
    assert_eq!(cp.manifest.generation, m.generation + 1);
    // A delete makes one new live-rows file, for that segment only (the upserted id 0 was
    // sealed into the third segment by `write_set`).
    col.delete(&nums(&p.ids[0..1])).unwrap();
    let cp = col.checkpoint(None);
    assert_eq!(cp.live_files.len(), 1);
    assert_eq!(cp.live_files[0].0, shoal_core::set::live_name(&m.segments[2].file, m.generation + 1));
}

/// Opens a set whose files went through `damage`.
fn open_damaged(
    manifest: &str,
    files: &[(String, Vec<u8>)],
    damage: impl Fn(&str, &mut Vec<u8>),
) -> Result<Collection, Error> {
    let files: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(n, b)| {
            let mut b = b.clone();
            damage(n, &mut b);
            (n.clone(), b)
        })
        .collect();
    let m = Manifest::from_json(manifest.as_bytes())?;
    let find = |name: &str| files.iter().find(|f| f.0 == name).map(|f| f.1.clone());
    Collection::open_set(
        &m,
        &mut |e| Ok(Box::new(AlignedBytes::from_slice(&find(&e.file).ok_or(Error::BadSet("missing".into()))?))),
        &mut |l| find(&l.file).ok_or(Error::BadSet("missing".into())),
    )
}

#[test]
fn inconsistent_or_damaged_set_files_are_typed_errors() {
    let p = points(300, 5);
    let mut col = split(&p, &[100, 200]);
    col.delete(&nums(&p.ids[10..20])).unwrap();
    let (manifest, files) = write_set(&mut col);
    assert!(open_damaged(&manifest, &files, |_, _| {}).is_ok());
    // A live-rows file with a flipped bit, truncated, or of another segment.
    let live = |n: &str| n.contains(".live-");
    for damage in [
        (|n: &str, b: &mut Vec<u8>| {
            if n.contains(".live-") {
                b[40] ^= 1
            }
        }) as fn(&str, &mut Vec<u8>),
        |n, b| {
            if n.contains(".live-") {
                b.truncate(b.len() - 8)
            }
        },
        |n, b| {
            if n.contains(".live-") {
                b[16] ^= 1
            }
        },
    ] {
        assert!(matches!(open_damaged(&manifest, &files, damage), Err(Error::BadSet(_))));
    }
    assert!(files.iter().any(|f| live(&f.0)));
    // A segment replaced by another one (the name's table CRC no longer matches).
    let other = files[1].1.clone();
    let swapped = open_damaged(&manifest, &files, |n, b| {
        if n == files[0].0 {
            *b = other.clone()
        }
    });
    assert!(matches!(swapped, Err(Error::BadSet(_))), "{swapped:?}");
    // A truncated segment: the container's own check.
    assert!(matches!(
        open_damaged(&manifest, &files, |n, b| if n == files[0].0 {
            b.truncate(64)
        }),
        Err(Error::Format(_))
    ));
    // A manifest naming a file twice, or a broken manifest.
    let m = Manifest::from_json(manifest.as_bytes()).unwrap();
    let mut twice = m.clone();
    twice.segments.push(m.segments[0].clone());
    assert!(open_damaged(&String::from_utf8(twice.to_json()).unwrap(), &files, |_, _| {}).is_err());
    assert!(matches!(open_damaged("{\"dim\": 3}", &files, |_, _| {}), Err(Error::BadSet(_))));
    // An id live in two segments.
    let mut col2 = empty();
    col2.insert_with_payloads(&p.ids[..5], &p.vectors[..5 * DIM], &p.docs[..5]).unwrap();
    let (m2, f2) = write_set(&mut col2);
    let mut dup = Manifest::from_json(m2.as_bytes()).unwrap();
    let mut entry = dup.segments[0].clone();
    let seg = f2.iter().find(|f| f.0 == entry.file).unwrap().1.clone();
    let name = shoal_core::set::segment_name(99, u32::from_str_radix(&entry.table_crc, 16).unwrap());
    entry.file = name.clone();
    dup.segments.push(entry);
    let mut files2 = f2.clone();
    files2.push((name, seg));
    assert!(matches!(
        open_damaged(&String::from_utf8(dup.to_json()).unwrap(), &files2, |_, _| {}),
        Err(Error::BadSet(e)) if e.contains("live in two segments")
    ));
}

#[test]
fn a_merge_over_a_damaged_segment_fails_and_changes_nothing() {
    let p = points(300, 6);
    let mut col = split(&p, &[100, 200]);
    let (manifest, files) = write_set(&mut col);
    // Flip a byte inside the first segment's vectors (past header and table: it still opens).
    let target = files[0].0.clone();
    let mut damaged = open_damaged(&manifest, &files, |n, b| {
        if *n == target {
            let at = b.len() - 200;
            b[at] ^= 0x40;
        }
    })
    .unwrap();
    let q = vector_json(&p.vectors[150 * DIM..151 * DIM]);
    let req = format!(r#"{{"vector": {q}, "limit": 10}}"#);
    let before = answer(&damaged, &req);
    let segments = damaged.segments();
    assert!(damaged.verify().is_err());
    assert!(matches!(damaged.merge(&[0, 1]), Err(Error::Format(_))));
    assert!(matches!(damaged.compact(), Err(Error::Format(_))));
    assert_eq!(damaged.segments(), segments, "nothing was rewritten");
    assert_eq!(answer(&damaged, &req), before, "the collection keeps serving its state");
    // The undamaged segments merge.
    damaged.merge(&[1, 2]).unwrap();
    assert_eq!(damaged.segment_count(), 2);
}

#[test]
fn background_swaps_carry_over_the_deletes_made_meanwhile() {
    let p = points(400, 7);
    let mut col = split(&p, &[100, 200]);
    // A seal snapshot of the unsealed rows (200..400), then writes before the swap.
    let snap = col.seal_snapshot().unwrap();
    let seg = std::sync::Arc::new(shoal_core::SealedSegment::open(Box::new(snap.build(&col.kernels()))).unwrap());
    col.delete(&nums(&[p.ids[250], p.ids[50]])).unwrap();
    col.insert_with_payloads(&p.ids[260..261], &p.vectors[0..DIM], &p.docs[0..1]).unwrap(); // upsert
    col.insert_with_payloads(&[9_999_999], &p.vectors[0..DIM], &p.docs[0..1]).unwrap(); // new
    col.attach_sealed(snap, Some(seg));
    assert_eq!(col.segment_count(), 3);
    assert_eq!(col.len(), 400 - 2 + 1);
    assert!(!col.contains(PointId::Num(p.ids[250])) && !col.contains(PointId::Num(p.ids[50])));
    assert!(col.contains(PointId::Num(9_999_999)) && col.vector(PointId::Num(p.ids[260])) == Some(&p.vectors[0..DIM]));
    // A merge snapshot of segments 0 and 1, then deletes in both before the swap.
    let merge = col.merge_snapshot(&[0, 1]).unwrap();
    let merged =
        std::sync::Arc::new(shoal_core::SealedSegment::open(Box::new(merge.build(&col.kernels()).unwrap())).unwrap());
    col.delete(&nums(&[p.ids[10], p.ids[110]])).unwrap();
    col.insert_with_payloads(&p.ids[120..121], &p.vectors[0..DIM], &p.docs[0..1]).unwrap();
    assert_eq!(col.attach_merged(merge, merged).unwrap(), 0);
    assert_eq!(col.segment_count(), 2);
    assert!(!col.contains(PointId::Num(p.ids[10])) && !col.contains(PointId::Num(p.ids[110])));
    assert_eq!(col.vector(PointId::Num(p.ids[120])), Some(&p.vectors[0..DIM]));
    assert_eq!(col.len(), 400 - 2 + 1 - 2);
    // Every live id answers once: ids are unique across the set.
    let all = col.matching_ids(None).unwrap();
    let mut dedup = all.clone();
    dedup.dedup();
    assert_eq!(all, dedup);
    assert_eq!(all.len(), col.len());
}

#[test]
fn fields_added_after_a_segment_was_written_hold_no_value_there() {
    let p = points(100, 8);
    let mut col = split(&p, &[50]);
    let wider =
        Schema::from_json(r#"{"title": "text", "tag": "keyword", "n": "integer", "color": "keyword"}"#).unwrap();
    col.extend_schema(wider).unwrap();
    assert_eq!(col.segment_count(), 1, "extending the schema rewrites nothing");
    col.insert_with_payloads(&[1_000_001], &p.vectors[..DIM], &[json!({"color": "red", "tag": "a"})]).unwrap();
    col.seal();
    let q = vector_json(&p.vectors[..DIM]);
    let red = format!(
        r#"{{"vector": {q}, "limit": 200, "filter": {{"must": [{{"key": "color", "match": {{"value": "red"}}}}]}}}}"#
    );
    assert_eq!(answer(&col, &red).iter().map(|r| r.0).collect::<Vec<_>>(), [1_000_001]);
    let empty_color =
        format!(r#"{{"vector": {q}, "limit": 200, "filter": {{"must": [{{"is_empty": {{"key": "color"}}}}]}}}}"#);
    assert_eq!(answer(&col, &empty_color).len(), 100);
    assert_eq!(col.payload(PointId::Num(1_000_001)), Some(json!({"color": "red", "tag": "a"})));
}

#[test]
fn a_new_index_rebuilds_the_set_as_one_segment() {
    let p = points(500, 9);
    let mut col = split(&p, &[200, 400]);
    col.delete(&nums(&p.ids[..30])).unwrap();
    col.seal_with(IndexKind::from_json(r#"{"index": "ivf-rabitq", "partitions": 8}"#).unwrap()).unwrap();
    assert_eq!(col.segment_count(), 1);
    assert_eq!(col.len(), 470);
    assert!(col.segment(0).unwrap().ivf().is_some());
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}
