//! Several dense vectors per point (`docs/format.md`, "Named vectors"): their settings, and in a
//! segment with two or more of them (header bit 1) where each one's sections lie. Vector 0 (the
//! first by name) keeps the v1 sections and the stored row order; vector `d >= 1` has its own
//! `VECTORS` and IVF sections, stored by position (its own partitions), with the position ↔ row
//! maps when it has an index.

use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::{
    DENSE_META, DENSE_NAME, DENSE_POSITIONS, DENSE_ROWS, DenseMeta, KIND_VECTORS, MAX_DENSE_VECTORS, MAX_DIM,
    SegmentReader, cast_records, dense_kind, range_of,
};
use shoal_index::Metric;
use shoal_index::ivf::{IvfData, IvfIndex, IvfQuery, IvfSections};

use crate::Error;
use crate::sections::bad;

/// One dense vector of a collection: its name (`""` is Qdrant's unnamed vector), dimension and
/// metric. Every point holds every dense vector of its collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseSpec {
    /// The name: UTF-8, at most 255 bytes, no control characters; unique across the
    /// collection's dense and sparse vectors.
    pub name: String,
    /// Dimension, 1..=65536.
    pub dim: usize,
    /// How vectors are compared.
    pub metric: Metric,
}

impl DenseSpec {
    /// Reads `{"<name>": {"dim": 384, "metric": "cosine"}, ...}` (metrics `l2`, `dot`,
    /// `cosine`), sorted by name and checked as [`check_specs`] does.
    pub fn list_from_value(v: &serde_json::Value) -> Result<Vec<DenseSpec>, Error> {
        let bad = || {
            Error::InvalidConfig("vectors: {\"name\": {\"dim\": 1..=65536, \"metric\": \"l2\" | \"dot\" | \"cosine\"}}")
        };
        let mut specs = Vec::new();
        for (name, spec) in v.as_object().ok_or_else(bad)? {
            let o = spec.as_object().filter(|o| o.len() == 2).ok_or_else(bad)?;
            let dim = o.get("dim").and_then(serde_json::Value::as_u64).ok_or_else(bad)?;
            let metric = o.get("metric").and_then(serde_json::Value::as_str).and_then(Metric::parse).ok_or_else(bad)?;
            specs.push(DenseSpec { name: name.clone(), dim: usize::try_from(dim).unwrap_or(usize::MAX), metric });
        }
        sort_specs(&mut specs);
        check_specs(&specs)?;
        Ok(specs)
    }
}

/// Sorts dense vectors by name (`str`'s order is its bytes'): their numbers `d`. An insertion
/// sort of at most a few.
pub(crate) fn sort_specs(specs: &mut [DenseSpec]) {
    for i in 1..specs.len() {
        let mut j = i;
        while j > 0 && specs[j - 1].name > specs[j].name {
            specs.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Checks a collection's dense vectors (sorted): 1..=16 of them, names valid and unique,
/// dimensions in range.
pub(crate) fn check_specs(specs: &[DenseSpec]) -> Result<(), Error> {
    if specs.is_empty() || specs.len() > MAX_DENSE_VECTORS {
        return Err(Error::InvalidConfig("a collection has 1 to 16 dense vectors"));
    }
    if specs.iter().any(|s| s.dim == 0 || s.dim > MAX_DIM as usize) {
        return Err(Error::InvalidConfig("dim must be in 1..=65536"));
    }
    if specs.iter().any(|s| !valid_name(&s.name)) {
        return Err(Error::InvalidConfig("a vector name is at most 255 bytes of UTF-8 without control characters"));
    }
    if specs.windows(2).any(|w| w[0].name == w[1].name) {
        return Err(Error::InvalidConfig("vector names must be unique"));
    }
    Ok(())
}

/// Whether `name` can name a dense vector (`""` included).
fn valid_name(name: &str) -> bool {
    name.len() <= 255 && !name.chars().any(char::is_control)
}

/// Where dense vector `d >= 1`'s sections lie in a segment.
pub(crate) struct DenseRanges {
    pub(crate) spec: DenseSpec,
    /// `VECTORS`, by position.
    vectors: Range<usize>,
    pub(crate) ivf: Option<IvfSections>,
    /// `DENSE_ROWS` and `DENSE_POSITIONS` (with an index).
    maps: Option<(Range<usize>, Range<usize>)>,
}

/// The name of dense vector `d` in a segment with header bit 1.
fn name_of(reader: &SegmentReader<'_>, d: usize) -> Result<String, Error> {
    let name = reader.require(dense_kind(d, DENSE_NAME))?;
    let name = core::str::from_utf8(name).map_err(|_| bad("DENSE_NAME", "not UTF-8"))?;
    if !valid_name(name) {
        return Err(bad("DENSE_NAME", "invalid"));
    }
    Ok(name.into())
}

/// Opens the dense vectors of a segment with header bit 1: vector 0's
/// name, then every vector `d >= 1` (they follow without a gap, names ascending). The position
/// maps are checked in full here (8 bytes a row): a search indexes by them.
pub(crate) fn open_all(reader: &SegmentReader<'_>, rows: usize) -> Result<(String, Vec<DenseRanges>), Error> {
    let bytes = reader.bytes();
    let name0 = name_of(reader, 0)?;
    let mut out: Vec<DenseRanges> = Vec::new();
    let mut ended = false;
    for d in 1..MAX_DENSE_VECTORS {
        // Vectors follow without a gap: none after a missing one.
        let Some(meta) = reader.section(dense_kind(d, DENSE_META)) else {
            ended = true;
            continue;
        };
        if ended {
            return Err(bad("DENSE_META", "a gap"));
        }
        let meta: DenseMeta = match cast_records::<DenseMeta>("DENSE_META", meta)? {
            [m] => *m,
            _ => return Err(bad("DENSE_META", "must hold exactly one record")),
        };
        let metric = Metric::from_code(meta.metric).ok_or(bad("DENSE_META", "unknown metric"))?;
        if meta.dim == 0 || meta.dim > MAX_DIM || meta.present != rows as u64 || meta.reserved != [0; 16] {
            return Err(bad("DENSE_META", "out of range"));
        }
        let dim = meta.dim as usize;
        let name = name_of(reader, d)?;
        let previous = out.last().map_or(name0.as_str(), |r| r.spec.name.as_str());
        if previous.as_bytes() >= name.as_bytes() {
            return Err(bad("DENSE_NAME", "names out of order"));
        }
        let vectors = reader.require(dense_kind(d, KIND_VECTORS))?;
        if Some(cast_records::<f32>("VECTORS", vectors)?.len()) != rows.checked_mul(dim) {
            return Err(bad("VECTORS", "length does not match rows x dim"));
        }
        let ivf = IvfSections::open(reader, (dim, d), rows)?;
        let maps = match (reader.section(dense_kind(d, DENSE_ROWS)), reader.section(dense_kind(d, DENSE_POSITIONS))) {
            (None, None) if ivf.is_none() => None,
            (Some(r), Some(p)) if ivf.is_some() => {
                let (to_row, to_pos) =
                    (cast_records::<u32>("DENSE_ROWS", r)?, cast_records::<u32>("DENSE_POSITIONS", p)?);
                let mut inverse = to_row.len() == rows && to_pos.len() == rows;
                if inverse {
                    for (pos, &row) in to_row.iter().enumerate() {
                        inverse &= to_pos.get(row as usize) == Some(&(pos as u32));
                    }
                }
                if !inverse {
                    return Err(bad("DENSE_ROWS", "maps not inverse"));
                }
                Some((range_of(bytes, r), range_of(bytes, p)))
            }
            _ => return Err(bad("DENSE_ROWS", "maps without an index")),
        };
        let spec = DenseSpec { name, dim, metric };
        out.push(DenseRanges { spec, vectors: range_of(bytes, vectors), ivf, maps });
    }
    if out.is_empty() {
        return Err(bad("DENSE_META", "one dense vector"));
    }
    Ok((name0, out))
}

/// One dense vector of a sealed segment, over its bytes: what a search of it reads.
#[derive(Clone, Copy)]
pub(crate) struct Space<'a> {
    pub(crate) dim: usize,
    /// The vectors by position (`None` in a codes-only segment).
    pub(crate) vectors: Option<&'a [f32]>,
    /// The IVF index, its data (with the position → row map) and its defaults.
    pub(crate) ivf: Option<(&'a IvfIndex, IvfData<'a>, IvfQuery)>,
    /// The position of each row (`None`: position = row).
    pub(crate) positions: Option<&'a [u32]>,
    /// The row of each position (`None`: position = row).
    pub(crate) rows: Option<&'a [u32]>,
}

impl<'a> Space<'a> {
    /// The vector of `row` (`None` in a codes-only segment).
    pub(crate) fn vector(&self, row: usize) -> Option<&'a [f32]> {
        let pos = self.positions.map_or(row, |p| p[row] as usize);
        self.vectors.map(|v| &v[pos * self.dim..(pos + 1) * self.dim])
    }
}

impl DenseRanges {
    /// The vector's view over the segment's `bytes`.
    pub(crate) fn space<'a>(&'a self, bytes: &'a [u8]) -> Space<'a> {
        let vectors: &'a [f32] = bytemuck::cast_slice(&bytes[self.vectors.clone()]);
        let maps = self.maps.as_ref().map(|(r, p)| -> (&'a [u32], &'a [u32]) {
            (bytemuck::cast_slice(&bytes[r.clone()]), bytemuck::cast_slice(&bytes[p.clone()]))
        });
        let ivf = self.ivf.as_ref().map(|ivf| {
            let mut data = ivf.data(bytes, self.spec.dim, Some(vectors));
            data.rows = maps.map(|m| m.0);
            (&ivf.index, data, ivf.defaults)
        });
        Space { dim: self.spec.dim, vectors: Some(vectors), ivf, positions: maps.map(|m| m.1), rows: maps.map(|m| m.0) }
    }

    /// `verify()`: every element finite, the index's floats finite.
    pub(crate) fn verify(&self, bytes: &[u8]) -> Result<(), Error> {
        let v: &[f32] = bytemuck::cast_slice(&bytes[self.vectors.clone()]);
        if v.iter().any(|x| !x.is_finite()) {
            return Err(bad("VECTORS", "non-finite element"));
        }
        self.ivf.as_ref().map_or(Ok(()), |ivf| ivf.verify(bytes).map_err(Error::from))
    }
}
