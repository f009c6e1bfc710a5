//! Full-text search of a collection: one text index per segment over the collection's `text`
//! (or `text_en`: English stems) payload fields (their values joined, in field-name order, into
//! one document per point), BM25 top-k with the request's filter and deadline, and fusion of a
//! vector ranking and a text ranking for hybrid requests (reciprocal rank or weighted scores).
//!
//! A sealed segment stores its text index as sections 48–52 (`docs/format.md`), built at seal
//! in the stored row order. The mutable segment's index is rebuilt when a batch is committed.
//! BM25 statistics (document count, frequencies, average length) are each segment's own, as
//! in Lucene's per-segment scoring: a point's score can change when it moves from the mutable
//! segment into a sealed one.

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use serde_json::Value;
use shoal_format::{PointId, SegmentReader};
use shoal_payload::Schema;
use shoal_text::{AnalyzerOptions, BuildOptions, IndexBuilder, Sections, TextIndex, kinds};

use crate::Error;
use crate::mutable::IdMap;
use crate::sections::bad;
use hashbrown::hash_map::Entry;
use shoal_format::range_of;
use shoal_index::order::{f32_key, f32_of};

/// Constant `k` of reciprocal rank fusion: a result at rank `r` (from 1) of a ranking adds
/// `1 / (RRF_K + r)` to its fused score (Cormack et al., 2009).
pub const RRF_K: f32 = 60.0;

/// Each ranking fused by a hybrid request holds at least this many results (more when
/// `offset + limit` is larger).
pub const FUSION_DEPTH: usize = 100;

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

/// How a hybrid request fuses its two rankings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fusion {
    /// Reciprocal rank fusion: `1 / (RRF_K + rank)` per ranking.
    Rrf,
    /// Weighted score fusion: each ranking's scores scaled to 0..=1 by its best and worst
    /// (the best 1; all 1 when they are equal), the vector ranking's weighted by `alpha` and
    /// the text ranking's by `1 - alpha`.
    Weighted { alpha: f32 },
}

/// Fuses two rankings (best first, `(id, score)`; `vector_lower_is_better` for squared L2
/// distances): every id's fused score is the sum, vector term first, of its terms under
/// `fusion` over the rankings that hold it. Best first; ties by the better of the two ranks,
/// then by ascending id. Returns `(id, fused score)`. Each ranking holds at most
/// [`MAX_LIMIT`](crate::MAX_LIMIT) results.
pub(crate) fn fuse(
    fusion: Fusion,
    vector: &[(PointId, f32)],
    vector_lower_is_better: bool,
    text: &[(PointId, f32)],
) -> Vec<(PointId, f32)> {
    // (id, score, best rank), in order of first appearance; `at` finds an id's entry.
    let mut fused: Vec<(PointId, f32, u32)> = Vec::with_capacity(vector.len() + text.len());
    let mut at = IdMap::default();
    for (list, ranking) in [vector, text].into_iter().enumerate() {
        let (lower_is_better, weight) = match fusion {
            Fusion::Rrf => (false, 1.0),
            Fusion::Weighted { alpha } if list == 0 => (vector_lower_is_better, alpha),
            Fusion::Weighted { alpha } => (false, 1.0 - alpha),
        };
        // Scores made finite (NaN as the worst, infinities as ±f32::MAX) and scaled in f64, so
        // that no overflow or NaN — whose sign differs between CPUs — reaches the order.
        let worst = if lower_is_better { f32::MAX } else { -f32::MAX };
        let finite = |s: f32| f64::from(if s.is_nan() { worst } else { s.clamp(-f32::MAX, f32::MAX) });
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(_, s) in ranking {
            lo = lo.min(finite(s));
            hi = hi.max(finite(s));
        }
        for (i, &(id, s)) in ranking.iter().enumerate() {
            let rank = i as u32 + 1;
            let s = finite(s);
            let term = match fusion {
                Fusion::Rrf => 1.0 / (RRF_K + rank as f32),
                _ if hi <= lo => weight,
                _ if lower_is_better => weight * ((hi - s) / (hi - lo)) as f32,
                _ => weight * ((s - lo) / (hi - lo)) as f32,
            };
            match at.entry(id) {
                Entry::Occupied(e) => {
                    let f = &mut fused[*e.get() as usize];
                    f.1 += term;
                    f.2 = f.2.min(rank);
                }
                Entry::Vacant(e) => {
                    e.insert(fused.len() as u32);
                    fused.push((id, term, rank));
                }
            }
        }
    }
    // The order as one integer per entry: the score (descending) in the high half; below it
    // the best rank (< 2^17: a ranking holds at most MAX_LIMIT results) and the entry's place
    // among the ids in ascending order (< 2^15: at most 2 x MAX_LIMIT entries). One integer
    // sort (shared in the wasm build) instead of a comparator's own sort routine.
    debug_assert!(fused.len() <= 0x7FFF && vector.len().max(text.len()) < 1 << 17);
    let mut ids: Vec<PointId> = fused.iter().map(|f| f.0).collect();
    crate::ids::sort_ids(&mut ids);
    let mut keys: Vec<u64> = fused
        .iter()
        .map(|&(id, score, rank)| {
            let place = ids.binary_search(&id).unwrap_or(0) as u64;
            u64::from(!f32_key(score)) << 32 | u64::from(rank) << 15 | place
        })
        .collect();
    shoal_format::sort_u64(&mut keys);
    keys.iter().map(|&k| (ids[(k & 0x7FFF) as usize], f32_of(!((k >> 32) as u32)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rrf(vector: &[u64], text: &[u64]) -> Vec<(PointId, f32)> {
        let ranked = |ids: &[u64]| ids.iter().map(|&id| (PointId::Num(id), 0.0)).collect::<Vec<_>>();
        fuse(Fusion::Rrf, &ranked(vector), false, &ranked(text))
    }

    #[test]
    fn weighted_fusion_scales_each_ranking() {
        // Vector: squared distances (lower is better) 1, 2, 5; text: BM25 scores 9, 3.
        let n = PointId::Num;
        let v = [(n(1), 1.0), (n(2), 2.0), (n(3), 5.0)];
        let t = [(n(3), 9.0), (n(4), 3.0)];
        let fused = fuse(Fusion::Weighted { alpha: 0.75 }, &v, true, &t);
        let score = |id: u64| fused.iter().find(|f: &&(PointId, f32)| f.0 == id).unwrap().1;
        assert_eq!(score(1), 0.75);
        assert_eq!(score(2), 0.75 * (3.0 / 4.0));
        assert_eq!(score(3), 0.75 * 0.0 + 0.25);
        assert_eq!(score(4), 0.0);
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
        // Overflowing or NaN scores stay ordered: -inf and NaN as the worst, scaled in f64.
        let fused = fuse(Fusion::Weighted { alpha: 1.0 }, &[(n(1), -3e38), (n(2), f32::NAN), (n(3), 3e38)], false, &[]);
        let (lo, hi) = (f64::from(-f32::MAX), f64::from(3e38f32));
        let one = ((f64::from(-3e38f32) - lo) / (hi - lo)) as f32;
        assert!(one > 0.0 && one < 0.1);
        assert_eq!(fused, [(n(3), 1.0), (n(1), one), (n(2), 0.0)]);
        // alpha 0: the text ranking alone decides; equal scores all count as the best.
        let fused = fuse(Fusion::Weighted { alpha: 0.0 }, &v, true, &[(n(7), 2.0), (n(8), 2.0)]);
        assert_eq!(fused[..2], [(n(7), 1.0), (n(8), 1.0)]);
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let fused = rrf(&[1, 2, 3], &[3, 4, 1]);
        let score = |id| fused.iter().find(|f| f.0 == id).unwrap().1;
        assert_eq!(score(1), 1.0 / 61.0 + 1.0 / 63.0);
        assert_eq!(score(3), 1.0 / 63.0 + 1.0 / 61.0);
        assert_eq!(score(2), 1.0 / 62.0);
        // 1 and 3 tie on the sum (the same two terms) and on the best rank: the lower id wins.
        assert_eq!(fused.iter().map(|f| f.0).collect::<Vec<_>>(), [1, 3, 2, 4]);
        assert!(rrf(&[], &[]).is_empty());
    }

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
