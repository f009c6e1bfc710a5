//! Filters bound to a [`PayloadView`]: per-point checks against the columns, cardinality
//! estimates and exact matching sets from the value → rows indexes.

use alloc::vec;
use alloc::vec::Vec;

use crate::column::{CODE_EMPTY, CODE_FIRST_VALUE, CodeSet, ColumnRef, MODE_SETS, RowLists};
use crate::error::FilterError;
use crate::filter::{Condition, FieldCheck, Filter, Literal, Range};
use crate::schema::{FieldType, Schema};
use crate::store::{Dict, FieldView, PayloadView};
use crate::values::{f64_of_key, i64_of_key, key_of_f64, key_of_i64};
use shoal_format::PointId;

/// A set of rows `0..len` as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bitset {
    /// Always `len.div_ceil(64)` words (set at construction, never resized).
    words: Vec<u64>,
    len: u32,
}

impl Bitset {
    /// No row.
    pub fn empty(len: u32) -> Bitset {
        Bitset { words: vec![0; (len as usize).div_ceil(64)], len }
    }

    /// Every row.
    pub fn full(len: u32) -> Bitset {
        let mut b = Bitset { words: vec![!0; (len as usize).div_ceil(64)], len };
        b.trim();
        b
    }

    fn trim(&mut self) {
        if !self.len.is_multiple_of(64)
            && let Some(last) = self.words.last_mut()
        {
            *last &= (1u64 << (self.len % 64)) - 1;
        }
    }

    /// Number of rows the set ranges over.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the set ranges over no rows.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `row` (ignored when out of range).
    #[inline(always)]
    pub fn insert(&mut self, row: u32) {
        if row < self.len {
            // SAFETY: `row < len`, and `words` holds `len.div_ceil(64)` words (a plain index
            // here is a call the size-optimised wasm build does not inline: 10% of a filter).
            unsafe { *self.words.get_unchecked_mut(row as usize / 64) |= 1 << (row % 64) };
        }
    }

    /// Adds every row of `rows` (those out of range are ignored).
    pub fn insert_all(&mut self, rows: &[u32]) {
        for &row in rows {
            self.insert(row);
        }
    }

    /// Removes `row`.
    #[inline]
    pub fn remove(&mut self, row: u32) {
        if row < self.len {
            self.words[row as usize / 64] &= !(1 << (row % 64));
        }
    }

    /// Whether `row` is in the set.
    #[inline(always)]
    pub fn contains(&self, row: u32) -> bool {
        // SAFETY: evaluated only when `row < len`; `words` holds `len.div_ceil(64)` words.
        row < self.len && unsafe { *self.words.get_unchecked(row as usize / 64) } >> (row % 64) & 1 == 1
    }

    /// Number of rows in the set.
    pub fn count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// `self ∩= other`.
    pub fn and(&mut self, other: &Bitset) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a &= b);
    }

    /// `self ∪= other`.
    pub fn or(&mut self, other: &Bitset) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a |= b);
    }

    /// `self −= other`.
    pub fn and_not(&mut self, other: &Bitset) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a &= !b);
    }

    /// The rows, ascending.
    pub fn iter(&self) -> BitIter<'_> {
        BitIter::new(&self.words)
    }

    /// The rows as a sorted vector.
    pub fn to_rows(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// The set bits of a slice of `u64` words, ascending (bit `b` of word `i` is `64 * i + b`).
#[derive(Clone, Debug)]
pub struct BitIter<'a> {
    words: &'a [u64],
    base: u32,
    word: u64,
}

impl<'a> BitIter<'a> {
    /// The set bits of `words`.
    pub fn new(words: &'a [u64]) -> BitIter<'a> {
        match words.split_first() {
            Some((&word, rest)) => BitIter { words: rest, base: 0, word },
            None => BitIter { words, base: 0, word: 0 },
        }
    }
}

impl Iterator for BitIter<'_> {
    type Item = u32;

    #[inline(always)]
    fn next(&mut self) -> Option<u32> {
        while self.word == 0 {
            let (&w, rest) = self.words.split_first()?;
            self.words = rest;
            self.word = w;
            self.base = self.base.wrapping_add(64);
        }
        let t = self.word.trailing_zeros();
        self.word &= self.word - 1;
        Some(self.base + t)
    }
}

/// Bounds on the number of matching points: `min <= expected <= max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cardinality {
    /// Certainly at least this many.
    pub min: u64,
    /// Best guess.
    pub expected: u64,
    /// Certainly at most this many.
    pub max: u64,
}

impl Cardinality {
    fn exact(n: u64) -> Cardinality {
        Cardinality { min: n, expected: n, max: n }
    }

    /// Orders the bounds (`min <= expected <= max`) whatever the inputs.
    fn new(min: u64, expected: u64, max: u64) -> Cardinality {
        let min = min.min(max);
        Cardinality { min, expected: expected.max(min).min(max), max }
    }
}

fn pairs(set: &CodeSet, p: &dyn RowLists) -> u64 {
    match set {
        CodeSet::Range(lo, hi) => p.range_len(lo.saturating_sub(CODE_FIRST_VALUE), hi.saturating_sub(CODE_FIRST_VALUE)),
        _ => {
            let mut n = 0;
            set.for_each_value(|i| n += p.list_len(i));
            n
        }
    }
}

#[derive(Clone, Debug)]
enum Node {
    Const(bool),
    /// Some value of the field has a code in the set.
    Any {
        field: usize,
        codes: CodeSet,
    },
    /// Some value of the field has a code not in the (sorted) list.
    Except {
        field: usize,
        codes: Vec<u32>,
    },
    IsEmpty(usize),
    IsNull(usize),
    /// Sorted rows.
    Rows(Vec<u32>),
    Bool {
        must: Vec<Node>,
        should: Vec<Node>,
        must_not: Vec<Node>,
        min_should: Option<(Vec<Node>, usize)>,
    },
}

/// A filter compiled against one [`PayloadView`]: field names resolved, literals turned into
/// dictionary codes (a range of values is a range of codes).
///
/// ```
/// use shoal_payload::{Filter, PayloadBuilder, Schema};
/// let mut b = PayloadBuilder::new(Schema::from_json(r#"{"n": "integer"}"#).unwrap());
/// for doc in [r#"{"n": 1}"#, r#"{"n": [2, 7]}"#, r#"{}"#, r#"{"n": 5}"#] {
///     b.push_str(doc).unwrap();
/// }
/// let p = b.finish().to_aligned();
/// let view = p.view().unwrap();
/// let f = Filter::from_json(r#"{"should": [{"key": "n", "range": {"gt": 4}}, {"has_id": [100]}]}"#).unwrap();
/// let q = view.compile(&f, &|id| Some(id.as_num()?.checked_sub(100)? as u32)).unwrap();
/// assert_eq!(q.matching_points().to_rows(), vec![0, 1, 3]);
/// let c = q.estimate_cardinality();
/// assert!(c.min <= 3 && 3 <= c.max);
/// ```
#[derive(Clone, Debug)]
pub struct CompiledFilter<'v, 'a> {
    view: &'v PayloadView<'a>,
    root: Node,
    /// Nested payloads: the filter, evaluated on stored documents, and the rows its `has_id`
    /// ids have in this segment.
    doc: Option<(&'v Filter, Vec<(PointId, u32)>)>,
    /// Nested payloads whose filter names only paths this segment has as columns (and no
    /// `nested` condition): the rows those paths have as strays, the only ones evaluated on
    /// their documents (ascending); `None`: every row is (`root` is unused).
    strays: Option<Vec<u32>>,
}

impl<'a> PayloadView<'a> {
    /// Validates `filter` against the schema and binds it to this view. `row_of` maps the
    /// external ids of `has_id` to rows (`None`: not in this segment).
    pub fn compile<'v>(
        &'v self,
        filter: &'v Filter,
        row_of: &dyn Fn(PointId) -> Option<u32>,
    ) -> Result<CompiledFilter<'v, 'a>, FilterError> {
        self.compile_for(filter, self.schema(), row_of)
    }

    /// [`compile`](Self::compile) for a filter validated against `schema` instead of the view's
    /// own: a collection's schema, which may have gained fields since this view's segment was
    /// written (with the same types for the fields both have). A field the view does not have
    /// holds no value on any of its rows: `is_empty` holds, value and range conditions and
    /// `is_null` do not.
    pub fn compile_for<'v>(
        &'v self,
        filter: &'v Filter,
        schema: &Schema,
        row_of: &dyn Fn(PointId) -> Option<u32>,
    ) -> Result<CompiledFilter<'v, 'a>, FilterError> {
        filter.validate(schema)?;
        if schema.is_nested() {
            let doc = Some((filter, has_id_rows(filter, row_of)));
            let mut named = vec![false; self.schema().len()];
            if !self.schema().is_nested() || !column_paths(filter, self.schema(), &mut named) {
                return Ok(CompiledFilter { view: self, root: Node::Const(true), doc, strays: None });
            }
            // Each named path's strays once, however many conditions name it.
            let fields = (0..named.len()).filter(|&i| named[i]).map(|i| self.field(i));
            let mut strays: Vec<u32> = fields.flat_map(|f| f.stray_rows).copied().collect();
            shoal_format::sort_u32(&mut strays);
            strays.dedup();
            let root = compile_filter(self, filter, row_of);
            return Ok(CompiledFilter { view: self, root, doc, strays: Some(strays) });
        }
        Ok(CompiledFilter { view: self, root: compile_filter(self, filter, row_of), doc: None, strays: None })
    }
}

/// Nested payloads: whether every key of `f` is a path `schema` has a column for, with no
/// `nested` condition (which only documents answer); the paths' fields are marked in `named`.
fn column_paths(f: &Filter, schema: &Schema, named: &mut [bool]) -> bool {
    f.conditions().all(|c| match c {
        Condition::Filter(inner) => column_paths(inner, schema, named),
        Condition::HasId(_) => true,
        Condition::Nested { .. } => false,
        Condition::IsEmpty(k) | Condition::IsNull(k) | Condition::Field { key: k, .. } => {
            schema.field(k).map(|(i, _)| named[i] = true).is_some()
        }
    })
}

fn compile_filter(view: &PayloadView<'_>, f: &Filter, row_of: &dyn Fn(PointId) -> Option<u32>) -> Node {
    let list = |cs: &[Condition]| cs.iter().map(|c| compile_condition(view, c, row_of)).collect::<Vec<_>>();
    Node::Bool {
        must: list(&f.must),
        should: list(&f.should),
        must_not: list(&f.must_not),
        min_should: f.min_should.as_ref().map(|m| (list(&m.conditions), m.min_count)),
    }
}

/// Nested payloads: the rows of the filter's `has_id` ids in this segment, for the rows whose
/// stored documents the filter is evaluated on.
fn has_id_rows(f: &Filter, row_of: &dyn Fn(PointId) -> Option<u32>) -> Vec<(PointId, u32)> {
    fn walk(f: &Filter, row_of: &dyn Fn(PointId) -> Option<u32>, out: &mut Vec<(PointId, u32)>) {
        for c in f.conditions() {
            match c {
                Condition::HasId(list) => out.extend(list.iter().filter_map(|&id| Some((id, row_of(id)?)))),
                Condition::Filter(inner) => walk(inner, row_of, out),
                _ => {}
            }
        }
    }
    let mut rows = Vec::new();
    walk(f, row_of, &mut rows);
    rows
}

/// The code of the value equal to `l` (as the reference evaluator compares them: an integer
/// literal equals an integral number, whatever the column's type), if the column has it.
fn literal_code(field: &FieldView<'_>, l: &Literal) -> Option<u32> {
    let key = |k: u64| field.dict.find_key(k);
    let i = match (field.field_type, l) {
        (FieldType::Keyword, Literal::Keyword(s)) => field.dict.find_string(s)?,
        (FieldType::Integer, Literal::Integer(x)) => key(key_of_i64(*x))?,
        // Nested payloads: a float value equal to the integer (one that is exactly an `f64`).
        (FieldType::Float, Literal::Integer(x)) => {
            let f = *x as f64;
            // (`as` saturates: 2^63 is no `i64`.)
            key(key_of_f64(f)).filter(|_| f != 9_223_372_036_854_775_808.0 && f as i64 == *x)?
        }
        (FieldType::Bool, Literal::Bool(b)) => key(*b as u64)?,
        _ => return None,
    };
    Some(i + CODE_FIRST_VALUE)
}

fn range_codes(field: &FieldView<'_>, r: &Range) -> (u32, u32) {
    // Only numbers are in ranges.
    let (Dict::Keys(keys), FieldType::Integer | FieldType::Float) = (field.dict, field.field_type) else {
        return (0, 0);
    };
    let as_f64 = |k: u64| match field.field_type {
        FieldType::Integer => i64_of_key(k) as f64,
        _ => f64_of_key(k),
    };
    // Values ascend, so each side of the range is a prefix/suffix of the dictionary.
    let lo = keys.partition_point(|&k| !r.above_lower(as_f64(k)));
    let hi = keys.partition_point(|&k| r.below_upper(as_f64(k)));
    if lo < hi { (lo as u32 + CODE_FIRST_VALUE, hi as u32 + CODE_FIRST_VALUE) } else { (0, 0) }
}

fn codes_of(field: &FieldView<'_>, list: &[Literal]) -> Vec<u32> {
    let mut v: Vec<u32> = list.iter().filter_map(|l| literal_code(field, l)).collect();
    shoal_format::sort_u32(&mut v);
    v.dedup();
    v
}

fn compile_condition(view: &PayloadView<'_>, c: &Condition, row_of: &dyn Fn(PointId) -> Option<u32>) -> Node {
    let field_index = |k: &str| view.schema().field(k).map(|(i, _)| i);
    match c {
        Condition::Filter(f) => compile_filter(view, f, row_of),
        Condition::HasId(ids) => {
            let mut rows: Vec<u32> = ids.iter().filter_map(|&id| row_of(id)).filter(|&r| r < view.rows()).collect();
            shoal_format::sort_u32(&mut rows);
            rows.dedup();
            Node::Rows(rows)
        }
        // Refused by validation in flat mode.
        Condition::Nested { .. } => Node::Const(false),
        // A field this view does not have (see `compile_for`) holds no value on its rows.
        Condition::IsEmpty(k) => field_index(k).map_or(Node::Const(true), Node::IsEmpty),
        Condition::IsNull(k) => field_index(k).map_or(Node::Const(false), Node::IsNull),
        Condition::Field { key, check } => {
            let Some(i) = field_index(key) else { return Node::Const(false) };
            let field = view.field(i);
            let col = &field.column;
            let any =
                |codes: CodeSet| if codes.is_empty() { Node::Const(false) } else { Node::Any { field: i, codes } };
            match check {
                FieldCheck::Value(l) => match literal_code(field, l) {
                    Some(code) => any(col.code_range(code, code + 1)),
                    None => Node::Const(false),
                },
                FieldCheck::Any(list) => any(col.code_list(codes_of(field, list))),
                FieldCheck::Except(list) => {
                    let excluded = codes_of(field, list);
                    if col.meta.mode == MODE_SETS {
                        // "Some value outside the list" = some value in the complement.
                        let CodeSet::Mask(out) = col.code_list(excluded) else { return Node::Const(false) };
                        let CodeSet::Mask(all) = col.code_range(CODE_FIRST_VALUE, col.meta.dict_len + CODE_FIRST_VALUE)
                        else {
                            return Node::Const(false);
                        };
                        any(CodeSet::Mask(all & !out))
                    } else {
                        Node::Except { field: i, codes: excluded }
                    }
                }
                FieldCheck::Range(r) => {
                    let (lo, hi) = range_codes(field, r);
                    any(col.code_range(lo, hi))
                }
            }
        }
    }
}

#[inline]
fn eval(view: &PayloadView<'_>, n: &Node, row: u32) -> bool {
    match n {
        Node::Const(b) => *b,
        Node::Any { field, codes } => view.field(*field).column.any_in(row, codes),
        Node::Except { field, codes } => view.field(*field).column.any_code(row, |c| codes.binary_search(&c).is_err()),
        Node::IsEmpty(f) => view.field(*f).column.is_empty(row),
        Node::IsNull(f) => view.field(*f).column.is_null(row),
        Node::Rows(rows) => rows.binary_search(&row).is_ok(),
        Node::Bool { .. } => eval_bool(view, n, None, row),
    }
}

/// [`eval`] of a `Bool` node, leaving out `must[skip]` (already known to hold).
fn eval_bool(view: &PayloadView<'_>, n: &Node, skip: Option<usize>, row: u32) -> bool {
    let Node::Bool { must, should, must_not, min_should } = n else { return eval(view, n, row) };
    must.iter().enumerate().all(|(i, c)| Some(i) == skip || eval(view, c, row))
        && (should.is_empty() || should.iter().any(|c| eval(view, c, row)))
        && !must_not.iter().any(|c| eval(view, c, row))
        && min_should
            .as_ref()
            .is_none_or(|(cs, k)| *k == 0 || cs.iter().filter(|c| eval(view, c, row)).take(*k).count() == *k)
}

fn estimate(view: &PayloadView<'_>, n: &Node) -> Cardinality {
    let total = view.rows() as u64;
    let values_bound = |col: &ColumnRef<'_>, pairs: u64| {
        // A multi row adds at most (its values - 1) extra pairs.
        let extra = col.meta.multi_len as u64 - (col.meta.multi_points as u64).min(col.meta.multi_len as u64);
        let valued = col.meta.valued_points as u64;
        let all_pairs = valued + extra;
        let max = pairs.min(valued);
        let min = pairs.saturating_sub(extra).min(max);
        let expected = if all_pairs == 0 { 0 } else { (pairs as u128 * valued as u128 / all_pairs as u128) as u64 };
        Cardinality::new(min, expected, max)
    };
    match n {
        Node::Const(b) => Cardinality::exact(if *b { total } else { 0 }),
        Node::Rows(r) => Cardinality::exact(r.len() as u64),
        Node::IsNull(f) => Cardinality::exact(view.field(*f).column.meta.null_points as u64),
        Node::IsEmpty(f) => {
            let m = view.field(*f).column.meta;
            Cardinality::exact(total.saturating_sub(m.valued_points as u64 + m.nulls_only_points as u64))
        }
        Node::Any { field, codes } => {
            let fv = view.field(*field);
            values_bound(&fv.column, pairs(codes, &fv.postings))
        }
        Node::Except { field, codes } => {
            let fv = view.field(*field);
            let all = fv.postings.range_len(0, fv.column.meta.dict_len);
            let excluded: u64 = codes.iter().map(|&c| fv.postings.list_len(c - CODE_FIRST_VALUE)).sum();
            values_bound(&fv.column, all.saturating_sub(excluded))
        }
        Node::Bool { must, should, must_not, min_should } => {
            let mut parts: Vec<Cardinality> = must.iter().map(|c| estimate(view, c)).collect();
            if !should.is_empty() {
                parts.push(combine_or(total, should.iter().map(|c| estimate(view, c))));
            }
            for c in must_not {
                let e = estimate(view, c);
                parts.push(Cardinality::new(
                    total.saturating_sub(e.max),
                    total.saturating_sub(e.expected),
                    total.saturating_sub(e.min),
                ));
            }
            if let Some((cs, k)) = min_should
                && *k > 0
            {
                // At least one of the conditions must hold: bounded like `should`.
                let mut e = combine_or(total, cs.iter().map(|c| estimate(view, c)));
                if *k > cs.len() {
                    e = Cardinality::exact(0);
                }
                if *k > 1 {
                    e = Cardinality::new(0, e.expected, e.max);
                }
                parts.push(e);
            }
            combine_and(total, parts)
        }
    }
}

fn combine_and(total: u64, parts: Vec<Cardinality>) -> Cardinality {
    if parts.is_empty() {
        return Cardinality::exact(total);
    }
    let n = parts.len() as u64;
    let max = parts.iter().map(|c| c.max).min().unwrap_or(total).min(total);
    let sum_min: u64 = parts.iter().fold(0u64, |a, c| a.saturating_add(c.min));
    let min = sum_min.saturating_sub((n - 1).saturating_mul(total)).min(max);
    let mut expected = total as f64;
    for c in &parts {
        expected *= if total == 0 { 0.0 } else { c.expected as f64 / total as f64 };
    }
    Cardinality::new(min, expected as u64, max)
}

fn combine_or(total: u64, parts: impl Iterator<Item = Cardinality>) -> Cardinality {
    let (mut min, mut max, mut miss) = (0u64, 0u64, 1.0f64);
    for c in parts {
        min = min.max(c.min);
        max = max.saturating_add(c.max);
        miss *= if total == 0 { 1.0 } else { 1.0 - c.expected as f64 / total as f64 };
    }
    let max = max.min(total);
    let expected = (total as f64 * (1.0 - miss)) as u64;
    Cardinality::new(min, expected, max)
}

/// A `must` condition matching fewer than 1 / `NARROW_FACTOR` of the rows is evaluated first and
/// the rest of its filter checked row by row on its matches.
const NARROW_FACTOR: u64 = 16;

fn matching(view: &PayloadView<'_>, n: &Node) -> Bitset {
    let total = view.rows();
    match n {
        Node::Const(b) => {
            if *b {
                Bitset::full(total)
            } else {
                Bitset::empty(total)
            }
        }
        Node::Rows(rows) => {
            let mut b = Bitset::empty(total);
            rows.iter().filter(|&&r| r < total).for_each(|&r| b.insert(r));
            b
        }
        Node::Any { field, codes } => {
            let fv = view.field(*field);
            let mut b = Bitset::empty(total);
            let mut insert = |rows: &[u32]| b.insert_all(rows);
            match codes {
                // A range of values: one run of the (value, row) pairs of plain lists.
                CodeSet::Range(lo, hi) => fv.postings.for_each_run_in(
                    lo.saturating_sub(CODE_FIRST_VALUE),
                    hi.saturating_sub(CODE_FIRST_VALUE),
                    &mut insert,
                ),
                _ => codes.for_each_value(|i| fv.postings.for_each_run(i, &mut insert)),
            }
            b
        }
        Node::Except { field, codes } => {
            let fv = view.field(*field);
            let mut b = Bitset::empty(total);
            for i in 0..fv.column.meta.dict_len {
                if codes.binary_search(&(i + CODE_FIRST_VALUE)).is_err() {
                    fv.postings.for_each_run(i, &mut |rows| b.insert_all(rows));
                }
            }
            b
        }
        Node::IsEmpty(f) => {
            let col = &view.field(*f).column;
            let mut b = Bitset::empty(total);
            for r in 0..total {
                if col.code(r) == CODE_EMPTY {
                    b.insert(r);
                }
            }
            col.nulls_only_rows.iter().for_each(|&r| b.remove(r));
            b
        }
        Node::IsNull(f) => {
            let col = &view.field(*f).column;
            let mut b = Bitset::empty(total);
            col.null_rows.iter().filter(|&&r| r < total && col.code(r) == CODE_EMPTY).for_each(|&r| b.insert(r));
            b
        }
        Node::Bool { must, should, must_not, min_should } => {
            // A selective `must` condition: materialise only its rows and check the rest of
            // the filter on each of them, rather than building every condition's full set.
            let narrowest = must.iter().enumerate().map(|(i, c)| (estimate(view, c).max, i)).min();
            if let Some((max, i)) = narrowest
                && max.saturating_mul(NARROW_FACTOR) < u64::from(total)
            {
                let mut rows = matching(view, &must[i]);
                if must.len() > 1 || !should.is_empty() || !must_not.is_empty() || min_should.is_some() {
                    let mut out = Bitset::empty(total);
                    rows.iter().filter(|&r| eval_bool(view, n, Some(i), r)).for_each(|r| out.insert(r));
                    rows = out;
                }
                return rows;
            }
            let mut acc = Bitset::full(total);
            for c in must {
                acc.and(&matching(view, c));
            }
            if !should.is_empty() {
                let mut any = Bitset::empty(total);
                for c in should {
                    any.or(&matching(view, c));
                }
                acc.and(&any);
            }
            for c in must_not {
                acc.and_not(&matching(view, c));
            }
            if let Some((cs, k)) = min_should
                && *k > 0
            {
                let mut counts = vec![0u32; total as usize];
                for c in cs {
                    for r in matching(view, c).iter() {
                        counts[r as usize] += 1;
                    }
                }
                for (r, &n) in counts.iter().enumerate() {
                    if (n as usize) < *k {
                        acc.remove(r as u32);
                    }
                }
            }
            acc
        }
    }
}

impl<'v, 'a> CompiledFilter<'v, 'a> {
    /// The view this filter is bound to.
    pub fn view(&self) -> &'v PayloadView<'a> {
        self.view
    }

    /// Whether `row` passes (rows beyond the segment never do).
    #[inline]
    pub fn matches(&self, row: u32) -> bool {
        row < self.view.rows()
            && match &self.doc {
                Some((f, ids)) if self.strays.as_ref().is_none_or(|s| s.binary_search(&row).is_ok()) => {
                    doc_passes(self.view, f, ids, row)
                }
                _ => eval(self.view, &self.root, row),
            }
    }

    /// Whether evaluating the filter reads stored documents (nested payloads: a path the
    /// segment has no column for, a `nested` condition, or rows whose values at a named path
    /// no column holds): a reader without the documents cannot evaluate it.
    pub fn reads_documents(&self) -> bool {
        self.doc.is_some() && self.strays.as_ref().is_none_or(|s| !s.is_empty())
    }

    /// Bounds on the number of matching rows, from the index sizes alone (no scan).
    pub fn estimate_cardinality(&self) -> Cardinality {
        let rows = u64::from(self.view.rows());
        match (&self.doc, &self.strays) {
            // Unknown without evaluating every document: anywhere from none to every row.
            (Some(_), None) => Cardinality::new(0, rows, rows),
            // Each stray row may go either way.
            (Some(_), Some(s)) => {
                let (e, n) = (estimate(self.view, &self.root), s.len() as u64);
                Cardinality::new(e.min.saturating_sub(n), e.expected, e.max.saturating_add(n).min(rows))
            }
            (None, _) => estimate(self.view, &self.root),
        }
    }

    /// Every matching row, from the value → rows indexes (columns only for `is_empty`; stray
    /// rows of nested payloads from their documents).
    pub fn matching_points(&self) -> Bitset {
        let Some((f, ids)) = &self.doc else { return matching(self.view, &self.root) };
        let Some(strays) = &self.strays else {
            let mut b = Bitset::empty(self.view.rows());
            (0..self.view.rows()).filter(|&r| self.matches(r)).for_each(|r| b.insert(r));
            return b;
        };
        let mut b = matching(self.view, &self.root);
        for &r in strays {
            if doc_passes(self.view, f, ids, r) {
                b.insert(r);
            } else {
                b.remove(r);
            }
        }
        b
    }
}

/// Whether row `row`'s stored document passes `f` (nested mode; `ids`: the rows of its
/// `has_id` ids). A document that cannot be read (a damaged file, which `verify` reports)
/// passes nothing.
fn doc_passes(view: &PayloadView<'_>, f: &Filter, ids: &[(PointId, u32)], row: u32) -> bool {
    let has_id = |list: &[PointId]| ids.iter().any(|&(id, r)| r == row && list.contains(&id));
    view.document(row).is_ok_and(|doc| crate::reference::matches_by(f, &doc, &has_id, true))
}
