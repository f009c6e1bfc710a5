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
mod reader;
mod records;
mod writer;

pub use aligned::AlignedBytes;
pub use error::FormatError;
pub use reader::{SegmentReader, cast_records};
pub use records::*;
pub use writer::SegmentWriter;

/// CRC-32C (Castagnoli) of `bytes`: the checksum of every header, table and section.
pub fn crc32c(bytes: &[u8]) -> u32 {
    const CRC: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISCSI);
    CRC.checksum(bytes)
}

/// Rounds `n` up to the next multiple of [`ALIGN`].
pub const fn align_up(n: u64) -> u64 {
    n.div_ceil(ALIGN as u64) * ALIGN as u64
}

#[cfg(target_endian = "big")]
compile_error!("the Shoal segment format is little-endian and is cast in place; big-endian targets are not supported");
