//! Arbitrary bytes as a JSON search request against a small collection: typed errors only.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_core::{Collection, CollectionConfig, Metric, SearchRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(json) = std::str::from_utf8(data) else { return };
    let mut col = Collection::new(CollectionConfig { dim: 3, metric: Metric::Cosine }).unwrap();
    col.insert(&[1, 2, 3], &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.5, 0.5, 0.0]).unwrap();
    if let Ok(req) = SearchRequest::from_json(json) {
        let _ = col.search(&req);
    }
});
