//! The point → values column with inline single values, and the value → rows postings.
//!
//! Every value of a field is a dictionary code (`docs/format.md`): `0` = no value, `1` = several
//! values, `2 + i` = dictionary value `i`. In [`MODE_CODES`] a row with exactly one value keeps
//! its code inline in a packed array of `width`-bit slots (2..=32 bits, the narrowest that holds
//! the dictionary); only rows with several values reach, through a rank over a bitmap, a range
//! of a shared packed container. Fields with at most 16 distinct values use [`MODE_SETS`]: the
//! slot is the bit set of the row's values, so every row — empty, single or multi — is one
//! load and one AND. A 40M-row field with three distinct values takes 4 bits per row instead of
//! an 8-byte range plus 8-byte values. Larger dictionaries with many multi rows (or 32-bit codes
//! anyway) use [`MODE_COUNTED`]: 32-bit slots, a multi row's slot naming where its codes start
//! and how many there are — two dependent loads, like a range + container layout, in half the
//! bytes.

use alloc::vec;
use alloc::vec::Vec;

use bytemuck::{Pod, Zeroable};
use shoal_text::postings::{Codec, PostingsCursor, TERMINATED};

mod build;
pub use build::{build_column, build_presence_column};

/// Code of a row without any value.
pub const CODE_EMPTY: u32 = 0;
/// Code of a row with several values (they are in the multi container).
pub const CODE_MULTI: u32 = 1;
/// Code of dictionary value 0.
pub const CODE_FIRST_VALUE: u32 = 2;
/// Rows per rank block of the multi bitmap (one 64-byte line of bits).
pub const RANK_BLOCK: usize = 512;

/// The `ColumnMeta` record (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct ColumnMeta {
    /// Rows (points) of the segment.
    pub rows: u32,
    /// Bits per code: 2, 4, 8, 16 or 32.
    pub width: u32,
    /// Distinct values in the dictionary.
    pub dict_len: u32,
    /// Rows with several values.
    pub multi_points: u32,
    /// Codes in the multi container.
    pub multi_len: u32,
    /// Rows whose value is `null`.
    pub null_points: u32,
    /// Rows whose value is a non-empty array of `null`s.
    pub nulls_only_points: u32,
    /// Rows with at least one value.
    pub valued_points: u32,
    /// [`MODE_CODES`], [`MODE_SETS`], [`MODE_DIRECT`] or [`MODE_COUNTED`].
    pub mode: u32,
    /// Nested payloads: rows answered from their documents (`PAYLOAD_COLUMNS` array 8); zero
    /// otherwise.
    pub stray_points: u32,
    /// Zero.
    pub reserved: [u32; 6],
}

/// Column mode: a slot holds one code (0 none, 1 several, `2 + i` value `i`); rows with
/// several values go through the rank to the multi container.
pub const MODE_CODES: u32 = 0;
/// Column mode for dictionaries of at most [`MAX_SET_VALUES`] values: a slot is the *set* of
/// the row's values, bit `i` for value `i`; the multi arrays are empty.
pub const MODE_SETS: u32 = 1;
/// Column mode with 32-bit slots: below 2^31 a slot is a code (0 none, `2 + i` value `i`); a
/// slot `2^31 + start` marks a row with several values, whose codes start at `start` in the
/// multi container, ascending, the last one with bit 31 set. No rank, no offsets: a multi row
/// costs two dependent loads, like a range + container layout, with 4-byte slots and codes.
pub const MODE_DIRECT: u32 = 2;
/// Column mode written in place of [`MODE_DIRECT`] while `multi_len < 2^27` (beyond that the
/// writer still uses [`MODE_DIRECT`]): the same, but a
/// multi row's slot is `2^31 + start * 16 + n`, with `n` its number of codes when below
/// [`COUNT_OPEN`] (then its codes are known from the slot alone, so the end of a row does not
/// wait for the load of its codes), [`COUNT_OPEN`] for rows of 15 or more codes, which end at
/// the tagged code as in [`MODE_DIRECT`]. `start < 2^27`.
pub const MODE_COUNTED: u32 = 3;
/// Tag bit of [`MODE_DIRECT`] / [`MODE_COUNTED`] slots and last codes.
pub const DIRECT_TAG: u32 = 1 << 31;
/// Bits of a [`MODE_COUNTED`] multi slot that hold the row's number of codes.
pub const COUNT_BITS: u32 = 4;
/// The count field of a [`MODE_COUNTED`] multi row of this many codes or more.
pub const COUNT_OPEN: u32 = (1 << COUNT_BITS) - 1;
/// `multi_len` of a [`MODE_COUNTED`] column is below this (starts must fit in 27 bits).
pub const COUNTED_MAX_LEN: u32 = 1 << (31 - COUNT_BITS);

/// Largest dictionary stored in [`MODE_SETS`].
pub const MAX_SET_VALUES: u32 = 16;

const _: () = assert!(core::mem::size_of::<ColumnMeta>() == 64);

/// The narrowest supported code width for a dictionary of `dict_len` values.
pub fn width_for(dict_len: u32) -> u32 {
    let codes = dict_len as u64 + 2;
    [2u32, 4, 8, 16, 32].into_iter().find(|&w| codes <= 1u64 << w).unwrap_or(32)
}

/// Number of `u64` words of a packed array of `n` codes of `width` bits.
pub fn packed_words(n: u64, width: u32) -> u64 {
    (n * width as u64).div_ceil(64)
}

/// The slot width of a [`MODE_SETS`] column of `dict_len` values.
pub fn set_width_for(dict_len: u32) -> u32 {
    [2u32, 4, 8, 16, 32].into_iter().find(|&w| dict_len <= w).unwrap_or(32)
}

/// Reads code `i` of a packed array; `0` when `i` is beyond the words.
#[inline(always)]
pub fn packed_get(words: &[u64], width: u32, i: u64) -> u32 {
    let bit = i * width as u64;
    let mask = if width >= 32 { u32::MAX as u64 } else { (1u64 << width) - 1 };
    match words.get((bit >> 6) as usize) {
        Some(w) => ((w >> (bit & 63)) & mask) as u32,
        None => 0,
    }
}

/// An owned column, as built; [`as_ref`](Self::as_ref) gives the [`ColumnRef`] that
/// filters evaluate against (the same type a reader casts from bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnParts {
    /// Counts and width.
    pub meta: ColumnMeta,
    /// Packed inline codes, one per row.
    pub slots: Vec<u64>,
    /// Bit `r` set when row `r` has several values (whole 512-bit blocks).
    pub multi_bits: Vec<u64>,
    /// Set bits before each 512-bit block.
    pub multi_rank: Vec<u32>,
    /// Ranges of the multi rows in `multi_codes` (`multi_points + 1`, or empty).
    pub multi_offsets: Vec<u32>,
    /// Packed codes of the multi rows.
    pub multi_codes: Vec<u64>,
    /// Rows whose value is `null`, ascending.
    pub null_rows: Vec<u32>,
    /// Rows whose value is a non-empty array of `null`s, ascending.
    pub nulls_only_rows: Vec<u32>,
}

/// A column over borrowed arrays (owned by [`ColumnParts`] or cast from section bytes).
///
/// Every accessor is total: an index that corrupt bytes push out of range reads as "no
/// value", never a panic.
#[derive(Clone, Copy, Debug, Default)]
pub struct ColumnRef<'a> {
    /// Counts and width.
    pub meta: ColumnMeta,
    /// Packed inline codes.
    pub slots: &'a [u64],
    /// Multi-row bitmap.
    pub multi_bits: &'a [u64],
    /// Rank per 512-bit block.
    pub multi_rank: &'a [u32],
    /// Multi ranges.
    pub multi_offsets: &'a [u32],
    /// Packed multi codes.
    pub multi_codes: &'a [u64],
    /// `null` rows.
    pub null_rows: &'a [u32],
    /// Rows with arrays of only `null`s.
    pub nulls_only_rows: &'a [u32],
}

impl ColumnParts {
    /// The borrowed view.
    pub fn as_ref(&self) -> ColumnRef<'_> {
        ColumnRef {
            meta: self.meta,
            slots: &self.slots,
            multi_bits: &self.multi_bits,
            multi_rank: &self.multi_rank,
            multi_offsets: &self.multi_offsets,
            multi_codes: &self.multi_codes,
            null_rows: &self.null_rows,
            nulls_only_rows: &self.nulls_only_rows,
        }
    }

    /// Heap bytes of the column (what a reader maps).
    pub fn bytes(&self) -> usize {
        64 + 8 * (self.slots.len() + self.multi_bits.len() + self.multi_codes.len())
            + 4 * (self.multi_rank.len() + self.multi_offsets.len() + self.null_rows.len() + self.nulls_only_rows.len())
    }
}

/// Codes of the rows of one multi row, ascending.
#[derive(Clone, Debug)]
pub struct MultiCodes<'a> {
    words: &'a [u64],
    width: u32,
    next: u64,
    end: u64,
    /// The row ends at the code with [`DIRECT_TAG`] (its end is not known in advance).
    stop_at_tag: bool,
    /// `!DIRECT_TAG` in the direct modes (the tag is not part of the code), else all ones.
    mask: u32,
}

impl Iterator for MultiCodes<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.next >= self.end {
            return None;
        }
        let c = packed_get(self.words, self.width, self.next);
        self.next += 1;
        if self.stop_at_tag && c & DIRECT_TAG != 0 {
            self.end = self.next;
        }
        Some(c & self.mask)
    }
}

impl<'a> ColumnRef<'a> {
    /// Rows of the column.
    #[inline]
    pub fn rows(&self) -> u32 {
        self.meta.rows
    }

    /// The inline code of `row` ([`CODE_EMPTY`], [`CODE_MULTI`] or a value code).
    #[inline(always)]
    pub fn code(&self, row: u32) -> u32 {
        packed_get(self.slots, self.meta.width, row as u64)
    }

    /// Rank of `row` among the multi rows (set bits before it).
    #[inline]
    fn multi_rank_of(&self, row: u32) -> usize {
        let block = row as usize / RANK_BLOCK;
        let mut k = self.multi_rank.get(block).copied().unwrap_or(0) as usize;
        let first = block * (RANK_BLOCK / 64);
        let word = row as usize / 64;
        for w in first..word {
            k += self.multi_bits.get(w).map_or(0, |w| w.count_ones() as usize);
        }
        let mask = (1u64 << (row % 64)) - 1;
        k + self.multi_bits.get(word).map_or(0, |w| (w & mask).count_ones() as usize)
    }

    /// The codes a direct-mode reader may read: `multi_len`, or fewer when the array is
    /// shorter (never after `open`; a `ColumnRef` built by hand) — and never the padding code.
    #[inline(always)]
    fn direct_len(&self) -> u64 {
        (self.meta.multi_len as u64).min(self.multi_codes.len() as u64 * 2)
    }

    /// Where the codes of a direct-mode ([`MODE_DIRECT`], [`MODE_COUNTED`]) multi row with
    /// this slot start in `multi_codes`.
    #[inline(always)]
    pub fn direct_start(&self, slot: u32) -> u64 {
        let s = slot & !DIRECT_TAG;
        (if self.meta.mode == MODE_COUNTED { s >> COUNT_BITS } else { s }) as u64
    }

    /// The codes of a multi row (empty if `row` is not one; with inconsistent bytes, whatever
    /// lies in range of the arrays, cut off at `multi_len`).
    #[inline]
    pub fn multi_codes_of(&self, row: u32) -> MultiCodes<'a> {
        let mode = self.meta.mode;
        if mode == MODE_DIRECT || mode == MODE_COUNTED {
            let s = self.code(row);
            let len = self.direct_len();
            let start = self.direct_start(s);
            let (next, end, stop_at_tag) = match (s & DIRECT_TAG != 0, mode, s & COUNT_OPEN) {
                (false, ..) => (0, 0, false),
                (true, MODE_COUNTED, n) if n != COUNT_OPEN => (start, (start + n as u64).min(len), false),
                (true, ..) => (start, len, true),
            };
            return MultiCodes { words: self.multi_codes, width: 32, next, end, stop_at_tag, mask: !DIRECT_TAG };
        }
        let k = self.multi_rank_of(row);
        let (start, end) = match (self.multi_offsets.get(k), self.multi_offsets.get(k + 1)) {
            (Some(&s), Some(&e)) if s <= e && e <= self.meta.multi_len && self.code(row) == CODE_MULTI => {
                (s as u64, e as u64)
            }
            _ => (0, 0),
        };
        MultiCodes {
            words: self.multi_codes,
            width: self.meta.width,
            next: start,
            end,
            stop_at_tag: false,
            mask: u32::MAX,
        }
    }

    /// Calls `f` with every value code of `row`, ascending; stops when `f` returns `true` and
    /// returns whether it did. This is `check_values_any` over codes.
    #[inline(always)]
    pub fn any_code(&self, row: u32, mut f: impl FnMut(u32) -> bool) -> bool {
        if self.meta.mode == MODE_COUNTED && self.meta.width == 32 {
            // 32-bit slots and codes packed low half first are the `u32`s of the words (the
            // format, like every cast of section bytes here, is little-endian). A multi row
            // of fewer than 15 codes is a slice known from its slot: a loop whose end does not
            // wait for the load of the codes.
            let slots: &[u32] = bytemuck::cast_slice(self.slots);
            let c = slots.get(row as usize).copied().unwrap_or(CODE_EMPTY);
            if c < DIRECT_TAG {
                return c >= CODE_FIRST_VALUE && f(c);
            }
            let n = c & COUNT_OPEN;
            if n != COUNT_OPEN {
                let codes: &[u32] = bytemuck::cast_slice(self.multi_codes);
                let start = self.direct_start(c) as usize;
                // Cut off where `multi_codes_of` cuts off, so that every input — corrupt ones
                // too — reads the same here and through it.
                let end = (start + n as usize).min(self.direct_len() as usize);
                return codes.get(start..end).is_some_and(|cs| cs.iter().any(|&x| f(x & !DIRECT_TAG)));
            }
            return self.multi_codes_of(row).any(f);
        }
        let c = self.code(row);
        if self.meta.mode == MODE_SETS {
            let mut set = c;
            while set != 0 {
                if f(set.trailing_zeros() + CODE_FIRST_VALUE) {
                    return true;
                }
                set &= set - 1;
            }
            return false;
        }
        if (CODE_FIRST_VALUE..DIRECT_TAG).contains(&c) {
            return f(c);
        }
        if c == CODE_EMPTY {
            return false;
        }
        self.multi_codes_of(row).any(f)
    }

    /// Whether `row` has no value at all.
    #[inline]
    pub fn has_no_value(&self, row: u32) -> bool {
        self.code(row) == CODE_EMPTY
    }

    /// Whether some value code of `row` is in `set` (the filter's leaf check).
    #[inline(always)]
    pub fn any_in(&self, row: u32, set: &CodeSet) -> bool {
        match set {
            CodeSet::Mask(m) => self.code(row) & m != 0,
            _ => self.any_code(row, |c| set.contains(c)),
        }
    }

    /// Number of values of `row`.
    pub fn value_count(&self, row: u32) -> usize {
        if self.meta.mode == MODE_SETS {
            return self.code(row).count_ones() as usize;
        }
        match self.code(row) {
            CODE_EMPTY => 0,
            c if c == CODE_MULTI || c >= DIRECT_TAG => self.multi_codes_of(row).count(),
            _ => 1,
        }
    }

    /// The [`CodeSet`] of the codes `lo..hi` for this column (a bit mask in [`MODE_SETS`]).
    pub fn code_range(&self, lo: u32, hi: u32) -> CodeSet {
        if self.meta.mode == MODE_SETS {
            let mut m = 0u32;
            for c in lo.max(CODE_FIRST_VALUE)..hi.min(CODE_FIRST_VALUE + 32) {
                m |= 1 << (c - CODE_FIRST_VALUE);
            }
            CodeSet::Mask(m)
        } else {
            CodeSet::Range(lo, hi)
        }
    }

    /// The [`CodeSet`] of a sorted list of codes for this column.
    pub fn code_list(&self, codes: Vec<u32>) -> CodeSet {
        if self.meta.mode == MODE_SETS {
            let mut m = 0u32;
            for c in codes {
                if (CODE_FIRST_VALUE..CODE_FIRST_VALUE + 32).contains(&c) {
                    m |= 1 << (c - CODE_FIRST_VALUE);
                }
            }
            CodeSet::Mask(m)
        } else if codes.len() > LIST_MAX && (self.meta.dict_len as usize + 2).div_ceil(64) <= 2 * codes.len() {
            // Codes past the dictionary match nothing: the bitmap covers the dictionary only.
            let mut words = vec![0u64; (self.meta.dict_len as usize + CODE_FIRST_VALUE as usize).div_ceil(64)];
            for c in codes {
                if let Some(w) = words.get_mut(c as usize / 64) {
                    *w |= 1 << (c % 64);
                }
            }
            CodeSet::Bits(words)
        } else {
            CodeSet::List(codes)
        }
    }

    /// Whether `row`'s value is `null` (Qdrant's `is_null`).
    pub fn is_null(&self, row: u32) -> bool {
        self.code(row) == CODE_EMPTY && self.null_rows.binary_search(&row).is_ok()
    }

    /// Whether `row` is absent, `null` or `[]` (Qdrant's `is_empty`).
    pub fn is_empty(&self, row: u32) -> bool {
        self.code(row) == CODE_EMPTY && self.nulls_only_rows.binary_search(&row).is_err()
    }
}

/// A set of value codes, prepared for one column by [`ColumnRef::code_range`] /
/// [`ColumnRef::code_list`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeSet {
    /// Codes `lo..hi` (a range of values: the dictionary is sorted).
    Range(u32, u32),
    /// Sorted codes.
    List(Vec<u32>),
    /// Bit `i` = code `i + 2` ([`MODE_SETS`] columns: one AND per row).
    Mask(u32),
    /// Bit `c % 64` of word `c / 64` = code `c` (lists of more than [`LIST_MAX`] codes whose
    /// bitmap over the dictionary is at most twice their length in words: one lookup per value
    /// instead of a binary search).
    Bits(Vec<u64>),
}

/// Longest code list kept as a sorted [`CodeSet::List`]; longer ones become [`CodeSet::Bits`].
pub const LIST_MAX: usize = 16;

impl CodeSet {
    /// Whether `c` is in the set.
    #[inline]
    pub fn contains(&self, c: u32) -> bool {
        match self {
            CodeSet::Range(lo, hi) => *lo <= c && c < *hi,
            CodeSet::List(l) => {
                if l.len() <= 8 {
                    l.contains(&c)
                } else {
                    l.binary_search(&c).is_ok()
                }
            }
            CodeSet::Mask(m) => {
                (CODE_FIRST_VALUE..CODE_FIRST_VALUE + 32).contains(&c) && m >> (c - CODE_FIRST_VALUE) & 1 == 1
            }
            CodeSet::Bits(w) => w.get(c as usize / 64).is_some_and(|w| w >> (c % 64) & 1 == 1),
        }
    }

    /// Dictionary indexes (`code - 2`) in the set, ascending.
    pub fn for_each_value(&self, mut f: impl FnMut(u32)) {
        match self {
            CodeSet::Range(lo, hi) => (*lo.max(&CODE_FIRST_VALUE)..*hi).for_each(|c| f(c - CODE_FIRST_VALUE)),
            CodeSet::List(l) => l.iter().filter(|&&c| c >= CODE_FIRST_VALUE).for_each(|&c| f(c - CODE_FIRST_VALUE)),
            CodeSet::Mask(m) => {
                let mut m = *m;
                while m != 0 {
                    f(m.trailing_zeros());
                    m &= m - 1;
                }
            }
            CodeSet::Bits(words) => {
                for (i, &w) in words.iter().enumerate() {
                    let mut w = w;
                    while w != 0 {
                        let c = i as u32 * 64 + w.trailing_zeros();
                        if c >= CODE_FIRST_VALUE {
                            f(c - CODE_FIRST_VALUE);
                        }
                        w &= w - 1;
                    }
                }
            }
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        match self {
            CodeSet::Range(lo, hi) => lo >= hi,
            CodeSet::List(l) => l.is_empty(),
            CodeSet::Mask(m) => *m == 0,
            CodeSet::Bits(w) => w.iter().all(|&w| w == 0),
        }
    }
}

/// The value → rows index of a field, borrowed: for dictionary value `i`, the rows holding it,
/// ascending, either as one block-coded list of `shoal-text`'s postings codec (bit-packed
/// blocks of 128 row gaps with skip data; every tf is 1: keyword fields, where it is smaller)
/// or as a plain slice of `rows` (numeric fields — a range of values is one contiguous run —
/// and keyword fields of mostly one-row values).
///
/// Callers go through [`RowLists`]. Every accessor is total: bytes that corrupt data pushes
/// out of range read as an empty list, never a panic.
#[derive(Clone, Copy, Debug, Default)]
pub struct Postings<'a> {
    /// `dict_len + 1` prefix counts: value `i` has `offsets[i + 1] - offsets[i]` rows.
    pub offsets: &'a [u32],
    /// `dict_len + 1` byte offsets of the lists in `lists` (empty for plain `rows`).
    pub starts: &'a [u64],
    /// The block-coded lists, one per value (none for a value without rows).
    pub lists: &'a [u8],
    /// Plain rows, ascending per value, at `offsets` (when `starts` is empty).
    pub rows: &'a [u32],
}

/// An owned [`Postings`]: plain `rows`, or block-coded `starts` and `lists`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostingsParts {
    /// `dict_len + 1` prefix counts.
    pub offsets: Vec<u32>,
    /// `dict_len + 1` byte offsets into `lists` (empty when plain).
    pub starts: Vec<u64>,
    /// The block-coded lists (empty when plain).
    pub lists: Vec<u8>,
    /// Plain rows, value by value (empty when block-coded).
    pub rows: Vec<u32>,
}

impl PostingsParts {
    /// The same lists block-coded, if that takes fewer bytes than the plain rows (lists of
    /// mostly one row cost more coded: a header, a list start and a varint each).
    pub fn block_coded_if_smaller(self) -> PostingsParts {
        // The codec holds lists of fewer than 2^30 ids: longer ones stay plain.
        if self.offsets.windows(2).any(|w| w[1].saturating_sub(w[0]) > u32::MAX >> 2) {
            return self;
        }
        let coded = PostingsParts::encode(self.offsets.clone(), &self.rows);
        if coded.lists.len() + 8 * coded.starts.len() < 4 * self.rows.len() { coded } else { self }
    }

    /// Block-codes the lists of `rows` (value `i` at `rows[offsets[i]..offsets[i + 1]]`,
    /// strictly ascending).
    pub fn encode(offsets: Vec<u32>, rows: &[u32]) -> PostingsParts {
        let longest = offsets.windows(2).map(|w| w[1].saturating_sub(w[0])).max().unwrap_or(0);
        let ones = vec![1u32; longest as usize];
        let mut starts = Vec::with_capacity(offsets.len());
        let mut lists = Vec::new();
        starts.push(0);
        for w in offsets.windows(2) {
            let list = &rows[w[0] as usize..w[1] as usize];
            if !list.is_empty() {
                // Rows of one value ascend strictly below u32::MAX (a row id), and callers
                // keep lists of 2^30 rows or more plain: encoding cannot fail.
                shoal_text::postings::encode(Codec::BitPacked, list, &ones[..list.len()], None, &mut lists)
                    .expect("rows ascend strictly");
            }
            starts.push(lists.len() as u64);
        }
        PostingsParts { offsets, starts, lists, rows: Vec::new() }
    }

    /// The borrowed view.
    pub fn as_ref(&self) -> Postings<'_> {
        Postings { offsets: &self.offsets, starts: &self.starts, lists: &self.lists, rows: &self.rows }
    }

    /// All rows, value by value, whichever the layout (decoded; for tests and tools).
    pub fn all_rows(&self) -> Vec<u32> {
        let p = self.as_ref();
        let mut out = Vec::new();
        for i in 0..self.offsets.len().saturating_sub(1) {
            p.for_each_row(i as u32, &mut |r| out.push(r));
        }
        out
    }
}

/// The interface of a value → rows index (dictionary index `i`, not code).
pub trait RowLists {
    /// Number of rows holding value `i` (0 for an unknown value).
    fn list_len(&self, i: u32) -> u64;
    /// Number of (row, value) pairs of the values `lo..hi`.
    fn range_len(&self, lo: u32, hi: u32) -> u64;
    /// Calls `f` with the rows holding value `i`, ascending, a run at a time (a block of the
    /// coded list, or the whole plain list).
    fn for_each_run(&self, i: u32, f: &mut dyn FnMut(&[u32]));
    /// Calls `f` with every row holding value `i`, ascending.
    fn for_each_row(&self, i: u32, f: &mut dyn FnMut(u32)) {
        self.for_each_run(i, &mut |rows| rows.iter().for_each(|&r| f(r)));
    }
    /// Calls `f` with the rows of the values `lo..hi`, a run at a time (value by value; plain
    /// lists of a range of values are one run).
    fn for_each_run_in(&self, lo: u32, hi: u32, f: &mut dyn FnMut(&[u32]));
}

impl Postings<'_> {
    fn bounds(&self, lo: u32, hi: u32) -> (usize, usize) {
        match (self.offsets.get(lo as usize), self.offsets.get(hi as usize)) {
            (Some(&s), Some(&e)) if s <= e => (s as usize, e as usize),
            _ => (0, 0),
        }
    }
}

impl RowLists for Postings<'_> {
    fn list_len(&self, i: u32) -> u64 {
        self.range_len(i, i.saturating_add(1))
    }

    fn range_len(&self, lo: u32, hi: u32) -> u64 {
        if lo >= hi {
            return 0;
        }
        let (s, e) = self.bounds(lo, hi);
        (e - s) as u64
    }

    fn for_each_run_in(&self, lo: u32, hi: u32, f: &mut dyn FnMut(&[u32])) {
        if !self.starts.is_empty() {
            (lo..hi).for_each(|i| self.for_each_run(i, f));
            return;
        }
        let hi = hi.min(self.offsets.len().saturating_sub(1) as u32);
        if lo < hi {
            let (s, e) = self.bounds(lo, hi);
            f(self.rows.get(s..e).unwrap_or_default());
        }
    }

    fn for_each_run(&self, i: u32, f: &mut dyn FnMut(&[u32])) {
        if self.starts.is_empty() {
            let (s, e) = self.bounds(i, i.saturating_add(1));
            f(self.rows.get(s..e).unwrap_or_default());
            return;
        }
        let (Some(&s), Some(&e)) = (self.starts.get(i as usize), self.starts.get(i as usize + 1)) else { return };
        let (Ok(s), Ok(e)) = (usize::try_from(s), usize::try_from(e)) else { return };
        let Some(bytes) = self.lists.get(s..e).filter(|b| !b.is_empty()) else { return };
        let Ok(mut c) = PostingsCursor::open(bytes) else { return };
        while c.doc() != TERMINATED {
            let rows = c.rest().0;
            f(rows);
            if c.skip(rows.len()).is_err() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::to_direct;
    use super::*;

    /// The rank layout (mode 0) and both direct encodings of it read every row the same.
    #[test]
    fn rank_direct_and_counted_encodings_agree() {
        let n = 3000u32;
        let mut offsets = vec![0u32];
        let mut vals = Vec::new();
        for i in 0..n {
            let count = if i % 50 == 0 { 2 + i % 23 } else { u32::from(i % 7 != 0) };
            vals.extend((0..count).map(|j| (i * 31 + j * 7) % 5000));
            offsets.push(vals.len() as u32);
        }
        let (rank, _) = build_column(5000, &offsets, &vals, &[], &[]);
        assert_eq!(rank.meta.mode, MODE_CODES);
        for (col, mode) in [(to_direct(&rank, false), MODE_DIRECT), (to_direct(&rank, true), MODE_COUNTED)] {
            assert_eq!(col.meta.mode, mode);
            let (a, b) = (rank.as_ref(), col.as_ref());
            for r in 0..n + 2 {
                let codes = |c: &ColumnRef<'_>| {
                    let mut v = Vec::new();
                    c.any_code(r, |x| {
                        v.push(x);
                        false
                    });
                    v
                };
                assert_eq!(codes(&a), codes(&b), "row {r}");
                assert_eq!(a.value_count(r), b.value_count(r), "row {r}");
                assert_eq!(a.multi_codes_of(r).collect::<Vec<_>>(), b.multi_codes_of(r).collect::<Vec<_>>(), "row {r}");
            }
        }
    }
}
