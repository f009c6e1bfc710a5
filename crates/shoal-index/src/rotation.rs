//! A fast random orthogonal rotation: rounds of random sign flips followed by normalised
//! Walsh-Hadamard transforms over the largest power-of-two block at the front and at the back
//! of the (padded) vector. Every step is orthogonal, so the whole is; the two overlapping
//! blocks mix every coordinate with every other within a few rounds. O(D log D) per vector,
//! plain scalar code with a fixed operation order (identical bits on every target).

use alloc::vec::Vec;

use crate::rng::Rng;

/// Rounds of (signs, transforms).
pub const ROUNDS: usize = 4;

/// The rotation of `padded`-dimensional vectors.
#[derive(Clone, Debug, PartialEq)]
pub struct Rotation {
    padded: usize,
    block: usize,
    scale: f32,
    /// `ROUNDS * padded` signs as bits (1 = flip), packed in u64 words per round.
    signs: Vec<u64>,
}

/// Padded dimension for `dim`: the next multiple of 64 (codes are whole u64 words).
pub fn padded_dim(dim: usize) -> usize {
    dim.div_ceil(64).max(1) * 64
}

impl Rotation {
    /// A rotation drawn from `seed`.
    pub fn new(padded: usize, seed: u64) -> Rotation {
        let mut rng = Rng::new(seed);
        let words = padded / 64;
        let signs = (0..ROUNDS * words).map(|_| rng.next_u64()).collect();
        Rotation::from_signs(padded, signs)
    }

    /// A rotation from stored sign words (`ROUNDS * padded / 64` of them).
    pub fn from_signs(padded: usize, signs: Vec<u64>) -> Rotation {
        assert!(padded > 0 && padded.is_multiple_of(64) && signs.len() == ROUNDS * padded / 64);
        let block = 1usize << (usize::BITS - 1 - padded.leading_zeros());
        Rotation { padded, block, scale: 1.0 / libm::sqrtf(block as f32), signs }
    }

    /// Padded dimension.
    pub fn padded(&self) -> usize {
        self.padded
    }

    /// The stored sign words.
    pub fn signs(&self) -> &[u64] {
        &self.signs
    }

    /// Rotates each row of `rows` (`dim` floats each, `dim` at least 1): `padded` floats per
    /// row, as an index keeps its rotated centroids.
    pub fn apply_rows(&self, rows: &[f32], dim: usize) -> Vec<f32> {
        let mut out = alloc::vec![0f32; rows.len() / dim * self.padded];
        for (x, o) in rows.chunks_exact(dim).zip(out.chunks_exact_mut(self.padded)) {
            self.apply(x, o);
        }
        out
    }

    /// Rotates `x` (zero-padded to `padded`) into `out` (`padded` floats).
    pub fn apply(&self, x: &[f32], out: &mut [f32]) {
        assert!(x.len() <= self.padded && out.len() == self.padded);
        out[..x.len()].copy_from_slice(x);
        out[x.len()..].fill(0.0);
        let words = self.padded / 64;
        for round in 0..ROUNDS {
            let signs = &self.signs[round * words..(round + 1) * words];
            for (i, v) in out.iter_mut().enumerate() {
                if signs[i / 64] >> (i % 64) & 1 == 1 {
                    *v = -*v;
                }
            }
            fwht_scaled(&mut out[..self.block], self.scale);
            if self.block != self.padded {
                let start = self.padded - self.block;
                fwht_scaled(&mut out[start..], self.scale);
            }
        }
    }
}

/// In-place Walsh-Hadamard transform of a power-of-two slice, then scaled by `scale`
/// (`1/sqrt(len)` makes it orthonormal).
fn fwht_scaled(v: &mut [f32], scale: f32) {
    let n = v.len();
    let mut h = 1;
    while h < n {
        for i in (0..n).step_by(2 * h) {
            for j in i..i + h {
                let (a, b) = (v[j], v[j + h]);
                v[j] = a + b;
                v[j + h] = a - b;
            }
        }
        h *= 2;
    }
    for x in v.iter_mut() {
        *x *= scale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preserves_norms_and_inner_products() {
        for padded in [64, 128, 192, 384] {
            let r = Rotation::new(padded, 7);
            let mut rng = Rng::new(1);
            let a: Vec<f32> = (0..padded - 3).map(|_| (rng.below(1000) as f32 - 500.0) / 100.0).collect();
            let b: Vec<f32> = (0..padded - 3).map(|_| (rng.below(1000) as f32 - 500.0) / 100.0).collect();
            let (mut ra, mut rb) = (alloc::vec![0.0; padded], alloc::vec![0.0; padded]);
            r.apply(&a, &mut ra);
            r.apply(&b, &mut rb);
            let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (*p as f64) * (*q as f64)).sum::<f64>();
            let rel = |x: f64, y: f64| (x - y).abs() / y.abs().max(1.0);
            assert!(rel(dot(&ra, &ra), dot(&a, &a)) < 1e-4, "norm, padded {padded}");
            assert!(rel(dot(&ra, &rb), dot(&a, &b)) < 1e-3, "inner product, padded {padded}");
        }
    }

    #[test]
    fn spreads_a_basis_vector() {
        // A rotation that mixes well maps e_0 to a vector with no dominant coordinate.
        let r = Rotation::new(384, 3);
        let mut e = alloc::vec![0.0f32; 384];
        e[0] = 1.0;
        let mut out = alloc::vec![0.0; 384];
        r.apply(&e, &mut out);
        let max = out.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        assert!(max < 0.2, "max coordinate {max}");
    }
}
