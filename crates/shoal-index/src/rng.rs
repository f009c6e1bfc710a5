//! The index's own seeded generator: the same numbers on every target, forever (segment bytes
//! depend on it, so it is never swapped for a library whose output may change).

/// SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-shift.
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sequence_is_frozen() {
        // Segment bytes depend on these numbers: they must never change.
        let mut r = super::Rng::new(42);
        assert_eq!(r.next_u64(), 0xbdd7_3226_2feb_6e95);
        assert_eq!(r.below(10), 1);
    }
}
