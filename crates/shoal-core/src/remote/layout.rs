//! Writing a segment in format 2 (`docs/format.md`, "Segment format version 2"): a format-1
//! IVF segment, its partitions renumbered so that partitions probed together are adjacent,
//! laid out for reading by byte ranges.

use alloc::vec::Vec;

use shoal_format::{
    AlignedBytes, IdEntry, IvfDirEntry, IvfMeta, KIND_ID_INDEX, KIND_IDS, KIND_IVF_BLOCKS, KIND_IVF_CENTROIDS,
    KIND_IVF_DIR, KIND_IVF_META, KIND_IVF_OFFSETS, KIND_IVF_ROT_CENTROIDS, KIND_META, KIND_RABITQ_BLOCK_OFFSETS,
    KIND_RABITQ_CODES, KIND_RABITQ_EX_CODES, KIND_RABITQ_EX_FACTORS, KIND_RABITQ_FACTORS, KIND_RABITQ_ROTATION,
    KIND_VECTORS, Layout, SECTION_HOT, SECTION_OPTIONAL, SegmentWriter, crc32c,
};
use shoal_index::ivf::block_bytes;
use shoal_index::ivf::codes::{CentroidCodes, KIND_IVF_CENTROID_CODES, lay_out_centroid_codes};
use shoal_index::ivf::v2::{BlockLayout, partition_order, vector_block_rows};
use shoal_index::rabitq::{ExFactors, Factors, ex_code_bytes};

use shoal_payload::{
    KIND_PAYLOAD_COLUMNS, KIND_PAYLOAD_DICTS, KIND_PAYLOAD_FIELDS, KIND_PAYLOAD_POSTINGS, PayloadBuilder,
    PayloadSections, Schema,
};
use shoal_text::Sections;

use super::docs::{
    KIND_PAYLOAD_DOC_BLOCKS, KIND_PAYLOAD_DOC_DIR, KIND_ROW_IDS, KIND_ROW_IDS_DIR, KIND_ROW_IDS_PACKED, lay_out_docs,
    lay_out_ids, pack_ids,
};
use super::filter::{KIND_PAYLOAD_FILTER_DIR, lay_out_filter_dir};
use super::text::{KIND_TEXT_DICT_INDEX, KIND_TEXT_TERM_DICT, KIND_TEXT_TERMS, lay_out_text};
use super::vector::{KIND_VECTOR_CRC_DIR, KIND_VECTOR_CRCS, lay_out_vector_crcs};
use crate::sections::bad;
use crate::text::TextBuilder;
use crate::{Error, SealedSegment};

/// The most centroid bytes a format-2 segment keeps hot, read at open with the rest of the
/// bootstrap region (8 MiB: 16,384 partitions at 128 dimensions), so that the whole region —
/// centroids, partition directory, rotation, id directory — stays within what a manifest's
/// bootstrap hint opens in one request (16 MiB). Beyond, the centroids are cold and their
/// 8-bit codes hot (`IVF_CENTROID_CODES`), up to as many bytes.
pub const MAX_HOT_CENTROIDS: usize = 8 << 20;

/// A segment's schema and its rows' documents (compact JSON) in the format-2 order.
type Documents<'s> = (Schema, Vec<&'s [u8]>);

/// Sections to write: `(kind, table flags, bytes)`.
type Sections2 = Vec<(u32, u32, Vec<u8>)>;

/// A segment's IVF index and rows, in the format-2 partition order.
struct Permuted<'s> {
    seg: &'s SealedSegment,
    /// `order[q]`: the partition that becomes partition `q`.
    order: Vec<u32>,
    /// Old partition offsets (rows) and block offsets, the index's shape.
    offsets: Vec<u32>,
    block_offsets: Vec<u32>,
    /// `new_row[old]`.
    new_row: Vec<u32>,
    padded: usize,
    bits: u32,
}

impl<'s> Permuted<'s> {
    fn new(seg: &'s SealedSegment) -> Result<Permuted<'s>, Error> {
        let refuse = |what| Err(Error::Unsupported(what));
        if !seg.sparse_specs().is_empty() || seg.dense_specs().len() != 1 {
            return refuse("sparse or several dense vectors in a format-2 segment");
        }
        if seg.has_uuids() {
            return refuse("UUID point ids in a format-2 segment");
        }
        let Some((index, data, _)) = seg.ivf() else {
            return refuse("a format-2 segment without an IVF index");
        };
        let dim = seg.dim();
        let seed = match seg.index_kind() {
            crate::IndexKind::IvfRabitq(p) => p.seed,
            crate::IndexKind::Flat => unreachable!("an IVF index"),
        };
        // Format 2 does not store the rotated centroids: a reader computes them. They must be
        // what this index searches with, bit for bit.
        let mut rotated = alloc::vec![0f32; index.padded];
        for (c, stored) in data.centroids.chunks_exact(dim).zip(data.rot_centroids.chunks_exact(index.padded)) {
            index.rotation.apply(c, &mut rotated);
            if rotated.iter().zip(stored).any(|(a, b)| a.to_bits() != b.to_bits()) {
                return Err(crate::sections::bad("IVF_ROT_CENTROIDS", "not the rotation of the centroids"));
            }
        }
        let order = partition_order(&crate::Kernels::scalar(), data.centroids, dim, seed);
        let mut new_row = alloc::vec![0u32; seg.rows()];
        let mut next = 0u32;
        for &p in &order {
            for old in data.offsets[p as usize]..data.offsets[p as usize + 1] {
                new_row[old as usize] = next;
                next += 1;
            }
        }
        Ok(Permuted {
            seg,
            offsets: data.offsets.to_vec(),
            block_offsets: data.block_offsets.to_vec(),
            order,
            new_row,
            padded: index.padded,
            bits: data.bits,
        })
    }

    /// Old rows in new order, and old partitions in new order.
    fn old_rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().flat_map(|&p| self.offsets[p as usize] as usize..self.offsets[p as usize + 1] as usize)
    }

    /// The rows' `size`-byte records of `array` (a section indexed by old row), in new order.
    fn rows_of(&self, array: &[u8], size: usize) -> Vec<u8> {
        self.old_rows().flat_map(|r| array[r * size..(r + 1) * size].iter().copied()).collect()
    }

    /// Partitions' `per`-float records (centroids), in new order.
    fn per_partition(&self, array: &[f32], per: usize) -> Vec<f32> {
        self.order.iter().flat_map(|&p| array[p as usize * per..(p as usize + 1) * per].iter().copied()).collect()
    }

    /// `ID_INDEX` with new rows (the same order: by id).
    fn id_index(&self) -> Vec<u8> {
        let entries: Vec<IdEntry> =
            self.seg.id_index().iter().map(|e| IdEntry { row: self.new_row[e.row as usize], ..*e }).collect();
        bytemuck::cast_slice(&entries).to_vec()
    }

    fn ids(&self) -> Vec<u64> {
        self.old_rows().map(|r| self.seg.id(r).as_num().expect("integer ids")).collect()
    }

    /// The payloads of the rows in new order, with the schema, when the segment carries any
    /// (not when every document is `{}` and the schema has no text field: [`no_payloads`]; a
    /// text schema keeps its index even then, so that the segment answers text requests —
    /// with no hit — as the local one does).
    fn documents(&self) -> Result<Option<Documents<'s>>, Error> {
        let (Some(schema), Some(view)) = (self.seg.schema(), self.seg.payload()) else { return Ok(None) };
        if no_payloads(self.seg) && !crate::text::has_text(schema) {
            return Ok(None);
        }
        let docs = self
            .old_rows()
            .map(|r| view.document_bytes(r as u32).ok_or_else(|| bad("PAYLOAD_DOCS", "a row without its document")))
            .collect::<Result<Vec<&'s [u8]>, Error>>()?;
        Ok(Some((schema.clone(), docs)))
    }

    /// The `IVF_META` record, with `reserved` as given.
    fn meta(&self, reserved: [u8; 24]) -> Vec<u8> {
        let reader = self.seg.reader();
        let mut meta: IvfMeta = *bytemuck::from_bytes(reader.section(KIND_IVF_META).expect("an IVF index"));
        meta.reserved = reserved;
        bytemuck::bytes_of(&meta).to_vec()
    }
}

/// The text index of `docs` (rows in order) when `schema` has text fields: the index a seal of
/// those rows in that order builds.
fn text_of(schema: &Schema, docs: &[&[u8]]) -> Result<Option<Sections>, Error> {
    if !crate::text::has_text(schema) {
        return Ok(None);
    }
    let mut b = TextBuilder::new(schema);
    for d in docs {
        let doc: serde_json::Value =
            serde_json::from_slice(d).map_err(|_| bad("PAYLOAD_DOCS", "a document that is not JSON"))?;
        b.push(&doc);
    }
    Ok(Some(b.finish()))
}

/// The payload sections of `docs` (rows in order): what a seal of those rows builds.
fn payload_of(schema: &Schema, docs: &[&[u8]]) -> Result<PayloadSections, Error> {
    let mut b = PayloadBuilder::new(schema.clone());
    for (point, d) in docs.iter().enumerate() {
        let doc: serde_json::Value =
            serde_json::from_slice(d).map_err(|_| bad("PAYLOAD_DOCS", "a document that is not JSON"))?;
        b.push(&doc).map_err(|error| Error::InvalidPayload { point, error })?;
    }
    Ok(b.finish())
}

/// The sections of a segment's payloads and text in format 2, rows in the new order:
/// `(kind, flags, bytes)`, hot ones first.
fn payload_sections(perm: &Permuted<'_>) -> Result<(Sections2, Sections2), Error> {
    let (mut hot, mut cold) = (Vec::new(), Vec::new());
    let Some((schema, docs)) = perm.documents()? else { return Ok((hot, cold)) };
    let h = SECTION_HOT | SECTION_OPTIONAL;
    let fields = perm.seg.reader().section(KIND_PAYLOAD_FIELDS).ok_or_else(|| bad("PAYLOAD_FIELDS", "missing"))?;
    let (dir, blocks) = lay_out_docs(&docs)?;
    hot.push((KIND_PAYLOAD_FIELDS, h, fields.to_vec()));
    hot.push((KIND_PAYLOAD_DOC_DIR, h, dir));
    cold.push((KIND_PAYLOAD_DOC_BLOCKS, SECTION_OPTIONAL, blocks));
    // What filters read: v1's columns, dictionaries and value -> rows lists, cut by field.
    let built = payload_of(&schema, &docs)?;
    hot.push((KIND_PAYLOAD_FILTER_DIR, h, lay_out_filter_dir(&built)?));
    cold.push((KIND_PAYLOAD_COLUMNS, SECTION_OPTIONAL, built.columns));
    cold.push((KIND_PAYLOAD_DICTS, SECTION_OPTIONAL, built.dicts));
    cold.push((KIND_PAYLOAD_POSTINGS, SECTION_OPTIONAL, built.postings));
    if let Some(text) = text_of(&schema, &docs)? {
        let t = lay_out_text(&text)?;
        hot.push((shoal_text::kinds::TEXT_META, h, t.meta));
        hot.push((KIND_TEXT_DICT_INDEX, h, t.dict_index));
        cold.push((KIND_TEXT_TERM_DICT, SECTION_OPTIONAL, t.term_dict));
        cold.push((KIND_TEXT_TERMS, SECTION_OPTIONAL, t.terms));
        // A text hit's point id: ids by row, packed and hot when small, else in blocks with
        // their CRCs hot.
        let ids = perm.ids();
        match pack_ids(&ids) {
            Some(packed) => hot.push((KIND_ROW_IDS_PACKED, h, packed)),
            None => {
                hot.push((KIND_ROW_IDS_DIR, h, lay_out_ids(&ids)));
                cold.push((KIND_ROW_IDS, SECTION_OPTIONAL, bytemuck::cast_slice(&ids).to_vec()));
            }
        }
    }
    Ok((hot, cold))
}

/// Whether `seg` holds no payload: no payload sections, or sections whose every document is
/// `{}` (a collection with a payload schema, flat or nested, whose points carry none — a
/// Qdrant collection's, say). Such sections are not carried into format 2: nothing is lost.
fn no_payloads(seg: &SealedSegment) -> bool {
    match (seg.schema(), seg.payload()) {
        (None, _) => true,
        (Some(_), Some(p)) => (0..p.rows()).all(|r| p.document_bytes(r) == Some(b"{}".as_slice())),
        (Some(_), None) => false,
    }
}

/// `seg` (format 1, one dense vector with an IVF-RaBitQ index, integer ids, no sparse vectors)
/// in format 2: the same index with its partitions in the format-2 order, its payloads (the
/// schema and the documents) and its text index with the rows in that order. Centroids over
/// [`MAX_HOT_CENTROIDS`] are coded (a segment whose codes too take more is refused).
pub fn write_for_ranges(seg: &SealedSegment) -> Result<AlignedBytes, Error> {
    write_for_ranges_with(seg, MAX_HOT_CENTROIDS)
}

/// [`write_for_ranges`], coding centroids over `hot_centroids` bytes (smaller than the
/// default: for tests and benchmarks of the coded layout on small indexes).
pub fn write_for_ranges_with(seg: &SealedSegment, hot_centroids: usize) -> Result<AlignedBytes, Error> {
    let perm = Permuted::new(seg)?;
    let (_, data, _) = seg.ivf().expect("checked");
    let (dim, padded, bits) = (seg.dim(), perm.padded, perm.bits);
    let vbr = vector_block_rows(dim);
    let (bb, exb) = (block_bytes(padded), if bits > 1 { ex_code_bytes(padded, bits) } else { 0 });
    let vectors = seg.vectors();
    let mut dir: Vec<IvfDirEntry> = Vec::with_capacity(perm.order.len());
    let mut blocks: Vec<u8> = Vec::new();
    // Every vector block's CRC, in row order (`VECTOR_CRCS`, written with a filter index).
    let mut vector_crcs: Vec<u32> = Vec::new();
    let mut first = 0u32;
    for &p in &perm.order {
        let (r0, r1) = (perm.offsets[p as usize] as usize, perm.offsets[p as usize + 1] as usize);
        let (b0, b1) = (perm.block_offsets[p as usize] as usize, perm.block_offsets[p as usize + 1] as usize);
        let rows = r1 - r0;
        let vblocks = if vectors.is_some() { rows.div_ceil(vbr) } else { 0 };
        let layout = BlockLayout::new(rows, padded, bits, vblocks);
        let mut block = alloc::vec![0u8; layout.len()];
        block[layout.codes.clone()].copy_from_slice(&data.codes[b0 * bb..b1 * bb]);
        block[layout.factors.clone()].copy_from_slice(bytemuck::cast_slice::<Factors, u8>(&data.factors[r0..r1]));
        if bits > 1 {
            block[layout.ex_codes.clone()].copy_from_slice(&data.ex_codes[r0 * exb..r1 * exb]);
            block[layout.ex_factors.clone()]
                .copy_from_slice(bytemuck::cast_slice::<ExFactors, u8>(&data.ex_factors[r0..r1]));
        }
        let ids: Vec<u64> = (r0..r1).map(|r| seg.id(r).as_num().expect("integer ids")).collect();
        block[layout.ids.clone()].copy_from_slice(bytemuck::cast_slice(&ids));
        if let Some(v) = vectors {
            let crcs: Vec<u32> = (0..vblocks)
                .map(|b| {
                    let rows = r0 + b * vbr..(r0 + (b + 1) * vbr).min(r1);
                    crc32c(bytemuck::cast_slice(&v[rows.start * dim..rows.end * dim]))
                })
                .collect();
            block[layout.vector_crcs.clone()].copy_from_slice(bytemuck::cast_slice(&crcs));
            vector_crcs.extend_from_slice(&crcs);
        }
        let offset = shoal_format::align_up(blocks.len() as u64);
        blocks.resize(offset as usize, 0);
        dir.push(IvfDirEntry {
            first_row: first,
            rows: rows as u32,
            offset,
            length: block.len() as u32,
            crc: crc32c(&block),
        });
        blocks.extend_from_slice(&block);
        first += rows as u32;
    }
    let mut reserved = [0u8; 24];
    reserved[0..4].copy_from_slice(&(shoal_index::ivf::v2::group_count(perm.order.len()) as u32).to_le_bytes());
    reserved[4..8].copy_from_slice(&(vbr as u32).to_le_bytes());
    let reader = seg.reader();
    let section = |k: u32| reader.section(k).expect("a section of every IVF segment");
    let (meta, ivf_meta) = (section(KIND_META).to_vec(), perm.meta(reserved));
    let floats = perm.per_partition(data.centroids, dim);
    let centroids: &[u8] = bytemuck::cast_slice(&floats);
    // Too many centroids to read at open: their codes are hot, the centroids cold.
    let codes = if centroids.len() > hot_centroids {
        let codes = lay_out_centroid_codes(&floats, dim);
        if codes.len() > MAX_HOT_CENTROIDS {
            return Err(Error::Unsupported("more than 8 MiB of centroid codes in a format-2 segment"));
        }
        // (Centroids too large to code — scales or radii that are not finite — are refused as a
        // reader would refuse them.)
        CentroidCodes::open(&codes, perm.order.len(), dim)?;
        Some(codes)
    } else {
        None
    };
    let permuted_vectors: Option<Vec<u8>> = vectors.map(|v| perm.rows_of(bytemuck::cast_slice(v), dim * 4));
    let id_index = perm.id_index();
    let (hot_payload, cold_payload) = payload_sections(&perm)?;
    let hot = SECTION_HOT | SECTION_OPTIONAL;
    let mut sections: Vec<(u32, u32, &[u8])> = alloc::vec![
        (KIND_META, SECTION_HOT, &meta[..]),
        (KIND_IVF_META, hot, &ivf_meta[..]),
        match &codes {
            None => (KIND_IVF_CENTROIDS, hot, centroids),
            Some(c) => (KIND_IVF_CENTROID_CODES, hot, &c[..]),
        },
        (KIND_RABITQ_ROTATION, hot, section(KIND_RABITQ_ROTATION)),
        (KIND_IVF_DIR, SECTION_HOT, bytemuck::cast_slice(&dir)),
    ];
    sections.extend(hot_payload.iter().map(|(k, f, b)| (*k, *f, &b[..])));
    // An exact scan (a filter's few matches) checks its vectors by these.
    let filters = hot_payload.iter().any(|(k, ..)| *k == KIND_PAYLOAD_FILTER_DIR);
    let crcs = (filters && permuted_vectors.is_some()).then(|| lay_out_vector_crcs(&vector_crcs));
    if let Some((dir, _)) = &crcs {
        sections.push((KIND_VECTOR_CRC_DIR, hot, &dir[..]));
    }
    if codes.is_some() {
        sections.push((KIND_IVF_CENTROIDS, 0, centroids));
    }
    sections.push((KIND_IVF_BLOCKS, 0, &blocks[..]));
    if let Some(v) = &permuted_vectors {
        sections.push((KIND_VECTORS, 0, v));
    }
    if let Some((_, all)) = &crcs {
        sections.push((KIND_VECTOR_CRCS, SECTION_OPTIONAL, &all[..]));
    }
    sections.push((KIND_ID_INDEX, 0, &id_index[..]));
    sections.extend(cold_payload.iter().map(|(k, f, b)| (*k, *f, &b[..])));
    let planned: Vec<(u32, u32, u64)> = sections.iter().map(|&(k, f, b)| (k, f, b.len() as u64)).collect();
    let mut layout = Layout::new(&planned);
    let mut out = AlignedBytes::zeroed(layout.file_len() as usize);
    for &(k, _, b) in &sections {
        out.as_mut_slice()[layout.range(k)].copy_from_slice(b);
    }
    if !hot_payload.is_empty() {
        layout.set_flags(seg.reader().header().flags & shoal_format::FLAG_NESTED_PAYLOAD);
    }
    layout.finish_ranges(out.as_mut_slice());
    Ok(out)
}

/// `seg` in format 1 with its partitions in the format-2 order: the index that
/// [`write_for_ranges`] lays out, for comparing a search of one layout with the other.
pub fn write_reordered_v1(seg: &SealedSegment) -> Result<AlignedBytes, Error> {
    let perm = Permuted::new(seg)?;
    let (index, data, _) = seg.ivf().expect("checked");
    let (dim, bits) = (seg.dim(), perm.bits);
    let bb = block_bytes(perm.padded);
    let exb = if bits > 1 { ex_code_bytes(perm.padded, bits) } else { 0 };
    let (mut offsets, mut block_offsets) = (alloc::vec![0u32], alloc::vec![0u32]);
    let mut codes = Vec::with_capacity(data.codes.len());
    for &p in &perm.order {
        let p = p as usize;
        offsets.push(offsets.last().unwrap() + perm.offsets[p + 1] - perm.offsets[p]);
        block_offsets.push(block_offsets.last().unwrap() + perm.block_offsets[p + 1] - perm.block_offsets[p]);
        codes.extend_from_slice(
            &data.codes[perm.block_offsets[p] as usize * bb..perm.block_offsets[p + 1] as usize * bb],
        );
    }
    let reader = seg.reader();
    let ids: Vec<u8> = bytemuck::cast_slice(&perm.ids()).to_vec();
    let vectors = seg.vectors().map(|v| perm.rows_of(bytemuck::cast_slice(v), dim * 4));
    let payloads: Vec<(u32, Vec<u8>)> = alloc::vec![
        (KIND_IDS, ids),
        (KIND_ID_INDEX, perm.id_index()),
        (KIND_IVF_META, perm.meta([0; 24])),
        (KIND_IVF_CENTROIDS, bytemuck::cast_slice(&perm.per_partition(data.centroids, dim)).to_vec()),
        (KIND_IVF_ROT_CENTROIDS, bytemuck::cast_slice(&perm.per_partition(data.rot_centroids, index.padded)).to_vec()),
        (KIND_IVF_OFFSETS, bytemuck::cast_slice(&offsets).to_vec()),
        (KIND_RABITQ_BLOCK_OFFSETS, bytemuck::cast_slice(&block_offsets).to_vec()),
        (KIND_RABITQ_CODES, codes),
        (KIND_RABITQ_FACTORS, perm.rows_of(bytemuck::cast_slice(data.factors), core::mem::size_of::<Factors>())),
    ];
    let mut payloads = payloads;
    // Payloads and text rebuilt with the rows in the new order.
    if let Some((schema, docs)) = perm.documents()? {
        let built = payload_of(&schema, &docs)?;
        payloads.extend(built.by_kind().iter().map(|&(k, bytes)| (k, bytes.to_vec())));
        if let Some(text) = text_of(&schema, &docs)? {
            payloads.extend(crate::text::sections(&text).iter().map(|&(k, bytes)| (k, bytes.to_vec())));
        }
    }
    if bits > 1 {
        payloads.push((KIND_RABITQ_EX_CODES, perm.rows_of(data.ex_codes, exb)));
        let ex = perm.rows_of(bytemuck::cast_slice(data.ex_factors), core::mem::size_of::<ExFactors>());
        payloads.push((KIND_RABITQ_EX_FACTORS, ex));
    }
    let mut w = SegmentWriter::new();
    w.set_flags(reader.header().flags);
    for e in reader.sections() {
        let payload = match e.kind {
            KIND_VECTORS => vectors.as_deref().expect("a VECTORS section"),
            k => payloads
                .iter()
                .find(|(kind, _)| *kind == k)
                .map_or_else(|| reader.section(k).expect("listed"), |(_, b)| &b[..]),
        };
        w.add_section(e.kind, e.flags, payload);
    }
    Ok(AlignedBytes::from_slice(&w.finish()))
}
