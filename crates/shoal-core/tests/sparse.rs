//! Sparse vectors: every score equals a naive dot product over the sparse vectors written out
//! here (a map per point, `f32`, indices ascending), with and without the `idf` modifier, over
//! sets of segments with unsealed rows, deletes and upserts (property test); the same points
//! give the same bits however they are split into segments and after a round trip through
//! bytes; fusion with a dense ranking equals the formula; bad input is a typed error.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use shoal_core::{
    Collection, CollectionConfig, Error, Metric, PointId, Schema, SearchRequest, SparseSpec, SparseVector,
};
use shoal_testkit::Rng;
use shoal_testkit::oracle::{Fused, bm25_idf, fused, sparse_dot};

const DIM: usize = 4;
/// Indices drawn from a small range so that points share them.
const INDICES: u64 = 24;

/// A row the collection holds: its id, its weighted vector, whether it is live and sealed.
type HeldRow = (PointId, Option<BTreeMap<u32, f32>>, bool, bool);

/// A point's two sparse vectors ("plain": no modifier, "weighted": idf) as index -> value maps.
type Stored = [Option<BTreeMap<u32, f32>>; 2];

fn specs() -> Vec<SparseSpec> {
    vec![SparseSpec { name: "weighted".into(), idf: true }, SparseSpec { name: "plain".into(), idf: false }]
}

fn new_collection() -> Collection {
    let schema = Schema::from_json(r#"{"tag": "keyword"}"#).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::Dot }, schema).unwrap();
    col.set_sparse_vectors(specs()).unwrap();
    // Stored by name: "plain" is vector 0, "weighted" vector 1.
    assert_eq!(col.sparse_vectors()[0].name, "plain");
    col
}

/// A random sparse vector (maybe empty), in random index order, or none.
fn random_sparse(rng: &mut Rng) -> Option<(Vec<u32>, Vec<f32>)> {
    if rng.below(5) == 0 {
        return None;
    }
    let n = rng.below(7) as usize;
    let mut indices: Vec<u32> = Vec::new();
    while indices.len() < n {
        let i = rng.below(INDICES) as u32;
        if !indices.contains(&i) {
            indices.push(i);
        }
    }
    let values = (0..n).map(|_| rng.signed_f32() * 4.0).collect();
    Some((indices, values))
}

fn map_of((indices, values): &(Vec<u32>, Vec<f32>)) -> BTreeMap<u32, f32> {
    indices.iter().copied().zip(values.iter().copied()).collect()
}

/// The ranking the collection must give for `query` in vector `t` over `points` (every row
/// that counts for the statistics is a live point here), filtered by tag: `(id, score)`.
fn expected(
    points: &BTreeMap<PointId, (Stored, String)>,
    t: usize,
    query: &BTreeMap<u32, f32>,
    tag: Option<&str>,
) -> Vec<(PointId, f32)> {
    let live: Vec<&BTreeMap<u32, f32>> = points.values().filter_map(|(s, _)| s[1].as_ref()).collect();
    expected_with(points, t, query, tag, &live)
}

/// [`expected`] with the weighted vector's statistics taken over `stored`: the rows the
/// collection still holds, deleted ones until a seal drops them.
fn expected_with(
    points: &BTreeMap<PointId, (Stored, String)>,
    t: usize,
    query: &BTreeMap<u32, f32>,
    tag: Option<&str>,
    stored: &[&BTreeMap<u32, f32>],
) -> Vec<(PointId, f32)> {
    let mut q = query.clone();
    if t == 1 {
        let holding = stored;
        let n = holding.len() as u64;
        for (i, w) in q.iter_mut() {
            let df = holding.iter().filter(|m| m.contains_key(i)).count() as u64;
            *w *= bm25_idf(n, df);
        }
    }
    let mut out: Vec<(PointId, f32)> = points
        .iter()
        .filter(|(_, (_, t2))| tag.is_none_or(|tag| tag == t2))
        .filter_map(|(id, (s, _))| Some((*id, sparse_dot(&q, s[t].as_ref()?)?)))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// Checks a result list against the expected ranking: the same scores (bits) in order, and the
/// same ids wherever a score is not tied (ties break by internal id, which the model does not
/// track).
fn check_ranking(got: &[(PointId, f32)], want: &[(PointId, f32)], limit: usize, what: &str) {
    let want = &want[..want.len().min(limit)];
    let bits = |l: &[(PointId, f32)]| l.iter().map(|p| p.1.to_bits()).collect::<Vec<u32>>();
    assert_eq!(bits(got), bits(want), "{what}: scores");
    for (g, w) in got.iter().zip(want) {
        if want.iter().filter(|p| p.1.to_bits() == w.1.to_bits()).count() == 1 {
            assert_eq!(g.0, w.0, "{what}: id at score {}", w.1);
        }
    }
}

fn search(col: &Collection, req: Value) -> Vec<(PointId, f32)> {
    let req = SearchRequest::from_json(&req.to_string()).unwrap();
    col.search(&req).unwrap().points.iter().map(|p| (p.id, p.score)).collect()
}

fn sparse_json(m: &BTreeMap<u32, f32>) -> Value {
    json!({"indices": m.keys().collect::<Vec<_>>(), "values": m.values().collect::<Vec<_>>()})
}

/// Upserts points `ids` with random sparse vectors into `col` and the model.
fn upsert(col: &mut Collection, model: &mut BTreeMap<PointId, (Stored, String)>, rng: &mut Rng, ids: &[PointId]) {
    let mut columns: Vec<Vec<Option<SparseVector>>> = vec![Vec::new(), Vec::new()];
    let mut docs = Vec::new();
    for &id in ids {
        let (plain, weighted) = (random_sparse(rng), random_sparse(rng));
        let tag = ["a", "b"][rng.below(2) as usize].to_string();
        docs.push(json!({ "tag": tag }));
        for (t, v) in [&plain, &weighted].into_iter().enumerate() {
            columns[t].push(v.as_ref().map(|(i, x)| SparseVector::new(i, x).unwrap()));
        }
        model.insert(id, ([plain.as_ref().map(map_of), weighted.as_ref().map(map_of)], tag));
    }
    let vectors = vec![0.5f32; ids.len() * DIM];
    col.upsert_sparse(ids, &vectors, &docs, &columns).unwrap();
}

fn random_query(rng: &mut Rng) -> BTreeMap<u32, f32> {
    loop {
        if let Some(q) = random_sparse(rng).filter(|(i, _)| !i.is_empty()) {
            return map_of(&q);
        }
    }
}

/// Every query of `rounds` random ones, in both vectors, with and without a filter, equals the
/// model (`idf`: whether the weighted vector's statistics are the model's, i.e. no deleted row
/// is still stored).
fn check_queries(col: &Collection, model: &BTreeMap<PointId, (Stored, String)>, rng: &mut Rng, idf_too: bool) {
    let live: Vec<&BTreeMap<u32, f32>> = model.values().filter_map(|(s, _)| s[1].as_ref()).collect();
    check_queries_with(col, model, rng, idf_too.then_some(&live[..]));
}

/// [`check_queries`] with the weighted vector's statistics over `stored` (`None`: that vector
/// is not checked).
fn check_queries_with(
    col: &Collection,
    model: &BTreeMap<PointId, (Stored, String)>,
    rng: &mut Rng,
    stored: Option<&[&BTreeMap<u32, f32>]>,
) {
    for _ in 0..6 {
        let q = random_query(rng);
        for (t, name) in [(0, "plain"), (1, "weighted")] {
            if t == 1 && stored.is_none() {
                continue;
            }
            for tag in [None, Some("a")] {
                let mut req = json!({"sparse": sparse_json(&q), "using": name, "limit": 12});
                if let Some(tag) = tag {
                    req["filter"] = json!({"must": [{"key": "tag", "match": {"value": tag}}]});
                }
                let want = expected_with(model, t, &q, tag, stored.unwrap_or(&[]));
                check_ranking(&search(col, req), &want, 12, name);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Inserts, upserts, deletes and seals in a random order; after each step both vectors'
    /// rankings equal the naive scores, the weighted (idf) one's with statistics over the rows
    /// the collection holds (deleted ones until a seal drops them), then over the live points
    /// after a compaction.
    #[test]
    fn sparse_scores_equal_a_naive_dot_product(seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let mut col = new_collection();
        // No merges (none fits the row cap, no tier fills, no segment is rewritten for its
        // deletes): the rows a seal keeps are then known here (a merge would drop deleted rows).
        col.set_merge_policy(shoal_core::set::MergePolicy {
            merge_factor: usize::MAX,
            max_merge_rows: 0,
            max_deleted_percent: 100,
            ..Default::default()
        });
        let mut model = BTreeMap::new();
        // Every row the collection holds: (id, its weighted vector, live, sealed).
        let mut rows: Vec<HeldRow> = Vec::new();
        for step in 0..8 {
            match rng.below(4) {
                0 | 1 => {
                    let ids: Vec<PointId> = (0..1 + rng.below(30)).map(|_| id(rng.below(80))).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
                    upsert(&mut col, &mut model, &mut rng, &ids);
                    for i in &ids {
                        rows.iter_mut().filter(|r| r.0 == *i).for_each(|r| r.2 = false);
                        rows.push((*i, model[i].0[1].clone(), true, false));
                    }
                }
                2 => {
                    let ids: Vec<PointId> = (0..rng.below(10)).map(|_| id(rng.below(80))).collect();
                    col.delete(&ids).unwrap();
                    for i in &ids {
                        model.remove(i);
                        rows.iter_mut().filter(|r| r.0 == *i).for_each(|r| r.2 = false);
                    }
                }
                _ => {
                    col.seal();
                    // A seal drops the unsealed rows deleted meanwhile; sealed rows stay.
                    rows.retain(|r| r.3 || r.2);
                    rows.iter_mut().for_each(|r| r.3 = true);
                }
            }
            let stored: Vec<&BTreeMap<u32, f32>> = rows.iter().filter_map(|r| r.1.as_ref()).collect();
            check_queries_with(&col, &model, &mut rng, Some(&stored));
            if step % 3 == 2 {
                col.verify().unwrap();
            }
        }
        col.compact().unwrap();
        col.verify().unwrap();
        check_queries(&col, &model, &mut rng, true);
        // A round trip through bytes keeps every bit.
        let again = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
        assert_eq!(again.sparse_vectors(), col.sparse_vectors());
        check_queries(&again, &model, &mut rng, true);
        for (&pid, (stored, _)) in &model {
            for (t, name) in ["plain", "weighted"].into_iter().enumerate() {
                let got = again.sparse_vector(pid, name).unwrap().map(|v| v.entries().iter().map(|e| (e.index, e.value)).collect::<BTreeMap<_, _>>());
                prop_assert_eq!(got, stored[t].clone());
            }
        }
    }
}

/// Point `i`'s id: a UUID for every fourth.
fn id(i: u64) -> PointId {
    if i % 4 == 1 { PointId::Uuid([i as u8; 16]) } else { PointId::Num(i) }
}

/// The idf statistics are the set's: the same points split into three segments and unsealed
/// rows, or held in one segment, give the same bits.
#[test]
fn idf_scores_do_not_depend_on_how_rows_are_split() {
    let mut rng = Rng::new(5);
    let (mut split, mut whole) = (new_collection(), new_collection());
    let mut model = BTreeMap::new();
    for chunk in 0..4u64 {
        let ids: Vec<PointId> = (chunk * 40..chunk * 40 + 40).map(id).collect();
        let mut r2 = Rng::new(chunk);
        upsert(&mut split, &mut model, &mut r2, &ids);
        let mut r2 = Rng::new(chunk);
        upsert(&mut whole, &mut BTreeMap::new(), &mut r2, &ids);
        if chunk < 3 {
            split.seal();
        }
    }
    whole.compact().unwrap();
    assert!(split.segment_count() >= 2 && whole.segment_count() == 1);
    for _ in 0..20 {
        let q = random_query(&mut rng);
        for name in ["plain", "weighted"] {
            let req = json!({"sparse": sparse_json(&q), "using": name, "limit": 20});
            let (a, b) = (search(&split, req.clone()), search(&whole, req));
            assert_eq!(a, b);
            let t = usize::from(name == "weighted");
            check_ranking(&a, &expected(&model, t, &q, None), 20, name);
        }
    }
}

/// Sparse and dense rankings fused by RRF and DBSF equal the formulas over the two lists.
#[test]
fn sparse_and_dense_fuse_by_the_formula() {
    let mut rng = Rng::new(11);
    let mut col = new_collection();
    let mut model = BTreeMap::new();
    let ids: Vec<PointId> = (0..120).map(id).collect();
    upsert(&mut col, &mut model, &mut rng, &ids[..80]);
    col.seal();
    upsert(&mut col, &mut model, &mut rng, &ids[80..]);
    let q = random_query(&mut rng);
    let dense = json!({"vector": [0.5, -0.25, 1.0, 0.0], "limit": 15});
    let sparse = json!({"sparse": sparse_json(&q), "using": "weighted", "limit": 15});
    let (d, s) = (search(&col, dense.clone()), search(&col, sparse.clone()));
    assert!(!s.is_empty());
    for (fusion, how) in [
        (json!({"fusion": "rrf", "rrf_k": 2}), Fused::Rrf { k: 2, weights: None }),
        (json!({"fusion": "dbsf"}), Fused::Dbsf),
    ] {
        let mut req = json!({"prefetch": [dense.clone(), sparse.clone()], "limit": 10});
        req.as_object_mut().unwrap().extend(fusion.as_object().unwrap().clone());
        let want = fused(how, &[(&d[..], false), (&s[..], false)]);
        assert_eq!(search(&col, req), want[..want.len().min(10)]);
    }
}

#[test]
fn bad_sparse_input_is_a_typed_error_and_changes_nothing() {
    let mut col = new_collection();
    let ids = [PointId::Num(1)];
    let v = vec![0.0; DIM];
    for (indices, values, what) in [
        (vec![1, 2], vec![1.0], "as many values"),
        (vec![3, 3], vec![1.0, 2.0], "appears twice"),
        (vec![3], vec![f32::NAN], "not finite"),
    ] {
        let e = SparseVector::new(&indices, &values).unwrap_err();
        assert!(e.contains(what), "{e}");
    }
    let many: Vec<u32> = (0..65_537).collect();
    assert!(SparseVector::new(&many, &vec![1.0; many.len()]).is_err());
    let one = Some(SparseVector::new(&[1], &[1.0]).unwrap());
    let e = col.upsert_sparse(&ids, &v, &[], &[vec![one.clone(), one.clone()]]).unwrap_err();
    assert!(matches!(e, Error::InvalidRequest(_)), "{e}");
    let e = col.upsert_sparse(&ids, &v, &[], &[vec![], vec![], vec![one]]).unwrap_err();
    assert!(matches!(e, Error::InvalidRequest(_)), "{e}");
    assert_eq!(col.len(), 0);
    col.upsert(&ids, &v, &[]).unwrap();
    for (req, what) in [
        (json!({"sparse": {"indices": [1], "values": [1]}}), "needs `using`"),
        (json!({"sparse": {"indices": [1], "values": [1]}, "using": "nope"}), "no sparse vector \"nope\""),
        (
            json!({"sparse": {"indices": [1], "values": [1]}, "using": "plain", "vector": [0, 0, 0, 0]}),
            "ranking of its own",
        ),
        (json!({"vector": [0, 0, 0, 0], "using": "plain"}), "\"plain\" is not a dense vector"),
        (json!({"vector": [0, 0, 0, 0], "using": "other"}), "\"other\" is not a dense vector"),
    ] {
        let e = SearchRequest::from_json(&req.to_string()).and_then(|r| col.search(&r)).unwrap_err();
        assert!(e.to_string().contains(what), "{req}: {e}");
    }
    for (req, what) in [
        (json!({"sparse": {"indices": [1, 1], "values": [1, 2]}, "using": "plain"}), "appears twice"),
        (json!({"sparse": {"indices": [-1], "values": [1]}, "using": "plain"}), "not an integer"),
        (json!({"sparse": {"indices": [1], "values": [1], "x": 1}, "using": "plain"}), "a sparse vector is"),
    ] {
        let e = SearchRequest::from_json(&req.to_string()).unwrap_err();
        assert!(e.to_string().contains(what), "{req}: {e}");
    }
    // Configuration: names, count, and fixed once a point exists.
    let mut fresh = Collection::new(CollectionConfig { dim: DIM, metric: Metric::Dot }).unwrap();
    let spec = |n: &str| SparseSpec { name: n.into(), idf: false };
    assert!(fresh.set_sparse_vectors(vec![spec("")]).is_err());
    assert!(fresh.set_sparse_vectors(vec![spec("a"), spec("a")]).is_err());
    assert!(fresh.set_sparse_vectors((0..17).map(|i| spec(&format!("v{i}"))).collect()).is_err());
    assert!(col.set_sparse_vectors(vec![spec("late")]).is_err());
}

/// A segment whose sparse sections are damaged but whose checksums are recomputed (as a
/// malicious or buggy writer would make it): opening and searching give typed errors or
/// results, never a panic or another point; `verify` names the damage.
#[test]
fn damaged_sparse_sections_with_valid_checksums_are_typed_errors() {
    use shoal_format::{SPARSE_POSTINGS, SPARSE_PRESENT, SPARSE_TERMS, SegmentReader, SegmentWriter, sparse_kind};
    let mut rng = Rng::new(3);
    let mut col = new_collection();
    let ids: Vec<PointId> = (0..60).map(id).collect();
    upsert(&mut col, &mut BTreeMap::new(), &mut rng, &ids);
    let bytes = col.to_bytes().unwrap().to_vec();
    let aligned = shoal_core::AlignedBytes::from_slice(&bytes);
    let reader = SegmentReader::open(aligned.as_slice()).unwrap();
    // The segment again with section `kind` of vector 0 ("plain") changed by `damage`.
    let rewrite = |kind: u32, damage: &dyn Fn(&mut Vec<u8>)| {
        let mut copies: Vec<(u32, u32, Vec<u8>)> = reader
            .sections()
            .iter()
            .map(|e| (e.kind, e.flags, aligned.as_slice()[e.offset as usize..(e.offset + e.length) as usize].to_vec()))
            .collect();
        let target = copies.iter_mut().find(|c| c.0 == sparse_kind(0, kind)).unwrap();
        damage(&mut target.2);
        let mut w = SegmentWriter::new();
        w.set_flags(reader.header().flags);
        for (k, f, b) in &copies {
            w.add_section(*k, *f, b);
        }
        let mut out = shoal_core::AlignedBytes::zeroed(w.file_len() as usize);
        w.write_into(out.as_mut_slice());
        out.as_slice().to_vec()
    };
    let set_u32 = |at: usize, v: u32| move |b: &mut Vec<u8>| b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // A posting's row past the segment's rows.
        ("row out of range", rewrite(SPARSE_POSTINGS, &set_u32(0, 1000))),
        // The first list's first row repeated (its second posting given the first's row).
        ("row repeated", rewrite(SPARSE_POSTINGS, &|b: &mut Vec<u8>| b.copy_within(0..4, 4))),
        // Two terms out of order (the first term's index made larger than the second's).
        ("terms out of order", rewrite(SPARSE_TERMS, &set_u32(0, u32::MAX))),
        // A present bit past the rows.
        ("present bit past the rows", rewrite(SPARSE_PRESENT, &|b: &mut Vec<u8>| *b.last_mut().unwrap() |= 0x80)),
    ];
    let query = json!({"sparse": {"indices": (0..INDICES).collect::<Vec<_>>(), "values": vec![1.0; INDICES as usize]}, "using": "plain", "limit": 100});
    let mut exact = query.clone();
    exact["params"] = json!({"exact": true});
    let requests = [query, exact].map(|q| SearchRequest::from_json(&q.to_string()).unwrap());
    for (what, damaged) in cases {
        let Ok(opened) = Collection::from_bytes(&damaged) else { continue }; // refused on open: fine
        assert!(opened.verify().is_err(), "{what}: verify passes");
        // Searching answers (an error, or points of this segment only, each once), never
        // panics; a damaged posting list (every query index is in the query) is an error.
        for req in &requests {
            match opened.search(req) {
                Ok(res) => {
                    assert!(!what.starts_with("row "), "{what}: searched as if valid");
                    assert!(res.points.iter().all(|p| ids.contains(&p.id)), "{what}: a point not in the segment");
                    let mut seen: Vec<PointId> = res.points.iter().map(|p| p.id).collect();
                    seen.sort();
                    seen.dedup();
                    assert_eq!(seen.len(), res.points.len(), "{what}: a point given twice");
                }
                Err(e) => assert!(e.to_string().contains("SPARSE"), "{what}: {e}"),
            }
        }
        for &pid in &ids {
            let _ = opened.sparse_vector(pid, "plain");
        }
    }
}
