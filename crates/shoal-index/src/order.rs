//! Floats as integer sort keys: `f32_key` maps an `f32` to a `u32` whose integer order is
//! `f32::total_cmp` order, so pairs like `(score, id)` sort as one `u64` — the same order as a
//! comparator, with one small sort routine in place of one per comparator (which matters for
//! the size of the wasm build).

/// The `u32` whose integer order is the `total_cmp` order of `x`.
pub fn f32_key(x: f32) -> u32 {
    let bits = x.to_bits();
    if bits >> 31 == 1 { !bits } else { bits | 1 << 31 }
}

/// The `f32` of an [`f32_key`].
pub fn f32_of(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 { key & !(1 << 31) } else { !key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn keys_order_as_total_cmp_and_round_trip() {
        let mut rng = Rng::new(5);
        let mut xs =
            alloc::vec![0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MIN_POSITIVE];
        xs.extend((0..4000).map(|_| f32::from_bits(rng.next_u64() as u32)));
        for &a in &xs {
            assert_eq!(f32_of(f32_key(a)).to_bits(), a.to_bits());
            for &b in &xs[..64] {
                assert_eq!(f32_key(a).cmp(&f32_key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }
}
