//! Runs the conformance scenario inside wasm and hands the output to the host.
//!
//! ABI (all integers little-endian wasm32): `shoal_conformance_configs() -> u32` is the number
//! of scenario configurations; `shoal_conformance_run(i) -> u32` runs configuration `i` with
//! the build's best kernels and returns a pointer to an output buffer whose length is
//! `shoal_conformance_output_len()`. The buffer is
//! `kernel name length u32, name bytes, then for ids (u64), score bits (u32), counts (u32) and
//! segment bytes (u8): a u32 element count followed by the elements, then the manifests: a u32
//! count, each a u32 length and its UTF-8 bytes`.

use std::sync::Mutex;

use shoal_core::Kernels;
use shoal_testkit::scenario::{CONFIGS, run, scenario};

static OUTPUT: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Number of scenario configurations.
#[unsafe(no_mangle)]
pub extern "C" fn shoal_conformance_configs() -> u32 {
    CONFIGS.len() as u32
}

/// Encodes a scenario output as described in the crate docs.
pub fn encode(kernels: &str, out: &shoal_testkit::scenario::Output) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend_from_slice(&(kernels.len() as u32).to_le_bytes());
    buf.extend_from_slice(kernels.as_bytes());
    buf.extend_from_slice(&(out.ids.len() as u32).to_le_bytes());
    // Each id: a kind byte (0 integer, 1 UUID), then its 8 (little-endian) or 16 bytes.
    for id in &out.ids {
        match id {
            shoal_core::PointId::Num(n) => {
                buf.push(0);
                buf.extend_from_slice(&n.to_le_bytes());
            }
            shoal_core::PointId::Uuid(u) => {
                buf.push(1);
                buf.extend_from_slice(u);
            }
        }
    }
    buf.extend_from_slice(&(out.score_bits.len() as u32).to_le_bytes());
    out.score_bits.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
    buf.extend_from_slice(&(out.counts.len() as u32).to_le_bytes());
    out.counts.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
    buf.extend_from_slice(&(out.segment.len() as u32).to_le_bytes());
    buf.extend_from_slice(&out.segment);
    buf.extend_from_slice(&(out.manifests.len() as u32).to_le_bytes());
    for m in &out.manifests {
        buf.extend_from_slice(&(m.len() as u32).to_le_bytes());
        buf.extend_from_slice(m.as_bytes());
    }
    buf
}

/// Runs configuration `i`; returns a pointer to the encoded output (null if `i` is out of range).
#[unsafe(no_mangle)]
pub extern "C" fn shoal_conformance_run(i: u32) -> *const u8 {
    let Some(config) = CONFIGS.get(i as usize) else {
        return std::ptr::null();
    };
    let kernels = Kernels::best();
    let out = run(&scenario(*config), kernels);
    let mut guard = OUTPUT.lock().unwrap_or_else(|e| e.into_inner());
    *guard = encode(kernels.name(), &out);
    guard.as_ptr()
}

/// Length of the last output.
#[unsafe(no_mangle)]
pub extern "C" fn shoal_conformance_output_len() -> u32 {
    OUTPUT.lock().unwrap_or_else(|e| e.into_inner()).len() as u32
}

#[global_allocator]
static GLOBAL: shoal_testkit::counting::Counting = shoal_testkit::counting::Counting;

/// Allocations made by 3 x 32 searches after a warm-up (exact and IVF, sealed and mutable
/// segments, deletions), or `u32::MAX` when the warm-up itself was not seen allocating (the
/// counter would be broken). Zero is the expected answer.
#[unsafe(no_mangle)]
pub extern "C" fn shoal_zero_alloc_check() -> u32 {
    use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, PointId, SearchRequest};
    use shoal_testkit::counting::allocations;
    let dim = 40;
    let data = shoal_testkit::clustered_vectors(1, 3000, dim, 16);
    let ids: Vec<u64> = (0..3000).collect();
    let queries = shoal_testkit::clustered_vectors(2, 32, dim, 16);
    let mut total = 0;
    for (metric, index) in [(Metric::Cosine, IndexKind::Flat), (Metric::L2, IndexKind::IvfRabitq(IvfParams::default()))]
    {
        let mut col = Collection::new(CollectionConfig { dim, metric }).expect("config");
        col.insert(&ids[..2500], &data[..2500 * dim]).expect("insert");
        col.seal_with(index).unwrap();
        col.insert(&ids[2500..], &data[2500 * dim..]).expect("insert");
        col.delete(&[PointId::Num(1), PointId::Num(2600)]).unwrap();
        let requests: Vec<SearchRequest> =
            queries.chunks_exact(dim).map(|q| SearchRequest::nearest(q.to_vec(), 10)).collect();
        let mut out = Vec::new();
        let start = allocations();
        for r in &requests {
            col.search_into(r, &mut out).expect("search");
        }
        let before = allocations();
        if before == start {
            return u32::MAX;
        }
        for _ in 0..3 {
            for r in &requests {
                col.search_into(r, &mut out).expect("search");
            }
        }
        total += (allocations() - before) as u32;
    }
    total
}
