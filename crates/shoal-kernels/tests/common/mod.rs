//! Helpers shared by the integration tests: a deterministic generator and value families.
#![allow(dead_code)]

/// SplitMix64: small, deterministic, good enough to spread test values.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A finite float with a random sign, a random 23-bit mantissa and an exponent spread over
    /// `2^-12 .. 2^12`: sums of these round differently in different orders.
    pub fn float(&mut self) -> f32 {
        let r = self.next_u64();
        let sign = (r & 1) as u32;
        let exp = 127 - 12 + ((r >> 1) % 25) as u32;
        let mantissa = ((r >> 8) as u32) & 0x7f_ffff;
        f32::from_bits(sign << 31 | exp << 23 | mantissa)
    }

    pub fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.float()).collect()
    }

    /// A float of magnitude in `[0.25, 4)` with a random sign: the terms of similar size whose
    /// sums are the most sensitive to the order of the additions.
    pub fn narrow(&mut self) -> f32 {
        let r = self.next_u64();
        let sign = (r & 1) as u32;
        let exp = 127 - 2 + ((r >> 1) % 4) as u32;
        let mantissa = ((r >> 8) as u32) & 0x7f_ffff;
        f32::from_bits(sign << 31 | exp << 23 | mantissa)
    }

    /// An adversarial vector of length `n`. Per vector, a share of huge values (none, rare
    /// or many) is chosen: vectors without them keep finite sums whose bits depend on the order,
    /// vectors with them overflow to infinity (and to NaN where +inf meets -inf). The rest are
    /// small [`SPECIALS`] (subnormals, signed zeros, ...) and ordinary floats of similar size.
    pub fn adversarial_vec(&mut self, n: usize) -> Vec<f32> {
        let huge_per_1024 = [0, 0, 4, 300][self.below(4)];
        (0..n)
            .map(|_| {
                if self.below(1024) < huge_per_1024 {
                    HUGE[self.below(HUGE.len())]
                } else {
                    match self.below(3) {
                        0 => self.float(),
                        1 => self.narrow(),
                        _ => SMALL_SPECIALS[self.below(SMALL_SPECIALS.len())],
                    }
                }
            })
            .collect()
    }
}

/// Special values whose products and squared differences stay finite.
pub const SMALL_SPECIALS: &[f32] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -3.0,
    1e8,
    -1e8,
    16_777_216.0,
    16_777_215.0,
    1e-20,
    -1e-20,
    1e-38,
    -1e-38,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    f32::from_bits(1),
    f32::from_bits(0x8000_0001),
    f32::from_bits(0x007f_ffff),
    f32::from_bits(0x8040_0000),
    1.0 + f32::EPSILON,
    1.0 - f32::EPSILON / 2.0,
];

/// Values whose products overflow (or are infinite).
pub const HUGE: &[f32] =
    &[1e38, -1e38, 3e38, -3e38, f32::MAX, f32::MIN, 2e19, -2e19, 1e20, -1e20, f32::INFINITY, f32::NEG_INFINITY];

/// Values that stress the order and the edge cases of IEEE arithmetic (no NaN: NaN payloads
/// are not part of the bit-identity promise, see the NaN test).
pub const SPECIALS: &[f32] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -3.0,
    1e38,
    -1e38,
    3e38,
    -3e38,
    f32::MAX,
    f32::MIN,
    2e19,
    -2e19,
    1e20,
    -1e20,
    1e8,
    -1e8,
    16_777_216.0,
    16_777_215.0,
    1e-20,
    -1e-20,
    1e-38,
    -1e-38,
    f32::MIN_POSITIVE,
    -f32::MIN_POSITIVE,
    f32::from_bits(1),
    f32::from_bits(0x8000_0001),
    f32::from_bits(0x007f_ffff),
    f32::from_bits(0x8040_0000),
    1.0 + f32::EPSILON,
    1.0 - f32::EPSILON / 2.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
];

/// The variant names [`shoal_kernels::Kernels::name`] may return.
pub const VARIANT_NAMES: &[&str] = &["scalar", "sse2", "avx2", "avx512", "neon", "simd128"];

/// `true` when both floats have the same bits; prints both on failure via the caller's assert.
pub fn same_bits(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits()
}
