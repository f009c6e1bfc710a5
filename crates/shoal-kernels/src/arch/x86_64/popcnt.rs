//! Popcount and Hamming distance with the `popcnt` instruction, one 64-bit word at a time.

/// Number of set bits over all words.
///
/// # Safety
///
/// The CPU must support the `popcnt` instruction.
#[target_feature(enable = "popcnt")]
pub unsafe fn popcount(a: &[u64]) -> u32 {
    a.iter().map(|w| w.count_ones()).sum()
}

/// Hamming distance between equal-length bit codes. Panics if the lengths differ.
///
/// # Safety
///
/// The CPU must support the `popcnt` instruction.
#[target_feature(enable = "popcnt")]
pub unsafe fn hamming(a: &[u64], b: &[u64]) -> u32 {
    assert!(a.len() == b.len(), "hamming: length mismatch");
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}
