//! SIMD128 kernels: `v128` as `f32x4` (4 lanes, 8 accumulator registers) and `i8x16.popcnt`.
//!
//! Compiled only with `target_feature = "simd128"`, which is then a property of the whole
//! module: every engine that instantiates it supports SIMD128. WebAssembly float arithmetic is
//! IEEE single precision with round-to-nearest and no flush-to-zero; only the bits of NaN
//! results are not specified.

use core::arch::wasm32::*;

use crate::arch::generic::{self, Dot, F32Vector, L2};

impl F32Vector for v128 {
    const WIDTH: usize = 4;

    #[inline(always)]
    unsafe fn zero() -> Self {
        f32x4_splat(0.0)
    }

    #[inline(always)]
    unsafe fn load(ptr: *const f32) -> Self {
        // SAFETY: the caller guarantees 4 readable floats; `v128.load` needs no alignment.
        unsafe { v128_load(ptr.cast()) }
    }

    #[inline(always)]
    unsafe fn load_partial(ptr: *const f32, len: usize) -> Self {
        debug_assert!(len < 4);
        // SAFETY: the caller guarantees `len < 4` readable floats at `ptr`; `buf` holds 4.
        unsafe {
            let buf = generic::zero_padded4(ptr, len);
            v128_load(buf.as_ptr().cast())
        }
    }

    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        f32x4_add(self, other)
    }

    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        f32x4_sub(self, other)
    }

    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        f32x4_mul(self, other)
    }

    #[inline(always)]
    unsafe fn reduce(self) -> f32 {
        // [x0+x2, x1+x3, ..] then lane 0 + lane 1.
        let s = f32x4_add(self, i32x4_shuffle::<2, 3, 2, 3>(self, self));
        let t = f32x4_add(s, i32x4_shuffle::<1, 1, 1, 1>(s, s));
        f32x4_extract_lane::<0>(t)
    }
}

/// Dot product in the canonical order (see [`crate::arch::all::dot`]).
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed: this module is compiled only when the whole
/// module targets SIMD128).
#[target_feature(enable = "simd128")]
pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: SIMD128 is enabled here, the only requirement of the `v128` operations.
    unsafe { generic::pair::<v128, Dot>(a, b) }
}

/// Squared L2 distance in the canonical order (see [`crate::arch::all::l2_sq`]).
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed by the module's compile-time target feature).
#[target_feature(enable = "simd128")]
pub unsafe fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: SIMD128 is enabled here, the only requirement of the `v128` operations.
    unsafe { generic::pair::<v128, L2>(a, b) }
}

/// Batched dot products (see [`crate::arch::all::dot_batch`]).
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed by the module's compile-time target feature).
#[target_feature(enable = "simd128")]
pub unsafe fn dot_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: SIMD128 is enabled here, the only requirement of the `v128` operations.
    unsafe { generic::batch::<v128, Dot, 1>(query, rows, out) }
}

/// Batched squared L2 distances (see [`crate::arch::all::l2_sq_batch`]).
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed by the module's compile-time target feature).
#[target_feature(enable = "simd128")]
pub unsafe fn l2_sq_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: SIMD128 is enabled here, the only requirement of the `v128` operations.
    unsafe { generic::batch::<v128, L2, 1>(query, rows, out) }
}

/// Number of set bits over all words.
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed by the module's compile-time target feature).
#[target_feature(enable = "simd128")]
pub unsafe fn popcount(a: &[u64]) -> u32 {
    // SAFETY: SIMD128 is enabled here; `b == a` has the same length.
    unsafe { count_bits::<false>(a, a) }
}

/// Hamming distance between equal-length bit codes. Panics if the lengths differ.
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed by the module's compile-time target feature).
#[target_feature(enable = "simd128")]
pub unsafe fn hamming(a: &[u64], b: &[u64]) -> u32 {
    assert_eq!(a.len(), b.len(), "hamming: length mismatch");
    // SAFETY: SIMD128 is enabled here; the lengths are equal.
    unsafe { count_bits::<true>(a, b) }
}

/// Popcount of `a` (or of `a ^ b` when `XOR`), 2 words per step: `i8x16.popcnt`, pairwise
/// widened into 16-bit sums (at most 16 per step, flushed into 32-bit sums every 2048 steps).
///
/// # Safety
/// SIMD128 must be available and `b.len() >= a.len()`.
#[inline(always)]
unsafe fn count_bits<const XOR: bool>(a: &[u64], b: &[u64]) -> u32 {
    debug_assert!(b.len() >= a.len());
    let n = a.len();
    let steps = n / 2;
    let mut sums = u32x4_splat(0);
    let mut i = 0;
    while i < steps {
        let end = steps.min(i + 2048);
        let mut halves = u16x8_splat(0);
        while i < end {
            // SAFETY: step `i` reads words `2i .. 2i + 2 <= n` of `a` and `b`.
            let mut v = unsafe { v128_load(a.as_ptr().add(2 * i).cast()) };
            if XOR {
                // SAFETY: as above, `b.len() >= n`.
                v = v128_xor(v, unsafe { v128_load(b.as_ptr().add(2 * i).cast()) });
            }
            halves = u16x8_add(halves, u16x8_extadd_pairwise_u8x16(i8x16_popcnt(v)));
            i += 1;
        }
        sums = u32x4_add(sums, u32x4_extadd_pairwise_u16x8(halves));
    }
    let mut total = u32x4_extract_lane::<0>(sums)
        .wrapping_add(u32x4_extract_lane::<1>(sums))
        .wrapping_add(u32x4_extract_lane::<2>(sums))
        .wrapping_add(u32x4_extract_lane::<3>(sums));
    if n % 2 == 1 {
        let w = if XOR { a[n - 1] ^ b[n - 1] } else { a[n - 1] };
        total = total.wrapping_add(w.count_ones());
    }
    total
}
