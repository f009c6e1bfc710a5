//! The *array table* framing shared by every payload section (`docs/format.md`): a 16-byte
//! header, `groups * arrays` entries of `(offset, len)`, then 64-byte-aligned arrays.

use alloc::vec::Vec;

use bytemuck::Pod;

use crate::error::LayoutError;

/// Version of the payload sections.
pub const PAYLOAD_LAYOUT_VERSION: u32 = 1;
const HEADER: usize = 16;
const ENTRY: usize = 16;
const MAX_GROUPS: u32 = 1024;

/// Writes one section: arrays are appended group by group, array by array.
pub(crate) struct TableWriter {
    arrays: u32,
    entries: Vec<(u64, u64)>,
    data: Vec<u8>,
    magic: [u8; 4],
    groups: u32,
}

impl TableWriter {
    pub(crate) fn new(magic: [u8; 4], groups: u32, arrays: u32) -> TableWriter {
        TableWriter { arrays, entries: Vec::new(), data: Vec::new(), magic, groups }
    }

    /// Appends the next array (in group-major order).
    pub(crate) fn push<T: Pod>(&mut self, items: &[T]) {
        let bytes: &[u8] = bytemuck::cast_slice(items);
        while !self.data.len().is_multiple_of(64) {
            self.data.push(0);
        }
        let offset = if bytes.is_empty() { 0 } else { self.data.len() as u64 };
        self.entries.push((offset, bytes.len() as u64));
        self.data.extend_from_slice(bytes);
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        assert!(self.entries.len() == (self.groups * self.arrays) as usize, "array table incomplete");
        let table_end = HEADER + self.entries.len() * ENTRY;
        let data_start = table_end.div_ceil(64) * 64;
        let mut out = Vec::with_capacity(data_start + self.data.len());
        out.extend_from_slice(&self.magic);
        out.extend_from_slice(&PAYLOAD_LAYOUT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.groups.to_le_bytes());
        out.extend_from_slice(&self.arrays.to_le_bytes());
        for &(off, len) in &self.entries {
            let off = if len == 0 { 0 } else { off + data_start as u64 };
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.resize(data_start, 0);
        out.extend_from_slice(&self.data);
        out
    }
}

/// A checked view of one section's array table.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table<'a> {
    bytes: &'a [u8],
    entries: &'a [u8],
    groups: u32,
    arrays: u32,
    name: &'static str,
}

impl<'a> Table<'a> {
    pub(crate) fn open(
        bytes: &'a [u8],
        magic: [u8; 4],
        name: &'static str,
        arrays: u32,
    ) -> Result<Table<'a>, LayoutError> {
        Table::open_any(bytes, magic, name, &[arrays])
    }

    /// Like [`open`](Self::open), accepting any of several array counts per group (a section
    /// whose layout is told by its array count); [`arrays`](Self::arrays) says which.
    pub(crate) fn open_any(
        bytes: &'a [u8],
        magic: [u8; 4],
        name: &'static str,
        accepted: &[u32],
    ) -> Result<Table<'a>, LayoutError> {
        if !(bytes.as_ptr() as usize).is_multiple_of(8) {
            return Err(LayoutError::Misaligned { section: name });
        }
        if bytes.len() < HEADER {
            return Err(LayoutError::Truncated { section: name, needed: HEADER as u64, available: bytes.len() as u64 });
        }
        if bytes[..4] != magic {
            return Err(LayoutError::BadMagic { section: name });
        }
        let word = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let version = word(4);
        if version != PAYLOAD_LAYOUT_VERSION {
            return Err(LayoutError::UnsupportedVersion { section: name, found: version });
        }
        let groups = word(8);
        if groups > MAX_GROUPS {
            return Err(LayoutError::Malformed { section: name, reason: "too many groups" });
        }
        let arrays = word(12);
        if !accepted.contains(&arrays) {
            return Err(LayoutError::Malformed { section: name, reason: "wrong number of arrays per group" });
        }
        let table_end = HEADER + (groups * arrays) as usize * ENTRY;
        if bytes.len() < table_end {
            return Err(LayoutError::Truncated {
                section: name,
                needed: table_end as u64,
                available: bytes.len() as u64,
            });
        }
        let t = Table { bytes, entries: &bytes[HEADER..table_end], groups, arrays, name };
        for i in 0..(groups * arrays) as usize {
            let (off, len) = t.entry(i);
            let end =
                off.checked_add(len).ok_or(LayoutError::Malformed { section: name, reason: "array overflows" })?;
            if end > bytes.len() as u64 {
                return Err(LayoutError::Truncated { section: name, needed: end, available: bytes.len() as u64 });
            }
            if !off.is_multiple_of(64) {
                return Err(LayoutError::Misaligned { section: name });
            }
            if len > 0 && off < table_end as u64 {
                return Err(LayoutError::Malformed { section: name, reason: "array overlaps the table" });
            }
        }
        Ok(t)
    }

    /// The bytes of the array table (header and entries), from the section's start.
    pub(crate) fn table_len(&self) -> u64 {
        (HEADER + self.entries.len()) as u64
    }

    /// Group `g`'s span: from its first non-empty array's offset to its last one's end (`0..0`
    /// when all are empty). Arrays are written group by group, so the span holds only `g`'s.
    pub(crate) fn group_span(&self, g: u32) -> core::ops::Range<u64> {
        let mut span: Option<core::ops::Range<u64>> = None;
        for a in 0..self.arrays {
            let (off, len) = self.entry((g * self.arrays + a) as usize);
            if len > 0 {
                let s = span.get_or_insert(off..off + len);
                s.start = s.start.min(off);
                s.end = s.end.max(off + len);
            }
        }
        span.unwrap_or(0..0)
    }

    fn entry(&self, i: usize) -> (u64, u64) {
        let e = &self.entries[i * ENTRY..(i + 1) * ENTRY];
        let off = u64::from_le_bytes(e[..8].try_into().unwrap_or([0; 8]));
        let len = u64::from_le_bytes(e[8..].try_into().unwrap_or([0; 8]));
        (off, len)
    }

    pub(crate) fn groups(&self) -> u32 {
        self.groups
    }

    /// Arrays per group.
    pub(crate) fn arrays(&self) -> u32 {
        self.arrays
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Array `a` of group `g`, cast to records of `T`.
    pub(crate) fn array<T: Pod>(&self, g: u32, a: u32) -> Result<&'a [T], LayoutError> {
        let bad = |reason| LayoutError::Malformed { section: self.name, reason };
        if g >= self.groups || a >= self.arrays {
            return Err(bad("array index out of range"));
        }
        let (off, len) = self.entry((g * self.arrays + a) as usize);
        // Bounds were checked on open.
        let bytes = &self.bytes[off as usize..(off + len) as usize];
        if !bytes.len().is_multiple_of(core::mem::size_of::<T>()) {
            return Err(bad("array length is not a whole number of records"));
        }
        bytemuck::try_cast_slice(bytes).map_err(|_| LayoutError::Misaligned { section: self.name })
    }

    /// Like [`array`](Self::array), and checks the record count.
    pub(crate) fn array_n<T: Pod>(&self, g: u32, a: u32, n: u64, reason: &'static str) -> Result<&'a [T], LayoutError> {
        let arr = self.array::<T>(g, a)?;
        if arr.len() as u64 != n {
            return Err(LayoutError::Malformed { section: self.name, reason });
        }
        Ok(arr)
    }
}
