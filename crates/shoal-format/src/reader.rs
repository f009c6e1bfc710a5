use bytemuck::Pod;

use crate::{
    ALIGN, FORMAT_VERSION, FormatError, Header, KNOWN_FLAGS, MAGIC, MAX_SECTIONS, SECTION_OPTIONAL, SectionEntry,
    crc32c, kind_name,
};

/// The byte range `part` (a sub-slice of `base`, e.g. a section a reader returned) occupies
/// in `base`: what a segment keeps to find a section again without holding a borrow.
#[inline]
pub fn range_of(base: &[u8], part: &[u8]) -> core::ops::Range<usize> {
    let start = part.as_ptr() as usize - base.as_ptr() as usize;
    debug_assert!(start + part.len() <= base.len(), "part lies in base");
    start..start + part.len()
}

/// A validated view of a segment container over borrowed bytes.
///
/// [`open`](Self::open) performs only the cheap structural checks of `docs/format.md`;
/// [`verify_checksums`](Self::verify_checksums) reads every byte.
#[derive(Clone, Copy, Debug)]
pub struct SegmentReader<'a> {
    bytes: &'a [u8],
    header: &'a Header,
    table: &'a [SectionEntry],
}

/// Casts a byte slice to a slice of records in place.
///
/// Fails with [`FormatError::BadSection`] if the length is not a multiple of the record size
/// and with [`FormatError::Misaligned`] if the start is not aligned for `T`.
pub fn cast_records<'b, T: Pod>(section: &'static str, bytes: &'b [u8]) -> Result<&'b [T], FormatError> {
    if !bytes.len().is_multiple_of(core::mem::size_of::<T>()) {
        return Err(FormatError::BadSection { section, reason: "length is not a whole number of records" });
    }
    bytemuck::try_cast_slice(bytes).map_err(|_| FormatError::Misaligned)
}

fn truncated(what: &'static str, needed: u64, available: usize) -> FormatError {
    FormatError::Truncated { what, needed, available: available as u64 }
}

/// The header of `bytes` (at least its first 64), checked: magic, CRC, version (up to
/// `newest`), flags.
#[inline(always)]
fn check_header(bytes: &[u8], newest: u32) -> Result<&Header, FormatError> {
    if !(bytes.as_ptr() as usize).is_multiple_of(ALIGN) {
        return Err(FormatError::Misaligned);
    }
    let header_size = core::mem::size_of::<Header>();
    if bytes.len() < header_size {
        return Err(truncated("header", header_size as u64, bytes.len()));
    }
    if bytes[..8] != MAGIC {
        return Err(FormatError::BadMagic);
    }
    let header: &Header = bytemuck::from_bytes(&bytes[..header_size]);
    // Format 2 keeps `bootstrap_len` in bytes 40..48, under the header CRC.
    let ranges = newest >= crate::VERSION_RANGES && header.version == crate::VERSION_RANGES;
    // The version first: a newer format may checksum its header otherwise.
    if header.version == 0 || header.version > newest {
        return Err(FormatError::UnsupportedVersion { found: header.version, newest });
    }
    let actual = if ranges { crc32c_parts(&bytes[..32], &bytes[36..64]) } else { crc32c(&bytes[..32]) };
    if actual != header.header_crc {
        return Err(FormatError::ChecksumMismatch { what: "header", kind: 0, stored: header.header_crc, actual });
    }
    if header.flags & !KNOWN_FLAGS != 0 {
        return Err(FormatError::UnsupportedFlags(header.flags & !KNOWN_FLAGS));
    }
    let reserved = if ranges {
        header.reserved[..4].iter().chain(&header.reserved[12..]).any(|&b| b != 0)
    } else {
        header.reserved.iter().any(|&b| b != 0)
    };
    if reserved {
        return Err(FormatError::Malformed("reserved header bytes are not zero"));
    }
    Ok(header)
}

/// The section table that `bytes` (the file's first bytes, at least up to the table's end)
/// holds after `header`, checked: count, CRC, and every section aligned, in order, apart and
/// inside `header.file_len`.
#[inline(always)]
fn check_table<'a>(bytes: &'a [u8], header: &Header, flags: u32) -> Result<&'a [SectionEntry], FormatError> {
    if header.section_count == 0 || header.section_count > MAX_SECTIONS {
        return Err(FormatError::Malformed("section count out of range"));
    }
    let table_end = table_end(header);
    if bytes.len() < table_end {
        return Err(truncated("section table", table_end as u64, bytes.len()));
    }
    let table_bytes = &bytes[core::mem::size_of::<Header>()..table_end];
    let actual = crc32c(table_bytes);
    if actual != header.table_crc {
        return Err(FormatError::ChecksumMismatch { what: "section table", kind: 0, stored: header.table_crc, actual });
    }
    let table: &[SectionEntry] = bytemuck::cast_slice(table_bytes);
    let mut prev_end = table_end as u64;
    for (i, e) in table.iter().enumerate() {
        if e.reserved != 0 || e.flags & !flags != 0 {
            return Err(FormatError::Malformed("reserved section bits are set"));
        }
        if !e.offset.is_multiple_of(ALIGN as u64) {
            return Err(FormatError::Malformed("section offset is not 64-byte aligned"));
        }
        if e.offset < prev_end {
            return Err(FormatError::Malformed("sections overlap or are out of order"));
        }
        let end = e.offset.checked_add(e.length).ok_or(FormatError::Malformed("section length overflows"))?;
        if end > header.file_len {
            return Err(truncated("section", end, bytes.len()));
        }
        if table[..i].iter().any(|p| p.kind == e.kind) {
            return Err(FormatError::Malformed("section kind appears twice"));
        }
        prev_end = end;
    }
    Ok(table)
}

/// Where the section table of a file with `header` ends (at most 64 + 1024 x 32 bytes).
fn table_end(header: &Header) -> usize {
    core::mem::size_of::<Header>() + header.section_count as usize * core::mem::size_of::<SectionEntry>()
}

/// A segment's header and section table, read from the file's first bytes alone: what a
/// reader by byte ranges opens before it knows where anything else lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentHead {
    /// The header.
    pub header: Header,
    /// The section table.
    pub table: alloc::vec::Vec<SectionEntry>,
}

impl SegmentHead {
    /// Reads and checks the header and section table from `prefix`, the file's first bytes
    /// (64-byte aligned; any length up to the whole file). A prefix too short for them gives
    /// [`FormatError::Truncated`] with the length needed; every section must lie inside the
    /// header's `file_len`.
    pub fn read(prefix: &[u8]) -> Result<SegmentHead, FormatError> {
        let header = check_header(prefix, crate::VERSION_RANGES)?;
        // (A whole file is checked against its buffer's length; a prefix cannot be, so the
        // length is held to what the format allows: a multiple of 64, at most 2^62.)
        if !header.file_len.is_multiple_of(ALIGN as u64) || header.file_len > 1 << 62 {
            return Err(FormatError::Malformed("file_len is not a multiple of 64 below 2^62"));
        }
        if prefix.len() as u64 > header.file_len {
            return Err(FormatError::Malformed("buffer is longer than the header's file_len"));
        }
        let ranges = header.version == crate::VERSION_RANGES;
        let flags = if ranges { SECTION_OPTIONAL | crate::SECTION_HOT } else { SECTION_OPTIONAL };
        let table = check_table(prefix, header, flags)?;
        let head = SegmentHead { header: *header, table: table.to_vec() };
        if ranges {
            // The hot sections: first in the table, right after it, ending at bootstrap_len.
            let bootstrap = head.bootstrap_len();
            let hot = table.iter().take_while(|e| e.flags & crate::SECTION_HOT != 0).count();
            let end = crate::align_up(table[..hot].last().map_or(table_end(header) as u64, |e| e.offset + e.length));
            if table[hot..].iter().any(|e| e.flags & crate::SECTION_HOT != 0)
                || end != bootstrap
                || bootstrap > header.file_len
                || table.first().is_some_and(|e| hot > 0 && e.offset != crate::align_up(table_end(header) as u64))
            {
                return Err(FormatError::Malformed("hot sections are not the bootstrap region after the table"));
            }
        }
        Ok(head)
    }

    /// How many bytes from offset 0 hold the header and the table, from `header` (at least
    /// the file's first 64 bytes), checked as [`read`](Self::read) checks it.
    pub fn table_end(header: &[u8]) -> Result<u64, FormatError> {
        let header = check_header(header, crate::VERSION_RANGES)?;
        if header.section_count == 0 || header.section_count > MAX_SECTIONS {
            return Err(FormatError::Malformed("section count out of range"));
        }
        Ok(table_end(header) as u64)
    }

    /// Format 2's `bootstrap_len`: the bytes from offset 0 that hold the header, the table and
    /// the hot sections (in format 1, the table's end).
    pub fn bootstrap_len(&self) -> u64 {
        if self.header.version == crate::VERSION_RANGES {
            u64::from_le_bytes(self.header.reserved[4..12].try_into().expect("8 bytes"))
        } else {
            table_end(&self.header) as u64
        }
    }

    /// The table entry of the section of `kind`, if present.
    pub fn entry(&self, kind: u32) -> Option<&SectionEntry> {
        self.table.iter().find(|e| e.kind == kind)
    }
}

impl<'a> SegmentReader<'a> {
    /// Checks the header and section table of `bytes` (which must start 64-byte aligned).
    pub fn open(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let header = check_header(bytes, FORMAT_VERSION)?;
        if header.file_len != bytes.len() as u64 {
            return Err(if header.file_len > bytes.len() as u64 {
                truncated("file", header.file_len, bytes.len())
            } else {
                FormatError::Malformed("buffer is longer than the header's file_len")
            });
        }
        let table = check_table(bytes, header, SECTION_OPTIONAL)?;
        Ok(SegmentReader { bytes, header, table })
    }

    /// The header.
    pub fn header(&self) -> &'a Header {
        self.header
    }

    /// The section table.
    pub fn sections(&self) -> &'a [SectionEntry] {
        self.table
    }

    /// The whole buffer.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    fn payload(&self, e: &SectionEntry) -> &'a [u8] {
        // In bounds: `open` checked offset + length <= file_len == bytes.len().
        &self.bytes[e.offset as usize..(e.offset + e.length) as usize]
    }

    /// The payload of the section of `kind`, if present.
    pub fn section(&self, kind: u32) -> Option<&'a [u8]> {
        self.table.iter().find(|e| e.kind == kind).map(|e| self.payload(e))
    }

    /// The payload of a required section, or [`FormatError::MissingSection`].
    pub fn require(&self, kind: u32) -> Result<&'a [u8], FormatError> {
        self.section(kind).ok_or(FormatError::MissingSection(kind_name(kind)))
    }

    /// Rejects required sections whose kind is not in `known`.
    pub fn check_known_kinds(&self, known: &[u32]) -> Result<(), FormatError> {
        match self.table.iter().find(|e| e.flags & SECTION_OPTIONAL == 0 && !known.contains(&e.kind)) {
            Some(e) => Err(FormatError::UnknownSection(e.kind)),
            None => Ok(()),
        }
    }

    /// Checks the CRC-32C of every section.
    pub fn verify_checksums(&self) -> Result<(), FormatError> {
        for e in self.table {
            let actual = crc32c(self.payload(e));
            if actual != e.crc {
                return Err(FormatError::ChecksumMismatch {
                    what: kind_name(e.kind),
                    kind: e.kind,
                    stored: e.crc,
                    actual,
                });
            }
        }
        Ok(())
    }
}

/// CRC-32C of `a` followed by `b`.
pub(crate) fn crc32c_parts(a: &[u8], b: &[u8]) -> u32 {
    let mut both = alloc::vec::Vec::with_capacity(a.len() + b.len());
    both.extend_from_slice(a);
    both.extend_from_slice(b);
    crc32c(&both)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AlignedBytes, SegmentWriter};
    use alloc::vec::Vec;
    use proptest::prelude::*;

    fn build(sections: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut w = SegmentWriter::new();
        for (k, p) in sections {
            w.add_section(*k, SECTION_OPTIONAL, p);
        }
        w.finish()
    }

    proptest! {
        #[test]
        fn round_trip(payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..6)) {
            let sections: Vec<(u32, Vec<u8>)> = payloads.into_iter().enumerate().map(|(i, p)| (i as u32 + 10, p)).collect();
            let file = build(&sections);
            prop_assert_eq!(file.len() % ALIGN, 0);
            let buf = AlignedBytes::from_slice(&file);
            let r = SegmentReader::open(buf.as_slice()).unwrap();
            r.verify_checksums().unwrap();
            for (k, p) in &sections {
                prop_assert_eq!(r.section(*k).unwrap(), &p[..]);
                prop_assert_eq!(r.sections().iter().find(|e| e.kind == *k).unwrap().offset % 64, 0);
            }
            // Writing twice gives the same bytes.
            prop_assert_eq!(build(&sections), file);
        }

        #[test]
        fn any_single_byte_flip_is_detected(payload in proptest::collection::vec(any::<u8>(), 1..200), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
            let file = build(&[(10, payload)]);
            let mut bad = file.clone();
            let i = pos.index(bad.len());
            bad[i] ^= 1 << bit;
            let buf = AlignedBytes::from_slice(&bad);
            let res = SegmentReader::open(buf.as_slice()).and_then(|r| r.verify_checksums());
            // Padding bytes are not covered by any checksum; flips elsewhere must be caught.
            let r = SegmentReader::open(AlignedBytes::from_slice(&file).as_slice()).unwrap().sections()[0];
            let in_padding = (i as u64) >= r.offset + r.length || (i >= 96 && (i as u64) < r.offset);
            if !in_padding {
                prop_assert!(res.is_err(), "flip at {} not detected", i);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let buf = AlignedBytes::from_slice(&bytes);
            if let Ok(r) = SegmentReader::open(buf.as_slice()) {
                let _ = r.verify_checksums();
            }
        }

        #[test]
        fn every_truncation_is_an_error(payload in proptest::collection::vec(any::<u8>(), 0..200), cut in any::<prop::sample::Index>()) {
            let file = build(&[(10, payload)]);
            let n = cut.index(file.len());
            let buf = AlignedBytes::from_slice(&file[..n]);
            prop_assert!(SegmentReader::open(buf.as_slice()).is_err());
        }
    }

    #[test]
    fn typed_errors() {
        let file = build(&[(10, alloc::vec![1, 2, 3])]);
        let mut v2 = file.clone();
        v2[8] = 2;
        // Re-seal the header checksum so the version check itself is what fails.
        let crc = crc32c(&v2[..32]);
        v2[32..36].copy_from_slice(&crc.to_le_bytes());
        let buf = AlignedBytes::from_slice(&v2);
        assert_eq!(
            SegmentReader::open(buf.as_slice()).unwrap_err(),
            FormatError::UnsupportedVersion { found: 2, newest: 1 }
        );
        let mut bad = file.clone();
        bad[0] = b'X';
        assert_eq!(SegmentReader::open(AlignedBytes::from_slice(&bad).as_slice()).unwrap_err(), FormatError::BadMagic);
        assert!(matches!(
            SegmentReader::open(AlignedBytes::from_slice(&file[..40]).as_slice()).unwrap_err(),
            FormatError::Truncated { .. }
        ));
        let buf = AlignedBytes::from_slice(&file);
        assert_eq!(SegmentReader::open(&buf.as_slice()[1..]).unwrap_err(), FormatError::Misaligned);
        let r = SegmentReader::open(buf.as_slice()).unwrap();
        assert_eq!(r.check_known_kinds(&[]), Ok(()), "optional sections are skipped");
    }
}
