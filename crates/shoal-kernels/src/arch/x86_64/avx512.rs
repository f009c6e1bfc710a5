//! AVX-512 kernels: `__m512` floats (16 lanes, 2 accumulator registers, 4 rows at a time in
//! the batch kernels, masked tail loads) and `vpopcntq` (AVX-512 VPOPCNTDQ).

use core::arch::x86_64::*;

use crate::arch::generic::{self, Dot, F32Vector, L2};

impl F32Vector for __m512 {
    const WIDTH: usize = 16;

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: the caller guarantees AVX-512F.
        unsafe { _mm512_setzero_ps() }
    }

    #[inline(always)]
    unsafe fn load(ptr: *const f32) -> Self {
        // SAFETY: the caller guarantees AVX-512F and 16 readable floats (no alignment needed).
        unsafe { _mm512_loadu_ps(ptr) }
    }

    #[inline(always)]
    unsafe fn load_partial(ptr: *const f32, len: usize) -> Self {
        debug_assert!(len < 16);
        // SAFETY: the caller guarantees AVX-512F and `len` readable floats. The masked load
        // reads only lanes `< len`, suppresses faults on the others and zeroes them.
        unsafe { _mm512_maskz_loadu_ps(((1u32 << len) - 1) as __mmask16, ptr) }
    }

    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: the caller guarantees AVX-512F.
        unsafe { _mm512_add_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        // SAFETY: the caller guarantees AVX-512F.
        unsafe { _mm512_sub_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: the caller guarantees AVX-512F.
        unsafe { _mm512_mul_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn reduce(self) -> f32 {
        // SAFETY: the caller guarantees AVX-512F (which implies AVX2); lanes l + l+8, then the
        // 256-bit fold.
        unsafe {
            let lo = _mm512_castps512_ps256(self);
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self)));
            _mm256_add_ps(lo, hi).reduce()
        }
    }
}

/// Dot product in the canonical order (see [`crate::arch::all::dot`]).
///
/// # Safety
///
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: AVX-512F is enabled here, the requirement of the `__m512` operations.
    unsafe { generic::pair::<__m512, Dot>(a, b) }
}

/// Squared L2 distance in the canonical order (see [`crate::arch::all::l2_sq`]).
///
/// # Safety
///
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: AVX-512F is enabled here, the requirement of the `__m512` operations.
    unsafe { generic::pair::<__m512, L2>(a, b) }
}

/// Batched dot products (see [`crate::arch::all::dot_batch`]).
///
/// # Safety
///
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn dot_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: AVX-512F is enabled here, the requirement of the `__m512` operations.
    unsafe { generic::batch::<__m512, Dot, 4>(query, rows, out) }
}

/// Batched squared L2 distances (see [`crate::arch::all::l2_sq_batch`]).
///
/// # Safety
///
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub unsafe fn l2_sq_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: AVX-512F is enabled here, the requirement of the `__m512` operations.
    unsafe { generic::batch::<__m512, L2, 4>(query, rows, out) }
}

/// Number of set bits over all words.
///
/// # Safety
///
/// The CPU must support AVX-512F and AVX-512 VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn popcount(a: &[u64]) -> u32 {
    // SAFETY: both features are enabled here; `b == a` has the same length.
    unsafe { count_bits::<false>(a, a) }
}

/// Hamming distance between equal-length bit codes. Panics if the lengths differ.
///
/// # Safety
///
/// The CPU must support AVX-512F and AVX-512 VPOPCNTDQ.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
pub unsafe fn hamming(a: &[u64], b: &[u64]) -> u32 {
    assert_eq!(a.len(), b.len(), "hamming: length mismatch");
    // SAFETY: both features are enabled here; the lengths are equal.
    unsafe { count_bits::<true>(a, b) }
}

/// Popcount of `a` (or of `a ^ b` when `XOR`), 8 words per step with `vpopcntq`, the last
/// partial step with a masked load.
///
/// # Safety
/// AVX-512F and AVX-512 VPOPCNTDQ must be available and `b.len() >= a.len()`.
#[inline(always)]
unsafe fn count_bits<const XOR: bool>(a: &[u64], b: &[u64]) -> u32 {
    debug_assert!(b.len() >= a.len());
    let n = a.len();
    let full = n - n % 8;
    let (pa, pb) = (a.as_ptr().cast::<i64>(), b.as_ptr().cast::<i64>());
    // SAFETY: the caller guarantees the features. Full steps read words `i .. i + 8 <= full`;
    // the masked tail reads only words `full .. n` (faults on the others are suppressed).
    unsafe {
        let mut acc = _mm512_setzero_si512();
        let mut i = 0;
        while i < full {
            let mut v = _mm512_loadu_epi64(pa.add(i));
            if XOR {
                v = _mm512_xor_si512(v, _mm512_loadu_epi64(pb.add(i)));
            }
            acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(v));
            i += 8;
        }
        if full < n {
            let mask = ((1u32 << (n - full)) - 1) as __mmask8;
            let mut v = _mm512_maskz_loadu_epi64(mask, pa.add(full));
            if XOR {
                v = _mm512_xor_si512(v, _mm512_maskz_loadu_epi64(mask, pb.add(full)));
            }
            acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(v));
        }
        _mm512_reduce_add_epi64(acc) as u32
    }
}
