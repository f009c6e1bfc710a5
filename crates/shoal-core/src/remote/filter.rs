//! Filters over a format-2 segment read by ranges (`docs/format.md`, "Filters, v2"): the
//! v1 payload sections 33–35, cut by field by a hot directory (kind 39), so that a filter
//! fetches the array tables and the fields it names, checked, and runs over a payload view of
//! those fields exactly as a local filter runs.

use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::{AlignedBytes, SegmentHead, crc32c};
use shoal_payload::{
    Condition, Filter, KIND_PAYLOAD_COLUMNS, KIND_PAYLOAD_DICTS, KIND_PAYLOAD_POSTINGS, PayloadSectionBytes,
    PayloadSections, PayloadView, Schema,
};

use super::{RangeCache, check_block};
use crate::Error;
use crate::sections::bad;

/// `PAYLOAD_FILTER_DIR`: where each field's part of the payload sections 33–35 lies.
pub const KIND_PAYLOAD_FILTER_DIR: u32 = 39;

/// The three sections a filter reads, in the directory's order.
const KINDS: [u32; 3] = [KIND_PAYLOAD_COLUMNS, KIND_PAYLOAD_DICTS, KIND_PAYLOAD_POSTINGS];

/// One field's part of one section: its offset from the section's start, length and CRC.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Span {
    offset: u64,
    length: u32,
    crc: u32,
}

/// `PAYLOAD_FILTER_DIR`'s bytes for the built payload sections `built`: see the module.
pub(super) fn lay_out_filter_dir(built: &PayloadSections) -> Result<Vec<u8>, Error> {
    let aligned = built.to_aligned();
    let (tables, spans) =
        PayloadView::field_spans(&aligned.bytes()).map_err(|_| bad("PAYLOAD_COLUMNS", "a table that does not open"))?;
    let sections = [&built.columns, &built.dicts, &built.postings];
    let mut out = Vec::new();
    out.extend_from_slice(&(spans.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for (t, s) in tables.iter().zip(sections) {
        out.extend_from_slice(&(*t as u32).to_le_bytes());
        out.extend_from_slice(&crc32c(&s[..*t as usize]).to_le_bytes());
    }
    for field in &spans {
        for (r, s) in field.iter().zip(sections) {
            let length = u32::try_from(r.end - r.start)
                .map_err(|_| Error::Unsupported("a field's payload index over 4 GiB in a format-2 segment"))?;
            out.extend_from_slice(&r.start.to_le_bytes());
            out.extend_from_slice(&length.to_le_bytes());
            out.extend_from_slice(&crc32c(&s[r.start as usize..r.end as usize]).to_le_bytes());
        }
    }
    Ok(out)
}

/// What a segment keeps in memory to read its filter index by ranges.
#[derive(Debug)]
pub(super) struct FilterHot {
    /// `PAYLOAD_FIELDS`, as read at open (aligned: a payload view reads it in place).
    fields: AlignedBytes,
    /// The segment's own schema (from `PAYLOAD_FIELDS`).
    schema: Schema,
    /// Each section's offset and length in the file, its table's length and CRC.
    sections: [(u64, u64, u32, u32); 3],
    /// Per field (schema order), its span in each section.
    spans: Vec<[Span; 3]>,
}

/// The filter index of some fields, read: each of the three sections laid out anew with its
/// table and those fields' spans only (`FilterHot::compact`).
pub(super) struct FilterBytes {
    sections: [AlignedBytes; 3],
}

impl FilterHot {
    /// Parses the directory (`dir`) against the table (`head`) and the fields section; `None`
    /// when the segment has no filter index (no kind 39: written before filters by ranges, or
    /// without payloads).
    pub(super) fn open(
        head: &SegmentHead,
        fields: Option<&[u8]>,
        dir: Option<&[u8]>,
    ) -> Result<Option<FilterHot>, Error> {
        let entries = KINDS.map(|k| head.entry(k));
        let (Some(dir), Some(fields)) = (dir, fields) else {
            if dir.is_some() || entries.iter().any(Option::is_some) {
                return Err(bad("PAYLOAD_FILTER_DIR", "payload sections 32-35 and 39 must be present together"));
            }
            return Ok(None);
        };
        let [Some(c), Some(d), Some(p)] = entries else {
            return Err(bad("PAYLOAD_FILTER_DIR", "payload sections 32-35 and 39 must be present together"));
        };
        let nested = head.header.flags & shoal_format::FLAG_NESTED_PAYLOAD != 0;
        let schema = shoal_payload::schema_of_fields(fields, nested).map_err(|e| {
            Error::Format(shoal_format::FormatError::Malformed(match e {
                shoal_payload::LayoutError::Malformed { reason, .. } => reason,
                _ => "PAYLOAD_FIELDS does not open",
            }))
        })?;
        let malformed = |why| bad("PAYLOAD_FILTER_DIR", why);
        let word = |i: usize| -> Result<u32, Error> {
            dir.get(i..i + 4).map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes"))).ok_or(malformed("truncated"))
        };
        let n = word(0)? as usize;
        if n != schema.len() || word(4)? != 0 {
            return Err(malformed("a field count that is not the schema's, or reserved bytes not zero"));
        }
        if dir.len() as u64 != 32 + n as u64 * 48 {
            return Err(malformed("a length that is not 32 + 48 bytes per field"));
        }
        let mut sections = [(0u64, 0u64, 0u32, 0u32); 3];
        for (i, e) in [c, d, p].into_iter().enumerate() {
            let (table_len, crc) = (word(8 + i * 8)?, word(12 + i * 8)?);
            if table_len < 16 || u64::from(table_len) > e.length {
                return Err(malformed("a table shorter than its header, or past its section"));
            }
            sections[i] = (e.offset, e.length, table_len, crc);
        }
        let mut spans = Vec::with_capacity(n);
        for f in 0..n {
            let mut field = [Span { offset: 0, length: 0, crc: 0 }; 3];
            for (s, span) in field.iter_mut().enumerate() {
                let at = 32 + (f * 3 + s) * 16;
                let offset = u64::from(word(at)?) | u64::from(word(at + 4)?) << 32;
                let (length, crc) = (word(at + 8)?, word(at + 12)?);
                if offset.checked_add(u64::from(length)).is_none_or(|end| end > sections[s].1) {
                    return Err(malformed("a field's span past its section"));
                }
                *span = Span { offset, length, crc };
            }
            spans.push(field);
        }
        Ok(Some(FilterHot { fields: AlignedBytes::from_slice(fields), schema, sections, spans }))
    }

    /// The segment's schema.
    pub(super) fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The ranges of the file a filter over `fields` (indexes in the segment's schema) reads:
    /// the three tables and those fields' spans.
    fn ranges<'s>(&'s self, fields: &'s [usize]) -> impl Iterator<Item = Range<u64>> + 's {
        let tables = self.sections.iter().map(|&(at, _, len, _)| at..at + u64::from(len));
        let spans = fields.iter().flat_map(move |&f| {
            self.spans[f]
                .iter()
                .zip(&self.sections)
                .filter(|(s, _)| s.length > 0)
                .map(|(s, &(at, ..))| at + s.offset..at + s.offset + u64::from(s.length))
        });
        tables.chain(spans)
    }

    /// The segment's fields that `filter` names (indexes in its schema; a key the segment
    /// does not have names none).
    pub(super) fn named(&self, filter: &Filter) -> Vec<usize> {
        let mut out = Vec::new();
        keys(filter, &mut |k| {
            if let Some((i, _)) = self.schema.field(k) {
                out.push(i);
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The filter index of `fields` from `cache`, each piece checked against its CRC, or the
    /// ranges it lacks.
    pub(super) fn fetch(
        &self,
        fields: &[usize],
        cache: &RangeCache,
    ) -> Result<Result<FilterBytes, Vec<Range<u64>>>, Error> {
        let lacking: Vec<Range<u64>> = self.ranges(fields).filter(|r| r.start < r.end && !cache.contains(r)).collect();
        if !lacking.is_empty() {
            return Ok(Err(lacking));
        }
        let mut sections: Vec<AlignedBytes> = Vec::with_capacity(3);
        for (s, &(at, _, table_len, crc)) in self.sections.iter().enumerate() {
            let table = cache.get(at..at + u64::from(table_len)).expect("checked above");
            check_block(table, crc, "PAYLOAD_FILTER_DIR", KINDS[s])?;
            sections.push(self.compact(s, table, fields, cache)?);
        }
        let [columns, dicts, postings]: [AlignedBytes; 3] = sections.try_into().expect("three sections");
        Ok(Ok(FilterBytes { sections: [columns, dicts, postings] }))
    }

    /// Section `s` for a view of `fields`: its array table (`table`, checked), then those fields'
    /// spans from `cache` (each checked against its CRC) one after another, the table's entries
    /// moved to where the spans now lie and every other field's emptied — so what a view reads
    /// is only checked bytes, and the buffer is the size of what was fetched. Every array of a
    /// field must lie inside its span (else the directory and the table disagree: an error).
    fn compact(&self, s: usize, table: &[u8], fields: &[usize], cache: &RangeCache) -> Result<AlignedBytes, Error> {
        let wrong = || bad("PAYLOAD_FILTER_DIR", "an array table that does not match the directory");
        let word = |i: usize| u32::from_le_bytes(table[i..i + 4].try_into().expect("4 bytes"));
        let (groups, arrays) = (word(8) as usize, word(12) as usize);
        let entries =
            groups.checked_mul(arrays).filter(|&e| groups == self.spans.len() && e <= 1 << 16).ok_or_else(wrong)?;
        if table.len() != 16 + entries * 16 {
            return Err(wrong());
        }
        // Where each wanted field's span goes (`None`: not wanted).
        let mut base: Vec<Option<u64>> = alloc::vec![None; groups];
        let mut size = shoal_format::align_up(table.len() as u64);
        for &f in fields {
            base[f] = Some(size);
            size = shoal_format::align_up(size + u64::from(self.spans[f][s].length));
        }
        let mut out = AlignedBytes::zeroed(usize::try_from(size).map_err(|_| wrong())?);
        let buf = out.as_mut_slice();
        buf[..16].copy_from_slice(&table[..16]);
        for (g, &at_base) in base.iter().enumerate() {
            let Some(at_base) = at_base else { continue }; // (entries left zero: empty arrays)
            let span = self.spans[g][s];
            for a in 0..arrays {
                let e = 16 + (g * arrays + a) * 16;
                let off = u64::from_le_bytes(table[e..e + 8].try_into().expect("8 bytes"));
                let len = u64::from_le_bytes(table[e + 8..e + 16].try_into().expect("8 bytes"));
                if len == 0 {
                    continue;
                }
                let end = span.offset + u64::from(span.length);
                if off < span.offset || off.checked_add(len).is_none_or(|x| x > end) {
                    return Err(wrong());
                }
                buf[e..e + 8].copy_from_slice(&(at_base + off - span.offset).to_le_bytes());
                buf[e + 8..e + 16].copy_from_slice(&len.to_le_bytes());
            }
            if span.length > 0 {
                let at = self.sections[s].0 + span.offset;
                let bytes = cache.get(at..at + u64::from(span.length)).expect("checked by the caller");
                check_block(bytes, span.crc, "PAYLOAD_FILTER_DIR", KINDS[s])?;
                let b = at_base as usize;
                buf[b..b + bytes.len()].copy_from_slice(bytes);
            }
        }
        Ok(out)
    }

    /// A payload view of `fields` over `bytes` (as [`fetch`](Self::fetch)ed for them).
    pub(super) fn view<'a>(
        &'a self,
        bytes: &'a FilterBytes,
        rows: usize,
        fields: &[usize],
    ) -> Result<PayloadView<'a>, Error> {
        let names: Vec<&str> = self.schema.fields().map(|(n, _)| n).collect();
        let wanted = |name: &str| fields.iter().any(|&f| names[f] == name);
        let [columns, dicts, postings] = &bytes.sections;
        let s = PayloadSectionBytes {
            fields: self.fields.as_slice(),
            columns: columns.as_slice(),
            dicts: dicts.as_slice(),
            postings: postings.as_slice(),
            docs: &[],
        };
        PayloadView::open_fields(s, rows as u32, &wanted)
            .map_err(|e| Error::Format(shoal_format::FormatError::Malformed(layout_reason(&e))))
    }
}

/// A short reason for a payload layout error (the format error carries a static string).
fn layout_reason(e: &shoal_payload::LayoutError) -> &'static str {
    match e {
        shoal_payload::LayoutError::Malformed { reason, .. } => reason,
        _ => "a payload section of the filter index does not open",
    }
}

/// Calls `f` with every condition of `filter`, nested ones (inside inner filters and
/// `nested`) included.
fn each_condition(filter: &Filter, f: &mut dyn FnMut(&Condition)) {
    for c in filter.conditions() {
        f(c);
        if let Condition::Filter(inner) | Condition::Nested { filter: inner, .. } = c {
            each_condition(inner, f);
        }
    }
}

/// Calls `f` with every field key `filter` names (`has_id` names none).
pub(super) fn keys(filter: &Filter, f: &mut dyn FnMut(&str)) {
    each_condition(filter, &mut |c| match c {
        Condition::Field { key, .. }
        | Condition::IsEmpty(key)
        | Condition::IsNull(key)
        | Condition::Nested { key, .. } => f(key),
        Condition::Filter(_) | Condition::HasId(_) => {}
    });
}

/// Whether `filter` holds a `has_id` condition anywhere.
pub(super) fn has_id(filter: &Filter) -> bool {
    let mut found = false;
    each_condition(filter, &mut |c| found |= matches!(c, Condition::HasId(_)));
    found
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use shoal_format::{SegmentHead, SegmentWriter};
    use shoal_payload::{PayloadBuilder, Schema};

    fn built() -> PayloadSections {
        let schema = Schema::from_json(r#"{"tag": "keyword", "n": "integer"}"#).unwrap();
        let mut b = PayloadBuilder::new(schema);
        for i in 0..300 {
            let doc = if i % 7 == 3 {
                alloc::format!(r#"{{"tag": "t{}", "n": null}}"#, i % 4)
            } else {
                alloc::format!(r#"{{"tag": "t{}", "n": {}}}"#, i % 4, i)
            };
            b.push_str(&doc).unwrap();
        }
        b.finish()
    }

    /// A file of sections 32-35 and 39 (`dir` edited by `edit`), its head.
    fn file(built: &PayloadSections, edit: &dyn Fn(&mut Vec<u8>)) -> (Vec<u8>, SegmentHead) {
        let mut dir = lay_out_filter_dir(built).unwrap();
        edit(&mut dir);
        let mut w = SegmentWriter::new();
        w.add_section(shoal_payload::KIND_PAYLOAD_FIELDS, 0, &built.fields);
        w.add_section(KIND_PAYLOAD_FILTER_DIR, 0, &dir);
        w.add_section(KIND_PAYLOAD_COLUMNS, 0, &built.columns);
        w.add_section(KIND_PAYLOAD_DICTS, 0, &built.dicts);
        w.add_section(KIND_PAYLOAD_POSTINGS, 0, &built.postings);
        let bytes = w.finish();
        let head = SegmentHead::read(AlignedBytes::from_slice(&bytes).as_slice()).unwrap();
        (bytes, head)
    }

    fn hot(bytes: &[u8], head: &SegmentHead) -> FilterHot {
        let sec = |k: u32| {
            let e = head.entry(k).unwrap();
            &bytes[e.offset as usize..(e.offset + e.length) as usize]
        };
        FilterHot::open(head, Some(sec(32)), Some(sec(KIND_PAYLOAD_FILTER_DIR))).unwrap().unwrap()
    }

    /// Drives `fetch` to its bytes, filling the cache from `bytes`.
    fn fetched(h: &FilterHot, fields: &[usize], bytes: &[u8]) -> Result<FilterBytes, Error> {
        let mut cache = RangeCache::new(u64::MAX);
        loop {
            match h.fetch(fields, &cache)? {
                Ok(b) => return Ok(b),
                Err(lacking) => {
                    for r in super::super::coalesce(&lacking, 0) {
                        let end = (r.end as usize).min(bytes.len());
                        cache.insert(r.start, &bytes[r.start as usize..end]);
                    }
                }
            }
        }
    }

    #[test]
    fn the_fields_named_answer_as_the_whole_view() {
        let b = built();
        let (bytes, head) = file(&b, &|_| {});
        let h = hot(&bytes, &head);
        let filter = Filter::from_json(r#"{"must": [{"is_null": {"key": "n"}}]}"#).unwrap();
        let named = h.named(&filter);
        let fb = fetched(&h, &named, &bytes).unwrap();
        let view = h.view(&fb, 300, &named).unwrap();
        let got = view.compile(&filter, &|_| None).unwrap().matching_points().to_rows();
        let whole = b.to_aligned();
        let wv = whole.view().unwrap();
        let want = wv.compile(&filter, &|_| None).unwrap().matching_points().to_rows();
        assert_eq!(got, want);
        assert!(!want.is_empty());
    }

    /// A directory whose `table_len` is 0 (the CRC of nothing: 0) is refused at open.
    #[test]
    fn a_table_shorter_than_its_header_is_refused() {
        let b = built();
        let (bytes, head) = file(&b, &|dir| {
            dir[8..12].copy_from_slice(&0u32.to_le_bytes());
            dir[12..16].copy_from_slice(&0u32.to_le_bytes());
        });
        let sec = |k: u32| {
            let e = head.entry(k).unwrap();
            &bytes[e.offset as usize..(e.offset + e.length) as usize]
        };
        let err = FilterHot::open(&head, Some(sec(32)), Some(sec(KIND_PAYLOAD_FILTER_DIR))).unwrap_err();
        assert_eq!(err.code(), "bad_segment", "{err}");
    }

    /// A directory whose span for field `n` in PAYLOAD_COLUMNS stops before its last array
    /// (its CRC recomputed over what it names): an error, never zeros read as its data.
    #[test]
    fn a_span_shorter_than_its_arrays_is_an_error() {
        let b = built();
        let aligned = b.to_aligned();
        let (_, spans) = PayloadView::field_spans(&aligned.bytes()).unwrap();
        // Field 0 is `n` (sorted by name: n < tag). Its columns span; cut the last 64-byte piece.
        let sp = spans[0][0].clone();
        let cut = (sp.end - 1) / 64 * 64;
        assert!(cut > sp.start);
        let crc = crc32c(&b.columns[sp.start as usize..cut as usize]);
        let (bytes, head) = file(&b, &|dir| {
            let at = 32; // field 0, section 0
            dir[at + 8..at + 12].copy_from_slice(&((cut - sp.start) as u32).to_le_bytes());
            dir[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
        });
        let h = hot(&bytes, &head);
        let filter = Filter::from_json(r#"{"must": [{"is_null": {"key": "n"}}]}"#).unwrap();
        let err = fetched(&h, &h.named(&filter), &bytes).map(|_| ()).unwrap_err();
        assert_eq!(err.code(), "bad_segment", "{err}");
        // The other field, whose span is right, still reads.
        let other = Filter::from_json(r#"{"must": [{"key": "tag", "match": {"value": "t1"}}]}"#).unwrap();
        let named = h.named(&other);
        let fb = fetched(&h, &named, &bytes).unwrap();
        let rows = h.view(&fb, 300, &named).unwrap().compile(&other, &|_| None).unwrap().matching_points().count();
        assert_eq!(rows, 75);
    }

    /// A named field whose span the directory gives as empty while its table lists arrays: an
    /// error at once (not arrays quietly emptied).
    #[test]
    fn an_empty_span_for_arrays_is_an_error() {
        let b = built();
        for section in 0..3 {
            let (bytes, head) = file(&b, &|dir| {
                let at = 32 + section * 16; // field 0 (`n`), this section
                dir[at + 8..at + 16].copy_from_slice(&[0; 8]);
            });
            let h = hot(&bytes, &head);
            let filter = Filter::from_json(r#"{"must": [{"key": "n", "range": {"lt": 5}}]}"#).unwrap();
            let named = h.named(&filter);
            let mut cache = RangeCache::new(u64::MAX);
            let err = loop {
                match h.fetch(&named, &cache) {
                    Err(e) => break e,
                    Ok(Ok(_)) => panic!("section {section}: an empty span for arrays was accepted"),
                    Ok(Err(lacking)) => {
                        for r in lacking {
                            cache.insert(r.start, &bytes[r.start as usize..(r.end as usize).min(bytes.len())]);
                        }
                    }
                }
            };
            assert_eq!(err.code(), "bad_segment", "section {section}: {err}");
        }
    }

    /// A section length far beyond what is fetched (as a hostile head may say): the buffers are
    /// the size of the fetched parts, and the answer is right.
    #[test]
    fn buffers_are_the_size_of_what_was_fetched() {
        let b = built();
        let (bytes, head) = file(&b, &|_| {});
        let mut h = hot(&bytes, &head);
        h.sections[0].1 = 1 << 50;
        let filter = Filter::from_json(r#"{"must": [{"key": "n", "range": {"lt": 5}}]}"#).unwrap();
        let named = h.named(&filter);
        let fb = fetched(&h, &named, &bytes).unwrap();
        let held: usize = fb.sections.iter().map(|s| s.as_slice().len()).sum();
        assert!(held < b.columns.len() + b.dicts.len() + b.postings.len(), "{held} bytes held");
        let rows = h.view(&fb, 300, &named).unwrap().compile(&filter, &|_| None).unwrap().matching_points().count();
        assert_eq!(rows, 4, "rows 0, 1, 2 and 4 (row 3's n is null)");
    }
}
