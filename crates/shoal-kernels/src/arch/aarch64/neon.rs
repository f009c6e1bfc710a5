//! NEON kernels: `float32x4_t` floats (4 lanes, 8 accumulator registers, 2 rows at a time in
//! the batch kernels) and a `vcnt` popcount.
//!
//! AArch64 Advanced SIMD arithmetic is IEEE single precision and honours `FPCR` (no
//! flush-to-zero unless a program sets it, which Rust never does), unlike 32-bit ARM NEON.

use core::arch::aarch64::*;

use crate::arch::generic::{self, Dot, F32Vector, L2, MAX_REGS};

impl F32Vector for float32x4_t {
    const WIDTH: usize = 4;

    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe { vdupq_n_f32(0.0) }
    }

    #[inline(always)]
    unsafe fn load(ptr: *const f32) -> Self {
        // SAFETY: the caller guarantees 4 readable floats; `ld1` needs no alignment.
        unsafe { vld1q_f32(ptr) }
    }

    #[inline(always)]
    unsafe fn load_partial(ptr: *const f32, len: usize) -> Self {
        debug_assert!(len < 4);
        // SAFETY: the caller guarantees `len < 4` readable floats at `ptr`; `buf` holds 4.
        unsafe {
            let buf = generic::zero_padded4(ptr, len);
            vld1q_f32(buf.as_ptr())
        }
    }

    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe { vaddq_f32(self, other) }
    }

    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe { vsubq_f32(self, other) }
    }

    #[inline(always)]
    unsafe fn mul(self, other: Self) -> Self {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe { vmulq_f32(self, other) }
    }

    #[inline(always)]
    unsafe fn reduce(self) -> f32 {
        // [x0+x2, x1+x3], then lane 0 + lane 1. (`vaddvq_f32` uses another tree.)
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe {
            let s = vadd_f32(vget_low_f32(self), vget_high_f32(self));
            vget_lane_f32::<0>(s) + vget_lane_f32::<1>(s)
        }
    }
}

/// Dot product in the canonical order (see [`crate::arch::all::dot`]).
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: NEON is enabled here, the only requirement of the `float32x4_t` operations.
    unsafe { generic::pair::<float32x4_t, Dot>(a, b) }
}

/// Squared L2 distance in the canonical order (see [`crate::arch::all::l2_sq`]).
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn l2_sq(a: &[f32], b: &[f32]) -> f32 {
    // SAFETY: NEON is enabled here, the only requirement of the `float32x4_t` operations.
    unsafe { generic::pair::<float32x4_t, L2>(a, b) }
}

/// Batched dot products (see [`crate::arch::all::dot_batch`]).
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn dot_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: NEON is enabled here, the only requirement of the `float32x4_t` operations.
    unsafe { generic::batch::<float32x4_t, Dot, 2>(query, rows, out) }
}

/// Batched squared L2 distances (see [`crate::arch::all::l2_sq_batch`]).
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn l2_sq_batch(query: &[f32], rows: &[f32], out: &mut [f32]) {
    // SAFETY: NEON is enabled here, the only requirement of the `float32x4_t` operations.
    unsafe { generic::batch::<float32x4_t, L2, 2>(query, rows, out) }
}

/// Number of set bits over all words.
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn popcount(a: &[u64]) -> u32 {
    // SAFETY: NEON is enabled here; `b == a` has the same length.
    unsafe { count_bits::<false>(a, a) }
}

/// Hamming distance between equal-length bit codes. Panics if the lengths differ.
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn hamming(a: &[u64], b: &[u64]) -> u32 {
    assert!(a.len() == b.len(), "hamming: length mismatch");
    // SAFETY: NEON is enabled here; the lengths are equal.
    unsafe { count_bits::<true>(a, b) }
}

/// Popcount of `a` (or of `a ^ b` when `XOR`), 2 words per step: `vcnt` per byte, pairwise
/// widened into 16-bit sums (at most 16 per step, flushed into 32-bit sums every 2048 steps).
///
/// # Safety
/// NEON must be available and `b.len() >= a.len()`.
#[inline(always)]
unsafe fn count_bits<const XOR: bool>(a: &[u64], b: &[u64]) -> u32 {
    debug_assert!(b.len() >= a.len());
    let n = a.len();
    let steps = n / 2;
    // SAFETY: the caller guarantees NEON. Step `i` reads words `2i .. 2i + 2 <= n` of `a`
    // and `b`.
    let mut total = unsafe {
        let mut sums = vdupq_n_u32(0);
        let mut i = 0;
        while i < steps {
            let end = steps.min(i + 2048);
            let mut halves = vdupq_n_u16(0);
            while i < end {
                let mut v = vld1q_u8(a.as_ptr().add(2 * i).cast());
                if XOR {
                    v = veorq_u8(v, vld1q_u8(b.as_ptr().add(2 * i).cast()));
                }
                halves = vpadalq_u8(halves, vcntq_u8(v));
                i += 1;
            }
            sums = vpadalq_u16(sums, halves);
        }
        vaddvq_u32(sums)
    };
    if n % 2 == 1 {
        let w = if XOR { a[n - 1] ^ b[n - 1] } else { a[n - 1] };
        total = total.wrapping_add(w.count_ones());
    }
    total
}

/// Dot product of an extended RaBitQ code and a query in the canonical order (see
/// [`crate::arch::all::ex_dot`]): each half of a step's eight fields decoded with per-lane
/// shifts (`ushl` by negative counts), into the accumulator register that owns its canonical
/// lanes (four steps per round, so the registers stay registers).
///
/// # Safety
///
/// The CPU must support NEON (every aarch64 CPU does).
#[target_feature(enable = "neon")]
pub unsafe fn ex_dot(signs: &[u8], levels: &[u8], width: usize, q: &[f32]) -> f32 {
    crate::arch::all::check_ex_dot(signs, levels, width, q);
    let (w, n) = (width as i32, signs.len());
    // SAFETY: NEON is enabled here. `lanes` loads the 4 elements of its array; step `c < n`
    // reads `q[8c .. 8c + 8]`, inside `q` (`q.len() == 8 * n`).
    unsafe {
        let lanes = |a: [i32; 4]| vld1q_s32(a.as_ptr());
        let shifts = lanes([0, -w, -2 * w, -3 * w]);
        let mask = vdupq_n_u32((1 << w) - 1);
        let (low_bits, high_bits) =
            (vreinterpretq_u32_s32(lanes([1, 2, 4, 8])), vreinterpretq_u32_s32(lanes([16, 32, 64, 128])));
        let sign = vdupq_n_u32(1 << 31);
        let pq = q.as_ptr();
        // Four coordinates: the fields of `x` at bits `0, w, 2w, 3w` as `±(m + 1/2)` — a clear
        // bit of `s & bits` sets the float's sign — times `q[at .. at + 4]`.
        let four = |x: u32, s: uint32x4_t, bits: uint32x4_t, at: usize| -> float32x4_t {
            let level = vandq_u32(vshlq_u32(vdupq_n_u32(x), shifts), mask);
            let m = vaddq_f32(vcvtq_f32_u32(level), vdupq_n_f32(0.5));
            let negative = vbicq_u32(sign, vtstq_u32(s, bits));
            vmulq_f32(vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(m), negative)), vld1q_f32(pq.add(at)))
        };
        let mut acc = [vdupq_n_f32(0.0); MAX_REGS];
        // Step `c`: coordinates `8c .. 8c + 8`, into registers `r` and `r + 1` (`r = 2 (c % 4)`).
        let mut step = |c: usize, r: usize| {
            let l = crate::arch::all::ex_word(levels, c * width);
            let s = vdupq_n_u32(u32::from(signs[c]));
            acc[r] = vaddq_f32(acc[r], four(l as u32, s, low_bits, 8 * c));
            acc[r + 1] = vaddq_f32(acc[r + 1], four((l >> (4 * width)) as u32, s, high_bits, 8 * c + 4));
        };
        let full = n - n % 4;
        let mut c = 0;
        while c < full {
            step(c, 0);
            step(c + 1, 2);
            step(c + 2, 4);
            step(c + 3, 6);
            c += 4;
        }
        for r in 0..n - full {
            step(full + r, 2 * r);
        }
        generic::finish(acc)
    }
}

/// FastScan ([`crate::arch::all::fastscan`]) with `tbl`, widening adds into u16 flushed to u32
/// before they can overflow.
///
/// # Safety
/// The CPU must support NEON.
#[target_feature(enable = "neon")]
pub unsafe fn fastscan(luts: &[u8], blocks: &[u8], out: &mut [u32]) {
    let groups = crate::arch::all::check_fastscan(luts, blocks, out);
    if groups == 0 {
        out.fill(0);
        return;
    }
    for (block, out) in blocks.chunks_exact(groups * 16).zip(out.chunks_exact_mut(32)) {
        let mut total = [0u32; 32];
        let low4 = vdupq_n_u8(0x0f);
        let mut g = 0;
        while g < groups {
            let end = groups.min(g + 255);
            let mut acc = [vdupq_n_u16(0); 4];
            while g < end {
                // SAFETY: `check_fastscan` guarantees both slices hold `groups * 16` bytes and
                // `g < groups`, so both 16-byte loads are in bounds.
                let (lut, codes) =
                    unsafe { (vld1q_u8(luts.as_ptr().add(g * 16)), vld1q_u8(block.as_ptr().add(g * 16))) };
                let r_lo = vqtbl1q_u8(lut, vandq_u8(codes, low4));
                let r_hi = vqtbl1q_u8(lut, vshrq_n_u8(codes, 4));
                acc[0] = vaddw_u8(acc[0], vget_low_u8(r_lo));
                acc[1] = vaddw_high_u8(acc[1], r_lo);
                acc[2] = vaddw_u8(acc[2], vget_low_u8(r_hi));
                acc[3] = vaddw_high_u8(acc[3], r_hi);
                g += 1;
            }
            let mut lanes = [0u16; 32];
            for (k, v) in acc.iter().enumerate() {
                // SAFETY: `lanes[k * 8..]` holds 8 writable u16.
                unsafe { vst1q_u16(lanes.as_mut_ptr().add(k * 8), *v) };
            }
            for (t, l) in total.iter_mut().zip(lanes) {
                *t += l as u32;
            }
        }
        out.copy_from_slice(&total);
    }
}
