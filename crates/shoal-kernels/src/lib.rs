//! Shoal's numeric kernels: dot product, squared L2, popcount and Hamming distance.
//!
//! Every float kernel accumulates in one canonical order (32 lanes, a fixed folding tree, no
//! fused multiply-add; see [`arch::all`]), so the scalar reference and every SIMD variant return
//! the same bits on every target. A [`Kernels`] value is a set of implementations that is safe
//! to call on the running CPU; [`Kernels::best`] picks the fastest one.
//!
//! ```
//! use shoal_kernels::Kernels;
//! let k = Kernels::best();
//! let a = [1.0f32, 2.0, 3.0];
//! let b = [4.0f32, 5.0, 6.0];
//! assert_eq!(k.dot(&a, &b), 32.0);
//! assert_eq!(k.dot(&a, &b).to_bits(), Kernels::scalar().dot(&a, &b).to_bits());
//! ```
#![no_std]
#![deny(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

pub mod arch;

/// Number of canonical accumulator lanes of every float kernel.
pub const LANES: usize = 32;

type FloatPair = unsafe fn(&[f32], &[f32]) -> f32;
type FloatBatch = unsafe fn(&[f32], &[f32], &mut [f32]);
type BitPair = unsafe fn(&[u64], &[u64]) -> u32;
type BitOne = unsafe fn(&[u64]) -> u32;

/// A set of kernel implementations that is valid on the running CPU.
///
/// The function pointers may require CPU features; a `Kernels` value is only ever constructed
/// after those features were detected (or are guaranteed at compile time), which is what makes
/// the safe methods sound.
#[derive(Clone, Copy)]
pub struct Kernels {
    name: &'static str,
    dot: FloatPair,
    l2_sq: FloatPair,
    dot_batch: FloatBatch,
    l2_sq_batch: FloatBatch,
    popcount: BitOne,
    hamming: BitPair,
}

impl core::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Kernels").field("name", &self.name).finish()
    }
}

impl Kernels {
    /// The portable scalar reference.
    pub fn scalar() -> Kernels {
        use arch::all;
        Kernels {
            name: "scalar",
            dot: all::dot,
            l2_sq: all::l2_sq,
            dot_batch: all::dot_batch,
            l2_sq_batch: all::l2_sq_batch,
            popcount: all::popcount,
            hamming: all::hamming,
        }
    }

    /// The fastest implementation for the running CPU.
    pub fn best() -> Kernels {
        Kernels::scalar()
    }

    /// Every implementation usable on the running CPU, the scalar reference first.
    pub fn available() -> impl Iterator<Item = Kernels> {
        [Some(Kernels::scalar())].into_iter().flatten()
    }

    /// Short name of this implementation (`"scalar"`, `"avx2"`, `"simd128"`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Dot product. Panics if the lengths differ.
    #[inline]
    pub fn dot(&self, a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.dot)(a, b) }
    }

    /// Squared Euclidean distance. Panics if the lengths differ.
    #[inline]
    pub fn l2_sq(&self, a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.l2_sq)(a, b) }
    }

    /// `out[r] = dot(query, row r)` for rows of `query.len()` floats stored back to back.
    ///
    /// Panics unless `rows.len() == out.len() * query.len()`.
    #[inline]
    pub fn dot_batch(&self, query: &[f32], rows: &[f32], out: &mut [f32]) {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.dot_batch)(query, rows, out) }
    }

    /// `out[r] = l2_sq(query, row r)` for rows of `query.len()` floats stored back to back.
    ///
    /// Panics unless `rows.len() == out.len() * query.len()`.
    #[inline]
    pub fn l2_sq_batch(&self, query: &[f32], rows: &[f32], out: &mut [f32]) {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.l2_sq_batch)(query, rows, out) }
    }

    /// Number of set bits.
    #[inline]
    pub fn popcount(&self, a: &[u64]) -> u32 {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.popcount)(a) }
    }

    /// Hamming distance between equal-length bit codes. Panics if the lengths differ.
    #[inline]
    pub fn hamming(&self, a: &[u64], b: &[u64]) -> u32 {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.hamming)(a, b) }
    }
}
