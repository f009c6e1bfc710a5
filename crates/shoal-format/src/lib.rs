//! The Shoal segment container (specified in `docs/format.md`).
//!
//! A segment is a 64-byte [`Header`], a table of [`SectionEntry`] records and 64-byte-aligned
//! sections whose payloads are arrays of plain records, cast in place with bytemuck. This crate
//! knows the container and the v1 record types; what the sections *mean* is `shoal-core`'s job.
//! It never opens files: it reads `&[u8]` (a memory map natively, wasm memory in JS).
//!
//! ```
//! use shoal_format::{AlignedBytes, SegmentReader, SegmentWriter};
//! let mut w = SegmentWriter::new();
//! w.add_section(7, shoal_format::SECTION_OPTIONAL, &[1, 2, 3]);
//! let file = AlignedBytes::from_slice(&w.finish());
//! let r = SegmentReader::open(file.as_slice()).unwrap();
//! assert_eq!(r.section(7), Some(&[1u8, 2, 3][..]));
//! r.verify_checksums().unwrap();
//! ```
#![no_std]
#![deny(missing_docs)]

extern crate alloc;

mod aligned;
mod error;
mod ids;
mod reader;
mod records;
mod writer;

pub use aligned::AlignedBytes;
pub use error::FormatError;
pub use ids::PointId;
pub use reader::{SegmentHead, SegmentReader, cast_records, range_of};
pub use records::*;
pub use writer::{Layout, SegmentWriter};

/// Sorts `u64`s ascending: the one integer sort routine of the crates above this one (each
/// `sort_unstable` of another element type, or of the same type in another crate, is one more
/// copy of the routine in the wasm package, 3–4 KB each).
#[inline(never)]
pub fn sort_u64(v: &mut [u64]) {
    v.sort_unstable();
}

/// Sorts `u32`s ascending through [`sort_u64`] (widened, sorted, narrowed back).
pub fn sort_u32(v: &mut [u32]) {
    let mut wide: alloc::vec::Vec<u64> = v.iter().map(|&x| u64::from(x)).collect();
    sort_u64(&mut wide);
    for (out, x) in v.iter_mut().zip(wide) {
        *out = x as u32;
    }
}

/// CRC-32C (Castagnoli) of `bytes`: the checksum of every header, table and section.
pub fn crc32c(bytes: &[u8]) -> u32 {
    #[cfg(feature = "hw-crc")]
    {
        crc32c::crc32c(bytes)
    }
    #[cfg(not(feature = "hw-crc"))]
    crc_table::get().checksum(bytes)
}

/// The CRC-32C tables (slicing by 16: 16 KiB). Native builds compute them at compile time.
#[cfg(all(not(feature = "hw-crc"), not(all(target_family = "wasm", not(target_feature = "atomics")))))]
mod crc_table {
    static CRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);

    pub fn get() -> &'static crc::Crc<u32, crc::Table<16>> {
        &CRC
    }
}

/// The CRC-32C tables (slicing by 16: 16 KiB), computed on first use in wasm builds: as a
/// constant they were 16 KiB of incompressible bytes in the npm package (7% of its gzip
/// budget); a zeroed static costs nothing there, and filling it takes microseconds.
#[cfg(all(not(feature = "hw-crc"), target_family = "wasm", not(target_feature = "atomics")))]
mod crc_table {
    use core::cell::OnceCell;

    struct Lazy(OnceCell<crc::Crc<u32, crc::Table<16>>>);
    // SAFETY: wasm32 without the `atomics` target feature runs one thread, so the cell is never
    // accessed concurrently.
    unsafe impl Sync for Lazy {}

    static CRC: Lazy = Lazy(OnceCell::new());

    pub fn get() -> &'static crc::Crc<u32, crc::Table<16>> {
        CRC.0.get_or_init(|| crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI))
    }
}

/// Rounds `n` up to the next multiple of [`ALIGN`].
pub const fn align_up(n: u64) -> u64 {
    n.div_ceil(ALIGN as u64) * ALIGN as u64
}

#[cfg(target_endian = "big")]
compile_error!("the Shoal segment format is little-endian and is cast in place; big-endian targets are not supported");
