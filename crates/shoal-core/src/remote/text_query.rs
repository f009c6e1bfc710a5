//! What a format-2 segment read by ranges keeps of its text index and documents, and how one
//! segment's part of a text query runs: (1) the dictionary groups of the query's terms, (2)
//! the terms' records, then a search over those records with the set's statistics; the ids
//! and documents of hits come from memory (packed ids) or from their blocks.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::ops::Range;

use serde_json::Value;
use shoal_format::SegmentHead;
use shoal_text::{Analyzer, Clause, Query, SearchParams, TextIndex};

use super::docs::{
    DocDir, IdDir, KIND_PAYLOAD_DOC_BLOCKS, KIND_PAYLOAD_DOC_DIR, KIND_ROW_IDS, KIND_ROW_IDS_DIR, KIND_ROW_IDS_PACKED,
    PackedIds,
};
use super::text::{
    DictIndex, FetchedTerms, KIND_TEXT_DICT_INDEX, KIND_TEXT_TERM_DICT, KIND_TEXT_TERMS, TermEntry, find_in_group,
};
use super::{RangeCache, Step};
use crate::Error;
use crate::sections::bad;

/// The optional hot sections of format 2 a reader by ranges reads at open when present.
pub(super) const OPTIONAL_HOT: [u32; 6] = [
    shoal_payload::KIND_PAYLOAD_FIELDS,
    KIND_PAYLOAD_DOC_DIR,
    shoal_text::kinds::TEXT_META,
    KIND_TEXT_DICT_INDEX,
    KIND_ROW_IDS_DIR,
    KIND_ROW_IDS_PACKED,
];

/// A segment's text index read by ranges: `TEXT_META`, the dictionary index, where the
/// dictionary groups and the records lie, and the ids by row.
#[derive(Debug)]
pub(super) struct TextHot {
    meta: Vec<u8>,
    index: DictIndex,
    /// `TEXT_TERM_DICT`'s offset and `TEXT_TERMS`' range in the file.
    dict: u64,
    terms: Range<u64>,
    ids: Ids,
}

/// Where a text hit's point id comes from.
#[derive(Debug)]
enum Ids {
    /// Hot, packed.
    Packed(PackedIds),
    /// `ROW_IDS` blocks (at this offset), their CRCs hot.
    Blocks(IdDir, u64),
}

/// A segment's documents read by ranges: their directory and where the blocks lie.
#[derive(Debug)]
pub(super) struct DocsHot {
    dir: DocDir,
    at: u64,
}

/// One key of a text query: the field byte (0) and the term, and whether a phrase reads its
/// positions.
pub(super) type Key = (Vec<u8>, bool);

/// The distinct keys of `query`'s terms, ascending, each with positions when any phrase holds it.
pub(super) fn query_keys(query: &Query) -> Vec<Key> {
    let mut keys: Vec<Key> = Vec::new();
    for clauses in [&query.must, &query.should, &query.must_not] {
        for c in clauses {
            let phrase = matches!(c, Clause::Phrase(_));
            for (t, _) in c.terms() {
                let mut key = alloc::vec![0u8];
                key.extend_from_slice(t.as_bytes());
                keys.push((key, phrase));
            }
        }
    }
    keys.sort();
    // Sorted by (key, phrase): the last of equal keys says whether any is a phrase's.
    keys.reverse();
    keys.dedup_by(|b, a| a.0 == b.0);
    keys.reverse();
    keys
}

/// The text and document sections of a format-2 segment, from its hot sections (`section`
/// gives a hot section's bytes, checked).
pub(super) fn open_hot<'c>(
    head: &SegmentHead,
    rows: usize,
    section: &dyn Fn(u32) -> Result<&'c [u8], Error>,
) -> Result<(Option<TextHot>, Option<DocsHot>), Error> {
    let entry = |k: u32| head.entry(k);
    let docs = match (entry(KIND_PAYLOAD_DOC_DIR), entry(KIND_PAYLOAD_DOC_BLOCKS)) {
        (None, None) => None,
        (Some(_), Some(b)) => {
            Some(DocsHot { dir: DocDir::parse(section(KIND_PAYLOAD_DOC_DIR)?, rows, b.length)?, at: b.offset })
        }
        _ => return Err(bad("PAYLOAD_DOC_DIR", "present without PAYLOAD_DOC_BLOCKS, or the other way round")),
    };
    let kinds = [shoal_text::kinds::TEXT_META, KIND_TEXT_DICT_INDEX, KIND_TEXT_TERM_DICT, KIND_TEXT_TERMS];
    let found = kinds.map(entry);
    let id_kinds = [KIND_ROW_IDS_DIR, KIND_ROW_IDS, KIND_ROW_IDS_PACKED].map(entry);
    if found.iter().chain(&id_kinds).all(Option::is_none) {
        return Ok((None, docs));
    }
    let [Some(_), Some(_), Some(dict), Some(terms)] = found else {
        return Err(bad("TEXT_META", "text sections 48 and 53-55 must be present together"));
    };
    let ids = match id_kinds {
        [None, None, Some(_)] => Ids::Packed(PackedIds::parse(section(KIND_ROW_IDS_PACKED)?, rows)?),
        [Some(_), Some(ids), None] => {
            Ids::Blocks(IdDir::parse(section(KIND_ROW_IDS_DIR)?, rows, ids.length)?, ids.offset)
        }
        _ => return Err(bad("ROW_IDS_DIR", "a text index needs its ids: kinds 66 and 67, or 68")),
    };
    let meta = section(shoal_text::kinds::TEXT_META)?.to_vec();
    let index = DictIndex::parse(section(KIND_TEXT_DICT_INDEX)?, dict.length)?;
    let terms = terms.offset..terms.offset.checked_add(terms.length).ok_or_else(|| bad("TEXT_TERMS", "past 2^64"))?;
    let text = TextHot { index, dict: dict.offset, terms, ids, meta };
    // The meta alone, checked as an index's: one field, a document per row.
    let none = FetchedTerms::new(core::iter::empty())?;
    let index = none.index(&text.meta)?;
    let m = index.meta();
    if m.doc_slots as usize != rows || m.field_count != 1 {
        return Err(bad("TEXT_META", "text documents differ from the segment rows"));
    }
    Ok((Some(text), docs))
}

impl TextHot {
    /// The analyser the index was built with.
    pub(super) fn analyzer(&self) -> Result<Analyzer, Error> {
        let none = FetchedTerms::new(core::iter::empty())?;
        Ok(none.index(&self.meta)?.analyzer())
    }

    /// `N` and `total_len` of this segment's index.
    pub(super) fn stats(&self) -> Result<(u64, u64), Error> {
        let none = FetchedTerms::new(core::iter::empty())?;
        let index = none.index(&self.meta)?;
        Ok((u64::from(index.meta().doc_count), index.meta().total_len.first().copied().unwrap_or(0)))
    }

    /// The dictionary entries of `keys` (`None` for a term the segment lacks) once their
    /// groups and records are fetched: wave 1 the groups, wave 2 the records.
    pub(super) fn entries(&self, keys: &[Key], cache: &RangeCache) -> Result<Step<Vec<Option<TermEntry>>>, Error> {
        let groups: Vec<Option<usize>> = keys.iter().map(|(k, _)| self.index.group_of(k)).collect();
        let file = |r: Range<u64>, base: u64| base + r.start..base + r.end;
        let missing: Vec<Range<u64>> = groups
            .iter()
            .flatten()
            .map(|&g| file(self.index.group(g).0, self.dict))
            .filter(|r| !cache.contains(r))
            .collect();
        if !missing.is_empty() {
            return Ok(Step::Fetch(missing));
        }
        let mut entries = Vec::with_capacity(keys.len());
        for ((key, _), g) in keys.iter().zip(&groups) {
            let Some(g) = *g else {
                entries.push(None);
                continue;
            };
            let (range, crc) = self.index.group(g);
            let bytes = cache.get(file(range, self.dict)).expect("fetched");
            super::check_block(bytes, crc, "TEXT_TERM_DICT", KIND_TEXT_TERM_DICT)?;
            entries.push(find_in_group(bytes, key)?);
        }
        let mut missing: Vec<Range<u64>> = Vec::new();
        for ((_, phrase), e) in keys.iter().zip(&entries) {
            if let Some(e) = e {
                let r = self.record(e, *phrase)?;
                if r.start < r.end && !cache.contains(&r) {
                    missing.push(r);
                }
            }
        }
        if !missing.is_empty() {
            return Ok(Step::Fetch(missing));
        }
        Ok(Step::Done(entries))
    }

    /// Where `e`'s record (with positions when `phrase`) lies in the file: an error when a
    /// (damaged or crafted) entry points outside `TEXT_TERMS`.
    fn record(&self, e: &TermEntry, phrase: bool) -> Result<Range<u64>, Error> {
        in_section(&self.terms, e.range(phrase))
    }

    /// Searches the fetched records of `keys` (their `entries`) with `query` and `params`: the
    /// search of the whole index, bit for bit.
    pub(super) fn search(
        &self,
        keys: &[Key],
        entries: &[Option<TermEntry>],
        cache: &RangeCache,
        query: &Query,
        params: &SearchParams<'_>,
    ) -> Result<shoal_text::SearchResult, Error> {
        let mut found = Vec::new();
        for ((key, phrase), e) in keys.iter().zip(entries) {
            if let Some(e) = e {
                let r = self.record(e, *phrase)?;
                let record = cache.get(r).unwrap_or(&[]);
                found.push((key.as_slice(), *e, record));
            }
        }
        let fetched = FetchedTerms::new(found)?;
        let index: TextIndex<'_> = fetched.index(&self.meta)?;
        index.search(0, query, params).map_err(Error::Text)
    }

    /// The id of `row`: hot, or from its `ROW_IDS` block when fetched (`Err(range)`: fetch
    /// that block first).
    pub(super) fn id(&self, row: usize, cache: &RangeCache) -> Result<Result<u64, Range<u64>>, Error> {
        match &self.ids {
            Ids::Packed(p) => Ok(Ok(p.id(row))),
            Ids::Blocks(dir, at) => {
                let r = dir.range(row);
                let r = at + r.start..at + r.end;
                match cache.get(r.clone()) {
                    Some(block) => Ok(Ok(dir.id(row, block)?)),
                    None => Ok(Err(r)),
                }
            }
        }
    }
}

impl DocsHot {
    /// The block holding `row`, in the file.
    pub(super) fn range(&self, row: usize) -> Range<u64> {
        let r = self.dir.range(self.dir.block_of(row));
        self.at + r.start..self.at + r.end
    }

    /// The document of `row` when its block is fetched.
    pub(super) fn document(&self, row: usize, cache: &RangeCache) -> Result<Option<Value>, Error> {
        cache.get(self.range(row)).map(|b| self.dir.document(row, b)).transpose()
    }
}

/// The set's document frequency of each key: the sum of the segments' (`entries[s][i]` is
/// segment `s`'s entry of its key `keys[s][i]`).
pub(super) fn doc_freqs(keys: &[Vec<Key>], entries: &[Vec<Option<TermEntry>>]) -> BTreeMap<Vec<u8>, u64> {
    let mut df = BTreeMap::new();
    for (ks, es) in keys.iter().zip(entries) {
        for ((k, _), e) in ks.iter().zip(es) {
            *df.entry(k.clone()).or_insert(0) += e.map_or(0, |e| u64::from(e.doc_freq));
        }
    }
    df
}

/// `r` (from the start of the section at `section`) in the file: an error when it does not lie
/// inside the section.
fn in_section(section: &Range<u64>, r: Range<u64>) -> Result<Range<u64>, Error> {
    let len = section.end - section.start;
    if r.start > r.end || r.end > len {
        return Err(bad("TEXT_TERM_DICT", "a term's record outside TEXT_TERMS"));
    }
    Ok(section.start + r.start..section.start + r.end)
}

#[cfg(test)]
mod tests {
    use super::in_section;

    #[test]
    fn a_record_outside_its_section_is_an_error() {
        let terms = 1000..1600;
        assert_eq!(in_section(&terms, 0..600).unwrap(), 1000..1600);
        assert_eq!(in_section(&terms, 64..64).unwrap(), 1064..1064);
        for r in [0..601, 590..u64::MAX, 700..800] {
            assert_eq!(in_section(&terms, r.clone()).unwrap_err().code(), "bad_segment", "{r:?}");
        }
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 10..5;
        assert!(in_section(&terms, backwards).is_err());
    }
}
