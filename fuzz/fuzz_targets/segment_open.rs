//! Arbitrary bytes as a segment: opening, verifying, searching, mutating and re-sealing must
//! never panic, whatever the bytes.
//!
//! Each input is tried twice: as it is, and with the header and section-table checksums
//! recomputed, so the fuzzer also reaches the structural checks behind the cheap CRCs (bounds,
//! alignment, overlap, section sizes, META values) instead of stopping at a checksum mismatch.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_core::{Collection, PointId, SearchRequest};

fn exercise(data: &[u8]) {
    let Ok(mut col) = Collection::from_bytes(data) else { return };
    let verified = col.verify().is_ok();
    let dim = col.dim();
    let query: Vec<f32> = (0..dim).map(|i| (i % 7) as f32 - 3.0).collect();
    let _ = col.search(&SearchRequest::nearest(query.clone(), 5));
    // Ids of a hostile file may be duplicated, unsorted or of the wrong kind (UUID sections,
    // flag bit 0); lookups must still be safe.
    let ids = [0u64, 1, 7, 1000, u64::MAX].map(PointId::Num);
    let uuids = [[0u8; 16], [0xff; 16], [1; 16]].map(PointId::Uuid);
    for &id in ids.iter().chain(&uuids) {
        let _ = col.vector(id);
    }
    let _ = col.matching_ids(None);
    let _ = col.delete(&[ids[0], ids[1], uuids[0], ids[3]]);
    let _ = col.upsert(&[PointId::Num(3), uuids[2]], &[query.clone(), query.clone()].concat(), &[]);
    let _ = col.search(&SearchRequest::nearest(query, 3));
    if verified {
        // A verified segment re-seals into a valid one.
        let bytes = col.to_bytes().expect("a verified segment re-seals").to_vec();
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
