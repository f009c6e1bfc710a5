//! SIMD128 kernels: `v128` as `f32x4` (4 lanes, 8 accumulator registers) and `i8x16.popcnt`.
//!
//! Compiled only with `target_feature = "simd128"`, which is then a property of the whole
//! module: every engine that instantiates it supports SIMD128. WebAssembly float arithmetic is
//! IEEE single precision with round-to-nearest and no flush-to-zero; only the bits of NaN
//! results are not specified.

use core::arch::wasm32::*;

use crate::arch::generic::{self, Dot, F32Vector, L2, MAX_REGS};

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

/// Dot product of an extended RaBitQ code and a query in the canonical order (see
/// [`crate::arch::all::ex_dot`]). SIMD128 has no per-lane shifts: each half of a step's eight
/// fields is moved to one bit position by a multiply (field `k` of a 32-bit word by
/// `2^((3 - k) w)` to bit `3w`), then shifted and masked as one. Each half goes to the
/// accumulator register that owns its canonical lanes.
///
/// # Safety
///
/// The engine must support SIMD128 (guaranteed by the module's compile-time target feature).
#[target_feature(enable = "simd128")]
pub unsafe fn ex_dot(signs: &[u8], levels: &[u8], width: usize, q: &[f32]) -> f32 {
    crate::arch::all::check_ex_dot(signs, levels, width, q);
    let w = width as u32;
    let up = u32x4(1 << (3 * w), 1 << (2 * w), 1 << w, 1);
    let mask = u32x4_splat((1 << w) - 1);
    let (low_bits, high_bits) = (u32x4(1, 2, 4, 8), u32x4(16, 32, 64, 128));
    // Four coordinates: their fields of `x` (at bits `0, w, 2w, 3w`) as `±(m + 1/2)` — a
    // clear bit of `s & bits` sets the float's sign — times `q[at .. at + 4]`.
    let four = |x: u32, s: v128, bits: v128, at: usize| -> v128 {
        let level = v128_and(u32x4_shr(i32x4_mul(u32x4_splat(x), up), 3 * w), mask);
        let m = f32x4_add(f32x4_convert_i32x4(level), f32x4_splat(0.5));
        let clear = i32x4_eq(v128_and(s, bits), i32x4_splat(0));
        // SAFETY: `at + 4 <= 8 n == q.len()` (a step `c < n` reads `q[8c .. 8c + 8]`).
        let y = unsafe { v128_load(q.as_ptr().add(at).cast()) };
        f32x4_mul(v128_or(m, v128_and(clear, u32x4_splat(1 << 31))), y)
    };
    let mut acc = [f32x4_splat(0.0); MAX_REGS];
    // Step `c`: coordinates `8c .. 8c + 8`, canonical lanes `8 (c % 4) ..`, registers `2 (c % 4)`
    // and `2 (c % 4) + 1` (one loop without unrolling: the package's bytes).
    for (c, &sign) in signs.iter().enumerate() {
        let l = crate::arch::all::ex_word(levels, c * width);
        let (s, r) = (u32x4_splat(u32::from(sign)), 2 * (c % 4));
        acc[r] = f32x4_add(acc[r], four(l as u32, s, low_bits, 8 * c));
        acc[r + 1] = f32x4_add(acc[r + 1], four((l >> (4 * width)) as u32, s, high_bits, 8 * c + 4));
    }
    // SAFETY: SIMD128 is enabled here.
    unsafe { generic::finish(acc) }
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
    assert!(a.len() == b.len(), "hamming: length mismatch");
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

/// FastScan ([`crate::arch::all::fastscan`]) with `i8x16.swizzle`, u16 accumulators flushed to
/// u32 before they can overflow.
///
/// # Safety
/// Requires SIMD128 (guaranteed: this module is compiled only with it).
#[target_feature(enable = "simd128")]
pub unsafe fn fastscan(luts: &[u8], blocks: &[u8], out: &mut [u32]) {
    let groups = crate::arch::all::check_fastscan(luts, blocks, out);
    if groups == 0 {
        out.fill(0);
        return;
    }
    for (block, out) in blocks.chunks_exact(groups * 16).zip(out.chunks_exact_mut(32)) {
        let mut total = [0u32; 32];
        let low4 = u8x16_splat(0x0f);
        let low8 = u16x8_splat(0x00ff);
        let mut g = 0;
        while g < groups {
            let end = groups.min(g + 255);
            let (mut lo_even, mut lo_odd) = (u16x8_splat(0), u16x8_splat(0));
            let (mut hi_even, mut hi_odd) = (u16x8_splat(0), u16x8_splat(0));
            while g < end {
                // SAFETY: `check_fastscan` guarantees both slices hold `groups * 16` bytes and
                // `g < groups`, so both 16-byte loads are in bounds.
                let (lut, codes) = unsafe {
                    (v128_load(luts.as_ptr().add(g * 16).cast()), v128_load(block.as_ptr().add(g * 16).cast()))
                };
                let r_lo = i8x16_swizzle(lut, v128_and(codes, low4));
                let r_hi = i8x16_swizzle(lut, u8x16_shr(codes, 4));
                lo_even = u16x8_add(lo_even, v128_and(r_lo, low8));
                lo_odd = u16x8_add(lo_odd, u16x8_shr(r_lo, 8));
                hi_even = u16x8_add(hi_even, v128_and(r_hi, low8));
                hi_odd = u16x8_add(hi_odd, u16x8_shr(r_hi, 8));
                g += 1;
            }
            let mut lanes = [[0u16; 8]; 4];
            for (dst, v) in lanes.iter_mut().zip([lo_even, lo_odd, hi_even, hi_odd]) {
                // SAFETY: `dst` is 16 writable bytes; v128 stores need no alignment.
                unsafe { v128_store(dst.as_mut_ptr().cast(), v) };
            }
            for i in 0..8 {
                total[2 * i] += lanes[0][i] as u32;
                total[2 * i + 1] += lanes[1][i] as u32;
                total[16 + 2 * i] += lanes[2][i] as u32;
                total[16 + 2 * i + 1] += lanes[3][i] as u32;
            }
        }
        out.copy_from_slice(&total);
    }
}
