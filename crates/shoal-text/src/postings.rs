//! Block postings lists: sorted `u32` document ids with term frequencies, in blocks of
//! [`BLOCK`] postings, delta-coded with one of two [`Codec`]s, with per-block skip data and
//! score-bound inputs. The byte layout is in `docs/format.md` (`TEXT_POSTINGS`).
//!
//! This module stands alone (the payload crate's keyword index reuses it): [`encode`] turns a
//! list into bytes, a [`PostingsCursor`] walks them in place with `advance`/`seek`/`doc`/`tf`,
//! decoding only the blocks it lands in.
//!
//! ```
//! use shoal_text::postings::{encode, Codec, PostingsCursor, TERMINATED};
//! let docs: Vec<u32> = (0..1000).map(|i| i * 3).collect();
//! let tfs = vec![1u32; 1000];
//! let mut bytes = Vec::new();
//! encode(Codec::BitPacked, &docs, &tfs, None, &mut bytes).unwrap();
//! let mut c = PostingsCursor::open(&bytes).unwrap();
//! assert_eq!(c.doc(), 0);
//! assert_eq!(c.seek(1000).unwrap(), 1002);
//! assert_eq!(c.advance().unwrap(), 1005);
//! assert_eq!(c.seek(u32::MAX - 1).unwrap(), TERMINATED);
//! ```

use alloc::vec::Vec;

use crate::TextError;
use crate::error::corrupt;
use crate::varint::{get_u32, get_u64, put_u32, put_u64};

/// Postings per block.
pub const BLOCK: usize = 128;
/// The value of [`PostingsCursor::doc`] after the last posting; never a valid document id.
pub const TERMINATED: u32 = u32::MAX;
/// Bytes per skip entry.
const SKIP_BYTES: usize = 16;
const WHAT: &str = "postings list";

/// How the blocks of a list are coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// LEB128 varints of gaps and `tf - 1` (the baseline).
    Varint = 0,
    /// Full blocks bit-packed with one width per block for gaps and one for `tf - 1`, in the
    /// 4-lane vertical layout of SIMD-BP128; the last partial block as varints.
    BitPacked = 1,
}

impl Codec {
    /// The codec with this number.
    pub fn from_u32(v: u32) -> Option<Codec> {
        match v {
            0 => Some(Codec::Varint),
            1 => Some(Codec::BitPacked),
            _ => None,
        }
    }
}

/// Skip data of one block: its last id and the inputs of a BM25 upper bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockMeta {
    /// Last (largest) document id in the block.
    pub last_doc: u32,
    /// Upper bound of the term frequencies in the block (`u32::MAX` when saturated).
    pub max_tf: u32,
    /// Lower bound of the document lengths in the block.
    pub min_len: u32,
}

/// Encodes one list and appends it to `out`.
///
/// `docs` must be strictly ascending and below [`TERMINATED`], `tfs[i] >= 1` is the frequency
/// of posting `i`, and `doc_lens[i]` (optional; 0 when absent) the length of document `docs[i]`,
/// used only for the per-block `min_len`. An empty list is an error: absent terms have no list.
pub fn encode(
    codec: Codec,
    docs: &[u32],
    tfs: &[u32],
    doc_lens: Option<&[u32]>,
    out: &mut Vec<u8>,
) -> Result<(), TextError> {
    if docs.is_empty() || docs.len() != tfs.len() || doc_lens.is_some_and(|l| l.len() != docs.len()) {
        return Err(TextError::InvalidInput("postings: empty list or lengths differ"));
    }
    if docs.len() > (u32::MAX >> 2) as usize {
        return Err(TextError::InvalidInput("postings: too many documents"));
    }
    if docs.windows(2).any(|w| w[0] >= w[1]) || docs[docs.len() - 1] == TERMINATED {
        return Err(TextError::InvalidInput("postings: ids not strictly ascending below u32::MAX"));
    }
    if tfs.contains(&0) {
        return Err(TextError::InvalidInput("postings: tf of 0"));
    }
    put_u32(out, (docs.len() as u32) << 2 | codec as u32);
    let n_blocks = docs.len().div_ceil(BLOCK);
    let mut skip = Vec::new();
    let mut impacts = Vec::new();
    let mut data = Vec::new();
    let mut base = 0u32;
    let mut gaps = [0u32; BLOCK];
    let mut tfm1 = [0u32; BLOCK];
    let mut points: Vec<u64> = Vec::with_capacity(BLOCK);
    for b in 0..n_blocks {
        let lo = b * BLOCK;
        let hi = docs.len().min(lo + BLOCK);
        let d = &docs[lo..hi];
        let t = &tfs[lo..hi];
        let mut prev = base;
        for (i, &doc) in d.iter().enumerate() {
            gaps[i] = doc - prev;
            prev = doc + 1;
            tfm1[i] = t[i] - 1;
        }
        let n = d.len();
        if codec == Codec::BitPacked && n == BLOCK {
            let gw = bits(gaps.iter().fold(0, |a, &g| a | g));
            let tw = bits(tfm1.iter().fold(0, |a, &g| a | g));
            data.push(gw as u8);
            data.push(tw as u8);
            pack(&gaps, gw, &mut data);
            pack(&tfm1, tw, &mut data);
        } else {
            for (&g, &v) in gaps[..n].iter().zip(&tfm1[..n]) {
                put_u64(&mut data, u64::from(g) << 1 | u64::from(v == 0));
                if v != 0 {
                    put_u32(&mut data, v - 1);
                }
            }
        }
        base = d[n - 1] + 1;
        if n_blocks == 1 {
            break;
        }
        // Impacts: the Pareto frontier of (tf, len), by ascending len then descending tf.
        // As one u64 each (len high, !tf low): one plain integer sort, small in wasm.
        points.clear();
        points.extend((lo..hi).map(|i| u64::from(doc_lens.map_or(0, |l| l[i])) << 32 | u64::from(!tfs[i])));
        points.sort_unstable();
        let mut frontier: Vec<(u32, u32)> = Vec::new(); // (tf, len)
        for (len, tf) in points.iter().map(|&p| ((p >> 32) as u32, !(p as u32))) {
            if frontier.last().is_none_or(|&(best, _)| tf > best) {
                frontier.push((tf, len));
            }
        }
        put_u32(&mut impacts, frontier.len() as u32);
        let mut prev: Option<(u32, u32)> = None;
        for &(tf, len) in &frontier {
            match prev {
                None => {
                    put_u32(&mut impacts, tf - 1);
                    put_u32(&mut impacts, len);
                }
                Some((pt, pl)) => {
                    put_u32(&mut impacts, tf - pt - 1);
                    put_u32(&mut impacts, len - pl - 1);
                }
            }
            prev = Some((tf, len));
        }
        if data.len() > u32::MAX as usize || impacts.len() > u32::MAX as usize {
            return Err(TextError::InvalidInput("postings: list longer than 4 GiB"));
        }
        let max_tf = t.iter().copied().max().unwrap_or(1).min(0xFFFF);
        let min_len = doc_lens.map_or(0, |l| l[lo..hi].iter().copied().min().unwrap_or(0)).min(0xFFFF);
        skip.extend_from_slice(&d[n - 1].to_le_bytes());
        skip.extend_from_slice(&(data.len() as u32).to_le_bytes());
        skip.extend_from_slice(&(max_tf as u16).to_le_bytes());
        skip.extend_from_slice(&(min_len as u16).to_le_bytes());
        skip.extend_from_slice(&(impacts.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&skip);
    out.extend_from_slice(&impacts);
    out.extend_from_slice(&data);
    Ok(())
}

/// Bits needed for `v` (0 for 0).
fn bits(v: u32) -> u32 {
    32 - v.leading_zeros()
}

/// Appends 128 values of width `w` in the vertical 4-lane layout (`16 * w` bytes).
fn pack(vals: &[u32; BLOCK], w: u32, out: &mut Vec<u8>) {
    if w == 0 {
        return;
    }
    let mut words = [0u32; BLOCK];
    for l in 0..4 {
        for r in 0..32 {
            let v = u64::from(vals[r * 4 + l]);
            let bit = r as u32 * w;
            let (wi, s) = ((bit / 32) as usize, bit % 32);
            let x = v << s;
            words[wi * 4 + l] |= x as u32;
            if s + w > 32 {
                words[(wi + 1) * 4 + l] |= (x >> 32) as u32;
            }
        }
    }
    for word in &words[..4 * w as usize] {
        out.extend_from_slice(&word.to_le_bytes());
    }
}

/// Unpacks 128 values of width `w` from `bytes` (exactly `16 * w` bytes). Row by row, the four
/// lanes share one shift and word index: the inner loop is one 128-bit SIMD operation. Inlined
/// with a constant `w`, every shift and index is a constant.
#[inline(always)]
fn unpack_with(bytes: &[u8], w: u32, out: &mut [u32; BLOCK]) {
    if w == 0 {
        *out = [0; BLOCK];
        return;
    }
    let mut words = [0u32; BLOCK + 4];
    for (x, c) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *x = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
    let mask = if w >= 32 { u32::MAX } else { (1u32 << w) - 1 };
    for r in 0..32u32 {
        let bit = r * w;
        let wi = (bit / 32) as usize;
        let s = bit % 32;
        for l in 0..4 {
            let mut v = words[wi * 4 + l] >> s;
            if s != 0 && s + w > 32 {
                v |= words[wi * 4 + 4 + l] << (32 - s);
            }
            out[r as usize * 4 + l] = v & mask;
        }
    }
}

/// Unpacks 128 values of width `w` (0..=32) from `16 * w` bytes. Natively one copy per width
/// (constant shifts); in wasm one copy for all widths, which keeps the package inside its size
/// budget — the same operations, so the same values.
pub fn unpack(bytes: &[u8], w: u32, out: &mut [u32; BLOCK]) {
    #[cfg(not(target_arch = "wasm32"))]
    {
        macro_rules! dispatch {
            ($($n:literal)*) => {
                match w {
                    $($n => unpack_with(bytes, $n, out),)*
                    _ => {}
                }
            };
        }
        dispatch!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32);
    }
    #[cfg(target_arch = "wasm32")]
    if w <= 32 {
        unpack_with(bytes, w, out);
    }
}

/// Reads a little-endian `u16`/`u32` from validated bytes (0 if out of range, which open rules out).
#[inline]
fn le(bytes: &[u8], at: usize, n: usize) -> u32 {
    match bytes.get(at..at + n) {
        Some(b) if n == 2 => u32::from(u16::from_le_bytes([b[0], b[1]])),
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// A cursor over one encoded list, read in place. It starts on the first posting; [`doc`]
/// is [`TERMINATED`] once the list is exhausted. Only blocks it lands in are decoded.
///
/// [`doc`]: PostingsCursor::doc
#[derive(Clone)]
pub struct PostingsCursor<'a> {
    skip: &'a [u8],
    impacts: &'a [u8],
    data: &'a [u8],
    codec: Codec,
    doc_count: u32,
    n_blocks: u32,
    /// Block holding the current posting (`n_blocks` when exhausted).
    block: u32,
    /// Block of the last [`PostingsCursor::shallow_seek`], never behind `block`.
    shallow: u32,
    idx: usize,
    len: usize,
    doc: u32,
    /// The last id of the current block (`docs[len - 1]`).
    block_last: u32,
    max_tf: u32,
    min_len: u32,
    /// Bytes before the block data (header and skip table).
    head_len: usize,
    /// For a one-block list (no skip table): its last id and where its block ends.
    single_last: u32,
    single_end: usize,
    docs: [u32; BLOCK],
    tfs: [u32; BLOCK],
}

impl core::fmt::Debug for PostingsCursor<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PostingsCursor").field("doc_count", &self.doc_count).field("doc", &self.doc).finish()
    }
}

impl<'a> PostingsCursor<'a> {
    /// Opens the list at the start of `bytes` (trailing bytes are ignored) and positions the
    /// cursor on its first posting. Checks the header and the whole skip table (O(blocks));
    /// each block is checked when decoded.
    pub fn open(bytes: &'a [u8]) -> Result<PostingsCursor<'a>, TextError> {
        let mut pos = 0;
        let header = get_u32(bytes, &mut pos, WHAT)?;
        let codec = Codec::from_u32(header & 3).ok_or(corrupt(WHAT, "unknown codec"))?;
        let doc_count = header >> 2;
        if doc_count == 0 {
            return Err(corrupt(WHAT, "empty list"));
        }
        let n_blocks = doc_count.div_ceil(BLOCK as u32);
        let skip_len = if n_blocks > 1 { n_blocks as usize * SKIP_BYTES } else { 0 };
        let skip = bytes.get(pos..pos + skip_len).ok_or(TextError::Truncated { what: "postings skip table" })?;
        let impacts_len = if n_blocks > 1 { le(skip, skip_len - SKIP_BYTES + 12, 4) as usize } else { 0 };
        let impacts = bytes
            .get(pos + skip_len..pos + skip_len + impacts_len)
            .ok_or(TextError::Truncated { what: "postings impacts" })?;
        let head_len = pos + skip_len + impacts_len;
        let data = &bytes[head_len..];
        let (mut prev_last, mut prev_end, mut prev_imp) = (0u32, 0u32, 0u32);
        let (mut max_tf, mut min_len) = (0u32, u32::MAX);
        for b in 0..skip_len / SKIP_BYTES {
            let last = le(skip, b * SKIP_BYTES, 4);
            let end = le(skip, b * SKIP_BYTES + 4, 4);
            if last == TERMINATED || (b > 0 && last <= prev_last) {
                return Err(corrupt(WHAT, "block last ids not ascending"));
            }
            if end <= prev_end || end as usize > data.len() {
                return Err(corrupt(WHAT, "block ends not ascending or past the list"));
            }
            let imp = le(skip, b * SKIP_BYTES + 12, 4);
            if imp <= prev_imp {
                return Err(corrupt(WHAT, "block impacts not ascending"));
            }
            (prev_last, prev_end, prev_imp) = (last, end, imp);
            let meta = Self::meta_at(skip, b);
            max_tf = max_tf.max(meta.max_tf);
            min_len = min_len.min(meta.min_len);
        }
        let mut c = PostingsCursor {
            skip,
            impacts,
            data,
            codec,
            doc_count,
            n_blocks,
            block: 0,
            shallow: 0,
            idx: 0,
            len: 0,
            doc: 0,
            block_last: 0,
            max_tf,
            min_len,
            head_len,
            single_last: 0,
            single_end: 0,
            docs: [0; BLOCK],
            tfs: [0; BLOCK],
        };
        c.load(0)?;
        if n_blocks == 1 {
            c.max_tf = c.tfs[..c.len].iter().copied().max().unwrap_or(0);
            c.min_len = 0;
        }
        Ok(c)
    }

    fn meta_at(skip: &[u8], b: usize) -> BlockMeta {
        let tf = le(skip, b * SKIP_BYTES + 8, 2);
        BlockMeta {
            last_doc: le(skip, b * SKIP_BYTES, 4),
            max_tf: if tf == 0xFFFF { u32::MAX } else { tf },
            min_len: le(skip, b * SKIP_BYTES + 10, 2),
        }
    }

    /// Number of postings in the list.
    pub fn doc_count(&self) -> u32 {
        self.doc_count
    }

    /// The codec of the list.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Number of blocks.
    pub fn block_count(&self) -> u32 {
        self.n_blocks
    }

    /// Skip data of block `b` (`None` past the end). A one-block list has no skip table: its
    /// meta comes from the decoded block, with `min_len` 0.
    pub fn block_meta(&self, b: u32) -> Option<BlockMeta> {
        if self.n_blocks == 1 {
            return (b == 0).then_some(BlockMeta { last_doc: self.single_last, max_tf: self.max_tf, min_len: 0 });
        }
        (b < self.n_blocks).then(|| Self::meta_at(self.skip, b as usize))
    }

    /// The largest `score(tf, len)` over block `b`'s impacts (see `docs/format.md`): for a
    /// `score` that grows with `tf` and does not grow with `len`, an upper bound of the block's
    /// scores, exact when `score` is. A one-block list has no impacts: `score(max_tf, 0)`.
    /// Malformed impacts give `f32::INFINITY` (no pruning), never a panic.
    pub fn block_max_score(&self, b: u32, score: impl Fn(u32, u32) -> f32) -> f32 {
        if self.n_blocks == 1 {
            return score(self.max_tf, 0);
        }
        if b >= self.n_blocks {
            return 0.0;
        }
        let bi = b as usize;
        let start = if bi == 0 { 0 } else { le(self.skip, (bi - 1) * SKIP_BYTES + 12, 4) as usize };
        let end = le(self.skip, bi * SKIP_BYTES + 12, 4) as usize;
        let Some(bytes) = self.impacts.get(start..end) else { return f32::INFINITY };
        let mut pos = 0;
        let mut best = f32::NEG_INFINITY;
        let parse = |pos: &mut usize, best: &mut f32| -> Result<(), TextError> {
            let n = get_u32(bytes, pos, WHAT)?;
            let (mut tf, mut len) = (0u64, 0u64);
            for i in 0..n {
                let (dt, dl) = (u64::from(get_u32(bytes, pos, WHAT)?), u64::from(get_u32(bytes, pos, WHAT)?));
                tf += dt + 1;
                len += if i == 0 { dl } else { dl + 1 };
                if tf > u64::from(u32::MAX) || len > u64::from(u32::MAX) {
                    return Err(corrupt(WHAT, "impact overflows"));
                }
                let s = score(tf as u32, len as u32);
                if s > *best || s.is_nan() {
                    *best = s;
                }
            }
            if n == 0 { Err(corrupt(WHAT, "no impacts")) } else { Ok(()) }
        };
        match parse(&mut pos, &mut best) {
            Ok(()) if !best.is_nan() => best,
            _ => f32::INFINITY,
        }
    }

    /// The block [`PostingsCursor::shallow_seek`] last landed on (`block_count()` past the end).
    pub fn shallow_block(&self) -> u32 {
        self.shallow.max(self.block)
    }

    /// The length in bytes of the list (header, skip table and blocks).
    pub fn encoded_len(&self) -> usize {
        let data = if self.n_blocks == 1 {
            self.single_end
        } else {
            le(self.skip, (self.n_blocks as usize - 1) * SKIP_BYTES + 4, 4) as usize
        };
        self.head_len + data
    }

    /// Bound inputs over the whole list: the largest `max_tf` and smallest `min_len` of its blocks.
    pub fn list_meta(&self) -> BlockMeta {
        BlockMeta {
            last_doc: self.block_meta(self.n_blocks - 1).map_or(0, |m| m.last_doc),
            max_tf: self.max_tf,
            min_len: self.min_len,
        }
    }

    /// The current document id, or [`TERMINATED`].
    #[inline]
    pub fn doc(&self) -> u32 {
        self.doc
    }

    /// The term frequency of the current posting (meaningless when terminated).
    #[inline]
    pub fn tf(&self) -> u32 {
        self.tfs[self.idx.min(BLOCK - 1)]
    }

    /// The block of the current posting and its index within the block.
    pub fn block_position(&self) -> (u32, usize) {
        (self.block, self.idx)
    }

    /// The term frequencies of the current block's postings (for locating positions).
    pub fn block_tfs(&self) -> &[u32] {
        &self.tfs[..self.len]
    }

    /// The current block from the current posting on: ids and term frequencies (empty once
    /// the list is exhausted).
    pub fn rest(&self) -> (&[u32], &[u32]) {
        let r = self.idx.min(self.len)..self.len;
        (&self.docs[r.clone()], &self.tfs[r])
    }

    /// Moves `n` postings on within the current block, or to the start of the next block when
    /// that passes its end, and returns the id there ([`TERMINATED`] at the end).
    pub fn skip(&mut self, n: usize) -> Result<u32, TextError> {
        if self.doc == TERMINATED {
            return Ok(TERMINATED);
        }
        if self.idx + n < self.len {
            self.idx += n;
            self.doc = self.docs[self.idx];
            return Ok(self.doc);
        }
        self.load(self.block + 1)?;
        Ok(self.doc)
    }

    /// Moves to the next posting and returns its id ([`TERMINATED`] at the end).
    #[inline]
    pub fn advance(&mut self) -> Result<u32, TextError> {
        if self.doc == TERMINATED {
            return Ok(TERMINATED);
        }
        self.idx += 1;
        if self.idx < self.len {
            self.doc = self.docs[self.idx];
            return Ok(self.doc);
        }
        self.load(self.block + 1)?;
        Ok(self.doc)
    }

    /// Moves to the first posting with id `>= target` (never backwards) and returns its id,
    /// [`TERMINATED`] if there is none. Blocks in between are skipped without decoding.
    // Inlined natively (the in-block path is a few compares); in wasm, size comes first.
    #[cfg_attr(not(target_family = "wasm"), inline(always))]
    pub fn seek(&mut self, target: u32) -> Result<u32, TextError> {
        if self.doc >= target {
            return Ok(self.doc);
        }
        if self.block_last < target {
            return self.seek_blocks(target);
        }
        Ok(self.scan(target))
    }

    /// [`PostingsCursor::seek`] past the current block.
    #[inline(never)]
    fn seek_blocks(&mut self, target: u32) -> Result<u32, TextError> {
        let b = self.find_block(self.block + 1, target);
        self.load(b)?;
        if self.doc >= target {
            return Ok(self.doc);
        }
        Ok(self.scan(target))
    }

    /// Moves within the current block to the first id `>= target`, given `doc < target <=
    /// block_last`: the scan stops at `len - 1` at the latest.
    #[inline(always)]
    fn scan(&mut self, target: u32) -> u32 {
        let mut i = self.idx + 1;
        while self.docs[i % BLOCK] < target {
            i += 1;
        }
        self.idx = i % BLOCK;
        self.doc = self.docs[self.idx];
        self.doc
    }

    /// The skip data of the block that would hold `target` (the first block whose last id is
    /// `>= target`), without decoding anything; `None` when `target` is past the list. Moves an
    /// internal pointer forward only, so successive calls must not decrease `target` below the
    /// current document.
    pub fn shallow_seek(&mut self, target: u32) -> Option<BlockMeta> {
        if self.shallow < self.block {
            self.shallow = self.block;
        }
        if self.shallow < self.n_blocks && self.last_doc(self.shallow) < target {
            self.shallow = self.find_block(self.shallow + 1, target);
        }
        self.block_meta(self.shallow)
    }

    #[inline]
    fn last_doc(&self, b: u32) -> u32 {
        if self.n_blocks == 1 { self.single_last } else { le(self.skip, b as usize * SKIP_BYTES, 4) }
    }

    /// The first block `>= from` whose last id is `>= target` (`n_blocks` if none): galloping
    /// then binary search over the skip table.
    fn find_block(&self, from: u32, target: u32) -> u32 {
        let n = self.n_blocks;
        let mut lo = from;
        let mut step = 1u32;
        let mut hi = from;
        while hi < n && self.last_doc(hi) < target {
            lo = hi + 1;
            hi = hi.saturating_add(step);
            step = step.saturating_mul(2);
        }
        let mut hi = hi.min(n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.last_doc(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Decodes block `b` and moves to its first posting (or terminates when `b == n_blocks`).
    fn load(&mut self, b: u32) -> Result<(), TextError> {
        self.block = b;
        self.idx = 0;
        if b >= self.n_blocks {
            self.block = self.n_blocks;
            self.doc = TERMINATED;
            self.block_last = TERMINATED;
            self.len = 0;
            return Ok(());
        }
        let bi = b as usize;
        let single = self.n_blocks == 1;
        let bytes = if single {
            self.data
        } else {
            let start = if bi == 0 { 0 } else { le(self.skip, (bi - 1) * SKIP_BYTES + 4, 4) as usize };
            let end = le(self.skip, bi * SKIP_BYTES + 4, 4) as usize;
            self.data.get(start..end).ok_or(corrupt(WHAT, "block out of range"))?
        };
        let base = if bi == 0 { 0 } else { self.last_doc(b - 1) + 1 };
        let n = if b + 1 == self.n_blocks { (self.doc_count - b * BLOCK as u32) as usize } else { BLOCK };
        if self.codec == Codec::BitPacked && n == BLOCK {
            let (&gw, &tw) = match bytes {
                [g, t, ..] => (g, t),
                _ => return Err(TextError::Truncated { what: "postings block" }),
            };
            let (gw, tw) = (u32::from(gw), u32::from(tw));
            if gw > 32 || tw > 32 {
                return Err(corrupt(WHAT, "bit width above 32"));
            }
            let (gl, tl) = (16 * gw as usize, 16 * tw as usize);
            let used = 2 + gl + tl;
            if bytes.len() < used || (!single && bytes.len() != used) {
                return Err(corrupt(WHAT, "bit-packed block length"));
            }
            unpack(&bytes[2..2 + gl], gw, &mut self.docs);
            unpack(&bytes[2 + gl..used], tw, &mut self.tfs);
            self.single_end = used;
        } else {
            // Stored tf - 1 here; the loop below adds the 1.
            let mut pos = 0;
            for i in 0..n {
                let v = get_u64(bytes, &mut pos, "postings block")?;
                self.docs[i] = u32::try_from(v >> 1).map_err(|_| corrupt(WHAT, "gap overflows u32"))?;
                self.tfs[i] =
                    if v & 1 == 1 { 0 } else { get_u32(bytes, &mut pos, "postings block")?.saturating_add(1) };
            }
            if !single && pos != bytes.len() {
                return Err(corrupt(WHAT, "trailing bytes in block"));
            }
            self.single_end = pos;
        }
        // Prefix sum in u64 so corrupt gaps cannot wrap; ids then ascend strictly and end at
        // `last_doc` (< u32::MAX), so every one fits.
        let mut next = u64::from(base);
        for d in &mut self.docs[..n] {
            let v = next + u64::from(*d);
            *d = v as u32;
            next = v + 1;
        }
        if single {
            if next > u64::from(TERMINATED) {
                return Err(corrupt(WHAT, "document id overflows"));
            }
            self.single_last = (next - 1) as u32;
        } else if next - 1 != u64::from(self.last_doc(b)) {
            return Err(corrupt(WHAT, "block ids do not end at its last id"));
        }
        for t in &mut self.tfs[..n] {
            *t = t.saturating_add(1);
        }
        self.len = n;
        self.doc = self.docs[0];
        self.block_last = self.docs[n - 1];
        Ok(())
    }
}

/// Decodes a whole list into `docs` and `tfs` (cleared first): the reference for tests and tools.
pub fn decode_all(bytes: &[u8], docs: &mut Vec<u32>, tfs: &mut Vec<u32>) -> Result<(), TextError> {
    docs.clear();
    tfs.clear();
    let mut c = PostingsCursor::open(bytes)?;
    while c.doc() != TERMINATED {
        docs.push(c.doc());
        tfs.push(c.tf());
        c.advance()?;
    }
    Ok(())
}

/// The length in bytes of the list at the start of `bytes` (reads its header and skip table,
/// and decodes the block of a one-block list).
pub fn encoded_len(bytes: &[u8]) -> Result<usize, TextError> {
    PostingsCursor::open(bytes).map(|c| c.encoded_len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use proptest::prelude::*;

    fn list() -> impl Strategy<Value = (Vec<u32>, Vec<u32>)> {
        (1usize..700, 0u32..6, any::<u64>()).prop_map(|(n, spread, seed)| {
            // Gaps of mixed size: dense runs and large jumps, ids below u32::MAX.
            let mut s = seed | 1;
            let mut rnd = move || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s
            };
            let mut docs = Vec::with_capacity(n);
            let mut d: u64 = rnd() % 4;
            for _ in 0..n {
                if d >= u64::from(TERMINATED) {
                    break;
                }
                docs.push(d as u32);
                let r = rnd();
                d += 1 + (r % (1u64 << (spread * 5)));
            }
            let tfs = docs.iter().map(|_| 1 + (rnd() % if rnd() % 8 == 0 { 70_000 } else { 4 }) as u32).collect();
            (docs, tfs)
        })
    }

    fn codec() -> impl Strategy<Value = Codec> {
        prop_oneof![Just(Codec::Varint), Just(Codec::BitPacked)]
    }

    proptest! {
        #[test]
        fn pack_round_trip(vals in proptest::collection::vec(any::<u32>(), BLOCK), w in 0u32..=32) {
            let mut a = [0u32; BLOCK];
            let mask = if w == 32 { u32::MAX } else { (1u32 << w) - 1 };
            for (x, v) in a.iter_mut().zip(&vals) { *x = v & mask; }
            let mut out = Vec::new();
            pack(&a, w, &mut out);
            prop_assert_eq!(out.len(), 16 * w as usize);
            let mut back = [7u32; BLOCK];
            unpack(&out, w, &mut back);
            prop_assert_eq!(back, a);
            // The one-copy form the wasm build uses (width not a constant).
            let mut back = [7u32; BLOCK];
            unpack_with(&out, core::hint::black_box(w), &mut back);
            prop_assert_eq!(back, a);
        }

        #[test]
        fn round_trip((docs, tfs) in list(), codec in codec()) {
            let lens: Vec<u32> = docs.iter().map(|d| d % 1000).collect();
            let mut bytes = Vec::new();
            encode(codec, &docs, &tfs, Some(&lens), &mut bytes).unwrap();
            prop_assert_eq!(encoded_len(&bytes).unwrap(), bytes.len());
            let (mut d2, mut t2) = (Vec::new(), Vec::new());
            decode_all(&bytes, &mut d2, &mut t2).unwrap();
            prop_assert_eq!(&d2, &docs);
            prop_assert_eq!(&t2, &tfs);
            let c = PostingsCursor::open(&bytes).unwrap();
            for b in 0..c.block_count() {
                let m = c.block_meta(b).unwrap();
                let r = b as usize * BLOCK..docs.len().min((b as usize + 1) * BLOCK);
                prop_assert_eq!(m.last_doc, docs[r.end - 1]);
                let mt = *tfs[r.clone()].iter().max().unwrap();
                prop_assert!(m.max_tf >= mt && (mt >= 0xFFFF || m.max_tf == mt));
                prop_assert!(m.min_len <= *lens[r.clone()].iter().min().unwrap());
                prop_assert!(c.block_count() > 1 || m.min_len == 0);
                // Impacts give the exact block maximum of a score that grows with tf and falls with len.
                let f = |tf: u32, len: u32| tf as f32 / (tf as f32 + len as f32 + 1.0);
                let exact = (r.start..r.end.min(docs.len())).map(|i| f(tfs[i], lens[i])).fold(0.0f32, f32::max);
                let got = c.block_max_score(b, f);
                if c.block_count() > 1 { prop_assert_eq!(got, exact); } else { prop_assert!(got >= exact); }
            }
        }

        #[test]
        fn seek_equals_linear_scan((docs, tfs) in list(), codec in codec(), targets in proptest::collection::vec(any::<u32>(), 1..40), scale in 0u32..3) {
            let mut bytes = Vec::new();
            encode(codec, &docs, &tfs, None, &mut bytes).unwrap();
            let mut targets: Vec<u32> = targets.into_iter().map(|t| match docs[docs.len() - 1].checked_div(scale) { None => t, Some(q) => t % (q + 2) }).collect();
            targets.sort_unstable();
            let mut c = PostingsCursor::open(&bytes).unwrap();
            let mut shallow = PostingsCursor::open(&bytes).unwrap();
            for &t in &targets {
                let want = docs.iter().position(|&d| d >= t);
                let got = c.seek(t).unwrap();
                match want {
                    Some(i) => { prop_assert_eq!(got, docs[i]); prop_assert_eq!(c.tf(), tfs[i]); }
                    None => prop_assert_eq!(got, TERMINATED),
                }
                // shallow_seek names the block that holds the answer.
                let m = shallow.shallow_seek(t);
                match want {
                    Some(i) => prop_assert_eq!(m.map(|m| m.last_doc), Some(docs[docs.len().min((i / BLOCK + 1) * BLOCK) - 1])),
                    None => prop_assert!(m.is_none()),
                }
            }
        }

        #[test]
        fn corrupt_bytes_never_panic((docs, tfs) in list(), codec in codec(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
            let mut bytes = Vec::new();
            encode(codec, &docs, &tfs, None, &mut bytes).unwrap();
            for (at, x) in flips { let n = bytes.len(); bytes[at % n] ^= x; }
            let cut = cut % (bytes.len() + 1);
            let bytes = &bytes[..cut];
            if let Ok(mut c) = PostingsCursor::open(bytes) {
                let mut prev = None;
                for step in 0..2000u32 {
                    let r = if step % 3 == 0 { c.seek(c.doc().saturating_add(step * 37)) } else { c.advance() };
                    match r {
                        Ok(TERMINATED) | Err(_) => break,
                        Ok(d) => { if let Some(p) = prev { prop_assert!(d > p); } prev = Some(d); }
                    }
                }
            }
            let _ = encoded_len(bytes);
        }
    }

    #[test]
    fn rejects_bad_input() {
        let mut out = Vec::new();
        assert!(encode(Codec::Varint, &[], &[], None, &mut out).is_err());
        assert!(encode(Codec::Varint, &[2, 1], &[1, 1], None, &mut out).is_err());
        assert!(encode(Codec::Varint, &[1, 1], &[1, 1], None, &mut out).is_err());
        assert!(encode(Codec::Varint, &[1], &[0], None, &mut out).is_err());
        assert!(encode(Codec::Varint, &[TERMINATED], &[1], None, &mut out).is_err());
        assert!(PostingsCursor::open(&[]).is_err());
        assert!(PostingsCursor::open(&[0]).is_err());
        assert!(PostingsCursor::open(&[3 << 2 | 3]).is_err());
        assert!(out.is_empty());
    }

    #[test]
    fn bit_packed_is_smaller_on_dense_lists() {
        let docs: Vec<u32> = (0..10_000u32).map(|i| i * 2).collect();
        let tfs = vec![1u32; docs.len()];
        let (mut v, mut p) = (Vec::new(), Vec::new());
        encode(Codec::Varint, &docs, &tfs, None, &mut v).unwrap();
        encode(Codec::BitPacked, &docs, &tfs, None, &mut p).unwrap();
        assert!(p.len() * 3 < v.len(), "{} vs {}", p.len(), v.len());
    }
}
