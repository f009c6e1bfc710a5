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
    assert_eq!(a.len(), b.len(), "dot: length mismatch");
    let mut acc = [0.0f32; LANES];
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        acc[i % LANES] += x * y;
    }
    fold_lanes(acc)
}

/// Squared Euclidean distance in the canonical order. Panics if the lengths differ.
pub fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "l2_sq: length mismatch");
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
    assert_eq!(a.len(), b.len(), "hamming: length mismatch");
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Shared precondition of the batch kernels.
#[inline]
pub(crate) fn check_batch(query: &[f32], rows: &[f32], out: &[f32]) {
    assert_eq!(
        Some(rows.len()),
        out.len().checked_mul(query.len()),
        "batch kernel: rows.len() must equal out.len() * query.len()"
    );
}
