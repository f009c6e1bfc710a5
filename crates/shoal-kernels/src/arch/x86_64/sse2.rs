//! SSE2 float kernels: `__m128` (4 lanes), 8 accumulator registers.
//!
//! SSE2 is part of the x86_64 baseline, so these are usable on every x86_64 CPU. Popcount for
//! this level lives in [`super::popcnt`].

use core::arch::x86_64::*;

use crate::arch::generic::{self, Dot, F32Vector, L2};

impl F32Vector for __m128 {
    const WIDTH: usize = 4;

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: SSE is part of the x86_64 baseline.
        unsafe { _mm_setzero_ps() }
    }

    #[inline(always)]
    unsafe fn load(ptr: *const f32) -> Self {
        // SAFETY: the caller guarantees 4 readable floats; `loadu` needs no alignment.
        unsafe { _mm_loadu_ps(ptr) }
    }

    #[inline(always)]
    unsafe fn load_partial(ptr: *const f32, len: usize) -> Self {
        debug_assert!(len < 4);
        // SAFETY: the caller guarantees `len < 4` readable floats at `ptr`; `buf` holds 4.
        unsafe {
            let buf = generic::zero_padded4(ptr, len);
            _mm_loadu_ps(buf.as_ptr())
        }
    }

    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: SSE is part of the x86_64 baseline.
        unsafe { _mm_add_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        // SAFETY: SSE is part of the x86_64 baseline.
        unsafe { _mm_sub_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: SSE is part of the x86_64 baseline.
        unsafe { _mm_mul_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn reduce(self) -> f32 {
        // [x0+x2, x1+x3, ..] then lane 0 + lane 1.
        // SAFETY: SSE is part of the x86_64 baseline.
        unsafe {
            let s = _mm_add_ps(self, _mm_movehl_ps(self, self));
            _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s)))
        }
    }
}

/// Dot product in the canonical order (see [`crate::arch::all::dot`]).
///
/// # Safety
///
/// The CPU must support SSE2 (every x86_64 CPU does).
#[target_feature(enable = "sse2")]
pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: SSE2 is enabled here, the only requirement of the `__m128` operations.
    unsafe { generic::pair::<__m128, Dot>(a, b) }
}

/// Squared L2 distance in the canonical order (see [`crate::arch::all::l2_sq`]).
///
/// # Safety
///
/// The CPU must support SSE2 (every x86_64 CPU does).
#[target_feature(enable = "sse2")]
pub unsafe fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: SSE2 is enabled here, the only requirement of the `__m128` operations.
    unsafe { generic::pair::<__m128, L2>(a, b) }
}

/// Batched dot products (see [`crate::arch::all::dot_batch`]).
///
/// # Safety
///
/// The CPU must support SSE2 (every x86_64 CPU does).
#[target_feature(enable = "sse2")]
pub unsafe fn dot_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: SSE2 is enabled here, the only requirement of the `__m128` operations.
    unsafe { generic::batch::<__m128, Dot, 1>(query, rows, out) }
}

/// Batched squared L2 distances (see [`crate::arch::all::l2_sq_batch`]).
///
/// # Safety
///
/// The CPU must support SSE2 (every x86_64 CPU does).
#[target_feature(enable = "sse2")]
pub unsafe fn l2_sq_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: SSE2 is enabled here, the only requirement of the `__m128` operations.
    unsafe { generic::batch::<__m128, L2, 1>(query, rows, out) }
}
