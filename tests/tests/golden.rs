//! Golden segment files: every released format version stays readable with the same results.
//!
//! `SHOAL_WRITE_GOLDEN=1 cargo test -p shoal-tests --test golden` (re)writes the files of the
//! *current* version only; files of older versions are frozen.

use std::path::PathBuf;

use shoal_core::{Collection, CollectionConfig, SearchRequest};
use shoal_testkit::{golden_v1_input, uniform_vectors};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name)
}

/// Queries and their results, as stored next to the golden file.
fn results(col: &Collection, dim: usize) -> serde_json::Value {
    let queries = uniform_vectors(0xfeed, 5, dim);
    let out: Vec<serde_json::Value> = queries
        .chunks_exact(dim)
        .map(|q| {
            let res = col.search(&SearchRequest::nearest(q.to_vec(), 5)).unwrap();
            serde_json::json!(res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>())
        })
        .collect();
    serde_json::Value::from(out)
}

#[test]
fn v1_flat_golden_file_reads_verifies_and_searches_the_same() {
    let (dim, metric, ids, vectors) = golden_v1_input();
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        col.insert(&ids, &vectors).unwrap();
        std::fs::write(golden("v1-flat.shoal"), col.to_bytes()).unwrap();
        let expected = results(&col, dim);
        std::fs::write(golden("v1-flat.expected.json"), serde_json::to_vec_pretty(&expected).unwrap()).unwrap();
    }
    let bytes = std::fs::read(golden("v1-flat.shoal")).expect("tests/golden/v1-flat.shoal is committed");
    let col = Collection::from_bytes(&bytes).unwrap();
    col.verify().unwrap();
    assert_eq!(col.len(), ids.len());
    assert_eq!(col.dim(), dim);
    assert_eq!(col.metric(), metric);
    for &id in &ids {
        assert!(col.contains(id));
    }
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(golden("v1-flat.expected.json")).unwrap()).unwrap();
    assert_eq!(results(&col, dim), expected);
    assert_eq!(bytes[8], 1, "the v1 golden file must stay a version-1 file");
}

#[test]
fn the_current_writer_reproduces_the_v1_golden_bytes() {
    // True while the writer writes v1; when v2 arrives this test moves to the v2 golden file.
    let (dim, metric, ids, vectors) = golden_v1_input();
    let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
    col.insert(&ids, &vectors).unwrap();
    let bytes = std::fs::read(golden("v1-flat.shoal")).unwrap();
    assert_eq!(col.to_bytes(), &bytes[..]);
}
