//! `PayloadView::verify`: everything `open` does not check (O(payload)) — codes, offsets,
//! sorted dictionaries and row lists, ranks, postings against columns, documents, and in nested
//! mode every path's column against the documents.

use alloc::vec::Vec;

use serde_json::Value;
use shoal_text::postings::{PostingsCursor, TERMINATED};

use super::{Dict, FieldView, PayloadView, malformed};
use crate::column::{
    CODE_EMPTY, CODE_FIRST_VALUE, CODE_MULTI, COUNT_OPEN, DIRECT_TAG, MODE_COUNTED, MODE_DIRECT, MODE_SETS,
};
use crate::error::LayoutError;
use crate::schema::FieldType;
use crate::values::{FieldValues, ScalarValue, key_of_f64, key_of_i64, parse_payload};

impl PayloadView<'_> {
    /// Checks everything `open` does not (O(payload)): codes, offsets, sorted dictionaries
    /// and row lists, ranks, postings against columns, documents.
    pub fn verify(&self) -> Result<(), LayoutError> {
        for f in &self.fields {
            verify_field(f, self.rows)?;
        }
        let docs = "PAYLOAD_DOCS";
        if self.doc_offsets[0] != 0 || *self.doc_offsets.last().unwrap_or(&0) != self.doc_bytes.len() as u64 {
            return Err(malformed(docs, "offsets do not span the bytes"));
        }
        if self.doc_offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(malformed(docs, "offsets decrease"));
        }
        let nested = self.schema.is_nested();
        for r in 0..self.rows {
            let doc = self.document(r)?;
            if !doc.is_object() {
                return Err(malformed(docs, "document is not an object"));
            }
            if nested && !self.fields.is_empty() {
                self.verify_nested_row(r, &doc)?;
            }
        }
        Ok(())
    }

    /// Nested payloads: what every path's column says of `row` (values, `null`, arrays of
    /// `null`s, stray) is what its stored document gives.
    fn verify_nested_row(&self, row: u32, doc: &Value) -> Result<(), LayoutError> {
        let wrong = || malformed("PAYLOAD_COLUMNS", "a nested column disagrees with its documents");
        let derived = parse_payload(&self.schema, doc).map_err(|_| wrong())?;
        for (f, want) in self.fields.iter().zip(derived) {
            let c = &f.column;
            let listed = |rows: &[u32]| rows.binary_search(&row).is_ok();
            let lists = [listed(f.stray_rows), listed(c.null_rows), listed(c.nulls_only_rows)];
            // The codes of the document's values: the row must hold these and no others.
            let mut codes = Vec::new();
            let expected = match want {
                FieldValues::Stray => [true, false, false],
                FieldValues::Null => [false, true, false],
                FieldValues::NullsOnly => [false, false, true],
                FieldValues::Values(vals) => {
                    codes.extend(vals.iter().map(|v| value_code(f, v)));
                    [false; 3]
                }
                FieldValues::Absent | FieldValues::EmptyArray => [false; 3],
            };
            shoal_format::sort_u32(&mut codes);
            codes.dedup();
            if lists != expected
                || c.value_count(row) != codes.len()
                || codes.iter().any(|&k| !c.any_code(row, |x| x == k))
            {
                return Err(wrong());
            }
        }
        Ok(())
    }
}

/// The code of `v` in `f`'s dictionary (`CODE_EMPTY`, which no value has, when it is not there).
fn value_code(f: &FieldView<'_>, v: &ScalarValue) -> u32 {
    let i = match v {
        ScalarValue::Keyword(s) => f.dict.find_string(s),
        ScalarValue::Integer(x) => f.dict.find_key(key_of_i64(*x)),
        ScalarValue::Float(x) => f.dict.find_key(key_of_f64(*x)),
        ScalarValue::Bool(b) => f.dict.find_key(*b as u64),
        ScalarValue::Text(_) => None,
    };
    i.map_or(CODE_EMPTY, |i| i + CODE_FIRST_VALUE)
}

fn strictly_ascending_below(rows: &[u32], limit: u32) -> bool {
    rows.windows(2).all(|w| w[0] < w[1]) && rows.last().is_none_or(|&r| r < limit)
}

fn verify_codes(f: &FieldView<'_>, rows: u32, valued: &mut u32) -> Result<(), LayoutError> {
    let c = &f.column;
    let m = c.meta;
    let cols = "PAYLOAD_COLUMNS";
    let max_code = m.dict_len + CODE_FIRST_VALUE;
    // Multi bitmap and ranks.
    let mut acc = 0u32;
    for (b, &rank) in c.multi_rank.iter().enumerate() {
        if rank != acc {
            return Err(malformed(cols, "multi rank does not count the bitmap"));
        }
        acc += c.multi_bits[b * 8..b * 8 + 8].iter().map(|w| w.count_ones()).sum::<u32>();
    }
    if acc != m.multi_points {
        return Err(malformed(cols, "multi bitmap does not match multi_points"));
    }
    if let (Some(&first), Some(&last)) = (c.multi_offsets.first(), c.multi_offsets.last())
        && (first != 0 || last != m.multi_len)
    {
        return Err(malformed(cols, "multi offsets do not span the codes"));
    }
    if c.multi_offsets.windows(2).any(|w| w[1] < w[0].saturating_add(2)) {
        return Err(malformed(cols, "a multi row has fewer than two codes"));
    }
    let text = f.field_type.is_text();
    for r in 0..rows {
        let code = c.code(r);
        let is_multi = c.multi_bits.get(r as usize / 64).is_some_and(|w| w >> (r % 64) & 1 == 1);
        if is_multi != (code == CODE_MULTI && !text) {
            return Err(malformed(cols, "multi bit disagrees with the slot code"));
        }
        if text {
            if code > CODE_MULTI {
                return Err(malformed(cols, "text column code out of range"));
            }
        } else if code >= max_code {
            return Err(malformed(cols, "code beyond the dictionary"));
        }
        if code != CODE_EMPTY {
            *valued += 1;
        }
        if code == CODE_MULTI && !text {
            let mut prev = CODE_MULTI;
            for x in c.multi_codes_of(r) {
                if x <= prev || x >= max_code {
                    return Err(malformed(cols, "multi codes not ascending values"));
                }
                prev = x;
            }
        }
    }
    Ok(())
}

fn verify_direct(f: &FieldView<'_>, rows: u32, valued: &mut u32) -> Result<(), LayoutError> {
    let c = &f.column;
    let m = c.meta;
    let cols = "PAYLOAD_COLUMNS";
    let max_code = m.dict_len + CODE_FIRST_VALUE;
    let (mut multi_points, mut multi_len) = (0u32, 0u64);
    for r in 0..rows {
        let s = c.code(r);
        if s == CODE_MULTI || (s < DIRECT_TAG && s >= max_code) {
            return Err(malformed(cols, "code beyond the dictionary"));
        }
        *valued += u32::from(s != CODE_EMPTY);
        if s & DIRECT_TAG != 0 {
            multi_points += 1;
            let counted = m.mode == MODE_COUNTED;
            let start = c.direct_start(s);
            let (mut prev, mut n, mut ended) = (CODE_MULTI, 0u64, false);
            for i in start..m.multi_len as u64 {
                let x = crate::column::packed_get(c.multi_codes, 32, i);
                let v = x & !DIRECT_TAG;
                if v <= prev || v >= max_code {
                    return Err(malformed(cols, "multi codes not ascending values"));
                }
                prev = v;
                n += 1;
                if x & DIRECT_TAG != 0 {
                    ended = true;
                    break;
                }
            }
            if !ended || n < 2 {
                return Err(malformed(cols, "a multi row is unterminated or has fewer than two codes"));
            }
            if counted && n.min(COUNT_OPEN as u64) != (s & COUNT_OPEN) as u64 {
                return Err(malformed(cols, "a multi row's count is wrong"));
            }
            multi_len += n;
        }
    }
    if multi_points != m.multi_points || multi_len != m.multi_len as u64 {
        return Err(malformed(cols, "multi counts are wrong"));
    }
    Ok(())
}

fn verify_field(f: &FieldView<'_>, rows: u32) -> Result<(), LayoutError> {
    let c = &f.column;
    let m = c.meta;
    let cols = "PAYLOAD_COLUMNS";
    let mut valued = 0u32;
    if m.mode == MODE_SETS {
        let (mut multi_points, mut multi_len) = (0u32, 0u32);
        for r in 0..rows {
            let set = c.code(r);
            if m.dict_len < 32 && set >> m.dict_len != 0 {
                return Err(malformed(cols, "value set beyond the dictionary"));
            }
            let n = set.count_ones();
            valued += u32::from(n > 0);
            if n > 1 {
                multi_points += 1;
                multi_len += n;
            }
        }
        if (multi_points, multi_len) != (m.multi_points, m.multi_len) {
            return Err(malformed(cols, "multi counts are wrong"));
        }
    } else if m.mode == MODE_DIRECT || m.mode == MODE_COUNTED {
        verify_direct(f, rows, &mut valued)?;
    } else {
        verify_codes(f, rows, &mut valued)?;
    }
    if valued != m.valued_points {
        return Err(malformed(cols, "valued_points is wrong"));
    }
    for list in [c.null_rows, c.nulls_only_rows, f.stray_rows] {
        if !strictly_ascending_below(list, rows) || list.iter().any(|&r| c.code(r) != CODE_EMPTY) {
            return Err(malformed(cols, "null row lists unsorted or holding values"));
        }
    }
    // Dictionaries.
    let dicts = "PAYLOAD_DICTS";
    match f.dict {
        Dict::Keys(k) => {
            if k.windows(2).any(|w| w[0] >= w[1]) {
                return Err(malformed(dicts, "keys not strictly ascending"));
            }
            if f.field_type == FieldType::Bool && k.iter().any(|&x| x > 1) {
                return Err(malformed(dicts, "bool key out of range"));
            }
        }
        Dict::Strings { offsets, bytes } => {
            if offsets.first() != Some(&0) || offsets.last().map(|&x| x as usize) != Some(bytes.len()) {
                return Err(malformed(dicts, "keyword offsets do not span the bytes"));
            }
            if offsets.windows(2).any(|w| w[0] > w[1]) {
                return Err(malformed(dicts, "keyword offsets decrease"));
            }
            let mut prev: Option<&[u8]> = None;
            for i in 0..f.dict.len() {
                let s = f.dict.string(i).ok_or(malformed(dicts, "keyword is not UTF-8"))?;
                if prev.is_some_and(|p| p >= s.as_bytes()) {
                    return Err(malformed(dicts, "keywords not strictly ascending"));
                }
                prev = Some(s.as_bytes());
            }
        }
        Dict::None => {}
    }
    // Postings: every listed row holds the value, and the lists count every (row, value) pair.
    let p = &f.postings;
    let posts = "PAYLOAD_POSTINGS";
    if !f.field_type.is_text() {
        let coded = !p.starts.is_empty();
        let total = p.offsets.last().map_or(0, |&x| x as usize);
        if p.offsets.first() != Some(&0) || (!coded && total != p.rows.len()) {
            return Err(malformed(posts, "offsets do not span the rows"));
        }
        if p.offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err(malformed(posts, "offsets decrease"));
        }
        if coded
            && (p.starts.first() != Some(&0)
                || p.starts.last() != Some(&(p.lists.len() as u64))
                || p.starts.windows(2).any(|w| w[0] > w[1]))
        {
            return Err(malformed(posts, "list starts do not span the lists"));
        }
        let mut pairs = 0u64;
        for r in 0..rows {
            pairs += c.value_count(r) as u64;
        }
        if pairs != total as u64 {
            return Err(malformed(posts, "postings do not count every value"));
        }
        let mut decoded = Vec::new();
        for i in 0..m.dict_len as usize {
            let count = (p.offsets[i + 1] - p.offsets[i]) as usize;
            let list = if coded {
                let bytes = &p.lists[p.starts[i] as usize..p.starts[i + 1] as usize];
                decoded.clear();
                if !bytes.is_empty() {
                    let corrupt = |_| malformed(posts, "corrupt row list");
                    let mut c = PostingsCursor::open(bytes).map_err(corrupt)?;
                    while c.doc() != TERMINATED {
                        if c.tf() != 1 {
                            return Err(malformed(posts, "corrupt row list"));
                        }
                        decoded.push(c.doc());
                        c.advance().map_err(corrupt)?;
                    }
                    if c.encoded_len() != bytes.len() {
                        return Err(malformed(posts, "corrupt row list"));
                    }
                }
                if decoded.len() != count {
                    return Err(malformed(posts, "a row list does not match its count"));
                }
                &decoded[..]
            } else {
                &p.rows[p.offsets[i] as usize..p.offsets[i + 1] as usize]
            };
            if !strictly_ascending_below(list, rows) {
                return Err(malformed(posts, "rows not ascending"));
            }
            let code = i as u32 + CODE_FIRST_VALUE;
            if list.iter().any(|&r| !c.any_code(r, |x| x == code)) {
                return Err(malformed(posts, "a row does not hold its value"));
            }
        }
    }
    Ok(())
}
