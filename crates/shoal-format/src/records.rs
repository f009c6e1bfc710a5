//! Fixed-size records of the v1 format. Sizes are checked at compile time.

use bytemuck::{Pod, Zeroable};

/// File magic, the first eight bytes of every segment.
pub const MAGIC: [u8; 8] = *b"SHOALSEG";
/// Newest format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Alignment of the header, the table and every section.
pub const ALIGN: usize = 64;
/// Largest section count a reader accepts.
pub const MAX_SECTIONS: u32 = 1024;
/// Section flag: a reader that does not know the kind skips the section.
pub const SECTION_OPTIONAL: u32 = 1;

/// Section kind: [`SegmentMeta`].
pub const KIND_META: u32 = 1;
/// Section kind: `u64` external ids, one per row.
pub const KIND_IDS: u32 = 2;
/// Section kind: `f32` vectors, row-major.
pub const KIND_VECTORS: u32 = 3;
/// Section kind: [`IdEntry`] records sorted by id (the integer ids' rows only when the
/// segment has [`FLAG_UUID_IDS`]).
pub const KIND_ID_INDEX: u32 = 4;
/// Section kind (with [`FLAG_UUID_IDS`]): `[u8; 16]` per row, the UUID of a UUID row, zeros
/// for an integer row.
pub const KIND_UUIDS: u32 = 5;
/// Section kind (with [`FLAG_UUID_IDS`]): `u64` words, bit `r % 64` of word `r / 64` set when
/// row `r` has a UUID.
pub const KIND_ID_KINDS: u32 = 6;
/// Section kind (with [`FLAG_UUID_IDS`]): [`UuidEntry`] records of the UUID rows, sorted by
/// UUID bytes.
pub const KIND_UUID_INDEX: u32 = 7;

/// Header flag bit 0: some row's id is a UUID (sections [`KIND_UUIDS`], [`KIND_ID_KINDS`],
/// [`KIND_UUID_INDEX`]).
pub const FLAG_UUID_IDS: u32 = 1;
/// Header flag bit 3: payloads are nested (any JSON object, filter keys are paths); the
/// payload sections hold the documents and the declared paths' columns (with stray rows).
pub const FLAG_NESTED_PAYLOAD: u32 = 8;
/// Header flag bit 2: the segment holds sparse vectors (sections [`sparse_kind`]).
pub const FLAG_SPARSE: u32 = 4;
/// Header flag bit 1: the segment holds two or more dense vectors (sections [`dense_kind`]).
pub const FLAG_DENSE_VECTORS: u32 = 2;
/// Every header flag this build reads.
pub const KNOWN_FLAGS: u32 = FLAG_UUID_IDS | FLAG_DENSE_VECTORS | FLAG_SPARSE | FLAG_NESTED_PAYLOAD;

/// Most dense vectors a collection has.
pub const MAX_DENSE_VECTORS: usize = 16;
/// Section `k` of dense vector `d` (`0..MAX_DENSE_VECTORS`): kind `k` for vector 0's
/// `VECTORS` and IVF sections (`k` = 3, 16–25, as v1), else `256 + 32 d + k`.
pub const fn dense_kind(d: usize, k: u32) -> u32 {
    if d == 0 && (k == KIND_VECTORS || (k >= KIND_IVF_META && k <= KIND_RABITQ_EX_FACTORS)) {
        k
    } else {
        256 + 32 * d as u32 + k
    }
}
/// Dense section (vectors 1..): one [`DenseMeta`].
pub const DENSE_META: u32 = 0;
/// Dense section: the vector's name (UTF-8; vector 0's too).
pub const DENSE_NAME: u32 = 1;
/// Dense section (optional): `u32`, the row of each position (`present`).
pub const DENSE_ROWS: u32 = 26;
/// Dense section (optional): `u32`, the position of each row (`rows`).
pub const DENSE_POSITIONS: u32 = 27;

/// Most sparse vectors a collection has.
pub const MAX_SPARSE_VECTORS: usize = 16;
/// Section `r` of sparse vector `t` (`0..MAX_SPARSE_VECTORS`): kind `768 + 16 t + r`.
pub const fn sparse_kind(t: usize, r: u32) -> u32 {
    768 + 16 * t as u32 + r
}
/// Sparse section: one [`SparseMeta`].
pub const SPARSE_META: u32 = 0;
/// Sparse section: the vector's name (UTF-8).
pub const SPARSE_NAME: u32 = 1;
/// Sparse section: `u64` words, bit `r % 64` of word `r / 64` set when row `r` holds the vector.
pub const SPARSE_PRESENT: u32 = 2;
/// Sparse section: [`SparseTerm`]s, by index ascending.
pub const SPARSE_TERMS: u32 = 3;
/// Sparse section: `u32` rows, term by term, rows ascending within a term.
pub const SPARSE_POSTINGS: u32 = 4;
/// Sparse section: `f32` values, one per posting.
pub const SPARSE_VALUES: u32 = 5;
/// Sparse section: `u64`, `rows + 1` offsets into `SPARSE_ROW_ENTRIES`.
pub const SPARSE_ROW_OFFSETS: u32 = 6;
/// Sparse section: [`SparseEntry`]s, row by row, index ascending within a row.
pub const SPARSE_ROW_ENTRIES: u32 = 7;

/// Section kind (optional): [`IvfMeta`].
pub const KIND_IVF_META: u32 = 16;
/// Section kind (optional): `f32` centroids, `nlist * dim`.
pub const KIND_IVF_CENTROIDS: u32 = 17;
/// Section kind (optional): `f32` rotated centroids, `nlist * padded`.
pub const KIND_IVF_ROT_CENTROIDS: u32 = 18;
/// Section kind (optional): `u32` row offsets of the partitions, `nlist + 1`.
pub const KIND_IVF_OFFSETS: u32 = 19;
/// Section kind (optional): `u64` sign words of the rotation, `rounds * padded / 64`.
pub const KIND_RABITQ_ROTATION: u32 = 20;
/// Section kind (optional): `u32` FastScan block offsets of the partitions, `nlist + 1`.
pub const KIND_RABITQ_BLOCK_OFFSETS: u32 = 21;
/// Section kind (optional): FastScan blocks, `padded / 4 * 16` bytes each.
pub const KIND_RABITQ_CODES: u32 = 22;
/// Section kind (optional): per-row RaBitQ factors, 4 `f32` each.
pub const KIND_RABITQ_FACTORS: u32 = 23;
/// Section kind (optional; required when `code_bits > 1`): per-row extra bits of the codes.
pub const KIND_RABITQ_EX_CODES: u32 = 24;
/// Section kind (optional; required when `code_bits > 1`): per-row extra-bit factors, 4 `f32`.
pub const KIND_RABITQ_EX_FACTORS: u32 = 25;
/// Format 2: the IVF partitions' directory ([`IvfDirEntry`] per partition; hot).
pub const KIND_IVF_DIR: u32 = 64;
/// Format 2: the IVF partitions' blocks (codes, factors, extra bits, ids, vector block CRCs).
pub const KIND_IVF_BLOCKS: u32 = 65;

/// The format version laid out for reading by byte ranges (`docs/format.md`, "Segment format
/// version 2").
pub const VERSION_RANGES: u32 = 2;
/// Table flag bit 1 (format 2): the section is *hot*, in the bootstrap region after the table.
pub const SECTION_HOT: u32 = 2;

/// One partition of a format-2 IVF index (`IVF_DIR`, 24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct IvfDirEntry {
    /// Its first row.
    pub first_row: u32,
    /// Its rows.
    pub rows: u32,
    /// Where its block starts, from the start of `IVF_BLOCKS`.
    pub offset: u64,
    /// Its block's length in bytes.
    pub length: u32,
    /// CRC-32C of its block.
    pub crc: u32,
}

/// Human-readable name of a section kind.
pub fn kind_name(kind: u32) -> &'static str {
    match kind {
        KIND_META => "META",
        KIND_IDS => "IDS",
        KIND_VECTORS => "VECTORS",
        KIND_ID_INDEX => "ID_INDEX",
        KIND_UUIDS => "UUIDS",
        KIND_ID_KINDS => "ID_KINDS",
        KIND_UUID_INDEX => "UUID_INDEX",
        KIND_IVF_META => "IVF_META",
        KIND_IVF_CENTROIDS => "IVF_CENTROIDS",
        KIND_IVF_ROT_CENTROIDS => "IVF_ROT_CENTROIDS",
        KIND_IVF_OFFSETS => "IVF_OFFSETS",
        KIND_RABITQ_ROTATION => "RABITQ_ROTATION",
        KIND_RABITQ_BLOCK_OFFSETS => "RABITQ_BLOCK_OFFSETS",
        KIND_RABITQ_CODES => "RABITQ_CODES",
        KIND_RABITQ_FACTORS => "RABITQ_FACTORS",
        KIND_RABITQ_EX_CODES => "RABITQ_EX_CODES",
        KIND_RABITQ_EX_FACTORS => "RABITQ_EX_FACTORS",
        _ => "unknown",
    }
}

/// The `IVF_META` section (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct IvfMeta {
    /// Number of partitions.
    pub nlist: u32,
    /// Padded dimension of the rotation and the codes (multiple of 64).
    pub padded: u32,
    /// Seed of k-means and the rotation (kept so a re-seal builds the same way).
    pub seed: u64,
    /// Rounds of the rotation.
    pub rounds: u32,
    /// Bits per coordinate of the data codes (1 in this version).
    pub code_bits: u32,
    /// Bits per coordinate of the quantized query (4).
    pub query_bits: u32,
    /// Default partitions probed per query.
    pub default_nprobe: u32,
    /// Default candidates re-ranked per result.
    pub default_rerank: u32,
    /// Default adaptive probing ratio on squared centroid distances (0: probe exactly
    /// `default_nprobe` partitions; see `docs/format.md`).
    pub default_probe_ratio: f32,
    /// Zero.
    pub reserved: [u8; 24],
}

/// The 64-byte file header.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// Format version.
    pub version: u32,
    /// Header flags ([`FLAG_UUID_IDS`]; the other bits are reserved).
    pub flags: u32,
    /// Number of section table entries.
    pub section_count: u32,
    /// CRC-32C of the section table.
    pub table_crc: u32,
    /// Total file length.
    pub file_len: u64,
    /// CRC-32C of header bytes 0..32.
    pub header_crc: u32,
    /// Zero.
    pub reserved: [u8; 28],
}

/// One entry of the section table (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SectionEntry {
    /// Section kind.
    pub kind: u32,
    /// Section flags ([`SECTION_OPTIONAL`]).
    pub flags: u32,
    /// Offset from the start of the file (multiple of 64).
    pub offset: u64,
    /// Payload length in bytes.
    pub length: u64,
    /// CRC-32C of the payload.
    pub crc: u32,
    /// Zero.
    pub reserved: u32,
}

/// Metric codes stored in [`SegmentMeta::metric`].
pub mod metric_code {
    /// Squared Euclidean distance (lower is better).
    pub const L2: u32 = 0;
    /// Dot product (higher is better).
    pub const DOT: u32 = 1;
    /// Cosine similarity over vectors normalised at insert (higher is better).
    pub const COSINE: u32 = 2;
}

/// Largest vector dimension a segment may declare.
pub const MAX_DIM: u32 = 65536;

/// `SegmentMeta::vector_type`: full vectors, `f32` x `dim` per row in `VECTORS`.
pub const VECTOR_TYPE_F32: u32 = 0;
/// `SegmentMeta::vector_type`: no `VECTORS` section; the IVF-RaBitQ sections (with at least 2
/// code bits) are required and their extended-bit estimates serve as distances.
pub const VECTOR_TYPE_CODES_ONLY: u32 = 1;

/// The `META` section (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SegmentMeta {
    /// Vector dimension.
    pub dim: u32,
    /// One of [`metric_code`].
    pub metric: u32,
    /// Number of rows (points).
    pub rows: u64,
    /// Element type of `VECTORS`: [`VECTOR_TYPE_F32`], or [`VECTOR_TYPE_CODES_ONLY`] when the
    /// segment has no `VECTORS` section and its IVF-RaBitQ codes stand in for the vectors.
    pub vector_type: u32,
    /// Zero.
    pub reserved: [u8; 44],
}

/// The description of dense vector `d >= 1` (section [`DENSE_META`]); vector 0 is described by
/// [`SegmentMeta`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct DenseMeta {
    /// Dimension, 1..=[`MAX_DIM`].
    pub dim: u32,
    /// Metric code, as [`SegmentMeta::metric`].
    pub metric: u32,
    /// Rows holding this vector: every row in this version.
    pub present: u64,
    /// Zero.
    pub reserved: [u8; 16],
}

/// The `SPARSE_META` record of a sparse vector (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SparseMeta {
    /// Rows of the segment (the header's).
    pub rows: u64,
    /// Rows holding this vector.
    pub present: u64,
    /// (index, value) pairs over all rows.
    pub nnz: u64,
    /// Distinct indices.
    pub terms: u32,
    /// Bit 0: the `idf` modifier; the other bits zero.
    pub flags: u32,
    /// Zero.
    pub reserved: [u8; 32],
}

/// One record of `SPARSE_TERMS` (16 bytes): the rows holding `index` are
/// `SPARSE_POSTINGS[start..start + df]`, their values `SPARSE_VALUES[start..start + df]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct SparseTerm {
    /// The index.
    pub index: u32,
    /// Rows holding it (>= 1).
    pub df: u32,
    /// Its first posting (the sum of the earlier terms' `df`).
    pub start: u64,
}

/// One (index, value) pair of a sparse vector (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct SparseEntry {
    /// The index.
    pub index: u32,
    /// Its value (finite).
    pub value: f32,
}

/// One record of the `ID_INDEX` section (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Pod, Zeroable)]
pub struct IdEntry {
    /// External id.
    pub id: u64,
    /// Row of that id.
    pub row: u32,
    /// Zero.
    pub reserved: u32,
}

/// One record of the `UUID_INDEX` section (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Pod, Zeroable)]
pub struct UuidEntry {
    /// The UUID's bytes.
    pub uuid: [u8; 16],
    /// Row of that id.
    pub row: u32,
    /// Zero.
    pub reserved: u32,
}

const _: () = assert!(core::mem::size_of::<UuidEntry>() == 24);
const _: () = assert!(core::mem::size_of::<SparseMeta>() == 64);
const _: () = assert!(core::mem::size_of::<DenseMeta>() == 32);
const _: () = assert!(core::mem::size_of::<SparseTerm>() == 16);
const _: () = assert!(core::mem::size_of::<SparseEntry>() == 8);
const _: () = assert!(core::mem::size_of::<Header>() == 64);
const _: () = assert!(core::mem::size_of::<SectionEntry>() == 32);
const _: () = assert!(core::mem::size_of::<SegmentMeta>() == 64);
const _: () = assert!(core::mem::size_of::<IdEntry>() == 16);
const _: () = assert!(core::mem::size_of::<IvfMeta>() == 64);
