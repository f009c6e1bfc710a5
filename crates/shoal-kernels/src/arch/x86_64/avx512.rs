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
    assert!(a.len() == b.len(), "hamming: length mismatch");
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

/// FastScan ([`crate::arch::all::fastscan`]) with AVX-512BW `vpshufb`: four groups per 512-bit
/// shuffle, u16 accumulators widened to u32 before they can overflow, and the lanes summed and
/// put back in code order with vector shuffles (no scalar pass per block). Exact integers: the
/// same sums as every other implementation.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX2.
#[target_feature(enable = "avx512f,avx512bw,avx2")]
pub unsafe fn fastscan(luts: &[u8], blocks: &[u8], out: &mut [u32]) {
    let groups = crate::arch::all::check_fastscan(luts, blocks, out);
    if groups == 0 {
        out.fill(0);
        return;
    }
    let quads = groups / 4;
    let low4 = _mm512_set1_epi8(0x0f);
    let low8 = _mm512_set1_epi16(0x00ff);
    // u16 lanes of the four 128-bit lanes (groups 4q..4q+3) summed into 8 u32: lane i.
    let widen = |v: __m512i| -> __m256i {
        let a = _mm512_cvtepu16_epi32(_mm512_castsi512_si256(v));
        let b = _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64::<1>(v));
        let s = _mm512_add_epi32(a, b);
        _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64::<1>(s))
    };
    for (block, out) in blocks.chunks_exact(groups * 16).zip(out.chunks_exact_mut(32)) {
        // u32 sums of codes 0, 2, .., 14 / 1, 3, .., 15 / 16, 18, .., 30 / 17, 19, .., 31.
        let mut totals = [_mm256_setzero_si256(); 4];
        let mut q = 0;
        while q < quads {
            // At most 255 quads per flush: each u16 lane gains at most 255 per quad.
            let end = quads.min(q + 255);
            let mut acc = [_mm512_setzero_si512(); 4];
            while q < end {
                // SAFETY: `check_fastscan` guarantees `luts` and `block` hold `groups * 16`
                // bytes and `4 * q + 3 < groups`, so both 64-byte loads are in bounds.
                let (lut, codes) = unsafe {
                    (
                        _mm512_loadu_si512(luts.as_ptr().add(q * 64).cast()),
                        _mm512_loadu_si512(block.as_ptr().add(q * 64).cast()),
                    )
                };
                let r_lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(codes, low4));
                let r_hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16::<4>(codes), low4));
                acc[0] = _mm512_add_epi16(acc[0], _mm512_and_si512(r_lo, low8));
                acc[1] = _mm512_add_epi16(acc[1], _mm512_srli_epi16::<8>(r_lo));
                acc[2] = _mm512_add_epi16(acc[2], _mm512_and_si512(r_hi, low8));
                acc[3] = _mm512_add_epi16(acc[3], _mm512_srli_epi16::<8>(r_hi));
                q += 1;
            }
            for (t, a) in totals.iter_mut().zip(acc) {
                *t = _mm256_add_epi32(*t, widen(a));
            }
        }
        // Even and odd codes back in order: [e0 o0 e1 o1 | e4 o4 e5 o5], [e2 o2 e3 o3 | e6 o6 e7 o7].
        let mut ordered = [0u32; 32];
        for (half, (even, odd)) in [(totals[0], totals[1]), (totals[2], totals[3])].into_iter().enumerate() {
            let lo = _mm256_unpacklo_epi32(even, odd);
            let hi = _mm256_unpackhi_epi32(even, odd);
            // SAFETY: `ordered` has 32 u32; each store writes 8 of them (unaligned).
            unsafe {
                _mm256_storeu_si256(
                    ordered.as_mut_ptr().add(16 * half).cast(),
                    _mm256_permute2x128_si256::<0x20>(lo, hi),
                );
                _mm256_storeu_si256(
                    ordered.as_mut_ptr().add(16 * half + 8).cast(),
                    _mm256_permute2x128_si256::<0x31>(lo, hi),
                );
            }
        }
        for g in 4 * quads..groups {
            let lut = &luts[g * 16..g * 16 + 16];
            for (j, &b) in block[g * 16..g * 16 + 16].iter().enumerate() {
                ordered[j] += lut[(b & 0x0f) as usize] as u32;
                ordered[j + 16] += lut[(b >> 4) as usize] as u32;
            }
        }
        out.copy_from_slice(&ordered);
    }
}
