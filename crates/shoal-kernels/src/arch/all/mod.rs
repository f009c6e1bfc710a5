//! Portable scalar kernels: the reference every SIMD variant must match bit for bit.
//!
//! # The canonical order
//!
//! A float kernel over `n` elements keeps [`LANES`] = 32 accumulators, all starting at `+0.0`.
//! Element `i` goes to lane `i % 32`: `acc[i % 32] = acc[i % 32] + term(i)` with terms added in
//! ascending `i` (so each lane sees its elements in order). Terms are `a[i] * b[i]` (dot) or
//! `(a[i] - b[i]) * (a[i] - b[i])` (squared L2), each a separately rounded multiply and add —
//! never a fused multiply-add. The 32 lanes are then folded by a fixed tree:
//! `for half in [16, 8, 4, 2, 1] { acc[l] = acc[l] + acc[l + half] for l < half }`, and the
//! result is `acc[0]`.
//!
//! A SIMD variant with `W` lanes per register holds `32 / W` registers (register `k` owns lanes
//! `k*W .. k*W + W`), folds registers pairwise by halves (`r[k] + r[k + R/2]`) down to one, then
//! folds inside the register by the same halving tree: exactly the order above. A partial last
//! chunk is loaded zero-padded: the padded lanes add `+0.0`, which leaves every accumulator
//! unchanged because an accumulator that starts at `+0.0` can never become `-0.0` under
//! round-to-nearest (`x + y == -0.0` needs both `x` and `y` to be `-0.0`).
//!
//! [`LANES`]: crate::LANES

use crate::LANES;

/// Folds the 32 lane accumulators with the canonical halving tree.
#[inline(always)]
pub fn fold_lanes(mut acc: [f32; LANES]) -> f32 {
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            acc[l] += acc[l + half];
        }
        half /= 2;
    }
    acc[0]
}

/// Dot product in the canonical order. Panics if the lengths differ.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert!(a.len() == b.len(), "dot: length mismatch");
    let mut acc = [0.0f32; LANES];
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        acc[i % LANES] += x * y;
    }
    fold_lanes(acc)
}

/// Squared Euclidean distance in the canonical order. Panics if the lengths differ.
pub fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    assert!(a.len() == b.len(), "l2_sq: length mismatch");
    let mut acc = [0.0f32; LANES];
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let d = x - y;
        acc[i % LANES] += d * d;
    }
    fold_lanes(acc)
}

/// `out[r] = dot(query, rows[r * d .. (r + 1) * d])` with `d = query.len()`.
///
/// Panics unless `rows.len() == out.len() * query.len()`.
pub fn dot_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    check_batch(query, rows, out);
    if query.is_empty() {
        out.fill(0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(query.len())) {
        *o = dot(query, row);
    }
}

/// `out[r] = l2_sq(query, rows[r * d .. (r + 1) * d])` with `d = query.len()`.
///
/// Panics unless `rows.len() == out.len() * query.len()`.
pub fn l2_sq_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    check_batch(query, rows, out);
    if query.is_empty() {
        out.fill(0.0);
        return;
    }
    for (o, row) in out.iter_mut().zip(rows.chunks_exact(query.len())) {
        *o = l2_sq(query, row);
    }
}

/// Number of set bits over all words.
pub fn popcount(a: &[u64]) -> u32 {
    a.iter().map(|w| w.count_ones()).sum()
}

/// Hamming distance between two bit codes of equal length. Panics if the lengths differ.
pub fn hamming(a: &[u64], b: &[u64]) -> u32 {
    assert!(a.len() == b.len(), "hamming: length mismatch");
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Shared precondition of the batch kernels.
#[inline]
pub(crate) fn check_batch(query: &[f32], rows: &[f32], out: &[f32]) {
    assert!(
        out.len().checked_mul(query.len()) == Some(rows.len()),
        "batch kernel: rows.len() must equal out.len() * query.len()"
    );
}

/// Vectors per FastScan block.
pub const FASTSCAN_BLOCK: usize = 32;

/// FastScan: sums of 4-bit-indexed lookup-table entries for blocks of 32 codes.
///
/// A code is a sequence of `groups` 4-bit nibbles. `luts` holds one 16-byte table per group
/// (`luts[g * 16 + m]`). `blocks` holds whole blocks of 32 codes, each `groups * 16` bytes, where
/// byte `g * 16 + j` packs nibble `g` of code `j` (low half) and of code `j + 16` (high half).
/// Then `out[b * 32 + j] = sum over g of luts[g * 16 + nibble(b, j, g)]` — an exact integer, so
/// every implementation returns the same values whatever its order.
///
/// Panics unless `luts.len() == groups * 16`, `blocks.len()` is a multiple of `groups * 16` and
/// `out.len() == 32 * blocks.len() / (groups * 16)`.
pub fn fastscan(luts: &[u8], blocks: &[u8], out: &mut [u32]) {
    let groups = check_fastscan(luts, blocks, out);
    if groups == 0 {
        out.fill(0);
        return;
    }
    for (block, out) in blocks.chunks_exact(groups * 16).zip(out.chunks_exact_mut(FASTSCAN_BLOCK)) {
        out.fill(0);
        for (g, bytes) in block.chunks_exact(16).enumerate() {
            let lut = &luts[g * 16..g * 16 + 16];
            for (j, &b) in bytes.iter().enumerate() {
                out[j] += lut[(b & 0x0f) as usize] as u32;
                out[j + 16] += lut[(b >> 4) as usize] as u32;
            }
        }
    }
}

/// Dot product of a vector coded with extended RaBitQ levels and a float query, in the
/// canonical order: `sum over i of x[i] * q[i]` where coordinate `i = 8c + t` is
/// `x[i] = ±(level + 0.5)`, `level` the `width`-bit field `t` (lowest bits first) of the
/// little-endian bytes `levels[c * width .. (c + 1) * width]` and the sign `+` when bit `t` of
/// `signs[c]` is set. The decoded values are exact, so this equals [`dot`] of the decoded
/// vector and `q` bit for bit.
///
/// Panics unless `width` is 1..=7, `q.len() == 8 * signs.len()` and
/// `levels.len() == width * signs.len()`.
pub fn ex_dot(signs: &[u8], levels: &[u8], width: usize, q: &[f32]) -> f32 {
    check_ex_dot(signs, levels, width, q);
    let mask = (1u64 << width) - 1;
    let mut acc = [0.0f32; LANES];
    for (c, ((&s, bytes), q8)) in signs.iter().zip(levels.chunks_exact(width)).zip(q.chunks_exact(8)).enumerate() {
        let mut word = [0u8; 8];
        word[..width].copy_from_slice(bytes);
        let l = u64::from_le_bytes(word);
        for (t, &y) in q8.iter().enumerate() {
            let m = ((l >> (t * width)) & mask) as f32 + 0.5;
            let x = if s >> t & 1 == 1 { m } else { -m };
            acc[(8 * c + t) % LANES] += x * y;
        }
    }
    fold_lanes(acc)
}

/// The 8 bytes of `levels` from `off`, little-endian (the code's own `width` bytes first; what
/// follows them is never used): one load where 8 bytes remain, else one load from `len - 8`
/// shifted down, else (`len < 8`) the bytes one by one with zeros above them. The vector
/// [`ex_dot`] kernels read their codes with it. Meaningful for `off < len`, as `ex_dot`'s
/// steps are; whatever `off`, it never reads outside `levels`.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(always)]
pub(crate) fn ex_word(levels: &[u8], off: usize) -> u64 {
    let len = levels.len();
    if len >= 8 && off <= len - 8 {
        // SAFETY: `off .. off + 8` lies in `levels` (`off + 8 <= len`, without overflow).
        u64::from_le(unsafe { levels.as_ptr().add(off).cast::<u64>().read_unaligned() })
    } else if len >= 8 {
        // SAFETY: `len - 8 .. len` lies in `levels`. (`off > len - 8`: the shift is below 64
        // bits when `off < len`.)
        let tail = u64::from_le(unsafe { levels.as_ptr().add(len - 8).cast::<u64>().read_unaligned() });
        tail >> (8 * (off + 8 - len))
    } else {
        levels[off..].iter().rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b))
    }
}

/// Shared precondition of the [`ex_dot`] kernels.
#[inline]
pub(crate) fn check_ex_dot(signs: &[u8], levels: &[u8], width: usize, q: &[f32]) {
    assert!((1..=7).contains(&width), "ex_dot: width must be 1..=7");
    assert!(
        q.len() == 8 * signs.len() && levels.len() == width * signs.len(),
        "ex_dot: q must hold 8 floats and levels `width` bytes per sign byte"
    );
}

/// Shared precondition of the FastScan kernels; returns the number of groups.
#[inline]
pub(crate) fn check_fastscan(luts: &[u8], blocks: &[u8], out: &[u32]) -> usize {
    assert!(luts.len().is_multiple_of(16), "fastscan: luts must hold whole 16-byte tables");
    let groups = luts.len() / 16;
    let block_bytes = groups * 16;
    let ok = if block_bytes == 0 {
        blocks.is_empty()
    } else {
        blocks.len().is_multiple_of(block_bytes) && out.len() == blocks.len() / block_bytes * FASTSCAN_BLOCK
    };
    assert!(ok, "fastscan: blocks and out must hold whole blocks of 32 codes");
    groups
}

#[cfg(test)]
mod fastscan_tests {
    use super::*;

    #[test]
    fn layout_by_hand() {
        // Two groups; code j has nibbles (j % 16, 15 - j % 16) for j < 16 and (1, 2) above.
        let mut luts = [0u8; 32];
        for m in 0..16 {
            luts[m] = m as u8; // group 0: value = nibble
            luts[16 + m] = 100 + m as u8; // group 1
        }
        let mut block = [0u8; 32];
        for j in 0..16 {
            block[j] = (j as u8) | (1 << 4);
            block[16 + j] = (15 - j as u8) | (2 << 4);
        }
        let mut out = [0u32; 32];
        fastscan(&luts, &block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], j as u32 + 100 + 15 - j as u32);
            assert_eq!(out[16 + j], 1 + 102);
        }
    }
}
