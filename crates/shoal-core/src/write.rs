//! Writing a segment in place (`docs/format.md`, "Writing a segment"): the layout is planned
//! from the rows alone, the host gives a zeroed buffer of the file's length (natively a
//! memory-mapped file), and every section is written where it goes — vectors and codes
//! straight from the source rows, which may themselves be memory-mapped segments. Besides
//! the buffer, a build holds the k-means sample, up to 12 bytes per row (the partition order,
//! the assignment while it is sorted, the calibration's row sample) and the payload and text
//! sections — and, codes only, the vectors in the stored order for the calibration.

use alloc::vec;
use alloc::vec::Vec;

use bytemuck::Zeroable;
use serde_json::Value;
use shoal_format::{
    ALIGN, AlignedBytes, DENSE_META, DENSE_NAME, DENSE_POSITIONS, DENSE_ROWS, DenseMeta, FLAG_UUID_IDS, KIND_IDS,
    KIND_META, KIND_VECTORS, Layout, PointId, SECTION_OPTIONAL, SegmentMeta, VECTOR_TYPE_CODES_ONLY, VECTOR_TYPE_F32,
    dense_kind,
};
use shoal_index::ivf::IvfPlan;
use shoal_index::progress::{Progress, Quiet};
use shoal_index::{Flat, Metric, Rows};
use shoal_kernels::Kernels;
use shoal_payload::{PayloadBuilder, PayloadSections, Schema};
use shoal_text::Sections as TextSections;

use crate::DenseSpec;
use crate::Error;
use crate::sealed::{IndexKind, PayloadInput, SealedSegment};
use crate::source::{DenseOf, Source};
use crate::sparse::SparseSpec;
use crate::text::TextBuilder;
use shoal_index::ivf::sections as ivf_sections;

/// Rows per parallel task when copying ids and vectors into place.
const COPY_CHUNK: usize = 16384;

/// Writes a segment of `src`'s rows into the buffer `alloc` returns for the file's length
/// (zeroed, its first byte 64-byte aligned). With an IVF index, rows are stored sorted by
/// partition; with a schema, the payload and text sections are written from the documents,
/// and each sparse vector's sections from the rows'.
/// The bytes are a pure function of the rows and settings: the same on every host, whatever
/// the buffer.
pub(crate) fn write<B: AsMut<[u8]>>(
    kernels: &Kernels,
    dim: usize,
    metric: Metric,
    src: &dyn Source,
    (schema, dense, sparse): (Option<&Schema>, &[DenseSpec], &[SparseSpec]),
    index: IndexSpec<'_>,
    alloc: impl FnOnce(usize) -> Result<B, Error>,
) -> Result<B, Error> {
    // The work is in two functions of no type parameter: one copy of it in the package
    // whatever the buffer and the call site.
    let prepared = prepare(kernels, dim, metric, src, (schema, dense, sparse), index)?;
    let mut buf = alloc(prepared.layout.file_len() as usize)?;
    fill(kernels, dim, metric, src, &prepared, buf.as_mut(), index.progress);
    Ok(buf)
}

/// The index a segment is written with: its kind and, for IVF, centroids to use instead of
/// training them (`None`: trained on the rows, as every seal and merge does), and where the
/// build reports its progress.
#[derive(Clone, Copy)]
pub(crate) struct IndexSpec<'a> {
    pub(crate) kind: IndexKind,
    pub(crate) centroids: Option<&'a [f32]>,
    pub(crate) progress: &'a dyn Progress,
}

impl From<IndexKind> for IndexSpec<'_> {
    fn from(kind: IndexKind) -> Self {
        IndexSpec { kind, centroids: None, progress: &Quiet }
    }
}

/// What is known before the file exists: its layout, the partition plan, and the payload and
/// text sections.
struct Prepared {
    meta: SegmentMeta,
    codes_only: bool,
    ivf: Option<(IvfPlan, u64)>,
    payload: Option<PayloadSections>,
    text: Option<TextSections>,
    /// Each sparse vector's sections.
    sparse: Vec<crate::sparse::SparseSections>,
    /// With two or more dense vectors: every one's name, and vectors `1..`'s settings and
    /// partition plans.
    dense: Vec<(DenseSpec, Option<IvfPlan>)>,
    layout: Layout,
}

impl Prepared {
    /// The seed of the segment's indexes (vector 0's).
    fn ivf_seed(&self) -> u64 {
        self.ivf.as_ref().map_or(0, |(_, seed)| *seed)
    }

    /// The stored row `i` is source row `stored(i)`.
    fn stored(&self, i: usize) -> usize {
        self.ivf.as_ref().map_or(i, |(p, _)| p.order[i] as usize)
    }

    /// `(kind, bytes)` of the payload and text sections.
    fn extra(&self) -> Vec<(u32, &[u8])> {
        let mut out = Vec::with_capacity(10);
        if let Some(p) = &self.payload {
            out.extend_from_slice(&p.by_kind());
        }
        if let Some(t) = &self.text {
            out.extend_from_slice(&crate::text::sections(t));
        }
        for (t, s) in self.sparse.iter().enumerate() {
            out.extend(s.sections.iter().map(|(r, bytes)| (shoal_format::sparse_kind(t, *r), &bytes[..])));
        }
        for (d, (spec, _)) in self.dense.iter().enumerate() {
            out.push((dense_kind(d, DENSE_NAME), spec.name.as_bytes()));
        }
        out
    }
}

fn prepare(
    kernels: &Kernels,
    dim: usize,
    metric: Metric,
    src: &dyn Source,
    (schema, dense, sparse): (Option<&Schema>, &[DenseSpec], &[SparseSpec]),
    IndexSpec { kind: index, centroids, progress }: IndexSpec<'_>,
) -> Result<Prepared, Error> {
    let n = src.len();
    // The code width each vector gets, for its own dimension (codes only: ranked by the extra
    // bits, so at least 2).
    let (options, index) = (index, index.resolved(dim));
    let codes_only = matches!(index, IndexKind::IvfRabitq(p) if p.codes_only);
    let mut meta = SegmentMeta::zeroed();
    meta.dim = dim as u32;
    meta.metric = metric.code();
    meta.rows = n as u64;
    meta.vector_type = if codes_only { VECTOR_TYPE_CODES_ONLY } else { VECTOR_TYPE_F32 };
    let ivf = match index {
        IndexKind::IvfRabitq(params) => {
            let plan = shoal_index::ivf::plan(kernels, src, dim, params, centroids.map(<[f32]>::to_vec), progress);
            Some((plan, params.seed))
        }
        IndexKind::Flat => None,
    };
    let mut prepared = Prepared {
        meta,
        codes_only,
        ivf,
        payload: None,
        text: None,
        sparse: Vec::new(),
        dense: Vec::new(),
        layout: Layout::new(&[]),
    };
    // Payload and text sections, from one pass over the documents in the stored row order.
    if let Some(schema) = schema {
        let mut pb = PayloadBuilder::new(schema.clone());
        let mut tb = crate::text::has_text(schema).then(|| TextBuilder::new(schema));
        progress.phase(if tb.is_some() { "payloads and text" } else { "payloads" }, n as u64);
        for i in 0..n {
            if i % 4096 == 4095 {
                progress.add(4096);
            }
            let doc = src.doc(prepared.stored(i))?;
            if pb.push(&doc).is_err() {
                pb.push(&Value::Null).expect("null is every schema's empty payload");
            }
            if let Some(tb) = &mut tb {
                tb.push(&doc);
            }
        }
        progress.add((n % 4096) as u64);
        prepared.payload = Some(pb.finish());
        prepared.text = tb.map(TextBuilder::finish);
    }
    for (t, spec) in sparse.iter().enumerate() {
        let s = crate::sparse::build(spec, n, |i| src.sparse(prepared.stored(i), t))?;
        prepared.sparse.push(s);
    }
    if dense.len() > 1 {
        if codes_only {
            return Err(Error::InvalidConfig("codes-only segments hold one dense vector"));
        }
        let order = prepared.ivf.as_ref().map(|(p, _)| &p.order[..]);
        for (d, spec) in dense.iter().enumerate() {
            let plan = match options.resolved(spec.dim) {
                IndexKind::IvfRabitq(params) if d > 0 => {
                    let rows = DenseOf { src, d, order };
                    Some(shoal_index::ivf::plan(kernels, &rows, spec.dim, params, None, progress))
                }
                _ => None,
            };
            prepared.dense.push((spec.clone(), plan));
        }
    }
    let mut planned = vec![(KIND_META, 0, core::mem::size_of::<SegmentMeta>() as u64), (KIND_IDS, 0, (n * 8) as u64)];
    if !codes_only {
        planned.push((KIND_VECTORS, 0, (n * dim * 4) as u64));
    }
    let uuids = crate::ids::count_uuids(n, |i| src.id(i));
    planned.extend(crate::ids::planned_index(n, uuids));
    if let Some((plan, _)) = &prepared.ivf {
        planned.extend(ivf_sections::planned(plan, dim, 0));
    }
    for (d, (spec, plan)) in prepared.dense.iter().enumerate().skip(1) {
        let f = SECTION_OPTIONAL;
        planned.push((dense_kind(d, DENSE_META), f, core::mem::size_of::<DenseMeta>() as u64));
        planned.push((dense_kind(d, KIND_VECTORS), f, (n * spec.dim * 4) as u64));
        if let Some(plan) = plan {
            planned.extend(ivf_sections::planned(plan, spec.dim, d));
            planned.push((dense_kind(d, DENSE_ROWS), f, (n * 4) as u64));
            planned.push((dense_kind(d, DENSE_POSITIONS), f, (n * 4) as u64));
        }
    }
    planned.extend(prepared.extra().iter().map(|&(kind, bytes)| (kind, SECTION_OPTIONAL, bytes.len() as u64)));
    prepared.layout = Layout::new(&planned);
    let nested = schema.is_some_and(Schema::is_nested);
    prepared.layout.set_flags(
        if uuids > 0 { FLAG_UUID_IDS } else { 0 }
            | if nested { shoal_format::FLAG_NESTED_PAYLOAD } else { 0 }
            | if sparse.is_empty() { 0 } else { shoal_format::FLAG_SPARSE }
            | if prepared.dense.is_empty() { 0 } else { shoal_format::FLAG_DENSE_VECTORS },
    );
    Ok(prepared)
}

/// Writes every section of `prepared` into `file` (zeroed, its length the layout's).
fn fill(
    kernels: &Kernels,
    dim: usize,
    metric: Metric,
    src: &dyn Source,
    prepared: &Prepared,
    file: &mut [u8],
    progress: &dyn Progress,
) {
    let (n, layout, codes_only) = (src.len(), &prepared.layout, prepared.codes_only);
    let stored = |i: usize| prepared.stored(i);
    assert!(file.len() as u64 == layout.file_len() && (file.as_ptr() as usize).is_multiple_of(ALIGN));

    progress.phase("writing rows", 0);
    file[layout.range(KIND_META)].copy_from_slice(bytemuck::bytes_of(&prepared.meta));
    let ids: &mut [u64] = bytemuck::cast_slice_mut(&mut file[layout.range(KIND_IDS)]);
    shoal_index::par::chunks_mut(ids, COPY_CHUNK, |c, out| {
        for (j, o) in out.iter_mut().enumerate() {
            *o = crate::ids::ids_slot(src.id(stored(c * COPY_CHUNK + j)));
        }
    });
    if !codes_only {
        let vectors: &mut [f32] = bytemuck::cast_slice_mut(&mut file[layout.range(KIND_VECTORS)]);
        shoal_index::par::chunks_mut(vectors, COPY_CHUNK * dim, |c, out| {
            for (j, o) in out.chunks_exact_mut(dim).enumerate() {
                o.copy_from_slice(src.row(stored(c * COPY_CHUNK + j)));
            }
        });
    }
    crate::ids::write_index(n, |row| src.id(stored(row)), layout, file);

    if let Some((plan, seed)) = &prepared.ivf {
        ivf_sections::write(kernels, metric, src, (dim, 0), plan, *seed, codes_only, layout, file, progress);
    }
    let order = prepared.ivf.as_ref().map(|(p, _)| &p.order[..]);
    for (d, (spec, plan)) in prepared.dense.iter().enumerate().skip(1) {
        fill_dense(kernels, (src, order), (d, spec, plan.as_ref()), prepared.ivf_seed(), layout, file, progress);
    }
    for (kind, bytes) in prepared.extra() {
        file[layout.range(kind)].copy_from_slice(bytes);
    }
    progress.phase("checksums", 0);
    layout.finish(file);
}

/// Writes dense vector `d >= 1`'s sections: its meta, its vectors by position (by its own
/// partitions when it has an index, else by row), and its index with the position maps.
/// `order`: the stored row `i` is source row `order[i]` (vector 0's partitions).
fn fill_dense(
    kernels: &Kernels,
    (src, order): (&dyn Source, Option<&[u32]>),
    (d, spec, plan): (usize, &DenseSpec, Option<&IvfPlan>),
    seed: u64,
    layout: &Layout,
    file: &mut [u8],
    progress: &dyn Progress,
) {
    let (n, dim) = (src.len(), spec.dim);
    let mut meta = DenseMeta::zeroed();
    meta.dim = dim as u32;
    meta.metric = spec.metric.code();
    meta.present = n as u64;
    file[layout.range(dense_kind(d, DENSE_META))].copy_from_slice(bytemuck::bytes_of(&meta));
    let rows = DenseOf { src, d, order };
    // The row of each position.
    let at = |pos: usize| plan.map_or(pos, |p| p.order[pos] as usize);
    let vectors: &mut [f32] = bytemuck::cast_slice_mut(&mut file[layout.range(dense_kind(d, KIND_VECTORS))]);
    shoal_index::par::chunks_mut(vectors, COPY_CHUNK * dim, |c, out| {
        for (j, o) in out.chunks_exact_mut(dim).enumerate() {
            o.copy_from_slice(rows.row(at(c * COPY_CHUNK + j)));
        }
    });
    let Some(plan) = plan else { return };
    let to_row: &mut [u32] = bytemuck::cast_slice_mut(&mut file[layout.range(dense_kind(d, DENSE_ROWS))]);
    to_row.copy_from_slice(&plan.order);
    let to_pos: &mut [u32] = bytemuck::cast_slice_mut(&mut file[layout.range(dense_kind(d, DENSE_POSITIONS))]);
    for (pos, &row) in plan.order.iter().enumerate() {
        to_pos[row as usize] = pos as u32;
    }
    ivf_sections::write(kernels, spec.metric, &rows, (dim, d), plan, seed, false, layout, file, progress);
}

impl SealedSegment {
    /// Writes a segment of the given rows (external ids must be unique; vectors already
    /// normalised for cosine). With an IVF index, rows are stored sorted by partition.
    pub fn write(
        kernels: &Kernels,
        dim: usize,
        metric: Metric,
        ids: &[PointId],
        vectors: &[f32],
        index: IndexKind,
    ) -> AlignedBytes {
        SealedSegment::write_with_payloads(kernels, dim, metric, ids, vectors, None, index)
    }

    /// [`write`](Self::write) with payload documents: the segment also carries the payload
    /// sections (kinds 32–36, optional), with the documents in the stored row order. Every
    /// document must have been validated against the schema (one that does not is stored as
    /// `null`).
    pub fn write_with_payloads(
        kernels: &Kernels,
        dim: usize,
        metric: Metric,
        ids: &[PointId],
        vectors: &[f32],
        payloads: Option<PayloadInput<'_>>,
        index: IndexKind,
    ) -> AlignedBytes {
        debug_assert_eq!(ids.len() * dim, vectors.len());
        debug_assert!(payloads.is_none_or(|p| p.docs.len() == ids.len()));
        let docs = payloads.map(|p| p.docs);
        let src =
            crate::source::FlatSource { ids, vectors: Flat::new(vectors, dim.max(1)), docs, sparse: &[], dense: &[] };
        let schema = payloads.map(|p| p.schema);
        write(kernels, dim, metric, &src, (schema, &[], &[]), index.into(), |len| Ok(AlignedBytes::zeroed(len)))
            .expect("rows in memory are always readable")
    }
}
