//! After warm-up, a search allocates nothing: its buffers come from the collection's scratch
//! pool and the caller reuses the output vector. Proved with a counting global allocator, for
//! exact and IVF searches, over sealed and mutable segments with deletions.
//!
//! This file holds a single test so that no other test thread allocates while it counts.

use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, PointId, SearchRequest};
use shoal_testkit::clustered_vectors;
use shoal_testkit::counting::{Counting, allocations};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn searches_allocate_nothing_after_warm_up() {
    let dim = 48;
    let n = 6000;
    let data = clustered_vectors(1, n, dim, 32);
    let ids: Vec<u64> = (0..n as u64).collect();
    let queries = clustered_vectors(2, 64, dim, 32);
    for (metric, index) in [
        (Metric::L2, IndexKind::Flat),
        (Metric::Cosine, IndexKind::Flat),
        (Metric::L2, IndexKind::IvfRabitq(IvfParams::default())),
        (Metric::Cosine, IndexKind::IvfRabitq(IvfParams::default())),
        (Metric::Dot, IndexKind::IvfRabitq(IvfParams::default())),
    ] {
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        col.insert(&ids[..5000], &data[..5000 * dim]).unwrap();
        col.seal_with(index).unwrap();
        // A mutable segment and deletions on both sides.
        col.insert(&ids[5000..], &data[5000 * dim..]).unwrap();
        col.delete(&nums(&[3, 4000, 5500])).unwrap();
        let mut requests: Vec<SearchRequest> =
            queries.chunks_exact(dim).map(|q| SearchRequest::nearest(q.to_vec(), 10)).collect();
        for (i, r) in requests.iter_mut().enumerate() {
            r.offset = i % 3;
            r.params.nprobe = (i % 2 == 0).then_some(12);
        }
        let mut out = Vec::new();
        let start = allocations();
        for r in &requests {
            col.search_into(r, &mut out).unwrap(); // warm-up: buffers grow to size
        }
        let before = allocations();
        assert!(before > start, "the counter sees the warm-up's allocations");
        for _ in 0..3 {
            for r in &requests {
                col.search_into(r, &mut out).unwrap();
                assert_eq!(out.len(), 10);
            }
        }
        let allocated = allocations() - before;
        assert_eq!(allocated, 0, "{metric:?} {index:?}: {allocated} allocations in {} searches", 3 * requests.len());
    }
}

/// Integer point ids.
fn nums(ids: &[u64]) -> Vec<PointId> {
    ids.iter().map(|&id| PointId::Num(id)).collect()
}
