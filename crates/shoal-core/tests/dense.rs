//! Several dense vectors per point: every search of every vector — exact, IVF, filtered, over
//! sets of segments with unsealed rows, deletes and upserts, after merges, a compaction and a
//! round trip through a manifest — equals the brute-force oracle over the live points' vectors
//! of that name; every score an IVF search returns is the exact score of the point it names
//! (the position → row maps); bad input and damaged position maps are typed errors.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use shoal_core::set::Manifest;
use shoal_core::{
    Collection, CollectionConfig, DenseSpec, Error, IndexKind, Metric, PointId, Schema, SearchRequest, SparseSpec,
};
use shoal_testkit::Rng;
use shoal_testkit::oracle::{normalized, top_k};

/// The collection's vectors, by name: `""` is vector 0.
fn specs() -> Vec<DenseSpec> {
    vec![
        DenseSpec { name: "text".into(), dim: 7, metric: Metric::L2 },
        DenseSpec { name: "".into(), dim: 4, metric: Metric::Dot },
        DenseSpec { name: "image".into(), dim: 5, metric: Metric::Cosine },
    ]
}

fn new_collection(index: IndexKind) -> Collection {
    let schema = Schema::from_json(r#"{"tag": "keyword"}"#).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: 1, metric: Metric::L2 }, schema).unwrap();
    col.set_dense_vectors(specs()).unwrap();
    let names: Vec<&str> = col.dense_vectors().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["", "image", "text"]);
    assert_eq!((col.dim(), col.metric()), (4, Metric::Dot));
    col.set_index_kind(index).unwrap();
    col
}

fn ivf() -> IndexKind {
    IndexKind::from_json(r#"{"index": "ivf-rabitq", "partitions": 6, "bits": 2}"#).unwrap()
}

/// What the test knows of a live point: its three vectors (as given) and its tag.
type Model = BTreeMap<PointId, ([Vec<f32>; 3], String)>;

fn id(i: u64) -> PointId {
    if i.is_multiple_of(3) { PointId::Uuid([i as u8; 16]) } else { PointId::Num(i) }
}

fn upsert(col: &mut Collection, model: &mut Model, rng: &mut Rng, ids: &[PointId]) {
    let dims = [4, 5, 7];
    let mut cols: [Vec<f32>; 3] = Default::default();
    let mut payloads = Vec::new();
    for &pid in ids {
        let vs: [Vec<f32>; 3] = dims.map(|d| (0..d).map(|_| rng.signed_f32()).collect());
        for (c, v) in cols.iter_mut().zip(&vs) {
            c.extend_from_slice(v);
        }
        let tag = ["a", "b", "c"][rng.below(3) as usize].to_string();
        payloads.push(json!({ "tag": tag }));
        model.insert(pid, (vs, tag));
    }
    let dense: Vec<&[f32]> = cols.iter().map(Vec::as_slice).collect();
    col.upsert_vectors(ids, &dense, &payloads, &[]).unwrap();
}

fn search(col: &Collection, req: Value) -> Vec<(PointId, f32)> {
    let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
    res.points.iter().map(|p| (p.id, p.score)).collect()
}

/// The brute-force answer for vector `d` (its metric; cosine over normalised vectors, as
/// stored; the oracle normalises the query), optionally only points tagged `tag`.
fn expected(model: &Model, d: usize, query: &[f32], tag: Option<&str>, k: usize) -> Vec<(PointId, f32)> {
    let metric = [Metric::Dot, Metric::Cosine, Metric::L2][d];
    let points: Vec<(PointId, Vec<f32>)> = model
        .iter()
        .filter(|(_, (_, t))| tag.is_none_or(|g| g == t))
        .map(|(&pid, (vs, _))| (pid, if metric == Metric::Cosine { normalized(&vs[d]) } else { vs[d].clone() }))
        .collect();
    top_k(metric, &points, query, k)
}

/// Checks every vector's searches against the oracle: exact ones equal it (ids and score bits;
/// ties may order differently only among equal scores), IVF ones give each point its exact
/// score and, probing everything with a deep re-rank, the same answer.
fn check_all(col: &Collection, model: &Model, rng: &mut Rng, what: &str) {
    let names = ["", "image", "text"];
    for (d, name) in names.iter().enumerate() {
        let dim = [4, 5, 7][d];
        for _ in 0..3 {
            let q: Vec<f32> = (0..dim).map(|_| rng.signed_f32()).collect();
            let metric = [Metric::Dot, Metric::Cosine, Metric::L2][d];
            for tag in [None, Some("b")] {
                let want = expected(model, d, &q, tag, 10);
                let filter = tag.map(|t| json!({"must": [{"key": "tag", "match": {"value": t}}]}));
                let base = json!({"vector": q, "using": name, "limit": 10, "filter": filter});
                let mut exact = base.clone();
                exact["params"] = json!({"exact": true});
                let got = search(col, exact);
                assert_same(&got, &want, &format!("{what}: exact, vector {name:?}, tag {tag:?}"));
                let mut all = base.clone();
                all["params"] = json!({"nprobe": 1000, "rerank": 1000});
                let got = search(col, all);
                assert_same(&got, &want, &format!("{what}: all probes, vector {name:?}, tag {tag:?}"));
                // Default settings: whatever is found carries its own exact score.
                for (pid, score) in search(col, base) {
                    let (vs, t) = &model[&pid];
                    assert!(tag.is_none_or(|g| g == t), "{what}: {pid} does not pass the filter");
                    let stored = if metric == Metric::Cosine { normalized(&vs[d]) } else { vs[d].clone() };
                    let one = top_k(metric, &[(pid, stored)], &q, 1);
                    assert_eq!(score.to_bits(), one[0].1.to_bits(), "{what}: {pid}'s score in vector {name:?}");
                }
            }
        }
    }
}

/// Same ids and score bits, position by position, except that points with equal scores may
/// come in another order.
fn assert_same(got: &[(PointId, f32)], want: &[(PointId, f32)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: {got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.1.to_bits(), w.1.to_bits(), "{what}: {got:?} vs {want:?}");
    }
    let ties = |s: f32, l: &[(PointId, f32)]| l.iter().filter(|p| p.1.to_bits() == s.to_bits()).count();
    for g in got {
        let at_most = ties(g.1, want);
        assert!(want.iter().any(|w| w.0 == g.0) || ties(g.1, got) <= at_most, "{what}: {got:?} vs {want:?}");
    }
}

#[test]
fn every_dense_vector_answers_as_the_oracle_over_its_own_vectors() {
    for index in [IndexKind::Flat, ivf()] {
        let mut rng = Rng::new(11);
        let mut col = new_collection(index);
        let mut model = Model::new();
        col.set_merge_policy(shoal_core::set::MergePolicy { merge_factor: 3, ..Default::default() });
        for round in 0..6u64 {
            let ids: Vec<PointId> = (0..40).map(|i| id(round * 30 + i)).collect(); // overlaps: upserts
            upsert(&mut col, &mut model, &mut rng, &ids);
            let gone: Vec<PointId> = model.keys().copied().filter(|_| rng.below(8) == 0).collect();
            col.delete(&gone).unwrap();
            gone.iter().for_each(|g| {
                model.remove(g);
            });
            check_all(&col, &model, &mut rng, &format!("{index:?} round {round} unsealed"));
            col.seal();
            check_all(&col, &model, &mut rng, &format!("{index:?} round {round} sealed"));
        }
        assert!(col.segment_count() > 1, "several segments");
        // Stored vectors come back by number (normalised for cosine).
        for (pid, (vs, _)) in &model {
            assert_eq!(col.dense_vector(*pid, 0).unwrap(), &vs[0][..]);
            assert_eq!(col.dense_vector(*pid, 1).unwrap(), &normalized(&vs[1])[..]);
            assert_eq!(col.dense_vector(*pid, 2).unwrap(), &vs[2][..]);
            assert!(col.dense_vector(*pid, 3).is_none());
        }
        // Through a manifest (layout 2), then compacted, then through bytes.
        let cp = col.checkpoint(None);
        let text = String::from_utf8(cp.manifest.to_json()).unwrap();
        assert!(text.contains(r#""vectors":{"":{"dim":4,"#), "{text}");
        let manifest = Manifest::from_json(text.as_bytes()).unwrap();
        let files: BTreeMap<String, Vec<u8>> = col
            .segments()
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), col.segment(i).unwrap().bytes().to_vec()))
            .chain(cp.live_files.iter().cloned())
            .collect();
        let reopened = Collection::open_set(
            &manifest,
            &mut |e| Ok(Box::new(shoal_core::AlignedBytes::from_slice(&files[&e.file]))),
            &mut |l| Ok(files[&l.file].clone()),
        )
        .unwrap();
        reopened.verify().unwrap();
        check_all(&reopened, &model, &mut Rng::new(5), &format!("{index:?} reopened"));
        col.compact().unwrap();
        check_all(&col, &model, &mut Rng::new(5), &format!("{index:?} compacted"));
        let one = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
        assert_eq!(one.dense_vectors(), col.dense_vectors());
        check_all(&one, &model, &mut Rng::new(5), &format!("{index:?} from bytes"));
    }
}

#[test]
fn a_hybrid_and_a_prefetch_search_the_named_vector() {
    let mut rng = Rng::new(2);
    let mut col = new_collection(ivf());
    let mut model = Model::new();
    upsert(&mut col, &mut model, &mut rng, &(0..80).map(id).collect::<Vec<_>>());
    col.seal();
    let q: Vec<f32> = (0..7).map(|_| rng.signed_f32()).collect();
    let want = expected(&model, 2, &q, None, 5);
    let direct = search(&col, json!({"vector": q, "using": "text", "limit": 5, "params": {"exact": true}}));
    assert_same(&direct, &want, "direct");
    // Re-scoring prefetched points by the named vector.
    let rescored = search(
        &col,
        json!({"prefetch": [{"vector": q, "using": "text", "limit": 40, "params": {"exact": true}}],
               "vector": q, "using": "text", "limit": 5}),
    );
    assert_same(&rescored, &want, "re-scored");
}

#[test]
fn bad_dense_input_is_a_typed_error_and_changes_nothing() {
    let mut col = new_collection(IndexKind::Flat);
    let ids = [PointId::Num(1), PointId::Num(2)];
    let (a, b, c) = (vec![0.5f32; 8], vec![0.5f32; 10], vec![0.5f32; 14]);
    let cases: Vec<(Vec<&[f32]>, &str)> = vec![
        (vec![&a], "3 dense vectors"),
        (vec![&a, &b], "3 dense vectors"),
        (vec![&a, &b, &c[..13]], "14"),
        (vec![&a, &c, &b], "dim"),
    ];
    for (dense, what) in cases {
        let e = col.upsert_vectors(&ids, &dense, &[], &[]).unwrap_err();
        assert!(format!("{e:?} {e}").contains(what), "{what}: {e:?}");
        assert_eq!(col.len(), 0);
    }
    let mut nan = c.clone();
    nan[9] = f32::NAN;
    let e = col.upsert_vectors(&ids, &[&a, &b, &nan], &[], &[]).unwrap_err();
    assert!(matches!(e, Error::NonFinite { point: 1, element: 2 }), "{e:?}");
    // The one-vector calls refuse a collection of several.
    assert!(col.upsert(&ids, &a, &[]).is_err());
    col.reserve(2).unwrap();
    assert!(col.commit(shoal_core::IdEncoding::U64).is_err());
    assert_eq!(col.len(), 0);
    col.upsert_vectors(&ids, &[&a, &b, &c], &[], &[]).unwrap();
    for (req, what) in [
        (json!({"vector": [0, 0, 0, 0], "using": "nope"}), "\"nope\" is not a dense vector"),
        (json!({"vector": [0, 0, 0], "using": ""}), "dimension"),
        (json!({"vector": [0, 0, 0, 0, 0], "using": "text"}), "dimension"),
        (json!({"text": "x", "using": "text"}), "goes with `vector` or `sparse`"),
    ] {
        let e = SearchRequest::from_json(&req.to_string()).and_then(|r| col.search(&r)).unwrap_err();
        assert!(format!("{e:?} {e}").contains(what), "{req}: {e}");
    }
    // Without a vector named "", a search must name one.
    let mut unnamed = Collection::new(CollectionConfig { dim: 2, metric: Metric::L2 }).unwrap();
    let two = |n: &str, dim| DenseSpec { name: n.into(), dim, metric: Metric::L2 };
    unnamed.set_dense_vectors(vec![two("a", 2), two("b", 3)]).unwrap();
    unnamed.upsert_vectors(&ids, &[&[0.0; 4], &[0.0; 6]], &[], &[]).unwrap();
    let e = col_search_err(&unnamed, json!({"vector": [0, 0]}));
    assert!(e.contains("name the one to search"), "{e}");
    // Configuration.
    let mut fresh = Collection::new(CollectionConfig { dim: 2, metric: Metric::L2 }).unwrap();
    for (bad, what) in [
        (vec![], "1 to 16"),
        (vec![two("a", 2), two("a", 3)], "unique"),
        (vec![two("a", 0)], "dim"),
        (vec![two("a\u{7}", 2)], "control"),
        ((0..17).map(|i| two(&format!("v{i:02}"), 2)).collect(), "1 to 16"),
    ] {
        let e = fresh.set_dense_vectors(bad).unwrap_err();
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    fresh.set_sparse_vectors(vec![SparseSpec { name: "s".into(), idf: false }]).unwrap();
    assert!(fresh.set_dense_vectors(vec![two("s", 2), two("t", 2)]).unwrap_err().to_string().contains("share a name"));
    let codes_only = IndexKind::from_json(r#"{"index": "ivf-rabitq", "bits": 2, "codes_only": true}"#).unwrap();
    fresh.set_dense_vectors(vec![two("a", 2), two("b", 2)]).unwrap();
    assert!(fresh.set_index_kind(codes_only).is_err());
    assert!(fresh.seal_with(codes_only).is_err());
    assert!(col.set_dense_vectors(specs()).is_err(), "fixed once a point exists");
}

fn col_search_err(col: &Collection, req: Value) -> String {
    SearchRequest::from_json(&req.to_string()).and_then(|r| col.search(&r)).unwrap_err().to_string()
}

/// A segment whose position maps are damaged but whose checksums are recomputed: a typed error
/// on open, never a panic or another point.
#[test]
fn damaged_position_maps_with_valid_checksums_are_typed_errors() {
    use shoal_format::{DENSE_META, DENSE_POSITIONS, DENSE_ROWS, SegmentReader, SegmentWriter, dense_kind};
    let mut rng = Rng::new(3);
    let mut col = new_collection(ivf());
    upsert(&mut col, &mut Model::new(), &mut rng, &(0..60).map(id).collect::<Vec<_>>());
    let bytes = col.to_bytes().unwrap().to_vec();
    let aligned = shoal_core::AlignedBytes::from_slice(&bytes);
    let reader = SegmentReader::open(aligned.as_slice()).unwrap();
    assert!(reader.section(dense_kind(2, DENSE_ROWS)).is_some(), "vector 2 has an index and maps");
    let rewrite = |kind: u32, damage: &dyn Fn(&mut Vec<u8>)| {
        let mut w = SegmentWriter::new();
        w.set_flags(reader.header().flags);
        let mut copies: Vec<(u32, u32, Vec<u8>)> = reader
            .sections()
            .iter()
            .map(|e| (e.kind, e.flags, aligned.as_slice()[e.offset as usize..(e.offset + e.length) as usize].to_vec()))
            .collect();
        damage(&mut copies.iter_mut().find(|c| c.0 == kind).unwrap().2);
        for (k, f, b) in &copies {
            w.add_section(*k, *f, b);
        }
        let mut out = shoal_core::AlignedBytes::zeroed(w.file_len() as usize);
        w.write_into(out.as_mut_slice());
        out.as_slice().to_vec()
    };
    let set_u32 = |at: usize, v: u32| move |b: &mut Vec<u8>| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let swap = |b: &mut Vec<u8>| {
        let first: Vec<u8> = b[0..4].to_vec();
        b.copy_within(4..8, 0);
        b[4..8].copy_from_slice(&first);
    };
    for (what, damaged) in [
        ("a row past the rows", rewrite(dense_kind(2, DENSE_ROWS), &set_u32(0, 1000))),
        ("two positions swapped in one map only", rewrite(dense_kind(1, DENSE_POSITIONS), &swap)),
        ("another metric", rewrite(dense_kind(1, DENSE_META), &set_u32(4, 77))),
        ("rows that are not the segment's", rewrite(dense_kind(1, DENSE_META), &set_u32(8, 59))),
    ] {
        let e = Collection::from_bytes(&damaged).unwrap_err();
        assert!(matches!(e, Error::Format(_)), "{what}: {e:?}");
    }
}

/// The host's background seal and merge (snapshot, build, swap with writes in between) carry
/// every dense vector; the planner's IVF-with-filter paths (a tiny exact-scan limit) and its
/// exact paths (a huge one) answer as the oracle on the mapped vectors too.
#[test]
fn background_seals_and_merges_and_every_filter_path_keep_every_vector() {
    for index in [IndexKind::Flat, ivf()] {
        let mut rng = Rng::new(5);
        let mut col = new_collection(index);
        let mut model = Model::new();
        for round in 0..3u64 {
            upsert(&mut col, &mut model, &mut rng, &(0..200).map(|i| id(round * 150 + i)).collect::<Vec<_>>());
            let snap = col.seal_snapshot().unwrap();
            // Meanwhile: upserts (some replacing snapshot rows) and deletes.
            upsert(&mut col, &mut model, &mut rng, &(0..40).map(|i| id(round * 150 + 180 + i)).collect::<Vec<_>>());
            let gone: Vec<PointId> = model.keys().copied().filter(|_| rng.below(10) == 0).collect();
            col.delete(&gone).unwrap();
            gone.iter().for_each(|g| {
                model.remove(g);
            });
            let seg = shoal_core::SealedSegment::open(Box::new(snap.build(&col.kernels()))).unwrap();
            col.attach_sealed(snap, Some(std::sync::Arc::new(seg)));
            check_all(&col, &model, &mut rng, &format!("{index:?} round {round} attached"));
        }
        let all: Vec<usize> = (0..col.segment_count()).collect();
        let snap = col.merge_snapshot(&all).unwrap();
        let gone: Vec<PointId> = model.keys().copied().filter(|_| rng.below(7) == 0).collect();
        col.delete(&gone).unwrap();
        gone.iter().for_each(|g| {
            model.remove(g);
        });
        let merged = shoal_core::SealedSegment::open(Box::new(snap.build(&col.kernels()).unwrap())).unwrap();
        col.attach_merged(snap, std::sync::Arc::new(merged)).unwrap();
        check_all(&col, &model, &mut rng, &format!("{index:?} merged"));
        for limit in [3, 1_000_000] {
            col.set_filter_exact_limit(Some(limit));
            check_all(&col, &model, &mut rng, &format!("{index:?} merged, exact-scan limit {limit}"));
        }
    }
}

/// A manifest asking codes-only segments of a collection of several dense vectors is refused
/// on open (its first seal could not be written); a segment with a gap in its dense vectors
/// is refused too.
#[test]
fn inconsistent_manifests_and_gaps_are_typed_errors() {
    let mut col = new_collection(IndexKind::Flat);
    upsert(&mut col, &mut Model::new(), &mut Rng::new(1), &(0..20).map(id).collect::<Vec<_>>());
    let text = String::from_utf8(col.checkpoint(None).manifest.to_json()).unwrap();
    let codes_only = r#""index":{"bits":2,"codes_only":true,"index":"ivf-rabitq","seed":0}"#;
    let text = text.replace(r#""index":{}"#, codes_only);
    let m = Manifest::from_json(text.as_bytes()).unwrap();
    let e = Collection::open_set(&m, &mut |_| unreachable!(), &mut |_| unreachable!()).unwrap_err();
    assert!(matches!(e, Error::BadSet(_)), "{e:?}");
    // Vector 1's sections renumbered as vector 2's: vectors 0 and 2, no 1.
    use shoal_format::{SegmentReader, SegmentWriter, dense_kind};
    let bytes = col.to_bytes().unwrap().to_vec();
    let aligned = shoal_core::AlignedBytes::from_slice(&bytes);
    let reader = SegmentReader::open(aligned.as_slice()).unwrap();
    let mut w = SegmentWriter::new();
    w.set_flags(reader.header().flags);
    let (lo, hi) = (dense_kind(1, 0), dense_kind(2, 0));
    let copies: Vec<(u32, u32, Vec<u8>)> = reader
        .sections()
        .iter()
        .filter(|e| !(hi..hi + 32).contains(&e.kind)) // vector 2 dropped, vector 1 moved there
        .map(|e| {
            let kind = if (lo..lo + 32).contains(&e.kind) { e.kind + 32 } else { e.kind };
            (kind, e.flags, aligned.as_slice()[e.offset as usize..(e.offset + e.length) as usize].to_vec())
        })
        .collect();
    for (k, f, b) in &copies {
        w.add_section(*k, *f, b);
    }
    let mut out = shoal_core::AlignedBytes::zeroed(w.file_len() as usize);
    w.write_into(out.as_mut_slice());
    let e = Collection::from_bytes(out.as_slice()).unwrap_err();
    assert!(matches!(e, Error::Format(_)), "{e:?}");
}
