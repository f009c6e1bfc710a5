//! `merge_sort_by_bytes` (the wasm package's sort of term and keyword dictionaries) equals the
//! standard library's stable sort by the same keys, and `sort_by_bytes` (the sort that runs
//! here) the same on distinct keys.

use proptest::prelude::*;

proptest! {
    #[test]
    fn merge_sort_by_bytes_equals_the_standard_stable_sort(
        keys in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..5), 0..200),
        shift in 0usize..200,
    ) {
        let mut order: Vec<u32> = (0..keys.len() as u32).collect();
        order.rotate_left(shift.min(keys.len()));
        let mut want = order.clone();
        want.sort_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
        let mut here = order.clone();
        shoal_text::merge_sort_by_bytes(&mut order, &|i| &keys[i as usize]);
        prop_assert_eq!(&order, &want);
        // Distinct keys (each key with its position appended): one order for both sorts.
        let distinct: Vec<Vec<u8>> =
            keys.iter().enumerate().map(|(i, k)| [&k[..], &(i as u32).to_be_bytes()].concat()).collect();
        let mut merged = here.clone();
        shoal_text::merge_sort_by_bytes(&mut merged, &|i| &distinct[i as usize]);
        shoal_text::sort_by_bytes(&mut here, &|i| &distinct[i as usize]);
        prop_assert_eq!(here, merged);
    }
}
