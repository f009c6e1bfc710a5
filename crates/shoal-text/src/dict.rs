//! The term dictionary: sorted keys in front-coded blocks of [`DICT_BLOCK`] with a block table
//! for binary search, read in place (layout in `docs/format.md`, `TEXT_DICT`). A lookup reads
//! the block table and `O(log blocks)` block heads plus one block, never the whole dictionary.
//!
//! ```
//! use shoal_text::dict::{DictWriter, TermDict, TermInfo};
//! let mut w = DictWriter::new();
//! for (i, k) in ["apple", "apply", "banana"].iter().enumerate() {
//!     w.push(k.as_bytes(), TermInfo { doc_freq: 1, postings_offset: 10 * i as u32, postings_len: 10, positions_offset: 0, positions_len: 0 }).unwrap();
//! }
//! let bytes = w.finish();
//! let d = TermDict::open(&bytes).unwrap();
//! assert_eq!(d.get(b"apply").unwrap().unwrap().postings_offset, 10);
//! let mut it = d.prefix(b"app").unwrap();
//! let mut keys = Vec::new();
//! while it.advance().unwrap() { keys.push(it.key().to_vec()); }
//! assert_eq!(keys, [b"apple".to_vec(), b"apply".to_vec()]);
//! ```

use alloc::vec::Vec;

use crate::TextError;
use crate::error::corrupt;
use crate::varint::{get_u32, put_u32, read_u32};

/// Keys per front-coded block.
pub const DICT_BLOCK: usize = 16;
/// Longest key in bytes (field byte + term).
pub const MAX_KEY: usize = 256;
const WHAT: &str = "term dictionary";

/// What the dictionary stores for a term.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TermInfo {
    /// Documents containing the term (>= 1).
    pub doc_freq: u32,
    /// Offset of the postings list in `TEXT_POSTINGS`.
    pub postings_offset: u32,
    /// Length of the postings list in bytes.
    pub postings_len: u32,
    /// Offset of the position lists in `TEXT_POSITIONS`.
    pub positions_offset: u32,
    /// Length of the position lists in bytes (0 without positions).
    pub positions_len: u32,
}

/// Writes a dictionary from keys pushed in strictly ascending byte order, whose lists are laid
/// out one after the other in key order.
#[derive(Debug, Default)]
pub struct DictWriter {
    starts: Vec<u32>,
    blocks: Vec<u8>,
    prev: Vec<u8>,
    count: u32,
    next_postings: u32,
    next_positions: u32,
}

impl DictWriter {
    /// An empty writer.
    pub fn new() -> DictWriter {
        DictWriter::default()
    }

    /// Appends a key. Errors if keys are not strictly ascending, a key is empty or longer than
    /// [`MAX_KEY`], `doc_freq` is 0, or the lists do not follow the previous term's lists.
    pub fn push(&mut self, key: &[u8], info: TermInfo) -> Result<(), TextError> {
        if key.is_empty() || key.len() > MAX_KEY || (self.count > 0 && key <= &self.prev[..]) {
            return Err(TextError::InvalidInput("dictionary keys must be 1..=256 bytes, strictly ascending"));
        }
        if info.doc_freq == 0 {
            return Err(TextError::InvalidInput("dictionary: doc_freq of 0"));
        }
        let first = (self.count as usize).is_multiple_of(DICT_BLOCK);
        if !first && (info.postings_offset != self.next_postings || info.positions_offset != self.next_positions) {
            return Err(TextError::InvalidInput("dictionary: lists not contiguous in key order"));
        }
        let shared = if first {
            self.starts.push(self.blocks.len() as u32);
            put_u32(&mut self.blocks, info.postings_offset);
            put_u32(&mut self.blocks, info.positions_offset);
            0
        } else {
            key.iter().zip(&self.prev).take_while(|(a, b)| a == b).count()
        };
        put_u32(&mut self.blocks, shared as u32);
        put_u32(&mut self.blocks, (key.len() - shared) as u32);
        self.blocks.extend_from_slice(&key[shared..]);
        put_u32(&mut self.blocks, info.doc_freq);
        put_u32(&mut self.blocks, info.postings_len);
        put_u32(&mut self.blocks, info.positions_len);
        self.next_postings = info.postings_offset.wrapping_add(info.postings_len);
        self.next_positions = info.positions_offset.wrapping_add(info.positions_len);
        self.prev.clear();
        self.prev.extend_from_slice(key);
        self.count += 1;
        Ok(())
    }

    /// Number of keys pushed.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether no key was pushed.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The dictionary bytes.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 4 * self.starts.len() + self.blocks.len());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&(self.starts.len() as u32).to_le_bytes());
        for s in &self.starts {
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&self.blocks);
        out
    }
}

/// A dictionary read in place.
#[derive(Clone, Copy, Debug)]
pub struct TermDict<'a> {
    count: u32,
    n_blocks: u32,
    starts: &'a [u8],
    blocks: &'a [u8],
}

impl<'a> TermDict<'a> {
    /// Opens a dictionary: checks the header and that the block table ascends inside the bytes
    /// (O(blocks), reading 4 bytes per block). Blocks are checked as they are read.
    pub fn open(bytes: &'a [u8]) -> Result<TermDict<'a>, TextError> {
        let dict = TermDict::reopen(bytes)?;
        dict.check_blocks()?;
        Ok(dict)
    }

    /// [`open`](Self::open) without the O(blocks) walk of the block table, for bytes that
    /// passed `open` before (a reader keeps every later read bounds-checked either way).
    pub fn reopen(bytes: &'a [u8]) -> Result<TermDict<'a>, TextError> {
        let count = read_u32(bytes, 0, WHAT)?;
        let n_blocks = read_u32(bytes, 4, WHAT)?;
        if n_blocks as usize != (count as usize).div_ceil(DICT_BLOCK) {
            return Err(corrupt(WHAT, "block count does not match term count"));
        }
        let table_end = 8 + 4 * n_blocks as usize;
        let starts = bytes.get(8..table_end).ok_or(TextError::Truncated { what: "dictionary block table" })?;
        Ok(TermDict { count, n_blocks, starts, blocks: &bytes[table_end..] })
    }

    fn check_blocks(&self) -> Result<(), TextError> {
        let (n_blocks, starts, blocks) = (self.n_blocks, self.starts, self.blocks);
        let mut prev = 0u32;
        for b in 0..n_blocks as usize {
            let s = read_u32(starts, 4 * b, WHAT)?;
            if (b == 0 && s != 0) || (b > 0 && s <= prev) || s as usize >= blocks.len() {
                return Err(corrupt(WHAT, "block starts not ascending or past the end"));
            }
            prev = s;
        }
        Ok(())
    }

    /// Number of terms.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether the dictionary holds no term.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn block_bytes(&self, b: u32) -> Result<&'a [u8], TextError> {
        let s = read_u32(self.starts, 4 * b as usize, WHAT)? as usize;
        let e = if b + 1 < self.n_blocks {
            read_u32(self.starts, 4 * (b as usize + 1), WHAT)? as usize
        } else {
            self.blocks.len()
        };
        self.blocks.get(s..e).ok_or(corrupt(WHAT, "block out of range"))
    }

    /// The first key of block `b`.
    fn first_key(&self, b: u32) -> Result<&'a [u8], TextError> {
        let bytes = self.block_bytes(b)?;
        let mut pos = 0;
        get_u32(bytes, &mut pos, WHAT)?;
        get_u32(bytes, &mut pos, WHAT)?;
        if get_u32(bytes, &mut pos, WHAT)? != 0 {
            return Err(corrupt(WHAT, "first key of a block shares a prefix"));
        }
        let len = get_u32(bytes, &mut pos, WHAT)? as usize;
        bytes.get(pos..pos.saturating_add(len)).ok_or(TextError::Truncated { what: WHAT })
    }

    /// The last block whose first key is `<= key` (0 if none).
    fn find_block(&self, key: &[u8]) -> Result<u32, TextError> {
        let (mut lo, mut hi) = (0u32, self.n_blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.first_key(mid)? <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo.saturating_sub(1))
    }

    /// A stream over keys `>= key`, in order.
    pub fn range_from(&self, key: &[u8]) -> Result<TermStream<'a>, TextError> {
        let mut s = TermStream::at_block(*self, self.find_block(key)?, &[]);
        s.skip_below(key)?;
        Ok(s)
    }

    /// A stream over the keys that start with `prefix`, in order.
    pub fn prefix(&self, prefix: &[u8]) -> Result<TermStream<'a>, TextError> {
        let mut s = TermStream::at_block(*self, self.find_block(prefix)?, prefix);
        s.skip_below(prefix)?;
        Ok(s)
    }

    /// The entry of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<TermInfo>, TextError> {
        let mut s = self.range_from(key)?;
        Ok(if s.advance()? && s.key() == key { Some(s.info()) } else { None })
    }

    /// A stream over every key.
    pub fn iter(&self) -> TermStream<'a> {
        TermStream::at_block(*self, 0, &[])
    }
}

/// A forward stream over dictionary entries: call [`TermStream::advance`], then read
/// [`TermStream::key`] and [`TermStream::info`].
#[derive(Clone, Debug)]
pub struct TermStream<'a> {
    dict: TermDict<'a>,
    /// The block to load next (when `in_block` is `None`) or being read.
    block: u32,
    bytes: &'a [u8],
    pos: usize,
    /// Entries read from the current block; `None` before it is loaded.
    in_block: Option<usize>,
    key: Vec<u8>,
    info: TermInfo,
    prefix: Vec<u8>,
    /// An entry read ahead by `skip_below`, handed out by the next `advance`.
    pending: bool,
    done: bool,
}

impl<'a> TermStream<'a> {
    fn at_block(dict: TermDict<'a>, block: u32, prefix: &[u8]) -> TermStream<'a> {
        TermStream {
            dict,
            block,
            bytes: &[],
            pos: 0,
            in_block: None,
            key: Vec::new(),
            info: TermInfo::default(),
            prefix: prefix.to_vec(),
            pending: false,
            done: dict.n_blocks == 0,
        }
    }

    /// Reads the next entry; `Ok(false)` at the end (or past the prefix).
    pub fn advance(&mut self) -> Result<bool, TextError> {
        let more = if self.pending {
            self.pending = false;
            true
        } else {
            self.read_raw()?
        };
        if more && !self.key.starts_with(&self.prefix) {
            self.done = true;
            return Ok(false);
        }
        Ok(more)
    }

    fn read_raw(&mut self) -> Result<bool, TextError> {
        if self.done {
            return Ok(false);
        }
        let total = self.dict.count as usize;
        if let Some(n) = self.in_block
            && (n == DICT_BLOCK || self.block as usize * DICT_BLOCK + n >= total)
        {
            self.block += 1;
            self.in_block = None;
        }
        if self.in_block.is_none() {
            if self.block >= self.dict.n_blocks {
                self.done = true;
                return Ok(false);
            }
            self.bytes = self.dict.block_bytes(self.block)?;
            self.pos = 0;
            self.in_block = Some(0);
            self.key.clear();
            self.info.postings_offset = get_u32(self.bytes, &mut self.pos, WHAT)?;
            self.info.positions_offset = get_u32(self.bytes, &mut self.pos, WHAT)?;
            self.info.postings_len = 0;
            self.info.positions_len = 0;
        }
        let n = self.in_block.unwrap_or(0);
        let shared = get_u32(self.bytes, &mut self.pos, WHAT)? as usize;
        let suffix = get_u32(self.bytes, &mut self.pos, WHAT)? as usize;
        if shared > self.key.len() || (n == 0 && shared != 0) || shared + suffix > MAX_KEY || suffix == 0 {
            return Err(corrupt(WHAT, "bad shared prefix or key length"));
        }
        let s = self.bytes.get(self.pos..self.pos + suffix).ok_or(TextError::Truncated { what: WHAT })?;
        self.pos += suffix;
        self.key.truncate(shared);
        self.key.extend_from_slice(s);
        let next_post = self.info.postings_offset.checked_add(self.info.postings_len);
        let next_pos = self.info.positions_offset.checked_add(self.info.positions_len);
        let (Some(np), Some(nq)) = (next_post, next_pos) else {
            return Err(corrupt(WHAT, "list offsets overflow"));
        };
        self.info.postings_offset = np;
        self.info.positions_offset = nq;
        self.info.doc_freq = get_u32(self.bytes, &mut self.pos, WHAT)?;
        self.info.postings_len = get_u32(self.bytes, &mut self.pos, WHAT)?;
        self.info.positions_len = get_u32(self.bytes, &mut self.pos, WHAT)?;
        self.in_block = Some(n + 1);
        Ok(true)
    }

    /// Reads entries until one is `>= key`, and keeps it for the next `advance`.
    fn skip_below(&mut self, key: &[u8]) -> Result<(), TextError> {
        while self.read_raw()? {
            if self.key[..] >= *key {
                self.pending = true;
                break;
            }
        }
        Ok(())
    }

    /// The current key.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current entry.
    pub fn info(&self) -> TermInfo {
        self.info
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use proptest::prelude::*;

    fn build(keys: &BTreeSet<Vec<u8>>) -> (Vec<u8>, Vec<(Vec<u8>, TermInfo)>) {
        let mut w = DictWriter::new();
        let (mut po, mut qo) = (0u32, 0u32);
        let mut want = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let info = TermInfo {
                doc_freq: i as u32 + 1,
                postings_offset: po,
                postings_len: (i as u32 * 7) % 300,
                positions_offset: qo,
                positions_len: i as u32 % 3,
            };
            po += info.postings_len;
            qo += info.positions_len;
            w.push(k, info).unwrap();
            want.push((k.clone(), info));
        }
        (w.finish(), want)
    }

    fn keys() -> impl Strategy<Value = BTreeSet<Vec<u8>>> {
        proptest::collection::btree_set(
            proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), any::<u8>()], 1..12),
            0..200,
        )
    }

    proptest! {
        #[test]
        fn exact_and_prefix_lookup(keys in keys(), probes in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..5), 1..20)) {
            let (bytes, want) = build(&keys);
            let d = TermDict::open(&bytes).unwrap();
            prop_assert_eq!(d.len() as usize, want.len());
            let mut it = d.iter();
            for (k, info) in &want {
                prop_assert!(it.advance().unwrap());
                prop_assert_eq!(it.key(), &k[..]);
                prop_assert_eq!(it.info(), *info);
                prop_assert_eq!(d.get(k).unwrap(), Some(*info));
            }
            prop_assert!(!it.advance().unwrap());
            for p in &probes {
                let expect_get = want.iter().find(|(k, _)| k == p).map(|(_, i)| *i);
                prop_assert_eq!(d.get(p).unwrap(), expect_get);
                let expect: Vec<&Vec<u8>> = want.iter().map(|(k, _)| k).filter(|k| k.starts_with(p)).collect();
                let mut s = d.prefix(p).unwrap();
                let mut got = Vec::new();
                while s.advance().unwrap() { got.push(s.key().to_vec()); }
                prop_assert_eq!(got.iter().collect::<Vec<_>>(), expect);
                let expect: Vec<&Vec<u8>> = want.iter().map(|(k, _)| k).filter(|k| k[..] >= p[..]).collect();
                let mut s = d.range_from(p).unwrap();
                let mut got = Vec::new();
                while s.advance().unwrap() { got.push(s.key().to_vec()); }
                prop_assert_eq!(got.iter().collect::<Vec<_>>(), expect);
            }
        }

        #[test]
        fn corrupt_never_panics(keys in keys(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>(), probe in proptest::collection::vec(any::<u8>(), 0..4)) {
            let (mut bytes, _) = build(&keys);
            for (at, x) in flips { let n = bytes.len(); bytes[at % n] ^= x; }
            let bytes = &bytes[..cut % (bytes.len() + 1)];
            if let Ok(d) = TermDict::open(bytes) {
                let _ = d.get(&probe);
                let mut it = d.iter();
                for _ in 0..1000 { if !matches!(it.advance(), Ok(true)) { break; } }
                if let Ok(mut p) = d.prefix(&probe) { for _ in 0..1000 { if !matches!(p.advance(), Ok(true)) { break; } } }
            }
        }
    }

    #[test]
    fn writer_rejects_bad_order() {
        let mut w = DictWriter::new();
        let info = TermInfo { doc_freq: 1, ..Default::default() };
        w.push(b"b", info).unwrap();
        assert!(w.push(b"a", info).is_err());
        assert!(w.push(b"b", info).is_err());
        assert!(w.push(b"", info).is_err());
        assert!(w.push(b"c", TermInfo { doc_freq: 0, ..info }).is_err());
        assert!(w.push(b"c", TermInfo { postings_offset: 5, ..info }).is_err());
        assert!(TermDict::open(&[]).is_err());
        let empty = DictWriter::new().finish();
        let d = TermDict::open(&empty).unwrap();
        assert_eq!(d.get(b"x").unwrap(), None);
    }
}
