//! Float kernels written once against [`F32Vector`], in the canonical order of [`arch::all`].
//!
//! A vector type with `W` lanes gives `R = 32 / W` accumulator registers; register `k` owns the
//! canonical lanes `k*W .. k*W + W`. Each chunk of 32 elements adds one term per lane, so every
//! lane sees exactly the additions of the scalar reference in the same order. The last partial
//! chunk is loaded zero-padded (registers that get no element are skipped): a padded lane adds
//! `0 * 0 = +0.0` or `(0 - 0)^2 = +0.0`, and `acc + (+0.0) == acc` bit for bit because an
//! accumulator that starts at `+0.0` never becomes `-0.0`. The registers are folded pairwise by
//! halves (`r[k] + r[k + R/2]`, ...) down to one, then [`F32Vector::reduce`] folds inside the
//! register by halves too: together exactly the canonical tree
//! `for half in [16, 8, 4, 2, 1] { acc[l] += acc[l + half] }`.
//!
//! Every function here is `#[inline(always)]` so that it is compiled inside the
//! `#[target_feature]` entry point of each target, with that target's instructions.
//!
//! [`arch::all`]: crate::arch::all

use crate::LANES;
use crate::arch::all::check_batch;

/// Upper bound of `32 / W` over all vector types (`W = 4` for 128-bit registers).
pub(crate) const MAX_REGS: usize = 8;

/// One SIMD register of `f32` lanes.
///
/// # Safety
///
/// Every method may use instructions of the target feature the implementation is written for:
/// callers must only call them where that feature is available (in practice: inside a
/// `#[target_feature]` function enabling it, after run-time detection or a compile-time
/// guarantee). The arithmetic must be IEEE single precision with round-to-nearest, no
/// flush-to-zero and no fused multiply-add.
pub(crate) trait F32Vector: Copy {
    /// Lanes per register; must divide [`LANES`].
    const WIDTH: usize;
    /// Accumulator registers per kernel: `LANES / WIDTH`.
    const REGS: usize = LANES / Self::WIDTH;

    /// All lanes `+0.0`.
    unsafe fn zero() -> Self;
    /// Loads `WIDTH` floats from `ptr` (no alignment required).
    ///
    /// # Safety
    /// `ptr .. ptr + WIDTH` must be readable.
    unsafe fn load(ptr: *const f32) -> Self;
    /// Loads `len < WIDTH` floats from `ptr`; the other lanes are `+0.0`.
    ///
    /// # Safety
    /// `ptr .. ptr + len` must be readable; nothing past it is read (or faults).
    unsafe fn load_partial(ptr: *const f32, len: usize) -> Self;
    /// Lane-wise `self + other`.
    unsafe fn add(self, other: Self) -> Self;
    /// Lane-wise `self - other`.
    unsafe fn sub(self, other: Self) -> Self;
    /// Lane-wise `self * other` (rounded; never fused with a later add).
    unsafe fn mul(self, other: Self) -> Self;
    /// Folds the lanes by halves: `lane[l] += lane[l + W/2]` for `l < W/2`, then `W/4`, ...,
    /// and returns lane 0.
    unsafe fn reduce(self) -> f32;
}

/// The first `len < 4` floats at `ptr`, zero-padded to 4: the tail of 4-lane vector types
/// without masked loads. A `match` rather than a copy of `len` floats, which would compile to a
/// call to `memcpy`.
///
/// # Safety
/// `ptr .. ptr + len` must be readable and `len < 4`.
#[inline(always)]
pub(crate) unsafe fn zero_padded4(ptr: *const f32, len: usize) -> [f32; 4] {
    debug_assert!(len < 4);
    // SAFETY: the caller guarantees `len` readable floats at `ptr`; each arm reads `len`.
    unsafe {
        match len {
            0 => [0.0; 4],
            1 => [*ptr, 0.0, 0.0, 0.0],
            2 => [*ptr, *ptr.add(1), 0.0, 0.0],
            _ => [*ptr, *ptr.add(1), *ptr.add(2), 0.0],
        }
    }
}

/// The per-element term of a float kernel.
pub(crate) trait Term {
    /// Kernel name, for panic messages.
    const NAME: &'static str;
    /// The term for query/left value `a` and row/right value `b`.
    ///
    /// # Safety
    /// As for [`F32Vector`]: `V`'s target feature must be available.
    unsafe fn term<V: F32Vector>(a: V, b: V) -> V;
}

/// Dot product term: `a * b`.
pub(crate) struct Dot;

impl Term for Dot {
    const NAME: &'static str = "dot";

    #[inline(always)]
    unsafe fn term<V: F32Vector>(a: V, b: V) -> V {
        // SAFETY: the caller guarantees `V`'s target feature.
        unsafe { a.mul(b) }
    }
}

/// Squared-difference term: `(a - b) * (a - b)`.
pub(crate) struct L2;

impl Term for L2 {
    const NAME: &'static str = "l2_sq";

    #[inline(always)]
    unsafe fn term<V: F32Vector>(a: V, b: V) -> V {
        // SAFETY: the caller guarantees `V`'s target feature.
        unsafe {
            let d = a.sub(b);
            d.mul(d)
        }
    }
}

/// Loads `min(len, WIDTH)` floats, zero-padded.
///
/// # Safety
/// `V`'s target feature must be available and `ptr .. ptr + min(len, WIDTH)` readable.
#[inline(always)]
unsafe fn load_upto<V: F32Vector>(ptr: *const f32, len: usize) -> V {
    // SAFETY: forwarded from the caller; `load` reads `WIDTH <= len` floats, `load_partial`
    // reads `len < WIDTH` floats.
    unsafe { if len >= V::WIDTH { V::load(ptr) } else { V::load_partial(ptr, len) } }
}

/// Folds the accumulator registers by halves, then the lanes of the last one.
///
/// # Safety
/// `V`'s target feature must be available.
#[inline(always)]
pub(crate) unsafe fn finish<V: F32Vector>(mut acc: [V; MAX_REGS]) -> f32 {
    // SAFETY: the caller guarantees `V`'s target feature; indices stay below `REGS`.
    unsafe {
        let mut regs = V::REGS;
        while regs > 1 {
            regs /= 2;
            for k in 0..regs {
                acc[k] = acc[k].add(acc[k + regs]);
            }
        }
        acc[0].reduce()
    }
}

/// `T` summed over `a` and `b` in the canonical order. Panics if the lengths differ.
///
/// # Safety
/// `V`'s target feature must be available.
#[inline(always)]
pub(crate) unsafe fn pair<V: F32Vector, T: Term>(a: &[f32], b: &[f32]) -> f32 {
    const { assert!(V::WIDTH * V::REGS == LANES && V::REGS <= MAX_REGS) };
    assert!(a.len() == b.len(), "{}: length mismatch", T::NAME);
    let n = a.len();
    let full = n - n % LANES;
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    // SAFETY: the caller guarantees `V`'s target feature. Full chunks read
    // `i + k*W .. i + (k+1)*W <= full <= n`; the tail reads `full + k*W .. full + k*W +
    // min(rem - k*W, W) <= n` of both slices, which have length `n`.
    unsafe {
        let mut acc = [V::zero(); MAX_REGS];
        let mut i = 0;
        while i < full {
            for (k, r) in acc.iter_mut().enumerate().take(V::REGS) {
                let off = i + k * V::WIDTH;
                let t = T::term(V::load(pa.add(off)), V::load(pb.add(off)));
                *r = r.add(t);
            }
            i += LANES;
        }
        let rem = n - full;
        for (k, r) in acc.iter_mut().enumerate().take(V::REGS) {
            let start = k * V::WIDTH;
            if start >= rem {
                break;
            }
            let off = full + start;
            let t = T::term(load_upto::<V>(pa.add(off), rem - start), load_upto::<V>(pb.add(off), rem - start));
            *r = r.add(t);
        }
        finish(acc)
    }
}

/// `out[r] = pair::<V, T>(query, row r)`, computing `B` rows at a time so that each query
/// register is loaded once per chunk and `B * REGS` independent additions are in flight.
///
/// Panics unless `rows.len() == out.len() * query.len()`.
///
/// # Safety
/// `V`'s target feature must be available.
#[inline(always)]
pub(crate) unsafe fn batch<V: F32Vector, T: Term, const B: usize>(query: &[f32], rows: &[f32], out: &mut [f32]) {
    const { assert!(V::WIDTH * V::REGS == LANES && V::REGS <= MAX_REGS && B >= 1) };
    check_batch(query, rows, out);
    let d = query.len();
    if d == 0 {
        out.fill(0.0);
        return;
    }
    let full = d - d % LANES;
    let rem = d - full;
    let qp = query.as_ptr();
    let done = out.len() - out.len() % B;
    for (blk, o) in out[..done].chunks_exact_mut(B).enumerate() {
        // SAFETY: `check_batch` guarantees `rows.len() == out.len() * d`, and block `blk`
        // covers rows `blk*B .. blk*B + B <= out.len()`, so `base + j*d .. base + (j+1)*d`
        // lies inside `rows` for `j < B`; within a row the offsets are as in `pair`. The
        // caller guarantees `V`'s target feature.
        unsafe {
            let base = rows.as_ptr().add(blk * B * d);
            let mut acc = [[V::zero(); MAX_REGS]; B];
            let mut i = 0;
            while i < full {
                for k in 0..V::REGS {
                    let off = i + k * V::WIDTH;
                    let q = V::load(qp.add(off));
                    for (j, a) in acc.iter_mut().enumerate() {
                        let t = T::term(q, V::load(base.add(j * d + off)));
                        a[k] = a[k].add(t);
                    }
                }
                i += LANES;
            }
            for k in 0..V::REGS {
                let start = k * V::WIDTH;
                if start >= rem {
                    break;
                }
                let off = full + start;
                let q = load_upto::<V>(qp.add(off), rem - start);
                for (j, a) in acc.iter_mut().enumerate() {
                    let t = T::term(q, load_upto::<V>(base.add(j * d + off), rem - start));
                    a[k] = a[k].add(t);
                }
            }
            for (o, a) in o.iter_mut().zip(acc) {
                *o = finish(a);
            }
        }
    }
    for (o, row) in out[done..].iter_mut().zip(rows[done * d..].chunks_exact(d)) {
        // SAFETY: forwarded from the caller.
        *o = unsafe { pair::<V, T>(query, row) };
    }
}
