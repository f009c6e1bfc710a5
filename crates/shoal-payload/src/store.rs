//! Building the payload sections from JSON documents, and reading them back in place.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::AlignedBytes;

use crate::column::{
    CODE_FIRST_VALUE, COUNTED_MAX_LEN, ColumnMeta, ColumnParts, ColumnRef, DIRECT_TAG, MAX_SET_VALUES, MODE_CODES,
    MODE_COUNTED, MODE_DIRECT, MODE_SETS, Postings, PostingsParts, RANK_BLOCK, build_column, build_presence_column,
    packed_words, set_width_for, width_for,
};
use crate::error::{LayoutError, PayloadError, PayloadErrorKind};
use crate::schema::{FieldType, MAX_FIELD_NAME, Schema, valid_field_name};
use crate::table::{Table, TableWriter};
use crate::values::{FieldValues, ScalarValue, f64_of_key, i64_of_key, key_of_f64, key_of_i64, parse_payload};

mod verify;

/// Section kind: field names and types.
pub const KIND_PAYLOAD_FIELDS: u32 = 32;
/// Section kind: point → values columns.
pub const KIND_PAYLOAD_COLUMNS: u32 = 33;
/// Section kind: value dictionaries.
pub const KIND_PAYLOAD_DICTS: u32 = 34;
/// Section kind: value → rows postings.
pub const KIND_PAYLOAD_POSTINGS: u32 = 35;
/// Section kind: stored JSON documents.
pub const KIND_PAYLOAD_DOCS: u32 = 36;

const MAGIC_FIELDS: [u8; 4] = *b"PFLD";
const MAGIC_COLUMNS: [u8; 4] = *b"PCOL";
const MAGIC_DICTS: [u8; 4] = *b"PDIC";
const MAGIC_POSTINGS: [u8; 4] = *b"PPST";
/// Arrays per field of `PAYLOAD_POSTINGS` as written now (prefix counts, list starts,
/// block-coded lists); tables of 2 (prefix counts, plain rows) are still read.
const POSTINGS_ARRAYS: u32 = 3;
const MAGIC_DOCS: [u8; 4] = *b"PDOC";

/// The five payload sections, as bytes for the segment writer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PayloadSections {
    /// Kind 32.
    pub fields: Vec<u8>,
    /// Kind 33.
    pub columns: Vec<u8>,
    /// Kind 34.
    pub dicts: Vec<u8>,
    /// Kind 35.
    pub postings: Vec<u8>,
    /// Kind 36.
    pub docs: Vec<u8>,
}

/// Borrowed section bytes, each starting at least 8-byte aligned (64 in a segment).
#[derive(Clone, Copy, Debug)]
pub struct PayloadSectionBytes<'a> {
    /// Kind 32.
    pub fields: &'a [u8],
    /// Kind 33.
    pub columns: &'a [u8],
    /// Kind 34.
    pub dicts: &'a [u8],
    /// Kind 35.
    pub postings: &'a [u8],
    /// Kind 36.
    pub docs: &'a [u8],
}

impl PayloadSections {
    /// `(kind, bytes)` of every section, in kind order.
    pub fn by_kind(&self) -> [(u32, &[u8]); 5] {
        [
            (KIND_PAYLOAD_FIELDS, &self.fields),
            (KIND_PAYLOAD_COLUMNS, &self.columns),
            (KIND_PAYLOAD_DICTS, &self.dicts),
            (KIND_PAYLOAD_POSTINGS, &self.postings),
            (KIND_PAYLOAD_DOCS, &self.docs),
        ]
    }

    /// Copies the sections into 64-byte-aligned buffers that a [`PayloadView`] can read.
    pub fn to_aligned(&self) -> AlignedPayload {
        AlignedPayload {
            fields: AlignedBytes::from_slice(&self.fields),
            columns: AlignedBytes::from_slice(&self.columns),
            dicts: AlignedBytes::from_slice(&self.dicts),
            postings: AlignedBytes::from_slice(&self.postings),
            docs: AlignedBytes::from_slice(&self.docs),
        }
    }

    /// Total bytes.
    pub fn len(&self) -> usize {
        self.by_kind().iter().map(|(_, b)| b.len()).sum()
    }

    /// Whether all sections are empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The payload sections in aligned memory (a mutable segment's view, or a test's).
#[derive(Clone, Debug, Default)]
pub struct AlignedPayload {
    fields: AlignedBytes,
    columns: AlignedBytes,
    dicts: AlignedBytes,
    postings: AlignedBytes,
    docs: AlignedBytes,
}

impl AlignedPayload {
    /// The section bytes.
    pub fn bytes(&self) -> PayloadSectionBytes<'_> {
        PayloadSectionBytes {
            fields: self.fields.as_slice(),
            columns: self.columns.as_slice(),
            dicts: self.dicts.as_slice(),
            postings: self.postings.as_slice(),
            docs: self.docs.as_slice(),
        }
    }

    /// Opens a view (cheap checks).
    pub fn view(&self) -> Result<PayloadView<'_>, LayoutError> {
        PayloadView::open(self.bytes())
    }
}

#[derive(Clone, Debug, Default)]
struct FieldAcc {
    row_offsets: Vec<u32>,
    keys: Vec<u64>,
    keyword_ids: BTreeMap<String, u32>,
    keywords: Vec<String>,
    has_text: Vec<bool>,
    null_rows: Vec<u32>,
    nulls_only_rows: Vec<u32>,
    stray_rows: Vec<u32>,
}

/// Accumulates point payloads (validating each completely before taking it) and writes the
/// payload sections.
///
/// ```
/// use shoal_payload::{Filter, PayloadBuilder, Schema};
/// let schema = Schema::from_json(r#"{"tag": "keyword", "year": "integer"}"#).unwrap();
/// let mut b = PayloadBuilder::new(schema);
/// b.push_str(r#"{"tag": ["a", "b"], "year": 2001}"#).unwrap();
/// b.push_str(r#"{"tag": "c"}"#).unwrap();
/// assert!(b.push_str(r#"{"colour": "red"}"#).is_err()); // unknown field: nothing added
/// let aligned = b.finish().to_aligned();
/// let view = aligned.view().unwrap();
/// assert_eq!(view.rows(), 2);
/// let f = Filter::from_json(r#"{"must": [{"key": "year", "range": {"gte": 2000}}]}"#).unwrap();
/// let q = view.compile(&f, &|_| None).unwrap();
/// assert!(q.matches(0) && !q.matches(1));
/// assert_eq!(view.document(1).unwrap(), serde_json::json!({"tag": "c"}));
/// ```
#[derive(Clone, Debug)]
pub struct PayloadBuilder {
    schema: Schema,
    fields: Vec<FieldAcc>,
    doc_offsets: Vec<u64>,
    doc_bytes: Vec<u8>,
}

impl PayloadBuilder {
    /// An empty builder for `schema`.
    pub fn new(schema: Schema) -> PayloadBuilder {
        let fields = (0..schema.len()).map(|_| FieldAcc { row_offsets: vec![0], ..FieldAcc::default() }).collect();
        PayloadBuilder { schema, fields, doc_offsets: vec![0], doc_bytes: Vec::new() }
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Points added so far.
    pub fn rows(&self) -> u32 {
        (self.doc_offsets.len() - 1) as u32
    }

    /// Adds the next point's payload given as JSON text; returns its row.
    pub fn push_str(&mut self, text: &str) -> Result<u32, PayloadError> {
        let doc: Value = serde_json::from_slice(text.as_bytes())
            .map_err(|e| PayloadError::new("payload", PayloadErrorKind::InvalidJson(e.to_string())))?;
        self.push(&doc)
    }

    /// Adds the next point's payload (an object, or `null` for none); returns its row. On error
    /// nothing is added.
    pub fn push(&mut self, doc: &Value) -> Result<u32, PayloadError> {
        if self.rows() == u32::MAX {
            return Err(PayloadError::new("payload", PayloadErrorKind::TooManyPoints));
        }
        // Values are read from the document as it is stored (nested numbers in one form).
        let doc = &match doc {
            Value::Null => Value::Null,
            d => {
                let mut d = d.clone();
                crate::values::canonicalize(&self.schema, &mut d);
                d
            }
        };
        let values = parse_payload(&self.schema, doc)?;
        let row = self.rows();
        for (i, fv) in values.into_iter().enumerate() {
            let acc = &mut self.fields[i];
            let ty = self.schema.field_type(i);
            match fv {
                FieldValues::Absent | FieldValues::EmptyArray => {}
                FieldValues::Null => acc.null_rows.push(row),
                FieldValues::NullsOnly => acc.nulls_only_rows.push(row),
                FieldValues::Stray => acc.stray_rows.push(row),
                FieldValues::Values(vals) => {
                    for v in vals {
                        match v {
                            ScalarValue::Keyword(s) => {
                                let next = acc.keywords.len() as u32;
                                let id = *acc.keyword_ids.entry(s).or_insert_with_key(|k| {
                                    acc.keywords.push(k.clone());
                                    next
                                });
                                acc.keys.push(id as u64);
                            }
                            ScalarValue::Integer(x) => acc.keys.push(key_of_i64(x)),
                            ScalarValue::Float(x) => acc.keys.push(key_of_f64(x)),
                            ScalarValue::Bool(b) => acc.keys.push(b as u64),
                            ScalarValue::Text(_) => {}
                        }
                    }
                    if ty.is_text() {
                        acc.has_text.resize(row as usize, false);
                        acc.has_text.push(true);
                    }
                }
            }
            acc.row_offsets.push(acc.keys.len() as u32);
        }
        let doc_text = match doc {
            Value::Null => "{}".to_string(),
            d => d.to_string(),
        };
        self.doc_bytes.extend_from_slice(doc_text.as_bytes());
        self.doc_offsets.push(self.doc_bytes.len() as u64);
        Ok(row)
    }

    /// Builds the sections.
    pub fn finish(self) -> PayloadSections {
        let rows = self.rows();
        let n = self.schema.len() as u32;
        let mut fields = TableWriter::new(MAGIC_FIELDS, n, 2);
        // Nested payloads add array 8, the stray rows.
        let nested = self.schema.is_nested();
        let mut columns = TableWriter::new(MAGIC_COLUMNS, n, if nested { 9 } else { 8 });
        let mut dicts = TableWriter::new(MAGIC_DICTS, n, 2);
        let mut postings = TableWriter::new(MAGIC_POSTINGS, n, POSTINGS_ARRAYS);
        for (i, mut acc) in self.fields.into_iter().enumerate() {
            let ty = self.schema.field_type(i);
            fields.push(self.schema.name(i).as_bytes());
            fields.push(&[ty.code(), 0, 0, 0]);
            let (mut col, post) = match ty {
                FieldType::Text | FieldType::TextEn => {
                    acc.has_text.resize(rows as usize, false);
                    let col = build_presence_column(&acc.has_text, &acc.null_rows, &acc.nulls_only_rows);
                    dicts.push::<u64>(&[]);
                    dicts.push::<u8>(&[]);
                    (col, PostingsParts::default())
                }
                FieldType::Keyword => {
                    // Final dictionary order is byte order; map first-seen ids to it.
                    let mut order: Vec<u32> = (0..acc.keywords.len() as u32).collect();
                    shoal_text::sort_by_bytes(&mut order, &|i| acc.keywords[i as usize].as_bytes());
                    let mut final_of = vec![0u32; order.len()];
                    let mut offsets = Vec::with_capacity(order.len() + 1);
                    let mut bytes = Vec::new();
                    offsets.push(0u32);
                    for (fin, &prov) in order.iter().enumerate() {
                        final_of[prov as usize] = fin as u32;
                        bytes.extend_from_slice(acc.keywords[prov as usize].as_bytes());
                        offsets.push(bytes.len() as u32);
                    }
                    let vals: Vec<u32> = acc.keys.iter().map(|&k| final_of[k as usize]).collect();
                    dicts.push(&offsets);
                    dicts.push(&bytes);
                    let (col, post) =
                        build_column(order.len() as u32, &acc.row_offsets, &vals, &acc.null_rows, &acc.nulls_only_rows);
                    // Keyword lists block-coded (when smaller); numeric ones stay plain, so a
                    // range of values is one contiguous run of rows.
                    (col, post.block_coded_if_smaller())
                }
                FieldType::Integer | FieldType::Float | FieldType::Bool => {
                    let mut dict = acc.keys.clone();
                    shoal_format::sort_u64(&mut dict);
                    dict.dedup();
                    let vals: Vec<u32> =
                        acc.keys.iter().map(|k| dict.binary_search(k).map_or(0, |i| i as u32)).collect();
                    dicts.push(&dict);
                    dicts.push::<u8>(&[]);
                    build_column(dict.len() as u32, &acc.row_offsets, &vals, &acc.null_rows, &acc.nulls_only_rows)
                }
            };
            col.meta.stray_points = acc.stray_rows.len() as u32;
            push_column(&mut columns, &col);
            if nested {
                columns.push(&acc.stray_rows);
            }
            postings.push(&post.offsets);
            postings.push(&post.starts);
            if post.starts.is_empty() {
                postings.push(&post.rows);
            } else {
                postings.push(&post.lists);
            }
        }
        let mut docs = TableWriter::new(MAGIC_DOCS, 1, 2);
        docs.push(&self.doc_offsets);
        docs.push(&self.doc_bytes);
        PayloadSections {
            fields: fields.finish(),
            columns: columns.finish(),
            dicts: dicts.finish(),
            postings: postings.finish(),
            docs: docs.finish(),
        }
    }
}

fn push_column(w: &mut TableWriter, col: &ColumnParts) {
    w.push(core::slice::from_ref(&col.meta));
    w.push(&col.slots);
    w.push(&col.multi_bits);
    w.push(&col.multi_rank);
    w.push(&col.multi_offsets);
    w.push(&col.multi_codes);
    w.push(&col.null_rows);
    w.push(&col.nulls_only_rows);
}

/// A field's dictionary: the sorted distinct values.
#[derive(Clone, Copy, Debug)]
pub enum Dict<'a> {
    /// Integer, float and bool fields: sorted order keys.
    Keys(&'a [u64]),
    /// Keyword fields: sorted strings, `bytes[offsets[i] .. offsets[i+1]]`.
    Strings {
        /// `dict_len + 1` offsets.
        offsets: &'a [u32],
        /// UTF-8 bytes.
        bytes: &'a [u8],
    },
    /// Text fields.
    None,
}

impl<'a> Dict<'a> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Dict::Keys(k) => k.len(),
            Dict::Strings { offsets, .. } => offsets.len().saturating_sub(1),
            Dict::None => 0,
        }
    }

    /// Whether the dictionary is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keyword `i` (`None` if out of range or corrupt).
    pub fn string(&self, i: usize) -> Option<&'a str> {
        let Dict::Strings { offsets, bytes } = *self else { return None };
        let (s, e) = (*offsets.get(i)? as usize, *offsets.get(i + 1)? as usize);
        core::str::from_utf8(bytes.get(s..e)?).ok()
    }

    /// Order key `i`.
    pub fn key(&self, i: usize) -> Option<u64> {
        match self {
            Dict::Keys(k) => k.get(i).copied(),
            _ => None,
        }
    }

    /// Index of an order key (integer, float and bool fields).
    pub fn find_key(&self, k: u64) -> Option<u32> {
        match self {
            Dict::Keys(keys) => keys.binary_search(&k).ok().map(|i| i as u32),
            _ => None,
        }
    }

    /// Index of a keyword.
    pub fn find_string(&self, s: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let m = self.string_bytes(mid)?;
            match m.cmp(s.as_bytes()) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    fn string_bytes(&self, i: usize) -> Option<&'a [u8]> {
        let Dict::Strings { offsets, bytes } = *self else { return None };
        bytes.get(*offsets.get(i)? as usize..*offsets.get(i + 1)? as usize)
    }
}

/// One field of a [`PayloadView`].
#[derive(Clone, Copy, Debug)]
pub struct FieldView<'a> {
    /// The type.
    pub field_type: FieldType,
    /// Point → values.
    pub column: ColumnRef<'a>,
    /// Sorted distinct values.
    pub dict: Dict<'a>,
    /// Value → rows.
    pub postings: Postings<'a>,
    /// Nested payloads: the rows whose values on this path the column does not hold
    /// (ascending), answered from their documents; empty otherwise.
    pub stray_rows: &'a [u32],
}

impl FieldView<'_> {
    /// The typed values of `row`, in dictionary order (text fields: none).
    pub fn values(&self, row: u32) -> Vec<ScalarValue> {
        let mut out = Vec::new();
        self.column.any_code(row, |c| {
            if let Some(v) = self.decode(c) {
                out.push(v);
            }
            false
        });
        out
    }

    /// The value of a code.
    pub fn decode(&self, code: u32) -> Option<ScalarValue> {
        let i = code.checked_sub(CODE_FIRST_VALUE)? as usize;
        Some(match self.field_type {
            FieldType::Keyword => ScalarValue::Keyword(self.dict.string(i)?.to_string()),
            FieldType::Integer => ScalarValue::Integer(i64_of_key(self.dict.key(i)?)),
            FieldType::Float => ScalarValue::Float(f64_of_key(self.dict.key(i)?)),
            FieldType::Bool => ScalarValue::Bool(self.dict.key(i)? != 0),
            FieldType::Text | FieldType::TextEn => return None,
        })
    }
}

/// The payload of a segment read in place from its sections.
#[derive(Clone, Debug)]
pub struct PayloadView<'a> {
    schema: Schema,
    rows: u32,
    fields: Vec<FieldView<'a>>,
    doc_offsets: &'a [u64],
    doc_bytes: &'a [u8],
}

fn malformed(section: &'static str, reason: &'static str) -> LayoutError {
    LayoutError::Malformed { section, reason }
}

impl<'a> PayloadView<'a> {
    /// Opens the sections with the cheap checks of `docs/format.md` (O(fields)).
    pub fn open(s: PayloadSectionBytes<'a>) -> Result<PayloadView<'a>, LayoutError> {
        let docs = Table::open(s.docs, MAGIC_DOCS, "PAYLOAD_DOCS", 2)?;
        if docs.groups() != 1 {
            return Err(malformed("PAYLOAD_DOCS", "expected one group"));
        }
        let doc_offsets: &[u64] = docs.array(0, 0)?;
        let doc_bytes: &[u8] = docs.array(0, 1)?;
        if doc_offsets.is_empty() || doc_offsets.len() - 1 > u32::MAX as usize {
            return Err(malformed("PAYLOAD_DOCS", "offsets count out of range"));
        }
        let rows = (doc_offsets.len() - 1) as u32;
        Self::open_with(s, rows, |_| true, (doc_offsets, doc_bytes))
    }

    /// The filter index of `rows` rows for the fields `wanted` names only, without documents
    /// (`s.docs` is not read): what a reader by ranges opens over the parts of the sections it
    /// fetched (`docs/format.md`, "Filters, v2"). Each wanted field gets the checks of
    /// [`open`](Self::open); the other fields are left out of the view (and of its schema),
    /// so a filter compiled over it must name only wanted fields.
    pub fn open_fields(
        s: PayloadSectionBytes<'a>,
        rows: u32,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<PayloadView<'a>, LayoutError> {
        Self::open_with(s, rows, wanted, (&[], &[]))
    }

    /// Each field's span in `PAYLOAD_COLUMNS`, `PAYLOAD_DICTS` and `PAYLOAD_POSTINGS` (from its
    /// first non-empty array to the end of its last one, `0..0` when it has none), and the
    /// length of each section's array table: how format 2 cuts them by field.
    #[allow(clippy::type_complexity)]
    pub fn field_spans(
        s: &PayloadSectionBytes<'_>,
    ) -> Result<([u64; 3], Vec<[core::ops::Range<u64>; 3]>), LayoutError> {
        let ct = Table::open_any(s.columns, MAGIC_COLUMNS, "PAYLOAD_COLUMNS", &[8, 9])?;
        let dt = Table::open(s.dicts, MAGIC_DICTS, "PAYLOAD_DICTS", 2)?;
        let pt = Table::open_any(s.postings, MAGIC_POSTINGS, "PAYLOAD_POSTINGS", &[POSTINGS_ARRAYS, 2])?;
        if dt.groups() != ct.groups() || pt.groups() != ct.groups() {
            return Err(malformed("PAYLOAD_COLUMNS", "sections disagree on the field count"));
        }
        let spans = (0..ct.groups()).map(|g| [ct.group_span(g), dt.group_span(g), pt.group_span(g)]).collect();
        Ok(([ct.table_len(), dt.table_len(), pt.table_len()], spans))
    }

    fn open_with(
        s: PayloadSectionBytes<'a>,
        rows: u32,
        wanted: impl Fn(&str) -> bool,
        (doc_offsets, doc_bytes): (&'a [u64], &'a [u8]),
    ) -> Result<PayloadView<'a>, LayoutError> {
        let ft = Table::open(s.fields, MAGIC_FIELDS, "PAYLOAD_FIELDS", 2)?;
        let ct = Table::open_any(s.columns, MAGIC_COLUMNS, "PAYLOAD_COLUMNS", &[8, 9])?;
        // Nested payloads: names are paths, and array 8 holds each path's stray rows.
        let nested = ct.arrays() == 9;
        let dt = Table::open(s.dicts, MAGIC_DICTS, "PAYLOAD_DICTS", 2)?;
        let pt = Table::open_any(s.postings, MAGIC_POSTINGS, "PAYLOAD_POSTINGS", &[POSTINGS_ARRAYS, 2])?;
        let n = ft.groups();
        if ct.groups() != n || dt.groups() != n || pt.groups() != n {
            return Err(malformed("PAYLOAD_COLUMNS", "sections disagree on the field count"));
        }
        let mut prev: Option<&str> = None;
        let mut names: Vec<(&str, FieldType)> = Vec::with_capacity(n as usize);
        let mut fields = Vec::with_capacity(n as usize);
        for g in 0..n {
            let (name, ty) = read_field(&ft, g, prev)?;
            prev = Some(name);
            if !wanted(name) {
                continue;
            }
            names.push((name, ty));
            let column = open_column(&ct, g, rows, ty)?;
            let stray_rows: &[u32] = if nested {
                ct.array_n(g, 8, column.meta.stray_points as u64, "stray rows length")?
            } else if column.meta.stray_points != 0 {
                return Err(malformed("PAYLOAD_COLUMNS", "stray rows without nested payloads"));
            } else {
                &[]
            };
            let dict_len = column.meta.dict_len as u64;
            let dict = match ty {
                FieldType::Text | FieldType::TextEn => {
                    dt.array_n::<u8>(g, 0, 0, "text field with a dictionary")?;
                    Dict::None
                }
                FieldType::Keyword => {
                    let offsets = dt.array_n(g, 0, dict_len + 1, "keyword offsets count")?;
                    Dict::Strings { offsets, bytes: dt.array(g, 1)? }
                }
                _ => {
                    dt.array_n::<u8>(g, 1, 0, "numeric dictionary with string bytes")?;
                    Dict::Keys(dt.array_n(g, 0, dict_len, "dictionary length")?)
                }
            };
            let postings = if ty.is_text() {
                for a in 0..pt.arrays() {
                    pt.array_n::<u8>(g, a, 0, "text field with postings")?;
                }
                Postings::default()
            } else if pt.arrays() == POSTINGS_ARRAYS {
                let offsets = pt.array_n(g, 0, dict_len + 1, "postings offsets count")?;
                let starts: &[u64] = pt.array(g, 1)?;
                if starts.is_empty() {
                    Postings { offsets, rows: pt.array(g, 2)?, ..Postings::default() }
                } else if starts.len() as u64 == dict_len + 1 {
                    Postings { offsets, starts, lists: pt.array(g, 2)?, rows: &[] }
                } else {
                    return Err(malformed("PAYLOAD_POSTINGS", "postings list starts count"));
                }
            } else {
                Postings {
                    offsets: pt.array_n(g, 0, dict_len + 1, "postings offsets count")?,
                    rows: pt.array(g, 1)?,
                    ..Postings::default()
                }
            };
            fields.push(FieldView { field_type: ty, column, dict, postings, stray_rows });
        }
        let schema = if nested { Schema::nested(&names) } else { Schema::new(&names) }
            .map_err(|_| malformed("PAYLOAD_FIELDS", "invalid schema"))?;
        Ok(PayloadView { schema, rows, fields, doc_offsets, doc_bytes })
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Number of points.
    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// Field `i` (schema order).
    pub fn field(&self, i: usize) -> &FieldView<'a> {
        &self.fields[i]
    }

    /// A field by name.
    pub fn field_by_name(&self, name: &str) -> Option<&FieldView<'a>> {
        self.schema.field(name).map(|(i, _)| &self.fields[i])
    }

    /// The stored JSON text of `row`'s payload (`None` if out of range or corrupt).
    pub fn document_bytes(&self, row: u32) -> Option<&'a [u8]> {
        let s = *self.doc_offsets.get(row as usize)?;
        let e = *self.doc_offsets.get(row as usize + 1)?;
        if s > e {
            return None;
        }
        self.doc_bytes.get(usize::try_from(s).ok()?..usize::try_from(e).ok()?)
    }

    /// `row`'s payload as a JSON object (for `with_payload`).
    pub fn document(&self, row: u32) -> Result<Value, LayoutError> {
        let bytes = self.document_bytes(row).ok_or(malformed("PAYLOAD_DOCS", "document out of range"))?;
        serde_json::from_slice(bytes).map_err(|_| malformed("PAYLOAD_DOCS", "document is not JSON"))
    }
}

/// Field `g` of a `PAYLOAD_FIELDS` table, checked: a valid name after `prev` (names strictly
/// ascending), a known type, reserved bytes zero.
fn read_field<'a>(ft: &Table<'a>, g: u32, prev: Option<&str>) -> Result<(&'a str, FieldType), LayoutError> {
    let name: &[u8] = ft.array(g, 0)?;
    let name = core::str::from_utf8(name).map_err(|_| malformed("PAYLOAD_FIELDS", "name is not UTF-8"))?;
    if !valid_field_name(name) || name.len() > MAX_FIELD_NAME {
        return Err(malformed("PAYLOAD_FIELDS", "invalid field name"));
    }
    if prev.is_some_and(|prev| prev.as_bytes() >= name.as_bytes()) {
        return Err(malformed("PAYLOAD_FIELDS", "field names not strictly ascending"));
    }
    let info: &[u32] = ft.array_n(g, 1, 4, "FieldInfo must be 16 bytes")?;
    let ty = FieldType::from_code(info[0]).ok_or(malformed("PAYLOAD_FIELDS", "unknown field type"))?;
    if info[1..].iter().any(|&x| x != 0) {
        return Err(malformed("PAYLOAD_FIELDS", "reserved FieldInfo bytes are not zero"));
    }
    Ok((name, ty))
}

/// The schema a `PAYLOAD_FIELDS` section holds (`nested`: the segment's payloads are nested,
/// its names paths), checked as [`PayloadView::open`] checks it.
pub fn schema_of_fields(fields: &[u8], nested: bool) -> Result<Schema, LayoutError> {
    let ft = Table::open(fields, MAGIC_FIELDS, "PAYLOAD_FIELDS", 2)?;
    let mut names: Vec<(&str, FieldType)> = Vec::with_capacity(ft.groups() as usize);
    for g in 0..ft.groups() {
        names.push(read_field(&ft, g, names.last().map(|n| n.0))?);
    }
    if nested { Schema::nested(&names) } else { Schema::new(&names) }
        .map_err(|_| malformed("PAYLOAD_FIELDS", "invalid schema"))
}

fn open_column<'a>(ct: &Table<'a>, g: u32, rows: u32, ty: FieldType) -> Result<ColumnRef<'a>, LayoutError> {
    let sec = ct.name();
    let meta: &[ColumnMeta] = ct.array_n(g, 0, 1, "ColumnMeta must be 64 bytes")?;
    let meta = meta[0];
    if meta.rows != rows {
        return Err(malformed(sec, "column rows differ from the document count"));
    }
    let (sets, direct) = match meta.mode {
        MODE_CODES => (false, false),
        MODE_SETS => (true, false),
        MODE_DIRECT | MODE_COUNTED => (false, true),
        _ => return Err(malformed(sec, "unknown column mode")),
    };
    let width_ok = if sets {
        meta.dict_len <= MAX_SET_VALUES && meta.width == set_width_for(meta.dict_len)
    } else if direct {
        let max_len = if meta.mode == MODE_COUNTED { COUNTED_MAX_LEN } else { DIRECT_TAG };
        meta.dict_len < DIRECT_TAG - CODE_FIRST_VALUE && meta.width == 32 && meta.multi_len < max_len
    } else {
        meta.dict_len <= u32::MAX - 2 && meta.width == width_for(meta.dict_len)
    };
    if !width_ok {
        return Err(malformed(sec, "code width does not match the dictionary"));
    }
    if ty.is_text() && (sets || direct || meta.dict_len != 0 || meta.multi_points != 0 || meta.multi_len != 0) {
        return Err(malformed(sec, "text column with values"));
    }
    if meta.reserved.iter().any(|&x| x != 0) {
        return Err(malformed(sec, "reserved ColumnMeta bytes are not zero"));
    }
    let blocks = if sets || direct { 0 } else { (rows as u64).div_ceil(RANK_BLOCK as u64) };
    let multi_offsets = if sets || direct || meta.multi_points == 0 { 0 } else { meta.multi_points as u64 + 1 };
    let multi_len = if sets { 0 } else { meta.multi_len as u64 };
    Ok(ColumnRef {
        meta,
        slots: ct.array_n(g, 1, packed_words(rows as u64, meta.width), "slots length")?,
        multi_bits: ct.array_n(g, 2, blocks * 8, "multi bitmap length")?,
        multi_rank: ct.array_n(g, 3, blocks, "multi rank length")?,
        multi_offsets: ct.array_n(g, 4, multi_offsets, "multi offsets length")?,
        multi_codes: ct.array_n(g, 5, packed_words(multi_len, meta.width), "multi codes length")?,
        null_rows: ct.array_n(g, 6, meta.null_points as u64, "null rows length")?,
        nulls_only_rows: ct.array_n(g, 7, meta.nulls_only_points as u64, "nulls-only rows length")?,
    })
}
