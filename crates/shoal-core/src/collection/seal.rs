//! The set operations (`docs/format.md`, "Set operations"): seal the mutable segment's live
//! rows into a new segment, merge segments (by the size-tiered policy, or all of them), and
//! persist or reopen the set through its manifest and live-rows files.
//!
//! Hosts that seal and merge in the background (the native server) split each operation in
//! three: a snapshot under a read lock ([`Collection::seal_snapshot`],
//! [`Collection::merge_snapshot`]), the build without any lock ([`SealSnapshot::build`],
//! [`MergeSnapshot::build`]), and the swap under a write lock ([`Collection::attach_sealed`],
//! [`Collection::attach_merged`]), which carries over the deletes made meanwhile. In-process
//! hosts call [`Collection::seal`], which does all three at once.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec::Vec;

use serde_json::Value;
use shoal_format::{AlignedBytes, PointId};
use shoal_index::{Flat, Metric, Rows};
use shoal_kernels::Kernels;
use shoal_payload::{PayloadView, Schema};

use super::{Collection, Part};
use crate::bitset::Bitset;
use crate::dense::{DenseSpec, Space};
use crate::mutable::{Mutable, select_rows};
use crate::set::{self, LiveEntry, Manifest, MergePolicy, SegmentEntry};
use crate::source::{FlatSource, Source};
use crate::sparse::{SparseRows, SparseSpec};
use crate::text;
use crate::write;
use crate::{Error, IndexKind, SealedSegment, SegmentBytes};
use shoal_format::SparseEntry;

/// The live rows of the mutable segment at one moment, to be sealed into a new segment.
#[derive(Debug)]
pub struct SealSnapshot {
    /// Mutable rows `0..rows` were committed when the snapshot was taken.
    rows: usize,
    /// Which of them were deleted then.
    deleted: Bitset,
    ids: Vec<PointId>,
    vectors: Vec<f32>,
    docs: Option<(Schema, Vec<Value>)>,
    /// The rows' sparse vectors, one per sparse vector of the collection.
    sparse: Vec<SparseRows>,
    specs: Vec<SparseSpec>,
    /// The rows' dense vectors `1..`, with their dimensions.
    dense: Vec<(Vec<f32>, usize)>,
    dense_specs: Vec<DenseSpec>,
    dim: usize,
    metric: Metric,
    index: IndexKind,
}

impl SealSnapshot {
    /// Live rows to seal.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there is nothing to seal.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Writes the new segment (a pure function of the snapshot: the same bytes on every host).
    pub fn build(&self, kernels: &Kernels) -> AlignedBytes {
        self.build_into(kernels, |len| Ok(AlignedBytes::zeroed(len))).expect("rows in memory are always readable")
    }

    /// [`build`](Self::build) into the buffer `alloc` gives for the file's length (zeroed, 64-byte
    /// aligned; natively a memory-mapped file), so the segment is written where it will stay.
    pub fn build_into<B: AsMut<[u8]>>(
        &self,
        kernels: &Kernels,
        alloc: impl FnOnce(usize) -> Result<B, Error>,
    ) -> Result<B, Error> {
        let src = self.source();
        let schema = self.docs.as_ref().map(|(schema, _)| schema);
        let features = (schema, &self.dense_specs[..], &self.specs[..]);
        write::write(kernels, self.dim, self.metric, &src, features, self.index.into(), alloc)
    }

    fn source(&self) -> FlatSource<'_> {
        FlatSource {
            ids: &self.ids,
            vectors: Flat::new(&self.vectors, self.dim.max(1)),
            docs: self.docs.as_ref().map(|(_, docs)| &docs[..]),
            sparse: &self.sparse,
            dense: &self.dense,
        }
    }
}

/// Some segments of the set at one moment, to be merged into one.
pub struct MergeSnapshot {
    /// The inputs' numbers (to find them again when swapping).
    numbers: Vec<u64>,
    inputs: Vec<(Arc<SealedSegment>, Bitset)>,
    /// Unsealed rows appended after the inputs' (a compaction).
    extra: Option<SealSnapshot>,
    schema: Option<Schema>,
    specs: Vec<SparseSpec>,
    dense_specs: Vec<DenseSpec>,
    dim: usize,
    metric: Metric,
    index: IndexKind,
}

impl core::fmt::Debug for MergeSnapshot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MergeSnapshot").field("numbers", &self.numbers).finish()
    }
}

impl MergeSnapshot {
    /// Live rows the merged segment will hold.
    pub fn live_rows(&self) -> usize {
        self.inputs.iter().map(|(s, d)| s.rows() - d.count()).sum::<usize>()
            + self.extra.as_ref().map_or(0, |e| e.len())
    }

    /// Checks every input's checksums, then writes the merged segment: the inputs' live rows
    /// in set order. A damaged input is a typed error (its rows are never rewritten under fresh
    /// checksums).
    pub fn build(&self, kernels: &Kernels) -> Result<AlignedBytes, Error> {
        self.build_into(kernels, |len| Ok(AlignedBytes::zeroed(len)))
    }

    /// [`build`](Self::build) into the buffer `alloc` gives for the file's length (zeroed,
    /// 64-byte aligned; natively a memory-mapped file). The inputs' rows are read where they
    /// are (natively, from their mapped files): besides the output, the merge holds its
    /// k-means sample, 4 bytes per input row (its live rows), up to 12 per output row (the
    /// partition order, the assignment while it is sorted, the calibration's row sample), and
    /// the payload and text sections it writes.
    pub fn build_into<B: AsMut<[u8]>>(
        &self,
        kernels: &Kernels,
        alloc: impl FnOnce(usize) -> Result<B, Error>,
    ) -> Result<B, Error> {
        let mut parts = Vec::with_capacity(self.inputs.len());
        let mut starts = Vec::with_capacity(self.inputs.len() + 2);
        let mut total = 0;
        for (seg, deleted) in &self.inputs {
            seg.verify()?;
            let live: Vec<u32> = (0..seg.rows() as u32).filter(|&r| !deleted.contains(r as usize)).collect();
            starts.push(total);
            total += live.len();
            let vectors = seg.vectors().ok_or(Error::CodesOnly("merge"))?;
            let mut spaces = Vec::with_capacity(self.dense_specs.len());
            for d in 1..self.dense_specs.len() {
                spaces
                    .push(seg.space(d).ok_or(Error::Unsupported("a segment without the collection's dense vectors"))?);
            }
            parts.push(MergePart { seg, vectors, live, view: seg.payload(), spaces });
        }
        starts.push(total);
        let extra = self.extra.as_ref().map(SealSnapshot::source);
        total += extra.as_ref().map_or(0, |e| e.len());
        starts.push(total);
        let src = MergeSource { parts, starts, extra, dim: self.dim };
        let features = (self.schema.as_ref(), &self.dense_specs[..], &self.specs[..]);
        write::write(kernels, self.dim, self.metric, &src, features, self.index.into(), alloc)
    }
}

/// One input of a merge: its rows where they are, and which of them are live.
struct MergePart<'a> {
    seg: &'a SealedSegment,
    vectors: &'a [f32],
    live: Vec<u32>,
    view: Option<PayloadView<'a>>,
    /// Its dense vectors `1..`.
    spaces: Vec<Space<'a>>,
}

/// The rows of a merge, numbered across its inputs (live rows only, in set order), then the
/// unsealed rows of a compaction.
struct MergeSource<'a> {
    parts: Vec<MergePart<'a>>,
    /// The first merged row of every part, of the unsealed rows, and the total.
    starts: Vec<usize>,
    extra: Option<FlatSource<'a>>,
    dim: usize,
}

impl MergeSource<'_> {
    /// The part of merged row `i` (`parts.len()` for the unsealed rows) and its row there.
    fn locate(&self, i: usize) -> (usize, usize) {
        let p = self.starts.partition_point(|&s| s <= i) - 1;
        (p, i - self.starts[p])
    }
}

impl Rows for MergeSource<'_> {
    fn len(&self) -> usize {
        self.starts[self.starts.len() - 1]
    }

    fn row(&self, i: usize) -> &[f32] {
        match self.locate(i) {
            (p, j) if p < self.parts.len() => {
                let r = self.parts[p].live[j] as usize;
                &self.parts[p].vectors[r * self.dim..(r + 1) * self.dim]
            }
            (_, j) => self.extra.as_ref().expect("rows past the inputs are unsealed").row(j),
        }
    }
}

impl Source for MergeSource<'_> {
    fn id(&self, i: usize) -> PointId {
        match self.locate(i) {
            (p, j) if p < self.parts.len() => self.parts[p].seg.id(self.parts[p].live[j] as usize),
            (_, j) => self.extra.as_ref().expect("rows past the inputs are unsealed").id(j),
        }
    }

    fn doc(&self, i: usize) -> Result<Cow<'_, Value>, Error> {
        match self.locate(i) {
            (p, j) if p < self.parts.len() => match &self.parts[p].view {
                Some(v) => Ok(Cow::Owned(v.document(self.parts[p].live[j])?)),
                None => Ok(Cow::Owned(Value::Null)),
            },
            (_, j) => self.extra.as_ref().expect("rows past the inputs are unsealed").doc(j),
        }
    }

    fn sparse(&self, i: usize, t: usize) -> Result<Option<Cow<'_, [SparseEntry]>>, Error> {
        match self.locate(i) {
            (p, j) if p < self.parts.len() => match self.parts[p].seg.sparse(t) {
                Some(v) => Ok(v.row(self.parts[p].live[j] as usize)?.map(Cow::Borrowed)),
                None => Ok(None),
            },
            (_, j) => self.extra.as_ref().expect("rows past the inputs are unsealed").sparse(j, t),
        }
    }

    fn dense(&self, i: usize, d: usize) -> &[f32] {
        match self.locate(i) {
            (p, j) if p < self.parts.len() => {
                let part = &self.parts[p];
                part.spaces[d - 1].vector(part.live[j] as usize).expect("merged segments hold their vectors")
            }
            (_, j) => self.extra.as_ref().expect("rows past the inputs are unsealed").dense(j, d),
        }
    }
}

/// How [`Collection::open_set`] gets a segment's bytes.
pub type OpenSegment<'a> = dyn FnMut(&SegmentEntry) -> Result<Box<dyn SegmentBytes>, Error> + 'a;
/// How [`Collection::open_set`] reads a live-rows file.
pub type ReadLive<'a> = dyn FnMut(&LiveEntry) -> Result<Vec<u8>, Error> + 'a;

/// What a host needs to know of a sealed segment of the set to persist it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Its file name (`seg-NNNNNNNNNN-hhhhhhhh.shoal`).
    pub name: String,
    /// Rows, deleted ones included.
    pub rows: usize,
    /// Live rows.
    pub live: usize,
    /// File length in bytes.
    pub bytes: usize,
}

/// A manifest to write, with the live-rows files it names that are not written yet.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// The manifest.
    pub manifest: Manifest,
    /// New live-rows files: `(name, bytes)`. Write them before the manifest.
    pub live_files: Vec<(String, Vec<u8>)>,
    /// Per segment number, the deleted count captured (to tell later deletes apart).
    captured: Vec<(u64, usize)>,
}

impl Collection {
    /// Seals the mutable segment's live rows into a new segment at the end of the set, then
    /// merges segments as the merge policy says. A merge over a segment that fails its
    /// checksums is not made (the rows stay where they are; [`verify`](Self::verify) and
    /// [`compact`](Self::compact) report the damage): sealing never rewrites damaged bytes.
    pub fn seal(&mut self) {
        // A codes-only collection refuses every change: nothing to seal.
        if self.codes_only() {
            return;
        }
        if self.reindex && self.compact().is_ok() {
            return;
        }
        if let Some(snap) = self.take_unsealed()
            && let Some(seg) = self.open_built(&snap)
        {
            self.push_part(seg, Bitset::default(), None);
        }
        while let Some(inputs) = self.next_merge() {
            if self.merge(&inputs).is_err() {
                break;
            }
        }
    }

    /// Sets the index that seals and merges build; a different one than before rebuilds the
    /// whole set as one segment now (see [`compact`](Self::compact): a damaged segment is an
    /// error and nothing changes). A codes-only collection refuses a different index (it has
    /// no vectors to build one from).
    pub fn seal_with(&mut self, index: IndexKind) -> Result<(), Error> {
        // (Bits left to the dimension's default and the same bits given build the same, for
        // every dense vector's dimension.)
        let same = self.dense.iter().all(|d| index.resolved(d.dim) == self.index.resolved(d.dim));
        if same && !self.reindex {
            self.index = index;
            self.seal();
            return Ok(());
        }
        self.writable("rebuild with another index")?;
        self.check_index(index)?;
        let before = (self.index, self.reindex);
        (self.index, self.reindex) = (index, true);
        self.compact().inspect_err(|_| (self.index, self.reindex) = before)
    }

    /// The number the next segment added to the set gets (in its file name).
    pub fn next_segment_number(&self) -> u64 {
        self.next_number
    }

    /// Sets the index that later seals and merges build, without rebuilding anything now
    /// (segments built with another index keep it until they are merged). For hosts whose
    /// configuration fixes the index; [`seal_with`](Self::seal_with) rebuilds. A codes-only
    /// index is refused on a collection with several dense vectors.
    pub fn set_index_kind(&mut self, index: IndexKind) -> Result<(), Error> {
        self.check_index(index)?;
        self.index = index;
        Ok(())
    }

    /// Refuses a codes-only index on a collection with several dense vectors.
    fn check_index(&self, index: IndexKind) -> Result<(), Error> {
        match index {
            IndexKind::IvfRabitq(p) if p.codes_only && self.dense.len() > 1 => {
                Err(Error::InvalidConfig("codes-only segments hold one dense vector"))
            }
            _ => Ok(()),
        }
    }

    /// Sets the merge policy that [`seal`](Self::seal) applies (and that hosts merging in the
    /// background read with [`next_merge`](Self::next_merge)).
    pub fn set_merge_policy(&mut self, policy: MergePolicy) {
        self.policy = policy;
    }

    /// The next merge the policy asks for: segment positions in set order.
    pub fn next_merge(&self) -> Option<Vec<usize>> {
        let sizes: Vec<(u64, u64)> =
            self.parts.iter().map(|p| (p.seg.rows() as u64, (p.seg.rows() - p.deleted.count()) as u64)).collect();
        self.policy.next_merge(&sizes)
    }

    /// The whole collection as one segment (sealing the mutable rows and merging every
    /// segment, dropping deleted rows; a collection without points gets an empty segment),
    /// built with the current index. Errors when a segment fails its checksums.
    pub fn compact(&mut self) -> Result<(), Error> {
        if self.codes_only() {
            return Ok(());
        }
        let one_clean = self.parts.len() == 1 && self.parts[0].deleted.count() == 0;
        if !self.reindex && one_clean && self.mutable.live() == 0 && self.mutable.rows() == 0 {
            return Ok(());
        }
        // One build over every live row: the segments' in set order, then the mutable ones.
        let all: Vec<usize> = (0..self.parts.len()).collect();
        let mut snap = if all.is_empty() {
            MergeSnapshot {
                numbers: Vec::new(),
                inputs: Vec::new(),
                extra: None,
                schema: self.schema.clone(),
                specs: self.sparse.clone(),
                dense_specs: self.dense.clone(),
                dim: self.dim,
                metric: self.metric,
                index: self.index,
            }
        } else {
            self.merge_snapshot(&all)?
        };
        // Checked before the unsealed rows move into the build: a damaged segment leaves the
        // collection as it was.
        for (seg, _) in &snap.inputs {
            seg.verify()?;
        }
        snap.extra = self.take_unsealed();
        let bytes = match snap.build(&self.kernels) {
            Ok(b) => b,
            Err(e) => {
                // A document that does not decode (on bytes that passed their checksums):
                // the unsealed rows go back where they were.
                if let Some(extra) = snap.extra.take() {
                    self.restore_unsealed(extra);
                }
                return Err(e);
            }
        };
        let seg = SealedSegment::open(Box::new(bytes)).expect("a freshly written segment opens");
        self.parts.clear();
        self.mutable = Mutable::default();
        self.push_part(Arc::new(seg), Bitset::default(), None);
        self.reindex = false;
        Ok(())
    }

    /// The segment of a seal snapshot, built and opened in memory (`None`: no live rows).
    fn open_built(&self, snap: &SealSnapshot) -> Option<Arc<SealedSegment>> {
        (!snap.is_empty()).then(|| {
            let bytes = snap.build(&self.kernels);
            Arc::new(SealedSegment::open(Box::new(bytes)).expect("a freshly written segment opens"))
        })
    }

    /// Merges the segments at `positions` (ascending) into one, now. Errors (and changes
    /// nothing) when an input fails its checksums.
    pub fn merge(&mut self, positions: &[usize]) -> Result<(), Error> {
        let snap = self.merge_snapshot(positions)?;
        let bytes = snap.build(&self.kernels)?;
        let seg = SealedSegment::open(Box::new(bytes)).expect("a freshly written segment opens");
        self.attach_merged(snap, Arc::new(seg)).map(|_| ())
    }

    /// The collection as one sealed segment file (compacting first: see
    /// [`compact`](Self::compact); a damaged segment is an error).
    pub fn to_bytes(&mut self) -> Result<&[u8], Error> {
        self.compact()?;
        Ok(self.parts[0].seg.bytes())
    }

    /// Full check of every sealed segment's bytes (see [`SealedSegment::verify`]).
    pub fn verify(&self) -> Result<(), Error> {
        self.parts.iter().try_for_each(|p| p.seg.verify())
    }

    /// The mutable segment's live rows moved out into a snapshot, the mutable segment left empty
    /// (`None` when it had no rows): the in-process seal, without copying the vectors.
    fn take_unsealed(&mut self) -> Option<SealSnapshot> {
        self.mutable.discard_pending(self.dim);
        let mut m = core::mem::take(&mut self.mutable);
        let rows = m.rows();
        if rows == 0 {
            return None;
        }
        let dim = self.dim;
        let sparse: Vec<SparseRows> = if m.deleted.count() > 0 {
            m.sparse.iter().map(|s| s.select((0..rows).filter(|&r| !m.deleted.contains(r)))).collect()
        } else {
            core::mem::take(&mut m.sparse)
        };
        let dense = if m.deleted.count() > 0 {
            m.dense.iter().map(|v| select_rows(v, &mut (0..rows).filter(|&r| !m.deleted.contains(r)))).collect()
        } else {
            core::mem::take(&mut m.dense)
        };
        if m.deleted.count() > 0 {
            let mut w = 0;
            for r in (0..rows).filter(|&r| !m.deleted.contains(r)) {
                m.ids[w] = m.ids[r];
                m.vectors.copy_within(r * dim..(r + 1) * dim, w * dim);
                if r < m.payloads.len() {
                    m.payloads.swap(w, r);
                }
                w += 1;
            }
            m.ids.truncate(w);
            m.vectors.truncate(w * dim);
            m.payloads.truncate(w);
        }
        let mut docs = m.payloads;
        if self.schema.is_some() {
            docs.resize(m.ids.len(), Value::Null);
        }
        Some(SealSnapshot {
            rows,
            deleted: Bitset::default(),
            ids: m.ids,
            vectors: m.vectors,
            docs: self.schema.clone().map(|s| (s, docs)),
            sparse,
            specs: self.sparse.clone(),
            dense,
            dense_specs: self.dense.clone(),
            dim,
            metric: self.metric,
            index: self.index,
        })
    }

    /// Puts rows taken by [`take_unsealed`](Self::take_unsealed) back into the (empty) mutable
    /// segment, with their id map and text index.
    fn restore_unsealed(&mut self, snap: SealSnapshot) {
        let mut m = Mutable { committed: snap.ids.len(), ..Mutable::default() };
        for (row, &id) in snap.ids.iter().enumerate() {
            m.index.insert(id, row as u32);
        }
        m.ids = snap.ids;
        m.vectors = snap.vectors;
        if let Some((_, docs)) = snap.docs {
            m.payloads = docs;
        }
        m.sparse = snap.sparse;
        m.dense = snap.dense;
        if let Some(schema) = self.schema.as_ref().filter(|s| text::has_text(s)) {
            m.text = (m.committed > 0).then(|| text::build(schema, m.payloads.iter()));
        }
        self.mutable = m;
    }

    /// The mutable segment's committed live rows, to seal (`None` when it has no rows; a
    /// reserved batch not yet committed is not part of it).
    pub fn seal_snapshot(&self) -> Option<SealSnapshot> {
        let m = &self.mutable;
        let rows = m.rows();
        if m.live() == 0 && rows == 0 {
            return None;
        }
        let dim = self.dim;
        let live = m.live();
        let mut ids = Vec::with_capacity(live);
        let mut vectors = Vec::with_capacity(live * dim);
        let mut docs = Vec::with_capacity(if self.schema.is_some() { live } else { 0 });
        for row in (0..rows).filter(|&r| !m.deleted.contains(r)) {
            ids.push(m.ids[row]);
            vectors.extend_from_slice(&m.vectors[row * dim..(row + 1) * dim]);
            if self.schema.is_some() {
                docs.push(m.payloads.get(row).cloned().unwrap_or(Value::Null));
            }
        }
        let live_rows = || (0..rows).filter(|&r| !m.deleted.contains(r));
        Some(SealSnapshot {
            rows,
            deleted: m.deleted.clone(),
            ids,
            vectors,
            docs: self.schema.clone().map(|s| (s, docs)),
            sparse: m.sparse.iter().map(|s| s.select(live_rows())).collect(),
            specs: self.sparse.clone(),
            dense: m.dense.iter().map(|v| select_rows(v, &mut live_rows())).collect(),
            dense_specs: self.dense.clone(),
            dim,
            metric: self.metric,
            index: self.index,
        })
    }

    /// Swaps a sealed snapshot in: `seg` (built from `snap`; `None` for a snapshot without
    /// live rows) joins the end of the set, the snapshot's rows leave the mutable segment, and
    /// those deleted since the snapshot are deleted in `seg` too.
    pub fn attach_sealed(&mut self, snap: SealSnapshot, seg: Option<Arc<SealedSegment>>) {
        let m = core::mem::take(&mut self.mutable);
        if let Some(seg) = seg {
            let mut deleted = Bitset::default();
            for row in (0..snap.rows).filter(|&r| m.deleted.contains(r) && !snap.deleted.contains(r)) {
                if let Some(r) = seg.row_of(m.ids[row]) {
                    deleted.insert(r);
                }
            }
            let changed = deleted.count() > 0;
            self.push_part(seg, deleted, None);
            self.parts.last_mut().expect("just pushed").changed = changed;
        }
        self.mutable = rest_of(m, snap.rows, self.dim);
        if let Some(schema) = self.schema.as_ref().filter(|s| text::has_text(s)) {
            self.mutable.text = (self.mutable.rows() > 0).then(|| text::build(schema, self.mutable.payloads.iter()));
        }
    }

    /// The segments at `positions` (ascending, at least one) with their deleted rows, to merge.
    pub fn merge_snapshot(&self, positions: &[usize]) -> Result<MergeSnapshot, Error> {
        if positions.is_empty()
            || positions.windows(2).any(|w| w[0] >= w[1])
            || positions.iter().any(|&p| p >= self.parts.len())
        {
            return Err(Error::InvalidRequest("merge: segment positions must ascend within the set".into()));
        }
        if positions.iter().any(|&p| self.parts[p].seg.codes_only()) {
            return Err(Error::CodesOnly("merge"));
        }
        Ok(MergeSnapshot {
            numbers: positions.iter().map(|&p| self.parts[p].number).collect(),
            inputs: positions
                .iter()
                .map(|&p| (Arc::clone(&self.parts[p].seg), self.parts[p].deleted.clone()))
                .collect(),
            extra: None,
            schema: self.schema.clone(),
            specs: self.sparse.clone(),
            dense_specs: self.dense.clone(),
            dim: self.dim,
            metric: self.metric,
            index: self.index,
        })
    }

    /// Swaps a merge in: `seg` (built from `snap`) takes the place of the first input, the
    /// other inputs leave the set, and rows deleted in the inputs since the snapshot are
    /// deleted in `seg`. Returns the merged segment's position. Errors (and changes nothing)
    /// if an input left the set meanwhile.
    pub fn attach_merged(&mut self, snap: MergeSnapshot, seg: Arc<SealedSegment>) -> Result<usize, Error> {
        let positions: Option<Vec<usize>> =
            snap.numbers.iter().map(|n| self.parts.iter().position(|p| p.number == *n)).collect();
        let Some(positions) = positions else {
            return Err(Error::InvalidRequest("merge: an input segment left the set".into()));
        };
        let mut deleted = Bitset::default();
        for (&p, (_, before)) in positions.iter().zip(&snap.inputs) {
            let part = &self.parts[p];
            for row in part.deleted.iter().filter(|&r| !before.contains(r)) {
                if let Some(r) = seg.row_of(part.seg.id(row)) {
                    deleted.insert(r);
                }
            }
        }
        let number = self.next_number;
        self.next_number += 1;
        let changed = deleted.count() > 0;
        let merged = Part { seg, deleted, base: 0, number, live_file: None, changed };
        let first = positions[0];
        // The other inputs, removed from the last (a scan rather than a sort of their
        // positions: one sort routine less in the wasm build).
        for p in (0..self.parts.len()).rev().filter(|p| positions[1..].contains(p)) {
            self.parts.remove(p);
        }
        self.parts[first] = merged;
        self.rebase();
        Ok(first)
    }

    /// The sealed segments, in set order, as a host persists them.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        self.parts
            .iter()
            .map(|p| SegmentInfo {
                name: set::segment_name(p.number, p.seg.table_crc()),
                rows: p.seg.rows(),
                live: p.seg.rows() - p.deleted.count(),
                bytes: p.seg.bytes().len(),
            })
            .collect()
    }

    /// The manifest of the set as it is now (generation one above the last written), and the
    /// live-rows files it needs that are not written yet. `wal`: the host's log position.
    pub fn checkpoint(&self, wal: Option<u64>) -> Checkpoint {
        let generation = self.generation + 1;
        let mut live_files = Vec::new();
        let mut segments = Vec::with_capacity(self.parts.len());
        for p in &self.parts {
            let file = set::segment_name(p.number, p.seg.table_crc());
            let rows = p.seg.rows();
            let live_rows = (rows - p.deleted.count()) as u64;
            let live = if p.deleted.count() == 0 {
                None
            } else {
                let g = match p.live_file {
                    Some(g) if !p.changed => g,
                    _ => {
                        let name = set::live_name(&file, generation);
                        live_files.push((name, set::encode_live(rows, &p.deleted)));
                        generation
                    }
                };
                Some(LiveEntry { file: set::live_name(&file, g), rows: live_rows })
            };
            segments.push(SegmentEntry {
                file,
                rows: rows as u64,
                bytes: p.seg.bytes().len() as u64,
                table_crc: format!("{:08x}", p.seg.table_crc()),
                live,
            });
        }
        let nested = self.schema.as_ref().is_some_and(Schema::is_nested);
        let mut manifest = Manifest {
            shoal_manifest: set::MANIFEST_VERSION,
            generation,
            vectors: self.dense.clone(),
            fields: match &self.schema {
                Some(schema) => serde_json::from_slice(schema.to_json().as_bytes()).unwrap_or_default(), // it parses
                None => Value::Object(serde_json::Map::new()),
            },
            index: self.index.to_json(),
            segments,
            wal,
            nested,
            sparse: self.sparse.clone(),
        };
        if manifest.features() {
            manifest.shoal_manifest = set::MANIFEST_VERSION_FEATURES;
        }
        let captured = self.parts.iter().map(|p| (p.number, p.deleted.count())).collect();
        Checkpoint { manifest, live_files, captured }
    }

    /// Records that a checkpoint's files and manifest are written: its live-rows files now
    /// describe the segments (unless rows were deleted since it was taken).
    pub fn checkpoint_written(&mut self, cp: &Checkpoint) {
        self.generation = self.generation.max(cp.manifest.generation);
        for (entry, &(number, count)) in cp.manifest.segments.iter().zip(&cp.captured) {
            let Some(p) = self.parts.iter_mut().find(|p| p.number == number) else { continue };
            p.live_file = entry.live.as_ref().and_then(|l| set::parse_live_name(&l.file)).map(|(_, g)| g);
            p.changed = p.deleted.count() != count;
        }
    }

    /// Opens a segment set: `manifest`, with `open_segment` giving each segment's bytes and
    /// `read_live` each live-rows file's. Checks every segment against its entry (name, table
    /// CRC, rows, length) and every live-rows file against its segment (cheap checks; see
    /// [`verify`](Self::verify) for the rest).
    pub fn open_set(
        manifest: &Manifest,
        open_segment: &mut OpenSegment<'_>,
        read_live: &mut ReadLive<'_>,
    ) -> Result<Collection, Error> {
        let schema = if manifest.nested {
            Collection::parse_nested_schema(&manifest.fields)?
        } else {
            Collection::parse_schema(&manifest.fields)?
        };
        let index = IndexKind::from_json(&manifest.index.to_string())?;
        let first = &manifest.vectors[0];
        let mut col =
            Collection::with_schema(crate::CollectionConfig { dim: first.dim, metric: first.metric }, schema)?;
        col.dense = manifest.vectors.clone();
        col.check_index(index).map_err(|e| Error::BadSet(format!("manifest: {e}")))?;
        col.index = index;
        col.generation = manifest.generation;
        col.sparse = manifest.sparse.clone();
        for entry in &manifest.segments {
            let (number, crc) = set::parse_segment_name(&entry.file)
                .ok_or_else(|| Error::BadSet(format!("{}: not a segment file name", entry.file)))?;
            let seg = SealedSegment::open(open_segment(entry)?)?;
            let bad = |what: &str| Error::BadSet(format!("{}: {what} differs from the manifest", entry.file));
            if seg.table_crc() != crc {
                return Err(bad("the section table's checksum"));
            }
            if seg.rows() as u64 != entry.rows || seg.bytes().len() as u64 != entry.bytes {
                return Err(bad("the row count or length"));
            }
            // A segment names its dense vectors only when it has two or more.
            let dense = seg.dense_specs();
            let same = |a: &[DenseSpec], b: &[DenseSpec]| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x.dim, x.metric) == (y.dim, y.metric))
            };
            if !same(dense, &col.dense) || (col.dense.len() > 1 && dense != &col.dense[..]) {
                return Err(bad("the dense vectors"));
            }
            if seg.sparse_specs() != col.sparse {
                return Err(bad("the sparse vectors"));
            }
            if seg.codes_only() && manifest.segments.len() > 1 {
                return Err(Error::BadSet("a codes-only segment must be alone in its set".into()));
            }
            let deleted = match &entry.live {
                None => Bitset::default(),
                Some(l) => set::decode_live(&read_live(l)?, seg.rows(), l.rows)?,
            };
            let live_file = entry.live.as_ref().and_then(|l| set::parse_live_name(&l.file)).map(|(_, g)| g);
            col.push_numbered(Arc::new(seg), deleted, live_file, number);
        }
        col.check_unique_ids()?;
        Ok(col)
    }

    /// Checks that no external id is live in two segments (a set breaking the rule would
    /// answer with duplicates). Each segment's `ID_INDEX` and `UUID_INDEX` list its ids in
    /// order, so a merge of those lists (live rows only) meets a duplicate as two equal heads:
    /// no map of every id (one took ~16 bytes per point when a server opened its collections).
    fn check_unique_ids(&self) -> Result<(), Error> {
        if self.parts.len() < 2 {
            return Ok(());
        }
        let nums = self.parts.iter().map(|p| (p.seg.id_index(), &p.deleted, p.seg.rows())).collect();
        unique_live(nums, &|e| (PointId::Num(e.id), e.row))?;
        let uuids = self.parts.iter().map(|p| (p.seg.uuid_index(), &p.deleted, p.seg.rows())).collect();
        unique_live(uuids, &|e| (PointId::Uuid(e.uuid), e.row))
    }
}

/// Merges sorted id lists `(entries, deleted rows, rows)` of the set's segments, live rows only,
/// and fails on an id that two of them hold. `key` gives an entry's id and row.
fn unique_live<E>(lists: Vec<(&[E], &Bitset, usize)>, key: &dyn Fn(&E) -> (PointId, u32)) -> Result<(), Error> {
    use alloc::collections::BinaryHeap;
    use core::cmp::Reverse;

    // The position of list `i`'s next live entry at or after `at`.
    let next_live = |i: usize, mut at: usize| {
        let (index, deleted, rows) = lists[i];
        while at < index.len() && {
            let row = key(&index[at]).1 as usize;
            row >= rows || deleted.contains(row)
        } {
            at += 1;
        }
        at
    };
    let mut heads = BinaryHeap::new();
    for (i, (index, _, _)) in lists.iter().enumerate() {
        let at = next_live(i, 0);
        if at < index.len() {
            heads.push(Reverse((key(&index[at]).0, i, at)));
        }
    }
    while let Some(Reverse((id, i, at))) = heads.pop() {
        if heads.peek().is_some_and(|Reverse((next, _, _))| *next == id) {
            return Err(Error::BadSet(format!("id {id} is live in two segments")));
        }
        let at = next_live(i, at + 1);
        if at < lists[i].0.len() {
            heads.push(Reverse((key(&lists[i].0[at]).0, i, at)));
        }
    }
    Ok(())
}

/// The mutable segment without its first `n` rows (those a seal took): the later rows move to
/// the front, with their deletes and id map.
fn rest_of(m: Mutable, n: usize, dim: usize) -> Mutable {
    let mut rest = Mutable::default();
    let rows = m.rows();
    if rows <= n {
        return rest;
    }
    rest.ids = m.ids[n..rows].to_vec();
    rest.vectors = m.vectors[n * dim..rows * dim].to_vec();
    if !m.payloads.is_empty() {
        rest.payloads = m.payloads.into_iter().skip(n).take(rows - n).collect();
    }
    rest.sparse = m.sparse.iter().map(|s| s.select(n..rows)).collect();
    rest.dense = m.dense.iter().map(|v| select_rows(v, &mut (n..rows))).collect();
    rest.committed = rows - n;
    for r in 0..rest.committed {
        if m.deleted.contains(n + r) {
            rest.deleted.insert(r);
        } else {
            rest.index.insert(rest.ids[r], r as u32);
        }
    }
    rest
}
