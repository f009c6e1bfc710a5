//! Index builds over several threads (rayon, `--threads`) write the same bytes as over one:
//! k-means, assignment, encoding and calibration give each task its own output and reduce in a
//! fixed order.

use shoal_core::{Collection, CollectionConfig, IndexKind, Metric, Schema};
use shoal_testkit::clustered_vectors;

fn build(threads: usize, metric: Metric, dim: usize, bits: u8) -> Vec<u8> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let n = 6000;
        let data = clustered_vectors(11, n, dim, 40);
        let ids: Vec<u64> = (0..n as u64).map(|i| i * 7 + 3).collect();
        let docs: Vec<serde_json::Value> =
            ids.iter().map(|i| serde_json::json!({"t": format!("w{} w{}", i % 13, i % 7), "k": i % 5})).collect();
        let schema = Schema::from_json(r#"{"t": "text", "k": "integer"}"#).unwrap();
        let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema).unwrap();
        col.insert_with_payloads(&ids, &data, &docs).unwrap();
        let opts = format!(r#"{{"index": "ivf-rabitq", "bits": {bits}}}"#);
        col.seal_with(IndexKind::from_json(&opts).unwrap()).unwrap();
        col.to_bytes().unwrap().to_vec()
    })
}

#[test]
fn one_thread_and_several_build_the_same_bytes() {
    for (metric, dim, bits) in [(Metric::L2, 40, 1), (Metric::Cosine, 100, 4), (Metric::Dot, 24, 8)] {
        let one = build(1, metric, dim, bits);
        for threads in [2, 3, 8] {
            assert!(
                build(threads, metric, dim, bits) == one,
                "{metric:?} {dim}-d {bits} bits: {threads} threads differ"
            );
        }
    }
}
