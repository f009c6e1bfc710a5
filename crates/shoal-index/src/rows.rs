//! [`Rows`]: the vectors a build reads, wherever they are.

/// Vectors of one dimension read by row number: contiguous in memory ([`Flat`]), or spread
/// over several memory-mapped segments whose live rows a merge reads in place.
pub trait Rows: Sync {
    /// Number of rows.
    fn len(&self) -> usize;
    /// Row `i` (`i < len()`), its `dim` floats.
    fn row(&self, i: usize) -> &[f32];
    /// Whether there are no rows.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Row-major rows in one slice, `dim` floats each.
#[derive(Clone, Copy, Debug)]
pub struct Flat<'a> {
    data: &'a [f32],
    dim: usize,
}

impl<'a> Flat<'a> {
    /// The rows of `data` (`dim > 0` floats each; a partial last row is ignored).
    pub fn new(data: &'a [f32], dim: usize) -> Flat<'a> {
        debug_assert!(dim > 0);
        Flat { data, dim }
    }
}

impl Rows for Flat<'_> {
    fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}
