//! AVX2 kernels: `__m256` floats (8 lanes, 4 accumulator registers, 2 rows at a time in the
//! batch kernels) and a nibble-table popcount (`vpshufb`, W. Muła's algorithm) for inputs of
//! at least [`MULA_MIN_WORDS`] words, the `popcnt` instruction below that (measured crossover:
//! the table pays off from about 2048 bits).

use core::arch::x86_64::*;

use crate::arch::generic::{self, Dot, F32Vector, L2};

impl F32Vector for __m256 {
    const WIDTH: usize = 8;

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: the caller guarantees AVX.
        unsafe { _mm256_setzero_ps() }
    }

    #[inline(always)]
    unsafe fn load(ptr: *const f32) -> Self {
        // SAFETY: the caller guarantees AVX and 8 readable floats; `loadu` needs no alignment.
        unsafe { _mm256_loadu_ps(ptr) }
    }

    #[inline(always)]
    unsafe fn load_partial(ptr: *const f32, len: usize) -> Self {
        debug_assert!(len < 8);
        // SAFETY: the caller guarantees AVX2 and `len` readable floats. `vmaskmovps` reads
        // only the lanes whose mask sign bit is set (lanes `< len`), suppresses faults on the
        // others and zeroes them.
        unsafe {
            let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(len as i32), idx);
            _mm256_maskload_ps(ptr, mask)
        }
    }

    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: the caller guarantees AVX.
        unsafe { _mm256_add_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        // SAFETY: the caller guarantees AVX.
        unsafe { _mm256_sub_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: the caller guarantees AVX.
        unsafe { _mm256_mul_ps(self, other) }
    }

    #[inline(always)]
    unsafe fn reduce(self) -> f32 {
        // SAFETY: the caller guarantees AVX; lanes l + l+4, then the 128-bit fold.
        unsafe {
            let lo = _mm256_castps256_ps128(self);
            let hi = _mm256_extractf128_ps::<1>(self);
            _mm_add_ps(lo, hi).reduce()
        }
    }
}

/// Dot product in the canonical order (see [`crate::arch::all::dot`]).
///
/// # Safety
///
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: AVX2 is enabled here, the requirement of the `__m256` operations.
    unsafe { generic::pair::<__m256, Dot>(a, b) }
}

/// Squared L2 distance in the canonical order (see [`crate::arch::all::l2_sq`]).
///
/// # Safety
///
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: AVX2 is enabled here, the requirement of the `__m256` operations.
    unsafe { generic::pair::<__m256, L2>(a, b) }
}

/// Batched dot products (see [`crate::arch::all::dot_batch`]).
///
/// # Safety
///
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn dot_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: AVX2 is enabled here, the requirement of the `__m256` operations.
    unsafe { generic::batch::<__m256, Dot, 2>(query, rows, out) }
}

/// Batched squared L2 distances (see [`crate::arch::all::l2_sq_batch`]).
///
/// # Safety
///
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn l2_sq_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: AVX2 is enabled here, the requirement of the `__m256` operations.
    unsafe { generic::batch::<__m256, L2, 2>(query, rows, out) }
}

/// Dot product of an extended RaBitQ code and a query in the canonical order (see
/// [`crate::arch::all::ex_dot`]): eight coordinates decoded per step with variable shifts,
/// into the accumulator register that owns their canonical lanes (four steps per round, so the
/// registers stay registers).
///
/// # Safety
///
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn ex_dot(signs: &[u8], levels: &[u8], width: usize, q: &[f32]) -> f32 {
    crate::arch::all::check_ex_dot(signs, levels, width, q);
    let (w, n) = (width as i32, signs.len());
    let word = |off: usize| crate::arch::all::ex_word(levels, off);
    // SAFETY: AVX2 is enabled here. Step `c < n` reads `q[8c .. 8c + 8]`, inside `q`
    // (`q.len() == 8 * n`).
    unsafe {
        // Lanes 0-3 take fields 0-3 of the low 32 bits, lanes 4-7 fields 4-7 of the bits from
        // `4 * width` (at most 28 bits each side, as `width <= 7`).
        let shifts = _mm256_setr_epi32(0, w, 2 * w, 3 * w, 0, w, 2 * w, 3 * w);
        let mask = _mm256_set1_epi32((1 << w) - 1);
        let bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let (half, sign) = (_mm256_set1_ps(0.5), _mm256_set1_epi32(i32::MIN));
        let pq = q.as_ptr();
        let step = |c: usize| -> __m256 {
            let l = word(c * width);
            let (lo, hi) = (l as u32 as i32, (l >> (4 * width)) as u32 as i32);
            let level =
                _mm256_and_si256(_mm256_srlv_epi32(_mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi), shifts), mask);
            let m = _mm256_add_ps(_mm256_cvtepi32_ps(level), half);
            // A clear sign bit negates: the float's sign bit set where `signs[c] & bit == 0`.
            let s = _mm256_set1_epi32(i32::from(signs[c]));
            let clear = _mm256_cmpeq_epi32(_mm256_and_si256(s, bit), _mm256_setzero_si256());
            let x = _mm256_or_ps(m, _mm256_castsi256_ps(_mm256_and_si256(clear, sign)));
            _mm256_mul_ps(x, _mm256_loadu_ps(pq.add(8 * c)))
        };
        let mut acc = [_mm256_setzero_ps(); generic::MAX_REGS];
        let full = n - n % 4;
        let mut c = 0;
        while c < full {
            acc[0] = _mm256_add_ps(acc[0], step(c));
            acc[1] = _mm256_add_ps(acc[1], step(c + 1));
            acc[2] = _mm256_add_ps(acc[2], step(c + 2));
            acc[3] = _mm256_add_ps(acc[3], step(c + 3));
            c += 4;
        }
        for (r, a) in acc.iter_mut().enumerate().take(n - full) {
            *a = _mm256_add_ps(*a, step(full + r));
        }
        generic::finish(acc)
    }
}

/// Shortest input (in 64-bit words) counted with the nibble table rather than `popcnt`.
pub const MULA_MIN_WORDS: usize = 32;

/// Number of set bits over all words.
///
/// # Safety
///
/// The CPU must support AVX2 and `popcnt`.
#[target_feature(enable = "avx2,popcnt")]
pub unsafe fn popcount(a: &[u64]) -> u32 {
    // SAFETY: AVX2 and popcnt are enabled here; `b == a` has the same length.
    unsafe { count_bits::<false>(a, a) }
}

/// Hamming distance between equal-length bit codes. Panics if the lengths differ.
///
/// # Safety
///
/// The CPU must support AVX2 and `popcnt`.
#[target_feature(enable = "avx2,popcnt")]
pub unsafe fn hamming(a: &[u64], b: &[u64]) -> u32 {
    assert!(a.len() == b.len(), "hamming: length mismatch");
    // SAFETY: AVX2 and popcnt are enabled here; the lengths are equal.
    unsafe { count_bits::<true>(a, b) }
}

/// Popcount of `a` (or of `a ^ b` when `XOR`). Short inputs: `popcnt` per word. Long inputs:
/// 4 words per step, each byte split into nibbles that index a 16-entry bit-count table with
/// `vpshufb`; byte counts are summed for up to 31 steps (at most 8 per step, so at most 248
/// per byte) and then widened with `vpsadbw`.
///
/// # Safety
/// AVX2 and popcnt must be available and `b.len() >= a.len()`.
#[inline(always)]
unsafe fn count_bits<const XOR: bool>(a: &[u64], b: &[u64]) -> u32 {
    debug_assert!(b.len() >= a.len());
    let n = a.len();
    let steps = if n < MULA_MIN_WORDS { 0 } else { n / 4 };
    // SAFETY: the caller guarantees AVX2. Step `i` reads words `4i .. 4i + 4 <= n` of `a` and
    // `b` (unaligned loads).
    let mut total = unsafe {
        let table = _mm256_setr_epi8(
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, //
            0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
        );
        let low = _mm256_set1_epi8(0x0f);
        let zero = _mm256_setzero_si256();
        let mut sums = zero;
        let mut i = 0;
        while i < steps {
            let end = steps.min(i + 31);
            let mut bytes = zero;
            while i < end {
                let mut v = _mm256_loadu_si256(a.as_ptr().add(4 * i).cast());
                if XOR {
                    v = _mm256_xor_si256(v, _mm256_loadu_si256(b.as_ptr().add(4 * i).cast()));
                }
                let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, low));
                let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16::<4>(v), low));
                bytes = _mm256_add_epi8(bytes, _mm256_add_epi8(lo, hi));
                i += 1;
            }
            sums = _mm256_add_epi64(sums, _mm256_sad_epu8(bytes, zero));
        }
        let s = _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256::<1>(sums));
        (_mm_cvtsi128_si64(s) as u64).wrapping_add(_mm_cvtsi128_si64(_mm_unpackhi_epi64(s, s)) as u64)
    };
    for j in 4 * steps..n {
        let w = if XOR { a[j] ^ b[j] } else { a[j] };
        total += u64::from(w.count_ones());
    }
    total as u32
}

/// FastScan ([`crate::arch::all::fastscan`]) with `vpshufb`: two groups per 256-bit shuffle,
/// u16 accumulators flushed to u32 before they can overflow.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn fastscan(luts: &[u8], blocks: &[u8], out: &mut [u32]) {
    let groups = crate::arch::all::check_fastscan(luts, blocks, out);
    if groups == 0 {
        out.fill(0);
        return;
    }
    let pairs = groups / 2;
    for (block, out) in blocks.chunks_exact(groups * 16).zip(out.chunks_exact_mut(32)) {
        let mut total = [0u32; 32];
        let low4 = _mm256_set1_epi8(0x0f);
        let low8 = _mm256_set1_epi16(0x00ff);
        let mut p = 0;
        while p < pairs {
            // At most 255 pairs per flush: each u16 lane gains at most 255 per pair.
            let end = pairs.min(p + 255);
            let (mut lo_even, mut lo_odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            let (mut hi_even, mut hi_odd) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            while p < end {
                // SAFETY: `check_fastscan` guarantees `luts` and `block` hold `groups * 16`
                // bytes and `2 * p + 1 < groups`, so both 32-byte loads are in bounds.
                let (lut, codes) = unsafe {
                    (
                        _mm256_loadu_si256(luts.as_ptr().add(p * 32).cast()),
                        _mm256_loadu_si256(block.as_ptr().add(p * 32).cast()),
                    )
                };
                let lo = _mm256_and_si256(codes, low4);
                let hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4);
                let r_lo = _mm256_shuffle_epi8(lut, lo);
                let r_hi = _mm256_shuffle_epi8(lut, hi);
                lo_even = _mm256_add_epi16(lo_even, _mm256_and_si256(r_lo, low8));
                lo_odd = _mm256_add_epi16(lo_odd, _mm256_srli_epi16(r_lo, 8));
                hi_even = _mm256_add_epi16(hi_even, _mm256_and_si256(r_hi, low8));
                hi_odd = _mm256_add_epi16(hi_odd, _mm256_srli_epi16(r_hi, 8));
                p += 1;
            }
            let mut lanes = [[0u16; 16]; 4];
            for (dst, v) in lanes.iter_mut().zip([lo_even, lo_odd, hi_even, hi_odd]) {
                // SAFETY: `dst` is 32 writable bytes; unaligned store.
                unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), v) };
            }
            // u16 lane i of the low 128 bits is group 2p, of the high 128 bits group 2p + 1;
            // "even" lanes hold codes 2i, "odd" lanes codes 2i + 1.
            for i in 0..8 {
                total[2 * i] += lanes[0][i] as u32 + lanes[0][i + 8] as u32;
                total[2 * i + 1] += lanes[1][i] as u32 + lanes[1][i + 8] as u32;
                total[16 + 2 * i] += lanes[2][i] as u32 + lanes[2][i + 8] as u32;
                total[16 + 2 * i + 1] += lanes[3][i] as u32 + lanes[3][i + 8] as u32;
            }
        }
        if groups % 2 == 1 {
            let g = groups - 1;
            let lut = &luts[g * 16..g * 16 + 16];
            for (j, &b) in block[g * 16..g * 16 + 16].iter().enumerate() {
                total[j] += lut[(b & 0x0f) as usize] as u32;
                total[j + 16] += lut[(b >> 4) as usize] as u32;
            }
        }
        out.copy_from_slice(&total);
    }
}
