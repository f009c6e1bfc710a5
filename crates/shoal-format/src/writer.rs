use alloc::vec::Vec;
use bytemuck::Zeroable;

use crate::{ALIGN, FORMAT_VERSION, Header, MAGIC, SectionEntry, align_up, crc32c};

/// Assembles a segment from section payloads.
///
/// Sections are laid out in the order they are added. The output is deterministic: padding
/// and reserved bytes are zero and nothing depends on time or addresses.
#[derive(Default)]
pub struct SegmentWriter<'a> {
    sections: Vec<(u32, u32, &'a [u8])>,
}

impl<'a> SegmentWriter<'a> {
    /// An empty writer.
    pub fn new() -> Self {
        SegmentWriter { sections: Vec::new() }
    }

    /// Adds a section with the given kind, flags and payload. Panics if `kind` was added before.
    pub fn add_section(&mut self, kind: u32, flags: u32, payload: &'a [u8]) -> &mut Self {
        assert!(self.sections.iter().all(|s| s.0 != kind), "section kind {kind} added twice");
        self.sections.push((kind, flags, payload));
        self
    }

    /// Header and section table (with the padding after it), computed without copying payloads.
    fn head(&self) -> (Vec<u8>, u64) {
        let table_len = (self.sections.len() * core::mem::size_of::<SectionEntry>()) as u64;
        let mut offset = align_up(ALIGN as u64 + table_len);
        let mut table = Vec::with_capacity(self.sections.len());
        for &(kind, flags, payload) in &self.sections {
            table.push(SectionEntry {
                kind,
                flags,
                offset,
                length: payload.len() as u64,
                crc: crc32c(payload),
                reserved: 0,
            });
            offset = align_up(offset + payload.len() as u64);
        }
        let table_bytes: &[u8] = bytemuck::cast_slice(&table);
        let mut header = Header::zeroed();
        header.magic = MAGIC;
        header.version = FORMAT_VERSION;
        header.section_count = self.sections.len() as u32;
        header.table_crc = crc32c(table_bytes);
        header.file_len = offset;
        header.header_crc = crc32c(&bytemuck::bytes_of(&header)[..32]);
        let mut head = Vec::with_capacity(align_up(ALIGN as u64 + table_len) as usize);
        head.extend_from_slice(bytemuck::bytes_of(&header));
        head.extend_from_slice(table_bytes);
        head.resize(align_up(head.len() as u64) as usize, 0);
        (head, offset)
    }

    /// Total length of the file [`finish`](Self::finish) would produce.
    pub fn file_len(&self) -> u64 {
        self.head().1
    }

    /// Streams the file to `sink` in order, chunk by chunk (header+table, then each section
    /// and its padding). Used natively to write large segments without a second copy in RAM.
    pub fn write_with<E>(&self, mut sink: impl FnMut(&[u8]) -> Result<(), E>) -> Result<u64, E> {
        const ZEROS: [u8; ALIGN] = [0; ALIGN];
        let (head, file_len) = self.head();
        sink(&head)?;
        for &(_, _, payload) in &self.sections {
            sink(payload)?;
            let pad = (align_up(payload.len() as u64) - payload.len() as u64) as usize;
            if pad > 0 {
                sink(&ZEROS[..pad])?;
            }
        }
        Ok(file_len)
    }

    /// The whole file as bytes.
    pub fn finish(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.file_len() as usize);
        let _ = self.write_with::<core::convert::Infallible>(|chunk| {
            out.extend_from_slice(chunk);
            Ok(())
        });
        out
    }
}
