//! Arbitrary bytes as a segment: opening, verifying, searching, mutating and re-sealing must
//! never panic, whatever the bytes.
//!
//! Each input is tried twice: as it is, and with the header and section-table checksums
//! recomputed, so the fuzzer also reaches the structural checks behind the cheap CRCs (bounds,
//! alignment, overlap, section sizes, META values) instead of stopping at a checksum mismatch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_core::{Collection, SearchRequest};

fn exercise(data: &[u8]) {
    let Ok(mut col) = Collection::from_bytes(data) else { return };
    let verified = col.verify().is_ok();
    let dim = col.dim();
    let query: Vec<f32> = (0..dim).map(|i| (i % 7) as f32 - 3.0).collect();
    let _ = col.search(&SearchRequest::nearest(query.clone(), 5));
    // Ids of a hostile file may be duplicated or unsorted; lookups must still be safe.
    for id in [0u64, 1, 7, 1000, u64::MAX] {
        let _ = col.vector(id);
    }
    let _ = col.delete(&[0, 1, 2, 1000]);
    let _ = col.insert(&[3], &query);
    let _ = col.search(&SearchRequest::nearest(query, 3));
    if verified {
        // A verified segment re-seals into a valid one.
        let bytes = col.to_bytes().to_vec();
        let again = Collection::from_bytes(&bytes).expect("a re-sealed segment opens");
        again.verify().expect("a re-sealed segment verifies");
    }
}

/// Recomputes the table and header CRCs in place (offsets per docs/format.md).
fn fix_checksums(bytes: &mut [u8]) {
    if bytes.len() < 64 {
        return;
    }
    let count = u32::from_le_bytes(bytes[16..20].try_into().unwrap()) as usize;
    let table_end = 64usize.saturating_add(count.saturating_mul(32));
    if count <= 1024 && table_end <= bytes.len() {
        let crc = shoal_format::crc32c(&bytes[64..table_end]);
        bytes[20..24].copy_from_slice(&crc.to_le_bytes());
    }
    let crc = shoal_format::crc32c(&bytes[..32]);
    bytes[32..36].copy_from_slice(&crc.to_le_bytes());
}

fuzz_target!(|data: &[u8]| {
    exercise(data);
    let mut fixed = data.to_vec();
    fix_checksums(&mut fixed);
    exercise(&fixed);
});
