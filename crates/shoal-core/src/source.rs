//! [`Source`]: the rows a segment is written from (`write`), in memory or in mapped segments.

use alloc::borrow::Cow;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::{PointId, SparseEntry};
use shoal_index::{Flat, Rows};

use crate::Error;

/// The rows a segment is written from, by row number: what [`Rows`] gives, plus ids and
/// documents.
pub(crate) trait Source: Rows {
    /// External id of row `i`.
    fn id(&self, i: usize) -> PointId;
    /// Payload document of row `i` (`null` for none); called only when writing payloads. A
    /// document that cannot be read is an error, never a `null`.
    fn doc(&self, i: usize) -> Result<Cow<'_, Value>, Error>;
    /// Row `i`'s sparse vector `t` (`None`: it does not hold it); called only when writing
    /// sparse vectors. One that cannot be read is an error.
    fn sparse(&self, i: usize, t: usize) -> Result<Option<Cow<'_, [SparseEntry]>>, Error>;
    /// Row `i`'s dense vector `d >= 1`; called only when writing two or more dense vectors.
    fn dense(&self, i: usize, d: usize) -> &[f32];
}

/// Dense vector `d >= 1` of a source's rows taken in `order` (`None`: as they are): what the
/// vector's index is built from.
pub(crate) struct DenseOf<'a> {
    pub(crate) src: &'a dyn Source,
    pub(crate) d: usize,
    pub(crate) order: Option<&'a [u32]>,
}

impl Rows for DenseOf<'_> {
    fn len(&self) -> usize {
        self.src.len()
    }

    fn row(&self, i: usize) -> &[f32] {
        self.src.dense(self.order.map_or(i, |o| o[i] as usize), self.d)
    }
}

/// Rows held in memory.
pub(crate) struct FlatSource<'a> {
    pub(crate) ids: &'a [PointId],
    pub(crate) vectors: Flat<'a>,
    pub(crate) docs: Option<&'a [Value]>,
    /// The sparse vectors' rows, one per sparse vector of the collection.
    pub(crate) sparse: &'a [crate::sparse::SparseRows],
    /// Dense vectors `1..`: each one's rows, row-major, with its dimension.
    pub(crate) dense: &'a [(Vec<f32>, usize)],
}

impl Rows for FlatSource<'_> {
    fn len(&self) -> usize {
        self.ids.len()
    }

    fn row(&self, i: usize) -> &[f32] {
        self.vectors.row(i)
    }
}

impl Source for FlatSource<'_> {
    fn id(&self, i: usize) -> PointId {
        self.ids[i]
    }

    fn doc(&self, i: usize) -> Result<Cow<'_, Value>, Error> {
        Ok(self.docs.map_or(Cow::Owned(Value::Null), |d| Cow::Borrowed(&d[i])))
    }

    fn sparse(&self, i: usize, t: usize) -> Result<Option<Cow<'_, [SparseEntry]>>, Error> {
        Ok(self.sparse.get(t).and_then(|s| s.row(i)).map(Cow::Borrowed))
    }

    fn dense(&self, i: usize, d: usize) -> &[f32] {
        let (v, dim) = &self.dense[d - 1];
        &v[i * dim..(i + 1) * dim]
    }
}
