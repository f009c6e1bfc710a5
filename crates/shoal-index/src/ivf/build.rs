//! Building an IVF + RaBitQ index in two steps, so a host can write the codes straight into
//! their place in a segment file: [`plan`] trains the centroids and sorts the rows by
//! partition (a few bytes per row), [`encode`] writes the codes of every partition into the
//! slices it is given.

use alloc::vec;
use alloc::vec::Vec;

use shoal_kernels::Kernels;

use super::{IvfParams, block_bytes, default_bits, default_partitions};
use crate::Rows;
use crate::kmeans::KMeans;
use crate::progress::Progress;
use crate::rabitq::{self, ExFactors, Factors, MAX_BITS, ex_code_bytes};
use crate::rotation::{Rotation, padded_dim};

/// The static part of a build: partitions, row order and centroids, enough to size and lay
/// out every section before a code is written.
#[derive(Clone, Debug)]
pub struct IvfPlan {
    /// Number of partitions.
    pub nlist: usize,
    /// Padded (rotated) dimension.
    pub padded: usize,
    /// New row `r` is old row `order[r]` (rows sorted by partition, stable).
    pub order: Vec<u32>,
    /// `nlist + 1` row offsets.
    pub offsets: Vec<u32>,
    /// Centroids, `nlist * dim`.
    pub centroids: Vec<f32>,
    /// Rotated centroids, `nlist * padded`.
    pub rot_centroids: Vec<f32>,
    /// The rotation.
    pub rotation: Rotation,
    /// `nlist + 1` FastScan block offsets.
    pub block_offsets: Vec<u32>,
    /// Bits per coordinate.
    pub bits: u32,
}

impl IvfPlan {
    /// Rows indexed.
    pub fn rows(&self) -> usize {
        self.order.len()
    }

    /// Bytes of the FastScan blocks of all partitions.
    pub fn code_bytes(&self) -> usize {
        self.block_offsets[self.nlist] as usize * block_bytes(self.padded)
    }

    /// Bytes of extra bits per row ([`ex_code_bytes`]; 0 for 1-bit codes).
    pub fn ex_bytes_per_row(&self) -> usize {
        ex_code_bytes(self.padded, self.bits)
    }

    /// Rows with extra-bit factors (all of them, or none for 1-bit codes).
    pub fn ex_factor_rows(&self) -> usize {
        if self.bits > 1 { self.rows() } else { 0 }
    }
}

/// Where [`encode`] writes, every slice sized by the plan: FastScan blocks, then per row in
/// the new order its factors, extra bits and extra-bit factors.
pub struct IvfCodes<'a> {
    /// [`IvfPlan::code_bytes`] bytes.
    pub codes: &'a mut [u8],
    /// One per row.
    pub factors: &'a mut [Factors],
    /// [`IvfPlan::ex_bytes_per_row`] per row.
    pub ex_codes: &'a mut [u8],
    /// [`IvfPlan::ex_factor_rows`].
    pub ex_factors: &'a mut [ExFactors],
}

/// Trains the centroids on `data` (`dim` floats per row, already normalised for cosine) — or
/// takes the given ones (`dim` floats each, at least one: how a segment reusing another's
/// centroids would be planned; `params.partitions` is then ignored, the rotation still comes
/// from `params.seed`) — and sorts its rows by partition. Reads the k-means sample once and
/// every row once. Reports "k-means" and "partitioning" (one unit per row).
pub fn plan(
    kernels: &Kernels,
    data: &dyn Rows,
    dim: usize,
    params: IvfParams,
    centroids: Option<Vec<f32>>,
    progress: &dyn Progress,
) -> IvfPlan {
    let n = data.len();
    let centroids = centroids.unwrap_or_else(|| {
        let nlist = params.partitions.unwrap_or_else(|| default_partitions(n)).clamp(1, n.max(1));
        KMeans::new(nlist, params.seed).train(kernels, data, dim, progress)
    });
    debug_assert!(!centroids.is_empty() && centroids.len().is_multiple_of(dim), "whole centroids");
    let nlist = centroids.len() / dim;
    // Assign and sort rows by partition (counting sort: stable, row order within a partition).
    let mut assign = vec![0u32; n];
    progress.phase("partitioning", n as u64);
    crate::kmeans::assign(kernels, data, dim, &centroids, &mut assign, progress);
    let mut offsets = vec![0u32; nlist + 1];
    for &a in &assign {
        offsets[a as usize + 1] += 1;
    }
    for p in 0..nlist {
        offsets[p + 1] += offsets[p];
    }
    let mut next = offsets.clone();
    let mut order = vec![0u32; n];
    for (row, &a) in assign.iter().enumerate() {
        order[next[a as usize] as usize] = row as u32;
        next[a as usize] += 1;
    }
    drop(assign);
    let padded = padded_dim(dim);
    let rotation = Rotation::new(padded, params.seed ^ 0x0005_4a1b_17e0_7a7e);
    // (What `Rotation::apply_rows` does, kept inline here: the call costs the package's main
    // wasm module 38 bytes it does not have.)
    let mut rot_centroids = vec![0f32; nlist * padded];
    for (c, out) in centroids.chunks_exact(dim).zip(rot_centroids.chunks_exact_mut(padded)) {
        rotation.apply(c, out);
    }
    let mut block_offsets = vec![0u32; nlist + 1];
    for p in 0..nlist {
        let size = (offsets[p + 1] - offsets[p]) as usize;
        block_offsets[p + 1] = block_offsets[p] + size.div_ceil(32) as u32;
    }
    IvfPlan {
        nlist,
        padded,
        order,
        offsets,
        centroids,
        rot_centroids,
        rotation,
        block_offsets,
        bits: params.bits.unwrap_or_else(|| default_bits(dim)).clamp(1, MAX_BITS),
    }
}

/// Encodes every row of `data` into `out` as `plan` lays them out: one task per partition,
/// each writing only its own rows' codes and factors (the same bytes with any number of
/// threads). Rows are read in the plan's order, one partition at a time. Panics if a slice of
/// `out` has the wrong length. Reports "encoding", one unit per row.
pub fn encode(kernels: &Kernels, data: &dyn Rows, plan: &IvfPlan, out: IvfCodes<'_>, progress: &dyn Progress) {
    let (n, nlist, padded, bits) = (plan.rows(), plan.nlist, plan.padded, plan.bits);
    let words = padded / 64;
    let bb = block_bytes(padded);
    let exb = plan.ex_bytes_per_row();
    assert!(
        out.codes.len() == plan.code_bytes()
            && out.factors.len() == n
            && out.ex_codes.len() == n * exb
            && out.ex_factors.len() == plan.ex_factor_rows(),
        "code slices sized by the plan"
    );
    struct Part<'a> {
        p: usize,
        codes: &'a mut [u8],
        factors: &'a mut [Factors],
        ex_codes: &'a mut [u8],
        ex_factors: &'a mut [ExFactors],
    }
    let mut parts = Vec::with_capacity(nlist);
    {
        let IvfCodes { codes: mut c, factors: mut f, ex_codes: mut e, ex_factors: mut x } = out;
        for p in 0..nlist {
            let size = (plan.offsets[p + 1] - plan.offsets[p]) as usize;
            let blocks = (plan.block_offsets[p + 1] - plan.block_offsets[p]) as usize;
            let (pc, rc) = core::mem::take(&mut c).split_at_mut(blocks * bb);
            let (pf, rf) = core::mem::take(&mut f).split_at_mut(size);
            let (pe, re) = core::mem::take(&mut e).split_at_mut(size * exb);
            let (px, rx) = core::mem::take(&mut x).split_at_mut(if bits > 1 { size } else { 0 });
            (c, f, e, x) = (rc, rf, re, rx);
            parts.push(Part { p, codes: pc, factors: pf, ex_codes: pe, ex_factors: px });
        }
    }
    progress.phase("encoding", n as u64);
    crate::par::for_each(parts, |part| {
        let Part { p, codes, factors, ex_codes, ex_factors } = part;
        let mut levels = vec![0u8; padded];
        let mut rotated = vec![0f32; padded];
        let mut block_codes = vec![0u64; 32 * words];
        let first = plan.offsets[p] as usize;
        let rows = first..plan.offsets[p + 1] as usize;
        let rc = &plan.rot_centroids[p * padded..(p + 1) * padded];
        for (b, chunk) in rows.clone().step_by(32).enumerate() {
            let end = (chunk + 32).min(rows.end);
            for (j, new_row) in (chunk..end).enumerate() {
                let local = new_row - first;
                plan.rotation.apply(data.row(plan.order[new_row] as usize), &mut rotated);
                for (x, c) in rotated.iter_mut().zip(rc) {
                    *x -= c;
                }
                factors[local] = rabitq::encode(kernels, &rotated, &mut block_codes[j * words..(j + 1) * words]);
                if bits > 1 {
                    let out = &mut ex_codes[local * exb..(local + 1) * exb];
                    ex_factors[local] = rabitq::encode_ex(&rotated, factors[local].norm_sq, bits, &mut levels, out);
                }
            }
            let refs: Vec<&[u64]> = block_codes.chunks_exact(words).take(end - chunk).collect();
            let block = &mut codes[b * bb..(b + 1) * bb];
            rabitq::pack_block(&refs, words, block);
            if bits > 1 {
                for (j, new_row) in (chunk..end).enumerate() {
                    let local = new_row - first;
                    let ex = &ex_codes[local * exb..(local + 1) * exb];
                    ex_factors[local].centroid_dot = rabitq::ex_dot(kernels, block, j, ex, bits, rc, &mut rotated);
                }
            }
        }
        progress.add(rows.len() as u64);
    });
}
