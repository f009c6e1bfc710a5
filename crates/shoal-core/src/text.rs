//! Full-text search of a collection: one text index per segment over the collection's `text`
//! (or `text_en`: English stems) payload fields (their values joined, in field-name order, into
//! one document per point), BM25 top-k with the request's filter and deadline (a hybrid request
//! fuses it with the vector ranking: `fusion.rs`).
//!
//! A sealed segment stores its text index as sections 48–52 (`docs/format.md`), built at seal
//! in the stored row order. The mutable segment's index is rebuilt when a batch is committed.
//! BM25 statistics (document count, frequencies, average length) are each segment's own, as
//! in Lucene's per-segment scoring: a point's score can change when it moves from the mutable
//! segment into a sealed one.

use alloc::string::String;
use core::ops::Range;

use serde_json::Value;
use shoal_format::SegmentReader;
use shoal_payload::Schema;
use shoal_text::{AnalyzerOptions, BuildOptions, IndexBuilder, Sections, TextIndex, kinds};

use crate::Error;
use crate::sections::bad;
use shoal_format::range_of;

/// Whether the schema declares a `text` field.
pub(crate) fn has_text(schema: &Schema) -> bool {
    schema.fields().any(|(_, t)| t.is_text())
}

/// Appends the indexed text of `doc`: every string value of every `text` / `text_en` field, in
/// field-name order, each followed by a line break.
pub(crate) fn doc_text(schema: &Schema, doc: &Value, out: &mut String) {
    let Some(obj) = doc.as_object() else { return };
    for (name, ty) in schema.fields() {
        if !ty.is_text() {
            continue;
        }
        let values = match obj.get(name) {
            Some(Value::Array(a)) => a.as_slice(),
            Some(v) => core::slice::from_ref(v),
            None => &[],
        };
        for v in values {
            if let Value::String(s) = v {
                out.push_str(s);
                out.push('\n');
            }
        }
    }
}

/// Builds the text sections of `docs` (document `i` is row `i`).
pub(crate) fn build<'d>(schema: &Schema, docs: impl Iterator<Item = &'d Value>) -> Sections {
    let mut b = TextBuilder::new(schema);
    docs.for_each(|d| b.push(d));
    b.finish()
}

/// Builds the text index of documents given one at a time, rows from 0.
pub(crate) struct TextBuilder<'s> {
    schema: &'s Schema,
    index: IndexBuilder,
    text: String,
    row: u32,
}

impl<'s> TextBuilder<'s> {
    pub(crate) fn new(schema: &'s Schema) -> TextBuilder<'s> {
        let analyzer = AnalyzerOptions { stem_english: schema.stems_english(), ..AnalyzerOptions::default() };
        TextBuilder {
            schema,
            index: IndexBuilder::new(BuildOptions { analyzer, ..BuildOptions::default() }),
            text: String::new(),
            row: 0,
        }
    }

    /// Adds the next row's document.
    pub(crate) fn push(&mut self, doc: &Value) {
        self.text.clear();
        doc_text(self.schema, doc, &mut self.text);
        // Rows ascend from 0 and stay below u32::MAX (the collection's capacity), and a
        // field count of 1 is what the builder was made for: `add` cannot fail.
        self.index.add(self.row, &[self.text.as_str()]).expect("rows ascend and fit in u32");
        self.row += 1;
    }

    pub(crate) fn finish(self) -> Sections {
        self.index.finish().expect("a collection's text index fits in the section limits")
    }
}

/// Opens an owned index (the mutable segment's).
pub(crate) fn open(s: &Sections) -> TextIndex<'_> {
    TextIndex::reopen(&s.meta, &s.dict, &s.postings, &s.positions, &s.doc_lengths)
        .expect("a freshly built text index opens")
}

const KINDS: [u32; 5] =
    [kinds::TEXT_META, kinds::TEXT_DICT, kinds::TEXT_POSTINGS, kinds::TEXT_POSITIONS, kinds::TEXT_DOC_LENGTHS];

/// `(kind, bytes)` of the text sections of a segment being written.
pub(crate) fn sections(s: &Sections) -> [(u32, &[u8]); 5] {
    [
        (KINDS[0], &s.meta[..]),
        (KINDS[1], &s.dict[..]),
        (KINDS[2], &s.postings[..]),
        (KINDS[3], &s.positions[..]),
        (KINDS[4], &s.doc_lengths[..]),
    ]
}

/// Where a sealed segment's five text sections lie.
#[derive(Clone, Debug)]
pub(crate) struct TextRanges([Range<usize>; 5]);

impl TextRanges {
    /// Finds and checks the text sections of a segment: all five or none, one document slot
    /// per row.
    pub(crate) fn open(reader: &SegmentReader<'_>, rows: usize) -> Result<Option<TextRanges>, Error> {
        let found = KINDS.map(|k| reader.section(k));
        if found.iter().all(Option::is_none) {
            return Ok(None);
        }
        let [Some(meta), Some(dict), Some(postings), Some(positions), Some(lengths)] = found else {
            return Err(bad("TEXT", "text sections 48-52 must be present together"));
        };
        let index = TextIndex::open(meta, dict, postings, positions, lengths).map_err(Error::Text)?;
        if index.meta().doc_slots as usize != rows || index.meta().field_count != 1 {
            return Err(bad("TEXT_META", "text documents differ from the segment rows"));
        }
        let base = reader.bytes();
        Ok(Some(TextRanges([meta, dict, postings, positions, lengths].map(|s| range_of(base, s)))))
    }

    /// The index over the segment's bytes (checked by [`TextRanges::open`]).
    pub(crate) fn index<'a>(&self, bytes: &'a [u8]) -> TextIndex<'a> {
        let [a, b, c, d, e] = self.0.clone();
        TextIndex::reopen(&bytes[a], &bytes[b], &bytes[c], &bytes[d], &bytes[e])
            .expect("the same bytes passed the same checks on open")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_text_joins_text_fields_in_name_order() {
        let schema = Schema::from_json(r#"{"title": "text", "body": "text", "tag": "keyword"}"#).unwrap();
        let mut out = String::new();
        doc_text(&schema, &serde_json::json!({"title": "T", "body": ["a", "b"], "tag": "k"}), &mut out);
        assert_eq!(out, "a\nb\nT\n");
        out.clear();
        doc_text(&schema, &Value::Null, &mut out);
        assert!(out.is_empty());
    }
}
