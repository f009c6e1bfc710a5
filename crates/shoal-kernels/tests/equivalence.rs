//! Every variant must return exactly the bits of the scalar reference (`arch::all`).
//!
//! One set of tests is instantiated per variant constructor of the target (`variant_tests!`):
//! SSE2, AVX2 and AVX-512 on x86_64, NEON on aarch64, SIMD128 in a wasm build with it, and the
//! scalar reference everywhere. A variant that the running CPU lacks (AVX2 or AVX-512 on an
//! older x86_64) returns early with a note on stderr — unless `SHOAL_REQUIRE_KERNELS` names it
//! (`make test` names every variant the CPU has), which makes it a failure. `variants_run_here`
//! prints the variants that ran; `available_is_covered` checks that nothing in
//! `Kernels::available()` escapes the instantiated list.
//!
//! The same file runs natively (`cargo test`), under QEMU for aarch64 and, as a
//! `wasm-bindgen-test` suite, in Node and headless Chromium (`wasm-pack test`); the property
//! tests (proptest) and the panic checks (`catch_unwind`) are native only.

mod common;
#[path = "../../shoal-testkit/src/variants.rs"]
mod variants;

#[cfg(not(target_family = "wasm"))]
use std::panic::{AssertUnwindSafe, catch_unwind};

#[cfg(not(target_family = "wasm"))]
use common::SPECIALS;
use common::{Rng, VARIANT_NAMES, same_bits};
#[cfg(not(target_family = "wasm"))]
use proptest::prelude::*;
use shoal_kernels::{Kernels, arch::all};
#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// Dimensions of the batch tests: tails of every kind and the common embedding sizes.
const DIMS: &[usize] = &[0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 50, 63, 64, 65, 128, 384, 768, 1536];
/// Row counts of the batch tests: around the 1, 2 and 4-row blocks of the variants.
const ROWS: &[usize] = &[0, 1, 2, 3, 4, 5, 7, 8, 9, 13];

fn check_pair(k: Kernels, a: &[f32], b: &[f32]) {
    let (got, want) = (k.dot(a, b), all::dot(a, b));
    assert!(
        same_bits(got, want),
        "{}: dot of len {} gave {got:e} ({:#010x}), reference {want:e} ({:#010x})\na={a:?}\nb={b:?}",
        k.name(),
        a.len(),
        got.to_bits(),
        want.to_bits()
    );
    let (got, want) = (k.l2_sq(a, b), all::l2_sq(a, b));
    assert!(
        same_bits(got, want),
        "{}: l2_sq of len {} gave {got:e} ({:#010x}), reference {want:e} ({:#010x})\na={a:?}\nb={b:?}",
        k.name(),
        a.len(),
        got.to_bits(),
        want.to_bits()
    );
}

fn check_batch(k: Kernels, query: &[f32], rows: &[f32], n_rows: usize) {
    let d = query.len();
    type Batch = fn(&Kernels, &[f32], &[f32], &mut [f32]);
    type Pair = fn(&[f32], &[f32]) -> f32;
    let cases: [(&str, Batch, Pair); 2] =
        [("dot_batch", Kernels::dot_batch, all::dot), ("l2_sq_batch", Kernels::l2_sq_batch, all::l2_sq)];
    for (name, batch, pair) in cases {
        // Pre-fill with NaN so that a row the kernel forgets to write is caught.
        let mut out = vec![f32::NAN; n_rows];
        batch(&k, query, rows, &mut out);
        let mut reference = vec![f32::NAN; n_rows];
        if name == "dot_batch" {
            all::dot_batch(query, rows, &mut reference);
        } else {
            all::l2_sq_batch(query, rows, &mut reference);
        }
        for r in 0..n_rows {
            let want = if d == 0 { 0.0 } else { pair(query, &rows[r * d..(r + 1) * d]) };
            assert!(
                same_bits(out[r], want) && same_bits(reference[r], want),
                "{}: {name} d={d} rows={n_rows} row {r}: got {:e} ({:#010x}), reference {:e}, pair {want:e}",
                k.name(),
                out[r],
                out[r].to_bits(),
                reference[r]
            );
        }
    }
}

fn check_bits(k: Kernels, a: &[u64], b: &[u64]) {
    assert_eq!(k.popcount(a), all::popcount(a), "{}: popcount of {} words", k.name(), a.len());
    assert_eq!(k.hamming(a, b), all::hamming(a, b), "{}: hamming of {} words", k.name(), a.len());
}

/// Every length `0..=4099`, random values, and a start offset that varies the alignment.
fn all_lengths(k: Kernels) {
    let mut rng = Rng::new(0x5eed_0001);
    let buf_a = rng.floats(4099 + 8);
    let buf_b = rng.floats(4099 + 8);
    for n in 0..=4099 {
        let off = n % 7;
        check_pair(k, &buf_a[off..off + n], &buf_b[off..off + n]);
    }
}

/// Adversarial values: overflow to infinity (and inf - inf = NaN), subnormals, signed zeros,
/// cancellations, at every length up to 300 and a few long ones.
fn adversarial(k: Kernels) {
    let mut rng = Rng::new(0x5eed_0002);
    for n in (0..=300).chain([511, 1000, 1537, 4099]) {
        for _ in 0..4 {
            let a = rng.adversarial_vec(n);
            let b = rng.adversarial_vec(n);
            check_pair(k, &a, &b);
        }
    }
    // Structured cases: all-huge (overflows to inf), alternating huge (inf - inf = NaN in the
    // fold), tiny subnormal sums, exact cancellations across lanes, all -0.0.
    for n in [1, 31, 32, 33, 64, 100, 1536] {
        let ones = vec![1.0f32; n];
        let huge = vec![1e38f32; n];
        let alt: Vec<f32> = (0..n).map(|i| if i % 2 == 0 { 3e38 } else { -3e38 }).collect();
        let alt_lane: Vec<f32> = (0..n).map(|i| if i < 32 { 3e38 } else { -3e38 }).collect();
        let sub = vec![f32::from_bits(3); n];
        let neg_zero = vec![-0.0f32; n];
        let cancel: Vec<f32> = (0..n).map(|i| [1e20, 1.0, -1e20, -1.0][i % 4]).collect();
        for (a, b) in [
            (&huge, &ones),
            (&huge, &huge),
            (&alt, &ones),
            (&alt, &alt),
            (&alt_lane, &ones),
            (&sub, &ones),
            (&sub, &sub),
            (&neg_zero, &ones),
            (&neg_zero, &neg_zero),
            (&ones, &neg_zero),
            (&cancel, &ones),
            (&cancel, &cancel),
        ] {
            check_pair(k, a, b);
            check_pair(k, b, a);
        }
    }
}

fn batches(k: Kernels) {
    let mut rng = Rng::new(0x5eed_0003);
    for &d in DIMS {
        for &n_rows in ROWS {
            let query = rng.floats(d);
            let rows = rng.floats(d * n_rows);
            check_batch(k, &query, &rows, n_rows);
            let query = rng.adversarial_vec(d);
            let rows = rng.adversarial_vec(d * n_rows);
            check_batch(k, &query, &rows, n_rows);
        }
    }
}

fn bit_kernels(k: Kernels) {
    let mut rng = Rng::new(0x5eed_0004);
    for n in 0..=600 {
        let a: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        let b: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
        check_bits(k, &a, &b);
        // Sparse words and saturated words (every byte count at its maximum).
        let sparse: Vec<u64> = a.iter().zip(&b).map(|(x, y)| x & y & rng.next_u64()).collect();
        check_bits(k, &sparse, &a);
        check_bits(k, &vec![u64::MAX; n], &vec![0; n]);
    }
    // Long all-ones inputs: exercise the periodic widening of narrow (byte/16-bit) counters.
    for n in [4 * 31, 4 * 31 + 1, 4 * 62 + 3, 2 * 2048, 2 * 2048 + 1, 20_000] {
        check_bits(k, &vec![u64::MAX; n], &vec![0; n]);
    }
}

/// FastScan equals the reference for every group count around the u16 flush boundaries (255
/// groups, pairs of groups, or quads of groups: 1,020 for AVX-512BW), odd counts, several
/// blocks, and full-range (0..=255) tables.
fn fastscan_blocks(k: Kernels) {
    let mut rng = Rng::new(0x5eed_0005);
    for groups in
        (0..=40).chain([254, 255, 256, 509, 510, 511, 512, 513, 600, 1019, 1020, 1021, 1023, 1024, 1025, 2041])
    {
        for blocks in [0usize, 1, 3] {
            let luts: Vec<u8> = (0..groups * 16).map(|i| if i % 5 == 0 { 255 } else { rng.next_u64() as u8 }).collect();
            let codes: Vec<u8> = (0..blocks * groups * 16).map(|_| rng.next_u64() as u8).collect();
            let mut want = vec![0u32; blocks * 32];
            let mut got = vec![7u32; blocks * 32];
            all::fastscan(&luts, &codes, &mut want);
            k.fastscan(&luts, &codes, &mut got);
            assert_eq!(got, want, "{}: fastscan differs, groups {groups}, blocks {blocks}", k.name());
            // Saturated: every lookup hits 255, the largest sums.
            let full = vec![255u8; groups * 16];
            all::fastscan(&full, &codes, &mut want);
            k.fastscan(&full, &codes, &mut got);
            assert_eq!(got, want, "{}: saturated fastscan differs, groups {groups}", k.name());
        }
    }
}

/// `ex_dot` equals the reference, and the reference equals `dot` of the decoded vector, for
/// every width, lengths around the 4 accumulator registers, plain and adversarial queries, and
/// codes that end the buffer (the last 8-byte read cannot overrun) or sit inside a larger one.
/// Bad lengths panic natively (wasm builds abort on a panic, which `catch_unwind` cannot observe).
fn ex_dot_codes(k: Kernels) {
    let mut rng = Rng::new(0x5eed_0006);
    for width in 1..=7usize {
        for chunks in [0usize, 1, 2, 3, 4, 5, 7, 8, 9, 16, 33, 128] {
            for adversarial in [false, true] {
                let signs: Vec<u8> = (0..chunks).map(|_| rng.next_u64() as u8).collect();
                let padded: Vec<u8> = (0..chunks * width + 9).map(|_| rng.next_u64() as u8).collect();
                let q = if adversarial { rng.adversarial_vec(8 * chunks) } else { rng.floats(8 * chunks) };
                let mask = (1u64 << width) - 1;
                for levels in [&padded[..chunks * width], &padded[9..]] {
                    let want = all::ex_dot(&signs, levels, width, &q);
                    let got = k.ex_dot(&signs, levels, width, &q);
                    assert!(
                        same_bits(got, want),
                        "{}: ex_dot width {width}, {chunks} chunks: {got} vs {want}",
                        k.name()
                    );
                    let decoded: Vec<f32> = (0..8 * chunks)
                        .map(|i| {
                            let (c, t) = (i / 8, i % 8);
                            let mut word = [0u8; 8];
                            word[..width].copy_from_slice(&levels[c * width..(c + 1) * width]);
                            let m = ((u64::from_le_bytes(word) >> (t * width)) & mask) as f32 + 0.5;
                            if signs[c] >> t & 1 == 1 { m } else { -m }
                        })
                        .collect();
                    let by_dot = all::dot(&decoded, &q);
                    assert!(
                        same_bits(want, by_dot) || (want.is_nan() && by_dot.is_nan()),
                        "width {width}: {want} vs dot {by_dot}"
                    );
                }
            }
        }
    }
    #[cfg(not(target_family = "wasm"))]
    {
        let panics = |f: &dyn Fn()| catch_unwind(AssertUnwindSafe(f)).is_err();
        let q = [1.0f32; 16];
        assert!(panics(&|| {
            k.ex_dot(&[0, 0], &[0; 6], 3, &q[..8]);
        }));
        assert!(panics(&|| {
            k.ex_dot(&[0, 0], &[0; 5], 3, &q);
        }));
        assert!(panics(&|| {
            k.ex_dot(&[0, 0], &[0; 16], 8, &q);
        }));
    }
}

/// Length mismatches panic (no out-of-bounds reads) in every variant. Native only: wasm
/// builds abort on a panic, which `catch_unwind` cannot observe.
#[cfg(not(target_family = "wasm"))]
fn mismatches_panic(k: Kernels) {
    let a = [1.0f32; 40];
    let w = [1u64; 9];
    let mut out = [0.0f32; 3];
    let panics = |f: &dyn Fn()| catch_unwind(AssertUnwindSafe(f)).is_err();
    assert!(panics(&|| {
        k.dot(&a[..33], &a[..34]);
    }));
    assert!(panics(&|| {
        k.l2_sq(&a[..5], &a[..4]);
    }));
    assert!(panics(&|| {
        k.hamming(&w[..9], &w[..8]);
    }));
    assert!(panics(&|| {
        let mut out = out;
        k.dot_batch(&a[..4], &a[..11], &mut out);
    }));
    assert!(panics(&|| {
        let mut out = out;
        k.l2_sq_batch(&a[..4], &a[..16], &mut out);
    }));
    // The right sizes do not panic.
    k.dot_batch(&a[..4], &a[..12], &mut out);
    k.l2_sq_batch(&[], &[], &mut out);
    assert_eq!(out.map(f32::to_bits), [0; 3]);
}

/// NaN inputs give NaN (which NaN, i.e. the payload bits, is not promised: WebAssembly leaves
/// it unspecified and compilers may swap the operands of commutative operations).
fn nan_inputs(k: Kernels) {
    for n in [1, 5, 32, 33, 100] {
        for pos in [0, n / 2, n - 1] {
            let mut a = vec![1.0f32; n];
            a[pos] = f32::NAN;
            let b = vec![2.0f32; n];
            assert!(k.dot(&a, &b).is_nan() && k.l2_sq(&b, &a).is_nan(), "{}", k.name());
            let mut out = vec![0.0; 3];
            k.dot_batch(&b, &[b.clone(), a.clone(), b.clone()].concat(), &mut out);
            assert!(!out[0].is_nan() && out[1].is_nan() && !out[2].is_nan(), "{}", k.name());
        }
    }
}

/// Any non-NaN float: the whole exponent range, subnormals, zeros, infinities, specials.
#[cfg(not(target_family = "wasm"))]
fn any_float() -> impl Strategy<Value = f32> {
    use proptest::num::f32 as f;
    prop_oneof![
        3 => f::POSITIVE | f::NEGATIVE | f::NORMAL | f::SUBNORMAL | f::ZERO | f::INFINITE,
        1 => prop::sample::select(SPECIALS),
    ]
}

/// Pairs of vectors: either of similar-magnitude values (finite sums whose bits depend on the
/// order of the additions) or mostly such values with a few arbitrary ones mixed in.
#[cfg(not(target_family = "wasm"))]
fn float_pairs() -> impl Strategy<Value = Vec<(f32, f32)>> {
    let similar = || -4.0f32..4.0f32;
    let mostly_similar = || prop_oneof![30 => -4.0f32..4.0f32, 1 => any_float()];
    prop_oneof![
        prop::collection::vec((similar(), similar()), 0..700),
        prop::collection::vec((mostly_similar(), mostly_similar()), 0..700),
        prop::collection::vec((any_float(), any_float()), 0..100),
    ]
}

macro_rules! variant_tests {
    ($($variant:ident => $ctor:expr),* $(,)?) => {$(
        mod $variant {
            use super::*;
            #[cfg(target_family = "wasm")]
            use wasm_bindgen_test::wasm_bindgen_test as test;

            fn kernels() -> Option<Kernels> {
                let k: Option<Kernels> = $ctor;
                match k {
                    Some(k) => {
                        assert_eq!(k.name(), stringify!($variant));
                        Some(k)
                    }
                    None => {
                        variants::missing("kernel equivalence", stringify!($variant));
                        eprintln!("variant {} is not available here: skipped", stringify!($variant));
                        None
                    }
                }
            }

            #[test]
            fn every_length_0_to_4099() {
                kernels().map(all_lengths);
            }

            #[test]
            fn adversarial_values() {
                kernels().map(adversarial);
            }

            #[test]
            fn batch_dims_and_rows() {
                kernels().map(batches);
            }

            #[test]
            fn popcount_and_hamming() {
                kernels().map(bit_kernels);
            }

            #[test]
            fn fastscan_equals_reference() {
                kernels().map(fastscan_blocks);
            }

            #[cfg(not(target_family = "wasm"))]
            #[test]
            fn length_mismatch_panics() {
                kernels().map(mismatches_panic);
            }

            #[test]
            fn ex_dot_equals_reference() {
                kernels().map(ex_dot_codes);
            }

            #[test]
            fn nan_in_nan_out() {
                kernels().map(nan_inputs);
            }

            #[cfg(not(target_family = "wasm"))]
            proptest! {
                #![proptest_config(ProptestConfig::with_cases(512))]

                #[test]
                fn prop_pair(v in float_pairs()) {
                    if let Some(k) = kernels() {
                        let (a, b): (Vec<f32>, Vec<f32>) = v.into_iter().unzip();
                        check_pair(k, &a, &b);
                    }
                }

                #[test]
                fn prop_pair_offset(seed in any::<u64>(), n in 0usize..5000, off in 0usize..16) {
                    if let Some(k) = kernels() {
                        let mut rng = Rng::new(seed);
                        let a = rng.floats(n + off);
                        let b = rng.floats(n + off);
                        check_pair(k, &a[off..], &b[off..]);
                    }
                }

                #[test]
                fn prop_batch(
                    d in prop_oneof![0usize..100, prop::sample::select(DIMS)],
                    n_rows in 0usize..12,
                    seed in any::<u64>(),
                    adversarial in any::<bool>(),
                ) {
                    if let Some(k) = kernels() {
                        let mut rng = Rng::new(seed);
                        let mut values = |n: usize| -> Vec<f32> {
                            if adversarial { rng.adversarial_vec(n) } else { rng.floats(n) }
                        };
                        let query = values(d);
                        let rows = values(d * n_rows);
                        check_batch(k, &query, &rows, n_rows);
                    }
                }

                #[test]
                fn prop_bits(v in prop::collection::vec((any::<u64>(), any::<u64>()), 0..700)) {
                    if let Some(k) = kernels() {
                        let (a, b): (Vec<u64>, Vec<u64>) = v.into_iter().unzip();
                        check_bits(k, &a, &b);
                        check_bits(k, &a[a.len() / 3..], &b[b.len() / 3..]);
                    }
                }
            }
        }
    )*};
}

variant_tests! {
    scalar => Some(Kernels::scalar()),
}

#[cfg(target_arch = "x86_64")]
variant_tests! {
    sse2 => Kernels::sse2(),
    avx2 => Kernels::avx2(),
    avx512 => Kernels::avx512(),
}

#[cfg(target_arch = "aarch64")]
variant_tests! {
    neon => Kernels::neon(),
}

#[cfg(all(target_family = "wasm", target_feature = "simd128"))]
variant_tests! {
    simd128 => Kernels::simd128(),
}

/// The variants instantiated above for this target.
const INSTANTIATED: &[&str] = &[
    "scalar",
    #[cfg(target_arch = "x86_64")]
    "sse2",
    #[cfg(target_arch = "x86_64")]
    "avx2",
    #[cfg(target_arch = "x86_64")]
    "avx512",
    #[cfg(target_arch = "aarch64")]
    "neon",
    #[cfg(all(target_family = "wasm", target_feature = "simd128"))]
    "simd128",
];

/// Names the variants whose tests run here (past the output capture, so every log shows
/// them) and fails when a required one is missing.
#[test]
fn variants_run_here() {
    let ran = variants::under_test("kernel equivalence");
    let line = variants::report("kernel equivalence", &ran);
    assert!(ran.iter().all(|k| INSTANTIATED.contains(&k.name())), "{line}: not all instantiated");
    #[cfg(target_family = "wasm")]
    wasm_bindgen_test::console_log!("{line}");
}

/// Every entry of `available()` has one of the names instantiated above (so none escapes the
/// tests), the scalar reference comes first, names are unique, and `best()` is among them.
#[test]
fn available_is_covered() {
    let names: Vec<&str> = Kernels::available().map(|k| k.name()).collect();
    assert_eq!(names[0], "scalar");
    for (i, n) in names.iter().enumerate() {
        assert!(VARIANT_NAMES.contains(n), "untested variant {n}");
        assert!(INSTANTIATED.contains(n), "variant {n} has no tests instantiated for this target");
        assert!(!names[..i].contains(n), "duplicate variant {n}");
        assert_eq!(Kernels::by_name(n).unwrap().name(), *n);
    }
    assert!(names.contains(&Kernels::best().name()));
    eprintln!("available variants: {names:?}, best: {}", Kernels::best().name());
}

/// On x86_64 the detected CPU features decide exactly which variants exist.
#[cfg(target_arch = "x86_64")]
#[test]
fn x86_64_detection() {
    let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt");
    let avx512 = is_x86_feature_detected!("avx512f") && avx2;
    assert!(Kernels::sse2().is_some());
    assert_eq!(Kernels::avx2().is_some(), avx2);
    assert_eq!(Kernels::avx512().is_some(), avx512);
    assert!(Kernels::neon().is_none() && Kernels::simd128().is_none());
    let want = if avx512 {
        "avx512"
    } else if avx2 {
        "avx2"
    } else {
        "sse2"
    };
    assert_eq!(Kernels::best().name(), want);
}

/// The random data is discriminative: an implementation with another order would fail.
#[test]
fn test_data_detects_a_wrong_order() {
    let mut rng = Rng::new(0x5eed_0001);
    let a = rng.floats(4099 + 8);
    let b = rng.floats(4099 + 8);
    let differs = (64..=4099)
        .filter(|&n| {
            let naive: f32 = a[..n].iter().zip(&b[..n]).fold(0.0, |s, (x, y)| s + x * y);
            naive.to_bits() != all::dot(&a[..n], &b[..n]).to_bits()
        })
        .count();
    assert!(differs > 3000, "only {differs} lengths tell the orders apart");
    // The same for the adversarial family, with the dot of 16-lane halves swapped in the fold
    // (a one-step error in the tree).
    let mut rng = Rng::new(0x5eed_0002);
    let mut differs = 0;
    for _ in 0..200 {
        let a = rng.adversarial_vec(100);
        let b = rng.adversarial_vec(100);
        let mut acc = [0.0f32; 32];
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            acc[i % 32] += x * y;
        }
        // Wrong tree: adjacent lanes first.
        let mut n = 32;
        while n > 1 {
            n /= 2;
            for l in 0..n {
                acc[l] = acc[2 * l] + acc[2 * l + 1];
            }
        }
        differs += usize::from(acc[0].to_bits() != all::dot(&a, &b).to_bits());
    }
    assert!(differs > 20, "only {differs} of 200 adversarial cases tell the trees apart");
}
