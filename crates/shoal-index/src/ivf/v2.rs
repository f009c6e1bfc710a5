//! The IVF index in format 2, laid out for reading by byte ranges (`docs/format.md`, "IVF +
//! RaBitQ, v2"): the partition order that keeps partitions probed together adjacent, and the
//! layout of one partition's block.

use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use shoal_format::{FormatError, IvfDirEntry, cast_records, crc32c};
use shoal_kernels::Kernels;

use super::codes::CentroidCodes;
use super::sections::{defaults_of, read_meta};
use super::{IvfIndex, IvfQuery, PartitionBytes, block_bytes};
use crate::kmeans::{KMeans, nearest};
use crate::progress::Quiet;
use crate::rabitq::{ExFactors, Factors, ex_code_bytes};
use crate::rotation::{ROUNDS, Rotation};

/// Rows per vector block of a `dim`-dimensional index: one row when a row takes 256 bytes or
/// more, else the rows in 4 KiB.
pub fn vector_block_rows(dim: usize) -> usize {
    if dim >= 64 { 1 } else { (1024 / dim.max(1)).max(1) }
}

/// The groups of partitions for `nlist` partitions: `⌈√nlist⌉`.
pub fn group_count(nlist: usize) -> usize {
    let mut g = 1;
    while g * g < nlist {
        g += 1;
    }
    g
}

/// The format-2 partition order of an index with `centroids` (`nlist x dim`): `order[q]` is
/// the partition that becomes partition `q`. The centroids are clustered into
/// [`group_count`] groups (k-means with `seed`); groups are chained from group 0, each next the
/// unvisited group whose centroid is nearest the current one's (ties by number), and the
/// partitions of each group likewise from its lowest-numbered one.
pub fn partition_order(kernels: &Kernels, centroids: &[f32], dim: usize, seed: u64) -> Vec<u32> {
    let nlist = centroids.len() / dim.max(1);
    let groups = group_count(nlist);
    let means = KMeans::new(groups, seed).train(kernels, &crate::Flat::new(centroids, dim), dim, &Quiet);
    let groups = means.len() / dim;
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); groups];
    let mut dists = vec![0f32; groups.max(nlist)];
    for p in 0..nlist {
        let g = nearest(kernels, &centroids[p * dim..(p + 1) * dim], &means, &mut dists[..groups]);
        members[g].push(p as u32);
    }
    let mut order = Vec::with_capacity(nlist);
    for g in chain(kernels, &means, dim, &(0..groups as u32).collect::<Vec<_>>()) {
        let group = &members[g as usize];
        if group.is_empty() {
            continue;
        }
        let points: Vec<f32> =
            group.iter().flat_map(|&p| centroids[p as usize * dim..(p as usize + 1) * dim].to_vec()).collect();
        let local: Vec<u32> = (0..group.len() as u32).collect();
        order.extend(chain(kernels, &points, dim, &local).into_iter().map(|i| group[i as usize]));
    }
    order
}

/// `ids` (rows of `points`, `dim` floats each) chained from the first: each next the nearest
/// unvisited one (squared l2, ties to the earlier in `ids`).
fn chain(kernels: &Kernels, points: &[f32], dim: usize, ids: &[u32]) -> Vec<u32> {
    let mut left: Vec<u32> = ids.to_vec();
    let mut out = Vec::with_capacity(ids.len());
    let mut dist = [0f32; 1];
    while !left.is_empty() {
        let at = match out.last() {
            None => 0,
            Some(&cur) => {
                let c = &points[cur as usize * dim..(cur as usize + 1) * dim];
                let mut best = (f32::INFINITY, 0);
                for (i, &p) in left.iter().enumerate() {
                    kernels.l2_sq_batch(c, &points[p as usize * dim..(p as usize + 1) * dim], &mut dist);
                    if dist[0].total_cmp(&best.0).is_lt() {
                        best = (dist[0], i);
                    }
                }
                best.1
            }
        };
        out.push(left.remove(at));
    }
    out
}

/// Where a partition block's arrays lie, from the block's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockLayout {
    /// FastScan code blocks.
    pub codes: Range<usize>,
    /// [`Factors`] by row.
    pub factors: Range<usize>,
    /// Extra-bit codes by row (empty for 1-bit codes).
    pub ex_codes: Range<usize>,
    /// [`ExFactors`] by row (empty for 1-bit codes).
    pub ex_factors: Range<usize>,
    /// Ids (u64) by row.
    pub ids: Range<usize>,
    /// CRC-32C (u32) of each vector block (empty without vectors).
    pub vector_crcs: Range<usize>,
}

impl BlockLayout {
    /// The block of a partition of `rows` rows, codes of `bits` per coordinate over `padded`
    /// dimensions, and, with `vector_blocks`, that many vector block CRCs.
    pub fn new(rows: usize, padded: usize, bits: u32, vector_blocks: usize) -> BlockLayout {
        let mut at = 0usize;
        // An array starts at the next multiple of 64; an empty one takes no room (so the block
        // ends at its last array's end).
        let mut next = |len: usize| {
            if len == 0 {
                return at..at;
            }
            let start = at.next_multiple_of(64);
            at = start + len;
            start..at
        };
        let exb = if bits > 1 { ex_code_bytes(padded, bits) } else { 0 };
        let ex = if bits > 1 { core::mem::size_of::<ExFactors>() } else { 0 };
        BlockLayout {
            codes: next(rows.div_ceil(32) * block_bytes(padded)),
            factors: next(rows * core::mem::size_of::<Factors>()),
            ex_codes: next(rows * exb),
            ex_factors: next(rows * ex),
            ids: next(rows * 8),
            vector_crcs: next(vector_blocks * 4),
        }
    }

    /// The block's length: the end of its last array.
    pub fn len(&self) -> usize {
        self.vector_crcs.end.max(self.ids.end)
    }

    /// Whether the block is empty (never: its arrays start at 0 at least).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn bad(section: &'static str, reason: &'static str) -> FormatError {
    FormatError::BadSection { section, reason }
}

/// An index's hot part, checked: what a reader by ranges keeps in memory to search it (a
/// format-2 index's, or a format-1 index's copied out of its sections, without a directory).
#[derive(Clone, Debug)]
pub struct IvfHot {
    /// The index's static part.
    pub index: IvfIndex,
    /// Bits per coordinate of its codes.
    pub bits: u32,
    /// Its calibrated default query settings.
    pub defaults: IvfQuery,
    /// Centroids (`nlist x dim`; empty when coded).
    pub centroids: Vec<f32>,
    /// Rotated centroids (`nlist x padded`; empty when coded), computed from the centroids as
    /// the build computes them.
    pub rot_centroids: Vec<f32>,
    /// The coded centroids, when the centroids are cold (`IVF_CENTROID_CODES`).
    pub codes: Option<CentroidCodes>,
    /// Row offsets and FastScan block offsets (`nlist + 1` each), from the directory.
    pub offsets: Vec<u32>,
    /// FastScan block offsets.
    pub block_offsets: Vec<u32>,
    /// The partitions' directory.
    pub dir: Vec<IvfDirEntry>,
    /// Rows per vector block.
    pub vector_block_rows: usize,
    /// Whether blocks hold vector block CRCs (the segment has `VECTORS`).
    pub with_vectors: bool,
}

/// A format-2 index's hot centroids: `IVF_CENTROIDS`, or, when they are cold,
/// `IVF_CENTROID_CODES`.
#[derive(Clone, Copy, Debug)]
pub enum HotCentroids<'a> {
    /// `IVF_CENTROIDS`' bytes.
    All(&'a [u8]),
    /// `IVF_CENTROID_CODES`' bytes.
    Coded(&'a [u8]),
}

/// The arrays of one partition's block, checked against its CRC.
#[derive(Clone, Copy, Debug)]
pub struct PartitionBlock<'a> {
    /// Codes, factors and extra bits, as a search takes them.
    pub bytes: PartitionBytes<'a>,
    /// Ids (u64 by row).
    pub ids: &'a [u8],
    /// CRC-32C (u32) of each vector block.
    pub vector_crcs: &'a [u8],
}

impl IvfHot {
    /// Opens the hot sections of a format-2 index (`IVF_META`, `RABITQ_ROTATION`, `IVF_DIR`,
    /// and `IVF_CENTROIDS` or `IVF_CENTROID_CODES`) for `rows` vectors of dimension `dim`,
    /// whose `IVF_BLOCKS` holds `blocks_len` bytes: every length and offset checked, so that
    /// every block a search takes lies where the directory says.
    pub fn open(
        [meta, rotation, dir]: [&[u8]; 3],
        centroids: HotCentroids<'_>,
        (dim, rows): (usize, usize),
        blocks_len: u64,
        with_vectors: bool,
    ) -> Result<IvfHot, FormatError> {
        let meta = read_meta(meta, dim, rows, 8)?;
        let (nlist, padded, bits) = (meta.nlist as usize, meta.padded as usize, meta.code_bits);
        let vbr = u32::from_le_bytes(meta.reserved[4..8].try_into().expect("4 bytes")) as usize;
        let groups = u32::from_le_bytes(meta.reserved[0..4].try_into().expect("4 bytes")) as usize;
        if vbr != vector_block_rows(dim) || groups != group_count(nlist) {
            return Err(bad("IVF_META", "groups or vector block rows differ from the format's"));
        }
        let (centroids, codes) = match centroids {
            HotCentroids::All(bytes) => (cast_records::<f32>("IVF_CENTROIDS", bytes)?.to_vec(), None),
            HotCentroids::Coded(bytes) => (Vec::new(), Some(CentroidCodes::open(bytes, nlist, dim)?)),
        };
        if codes.is_none() && Some(centroids.len()) != nlist.checked_mul(dim) {
            return Err(bad("IVF_CENTROIDS", "length does not match nlist x dim"));
        }
        let signs = cast_records::<u64>("RABITQ_ROTATION", rotation)?;
        if signs.len() != ROUNDS * padded / 64 {
            return Err(bad("RABITQ_ROTATION", "length does not match rounds x padded"));
        }
        let dir: Vec<IvfDirEntry> = cast_records::<IvfDirEntry>("IVF_DIR", dir)?.to_vec();
        if dir.len() != nlist {
            return Err(bad("IVF_DIR", "length does not match nlist"));
        }
        let (mut offsets, mut block_offsets) = (vec![0u32; nlist + 1], vec![0u32; nlist + 1]);
        let mut end = 0u64;
        for (p, e) in dir.iter().enumerate() {
            let rows_p = e.rows as usize;
            let layout = BlockLayout::new(rows_p, padded, bits, if with_vectors { rows_p.div_ceil(vbr) } else { 0 });
            if e.first_row != offsets[p]
                || e.offset != end.next_multiple_of(64)
                || e.length as usize != layout.len()
                || offsets[p].checked_add(e.rows).is_none()
            {
                return Err(bad("IVF_DIR", "partitions out of order, or blocks of the wrong length"));
            }
            offsets[p + 1] = offsets[p] + e.rows;
            block_offsets[p + 1] = block_offsets[p] + rows_p.div_ceil(32) as u32;
            end = e.offset + u64::from(e.length);
        }
        if offsets[nlist] as usize != rows || end != blocks_len {
            return Err(bad("IVF_DIR", "partitions do not cover the rows and IVF_BLOCKS"));
        }
        let rotation = Rotation::from_signs(padded, signs.to_vec());
        let rot_centroids = rotation.apply_rows(&centroids, dim);
        Ok(IvfHot {
            index: IvfIndex { nlist, padded, rotation },
            bits,
            defaults: defaults_of(meta),
            centroids,
            rot_centroids,
            codes,
            offsets,
            block_offsets,
            dir,
            vector_block_rows: vbr,
            with_vectors,
        })
    }

    /// Partition `p`'s block (`dir[p].length` bytes at `dir[p].offset` in `IVF_BLOCKS`),
    /// checked against its CRC, as arrays.
    pub fn partition<'a>(&self, p: usize, block: &'a [u8]) -> Result<PartitionBlock<'a>, FormatError> {
        let e = &self.dir[p];
        let actual = crc32c(block);
        if block.len() != e.length as usize || actual != e.crc {
            return Err(FormatError::ChecksumMismatch {
                what: "IVF_BLOCKS",
                kind: shoal_format::KIND_IVF_BLOCKS,
                stored: e.crc,
                actual,
            });
        }
        let rows = e.rows as usize;
        let vblocks = if self.with_vectors { rows.div_ceil(self.vector_block_rows) } else { 0 };
        let l = BlockLayout::new(rows, self.index.padded, self.bits, vblocks);
        Ok(PartitionBlock {
            bytes: PartitionBytes {
                partition: p,
                codes: &block[l.codes],
                factors: &block[l.factors],
                ex_codes: &block[l.ex_codes],
                ex_factors: &block[l.ex_factors],
            },
            ids: &block[l.ids],
            vector_crcs: &block[l.vector_crcs],
        })
    }

    /// The vector block holding `row`: its rows, and its index in its partition's CRCs.
    pub fn vector_block(&self, p: usize, row: usize) -> (Range<usize>, usize) {
        let e = &self.dir[p];
        let (first, end) = (e.first_row as usize, (e.first_row + e.rows) as usize);
        let b = (row - first) / self.vector_block_rows;
        (first + b * self.vector_block_rows..(first + (b + 1) * self.vector_block_rows).min(end), b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_a_permutation_and_keeps_neighbours_close() {
        let dim = 8;
        let mut rng = crate::rng::Rng::new(4);
        let centroids: Vec<f32> = (0..300 * dim).map(|_| (rng.next_u64() % 10_000) as f32 / 1000.0).collect();
        let order = partition_order(&Kernels::scalar(), &centroids, dim, 9);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..300).collect::<Vec<u32>>());
        assert_eq!(order, partition_order(&Kernels::scalar(), &centroids, dim, 9), "deterministic");
        // Chained neighbours are closer than random pairs on average.
        let d = |a: u32, b: u32| -> f32 {
            (0..dim).map(|i| (centroids[a as usize * dim + i] - centroids[b as usize * dim + i]).powi(2)).sum()
        };
        let chained: f32 = order.windows(2).map(|w| d(w[0], w[1])).sum::<f32>() / 299.0;
        let random: f32 = (0..299u32).map(|i| d(i, (i * 7 + 3) % 300)).sum::<f32>() / 299.0;
        assert!(chained < random * 0.6, "chained {chained}, random {random}");
    }

    #[test]
    fn block_arrays_start_aligned_and_follow_each_other() {
        let b = BlockLayout::new(70, 128, 3, 70);
        assert_eq!(b.codes, 0..3 * 512);
        assert_eq!(b.factors.start, 1536);
        assert!(b.ex_codes.start.is_multiple_of(64) && b.ex_codes.len() == 70 * 32);
        assert_eq!(b.ids.len(), 560);
        assert_eq!(b.len(), b.vector_crcs.end);
        let codes_only = BlockLayout::new(5, 64, 1, 0);
        assert_eq!((codes_only.ex_codes.len(), codes_only.vector_crcs.len()), (0, 0));
        assert_eq!(codes_only.len(), codes_only.ids.end, "an empty last array adds no padding");
        assert_eq!(vector_block_rows(128), 1);
        assert_eq!(vector_block_rows(50), 20);
        assert_eq!(group_count(2000), 45);
    }
}
