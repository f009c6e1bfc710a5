//! The text index of format 2 (`docs/format.md`, "Text, v2"): a format-1 index laid out so that
//! a query reads its terms' dictionary groups in one wave and each term's record (postings,
//! their documents' lengths, positions) as one range in the next, every range checked by a CRC
//! read before it. Read back, the records a query fetched make a [`TextIndex`] of those terms
//! ([`TextIndex::of_lists`]) that the query searches as it searches the whole index.

use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::crc32c;
use shoal_text::dict::{DictWriter, TermInfo};
use shoal_text::postings::decode_all;
use shoal_text::varint::{get_u32, get_u64, put_u32, put_u64};
use shoal_text::{Sections, TextIndex};

use super::check_block;
use crate::Error;
use crate::sections::bad;

/// `TEXT_DICT_INDEX`: where each dictionary group lies (hot).
pub const KIND_TEXT_DICT_INDEX: u32 = 53;
/// `TEXT_TERM_DICT`: the dictionary in groups.
pub const KIND_TEXT_TERM_DICT: u32 = 54;
/// `TEXT_TERMS`: one record per term.
pub const KIND_TEXT_TERMS: u32 = 55;

/// Terms per dictionary group.
pub const GROUP_TERMS: usize = 64;
/// Postings per block of posting lengths (as the postings' blocks).
const LENGTH_BLOCK: usize = 128;

/// A format-1 text index laid out for reading by ranges: `TEXT_META` as it was, then kinds 53–55.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TextLayout {
    /// `TEXT_META` (48), unchanged.
    pub meta: Vec<u8>,
    /// `TEXT_DICT_INDEX` (53, hot).
    pub dict_index: Vec<u8>,
    /// `TEXT_TERM_DICT` (54).
    pub term_dict: Vec<u8>,
    /// `TEXT_TERMS` (55).
    pub terms: Vec<u8>,
}

/// Appends `values` packed `width` bits each, least significant bit first, to a whole byte.
fn pack(values: &[u32], width: u32, out: &mut Vec<u8>) {
    let (mut acc, mut bits) = (0u64, 0u32);
    for &v in values {
        acc |= u64::from(v) << bits;
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
}

/// The posting lengths of a list (format.md: per block of 128, `u8 width` then the packed values).
fn encode_lengths(lengths: &[u32], out: &mut Vec<u8>) {
    for block in lengths.chunks(LENGTH_BLOCK) {
        let width = 32 - block.iter().fold(0, |m, &l| m | l).leading_zeros();
        out.push(width as u8);
        pack(block, width, out);
    }
}

/// Decodes `n` posting lengths; `None` when the bytes are not exactly them.
fn decode_lengths(bytes: &[u8], n: usize, out: &mut Vec<u32>) -> Option<()> {
    let mut at = 0;
    let mut left = n;
    while left > 0 {
        let m = left.min(LENGTH_BLOCK);
        let width = u32::from(*bytes.get(at)?);
        if width > 32 {
            return None;
        }
        at += 1;
        let len = (m * width as usize).div_ceil(8);
        let packed = bytes.get(at..at + len)?;
        let (mut acc, mut bits, mut next) = (0u64, 0u32, 0usize);
        for _ in 0..m {
            while bits < width {
                acc |= u64::from(packed[next]) << bits;
                next += 1;
                bits += 8;
            }
            out.push((acc & ((1u64 << width) - 1)) as u32);
            acc >>= width;
            bits -= width;
        }
        at += len;
        left -= m;
    }
    (at == bytes.len()).then_some(())
}

/// The `len` bytes at `at` of `bytes`, if they are there.
fn list(bytes: &[u8], at: u32, len: u32) -> Option<&[u8]> {
    bytes.get(at as usize..).and_then(|b| b.get(..len as usize))
}

fn too_big() -> Error {
    Error::Unsupported("a text index of more than 4 GiB per list in a format-2 segment")
}

/// Lays out the format-1 text index `s` for reading by ranges (the same terms, lists and
/// lengths).
pub fn lay_out_text(s: &Sections) -> Result<TextLayout, Error> {
    let index = TextIndex::open(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths).map_err(Error::Text)?;
    let mut out = TextLayout { meta: s.meta.clone(), ..TextLayout::default() };
    let (mut groups, mut first_keys) = (Vec::new(), Vec::new());
    let mut group = Vec::new();
    let (mut docs, mut tfs, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
    let mut terms = index.dict().iter();
    let mut count = 0u32;
    let mut prev_key = Vec::new();
    while terms.advance().map_err(Error::Text)? {
        let (key, info) = (terms.key(), terms.info());
        if (count as usize).is_multiple_of(GROUP_TERMS) {
            if count > 0 {
                groups.push((out.term_dict.len() as u64, group.len() as u32, crc32c(&group)));
                out.term_dict.append(&mut group);
            }
            first_keys.push(key.to_vec());
            put_u64(&mut group, out.terms.len() as u64);
        }
        count += 1;
        let postings = list(&s.postings, info.postings_offset, info.postings_len)
            .ok_or_else(|| bad("TEXT_POSTINGS", "a list past the section"))?;
        let positions = list(&s.positions, info.positions_offset, info.positions_len)
            .ok_or_else(|| bad("TEXT_POSITIONS", "a list past the section"))?;
        decode_all(postings, &mut docs, &mut tfs).map_err(Error::Text)?;
        lengths.clear();
        let field = u32::from(*key.first().ok_or_else(|| bad("TEXT_DICT", "an empty key"))?);
        for &d in &docs {
            lengths.push(index.doc_len(field, d).ok_or_else(|| bad("TEXT_DOC_LENGTHS", "a posting past the lengths"))?);
        }
        let start = out.terms.len();
        out.terms.extend_from_slice(postings);
        encode_lengths(&lengths, &mut out.terms);
        let lists = u32::try_from(out.terms.len() - start).map_err(|_| too_big())?;
        let crc = crc32c(&out.terms[start..]);
        out.terms.extend_from_slice(positions);
        // The entry: the key front-coded in its group, then the record's shape and CRCs.
        if count as usize % GROUP_TERMS == 1 {
            prev_key.clear();
        }
        let shared = key.iter().zip(&prev_key).take_while(|(a, b)| a == b).count();
        put_u32(&mut group, shared as u32);
        put_u32(&mut group, (key.len() - shared) as u32);
        group.extend_from_slice(&key[shared..]);
        put_u32(&mut group, info.doc_freq);
        put_u32(&mut group, info.postings_len);
        put_u32(&mut group, lists - info.postings_len);
        put_u32(&mut group, info.positions_len);
        group.extend_from_slice(&crc.to_le_bytes());
        group.extend_from_slice(&if positions.is_empty() { 0 } else { crc32c(positions) }.to_le_bytes());
        prev_key.clear();
        prev_key.extend_from_slice(key);
    }
    if !group.is_empty() {
        groups.push((out.term_dict.len() as u64, group.len() as u32, crc32c(&group)));
        out.term_dict.append(&mut group);
    }
    let d = &mut out.dict_index;
    d.extend_from_slice(&count.to_le_bytes());
    d.extend_from_slice(&(groups.len() as u32).to_le_bytes());
    for (offset, length, crc) in &groups {
        d.extend_from_slice(&offset.to_le_bytes());
        d.extend_from_slice(&length.to_le_bytes());
        d.extend_from_slice(&crc.to_le_bytes());
    }
    for key in &first_keys {
        d.extend_from_slice(&(key.len() as u16).to_le_bytes());
        d.extend_from_slice(key);
    }
    Ok(out)
}

/// `TEXT_DICT_INDEX` read: where each dictionary group lies, its CRC and its first key.
#[derive(Debug)]
pub struct DictIndex {
    /// `(offset, length, crc)` of each group in `TEXT_TERM_DICT`.
    groups: Vec<(u64, u32, u32)>,
    first_keys: Vec<Vec<u8>>,
}

fn bad_index(why: &'static str) -> Error {
    bad("TEXT_DICT_INDEX", why)
}

impl DictIndex {
    /// Reads and checks `TEXT_DICT_INDEX` (`dict_len`: the length of `TEXT_TERM_DICT`).
    pub fn parse(bytes: &[u8], dict_len: u64) -> Result<DictIndex, Error> {
        let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")));
        let (Some(terms), Some(n)) = (u32_at(0), u32_at(4)) else { return Err(bad_index("shorter than its header")) };
        let n = n as usize;
        if n != (terms as usize).div_ceil(GROUP_TERMS) || bytes.len() < 8 + 16 * n {
            return Err(bad_index("group count differs from the terms or the section's length"));
        }
        let mut groups = Vec::with_capacity(n);
        let mut end = 0u64;
        for g in 0..n {
            let at = 8 + 16 * g;
            let offset = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            let (length, crc) = (u32_at(at + 8).expect("in range"), u32_at(at + 12).expect("in range"));
            if offset != end || length == 0 {
                return Err(bad_index("groups not contiguous"));
            }
            end = offset + u64::from(length);
            groups.push((offset, length, crc));
        }
        if end != dict_len {
            return Err(bad_index("groups do not end where TEXT_TERM_DICT does"));
        }
        let mut first_keys: Vec<Vec<u8>> = Vec::with_capacity(n);
        let mut at = 8 + 16 * n;
        for _ in 0..n {
            let len = bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]) as usize);
            let key =
                len.and_then(|len| bytes.get(at + 2..at + 2 + len)).ok_or(bad_index("a first key past the end"))?;
            if key.is_empty() || first_keys.last().is_some_and(|k| k.as_slice() >= key) {
                return Err(bad_index("first keys not ascending"));
            }
            first_keys.push(key.to_vec());
            at += 2 + key.len();
        }
        if at != bytes.len() {
            return Err(bad_index("bytes after the first keys"));
        }
        Ok(DictIndex { groups, first_keys })
    }

    /// The group that holds `key` if any term does: the last whose first key is at most it.
    pub fn group_of(&self, key: &[u8]) -> Option<usize> {
        self.first_keys.partition_point(|k| k.as_slice() <= key).checked_sub(1)
    }

    /// Group `g`'s bytes in `TEXT_TERM_DICT` and their CRC.
    pub fn group(&self, g: usize) -> (Range<u64>, u32) {
        let (offset, length, crc) = self.groups[g];
        (offset..offset + u64::from(length), crc)
    }
}

/// A term's dictionary entry: its document frequency and where its record lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TermEntry {
    /// Documents containing the term.
    pub doc_freq: u32,
    /// Its record's offset in `TEXT_TERMS`.
    pub offset: u64,
    /// Its postings list's length.
    pub postings_len: u32,
    /// Its posting lengths' length.
    pub lengths_len: u32,
    /// Its position lists' length (0 without positions).
    pub positions_len: u32,
    /// CRC-32C of its postings and posting lengths.
    pub crc: u32,
    /// CRC-32C of its positions (0 when none).
    pub positions_crc: u32,
}

impl TermEntry {
    /// Its postings and posting lengths in `TEXT_TERMS`, and, `with_positions`, its positions.
    pub fn range(&self, with_positions: bool) -> Range<u64> {
        let lists = u64::from(self.postings_len) + u64::from(self.lengths_len);
        let len = lists + if with_positions { u64::from(self.positions_len) } else { 0 };
        self.offset..self.offset.saturating_add(len)
    }
}

/// Finds `key` in a dictionary group's bytes (checked against their CRC by the caller).
pub fn find_in_group(group: &[u8], key: &[u8]) -> Result<Option<TermEntry>, Error> {
    let what = "TEXT_TERM_DICT";
    let mut at = 0;
    let text = |e: shoal_text::TextError| Error::Text(e);
    let mut offset = get_u64(group, &mut at, what).map_err(text)?;
    let mut prev: Vec<u8> = Vec::new();
    while at < group.len() {
        let shared = get_u32(group, &mut at, what).map_err(text)? as usize;
        let suffix = get_u32(group, &mut at, what).map_err(text)? as usize;
        let tail = group.get(at..at.saturating_add(suffix)).ok_or_else(|| bad(what, "a key past the group"))?;
        if shared > prev.len() || shared + suffix > shoal_text::dict::MAX_KEY || (suffix == 0 && !prev.is_empty()) {
            return Err(bad(what, "a key that is not the next one"));
        }
        at += suffix;
        prev.truncate(shared);
        prev.extend_from_slice(tail);
        let doc_freq = get_u32(group, &mut at, what).map_err(text)?;
        let postings_len = get_u32(group, &mut at, what).map_err(text)?;
        let lengths_len = get_u32(group, &mut at, what).map_err(text)?;
        let positions_len = get_u32(group, &mut at, what).map_err(text)?;
        let crcs = group.get(at..at + 8).ok_or_else(|| bad(what, "an entry past the group"))?;
        at += 8;
        let crc = u32::from_le_bytes(crcs[..4].try_into().expect("4 bytes"));
        let positions_crc = u32::from_le_bytes(crcs[4..].try_into().expect("4 bytes"));
        let entry = TermEntry { doc_freq, offset, postings_len, lengths_len, positions_len, crc, positions_crc };
        match prev.as_slice().cmp(key) {
            core::cmp::Ordering::Equal => return Ok(Some(entry)),
            core::cmp::Ordering::Greater => return Ok(None),
            core::cmp::Ordering::Less => {}
        }
        offset = entry.range(true).end;
    }
    Ok(None)
}

/// The fetched records of some terms, as one [`TextIndex`] of those terms.
#[derive(Debug, Default)]
pub struct FetchedTerms {
    dict: Vec<u8>,
    postings: Vec<u8>,
    positions: Vec<u8>,
    lengths: Vec<(u32, u32, u32)>,
}

impl FetchedTerms {
    /// Gathers `terms` — `(key, entry, record)` in ascending key order, each record the bytes of
    /// [`TermEntry::range`] (with positions when they were fetched), checked here against the
    /// entry's CRCs.
    pub fn new<'r>(terms: impl IntoIterator<Item = (&'r [u8], TermEntry, &'r [u8])>) -> Result<FetchedTerms, Error> {
        let what = "TEXT_TERMS";
        let mut f = FetchedTerms::default();
        let mut dict = DictWriter::new();
        let (mut docs, mut tfs, mut lengths) = (Vec::new(), Vec::new(), Vec::new());
        for (key, e, record) in terms {
            let lists = usize::try_from(u64::from(e.postings_len) + u64::from(e.lengths_len)).map_err(|_| too_big())?;
            let (head, positions) = record.split_at_checked(lists).ok_or_else(|| bad(what, "a record cut short"))?;
            check_block(head, e.crc, what, KIND_TEXT_TERMS)?;
            let with_positions = !positions.is_empty();
            if with_positions {
                if positions.len() != e.positions_len as usize {
                    return Err(bad(what, "positions differ from their entry"));
                }
                // (A checksum error: bytes damaged in transit are fetched again.)
                check_block(positions, e.positions_crc, what, KIND_TEXT_TERMS)?;
            }
            let (postings, lens) = head.split_at(e.postings_len as usize);
            decode_all(postings, &mut docs, &mut tfs).map_err(Error::Text)?;
            lengths.clear();
            decode_lengths(lens, docs.len(), &mut lengths)
                .ok_or_else(|| bad(what, "posting lengths are not one per posting"))?;
            let field = u32::from(*key.first().ok_or_else(|| bad(what, "an empty key"))?);
            f.lengths.extend(docs.iter().zip(&lengths).map(|(&d, &l)| (field, d, l)));
            let info = TermInfo {
                doc_freq: e.doc_freq,
                postings_offset: u32::try_from(f.postings.len()).map_err(|_| too_big())?,
                postings_len: e.postings_len,
                positions_offset: u32::try_from(f.positions.len()).map_err(|_| too_big())?,
                positions_len: if with_positions { e.positions_len } else { 0 },
            };
            dict.push(key, info).map_err(Error::Text)?;
            f.postings.extend_from_slice(postings);
            f.positions.extend_from_slice(positions);
        }
        f.dict = dict.finish();
        f.lengths.sort_unstable_by_key(|&(field, d, _)| (field, d));
        if f.lengths.windows(2).any(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1) && w[0].2 != w[1].2) {
            return Err(bad(what, "two lengths for one document"));
        }
        f.lengths.dedup_by_key(|&mut (field, d, _)| (field, d));
        Ok(f)
    }

    /// The index of the gathered terms, with `meta` (the segment's `TEXT_META`).
    pub fn index<'a>(&'a self, meta: &[u8]) -> Result<TextIndex<'a>, Error> {
        TextIndex::of_lists(meta, &self.dict, &self.postings, &self.positions, &self.lengths).map_err(Error::Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;
    use shoal_text::{Analyzer, BuildOptions, IndexBuilder, Query, SearchParams};

    /// Documents over a vocabulary of 600 words, frequent ones in many documents (lists of
    /// several blocks), rare ones in few; positions on.
    fn sections(docs: usize) -> (Sections, Vec<String>) {
        let words: Vec<String> = (0..600).map(|i| alloc::format!("w{i}x{}", i * 7 % 13)).collect();
        let mut b = IndexBuilder::new(BuildOptions { positions: true, ..BuildOptions::default() });
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for d in 0..docs as u32 {
            let len = 1 + next() % 40;
            let text: Vec<&str> = (0..len)
                .map(|_| {
                    let r = next() % 1000;
                    // Skewed: a tenth of the picks among the first 10 words.
                    let i = if r < 300 { r % 10 } else { (next() % 600) as usize as u64 };
                    words[i as usize].as_str()
                })
                .collect();
            b.add(d, &[&text.join(" ")]).unwrap();
        }
        (b.finish().unwrap(), words)
    }

    /// Searches `query` over the records a reader by ranges would fetch from `layout`.
    fn search_fetched(layout: &TextLayout, query: &Query, k: usize) -> shoal_text::SearchResult {
        let index = DictIndex::parse(&layout.dict_index, layout.term_dict.len() as u64).unwrap();
        let keys = super::super::text_query::query_keys(query);
        let mut found = Vec::new();
        for (key, phrase) in &keys {
            let Some(g) = index.group_of(key) else { continue };
            let (range, crc) = index.group(g);
            let group = &layout.term_dict[range.start as usize..range.end as usize];
            assert_eq!(crc32c(group), crc);
            if let Some(e) = find_in_group(group, key).unwrap() {
                let r = e.range(*phrase);
                found.push((key.as_slice(), e, &layout.terms[r.start as usize..r.end as usize]));
            }
        }
        let fetched = FetchedTerms::new(found).unwrap();
        let idx = fetched.index(&layout.meta).unwrap();
        idx.search(0, query, &SearchParams { k, ..SearchParams::default() }).unwrap()
    }

    #[test]
    fn fetched_records_search_as_the_whole_index() {
        let (s, words) = sections(3000);
        let layout = lay_out_text(&s).unwrap();
        let whole = TextIndex::open(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths).unwrap();
        let analyzer = Analyzer::default();
        let mut queries: Vec<String> = Vec::new();
        for i in 0..120 {
            let (a, b, c) = (&words[i % 10], &words[i * 7 % 600], &words[i * 13 % 600]);
            queries.push(match i % 6 {
                0 => alloc::format!("{a} {b}"),
                1 => alloc::format!("+{a} {b} {c}"),
                2 => alloc::format!("\"{a} {b}\" {c}"),
                3 => alloc::format!("{b} -{a}"),
                4 => alloc::format!("{a} {} nosuchword", &words[(i + 1) % 10]),
                _ => c.clone(),
            });
        }
        for text in &queries {
            let q = Query::parse(&analyzer, text);
            for k in [1, 10, 100] {
                let want = whole.search(0, &q, &SearchParams { k, ..SearchParams::default() }).unwrap();
                let got = search_fetched(&layout, &q, k);
                let bits = |r: &shoal_text::SearchResult| -> Vec<(u32, u32)> {
                    r.hits.iter().map(|h| (h.doc, h.score.to_bits())).collect()
                };
                assert_eq!(bits(&got), bits(&want), "{text}, k {k}");
                assert_eq!(got.stats, want.stats, "{text}, k {k}");
            }
        }
        // Groups of 64 terms; each group's bytes end where the next begins.
        let index = DictIndex::parse(&layout.dict_index, layout.term_dict.len() as u64).unwrap();
        assert_eq!(index.groups.len(), whole.dict().len().div_ceil(GROUP_TERMS as u32) as usize);
        assert!(index.groups.len() > 5);
    }

    #[test]
    fn damaged_groups_and_records_are_errors_not_panics() {
        let (s, words) = sections(400);
        let layout = lay_out_text(&s).unwrap();
        let index = DictIndex::parse(&layout.dict_index, layout.term_dict.len() as u64).unwrap();
        let key = |w: &str| [&[0u8][..], w.as_bytes()].concat();
        let (range, _) = index.group(0);
        let group = &layout.term_dict[range.start as usize..range.end as usize];
        for at in 0..group.len() {
            for xor in [1u8, 0x80, 0xff] {
                let mut bad = group.to_vec();
                bad[at] ^= xor;
                for w in words.iter().take(40) {
                    // Any answer or a typed error; the CRC in the index is what catches the change.
                    let _ = find_in_group(&bad, &key(w));
                    let _ = find_in_group(&bad[..at], &key(w));
                }
            }
        }
        let k = key(&words[0]);
        let e = find_in_group(group, &k).unwrap().unwrap();
        let r = e.range(false);
        let record = &layout.terms[r.start as usize..r.end as usize];
        assert!(FetchedTerms::new([(&k[..], e, record)]).is_ok());
        for at in (0..record.len()).step_by(7) {
            let mut bad = record.to_vec();
            bad[at] ^= 0x20;
            assert!(FetchedTerms::new([(&k[..], e, &bad[..])]).is_err(), "a changed byte at {at}");
            assert!(FetchedTerms::new([(&k[..], e, &record[..at])]).is_err(), "cut at {at}");
        }
        let huge = TermEntry { offset: u64::MAX - 3, postings_len: u32::MAX, lengths_len: u32::MAX, ..e };
        assert!(huge.range(true).start <= huge.range(true).end);
        assert!(FetchedTerms::new([(&k[..], huge, record)]).is_err());
    }

    #[test]
    fn a_damaged_dictionary_index_is_refused() {
        let (s, _) = sections(200);
        let layout = lay_out_text(&s).unwrap();
        let len = layout.term_dict.len() as u64;
        assert!(DictIndex::parse(&layout.dict_index, len).is_ok());
        assert!(DictIndex::parse(&layout.dict_index, len + 1).is_err(), "groups end where the section does");
        assert!(DictIndex::parse(&layout.dict_index[..layout.dict_index.len() - 1], len).is_err());
        let mut more = layout.dict_index.clone();
        more.push(0);
        assert!(DictIndex::parse(&more, len).is_err());
        let mut count = layout.dict_index.clone();
        count[4] ^= 1;
        assert!(DictIndex::parse(&count, len).is_err());
    }

    #[test]
    fn posting_lengths_round_trip_at_every_width() {
        for n in [1usize, 5, 127, 128, 129, 300] {
            for max in [0u32, 1, 7, 255, 65_536, u32::MAX] {
                let lengths: Vec<u32> =
                    (0..n as u32).map(|i| if max == 0 { 0 } else { i.wrapping_mul(2_654_435_761) % max }).collect();
                let mut bytes = Vec::new();
                encode_lengths(&lengths, &mut bytes);
                let mut back = Vec::new();
                decode_lengths(&bytes, n, &mut back).unwrap();
                assert_eq!(back, lengths, "{n} up to {max}");
                assert!(decode_lengths(&bytes[..bytes.len() - 1], n, &mut vec![]).is_none(), "cut short");
            }
        }
    }
}
