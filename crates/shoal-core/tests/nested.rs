//! Collections with nested payloads: any JSON object stored and returned as it went in,
//! filters by path and `nested` answered alike in the unsealed part, in sealed segments (flat
//! and IVF), after a segment set and a byte round trip — equal to the brute-force oracle over
//! the reference evaluator — with paths declared as columns, some after a segment was written;
//! the segment carries header flag bit 3 and the set manifest layout 2.

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, PointId, SearchRequest};
use shoal_payload::{Filter, reference};
use shoal_testkit::scenario::{open_set, write_set};
use shoal_testkit::{clustered_vectors, oracle};

const DIM: usize = 8;

/// LangChain's shape: `page_content` and `metadata`, with nested objects and arrays.
fn doc(i: u64) -> Value {
    if i.is_multiple_of(11) {
        return Value::Null;
    }
    let topic = ["sea", "sky", "land"][(i % 3) as usize];
    let mut metadata = json!({"topic": topic, "year": 1990 + i % 30, "source": {"name": format!("s{}", i % 5)}});
    if i.is_multiple_of(4) {
        metadata["tags"] = json!([{"name": "a", "score": i % 7}, {"name": "b", "score": (i * 3) % 7}]);
    }
    if i % 6 == 1 {
        metadata["topic"] = Value::Null;
    }
    json!({"page_content": format!("text {i}"), "metadata": metadata})
}

fn filters() -> Vec<Value> {
    vec![
        json!({"must": [{"key": "metadata.topic", "match": {"value": "sea"}}]}),
        json!({"must": [{"key": "metadata.year", "range": {"gte": 2000, "lt": 2010}}],
               "must_not": [{"key": "metadata.source.name", "match": {"any": ["s1", "s2"]}}]}),
        json!({"must": [{"nested": {"key": "metadata.tags", "filter": {"must": [
            {"key": "name", "match": {"value": "b"}}, {"key": "score", "range": {"gte": 3}}]}}}]}),
        json!({"should": [{"is_null": {"key": "metadata.topic"}}, {"is_empty": {"key": "metadata"}}]}),
        json!({"must": [{"key": "metadata.tags[].name", "match": {"value": "a"}}, {"has_id": [4, 8, 12, 16, 40, 999]}]}),
        json!({"should": [{"key": "metadata.year", "match": {"any": [1995, 2011]}}, {"key": "metadata.topic", "match": {"value": "sky"}}],
               "must_not": [{"key": "metadata.tags[].score", "range": {"lt": 2}}]}),
        json!({"must": [{"key": "metadata.source", "match": {"except": ["s1"]}}]}),
    ]
}

#[test]
fn nested_payloads_filter_alike_everywhere_and_match_the_oracle() {
    let n = 400u64;
    let ids: Vec<u64> = (0..n).collect();
    let docs: Vec<Value> = ids.iter().map(|&i| doc(i)).collect();
    let vectors = clustered_vectors(9, n as usize, DIM, 6);
    let schema = Collection::parse_nested_schema(&json!({"metadata.topic": "keyword"})).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: DIM, metric: Metric::L2 }, schema).unwrap();
    assert!(col.nested());
    col.insert_with_payloads(&ids[..150], &vectors[..150 * DIM], &docs[..150]).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { partitions: Some(6), ..IvfParams::default() })).unwrap();
    // Paths declared after the first segment was written (and `metadata.topic` retyped): the
    // second segment has them as columns (`year` as a float column, `tags[].score` holding
    // integers, `source` only objects: strays), the first answers them from its documents and
    // keeps its keyword column.
    let paths = json!({"metadata.topic": "integer", "metadata.year": "float", "metadata.tags[].name": "keyword",
                       "metadata.tags[].score": "integer", "metadata.source": "keyword", "metadata.source.name": "keyword"});
    col.set_declared_paths(Collection::parse_nested_schema(&paths).unwrap()).unwrap();
    col.insert_with_payloads(&ids[150..300], &vectors[150 * DIM..300 * DIM], &docs[150..300]).unwrap();
    col.seal();
    let built = |c: &Collection, s: usize| -> Vec<String> {
        c.segment(s).unwrap().schema().unwrap().fields().map(|(n, t)| format!("{n}:{}", t.name())).collect()
    };
    assert_eq!(built(&col, 0), ["metadata.topic:keyword"]);
    assert_eq!(built(&col, 1).len(), 6);
    assert!(built(&col, 1).contains(&"metadata.topic:integer".to_string()));
    col.insert_with_payloads(&ids[300..], &vectors[300 * DIM..], &docs[300..]).unwrap();
    assert_eq!(col.segment_count(), 2);
    let flags = |c: &Collection| u32::from_le_bytes(c.segment(0).unwrap().bytes()[12..16].try_into().unwrap());
    assert_eq!(flags(&col) & shoal_format::FLAG_NESTED_PAYLOAD, shoal_format::FLAG_NESTED_PAYLOAD);
    // Documents come back as they went in.
    for i in [1u64, 4, 12, 151, 399] {
        assert_eq!(col.payload(PointId::Num(i)), Some(docs[i as usize].clone()));
    }

    let check = |col: &Collection, what: &str| {
        let queries = clustered_vectors(10, 8, DIM, 6);
        for f in filters() {
            let parsed = Filter::from_value(&f).unwrap();
            let passing: Vec<(u64, Vec<f32>)> = ids
                .iter()
                .filter(|&&i| reference::matches_in(&parsed, &docs[i as usize], PointId::Num(i), true))
                .map(|&i| (i, vectors[i as usize * DIM..(i as usize + 1) * DIM].to_vec()))
                .collect();
            assert!(!passing.is_empty(), "{f}");
            let mut want_ids: Vec<PointId> = passing.iter().map(|p| PointId::Num(p.0)).collect();
            want_ids.sort();
            assert_eq!(col.matching_ids(Some(&f)).unwrap(), want_ids, "{what}: {f}");
            for q in queries.chunks_exact(DIM) {
                let mut req = SearchRequest::nearest(q.to_vec(), 10);
                req.filter = Some(f.clone());
                req.params.exact = true;
                let got: Vec<(PointId, u32)> =
                    col.search(&req).unwrap().points.iter().map(|p| (p.id, p.score.to_bits())).collect();
                let want: Vec<(PointId, u32)> = oracle::top_k(Metric::L2, &passing, q, 10)
                    .into_iter()
                    .map(|(id, s)| (PointId::Num(id), s.to_bits()))
                    .collect();
                assert_eq!(got, want, "{what}: {f}");
            }
        }
    };
    check(&col, "two segments and unsealed points");
    let (manifest, files) = write_set(&mut col);
    assert!(manifest.contains(r#""payload":"nested""#) && manifest.contains(r#""shoal_manifest":2"#), "{manifest}");
    let mut again = open_set(&manifest, &files);
    assert!(again.nested());
    check(&again, "the set opened again");
    let bytes = again.to_bytes().unwrap().to_vec();
    let one = Collection::from_bytes(&bytes).unwrap();
    one.verify().unwrap();
    assert!(one.nested());
    assert_eq!(built(&one, 0).len(), 6, "one segment written with every declared path");
    check(&one, "one segment");
    // A flat collection refuses what nested ones take.
    let flat = Collection::with_schema(
        CollectionConfig { dim: DIM, metric: Metric::L2 },
        Collection::parse_schema(&json!({"topic": "keyword"})).unwrap(),
    );
    let mut flat = flat.unwrap();
    assert!(flat.insert_with_payloads(&[1], &vectors[..DIM], &[doc(1)]).is_err());
    let mut req = SearchRequest::nearest(vectors[..DIM].to_vec(), 3);
    req.filter = Some(filters()[2].clone());
    assert!(flat.search(&req).is_err());
}
