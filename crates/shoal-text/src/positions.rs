//! Position lists for phrase queries, with a per-posting 64-bit approximate position mask.
//!
//! One list per term, aligned with its postings list (same order, same blocks of
//! [`BLOCK`]); layout in `docs/format.md` (`TEXT_POSITIONS`). The mask
//! of a posting has bit `p mod 64` set for every position `p`: [`phrase_mask_filter`] combines
//! the masks of a phrase's terms and rejects most documents where the terms cannot be adjacent
//! before any position is decoded (the idea of Marginalia's index). It never rejects a true match.

use alloc::vec::Vec;

use crate::TextError;
use crate::error::corrupt;
use crate::postings::BLOCK;
use crate::varint::{get_u32, put_u32, read_u32, read_u64, skip_n};

const WHAT: &str = "positions list";

/// The mask of a position list: bit `p % 64` for each position `p`.
pub fn mask_of(positions: &[u32]) -> u64 {
    positions.iter().fold(0, |m, &p| m | 1u64 << (p % 64))
}

/// Whether a phrase can match, given the masks of its terms and their offsets in the phrase:
/// the AND of `mask_i` rotated right by `offset_i` is non-zero. A phrase that matches at
/// start position `s` sets bit `s % 64` in every rotated mask, so a true match is never rejected.
pub fn phrase_mask_filter(masks_and_offsets: impl IntoIterator<Item = (u64, u32)>) -> bool {
    masks_and_offsets.into_iter().fold(u64::MAX, |acc, (m, o)| acc & m.rotate_right(o % 64)) != 0
}

/// Encodes the position lists of one term and appends them to `out`.
///
/// `tfs[i]` positions of posting `i` follow each other in `positions` (so
/// `positions.len() == sum(tfs)`); each posting's positions must be strictly ascending.
pub fn encode(tfs: &[u32], positions: &[u32], out: &mut Vec<u8>) -> Result<(), TextError> {
    let total: u64 = tfs.iter().map(|&t| u64::from(t)).sum();
    if total != positions.len() as u64 || tfs.contains(&0) {
        return Err(TextError::InvalidInput("positions: counts do not match"));
    }
    let mut at = 0usize;
    for &tf in tfs {
        if positions[at..at + tf as usize].windows(2).any(|w| w[0] >= w[1]) {
            return Err(TextError::InvalidInput("positions: not strictly ascending"));
        }
        at += tf as usize;
    }
    let n_blocks = tfs.len().div_ceil(BLOCK);
    let ends_at = out.len();
    out.resize(ends_at + 4 * n_blocks, 0);
    let data_at = out.len();
    let mut at = 0usize;
    for b in 0..n_blocks {
        let t = &tfs[b * BLOCK..tfs.len().min((b + 1) * BLOCK)];
        let mut p = at;
        for &tf in t {
            if tf >= 2 {
                out.extend_from_slice(&mask_of(&positions[p..p + tf as usize]).to_le_bytes());
            }
            p += tf as usize;
        }
        for &tf in t {
            let ps = &positions[at..at + tf as usize];
            at += tf as usize;
            let mut prev: Option<u32> = None;
            for &x in ps {
                put_u32(out, prev.map_or(x, |q| x - q - 1));
                prev = Some(x);
            }
        }
        let end = out.len() - data_at;
        if end > u32::MAX as usize {
            return Err(TextError::InvalidInput("positions: list longer than 4 GiB"));
        }
        out[ends_at + 4 * b..ends_at + 4 * b + 4].copy_from_slice(&(end as u32).to_le_bytes());
    }
    Ok(())
}

/// The position lists of one term, read in place.
#[derive(Clone, Copy, Debug)]
pub struct PositionsList<'a> {
    ends: &'a [u8],
    data: &'a [u8],
    doc_count: u32,
}

impl<'a> PositionsList<'a> {
    /// Opens the list in `bytes` for a term with `doc_count` postings; checks the block table.
    pub fn open(bytes: &'a [u8], doc_count: u32) -> Result<PositionsList<'a>, TextError> {
        let n_blocks = doc_count.div_ceil(BLOCK as u32) as usize;
        let ends = bytes.get(..4 * n_blocks).ok_or(TextError::Truncated { what: "positions block table" })?;
        let data = &bytes[4 * n_blocks..];
        let mut prev = 0usize;
        for b in 0..n_blocks {
            let end = read_u32(ends, 4 * b, WHAT)? as usize;
            let count = (doc_count as usize - b * BLOCK).min(BLOCK);
            // Each block holds at least one varint per posting (masks are checked when read).
            if end < prev + count || end > data.len() {
                return Err(corrupt(WHAT, "block ends out of order or past the list"));
            }
            prev = end;
        }
        Ok(PositionsList { ends, data, doc_count })
    }

    fn block(&self, b: u32, block_tfs: &[u32], idx: usize) -> Result<&'a [u8], TextError> {
        let bi = b as usize;
        let start = if bi == 0 { 0 } else { read_u32(self.ends, 4 * (bi - 1), WHAT)? as usize };
        let end = read_u32(self.ends, 4 * bi, WHAT)? as usize;
        let count = (self.doc_count as usize).saturating_sub(bi * BLOCK).min(BLOCK);
        if idx >= count || block_tfs.len() != count {
            return Err(corrupt(WHAT, "posting index or term frequencies do not fit the block"));
        }
        self.data.get(start..end).ok_or(corrupt(WHAT, "block out of range"))
    }

    /// The mask of posting `idx` of block `b`, given the term frequencies of the block's postings.
    pub fn mask(&self, b: u32, idx: usize, block_tfs: &[u32]) -> Result<u64, TextError> {
        let bytes = self.block(b, block_tfs, idx)?;
        if block_tfs[idx] >= 2 {
            let j = block_tfs[..idx].iter().filter(|&&t| t >= 2).count();
            return read_u64(bytes, 8 * j, WHAT);
        }
        let mut pos = Self::skip_to(bytes, idx, block_tfs)?;
        Ok(1u64 << (get_u32(bytes, &mut pos, WHAT)? % 64))
    }

    /// Byte offset of posting `idx`'s first position varint in the block.
    fn skip_to(bytes: &[u8], idx: usize, block_tfs: &[u32]) -> Result<usize, TextError> {
        let masks = block_tfs.iter().filter(|&&t| t >= 2).count();
        let mut pos = 8 * masks;
        let skip: u64 = block_tfs[..idx].iter().map(|&t| u64::from(t)).sum();
        skip_n(bytes, &mut pos, u32::try_from(skip).unwrap_or(u32::MAX), WHAT)?;
        Ok(pos)
    }

    /// Decodes into `out` (cleared first) the positions of posting `idx` of block `b`, given
    /// the term frequencies of the block's postings (`block_tfs[idx]` positions are read).
    pub fn positions(&self, b: u32, idx: usize, block_tfs: &[u32], out: &mut Vec<u32>) -> Result<(), TextError> {
        out.clear();
        let bytes = self.block(b, block_tfs, idx)?;
        let mut pos = Self::skip_to(bytes, idx, block_tfs)?;
        let mut next = 0u64;
        for _ in 0..block_tfs[idx] {
            let v = next + u64::from(get_u32(bytes, &mut pos, WHAT)?);
            if v >= u64::from(u32::MAX) {
                return Err(corrupt(WHAT, "position overflows u32"));
            }
            out.push(v as u32);
            next = v + 1;
        }
        Ok(())
    }
}

/// A [`PositionsList`] read posting by posting in ascending order (as a postings cursor moves):
/// masks of postings with two or more positions are O(1); the position varints are found by
/// skipping forward from the last posting read, eight bytes at a time.
#[derive(Clone, Debug)]
pub struct PositionsCursor<'a> {
    list: PositionsList<'a>,
    block: u32,
    bytes: &'a [u8],
    /// Masks in the block (they precede its position varints).
    masks: usize,
    /// A posting of the block and the byte offset of its first position varint.
    at: usize,
    at_pos: usize,
}

impl<'a> PositionsCursor<'a> {
    /// A cursor over `list`.
    pub fn new(list: PositionsList<'a>) -> PositionsCursor<'a> {
        PositionsCursor { list, block: u32::MAX, bytes: &[], masks: 0, at: 0, at_pos: 0 }
    }

    fn index(&mut self, b: u32, idx: usize, block_tfs: &[u32]) -> Result<(), TextError> {
        if self.block == b && idx < block_tfs.len() {
            return Ok(());
        }
        self.bytes = self.list.block(b, block_tfs, idx)?;
        self.masks = block_tfs.iter().filter(|&&t| t >= 2).count();
        (self.at, self.at_pos) = (0, 8 * self.masks);
        self.block = b;
        Ok(())
    }

    /// The byte offset of posting `idx`'s first position varint.
    fn offset(&mut self, idx: usize, block_tfs: &[u32]) -> Result<usize, TextError> {
        if idx < self.at {
            (self.at, self.at_pos) = (0, 8 * self.masks);
        }
        let skip: u64 = block_tfs[self.at..idx].iter().map(|&t| u64::from(t)).sum();
        skip_n(self.bytes, &mut self.at_pos, u32::try_from(skip).unwrap_or(u32::MAX), WHAT)?;
        self.at = idx;
        Ok(self.at_pos)
    }

    /// The mask of posting `idx` of block `b` (see [`PositionsList::mask`]).
    pub fn mask(&mut self, b: u32, idx: usize, block_tfs: &[u32]) -> Result<u64, TextError> {
        self.index(b, idx, block_tfs)?;
        if block_tfs[idx] >= 2 {
            let slot = block_tfs[..idx].iter().filter(|&&t| t >= 2).count();
            return read_u64(self.bytes, 8 * slot, WHAT);
        }
        let mut pos = self.offset(idx, block_tfs)?;
        Ok(1u64 << (get_u32(self.bytes, &mut pos, WHAT)? % 64))
    }

    /// The positions of posting `idx` of block `b` (see [`PositionsList::positions`]).
    pub fn positions(&mut self, b: u32, idx: usize, block_tfs: &[u32], out: &mut Vec<u32>) -> Result<(), TextError> {
        out.clear();
        self.index(b, idx, block_tfs)?;
        let mut pos = self.offset(idx, block_tfs)?;
        let mut next = 0u64;
        for _ in 0..block_tfs[idx] {
            let v = next + u64::from(get_u32(self.bytes, &mut pos, WHAT)?);
            if v >= u64::from(u32::MAX) {
                return Err(corrupt(WHAT, "position overflows u32"));
            }
            out.push(v as u32);
            next = v + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn lists() -> impl Strategy<Value = Vec<Vec<u32>>> {
        proptest::collection::vec(
            prop_oneof![
                proptest::collection::btree_set(0u32..5000, 1..20),
                proptest::collection::btree_set(0u32..5000, 1..2)
            ],
            1..300,
        )
        .prop_map(|v| v.into_iter().map(|s| s.into_iter().collect()).collect())
    }

    proptest! {
        #[test]
        fn round_trip(lists in lists()) {
            let tfs: Vec<u32> = lists.iter().map(|l| l.len() as u32).collect();
            let flat: Vec<u32> = lists.iter().flatten().copied().collect();
            let mut bytes = Vec::new();
            encode(&tfs, &flat, &mut bytes).unwrap();
            let pl = PositionsList::open(&bytes, tfs.len() as u32).unwrap();
            let mut pc = PositionsCursor::new(pl);
            let mut out = Vec::new();
            for (i, l) in lists.iter().enumerate() {
                let (b, idx) = ((i / BLOCK) as u32, i % BLOCK);
                let bt = &tfs[i - idx..tfs.len().min(i - idx + BLOCK)];
                pl.positions(b, idx, bt, &mut out).unwrap();
                prop_assert_eq!(&out, l);
                prop_assert_eq!(pl.mask(b, idx, bt).unwrap(), mask_of(l));
                prop_assert_eq!(pc.mask(b, idx, bt).unwrap(), mask_of(l));
                pc.positions(b, idx, bt, &mut out).unwrap();
                prop_assert_eq!(&out, l);
            }
        }

        #[test]
        fn mask_filter_never_drops_a_match(a in proptest::collection::btree_set(0u32..300, 1..10), b in proptest::collection::btree_set(0u32..300, 1..10), gap in 1u32..200) {
            let (a, b): (Vec<u32>, Vec<u32>) = (a.into_iter().collect(), b.into_iter().collect());
            let truth = a.iter().any(|&p| b.contains(&(p + gap)));
            let pass = phrase_mask_filter([(mask_of(&a), 0), (mask_of(&b), gap)]);
            prop_assert!(pass || !truth);
        }

        #[test]
        fn corrupt_never_panics(lists in lists(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
            let tfs: Vec<u32> = lists.iter().map(|l| l.len() as u32).collect();
            let flat: Vec<u32> = lists.iter().flatten().copied().collect();
            let mut bytes = Vec::new();
            encode(&tfs, &flat, &mut bytes).unwrap();
            for (at, x) in flips { let n = bytes.len(); bytes[at % n] ^= x; }
            let bytes = &bytes[..cut % (bytes.len() + 1)];
            if let Ok(pl) = PositionsList::open(bytes, tfs.len() as u32) {
                let mut pc = PositionsCursor::new(pl);
                let mut out = Vec::new();
                for i in 0..tfs.len() {
                    let (b, idx) = ((i / BLOCK) as u32, i % BLOCK);
                    let bt = &tfs[i - idx..tfs.len().min(i - idx + BLOCK)];
                    let _ = pl.mask(b, idx, bt);
                    let _ = pl.positions(b, idx, bt, &mut out);
                    let _ = pc.mask(b, idx, bt);
                    let _ = pc.positions(b, idx, bt, &mut out);
                }
            }
        }
    }

    #[test]
    fn rejects_bad_input() {
        let mut out = Vec::new();
        assert!(encode(&[2], &[1], &mut out).is_err());
        assert!(encode(&[2], &[3, 3], &mut out).is_err());
        assert!(encode(&[0], &[], &mut out).is_err());
        assert!(PositionsList::open(&[], 1).is_err());
        assert_eq!(mask_of(&[0, 64, 129]), 0b11);
        assert!(!phrase_mask_filter(
            vec![(1u64, 0), (1u64, 0)].into_iter().map(|(m, o)| (m, o + 1)).chain([(1u64, 0)])
        ));
    }
}
