use alloc::vec::Vec;
use bytemuck::Zeroable;

use crate::{ALIGN, FORMAT_VERSION, Header, MAGIC, SectionEntry, align_up, crc32c};

/// Where every section of a segment goes, planned from the sections' lengths alone — before
/// any of them is written.
///
/// A large segment is built in place: the host gives a zeroed buffer of
/// [`file_len`](Self::file_len) bytes (natively a memory-mapped file), the builder fills each
/// section's [`range`](Self::range), and [`finish`](Self::finish) checksums the sections and
/// writes the header and table in front of them. The bytes are those [`SegmentWriter`] gives
/// for the same payloads (it is built on this).
#[derive(Clone, Debug)]
pub struct Layout {
    table: Vec<SectionEntry>,
    file_len: u64,
    flags: u32,
}

impl Layout {
    /// Plans sections `(kind, flags, length)` in this order. Panics if a kind repeats.
    pub fn new(sections: &[(u32, u32, u64)]) -> Layout {
        let table_len = (sections.len() * core::mem::size_of::<SectionEntry>()) as u64;
        let mut offset = align_up(ALIGN as u64 + table_len);
        let mut table = Vec::with_capacity(sections.len());
        for (i, &(kind, flags, length)) in sections.iter().enumerate() {
            assert!(sections[..i].iter().all(|s| s.0 != kind), "a section kind added twice");
            table.push(SectionEntry { kind, flags, offset, length, crc: 0, reserved: 0 });
            offset = align_up(offset + length);
        }
        Layout { table, file_len: offset, flags: 0 }
    }

    /// Sets the header flags (`FLAG_*`; none by default).
    pub fn set_flags(&mut self, flags: u32) {
        self.flags = flags;
    }

    /// Total length of the file.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Whether section `kind` was planned.
    pub fn has(&self, kind: u32) -> bool {
        self.table.iter().any(|e| e.kind == kind)
    }

    /// Byte range of section `kind` in the file. Panics if it was not planned.
    pub fn range(&self, kind: u32) -> core::ops::Range<usize> {
        let e = self.table.iter().find(|e| e.kind == kind).expect("a planned section kind");
        e.offset as usize..(e.offset + e.length) as usize
    }

    /// Header and table bytes (with the padding after them) for sections with these CRCs.
    fn head(&self, crcs: &[u32]) -> Vec<u8> {
        let mut table = self.table.clone();
        for (e, &crc) in table.iter_mut().zip(crcs) {
            e.crc = crc;
        }
        let table_bytes: &[u8] = bytemuck::cast_slice(&table);
        let mut header = Header::zeroed();
        header.magic = MAGIC;
        header.version = FORMAT_VERSION;
        header.flags = self.flags;
        header.section_count = table.len() as u32;
        header.table_crc = crc32c(table_bytes);
        header.file_len = self.file_len;
        header.header_crc = crc32c(&bytemuck::bytes_of(&header)[..32]);
        let mut head = Vec::with_capacity(self.table.first().map_or(ALIGN, |e| e.offset as usize));
        head.extend_from_slice(bytemuck::bytes_of(&header));
        head.extend_from_slice(table_bytes);
        head.resize(align_up(head.len() as u64) as usize, 0);
        head
    }

    /// Zeroes the padding after every section, checksums every section of `file` (the whole
    /// file, sections filled) and writes the header and table at its start. Panics if `file`
    /// is not [`file_len`](Self::file_len) bytes long.
    pub fn finish(&self, file: &mut [u8]) {
        assert!(file.len() as u64 == self.file_len, "segment buffer of the wrong length");
        for e in &self.table {
            file[(e.offset + e.length) as usize..align_up(e.offset + e.length) as usize].fill(0);
        }
        let crcs: Vec<u32> =
            self.table.iter().map(|e| crc32c(&file[e.offset as usize..(e.offset + e.length) as usize])).collect();
        let head = self.head(&crcs);
        file[..head.len()].copy_from_slice(&head);
    }
}

impl Layout {
    /// [`finish`](Self::finish) for format 2 (`docs/format.md`, "Segment format version 2"):
    /// the sections flagged [`SECTION_HOT`](crate::SECTION_HOT) must be the first ones planned;
    /// the header says version 2 and where they end (`bootstrap_len`). Panics otherwise.
    pub fn finish_ranges(&self, file: &mut [u8]) {
        let hot = self.table.iter().take_while(|e| e.flags & crate::SECTION_HOT != 0).count();
        assert!(
            self.table[hot..].iter().all(|e| e.flags & crate::SECTION_HOT == 0),
            "hot sections come first in a format-2 segment"
        );
        let table_end = (ALIGN + self.table.len() * core::mem::size_of::<SectionEntry>()) as u64;
        let bootstrap = align_up(self.table[..hot].last().map_or(table_end, |e| e.offset + e.length));
        self.finish(file);
        let mut header: Header = *bytemuck::from_bytes(&file[..ALIGN]);
        header.version = crate::VERSION_RANGES;
        header.reserved[4..12].copy_from_slice(&bootstrap.to_le_bytes());
        let bytes = bytemuck::bytes_of(&header);
        header.header_crc = crate::reader::crc32c_parts(&bytes[..32], &bytes[36..]);
        file[..ALIGN].copy_from_slice(bytemuck::bytes_of(&header));
    }
}

/// Assembles a segment from section payloads already in memory.
///
/// Sections are laid out in the order they are added. The output is deterministic: padding
/// and reserved bytes are zero and nothing depends on time or addresses.
#[derive(Default)]
pub struct SegmentWriter<'a> {
    sections: Vec<(u32, u32, &'a [u8])>,
    flags: u32,
}

impl<'a> SegmentWriter<'a> {
    /// An empty writer.
    pub fn new() -> Self {
        SegmentWriter { sections: Vec::new(), flags: 0 }
    }

    /// Sets the header flags (`FLAG_*`; none by default).
    pub fn set_flags(&mut self, flags: u32) -> &mut Self {
        self.flags = flags;
        self
    }

    /// Adds a section with the given kind, flags and payload. Panics if `kind` was added before.
    pub fn add_section(&mut self, kind: u32, flags: u32, payload: &'a [u8]) -> &mut Self {
        assert!(self.sections.iter().all(|s| s.0 != kind), "section kind {kind} added twice");
        self.sections.push((kind, flags, payload));
        self
    }

    fn layout(&self) -> Layout {
        let planned: Vec<(u32, u32, u64)> = self.sections.iter().map(|&(k, f, p)| (k, f, p.len() as u64)).collect();
        let mut layout = Layout::new(&planned);
        layout.set_flags(self.flags);
        layout
    }

    /// Total length of the file.
    pub fn file_len(&self) -> u64 {
        self.layout().file_len
    }

    /// Writes the file into `out` ([`file_len`](Self::file_len) bytes; every byte written).
    /// Panics if `out` has another length.
    pub fn write_into(&self, out: &mut [u8]) {
        let layout = self.layout();
        assert!(out.len() as u64 == layout.file_len, "segment buffer of the wrong length");
        for &(kind, _, payload) in &self.sections {
            out[layout.range(kind)].copy_from_slice(payload);
        }
        layout.finish(out);
    }

    /// The whole file as bytes.
    pub fn finish(&self) -> Vec<u8> {
        let mut out = alloc::vec![0u8; self.file_len() as usize];
        self.write_into(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_filled_in_place_gives_the_writers_bytes() {
        let a = [7u8; 100];
        let b: [u8; 0] = [];
        let c = [1u8, 2, 3];
        let mut w = SegmentWriter::new();
        w.add_section(1, 0, &a).add_section(2, 1, &b).add_section(9, 0, &c);
        let layout = Layout::new(&[(1, 0, 100), (2, 1, 0), (9, 0, 3)]);
        let mut file = alloc::vec![0u8; layout.file_len() as usize];
        file[layout.range(1)].copy_from_slice(&a);
        file[layout.range(9)].copy_from_slice(&c);
        layout.finish(&mut file);
        assert_eq!(file, w.finish());
    }
}
