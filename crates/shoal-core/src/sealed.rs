use alloc::boxed::Box;
use core::ops::Range;

use shoal_format::{
    AlignedBytes, IdEntry, KIND_ID_INDEX, KIND_ID_KINDS, KIND_IDS, KIND_META, KIND_UUID_INDEX, KIND_UUIDS,
    KIND_VECTORS, MAX_DIM, PointId, SegmentMeta, SegmentReader, SegmentWriter, UuidEntry, VECTOR_TYPE_CODES_ONLY,
    VECTOR_TYPE_F32, cast_records,
};
use shoal_index::Metric;
use shoal_index::ivf::{IvfData, IvfIndex, IvfParams, IvfQuery};
use shoal_payload::{PayloadSectionBytes, PayloadView, Schema};

use crate::Error;
use crate::ids::IdRanges;
use crate::sections::bad;
use crate::text::TextRanges;
use shoal_format::range_of;
use shoal_index::ivf::IvfSections;

/// The index a sealed segment carries besides its vectors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexKind {
    /// None: every search scans all vectors exactly.
    #[default]
    Flat,
    /// IVF partitions with RaBitQ codes and exact re-ranking.
    IvfRabitq(IvfParams),
}

impl IndexKind {
    /// The seal options as JSON (`{}` for flat), as [`from_json`](Self::from_json) reads them.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            IndexKind::Flat => serde_json::json!({}),
            IndexKind::IvfRabitq(p) => {
                // A map built by hand: `json!` converts its values with `to_value(..).unwrap()`,
                // whose panic message carries `serde_json::Error`'s `Debug` into the wasm package.
                let mut o = serde_json::Map::new();
                o.insert("index".into(), "ivf-rabitq".into());
                o.insert("seed".into(), p.seed.into());
                if let Some(b) = p.bits {
                    o.insert("bits".into(), b.into());
                }
                if let Some(n) = p.partitions {
                    o.insert("partitions".into(), n.into());
                }
                if p.codes_only {
                    o.insert("codes_only".into(), true.into());
                }
                serde_json::Value::Object(o)
            }
        }
    }

    /// The options with the code width a `dim`-dimensional vector is built with: when none is
    /// given, [`default_bits`](shoal_index::ivf::default_bits); codes only, at least 2. Two
    /// options build the same index for it when their resolved forms are equal.
    #[inline(never)]
    pub fn resolved(self, dim: usize) -> IndexKind {
        match self {
            IndexKind::IvfRabitq(p) => {
                let bits = p.bits.unwrap_or(shoal_index::ivf::default_bits(dim));
                IndexKind::IvfRabitq(IvfParams { bits: Some(if p.codes_only { bits.max(2) } else { bits }), ..p })
            }
            flat => flat,
        }
    }

    /// Parses seal options (`{}` means flat). Errors name the offending option.
    ///
    /// ```
    /// use shoal_core::IndexKind;
    /// assert!(matches!(IndexKind::from_json(r#"{"index": "ivf-rabitq", "partitions": 8}"#), Ok(IndexKind::IvfRabitq(_))));
    /// assert!(IndexKind::from_json(r#"{"index": "hnsw"}"#).is_err());
    /// ```
    pub fn from_json(json: &str) -> Result<IndexKind, Error> {
        // Read through `serde_json::Value` (not derived code: the npm package's size budget).
        let bad = |m: alloc::string::String| Error::InvalidRequest(alloc::format!("seal options: {m}"));
        let v: serde_json::Value = serde_json::from_slice(json.as_bytes()).map_err(|e| bad(alloc::format!("{e}")))?;
        let obj = v.as_object().ok_or_else(|| bad("expected an object".into()))?;
        const KEYS: [&str; 5] = ["index", "partitions", "seed", "bits", "codes_only"];
        if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(bad(alloc::format!(
                "unknown field `{k}`, expected one of `index`, `partitions`, `seed`, `bits`, `codes_only`"
            )));
        }
        let field = |k: &str| obj.get(k).filter(|v| !v.is_null());
        let uint = |k: &str, max: u64| match field(k) {
            None => Ok(None),
            Some(v) => {
                v.as_u64().filter(|&x| x <= max).map(Some).ok_or_else(|| bad(alloc::format!("invalid {k}: {v}")))
            }
        };
        let index = match field("index") {
            None => None,
            Some(v) => Some(v.as_str().ok_or_else(|| bad(alloc::format!("invalid index: {v}")))?),
        };
        let codes_only = match field("codes_only") {
            None => None,
            Some(v) => Some(v.as_bool().ok_or_else(|| bad(alloc::format!("invalid codes_only: {v}")))?),
        };
        let (partitions, seed) = (uint("partitions", u32::MAX.into())?, uint("seed", u64::MAX)?);
        let bits = uint("bits", u8::MAX.into())?;
        let ivf_only = partitions.is_some() || seed.is_some() || bits.is_some() || codes_only.is_some();
        match index {
            None | Some("flat") if !ivf_only => Ok(IndexKind::Flat),
            None | Some("flat") => Err(Error::InvalidRequest(
                "seal options: partitions, seed, bits and codes_only need index \"ivf-rabitq\"".into(),
            )),
            Some("ivf-rabitq") => {
                if bits.is_some_and(|b| !(1..=8).contains(&b)) {
                    return Err(Error::InvalidRequest("seal options: bits must be 1..=8".into()));
                }
                if partitions == Some(0) {
                    return Err(Error::InvalidRequest("seal options: partitions must be at least 1".into()));
                }
                let codes_only = codes_only.unwrap_or(false);
                if codes_only && bits.is_none_or(|b| b < 2) {
                    return Err(Error::InvalidRequest(
                        "seal options: codes_only ranks by the extra bits: it needs bits 2..=8".into(),
                    ));
                }
                let d = IvfParams::default();
                Ok(IndexKind::IvfRabitq(IvfParams {
                    partitions: partitions.map(|p| p as usize),
                    seed: seed.unwrap_or(d.seed),
                    bits: bits.map(|b| b as u32),
                    codes_only,
                }))
            }
            Some(other) => Err(Error::InvalidRequest(alloc::format!(
                "seal options: unknown index \"{other}\" (expected \"flat\" or \"ivf-rabitq\")"
            ))),
        }
    }
}

/// Bytes of a sealed segment file: a memory map natively, an [`AlignedBytes`] in wasm.
///
/// Implementations must return the same 64-byte-aligned slice on every call.
pub trait SegmentBytes: Send + Sync + 'static {
    /// The whole file.
    fn bytes(&self) -> &[u8];

    /// Whether [`prefetch`](Self::prefetch) does anything (bytes read from disk on demand).
    fn prefetches(&self) -> bool {
        false
    }

    /// A hint that `range` (a sub-slice of [`bytes`](Self::bytes)) is about to be read: a
    /// memory-mapped file starts reading it. Never changes what is read.
    fn prefetch(&self, _range: &[u8]) {}
}

impl SegmentBytes for AlignedBytes {
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
}

/// An immutable segment, searched in place over its bytes.
pub struct SealedSegment {
    storage: Box<dyn SegmentBytes>,
    dim: usize,
    metric: Metric,
    rows: usize,
    ids: IdRanges,
    /// `None` in a codes-only segment.
    vectors: Option<Range<usize>>,
    ivf: Option<IvfSections>,
    payload: Option<PayloadRanges>,
    text: Option<TextRanges>,
    /// The sparse vectors, in collection order.
    sparse: alloc::vec::Vec<crate::sparse::SparseRanges>,
    /// The dense vectors, in collection order (one named `""` without header bit 1).
    specs: alloc::vec::Vec<crate::DenseSpec>,
    /// Dense vectors `1..` (header bit 1), in collection order.
    dense: alloc::vec::Vec<crate::dense::DenseRanges>,
}

/// Where the five payload sections (kinds 32–36) lie, and the schema they declare.
struct PayloadRanges {
    schema: Schema,
    sections: [Range<usize>; 5],
}

/// The payload documents of the rows to write, in input row order, with their schema.
#[derive(Clone, Copy, Debug)]
pub struct PayloadInput<'a> {
    /// The fields every document was validated against.
    pub schema: &'a Schema,
    /// One document per row (an object, or `null` for none).
    pub docs: &'a [serde_json::Value],
}

impl core::fmt::Debug for SealedSegment {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SealedSegment")
            .field("dim", &self.dim)
            .field("metric", &self.metric)
            .field("rows", &self.rows)
            .field("bytes", &self.bytes().len())
            .finish()
    }
}

/// Required section kinds of format v1 (the IVF kinds are optional).
const KNOWN_KINDS: [u32; 7] =
    [KIND_META, KIND_IDS, KIND_VECTORS, KIND_ID_INDEX, KIND_UUIDS, KIND_ID_KINDS, KIND_UUID_INDEX];

impl SealedSegment {
    /// Opens a segment with the cheap checks of `docs/format.md` (no full read).
    pub fn open(storage: Box<dyn SegmentBytes>) -> Result<SealedSegment, Error> {
        let bytes = storage.bytes();
        let reader = SegmentReader::open(bytes)?;
        reader.check_known_kinds(&KNOWN_KINDS)?;
        let (dim, metric, rows, codes_only) = read_meta(reader.require(KIND_META)?)?;
        let ids = IdRanges::open(&reader, rows)?;
        let vectors = if !codes_only {
            let vectors = reader.require(KIND_VECTORS)?;
            if Some(cast_records::<f32>("VECTORS", vectors)?.len()) != rows.checked_mul(dim) {
                return Err(bad("VECTORS", "length does not match rows x dim"));
            }
            Some(range_of(bytes, vectors))
        } else if reader.section(KIND_VECTORS).is_some() {
            return Err(bad("VECTORS", "present in a codes-only segment"));
        } else {
            None
        };
        let ivf = IvfSections::open(&reader, (dim, 0), rows)?;
        if vectors.is_none() && ivf.as_ref().is_none_or(|i| i.bits < 2) {
            return Err(bad("META", "a codes-only segment needs an IVF-RaBitQ index with 2 or more bits"));
        }
        let payload = open_payload(&reader, rows)?;
        let text = TextRanges::open(&reader, rows)?;
        let sparse = crate::sparse::SparseRanges::open_all(&reader, rows)?;
        if (reader.header().flags & shoal_format::FLAG_SPARSE != 0) == sparse.is_empty() {
            return Err(bad("SPARSE", "header flag and sections differ"));
        }
        let (name, dense) = if reader.header().flags & shoal_format::FLAG_DENSE_VECTORS != 0 {
            if vectors.is_none() {
                return Err(bad("META", "codes only, several vectors"));
            }
            crate::dense::open_all(&reader, rows)?
        } else if reader.section(shoal_format::dense_kind(0, shoal_format::DENSE_NAME)).is_some()
            || reader.section(shoal_format::dense_kind(1, shoal_format::DENSE_META)).is_some()
        {
            return Err(bad("DENSE_META", "without header bit 1"));
        } else {
            (alloc::string::String::new(), alloc::vec::Vec::new())
        };
        let first = crate::DenseSpec { name, dim, metric };
        let specs = core::iter::once(first).chain(dense.iter().map(|d| d.spec.clone())).collect();
        Ok(SealedSegment { storage, dim, metric, rows, ids, vectors, ivf, payload, text, sparse, specs, dense })
    }

    /// Reads every byte: section checksums, the id index's order and agreement with `IDS`,
    /// and finiteness of every vector element.
    pub fn verify(&self) -> Result<(), Error> {
        SegmentReader::open(self.bytes())?.verify_checksums()?;
        self.ids.verify(self.bytes(), self.rows)?;
        if self.vectors().is_some_and(|v| v.iter().any(|x| !x.is_finite())) {
            return Err(bad("VECTORS", "non-finite element"));
        }
        self.ivf.as_ref().map_or(Ok(()), |ivf| ivf.verify(self.bytes()))?;
        for s in &self.sparse {
            s.view(self.bytes())?.verify()?;
        }
        for d in &self.dense {
            d.verify(self.bytes())?;
        }
        match self.payload() {
            Some(view) => view.verify().map_err(Error::from),
            None => Ok(()),
        }
    }

    /// The segment's dense vectors, in collection order (one named `""` without header bit 1).
    pub fn dense_specs(&self) -> &[crate::DenseSpec] {
        &self.specs
    }

    /// Dense vector `d`'s view (`None`: the segment has no such vector).
    pub(crate) fn space(&self, d: usize) -> Option<crate::dense::Space<'_>> {
        if d == 0 {
            return Some(crate::dense::Space {
                dim: self.dim,
                vectors: self.vectors(),
                ivf: self.ivf(),
                positions: None,
                rows: None,
            });
        }
        self.dense.get(d - 1).map(|r| r.space(self.bytes()))
    }

    /// Whether every dense vector's codes have its dimension's default width
    /// ([`default_bits`](shoal_index::ivf::default_bits); vectors without an index count as such).
    pub(crate) fn default_code_widths(&self) -> bool {
        let default =
            |dim, ivf: &Option<IvfSections>| ivf.as_ref().is_none_or(|i| i.bits == shoal_index::ivf::default_bits(dim));
        default(self.dim, &self.ivf) && self.dense.iter().all(|d| default(d.spec.dim, &d.ivf))
    }

    /// The segment's sparse vectors, in collection order.
    pub fn sparse_specs(&self) -> alloc::vec::Vec<crate::SparseSpec> {
        self.sparse.iter().map(|s| s.spec.clone()).collect()
    }

    /// Sparse vector `t`'s sections (`None`: the segment has no such vector).
    pub(crate) fn sparse(&self, t: usize) -> Option<crate::sparse::SparseView<'_>> {
        // The same bytes passed the same checks in `open`.
        self.sparse.get(t).and_then(|s| s.view(self.bytes()).ok())
    }

    /// The payload schema, if the segment carries payload sections.
    pub fn schema(&self) -> Option<&Schema> {
        self.payload.as_ref().map(|p| &p.schema)
    }

    /// A view of the payload sections (columns, indexes, documents), if the segment has them.
    /// Opening it repeats the cheap checks of [`open`](Self::open) (O(fields)).
    pub fn payload(&self) -> Option<PayloadView<'_>> {
        let p = self.payload.as_ref()?;
        let b = self.bytes();
        let [fields, columns, dicts, postings, docs] = p.sections.clone();
        let sections = PayloadSectionBytes {
            fields: &b[fields],
            columns: &b[columns],
            dicts: &b[dicts],
            postings: &b[postings],
            docs: &b[docs],
        };
        // The same bytes passed the same checks in `open`.
        PayloadView::open(sections).ok()
    }

    /// The full-text index (sections 48–52), if the segment has one: one document per row,
    /// the row's `text` fields joined.
    pub fn text(&self) -> Option<shoal_text::TextIndex<'_>> {
        self.text.as_ref().map(|t| t.index(self.bytes()))
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// The CRC-32C of the section table (from the header): with the file's number, its name
    /// in a segment set.
    pub fn table_crc(&self) -> u32 {
        self.reader().header().table_crc
    }

    /// The container reader over this segment (for inspection tools).
    pub fn reader(&self) -> SegmentReader<'_> {
        SegmentReader::open(self.bytes()).expect("checked at open")
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Metric.
    pub fn metric(&self) -> Metric {
        self.metric
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The external id of `row` (`< rows`).
    pub fn id(&self, row: usize) -> PointId {
        self.ids.id(self.bytes(), row)
    }

    /// Whether some row's id is a UUID (the segment has header flag `FLAG_UUID_IDS`).
    pub fn has_uuids(&self) -> bool {
        self.ids.has_uuids()
    }

    /// All vectors, row-major (`None` in a codes-only segment).
    pub fn vectors(&self) -> Option<&[f32]> {
        self.vectors.as_ref().map(|r| bytemuck::cast_slice(&self.bytes()[r.clone()]))
    }

    /// The vector of `row` (`None` in a codes-only segment).
    pub fn vector(&self, row: usize) -> Option<&[f32]> {
        self.vectors().map(|v| &v[row * self.dim..(row + 1) * self.dim])
    }

    /// Whether the segment keeps only its index codes (no full vectors): searches rank by the
    /// codes' estimates, and the segment cannot be rebuilt.
    pub fn codes_only(&self) -> bool {
        self.vectors.is_none()
    }

    /// The `ID_INDEX` section: the integer ids' `(id, row)`, ascending.
    pub(crate) fn id_index(&self) -> &[IdEntry] {
        self.ids.num_index(self.bytes())
    }

    /// The `UUID_INDEX` section: the UUIDs' `(uuid, row)`, ascending (empty without UUIDs).
    pub(crate) fn uuid_index(&self) -> &[UuidEntry] {
        self.ids.uuid_index(self.bytes())
    }

    /// Whether the storage reads ahead on [`prefetch`](Self::prefetch) (a memory-mapped file).
    pub fn prefetches(&self) -> bool {
        self.storage.prefetches()
    }

    /// Hints that `v` (a slice of this segment's vectors) is about to be read.
    pub fn prefetch(&self, v: &[f32]) {
        self.storage.prefetch(bytemuck::cast_slice(v));
    }

    /// The index this segment carries.
    pub fn index_kind(&self) -> IndexKind {
        match &self.ivf {
            Some(ivf) => IndexKind::IvfRabitq(IvfParams {
                partitions: Some(ivf.index.nlist),
                seed: ivf.seed,
                bits: Some(ivf.bits),
                codes_only: self.codes_only(),
            }),
            None => IndexKind::Flat,
        }
    }

    /// The IVF index, its data and its default query settings, if the segment has one.
    pub fn ivf(&self) -> Option<(&IvfIndex, IvfData<'_>, IvfQuery)> {
        let ivf = self.ivf.as_ref()?;
        Some((&ivf.index, ivf.data(self.bytes(), self.dim, self.vectors()), ivf.defaults))
    }

    /// This segment as a codes-only segment: every section but `VECTORS`, byte for byte (the
    /// index and its calibrated defaults included), with `META` saying codes-only. Its rows are
    /// this segment's rows, so [`vectors`](Self::vectors) is what a host reads lazily for
    /// [`Collection::search_reranked`](crate::Collection::search_reranked). Needs an IVF-RaBitQ
    /// index with 2 or more bits.
    pub fn without_vectors(&self) -> Result<AlignedBytes, Error> {
        if self.ivf.as_ref().is_none_or(|i| i.bits < 2) {
            return Err(Error::InvalidRequest(
                "a codes-only segment needs an IVF-RaBitQ index with 2 or more bits".into(),
            ));
        }
        let reader = self.reader();
        let mut meta: SegmentMeta = *bytemuck::from_bytes(reader.require(KIND_META)?);
        meta.vector_type = VECTOR_TYPE_CODES_ONLY;
        let bytes = self.bytes();
        let mut w = SegmentWriter::new();
        w.set_flags(reader.header().flags);
        for e in reader.sections() {
            match e.kind {
                KIND_VECTORS => {}
                KIND_META => {
                    w.add_section(KIND_META, e.flags, bytemuck::bytes_of(&meta));
                }
                _ => {
                    w.add_section(e.kind, e.flags, &bytes[e.offset as usize..(e.offset + e.length) as usize]);
                }
            }
        }
        Ok(write_aligned(&w))
    }

    /// The row holding external id `id`.
    pub fn row_of(&self, id: PointId) -> Option<usize> {
        self.ids.row_of(self.bytes(), self.rows, id)
    }
}

/// Reads and checks a segment's `META` section: `(dim, metric, rows, codes_only)`.
#[inline(always)]
pub(crate) fn read_meta(meta: &[u8]) -> Result<(usize, Metric, usize, bool), Error> {
    let meta: &SegmentMeta = match cast_records::<SegmentMeta>("META", meta)? {
        [m] => m,
        _ => return Err(bad("META", "must hold exactly one record")),
    };
    if meta.dim == 0 || meta.dim > MAX_DIM {
        return Err(bad("META", "dimension out of range"));
    }
    let metric = Metric::from_code(meta.metric).ok_or(bad("META", "unknown metric"))?;
    if meta.vector_type != VECTOR_TYPE_F32 && meta.vector_type != VECTOR_TYPE_CODES_ONLY {
        return Err(bad("META", "unknown vector type"));
    }
    if meta.reserved.iter().any(|&b| b != 0) {
        return Err(bad("META", "reserved bytes are not zero"));
    }
    let rows = usize::try_from(meta.rows)
        .ok()
        .filter(|&r| r <= u32::MAX as usize)
        .ok_or(bad("META", "row count out of range"))?;
    Ok((meta.dim as usize, metric, rows, meta.vector_type == VECTOR_TYPE_CODES_ONLY))
}

/// The file `w` describes, in a 64-byte-aligned buffer.
fn write_aligned(w: &SegmentWriter<'_>) -> AlignedBytes {
    let mut out = AlignedBytes::zeroed(w.file_len() as usize);
    w.write_into(out.as_mut_slice());
    out
}

/// Opens the payload sections, if any: all five or none, agreeing with the segment's rows.
fn open_payload(reader: &SegmentReader<'_>, rows: usize) -> Result<Option<PayloadRanges>, Error> {
    let kinds = [
        shoal_payload::KIND_PAYLOAD_FIELDS,
        shoal_payload::KIND_PAYLOAD_COLUMNS,
        shoal_payload::KIND_PAYLOAD_DICTS,
        shoal_payload::KIND_PAYLOAD_POSTINGS,
        shoal_payload::KIND_PAYLOAD_DOCS,
    ];
    let found = kinds.map(|k| reader.section(k));
    if found.iter().all(Option::is_none) {
        if reader.header().flags & shoal_format::FLAG_NESTED_PAYLOAD != 0 {
            return Err(bad("PAYLOAD", "nested payloads without payload sections"));
        }
        return Ok(None);
    }
    let [Some(fields), Some(columns), Some(dicts), Some(postings), Some(docs)] = found else {
        return Err(bad("PAYLOAD", "payload sections 32-36 must be present together"));
    };
    let view = PayloadView::open(PayloadSectionBytes { fields, columns, dicts, postings, docs })?;
    if view.rows() as usize != rows {
        return Err(bad("PAYLOAD_DOCS", "payload rows differ from the segment rows"));
    }
    // Nested payloads (header flag bit 3): columns by path (with stray rows), or — as written
    // before paths were columns — documents alone.
    let nested = reader.header().flags & shoal_format::FLAG_NESTED_PAYLOAD != 0;
    let schema = match (nested, view.schema().is_nested()) {
        (true, true) | (false, false) => view.schema().clone(),
        (true, false) if view.schema().is_empty() => Schema::nested::<&str>(&[]).expect("no fields"),
        (true, false) => return Err(bad("PAYLOAD_FIELDS", "flat columns in a segment with nested payloads")),
        (false, true) => return Err(bad("PAYLOAD_COLUMNS", "nested columns without header flag bit 3")),
    };
    let base = reader.bytes();
    Ok(Some(PayloadRanges { schema, sections: [fields, columns, dicts, postings, docs].map(|s| range_of(base, s)) }))
}
