//! Arbitrary bytes as a segment: opening, verifying, searching, mutating and re-sealing must
//! never panic, whatever the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_core::{Collection, SearchRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(mut col) = Collection::from_bytes(data) else { return };
    let verified = col.verify().is_ok();
    let dim = col.dim();
    let query: Vec<f32> = (0..dim).map(|i| (i % 7) as f32 - 3.0).collect();
    let _ = col.search(&SearchRequest::nearest(query.clone(), 5));
    // Ids of a hostile file may be duplicated or unsorted; lookups must still be safe.
    for id in [0u64, 1, 7, u64::MAX] {
        let _ = col.vector(id);
    }
    let _ = col.delete(&[0, 1, 2]);
    let _ = col.insert(&[3], &query);
    if verified {
        // A verified segment re-seals into a valid one.
        let bytes = col.to_bytes().to_vec();
        let again = Collection::from_bytes(&bytes).expect("a re-sealed segment opens");
        again.verify().expect("a re-sealed segment verifies");
    }
});
