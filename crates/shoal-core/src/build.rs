//! [`NewSegment`]: a segment written straight from rows a host already holds — a memory-mapped
//! vector file — without a collection in between: the rows are read where they are, not copied
//! into a mutable segment first (`shoal build`).

use alloc::borrow::Cow;

use serde_json::Value;
use shoal_index::progress::{Progress, Quiet};
use shoal_index::{Flat, Rows, normalize};
use shoal_kernels::Kernels;
use shoal_payload::Schema;

use crate::collection::{check_payloads_against, first_non_finite};
use crate::source::Source;
use crate::{CollectionConfig, Error, IndexKind, write};

/// Rows `0..n` to be written as one segment, with ids `first_id..first_id + n`.
///
/// The segment is byte for byte the one a [`Collection`](crate::Collection) given the same
/// points in the same order writes when sealed with the same index.
#[derive(Clone, Copy, Debug)]
pub struct NewSegment<'a> {
    /// Dimension and metric.
    pub config: CollectionConfig,
    /// Payload fields (`None`: the points carry no payload).
    pub schema: Option<&'a Schema>,
    /// The index to build.
    pub index: IndexKind,
    /// External id of row 0; row `r` gets `first_id + r`.
    pub first_id: u64,
    /// The vectors, row-major, `config.dim` floats each: read in place (for cosine a
    /// normalised copy is made, as a collection stores them).
    pub vectors: &'a [f32],
    /// One payload (a JSON object or `null`) per row, or `None` for none; needs `schema`.
    pub payloads: Option<&'a [Value]>,
}

impl NewSegment<'_> {
    /// Number of rows (0 when `config.dim` is 0).
    pub fn rows(&self) -> usize {
        self.vectors.len().checked_div(self.config.dim).unwrap_or(0)
    }

    /// Checks the rows as a collection checks an insert, then writes the segment into the
    /// buffer `alloc` gives for the file's length (zeroed, its first byte 64-byte aligned;
    /// natively a memory-mapped file). Errors name the row: a non-finite element
    /// ([`Error::NonFinite`]), an invalid payload ([`Error::InvalidPayload`]).
    pub fn build_into<B: AsMut<[u8]>>(
        &self,
        kernels: &Kernels,
        alloc: impl FnOnce(usize) -> Result<B, Error>,
    ) -> Result<B, Error> {
        self.build_inner(kernels, None, &Quiet, alloc)
    }

    /// [`build_into`](Self::build_into), reporting each phase of the build (k-means,
    /// partitioning, encoding, calibration, payloads and text, writing) to `progress`, as
    /// `shoal build` shows them. The same bytes.
    pub fn build_reporting_into<B: AsMut<[u8]>>(
        &self,
        kernels: &Kernels,
        progress: &dyn Progress,
        alloc: impl FnOnce(usize) -> Result<B, Error>,
    ) -> Result<B, Error> {
        self.build_inner(kernels, None, progress, alloc)
    }

    /// [`build_into`](Self::build_into), its IVF partitions given by `centroids` (`dim` floats
    /// each, e.g. another segment's) instead of trained on the rows. Not what seals do: it is
    /// here to measure what reusing a neighbour's centroids would save and cost
    /// (`benches/seal_phases.rs` in the native host).
    #[doc(hidden)]
    pub fn build_reusing_into<B: AsMut<[u8]>>(
        &self,
        kernels: &Kernels,
        centroids: &[f32],
        alloc: impl FnOnce(usize) -> Result<B, Error>,
    ) -> Result<B, Error> {
        let dim = self.config.dim.max(1);
        if centroids.is_empty() || !centroids.len().is_multiple_of(dim) || centroids.len() / dim > self.rows() {
            return Err(Error::InvalidConfig("centroids must be 1..=rows whole vectors of the dimension"));
        }
        if first_non_finite(centroids).is_some() {
            return Err(Error::InvalidConfig("centroids must be finite"));
        }
        self.build_inner(kernels, Some(centroids), &Quiet, alloc)
    }

    fn build_inner<B: AsMut<[u8]>>(
        &self,
        kernels: &Kernels,
        centroids: Option<&[f32]>,
        progress: &dyn Progress,
        alloc: impl FnOnce(usize) -> Result<B, Error>,
    ) -> Result<B, Error> {
        let CollectionConfig { dim, metric } = self.config;
        if dim == 0 || dim > shoal_format::MAX_DIM as usize {
            return Err(Error::InvalidConfig("dim must be in 1..=65536"));
        }
        let n = self.rows();
        if n * dim != self.vectors.len() {
            return Err(Error::LengthMismatch { ids: n, floats: self.vectors.len(), dim });
        }
        // A collection holds fewer than 2^32 - 1 points.
        if n >= u32::MAX as usize {
            return Err(Error::CapacityExceeded);
        }
        if n > 0 && self.first_id.checked_add(n as u64 - 1).is_none() {
            return Err(Error::InvalidConfig("first_id + rows overflows the u64 ids"));
        }
        // Payloads first, then the vectors: the order a collection checks an insert in.
        let docs = match (self.schema, self.payloads) {
            (_, None) => None,
            (None, Some(_)) => return Err(Error::InvalidConfig("payloads need a schema")),
            (Some(schema), Some(payloads)) => {
                if payloads.len() != n {
                    return Err(Error::PayloadCount { points: n, payloads: payloads.len() });
                }
                check_payloads_against(schema, n, payloads)?;
                Some((schema, payloads))
            }
        };
        if let Some(at) = first_non_finite(self.vectors) {
            return Err(Error::NonFinite { point: at / dim, element: at % dim });
        }
        let vectors: Cow<'_, [f32]> = if metric.normalizes() {
            let mut owned = self.vectors.to_vec();
            owned.chunks_exact_mut(dim).for_each(|v| normalize(kernels, v));
            Cow::Owned(owned)
        } else {
            Cow::Borrowed(self.vectors)
        };
        let src = NumberedSource { first_id: self.first_id, vectors: Flat::new(&vectors, dim), docs };
        let index = write::IndexSpec { kind: self.index, centroids, progress };
        write::write(kernels, dim, metric, &src, (self.schema, &[], &[]), index, alloc)
    }
}

/// Rows whose ids count up from `first_id`, with their documents (checked against the schema).
struct NumberedSource<'a> {
    first_id: u64,
    vectors: Flat<'a>,
    docs: Option<(&'a Schema, &'a [Value])>,
}

impl Rows for NumberedSource<'_> {
    fn len(&self) -> usize {
        self.vectors.len()
    }

    fn row(&self, i: usize) -> &[f32] {
        self.vectors.row(i)
    }
}

impl Source for NumberedSource<'_> {
    fn id(&self, i: usize) -> shoal_format::PointId {
        shoal_format::PointId::Num(self.first_id + i as u64)
    }

    /// The document in its canonical form (whatever wrote the numbers, as a collection stores
    /// it), one at a time: the host's documents are not copied as a whole.
    fn doc(&self, i: usize) -> Result<Cow<'_, Value>, Error> {
        Ok(Cow::Owned(match self.docs {
            Some((schema, docs)) => {
                let mut doc = docs[i].clone();
                shoal_payload::canonicalize(schema, &mut doc);
                doc
            }
            None => Value::Null,
        }))
    }

    fn sparse(&self, _: usize, _: usize) -> Result<Option<Cow<'_, [shoal_format::SparseEntry]>>, Error> {
        Ok(None)
    }

    fn dense(&self, _: usize, _: usize) -> &[f32] {
        unreachable!("a build from rows writes one dense vector")
    }
}
