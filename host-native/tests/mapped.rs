//! Memory-mapped segments search exactly like the same bytes in memory: the mapped storage
//! hints the vectors it is about to re-rank (`madvise(WILLNEED)`), which must never change a
//! result.

use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_host::storage::{open_collection, write_atomic};
use shoal_testkit::{TempDir, clustered_vectors};

#[test]
fn mapped_ivf_search_equals_in_memory_bit_for_bit() {
    let dir = TempDir::new("mapped", "ivf");
    let (n, dim) = (6_000, 24);
    let data = clustered_vectors(11, n, dim, 30);
    let queries = clustered_vectors(12, 50, dim, 30);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 7 + 3).collect();
    for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
        for bits in [1, 4] {
            let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
            col.insert(&ids, &data).unwrap();
            col.seal_with(IndexKind::IvfRabitq(IvfParams { bits: Some(bits), ..IvfParams::default() })).unwrap();
            let path = dir.path(&format!("{metric:?}-{bits}.shoal"));
            write_atomic(&path, col.to_bytes().unwrap()).unwrap();
            let in_memory = Collection::from_bytes(col.to_bytes().unwrap()).unwrap();
            let mapped = open_collection(&path).unwrap();
            assert!(mapped.segment(0).unwrap().prefetches() && !in_memory.segment(0).unwrap().prefetches());
            for q in queries.chunks_exact(dim) {
                for limit in [1, 10, 50] {
                    let req = SearchRequest::nearest(q.to_vec(), limit);
                    let a = mapped.search(&req).unwrap();
                    let b = in_memory.search(&req).unwrap();
                    assert_eq!(a.points, b.points, "{metric:?} bits {bits} limit {limit}");
                    assert_eq!(a.stats, b.stats);
                    assert!(!a.stats.exact);
                }
            }
        }
    }
}
