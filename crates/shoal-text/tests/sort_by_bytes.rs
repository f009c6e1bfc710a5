//! `sort_by_bytes` (the merge sort of term and keyword dictionaries) equals the standard
//! library's sort by the same keys, ties kept in input order.

use proptest::prelude::*;

proptest! {
    #[test]
    fn sort_by_bytes_equals_the_standard_stable_sort(
        keys in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..5), 0..200),
        shift in 0usize..200,
    ) {
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        order.rotate_left(shift.min(keys.len()));
        let mut want = order.clone();
        want.sort_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
        shoal_text::sort_by_bytes(&mut order, &|i| &keys[i as usize]);
        prop_assert_eq!(order, want);
    }
}
