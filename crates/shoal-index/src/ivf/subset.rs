//! Some partitions of an index, copied out of its segment: what a reader that fetches a
//! segment by byte ranges searches, having fetched only the partitions a query probes.
//!
//! The subset keeps every partition of the index, those it lacks empty, and its rows in the
//! segment's order (partitions ascending). A search over it is the search over the whole index
//! when it covers every partition that search reaches: candidates tie by row, and the subset's
//! positions are ordered as the segment's rows; the ids it reports are segment rows (through
//! [`IvfData::rows`]). Which partitions that is comes from [`IvfIndex::probe_order`]: the first
//! `nprobe`, and more only when they hold fewer than `k` candidates — a search over a subset
//! that lacks them finds fewer than `k`, so a reader knows to fetch the next ones.

use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::{IvfData, Prefetch, block_bytes};
use crate::rabitq::{ExFactors, Factors, ex_code_bytes};

/// The arrays of some partitions, and full vectors for some of their rows.
#[derive(Debug)]
pub struct IvfSubset {
    dim: usize,
    bits: u32,
    offsets: Vec<u32>,
    block_offsets: Vec<u32>,
    codes: Vec<u8>,
    factors: Vec<Factors>,
    ex_codes: Vec<u8>,
    ex_factors: Vec<ExFactors>,
    /// The segment row of each position (ascending).
    rows: Vec<u32>,
    /// Full vectors by position (NaN where not [`set`](Self::set_vector): a search reads an
    /// exact distance of `+inf` there, which only raises its threshold, so — while no exact
    /// distance falls below its lower bound — it reads every vector it would read with them
    /// all set, and perhaps more); empty without.
    vectors: Vec<f32>,
    /// Positions whose vector is set, and positions a search read without it (bitsets).
    have: Vec<u64>,
    missed: Vec<AtomicU64>,
}

/// One partition's bytes as the segment stores them: its FastScan blocks, its rows' factors,
/// extra-bit codes and extra-bit factors (the last two empty for 1-bit codes).
#[derive(Clone, Copy, Debug)]
pub struct PartitionBytes<'a> {
    /// The partition.
    pub partition: usize,
    /// Its FastScan code blocks.
    pub codes: &'a [u8],
    /// Its rows' [`Factors`], as bytes.
    pub factors: &'a [u8],
    /// Its rows' extra-bit codes.
    pub ex_codes: &'a [u8],
    /// Its rows' [`ExFactors`], as bytes.
    pub ex_factors: &'a [u8],
}

/// A partition's bytes are not the length its offsets give: the reader fetched the wrong
/// ranges, or the server answered with other bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrongLength {
    /// The partition.
    pub partition: usize,
}

impl IvfSubset {
    /// The subset of `parts` (ascending by partition, each at most once) of an index of
    /// dimension `dim`, padded dimension `padded` and `bits` per coordinate whose partitions
    /// are the row ranges `offsets` (`nlist + 1` entries), with room for full vectors when
    /// `with_vectors`.
    pub fn new(
        shape: (usize, usize, u32),
        offsets: &[u32],
        parts: &[PartitionBytes<'_>],
        with_vectors: bool,
    ) -> Result<IvfSubset, WrongLength> {
        let all: Vec<u32> = (0..offsets.len() as u32 - 1).collect();
        Self::among(shape, offsets, &all, parts, with_vectors)
    }

    /// [`new`](Self::new) for an index of the partitions `members` alone (ascending: its
    /// partition `i` is the segment's `members[i]`), whose centroids are those of `members`:
    /// `parts` name the segment's partitions, each one of `members`.
    pub fn among(
        (dim, padded, bits): (usize, usize, u32),
        offsets: &[u32],
        members: &[u32],
        parts: &[PartitionBytes<'_>],
        with_vectors: bool,
    ) -> Result<IvfSubset, WrongLength> {
        let nlist = members.len();
        let (bb, exb) = (block_bytes(padded), if bits > 1 { ex_code_bytes(padded, bits) } else { 0 });
        let mut s = IvfSubset {
            dim,
            bits,
            offsets: vec![0; nlist + 1],
            block_offsets: vec![0; nlist + 1],
            codes: Vec::new(),
            factors: Vec::new(),
            ex_codes: Vec::new(),
            ex_factors: Vec::new(),
            rows: Vec::new(),
            vectors: Vec::new(),
            have: Vec::new(),
            missed: Vec::new(),
        };
        let mut next = parts.iter().peekable();
        for (i, &p) in members.iter().enumerate() {
            let p = p as usize;
            let (mut rows, mut blocks) = (0, 0);
            if let Some(part) = next.next_if(|b| b.partition == p) {
                let (r0, r1) = (offsets[p] as usize, offsets[p + 1] as usize);
                let n = r1 - r0;
                let ex_len = if bits > 1 { core::mem::size_of::<ExFactors>() * n } else { 0 };
                if part.codes.len() != n.div_ceil(32) * bb
                    || part.factors.len() != n * core::mem::size_of::<Factors>()
                    || part.ex_codes.len() != n * exb
                    || part.ex_factors.len() != ex_len
                {
                    return Err(WrongLength { partition: p });
                }
                s.codes.extend_from_slice(part.codes);
                s.factors.extend(records::<Factors>(part.factors));
                s.ex_codes.extend_from_slice(part.ex_codes);
                s.ex_factors.extend(records::<ExFactors>(part.ex_factors));
                s.rows.extend(r0 as u32..r1 as u32);
                (rows, blocks) = (n as u32, n.div_ceil(32) as u32);
            }
            s.offsets[i + 1] = s.offsets[i] + rows;
            s.block_offsets[i + 1] = s.block_offsets[i] + blocks;
        }
        if let Some(extra) = next.next() {
            return Err(WrongLength { partition: extra.partition });
        }
        let n = s.rows.len();
        if with_vectors {
            s.vectors = vec![f32::NAN; n * dim];
            s.have = vec![0; n.div_ceil(64)];
            s.missed = (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        }
        Ok(s)
    }

    /// The segment rows the subset holds, ascending.
    pub fn rows(&self) -> &[u32] {
        &self.rows
    }

    /// The position of segment row `row`, if the subset holds it.
    pub fn position(&self, row: u32) -> Option<usize> {
        self.rows.binary_search(&row).ok()
    }

    /// Sets the full vector of position `pos` (the subset was made `with_vectors`).
    pub fn set_vector(&mut self, pos: usize, vector: &[f32]) {
        self.vectors[pos * self.dim..(pos + 1) * self.dim].copy_from_slice(vector);
        self.have[pos / 64] |= 1 << (pos % 64);
    }

    /// The index data over the subset, with the index's `centroids` and `rot_centroids`. With
    /// vectors, `hint` must call [`record`](Self::record) for each vector announced as read now
    /// (every vector a search reads is: that is how a read of a vector not set is noticed).
    pub fn data<'a>(
        &'a self,
        centroids: &'a [f32],
        rot_centroids: &'a [f32],
        hint: Option<Prefetch<'a>>,
    ) -> IvfData<'a> {
        IvfData {
            dim: self.dim,
            centroids,
            rot_centroids,
            offsets: &self.offsets,
            block_offsets: &self.block_offsets,
            codes: &self.codes,
            factors: &self.factors,
            vectors: (!self.vectors.is_empty()).then_some(&self.vectors[..]),
            bits: self.bits,
            ex_codes: &self.ex_codes,
            ex_factors: &self.ex_factors,
            prefetch: hint,
            rows: Some(&self.rows),
        }
    }

    /// Notes that a search over [`data`](Self::data) read `v` (one of the subset's vectors),
    /// if it was not set.
    pub fn record(&self, v: &[f32]) {
        let offset = (v.as_ptr() as usize).wrapping_sub(self.vectors.as_ptr() as usize) / 4;
        let pos = offset / self.dim.max(1);
        if pos < self.rows.len() && self.have[pos / 64] >> (pos % 64) & 1 == 0 {
            self.missed[pos / 64].fetch_or(1 << (pos % 64), Ordering::Relaxed);
        }
    }

    /// The segment rows whose vectors a search read without their being set (ascending), and
    /// forgets them.
    pub fn take_missed(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (w, word) in self.missed.iter().enumerate() {
            let mut bits = word.swap(0, Ordering::Relaxed);
            while bits != 0 {
                out.push(self.rows[w * 64 + bits.trailing_zeros() as usize]);
                bits &= bits - 1;
            }
        }
        out
    }
}

/// The records `bytes` holds (a whole number of them, at any alignment).
fn records<T: bytemuck::Pod>(bytes: &[u8]) -> impl Iterator<Item = T> + '_ {
    bytes.chunks_exact(core::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_of_vectors_not_set_are_named_once_by_their_rows() {
        // Two partitions of 40 and 3 rows (8-d, padded 64: 512-byte blocks), the first taken
        // whole, the second left out; a third of 0 rows.
        let (dim, padded) = (8, 64);
        let offsets = [0u32, 40, 43, 43];
        let codes = vec![0u8; 2 * block_bytes(padded)];
        let factors = vec![0u8; 40 * 16];
        let part = PartitionBytes { partition: 0, codes: &codes, factors: &factors, ex_codes: &[], ex_factors: &[] };
        let mut subset = IvfSubset::new((dim, padded, 1), &offsets, &[part], true).unwrap();
        assert_eq!(subset.rows(), &(0..40).collect::<Vec<u32>>()[..]);
        for pos in (0..40).step_by(3) {
            subset.set_vector(pos, &[1.0; 8]);
        }
        let data = subset.data(&[], &[], None);
        let vectors = data.vectors.unwrap();
        for pos in [0, 1, 2, 5, 39, 1] {
            subset.record(&vectors[pos * dim..(pos + 1) * dim]);
        }
        assert_eq!(subset.take_missed(), [1, 2, 5], "set rows (0, 39) are not missed; each row once");
        assert_eq!(subset.take_missed(), Vec::<u32>::new(), "taken");
        // Bytes of the wrong length for a partition are refused, as is a partition twice.
        let short = PartitionBytes { factors: &factors[..16], ..part };
        assert_eq!(
            IvfSubset::new((dim, padded, 1), &offsets, &[short], true).unwrap_err(),
            WrongLength { partition: 0 }
        );
        assert!(IvfSubset::new((dim, padded, 1), &offsets, &[part, part], true).is_err());
    }
}
