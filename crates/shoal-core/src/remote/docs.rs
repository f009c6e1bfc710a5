//! The documents of format 2 (`docs/format.md`, "Payload, v2"): rows' payloads in blocks of about
//! 4 KiB, each block one range checked by a CRC in the hot directory, so that a query returning
//! payloads reads one range per block holding one of its results; and the ids by row that text
//! hits need (packed and hot when small, else in blocks of 64 rows).

use alloc::vec::Vec;
use core::ops::Range;

use serde_json::Value;
use shoal_format::crc32c;

use crate::Error;
use crate::sections::bad;

/// `PAYLOAD_DOC_DIR`: each block's length and CRC (hot).
pub const KIND_PAYLOAD_DOC_DIR: u32 = 37;
/// `PAYLOAD_DOC_BLOCKS`: the blocks.
pub const KIND_PAYLOAD_DOC_BLOCKS: u32 = 38;
/// `ROW_IDS_DIR`: the CRC of each block of `ROW_IDS` (hot; with a text index).
pub const KIND_ROW_IDS_DIR: u32 = 66;
/// `ROW_IDS`: each row's point id, in row order (with a text index).
pub const KIND_ROW_IDS: u32 = 67;
/// `ROW_IDS_PACKED`: every row's point id bit-packed (hot; with a text index, in place of
/// kinds 66–67 when it takes at most [`MAX_PACKED_IDS`] bytes).
pub const KIND_ROW_IDS_PACKED: u32 = 68;
/// The most bytes of packed ids a segment keeps hot (so that a text query's ids need no wave).
pub const MAX_PACKED_IDS: usize = 256 * 1024;
/// Rows per block of ids, and the most rows per block of documents.
pub const BLOCK_ROWS: usize = 64;
/// The bytes a block of documents holds at most on average: the writer picks the rows per
/// block (a power of two, 1 to 64) that keeps the average block within them.
pub const DOC_BLOCK_BYTES: usize = 4096;

/// The rows per block of documents whose average length is `avg` bytes: the largest power of
/// two up to [`BLOCK_ROWS`] whose blocks stay within [`DOC_BLOCK_BYTES`] on average (at least 1).
pub fn doc_block_rows(avg: usize) -> usize {
    let mut rows = BLOCK_ROWS;
    while rows > 1 && rows.saturating_mul(avg.saturating_add(4)) > DOC_BLOCK_BYTES {
        rows /= 2;
    }
    rows
}

/// `PAYLOAD_DOC_DIR` and `PAYLOAD_DOC_BLOCKS` of `docs` (each row's compact JSON, in row
/// order), in blocks of [`doc_block_rows`] of their average length.
pub fn lay_out_docs(docs: &[&[u8]]) -> Result<(Vec<u8>, Vec<u8>), Error> {
    let rows = docs.len();
    let avg = docs.iter().map(|d| d.len()).sum::<usize>() / rows.max(1);
    let block_rows = doc_block_rows(avg);
    let blocks = rows.div_ceil(block_rows);
    let mut dir = Vec::with_capacity(8 + 8 * blocks);
    dir.extend_from_slice(&(block_rows as u32).to_le_bytes());
    dir.extend_from_slice(&(blocks as u32).to_le_bytes());
    let mut out = Vec::new();
    let too_big = || Error::Unsupported("a block of payloads over 4 GiB in a format-2 segment");
    for block in docs.chunks(block_rows) {
        let start = out.len();
        let mut end = 0u32;
        for d in block {
            end = u32::try_from(d.len()).ok().and_then(|n| end.checked_add(n)).ok_or_else(too_big)?;
            out.extend_from_slice(&end.to_le_bytes());
        }
        block.iter().for_each(|d| out.extend_from_slice(d));
        let bytes = &out[start..];
        let len = u32::try_from(bytes.len()).map_err(|_| too_big())?;
        dir.extend_from_slice(&len.to_le_bytes());
        dir.extend_from_slice(&crc32c(bytes).to_le_bytes());
    }
    Ok((dir, out))
}

/// `PAYLOAD_DOC_DIR` read: where each block lies in `PAYLOAD_DOC_BLOCKS`, and its CRC.
#[derive(Debug)]
pub struct DocDir {
    rows: usize,
    block_rows: usize,
    /// `(offset, length, crc)` per block.
    blocks: Vec<(u64, u32, u32)>,
}

fn bad_dir(why: &'static str) -> Error {
    bad("PAYLOAD_DOC_DIR", why)
}

impl DocDir {
    /// Reads and checks the directory of a segment of `rows` rows whose `PAYLOAD_DOC_BLOCKS` is
    /// `blocks_len` bytes.
    pub fn parse(bytes: &[u8], rows: usize, blocks_len: u64) -> Result<DocDir, Error> {
        let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        let (Some(block_rows), Some(n)) = (u32_at(0), u32_at(4)) else {
            return Err(bad_dir("shorter than its header"));
        };
        let (n, block_rows) = (n as usize, block_rows as usize);
        if !block_rows.is_power_of_two() || block_rows > BLOCK_ROWS {
            return Err(bad_dir("rows per block not a power of two up to 64"));
        }
        if n != rows.div_ceil(block_rows) || Some(bytes.len()) != n.checked_mul(8).and_then(|b| b.checked_add(8)) {
            return Err(bad_dir("not one entry per block"));
        }
        let mut blocks = Vec::with_capacity(n);
        let mut offset = 0u64;
        for b in 0..n {
            let (len, crc) = (u32_at(8 + 8 * b).expect("in range"), u32_at(12 + 8 * b).expect("in range"));
            let docs = (rows - b * block_rows).min(block_rows) as u32;
            if len < 4 * docs {
                return Err(bad_dir("a block shorter than its row ends"));
            }
            blocks.push((offset, len, crc));
            offset += u64::from(len);
        }
        if offset != blocks_len {
            return Err(bad_dir("blocks do not end where PAYLOAD_DOC_BLOCKS does"));
        }
        Ok(DocDir { rows, block_rows, blocks })
    }

    /// The block holding `row`.
    pub fn block_of(&self, row: usize) -> usize {
        row / self.block_rows
    }

    /// Block `b`'s bytes in `PAYLOAD_DOC_BLOCKS`.
    pub fn range(&self, b: usize) -> Range<u64> {
        let (offset, len, _) = self.blocks[b];
        offset..offset + u64::from(len)
    }

    /// The document of `row` from its block's bytes (`block`: [`range`](Self::range) of
    /// [`block_of`](Self::block_of)), the block checked against its CRC and its layout.
    pub fn document(&self, row: usize, block: &[u8]) -> Result<Value, Error> {
        let what = "PAYLOAD_DOC_BLOCKS";
        let b = self.block_of(row);
        let (_, len, crc) = self.blocks[b];
        if block.len() != len as usize {
            return Err(bad(what, "a block of another length"));
        }
        super::check_block(block, crc, what, KIND_PAYLOAD_DOC_BLOCKS)?;
        let docs = (self.rows - b * self.block_rows).min(self.block_rows);
        let (ends, text) = block.split_at_checked(4 * docs).ok_or_else(|| bad(what, "shorter than its row ends"))?;
        let end = |i: usize| u32::from_le_bytes(ends[4 * i..4 * i + 4].try_into().expect("4 bytes")) as usize;
        // Every end ascending, the last the documents' length (a block of at most 64 rows).
        let ascending = (0..docs).try_fold(0, |prev, i| (end(i) >= prev).then(|| end(i))).is_some();
        if !ascending || end(docs - 1) != text.len() {
            return Err(bad(what, "row ends that are not the block's documents"));
        }
        let i = row - b * self.block_rows;
        let start = if i == 0 { 0 } else { end(i - 1) };
        let value: Value =
            serde_json::from_slice(&text[start..end(i)]).map_err(|_| bad(what, "a document that is not JSON"))?;
        if !value.is_object() {
            return Err(bad(what, "a document that is not a JSON object"));
        }
        Ok(value)
    }
}

/// `ROW_IDS_DIR` of `ids` (`ROW_IDS` is the ids themselves, `u64` each).
pub fn lay_out_ids(ids: &[u64]) -> Vec<u8> {
    let blocks = ids.len().div_ceil(BLOCK_ROWS);
    let mut dir = Vec::with_capacity(8 + 4 * blocks);
    dir.extend_from_slice(&(BLOCK_ROWS as u32).to_le_bytes());
    dir.extend_from_slice(&(blocks as u32).to_le_bytes());
    for block in ids.chunks(BLOCK_ROWS) {
        dir.extend_from_slice(&crc32c(bytemuck::cast_slice(block)).to_le_bytes());
    }
    dir
}

/// `ROW_IDS_PACKED` of `ids` when it takes at most [`MAX_PACKED_IDS`] bytes: `u64 base` (the
/// smallest id), `u32 width` (bits per id, 0..=64), `u32 rows`, then each id minus `base` in
/// `width` bits, least significant bit first, from the first byte, to a whole byte.
pub fn pack_ids(ids: &[u64]) -> Option<Vec<u8>> {
    let base = ids.iter().copied().min().unwrap_or(0);
    let width = 64 - ids.iter().fold(0, |m, &id| m | (id - base)).leading_zeros();
    let len = 16 + (ids.len() * width as usize).div_ceil(8);
    if len > MAX_PACKED_IDS {
        return None;
    }
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&base.to_le_bytes());
    out.extend_from_slice(&width.to_le_bytes());
    out.extend_from_slice(&(ids.len() as u32).to_le_bytes());
    let (mut acc, mut bits) = (0u128, 0u32);
    for &id in ids {
        acc |= u128::from(id - base) << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
    Some(out)
}

/// `ROW_IDS_PACKED` read (checked against its table CRC at open).
#[derive(Debug)]
pub struct PackedIds {
    base: u64,
    width: u32,
    bits: Vec<u8>,
}

impl PackedIds {
    /// Reads the packed ids of a segment of `rows` rows.
    pub fn parse(bytes: &[u8], rows: usize) -> Result<PackedIds, Error> {
        let why = |w| bad("ROW_IDS_PACKED", w);
        let head = bytes.get(..16).ok_or(why("shorter than its header"))?;
        let base = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        let width = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        let n = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as usize;
        let len = rows.checked_mul(width as usize).map(|bits| 16 + bits.div_ceil(8));
        if width > 64 || n != rows || Some(bytes.len()) != len {
            return Err(why("not one id per row"));
        }
        Ok(PackedIds { base, width, bits: bytes[16..].to_vec() })
    }

    /// The id of `row` (< rows).
    pub fn id(&self, row: usize) -> u64 {
        let w = self.width as usize;
        let (mut v, mut got, mut at) = (0u128, 0usize, row * w);
        while got < w {
            let (byte, shift) = (at / 8, at % 8);
            let take = (8 - shift).min(w - got);
            let bits = (u128::from(self.bits[byte]) >> shift) & ((1u128 << take) - 1);
            v |= bits << got;
            got += take;
            at += take;
        }
        self.base.wrapping_add(v as u64)
    }
}

/// `ROW_IDS_DIR` read: the CRC of each block of 64 rows' ids.
#[derive(Debug)]
pub struct IdDir {
    rows: usize,
    crcs: Vec<u32>,
}

impl IdDir {
    /// Reads and checks the directory of a segment of `rows` rows whose `ROW_IDS` is
    /// `ids_len` bytes.
    pub fn parse(bytes: &[u8], rows: usize, ids_len: u64) -> Result<IdDir, Error> {
        let why = |w| bad("ROW_IDS_DIR", w);
        let words: Vec<u32> =
            bytes.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))).collect();
        let n = rows.div_ceil(BLOCK_ROWS);
        if Some(bytes.len()) != n.checked_mul(4).and_then(|b| b.checked_add(8))
            || words[0] as usize != BLOCK_ROWS
            || words[1] as usize != n
        {
            return Err(why("not one CRC per 64 rows"));
        }
        if ids_len != rows as u64 * 8 {
            return Err(bad("ROW_IDS", "not 8 bytes per row"));
        }
        Ok(IdDir { rows, crcs: words[2..].to_vec() })
    }

    /// The bytes in `ROW_IDS` of the block holding `row`.
    pub fn range(&self, row: usize) -> Range<u64> {
        let b = row / BLOCK_ROWS;
        let end = ((b + 1) * BLOCK_ROWS).min(self.rows);
        (b * BLOCK_ROWS * 8) as u64..(end * 8) as u64
    }

    /// The id of `row` from its block's bytes ([`range`](Self::range)), checked against the
    /// block's CRC.
    pub fn id(&self, row: usize, block: &[u8]) -> Result<u64, Error> {
        let stored = self.crcs[row / BLOCK_ROWS];
        let actual = crc32c(block);
        let r = self.range(row);
        if block.len() as u64 != r.end - r.start || actual != stored {
            return Err(shoal_format::FormatError::ChecksumMismatch {
                what: "ROW_IDS",
                kind: KIND_ROW_IDS,
                stored,
                actual,
            }
            .into());
        }
        let at = (row % BLOCK_ROWS) * 8;
        Ok(u64::from_le_bytes(block[at..at + 8].try_into().expect("8 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec;

    fn docs(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| if i % 5 == 3 { "{}".into() } else { format!("{{\"n\":{i},\"s\":\"{}\"}}", "x".repeat(i % 7)) })
            .collect()
    }

    #[test]
    fn every_document_reads_back_from_its_block() {
        for n in [0usize, 1, 63, 64, 65, 200] {
            let d = docs(n);
            let refs: Vec<&[u8]> = d.iter().map(|s| s.as_bytes()).collect();
            let (dir, blocks) = lay_out_docs(&refs).unwrap();
            let dd = DocDir::parse(&dir, n, blocks.len() as u64).unwrap();
            for (row, want) in d.iter().enumerate() {
                let r = dd.range(dd.block_of(row));
                let got = dd.document(row, &blocks[r.start as usize..r.end as usize]).unwrap();
                assert_eq!(serde_json::to_string(&got).unwrap(), *want);
            }
        }
    }

    #[test]
    fn damaged_directories_and_blocks_are_errors() {
        let d = docs(130);
        let refs: Vec<&[u8]> = d.iter().map(|s| s.as_bytes()).collect();
        let (dir, blocks) = lay_out_docs(&refs).unwrap();
        let len = blocks.len() as u64;
        assert!(DocDir::parse(&dir, 200, len).is_err(), "another block count");
        let mut odd = dir.clone();
        odd[0] = 3;
        assert!(DocDir::parse(&odd, 130, len).is_err(), "3 rows per block");
        assert!(DocDir::parse(&dir, 130, len + 1).is_err(), "another section length");
        assert!(DocDir::parse(&dir[..dir.len() - 1], 130, len).is_err());
        let dd = DocDir::parse(&dir, 130, len).unwrap();
        let r = dd.range(1);
        let block = &blocks[r.start as usize..r.end as usize];
        for at in 0..block.len() {
            let mut bad = block.to_vec();
            bad[at] ^= 0x10;
            assert!(dd.document(70, &bad).is_err(), "a changed byte at {at}");
        }
        assert!(dd.document(70, &block[..block.len() - 1]).is_err());
    }

    #[test]
    fn row_ends_past_the_documents_are_errors_even_with_a_right_crc() {
        let d = docs(10);
        let refs: Vec<&[u8]> = d.iter().map(|s| s.as_bytes()).collect();
        let (mut dir, mut blocks) = lay_out_docs(&refs).unwrap();
        // Row 2's end set past the documents, the CRC recomputed: a crafted block.
        blocks[8..12].copy_from_slice(&10_000u32.to_le_bytes());
        let crc = crc32c(&blocks);
        dir[12..16].copy_from_slice(&crc.to_le_bytes());
        let dd = DocDir::parse(&dir, 10, blocks.len() as u64).unwrap();
        for row in 0..10 {
            let _ = dd.document(row, &blocks);
        }
        assert!(dd.document(2, &blocks).is_err());
        // Ends out of order elsewhere in the block (row 5's below row 4's): every row's read
        // is refused, not only the rows whose own ends are wrong.
        let (mut dir, mut blocks) = lay_out_docs(&refs).unwrap();
        blocks[20..24].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32c(&blocks);
        dir[12..16].copy_from_slice(&crc.to_le_bytes());
        let dd = DocDir::parse(&dir, 10, blocks.len() as u64).unwrap();
        assert!((0..10).all(|row| dd.document(row, &blocks).is_err()));
        // A block shorter than its row ends (its directory length crafted to match): refused by
        // the directory.
        let short = &blocks[..12];
        let mut dir2 = dir.clone();
        dir2[8..12].copy_from_slice(&12u32.to_le_bytes());
        dir2[12..16].copy_from_slice(&crc32c(short).to_le_bytes());
        assert!(DocDir::parse(&dir2, 10, 12).is_err());
    }

    #[test]
    fn blocks_hold_about_4_kib_of_documents() {
        assert_eq!(
            (doc_block_rows(2), doc_block_rows(61), doc_block_rows(420), doc_block_rows(100_000)),
            (64, 32, 8, 1)
        );
        let big: Vec<String> = (0..50).map(|i| format!("{{\"t\":\"{}\"}}", "y".repeat(900 + i))).collect();
        let refs: Vec<&[u8]> = big.iter().map(|s| s.as_bytes()).collect();
        let (dir, blocks) = lay_out_docs(&refs).unwrap();
        let dd = DocDir::parse(&dir, 50, blocks.len() as u64).unwrap();
        assert_eq!(dd.block_rows, 4);
        let r = dd.range(dd.block_of(49));
        assert_eq!(
            dd.document(49, &blocks[r.start as usize..r.end as usize]).unwrap()["t"].as_str().unwrap().len(),
            949
        );
    }

    #[test]
    fn packed_ids_read_back_at_every_width() {
        for ids in [vec![], vec![7u64], (0..300u64).map(|i| i * 3 + 5).collect(), vec![0, u64::MAX, 1 << 63, 12]] {
            let packed = pack_ids(&ids).unwrap();
            let p = PackedIds::parse(&packed, ids.len()).unwrap();
            assert_eq!((0..ids.len()).map(|r| p.id(r)).collect::<Vec<_>>(), ids);
            assert!(
                PackedIds::parse(&packed[..packed.len().saturating_sub(1).max(15)], ids.len()).is_err()
                    || ids.is_empty()
            );
            assert!(PackedIds::parse(&packed, ids.len() + 1).is_err());
        }
        let many: Vec<u64> = (0..200_000u64).map(|i| i * 1_000_003).collect();
        assert!(pack_ids(&many).is_none(), "over the hot budget");
    }

    #[test]
    fn ids_read_back_and_damaged_blocks_are_errors() {
        let ids: Vec<u64> = (0..150u64).map(|i| i * 7919 + 3).collect();
        let dir = lay_out_ids(&ids);
        let bytes: &[u8] = bytemuck::cast_slice(&ids);
        assert!(IdDir::parse(&dir, 151, bytes.len() as u64).is_err());
        let d = IdDir::parse(&dir, 150, bytes.len() as u64).unwrap();
        for (row, &want) in ids.iter().enumerate() {
            let r = d.range(row);
            let block = &bytes[r.start as usize..r.end as usize];
            assert_eq!(d.id(row, block).unwrap(), want);
            let mut bad = block.to_vec();
            bad[row % 64 * 8] ^= 1;
            assert!(d.id(row, &bad).is_err());
        }
    }
}
