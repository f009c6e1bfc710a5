use alloc::vec::Vec;
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

/// Id map with a fixed (seedless) hasher: lookups only, never iterated.
pub(crate) type IdMap = HashMap<PointId, u32, FxBuildHasher>;

use serde_json::Value;
use shoal_payload::{Filter, PointId, reference};

use crate::bitset::Bitset;

/// The payload of a row without one.
static NULL: Value = Value::Null;

/// The append-only segment that takes new points.
///
/// Rows `0..committed` are visible; a reserved batch (rows `committed..`, their vectors after
/// the committed ones and their ids in `pending_nums`) is being filled in place by the caller
/// (zero-copy inserts from JS) and becomes visible on commit.
#[derive(Default)]
pub(crate) struct Mutable {
    /// Ids of the committed rows.
    pub(crate) ids: Vec<PointId>,
    /// Integer id slots of a reserved batch (`u64`, or `f64` bits from JavaScript).
    pub(crate) pending_nums: Vec<u64>,
    pub(crate) vectors: Vec<f32>,
    pub(crate) committed: usize,
    pub(crate) reserved: bool,
    pub(crate) deleted: Bitset,
    /// Live external id -> row.
    pub(crate) index: IdMap,
    /// Payload of every committed row (`null` for none) when the collection has a schema;
    /// empty otherwise.
    pub(crate) payloads: Vec<serde_json::Value>,
    /// The text index of the committed rows (document = row) when the schema has text fields;
    /// rebuilt at every commit.
    pub(crate) text: Option<shoal_text::Sections>,
    /// The committed rows' sparse vectors, one per sparse vector of the collection (each may
    /// hold fewer rows than `committed`: the rows after hold no such vector).
    pub(crate) sparse: Vec<crate::sparse::SparseRows>,
    /// The committed rows' dense vectors `1..` (row-major, with their dimension), when the
    /// collection has two or more.
    pub(crate) dense: Vec<(Vec<f32>, usize)>,
}

/// The rows `rows` of row-major `(vectors, dim)`, in that order (a `dyn` iterator: one copy
/// of this in the package whatever the caller's).
pub(crate) fn select_rows((v, dim): &(Vec<f32>, usize), rows: &mut dyn Iterator<Item = usize>) -> (Vec<f32>, usize) {
    let mut out = Vec::new();
    for r in rows {
        out.extend_from_slice(&v[r * dim..(r + 1) * dim]);
    }
    (out, *dim)
}

impl Mutable {
    /// Rows committed, deleted or not.
    pub(crate) fn rows(&self) -> usize {
        self.committed
    }

    /// Whether committed row `row` is live and passes `filter` (checked on its JSON payload;
    /// `nested`: the collection's payloads are nested, keys are paths).
    pub(crate) fn passes(&self, row: usize, filter: Option<&Filter>, nested: bool) -> bool {
        !self.deleted.contains(row)
            && filter.is_none_or(|f| {
                reference::matches_in(f, self.payloads.get(row).unwrap_or(&NULL), self.ids[row], nested)
            })
    }

    pub(crate) fn live(&self) -> usize {
        self.committed - self.deleted.count()
    }

    /// Drops a reserved batch.
    pub(crate) fn discard_pending(&mut self, dim: usize) {
        self.pending_nums.clear();
        self.vectors.truncate(self.committed * dim);
        self.reserved = false;
    }

    /// Deletes the live row holding `id`; returns whether there was one.
    pub(crate) fn delete(&mut self, id: PointId) -> bool {
        match self.index.remove(&id) {
            Some(row) => self.deleted.insert(row as usize),
            None => false,
        }
    }
}
