//! Sparse vectors (`docs/format.md`, "Sparse vectors"): (index, value) pairs per point, scored
//! by a dot product over the indices a query shares with a point, optionally weighted by the
//! indices' inverse document frequency over the whole set. Held per row in memory
//! ([`SparseRows`]: the mutable segment, a seal's snapshot) and in a sealed segment's sections
//! ([`SparseView`]: the rows, and one postings list per index for search).
//!
//! One scoring rule everywhere: `score = 0.0`, then `score += w_i * x_i` for each shared index
//! `i` in ascending order, in `f32` (each product and sum rounded: never fused), so the bits
//! are the same on every target and however the rows are split into segments.

use alloc::borrow::Cow;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use serde_json::Value;
use shoal_format::{
    MAX_SPARSE_VECTORS, SPARSE_META, SPARSE_NAME, SPARSE_POSTINGS, SPARSE_PRESENT, SPARSE_ROW_ENTRIES,
    SPARSE_ROW_OFFSETS, SPARSE_TERMS, SPARSE_VALUES, SegmentReader, SparseEntry, SparseMeta, SparseTerm, cast_records,
    range_of, sparse_kind,
};

use crate::sections::bad;
use crate::{Error, PointId};

/// Most (index, value) pairs in one sparse vector, stored or query.
pub const MAX_SPARSE_PAIRS: usize = 65_536;
/// Longest sparse vector name, in bytes.
pub const MAX_SPARSE_NAME: usize = 255;

/// Flag bit of [`SparseMeta::flags`]: the vector's scores weight each index by its IDF.
const FLAG_IDF: u32 = 1;

/// A sparse vector: (index, value) pairs with unique indices, sorted by index, finite values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparseVector {
    entries: Vec<SparseEntry>,
}

impl SparseVector {
    /// Checks and sorts the pairs `indices[i]`, `values[i]`: as many values as indices, at
    /// most [`MAX_SPARSE_PAIRS`], no index twice, every value finite.
    pub fn new(indices: &[u32], values: &[f32]) -> Result<SparseVector, &'static str> {
        if indices.len() != values.len() {
            return Err("as many values as indices are needed");
        }
        if indices.len() > MAX_SPARSE_PAIRS {
            return Err("more than 65,536 pairs");
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err("a value is not finite");
        }
        // Sorted by index through the one integer sort (index, then position).
        let mut keys: Vec<u64> = indices.iter().enumerate().map(|(p, &i)| u64::from(i) << 32 | p as u64).collect();
        shoal_format::sort_u64(&mut keys);
        let mut entries = Vec::with_capacity(keys.len());
        for (j, &k) in keys.iter().enumerate() {
            if j > 0 && keys[j - 1] >> 32 == k >> 32 {
                return Err("an index appears twice");
            }
            entries.push(SparseEntry { index: (k >> 32) as u32, value: values[k as u32 as usize] });
        }
        Ok(SparseVector { entries })
    }

    /// Reads `{"indices": [u32...], "values": [f32...]}` (Qdrant's form).
    pub fn from_value(v: &Value) -> Result<SparseVector, &'static str> {
        let o = v.as_object().filter(|o| o.len() == 2);
        let list = |key: &str| o.and_then(|o| o.get(key)).and_then(Value::as_array);
        let (Some(ix), Some(vs)) = (list("indices"), list("values")) else {
            return Err("a sparse vector is {\"indices\": [u32...], \"values\": [number...]}");
        };
        let mut indices = Vec::with_capacity(ix.len());
        let mut values = Vec::with_capacity(vs.len());
        for x in ix {
            indices
                .push(x.as_u64().and_then(|x| u32::try_from(x).ok()).ok_or("an index is not an integer in 0..2^32")?);
        }
        for x in vs {
            values.push(x.as_f64().ok_or("a value is not a number")? as f32);
        }
        SparseVector::new(&indices, &values)
    }

    /// `{"indices": [...], "values": [...]}`, by index ascending.
    pub fn to_value(&self) -> Value {
        let indices = self.entries.iter().map(|e| Value::from(e.index)).collect();
        let values = self.entries.iter().map(|e| Value::from(e.value)).collect();
        let mut o = serde_json::Map::new();
        o.insert("indices".into(), Value::Array(indices));
        o.insert("values".into(), Value::Array(values));
        Value::Object(o)
    }

    /// The pairs, by index ascending.
    pub fn entries(&self) -> &[SparseEntry] {
        &self.entries
    }

    /// The vector of pairs already sorted by index, unique and finite.
    pub(crate) fn from_sorted(entries: Vec<SparseEntry>) -> SparseVector {
        SparseVector { entries }
    }
}

/// A sparse vector of a collection: its name and whether its scores weight each index by the
/// index's inverse document frequency over the set (Qdrant's `modifier: "idf"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseSpec {
    /// Its name (unique, not empty, at most [`MAX_SPARSE_NAME`] bytes, no control characters).
    pub name: String,
    /// The `idf` modifier.
    pub idf: bool,
}

impl SparseSpec {
    /// Sparse vectors from their JSON configuration, `{"name": {"modifier": "none" | "idf"}}`
    /// (the manifest's, the server's and the npm package's form; `modifier` may be left out
    /// for `none` when `strict` is false), by name ascending, checked.
    pub fn list_from_value(v: &Value, strict: bool) -> Result<Vec<SparseSpec>, Error> {
        let bad = || Error::InvalidConfig("sparse vectors: {\"name\": {\"modifier\": \"none\" | \"idf\"}}");
        let mut specs = Vec::new();
        for (name, spec) in v.as_object().ok_or_else(bad)? {
            let o = spec.as_object().filter(|o| o.keys().all(|k| k == "modifier")).ok_or_else(bad)?;
            let idf = match o.get("modifier").and_then(Value::as_str) {
                Some("idf") => true,
                Some("none") => false,
                None if !strict && o.is_empty() => false,
                _ => return Err(bad()),
            };
            specs.push(SparseSpec { name: name.clone(), idf });
        }
        sort_specs(&mut specs);
        check_specs(&specs)?;
        Ok(specs)
    }
}

/// Sorts sparse vectors by name (`str`'s order is its bytes'): an insertion sort of at most a
/// few.
pub(crate) fn sort_specs(specs: &mut [SparseSpec]) {
    for i in 1..specs.len() {
        let mut j = i;
        while j > 0 && specs[j - 1].name > specs[j].name {
            specs.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Checks a collection's sparse vectors: at most 16, names valid, unique and in byte order.
pub(crate) fn check_specs(specs: &[SparseSpec]) -> Result<(), Error> {
    if specs.len() > MAX_SPARSE_VECTORS {
        return Err(Error::InvalidConfig("at most 16 sparse vectors"));
    }
    for (i, s) in specs.iter().enumerate() {
        if s.name.is_empty() || s.name.len() > MAX_SPARSE_NAME || s.name.chars().any(char::is_control) {
            return Err(Error::InvalidConfig(
                "a sparse vector's name is 1..=255 bytes of UTF-8 without control characters",
            ));
        }
        if i > 0 && specs[i - 1].name >= s.name {
            return Err(Error::InvalidConfig("sparse vector names must be unique (and sorted)"));
        }
    }
    Ok(())
}

/// The weight of a query value `q` under the `idf` modifier: `q` times the index's IDF (`n`
/// rows holding the vector, `df` of them holding the index; BM25's formula).
pub(crate) fn idf_weight(q: f32, n: u64, df: u64) -> f32 {
    let sat = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    q * shoal_text::Bm25::idf(sat(n), sat(df))
}

/// The score of a stored vector for query weights `w` (both by index ascending): `None` when
/// they share no index. The reference every other path equals, bit for bit.
pub fn dot(w: &[SparseEntry], x: &[SparseEntry]) -> Option<f32> {
    let (mut i, mut j, mut score, mut shared) = (0, 0, 0.0f32, false);
    while i < w.len() && j < x.len() {
        match w[i].index.cmp(&x[j].index) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                score += w[i].value * x[j].value;
                shared = true;
                i += 1;
                j += 1;
            }
        }
    }
    shared.then_some(score)
}

/// Rows holding each index, keyed `PointId::Num(index)`: the id map's type, so that the wasm
/// package holds one instantiation of the hash map's code, not two (lookups only, never
/// iterated).
type DfMap = crate::mutable::IdMap;

/// One sparse vector's rows in memory (the mutable segment, a seal's snapshot): row `r`'s pairs
/// are `entries[offsets[r]..offsets[r + 1]]` when it holds the vector.
#[derive(Clone, Debug)]
pub(crate) struct SparseRows {
    offsets: Vec<u64>,
    entries: Vec<SparseEntry>,
    present: Vec<u64>,
    present_count: u64,
    /// Rows holding each index.
    df: DfMap,
}

impl Default for SparseRows {
    fn default() -> Self {
        SparseRows {
            offsets: vec![0],
            entries: Vec::new(),
            present: Vec::new(),
            present_count: 0,
            df: DfMap::default(),
        }
    }
}

impl SparseRows {
    /// Rows, holding the vector or not.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Appends a row (`None`: it does not hold the vector).
    pub(crate) fn push(&mut self, v: Option<&[SparseEntry]>) {
        let r = self.len();
        if let Some(v) = v {
            if self.present.len() <= r / 64 {
                self.present.resize(r / 64 + 1, 0);
            }
            self.present[r / 64] |= 1 << (r % 64);
            self.present_count += 1;
            self.entries.extend_from_slice(v);
            for e in v {
                *self.df.entry(PointId::Num(u64::from(e.index))).or_insert(0) += 1;
            }
        }
        self.offsets.push(self.entries.len() as u64);
    }

    /// Sets row `r` (the next one after padding with rows that do not hold the vector).
    pub(crate) fn push_at(&mut self, r: usize, v: Option<&[SparseEntry]>) {
        while self.len() < r {
            self.push(None);
        }
        self.push(v);
    }

    /// The rows `rows` (each below `len`), renumbered from 0.
    pub(crate) fn select(&self, rows: impl Iterator<Item = usize>) -> SparseRows {
        let mut out = SparseRows::default();
        for r in rows {
            out.push(self.row(r));
        }
        out
    }

    /// Row `r`'s pairs, if it holds the vector.
    pub(crate) fn row(&self, r: usize) -> Option<&[SparseEntry]> {
        let held = self.present.get(r / 64).is_some_and(|w| w >> (r % 64) & 1 == 1);
        held.then(|| &self.entries[self.offsets[r] as usize..self.offsets[r + 1] as usize])
    }

    /// Rows holding the vector.
    pub(crate) fn present(&self) -> u64 {
        self.present_count
    }

    /// Rows holding index `i`.
    pub(crate) fn df(&self, i: u32) -> u64 {
        self.df.get(&PointId::Num(u64::from(i))).map_or(0, |&d| u64::from(d))
    }
}

/// The sections of one sparse vector, built from its rows in stored order.
pub(crate) struct SparseSections {
    /// `(r, bytes)` per section, `r` the section's offset in the vector's kinds.
    pub(crate) sections: Vec<(u32, Vec<u8>)>,
}

/// Builds sparse vector `spec`'s sections for `rows` rows, row `r` holding `row(r)`.
pub(crate) fn build<'a>(
    spec: &SparseSpec,
    rows: usize,
    row: impl Fn(usize) -> Result<Option<Cow<'a, [SparseEntry]>>, Error>,
) -> Result<SparseSections, Error> {
    let mut offsets: Vec<u64> = Vec::with_capacity(rows + 1);
    let mut entries: Vec<SparseEntry> = Vec::new();
    let mut present = vec![0u64; rows.div_ceil(64)];
    let mut count = 0u64;
    offsets.push(0);
    for r in 0..rows {
        if let Some(v) = row(r)? {
            present[r / 64] |= 1 << (r % 64);
            count += 1;
            entries.extend_from_slice(&v);
        }
        offsets.push(entries.len() as u64);
    }
    // The distinct indices, ascending, and each one's rows.
    let mut indices: Vec<u64> = entries.iter().map(|e| u64::from(e.index)).collect();
    shoal_format::sort_u64(&mut indices);
    let mut terms: Vec<SparseTerm> = Vec::new();
    for (j, &i) in indices.iter().enumerate() {
        if j > 0 && indices[j - 1] == i {
            terms.last_mut().expect("a term before").df += 1;
        } else {
            terms.push(SparseTerm { index: i as u32, df: 1, start: j as u64 });
        }
    }
    let mut next: Vec<u64> = terms.iter().map(|t| t.start).collect();
    let mut postings = vec![0u32; entries.len()];
    let mut values = vec![0f32; entries.len()];
    for r in 0..rows {
        for e in &entries[offsets[r] as usize..offsets[r + 1] as usize] {
            let t = terms.partition_point(|t| t.index < e.index);
            let at = next[t] as usize;
            next[t] += 1;
            postings[at] = r as u32;
            values[at] = e.value;
        }
    }
    let meta = SparseMeta {
        rows: rows as u64,
        present: count,
        nnz: entries.len() as u64,
        terms: terms.len() as u32,
        flags: if spec.idf { FLAG_IDF } else { 0 },
        reserved: [0; 32],
    };
    let bytes = |b: &[u8]| b.to_vec();
    Ok(SparseSections {
        sections: vec![
            (SPARSE_META, bytes(bytemuck::bytes_of(&meta))),
            (SPARSE_NAME, spec.name.as_bytes().to_vec()),
            (SPARSE_PRESENT, bytes(bytemuck::cast_slice(&present))),
            (SPARSE_TERMS, bytes(bytemuck::cast_slice(&terms))),
            (SPARSE_POSTINGS, bytes(bytemuck::cast_slice(&postings))),
            (SPARSE_VALUES, bytes(bytemuck::cast_slice(&values))),
            (SPARSE_ROW_OFFSETS, bytes(bytemuck::cast_slice(&offsets))),
            (SPARSE_ROW_ENTRIES, bytes(bytemuck::cast_slice(&entries))),
        ],
    })
}

/// Where a sealed segment's sparse vector lies: its spec and its sections' byte ranges.
#[derive(Clone, Debug)]
pub(crate) struct SparseRanges {
    pub(crate) spec: SparseSpec,
    /// `SPARSE_META` .. `SPARSE_ROW_ENTRIES`, by `r`.
    sections: [Range<usize>; 8],
}

impl SparseRanges {
    /// Finds and checks (lengths, the cheap checks) every sparse vector of a segment of `rows`
    /// rows: vectors `0..T` with no gap, each with all its sections.
    pub(crate) fn open_all(reader: &SegmentReader<'_>, rows: usize) -> Result<Vec<SparseRanges>, Error> {
        let mut out: Vec<SparseRanges> = Vec::new();
        for t in 0..MAX_SPARSE_VECTORS {
            let Some(_) = reader.section(sparse_kind(t, SPARSE_META)) else { break };
            let b = reader.bytes();
            let mut sections: [Range<usize>; 8] = Default::default();
            for (r, s) in sections.iter_mut().enumerate() {
                *s =
                    range_of(b, reader.section(sparse_kind(t, r as u32)).ok_or(bad("SPARSE", "a section is missing"))?);
            }
            let meta = match cast_records::<SparseMeta>("SPARSE_META", &b[sections[0].clone()])? {
                [m] => *m,
                _ => return Err(bad("SPARSE_META", "not one record")),
            };
            if meta.rows != rows as u64 || meta.flags & !FLAG_IDF != 0 || meta.reserved.iter().any(|&x| x != 0) {
                return Err(bad("SPARSE_META", "bad rows, flags or reserved bytes"));
            }
            let name = core::str::from_utf8(&b[sections[1].clone()]).map_err(|_| bad("SPARSE_NAME", "not UTF-8"))?;
            let spec = SparseSpec { name: name.into(), idf: meta.flags & FLAG_IDF != 0 };
            let ranges = SparseRanges { spec, sections };
            let v = ranges.view(b)?;
            let nnz = usize::try_from(meta.nnz).map_err(|_| bad("SPARSE_META", "nnz out of range"))?;
            if v.present.len() != rows.div_ceil(64)
                || v.terms.len() != meta.terms as usize
                || v.postings.len() != nnz
                || v.values.len() != nnz
                || v.offsets.len() != rows + 1
                || v.entries.len() != nnz
                || v.offsets.first() != Some(&0)
                || v.offsets.last() != Some(&meta.nnz)
            {
                return Err(bad("SPARSE", "lengths differ from SPARSE_META"));
            }
            out.push(ranges);
        }
        check_specs(&out.iter().map(|r| r.spec.clone()).collect::<Vec<_>>())
            .map_err(|_| bad("SPARSE_NAME", "bad or repeated name"))?;
        if reader.section(sparse_kind(out.len(), SPARSE_META)).is_some() {
            return Err(bad("SPARSE", "vectors not numbered 0.. without a gap"));
        }
        Ok(out)
    }

    /// The vector's sections in `bytes` (the segment's file). (Not inlined: one copy for its
    /// five callers in the wasm package.)
    #[inline(never)]
    pub(crate) fn view<'a>(&self, b: &'a [u8]) -> Result<SparseView<'a>, Error> {
        let s = &self.sections;
        Ok(SparseView {
            meta: cast_records::<SparseMeta>("SPARSE_META", &b[s[0].clone()])?[0],
            present: cast_records("SPARSE_PRESENT", &b[s[2].clone()])?,
            terms: cast_records("SPARSE_TERMS", &b[s[3].clone()])?,
            postings: cast_records("SPARSE_POSTINGS", &b[s[4].clone()])?,
            values: cast_records("SPARSE_VALUES", &b[s[5].clone()])?,
            offsets: cast_records("SPARSE_ROW_OFFSETS", &b[s[6].clone()])?,
            entries: cast_records("SPARSE_ROW_ENTRIES", &b[s[7].clone()])?,
        })
    }
}

/// The rows holding an index, ascending, and their values.
pub(crate) type Postings<'a> = (&'a [u32], &'a [f32]);

/// A sealed segment's sparse vector: its rows and its postings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SparseView<'a> {
    pub(crate) meta: SparseMeta,
    present: &'a [u64],
    terms: &'a [SparseTerm],
    postings: &'a [u32],
    values: &'a [f32],
    offsets: &'a [u64],
    entries: &'a [SparseEntry],
}

impl<'a> SparseView<'a> {
    /// Row `r`'s pairs, if it holds the vector (`Err` for offsets out of order or range: a
    /// damaged file, which `verify` reports).
    pub(crate) fn row(&self, r: usize) -> Result<Option<&'a [SparseEntry]>, Error> {
        if self.present.get(r / 64).is_none_or(|w| w >> (r % 64) & 1 == 0) {
            return Ok(None);
        }
        let (a, b) = (self.offsets[r], self.offsets[r + 1]);
        match (usize::try_from(a), usize::try_from(b)) {
            (Ok(a), Ok(b)) if a <= b && b <= self.entries.len() => Ok(Some(&self.entries[a..b])),
            _ => Err(bad("SPARSE_ROW_OFFSETS", "out of order or range")),
        }
    }

    /// The rows holding `index` and their values, ascending by row (`None`: no row holds it;
    /// `Err`: a damaged list).
    pub(crate) fn postings(&self, index: u32) -> Result<Option<Postings<'a>>, Error> {
        let t = self.terms.partition_point(|t| t.index < index);
        let Some(term) = self.terms.get(t).filter(|t| t.index == index) else { return Ok(None) };
        let start = usize::try_from(term.start).ok();
        match start.and_then(|s| Some(s..s.checked_add(term.df as usize)?)) {
            Some(r) if r.end <= self.postings.len() => {
                let rows = &self.postings[r.clone()];
                // Read as they are walked: a damaged list (rows repeated, unordered or past the
                // segment) is an error, never a point scored twice or another segment's point.
                let (n, mut least) = (self.offsets.len() - 1, 0);
                for &x in rows {
                    if x < least || x as usize >= n {
                        return Err(bad("SPARSE_POSTINGS", "rows not ascending or out of range"));
                    }
                    least = x.wrapping_add(1);
                }
                Ok(Some((rows, &self.values[r])))
            }
            _ => Err(bad("SPARSE_TERMS", "postings out of range")),
        }
    }

    /// Rows holding `index`.
    pub(crate) fn df(&self, index: u32) -> u64 {
        let t = self.terms.partition_point(|t| t.index < index);
        self.terms.get(t).filter(|t| t.index == index).map_or(0, |t| u64::from(t.df))
    }

    /// Reads everything: the terms strictly ascending and contiguous, each posting list's rows
    /// ascending and holding the vector, every value finite, and the rows and the postings
    /// holding the same (row, index, value) triples.
    pub(crate) fn verify(&self) -> Result<(), Error> {
        let rows = self.offsets.len() - 1;
        let mut start = 0u64;
        for (j, t) in self.terms.iter().enumerate() {
            if t.df == 0 || t.start != start || (j > 0 && self.terms[j - 1].index >= t.index) {
                return Err(bad("SPARSE_TERMS", "not ascending or not contiguous"));
            }
            start += u64::from(t.df);
        }
        if start != self.meta.nnz {
            return Err(bad("SPARSE_TERMS", "postings differ from nnz"));
        }
        let mut present = 0u64;
        // Each row's pairs found again in the postings, in order: a cursor per term.
        let mut cursor: Vec<u64> = self.terms.iter().map(|t| t.start).collect();
        for r in 0..rows {
            let Some(v) = self.row(r)? else {
                if self.offsets[r] != self.offsets[r + 1] {
                    return Err(bad("SPARSE_ROW_OFFSETS", "pairs in a row without the vector"));
                }
                continue;
            };
            present += 1;
            for (k, e) in v.iter().enumerate() {
                if (k > 0 && v[k - 1].index >= e.index) || !e.value.is_finite() {
                    return Err(bad("SPARSE_ROW_ENTRIES", "indices out of order or a value not finite"));
                }
                let t = self.terms.partition_point(|t| t.index < e.index);
                let term = self.terms.get(t).filter(|t| t.index == e.index);
                let at = cursor.get(t).copied().unwrap_or(u64::MAX) as usize;
                let ok = term.is_some_and(|term| (at as u64) < term.start + u64::from(term.df))
                    && self.postings.get(at) == Some(&(r as u32))
                    && self.values.get(at).map(|x| x.to_bits()) == Some(e.value.to_bits());
                if !ok {
                    return Err(bad("SPARSE_POSTINGS", "differ from the rows' pairs"));
                }
                cursor[t] += 1;
            }
        }
        if present != self.meta.present
            || self.present.iter().map(|w| u64::from(w.count_ones())).sum::<u64>() != present
        {
            return Err(bad("SPARSE_PRESENT", "differs from the rows"));
        }
        if !rows.is_multiple_of(64) && self.present.last().is_some_and(|w| w >> (rows % 64) != 0) {
            return Err(bad("SPARSE_PRESENT", "bits set past the rows"));
        }
        Ok(())
    }
}
