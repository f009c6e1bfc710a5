//! Unit tests of the canonical accumulation order itself: hand-computed examples whose bits
//! differ under any other order (sequential sum, 16 or 64 lanes, another folding tree, fused
//! multiply-add), checked against the reference and every available variant (a variant named
//! by `SHOAL_REQUIRE_KERNELS` must be among them). Runs natively and as a wasm-bindgen-test
//! suite (Node, headless Chromium).

// Some assertions spell out IEEE facts (`1e8 + 1.0 == 1e8` in f32), which clippy on wasm32 sees
// as comparing a value with itself.
#![allow(clippy::eq_op)]

mod common;
#[path = "../../shoal-testkit/src/variants.rs"]
#[allow(dead_code)]
mod variants;

use common::Rng;
use shoal_kernels::{LANES, arch::all};
#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// The canonical order written from its specification, independently of `arch::all`: lane
/// sums by chunks of 32, then a recursive fold of the lane array by halves.
fn spec_model(terms: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 32];
    for chunk in terms.chunks(32) {
        for (lane, t) in lanes.iter_mut().zip(chunk) {
            *lane += *t;
        }
    }
    fn fold(v: &mut [f32]) -> f32 {
        if v.len() == 1 {
            return v[0];
        }
        let (lo, hi) = v.split_at_mut(v.len() / 2);
        for (l, h) in lo.iter_mut().zip(hi.iter()) {
            *l += *h;
        }
        fold(lo)
    }
    fold(&mut lanes)
}

/// Other plausible orders, each of which some example below tells apart.
fn sequential(terms: &[f32]) -> f32 {
    terms.iter().fold(0.0, |s, t| s + t)
}

fn lanes_then_halving(terms: &[f32], lanes: usize) -> f32 {
    let mut acc = vec![0.0f32; lanes];
    for (i, t) in terms.iter().enumerate() {
        acc[i % lanes] += t;
    }
    let mut half = lanes / 2;
    while half > 0 {
        for l in 0..half {
            acc[l] += acc[l + half];
        }
        half /= 2;
    }
    acc[0]
}

fn lanes_then_sequential(terms: &[f32], lanes: usize) -> f32 {
    let mut acc = vec![0.0f32; lanes];
    for (i, t) in terms.iter().enumerate() {
        acc[i % lanes] += t;
    }
    sequential(&acc)
}

fn lanes_then_adjacent_pairs(terms: &[f32]) -> f32 {
    let mut acc = [0.0f32; 32];
    for (i, t) in terms.iter().enumerate() {
        acc[i % 32] += t;
    }
    let mut n = 32;
    while n > 1 {
        n /= 2;
        for l in 0..n {
            acc[l] = acc[2 * l] + acc[2 * l + 1];
        }
    }
    acc[0]
}

/// `dot(terms, ones)` in every variant must be exactly `want`.
fn assert_dot_everywhere(terms: &[f32], want: f32) {
    let ones = vec![1.0f32; terms.len()];
    assert_eq!(spec_model(terms).to_bits(), want.to_bits(), "spec model");
    for k in variants::under_test("canonical order") {
        let got = k.dot(terms, &ones);
        assert_eq!(got.to_bits(), want.to_bits(), "{}: got {got:e}, want {want:e}", k.name());
        let mut out = [f32::NAN; 3];
        k.dot_batch(&ones, &[terms, terms, terms].concat(), &mut out);
        assert_eq!(out.map(f32::to_bits), [want.to_bits(); 3], "{} batch", k.name());
    }
}

fn sparse(n: usize, entries: &[(usize, f32)]) -> Vec<f32> {
    let mut v = vec![0.0f32; n];
    for &(i, x) in entries {
        v[i] = x;
    }
    v
}

#[test]
fn lanes_is_32() {
    assert_eq!(LANES, 32);
}

/// `1e8 + 1 == 1e8` in f32 (the spacing of floats near 1e8 is 8).
/// Elements 0 and 32 share lane 0 and cancel there: lane 0 = 1e8 + -1e8 = 0, lane 1 = 1, so the
/// result is exactly 1. Left to right: (1e8 + 1) + -1e8 = 1e8 - 1e8 = 0; the same with 64 lanes
/// summed left to right.
#[test]
fn element_i_goes_to_lane_i_mod_32() {
    let t = sparse(33, &[(0, 1e8), (1, 1.0), (32, -1e8)]);
    assert_eq!(1e8f32 + 1.0, 1e8);
    assert_dot_everywhere(&t, 1.0);
    assert_eq!(sequential(&t), 0.0);
    assert_eq!(lanes_then_halving(&t, 16), 1.0); // (same lanes mod 16 here)
    assert_eq!(lanes_then_sequential(&t, 64), 0.0); // 0 and 32 in different lanes
}

/// Elements 0 and 32 cancel in lane 0 under 32 lanes; under 16 lanes element 16 (= 1) joins
/// lane 0 between them and is absorbed: (1e8 + 1) - 1e8 = 0.
#[test]
fn thirty_two_lanes_not_sixteen() {
    let t = sparse(33, &[(0, 1e8), (16, 1.0), (32, -1e8)]);
    assert_dot_everywhere(&t, 1.0);
    assert_eq!(lanes_then_halving(&t, 16), 0.0);
    assert_eq!(sequential(&t), 0.0);
}

/// The fold pairs lane l with lane l + 16 first: lane 0 (1e8) meets lane 16 (-1e8) and cancels
/// before lane 8 (1) arrives, giving exactly 1. A sequential sum of the lanes gives
/// (1e8 + 1) - 1e8 = 0; a fold of adjacent lanes gives the same.
#[test]
fn fold_is_the_halving_tree() {
    let t = sparse(17, &[(0, 1e8), (8, 1.0), (16, -1e8)]);
    assert_dot_everywhere(&t, 1.0);
    assert_eq!(lanes_then_sequential(&t, 32), 0.0);
    assert_eq!(lanes_then_adjacent_pairs(&t), 0.0);
}

/// A term of 1e8 in lane 0 and 31 terms of 1 in lanes 1..=31 (L2 against zero: 1e4² = 1e8).
/// The tree adds the small lanes to each other before they meet lane 0:
/// half 16: lane 0 = 1e8 + 1 -> 1e8 (absorbed), lanes 1..15 = 2;
/// half 8:  lane 0 = 1e8 + 2 -> 1e8, lanes 1..7 = 4;
/// half 4:  lane 0 = 1e8 + 4 -> 1e8 (a tie, to even), lanes 1..3 = 8;
/// half 2:  lane 0 = 1e8 + 8 = 100000008 (exact), lane 1 = 16;
/// half 1:  100000008 + 16 = 100000024 (exact).
/// Left to right every +1 is absorbed: 1e8.
#[test]
fn l2_sq_worked_example() {
    let mut a = vec![1.0f32; 32];
    a[0] = 1e4;
    let zeros = vec![0.0f32; 32];
    let terms: Vec<f32> = a.iter().map(|x| x * x).collect();
    assert_eq!(spec_model(&terms), 100_000_024.0);
    assert_eq!(sequential(&terms), 1e8);
    for k in variants::under_test("canonical order") {
        assert_eq!(k.l2_sq(&a, &zeros), 100_000_024.0, "{}", k.name());
        assert_eq!(k.l2_sq(&zeros, &a), 100_000_024.0, "{}", k.name());
    }
}

/// The difference is rounded before it is squared: (2^24 + 2) - 1 = 2^24 + 1 rounds to 2^24
/// (a tie, to even), so the term is 2^48 and not (2^24 + 1)² = 2^48 + 2^25 + 1 rounded
/// (= 2^48 + 2^25).
#[test]
fn l2_sq_rounds_the_difference_first() {
    let (x, y) = (16_777_218.0f32, 1.0f32);
    assert_eq!(x - y, 16_777_216.0);
    let want = 16_777_216.0f32 * 16_777_216.0;
    assert_ne!(want, ((f64::from(x) - f64::from(y)).powi(2)) as f32);
    for k in variants::under_test("canonical order") {
        assert_eq!(k.l2_sq(&[x], &[y]).to_bits(), want.to_bits(), "{}", k.name());
    }
}

/// Separately rounded multiply and add, never a fused multiply-add. Lane 0 holds
/// -(1 + 2^-11) from element 0, then adds element 32's product (1 + 2^-12)² = 1 + 2^-11 + 2^-24,
/// which rounds to 1 + 2^-11 (a tie, to even): the lane becomes exactly 0. A fused
/// multiply-add keeps the 2^-24 and gives 2^-24.
#[test]
fn no_fused_multiply_add() {
    let p = 1.0 + 2f32.powi(-12);
    let q = 1.0 + 2f32.powi(-11);
    assert_eq!(p * p, q);
    let fused = (f64::from(-q) + f64::from(p) * f64::from(p)) as f32;
    assert_eq!(fused, 2f32.powi(-24));
    let a = sparse(33, &[(0, -q), (32, p)]);
    let b = sparse(33, &[(0, 1.0), (32, p)]);
    for k in variants::under_test("canonical order") {
        assert_eq!(k.dot(&a, &b).to_bits(), 0, "{}", k.name());
        let mut out = [f32::NAN; 2];
        k.dot_batch(&b, &[a.clone(), a.clone()].concat(), &mut out);
        assert_eq!(out.map(f32::to_bits), [0, 0], "{} batch", k.name());
    }
}

/// The accumulators start at +0.0 and stay there under -0.0 terms: the result is +0.0 even
/// when every term is -0.0 (a sum that starts at -0.0 would give -0.0), and empty inputs
/// give +0.0.
#[test]
fn signed_zeros() {
    assert_eq!((-0.0f32 * 1.0).to_bits(), 0x8000_0000);
    assert_eq!(-0.0f32 + -0.0f32, -0.0);
    for k in variants::under_test("canonical order") {
        for n in [0, 1, 5, 31, 32, 33, 100] {
            let neg = vec![-0.0f32; n];
            let one = vec![1.0f32; n];
            assert_eq!(k.dot(&neg, &one).to_bits(), 0, "{} n={n}", k.name());
            assert_eq!(k.dot(&one, &neg).to_bits(), 0, "{} n={n}", k.name());
            assert_eq!(k.l2_sq(&neg, &neg).to_bits(), 0, "{} n={n}", k.name());
        }
        let mut out = [f32::NAN; 4];
        k.dot_batch(&[], &[], &mut out);
        assert_eq!(out.map(f32::to_bits), [0; 4], "{}", k.name());
    }
}

/// +inf in one lane and -inf in another only meet in the fold: NaN (here, exactly the NaN the
/// hardware produces for inf - inf, the same in every variant).
#[test]
fn infinities_meet_in_the_fold() {
    let t = sparse(17, &[(0, 3e38), (1, 3e38), (16, -3e38), (5, 1.0)]);
    // dot with 10: lane 0 = 3e39 -> inf, lane 1 = inf, lane 16 = -inf; half 16: inf + -inf.
    let ten = vec![10.0f32; 17];
    let want = all::dot(&t, &ten);
    assert!(want.is_nan());
    for k in variants::under_test("canonical order") {
        assert_eq!(k.dot(&t, &ten).to_bits(), want.to_bits(), "{}", k.name());
    }
}

/// The reference equals the independent model of the specification on random data, and the
/// other orders do not (so the random equivalence tests would notice them).
#[test]
fn reference_matches_spec_model() {
    let mut rng = Rng::new(7);
    let mut others_differ = [0usize; 5];
    for n in 0..=1100 {
        let a = rng.floats(n);
        let b = rng.floats(n);
        let terms: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let want = spec_model(&terms);
        assert_eq!(all::dot(&a, &b).to_bits(), want.to_bits(), "dot n={n}");
        let sq: Vec<f32> = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).collect();
        assert_eq!(all::l2_sq(&a, &b).to_bits(), spec_model(&sq).to_bits(), "l2_sq n={n}");
        let others = [
            sequential(&terms),
            lanes_then_halving(&terms, 16),
            lanes_then_halving(&terms, 64),
            lanes_then_sequential(&terms, 32),
            lanes_then_adjacent_pairs(&terms),
        ];
        for (count, other) in others_differ.iter_mut().zip(others) {
            *count += usize::from(other.to_bits() != want.to_bits());
        }
    }
    for count in others_differ {
        assert!(count > 300, "another order matched too often: {others_differ:?}");
    }
}

/// Names the variants these tests compared (past the output capture, so every log shows them).
#[test]
fn variants_run_here() {
    let line = variants::report("canonical order", &variants::under_test("canonical order"));
    #[cfg(target_family = "wasm")]
    wasm_bindgen_test::console_log!("{line}");
    #[cfg(not(target_family = "wasm"))]
    let _ = line;
}
