//! RaBitQ codes (Gao & Long, SIGMOD 2024): one sign bit per rotated residual coordinate, four
//! correction factors per vector, a 4-bit quantized query, and distance estimates with an error
//! bound — evaluated with FastScan lookups, so the data-dependent part is an exact integer.
//!
//! Notation: `D` is the padded dimension, `r` a vector's rotated residual to its centroid,
//! `b_i = [r_i > 0]`, `x̄ = (2b - 1)/√D`, `o = r/‖r‖`, `<x̄, o> = Σ|r_i| / (√D ‖r‖)`. For a rotated
//! query (residual) `y` quantized as `y_i ≈ lo + Δ·ȳ_i` with `ȳ_i ∈ 0..=15`:
//! `<x̄, y> ≈ (lo·(2·pop(b) - D) + Δ·(2·S - Σȳ)) / √D` with `S = Σ b_i ȳ_i` (FastScan), and
//! `<o, y> ≈ <x̄, y> / <x̄, o>`, whose error is about normal with standard deviation
//! `‖y‖ · √(1 - <x̄,o>²) / (<x̄,o> · √(D - 1))`; `ε₀` standard deviations make the bound.

use bytemuck::{Pod, Zeroable};
use shoal_kernels::Kernels;

/// Default confidence of the error bound in standard deviations. The paper's 1.9 covers about
/// 94% of estimates; re-ranking uses the bound to skip vectors, so Shoal takes a wider 3.0
/// (about 99.7%) to miss fewer true neighbours.
pub const EPSILON0: f32 = 3.0;
/// Levels of the quantized query: 4 bits, 0..=15, so a FastScan table entry is at most 60.
pub const QUERY_LEVELS: u32 = 15;

/// Per-vector correction factors, stored in row order (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Factors {
    /// `‖r‖²`.
    pub norm_sq: f32,
    /// `2‖r‖² / Σ|r_i|` (= `2‖r‖ / (√D <x̄,o>)`); 0 when `r = 0`.
    pub scale: f32,
    /// `2·pop(b) - D`.
    pub pop_term: f32,
    /// `2‖r‖ √(1 - <x̄,o>²) / (<x̄,o> √(D-1))`: one standard deviation of the L2 estimate's
    /// error per unit of `‖y‖`.
    pub err: f32,
}

/// Encodes a rotated residual (`D` floats): writes its sign bits into `code` (`D / 64` words,
/// bit `i % 64` of word `i / 64`) and returns its factors.
pub fn encode(kernels: &Kernels, r: &[f32], code: &mut [u64]) -> Factors {
    let d = r.len();
    debug_assert_eq!(code.len() * 64, d);
    code.fill(0);
    let mut abs_sum = 0.0f32;
    let mut pop = 0u32;
    for (i, &x) in r.iter().enumerate() {
        if x > 0.0 {
            code[i / 64] |= 1 << (i % 64);
            pop += 1;
        }
        abs_sum += libm::fabsf(x);
    }
    let norm_sq = kernels.dot(r, r);
    let pop_term = (2 * pop) as f32 - d as f32;
    if !(norm_sq > 0.0 && abs_sum > 0.0) {
        // The vector is its centroid: the estimate `‖r‖² + ‖y‖² - 0` is exact.
        return Factors { norm_sq: 0.0, scale: 0.0, pop_term, err: 0.0 };
    }
    let norm = libm::sqrtf(norm_sq);
    let sqrt_d = libm::sqrtf(d as f32);
    let ip = (abs_sum / (sqrt_d * norm)).min(1.0);
    let spread = libm::sqrtf((1.0 - ip * ip).max(0.0));
    let err = 2.0 * norm * spread / (ip * libm::sqrtf((d as f32 - 1.0).max(1.0)));
    Factors { norm_sq, scale: 2.0 * norm_sq / abs_sum, pop_term, err }
}

/// Nibble `g` of a code: bits `4g .. 4g + 4`.
#[inline]
pub fn nibble(code: &[u64], g: usize) -> u8 {
    ((code[g / 16] >> ((g % 16) * 4)) & 0xf) as u8
}

/// Writes the codes of up to 32 vectors into one FastScan block (`D / 4 * 16` bytes; see
/// `shoal_kernels::arch::all::fastscan`); missing vectors get all-zero codes.
pub fn pack_block(codes: &[&[u64]], words: usize, block: &mut [u8]) {
    let groups = words * 16;
    debug_assert_eq!(block.len(), groups * 16);
    debug_assert!(codes.len() <= 32);
    block.fill(0);
    for (j, code) in codes.iter().enumerate() {
        for g in 0..groups {
            let n = nibble(code, g);
            let byte = &mut block[g * 16 + j % 16];
            *byte |= if j < 16 { n } else { n << 4 };
        }
    }
}

/// A quantized query: the FastScan tables and the terms that turn a lookup sum into an estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryTerms {
    /// Smallest coordinate of `y`.
    pub lo: f32,
    /// Quantization step.
    pub delta: f32,
    /// `Σ ȳ_i`.
    pub sum_levels: f32,
    /// `‖y‖²`.
    pub norm_sq: f32,
    /// `‖y‖` times the bound's confidence `ε₀`.
    pub err_scale: f32,
}

/// Quantizes the rotated query (residual) `y` to 4 bits per coordinate (round to nearest) and
/// fills the FastScan tables `luts` (`D / 4 * 16` bytes); `levels` is scratch of `D` bytes.
/// `epsilon` is the bound's confidence in standard deviations ([`EPSILON0`] by default).
pub fn quantize_query(kernels: &Kernels, y: &[f32], epsilon: f32, levels: &mut [u8], luts: &mut [u8]) -> QueryTerms {
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &x in y {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    let mut delta = (hi - lo) / QUERY_LEVELS as f32;
    if delta.is_nan() || delta <= 0.0 {
        delta = 1.0;
    }
    let mut sum = 0u32;
    for (l, &x) in levels.iter_mut().zip(y) {
        let q = libm::floorf((x - lo) / delta + 0.5).clamp(0.0, QUERY_LEVELS as f32) as u8;
        *l = q;
        sum += q as u32;
    }
    for (g, lut) in luts.chunks_exact_mut(16).enumerate() {
        let v = &levels[g * 4..g * 4 + 4];
        for (m, e) in lut.iter_mut().enumerate() {
            *e = (0..4).filter(|t| m >> t & 1 == 1).map(|t| v[t]).sum();
        }
    }
    let norm_sq = kernels.dot(y, y);
    QueryTerms { lo, delta, sum_levels: sum as f32, norm_sq, err_scale: epsilon * libm::sqrtf(norm_sq) }
}

impl QueryTerms {
    /// `‖r‖ · <o, y>` estimated, times 2: `scale · (lo·pop_term + Δ·(2S - Σȳ))`.
    #[inline]
    pub fn twice_ip(&self, f: &Factors, s: u32) -> f32 {
        // `s` is at most 60 per group, far below 2^24: through i32 the conversion is exact and
        // the same value, and it vectorises on targets without an unsigned conversion (SSE2).
        f.scale * (self.lo * f.pop_term + self.delta * (2.0 * s as i32 as f32 - self.sum_levels))
    }

    /// Estimated squared distance `‖r - y‖²` and its error bound.
    #[inline]
    pub fn l2(&self, f: &Factors, s: u32) -> (f32, f32) {
        (self.l2_key(f, s), self.l2_err(f))
    }

    /// The estimate of [`QueryTerms::l2`] alone.
    #[inline]
    pub fn l2_key(&self, f: &Factors, s: u32) -> f32 {
        f.norm_sq + self.norm_sq - self.twice_ip(f, s)
    }

    /// The error bound of [`QueryTerms::l2`] alone.
    #[inline]
    pub fn l2_err(&self, f: &Factors) -> f32 {
        f.err * self.err_scale
    }

    /// Estimated `<r, y>` and its error bound.
    #[inline]
    pub fn ip(&self, f: &Factors, s: u32) -> (f32, f32) {
        (0.5 * self.twice_ip(f, s), self.ip_err(f))
    }

    /// The error bound of [`QueryTerms::ip`] alone.
    #[inline]
    pub fn ip_err(&self, f: &Factors) -> f32 {
        0.5 * f.err * self.err_scale
    }
}

/// Most bits per coordinate of a code (1 sign bit + up to 7 extra bits).
pub const MAX_BITS: u32 = 8;

/// Per-vector factors of the extra-bit code (16 bytes), stored in row order.
///
/// With `x̄_i = ±(m_i + 1/2)` (sign of `r_i`, magnitude level `m_i` from the extra bits),
/// `<r, y> ≈ scale · <x̄, y>` with one standard deviation of error `err · ‖y‖`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ExFactors {
    /// `‖r‖² / <x̄, r>`; 0 when `r = 0`.
    pub scale: f32,
    /// `‖r‖ √(1 - cos²) / (cos √(D-1))` with `cos = <x̄, r> / (‖x̄‖ ‖r‖)`.
    pub err: f32,
    /// `<x̄, c>` with the row's rotated centroid `c`, so that an `l2` search gets
    /// `<x̄, q - c>` from the one query-wide product `<x̄, q>`.
    pub centroid_dot: f32,
    /// Zero.
    pub reserved: f32,
}

/// Bytes of one row's extra bits: `(bits - 1)` per padded coordinate.
pub fn ex_code_bytes(padded: usize, bits: u32) -> usize {
    padded * (bits.saturating_sub(1)) as usize / 8
}

/// Encodes the extra bits (extended RaBitQ, Gao et al. 2025) of a rotated residual `r` of
/// `norm_sq = ‖r‖²`: magnitude levels `m_i ∈ 0..2^(bits-1)` from `floor(t |r_i|)`, with the
/// scale `t` that maximises the cosine between `x̄` and `r` among 49 candidates (a coarse grid,
/// then a finer one around its best), written `bits - 1` bits per coordinate, least
/// significant first, into `out` ([`ex_code_bytes`] bytes). `levels` is scratch of `D` bytes.
/// Plain f32 arithmetic in a fixed order: the same bits on every target.
pub fn encode_ex(r: &[f32], norm_sq: f32, bits: u32, levels: &mut [u8], out: &mut [u8]) -> ExFactors {
    debug_assert!((2..=MAX_BITS).contains(&bits));
    let d = r.len();
    let top = ((1u32 << (bits - 1)) - 1) as f32;
    let amax = r.iter().fold(0f32, |m, &x| m.max(libm::fabsf(x)));
    out.fill(0);
    if !(amax > 0.0 && norm_sq > 0.0) {
        levels.fill(0);
        return ExFactors::default();
    }
    // cos² up to the constant ‖r‖²: <x̄, |r|>² / ‖x̄‖².
    let score = |t: f32, levels: &mut [u8]| -> (f32, f32) {
        let (mut ip, mut nn) = (0f32, 0f32);
        for (l, &x) in levels.iter_mut().zip(r) {
            let a = libm::fabsf(x);
            let m = libm::floorf(t * a).min(top);
            *l = m as u8;
            let v = m + 0.5;
            ip += v * a;
            nn += v * v;
        }
        (ip, nn)
    };
    let unit = (top + 1.0) / amax;
    let better = |(ip, nn): (f32, f32), (bip, bnn): (f32, f32)| ip * ip * bnn > bip * bip * nn;
    let (mut best_s, mut best) = (0f32, (0f32, 1f32));
    for j in 1..=32 {
        let s = j as f32 / 16.0;
        let v = score(s * unit, levels);
        if better(v, best) {
            (best_s, best) = (s, v);
        }
    }
    let coarse = best_s;
    for f in 0..=16 {
        let s = coarse - 1.0 / 16.0 + f as f32 / 128.0;
        if s <= 0.0 {
            continue;
        }
        let v = score(s * unit, levels);
        if better(v, best) {
            (best_s, best) = (s, v);
        }
    }
    let (ip, nn) = score(best_s * unit, levels);
    // Pack `bits - 1` bits per level.
    let width = bits - 1;
    let (mut acc, mut filled, mut at) = (0u64, 0u32, 0usize);
    for &l in levels.iter() {
        acc |= (l as u64) << filled;
        filled += width;
        while filled >= 8 {
            out[at] = acc as u8;
            at += 1;
            acc >>= 8;
            filled -= 8;
        }
    }
    let norm = libm::sqrtf(norm_sq);
    let cos = (ip / (libm::sqrtf(nn) * norm)).min(1.0);
    let spread = libm::sqrtf((1.0 - cos * cos).max(0.0));
    ExFactors {
        scale: norm_sq / ip,
        err: norm * spread / (cos * libm::sqrtf((d as f32 - 1.0).max(1.0))),
        centroid_dot: 0.0,
        reserved: 0.0,
    }
}

/// The signs of coordinates `8c .. 8c + 8` of vector `j` of a FastScan block, bit `t` set when
/// coordinate `8c + t` is positive (two nibbles of the block's 1-bit codes).
#[inline(always)]
fn sign_byte(block: &[u8], j: usize, c: usize) -> u8 {
    let shift = if j < 16 { 0 } else { 4 };
    ((block[2 * c * 16 + j % 16] >> shift) & 0xf) | (((block[(2 * c + 1) * 16 + j % 16] >> shift) & 0xf) << 4)
}

/// `<x̄, q>` for the extended code `ex` (`bits - 1` extra bits) of vector `j` of a FastScan
/// block, by one fused kernel ([`Kernels::ex_dot`]: the same bits as [`decode_ex`] then `dot`).
/// `buf` is scratch of `q.len()` floats.
pub fn ex_dot(kernels: &Kernels, block: &[u8], j: usize, ex: &[u8], bits: u32, q: &[f32], buf: &mut [f32]) -> f32 {
    // The sign bytes (one per 8 coordinates) in the scratch's first bytes.
    let signs = &mut bytemuck::cast_slice_mut::<f32, u8>(buf)[..q.len() / 8];
    for (c, s) in signs.iter_mut().enumerate() {
        *s = sign_byte(block, j, c);
    }
    kernels.ex_dot(signs, ex, (bits - 1) as usize, q)
}

/// Reconstructs `x̄` of code `j` (0..32) of a FastScan `block` (its signs) and its extra bits
/// `ex` into `out` (`D` floats, each `±(m_i + 1/2)`; `D` a multiple of 8).
pub fn decode_ex(block: &[u8], j: usize, ex: &[u8], bits: u32, out: &mut [f32]) {
    let width = (bits - 1) as usize;
    let mask = (1u64 << width) - 1;
    // Eight coordinates take exactly `width` bytes, and two sign nibbles.
    for (c, (eight, bytes)) in out.chunks_exact_mut(8).zip(ex.chunks_exact(width)).enumerate() {
        let mut word = [0u8; 8];
        word[..width].copy_from_slice(bytes);
        let levels = u64::from_le_bytes(word);
        let signs = sign_byte(block, j, c);
        for (t, o) in eight.iter_mut().enumerate() {
            let m = ((levels >> (t * width)) & mask) as u32 as f32 + 0.5;
            // A clear sign bit negates: the sign bit of the float set, branch-free.
            *o = f32::from_bits(m.to_bits() | (u32::from(!signs >> t & 1) << 31));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use alloc::vec;
    use alloc::vec::Vec;

    fn gauss(rng: &mut Rng) -> f32 {
        // Sum of uniforms: close enough to Gaussian for these tests.
        (0..6).map(|_| rng.below(1 << 20) as f32 / (1 << 20) as f32).sum::<f32>() - 3.0
    }

    #[test]
    fn estimates_are_within_their_bounds() {
        let k = Kernels::best();
        let d = 128;
        let total = 2000;
        // (confidence, share of estimates that must fall within it): normal tails of 1.9 and
        // 3 standard deviations, less a margin for the query's 4-bit quantization.
        for (epsilon, share) in [(1.9f32, 0.90), (EPSILON0, 0.99)] {
            let mut rng = Rng::new(11);
            let mut within = 0;
            for _ in 0..total {
                let r: Vec<f32> = (0..d).map(|_| gauss(&mut rng)).collect();
                let y: Vec<f32> = (0..d).map(|_| gauss(&mut rng)).collect();
                let mut code = vec![0u64; d / 64];
                let f = encode(&k, &r, &mut code);
                let mut levels = vec![0u8; d];
                let mut luts = vec![0u8; d / 4 * 16];
                let t = quantize_query(&k, &y, epsilon, &mut levels, &mut luts);
                let s: u32 = (0..d / 4).map(|g| luts[g * 16 + nibble(&code, g) as usize] as u32).sum();
                let exact: f32 = r.iter().zip(&y).map(|(a, b)| (a - b) * (a - b)).sum();
                let (est, err) = t.l2(&f, s);
                if (est - exact).abs() <= err {
                    within += 1;
                }
            }
            assert!(within as f64 >= share * total as f64, "ε {epsilon}: {within} of {total} within the bound");
        }
    }

    #[test]
    fn block_packing_matches_nibbles() {
        let words = 2;
        let mut rng = Rng::new(3);
        let codes: Vec<Vec<u64>> = (0..20).map(|_| (0..words).map(|_| rng.next_u64()).collect()).collect();
        let refs: Vec<&[u64]> = codes.iter().map(|c| c.as_slice()).collect();
        let mut block = vec![0u8; words * 16 * 16];
        pack_block(&refs, words, &mut block);
        // A table that returns the nibble itself for group 3 and 0 elsewhere.
        let mut luts = vec![0u8; words * 16 * 16];
        for m in 0..16 {
            luts[3 * 16 + m] = m as u8;
        }
        let mut out = vec![0u32; 32];
        shoal_kernels::arch::all::fastscan(&luts, &block, &mut out);
        for j in 0..32 {
            let want = if j < 20 { nibble(&codes[j], 3) as u32 } else { 0 };
            assert_eq!(out[j], want, "code {j}");
        }
    }

    #[test]
    fn extra_bits_tighten_estimates_and_round_trip() {
        let k = Kernels::scalar();
        let d = 128;
        let mut rng = Rng::new(5);
        let mut prev_err = f64::INFINITY;
        for bits in 2..=MAX_BITS {
            let mut total_err = 0f64;
            for t in 0..200 {
                let r: Vec<f32> = (0..d).map(|_| gauss(&mut rng)).collect();
                let y: Vec<f32> = (0..d).map(|_| gauss(&mut rng)).collect();
                let norm_sq = k.dot(&r, &r);
                let mut code = vec![0u64; d / 64];
                encode(&k, &r, &mut code);
                // At every place of a block, among other codes (all signs set).
                let (j, others) = (t % 32, vec![u64::MAX; d / 64]);
                let refs: Vec<&[u64]> = (0..32).map(|i| if i == j { &code[..] } else { &others[..] }).collect();
                let mut block = vec![0u8; d / 4 * 16];
                pack_block(&refs, d / 64, &mut block);
                let mut levels = vec![0u8; d];
                let mut ex = vec![0u8; ex_code_bytes(d, bits)];
                let f = encode_ex(&r, norm_sq, bits, &mut levels, &mut ex);
                let mut xbar = vec![0f32; d];
                decode_ex(&block, j, &ex, bits, &mut xbar);
                for i in 0..d {
                    // The signs and levels survive packing.
                    assert_eq!(xbar[i] > 0.0, r[i] > 0.0, "bits {bits} coordinate {i}");
                    assert_eq!(xbar[i].abs(), levels[i] as f32 + 0.5, "bits {bits} coordinate {i}");
                }
                // The search's `ex_dot` (a fused kernel) is `dot` of the decoded code,
                // bit for bit, with every kernel variant.
                let mut buf = vec![0f32; d];
                for v in Kernels::available() {
                    let (fused, by_dot) = (ex_dot(&v, &block, j, &ex, bits, &y, &mut buf), v.dot(&xbar, &y));
                    assert_eq!(fused.to_bits(), by_dot.to_bits(), "{} bits {bits}", v.name());
                }
                let exact = k.dot(&r, &y);
                let est = f.scale * k.dot(&xbar, &y);
                let sd = f.err * k.dot(&y, &y).sqrt();
                assert!((est - exact).abs() <= 5.0 * sd + 1e-3, "bits {bits}: {est} vs {exact} (sd {sd})");
                total_err += ((est - exact) as f64).abs();
            }
            // Every extra bit makes the estimates tighter.
            assert!(total_err < prev_err, "bits {bits}: mean error {total_err} not below {prev_err}");
            prev_err = total_err;
        }
    }
}
