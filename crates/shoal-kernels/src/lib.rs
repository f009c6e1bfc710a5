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

/// Asks the CPU to start loading `data`'s cache lines (x86-64 `prefetcht0`; nothing elsewhere).
/// A hint only: it reads nothing and changes no result.
#[inline]
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = data.as_ptr().cast::<i8>();
        let mut at = 0;
        while at < core::mem::size_of_val(data) {
            // SAFETY: a prefetch never faults, and the address lies inside `data`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at)) };
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// Number of canonical accumulator lanes of every float kernel.
pub const LANES: usize = 32;

type FloatPair = unsafe fn(&[f32], &[f32]) -> f32;
type FloatBatch = unsafe fn(&[f32], &[f32], &mut [f32]);
type BitPair = unsafe fn(&[u64], &[u64]) -> u32;
type BitOne = unsafe fn(&[u64]) -> u32;
type FastScan = unsafe fn(&[u8], &[u8], &mut [u32]);
type ExDot = unsafe fn(&[u8], &[u8], usize, &[f32]) -> f32;

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
    fastscan: FastScan,
    ex_dot: ExDot,
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
            fastscan: all::fastscan,
            ex_dot: all::ex_dot,
        }
    }

    /// The fastest implementation for the running CPU.
    ///
    /// * x86_64 with the `std` feature: the CPU is probed once (`is_x86_feature_detected!`)
    ///   and the choice cached; AVX-512, then AVX2, then SSE2.
    /// * x86_64 without `std`: the same preference over the features enabled at compile time.
    /// * aarch64: NEON (baseline).
    /// * wasm32: SIMD128 if the module is compiled with `+simd128`, else the scalar reference.
    /// * anything else: the scalar reference.
    ///
    /// Every choice returns the same bits as [`Kernels::scalar`].
    pub fn best() -> Kernels {
        #[cfg(all(target_arch = "x86_64", feature = "std"))]
        {
            static BEST: std::sync::OnceLock<Kernels> = std::sync::OnceLock::new();
            *BEST.get_or_init(Kernels::detect_best)
        }
        #[cfg(not(all(target_arch = "x86_64", feature = "std")))]
        {
            Kernels::detect_best()
        }
    }

    /// The preferred usable implementation, probed anew.
    fn detect_best() -> Kernels {
        Kernels::avx512()
            .or_else(Kernels::avx2)
            .or_else(Kernels::sse2)
            .or_else(Kernels::neon)
            .or_else(Kernels::simd128)
            .unwrap_or_else(Kernels::scalar)
    }

    /// Every implementation usable on the running CPU, the scalar reference first, then by
    /// increasing vector width.
    pub fn available() -> impl Iterator<Item = Kernels> {
        [
            Some(Kernels::scalar()),
            Kernels::sse2(),
            Kernels::avx2(),
            Kernels::avx512(),
            Kernels::neon(),
            Kernels::simd128(),
        ]
        .into_iter()
        .flatten()
    }

    /// The usable implementation called `name` (see [`Kernels::name`]), if any.
    ///
    /// ```
    /// use shoal_kernels::Kernels;
    /// assert_eq!(Kernels::by_name("scalar").unwrap().name(), "scalar");
    /// assert!(Kernels::by_name("no-such-variant").is_none());
    /// ```
    pub fn by_name(name: &str) -> Option<Kernels> {
        Kernels::available().find(|k| k.name == name)
    }

    /// x86_64 SSE2 float kernels (4 lanes per register) with the `popcnt` instruction for the
    /// bit kernels when the CPU has it (else the scalar bit kernels). `None` off x86_64.
    pub fn sse2() -> Option<Kernels> {
        #[cfg(target_arch = "x86_64")]
        {
            use arch::x86_64::{popcnt, sse2};
            let popcount: BitOne;
            let hamming: BitPair;
            if arch::x86_64::has_popcnt() {
                (popcount, hamming) = (popcnt::popcount, popcnt::hamming);
            } else {
                (popcount, hamming) = (arch::all::popcount, arch::all::hamming);
            }
            Some(Kernels {
                name: "sse2",
                dot: sse2::dot,
                l2_sq: sse2::l2_sq,
                dot_batch: sse2::dot_batch,
                l2_sq_batch: sse2::l2_sq_batch,
                popcount,
                hamming,
                // pshufb needs SSSE3, which x86_64's baseline lacks.
                fastscan: arch::all::fastscan,
                ex_dot: arch::all::ex_dot,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// x86_64 AVX2 kernels (8 lanes per register; bit kernels: `popcnt` for short inputs, a
    /// nibble-table popcount for long ones). `None` unless the CPU supports AVX2 and `popcnt`
    /// (or, without the `std` feature, unless they are enabled at compile time).
    pub fn avx2() -> Option<Kernels> {
        #[cfg(target_arch = "x86_64")]
        {
            use arch::x86_64::avx2;
            arch::x86_64::has_avx2().then_some(Kernels {
                name: "avx2",
                dot: avx2::dot,
                l2_sq: avx2::l2_sq,
                dot_batch: avx2::dot_batch,
                l2_sq_batch: avx2::l2_sq_batch,
                popcount: avx2::popcount,
                hamming: avx2::hamming,
                fastscan: avx2::fastscan,
                ex_dot: avx2::ex_dot,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// x86_64 AVX-512F kernels (16 lanes per register), with `vpopcntq` for the bit kernels
    /// when the CPU has AVX-512 VPOPCNTDQ (else the AVX2 ones). `None` unless the CPU supports
    /// AVX-512F (or, without the `std` feature, unless it is enabled at compile time).
    pub fn avx512() -> Option<Kernels> {
        #[cfg(target_arch = "x86_64")]
        {
            use arch::x86_64::{avx2, avx512};
            if !arch::x86_64::has_avx512f() {
                return None;
            }
            let popcount: BitOne;
            let hamming: BitPair;
            if arch::x86_64::has_avx512_vpopcntdq() {
                (popcount, hamming) = (avx512::popcount, avx512::hamming);
            } else {
                (popcount, hamming) = (avx2::popcount, avx2::hamming);
            }
            Some(Kernels {
                name: "avx512",
                dot: avx512::dot,
                l2_sq: avx512::l2_sq,
                dot_batch: avx512::dot_batch,
                l2_sq_batch: avx512::l2_sq_batch,
                popcount,
                hamming,
                fastscan: if arch::x86_64::has_avx512bw() { avx512::fastscan } else { avx2::fastscan },
                ex_dot: avx2::ex_dot,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// aarch64 NEON kernels (4 lanes per register, `vcnt` popcount). `None` off aarch64.
    pub fn neon() -> Option<Kernels> {
        #[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
        {
            use arch::aarch64::neon;
            Some(Kernels {
                name: "neon",
                dot: neon::dot,
                l2_sq: neon::l2_sq,
                dot_batch: neon::dot_batch,
                l2_sq_batch: neon::l2_sq_batch,
                popcount: neon::popcount,
                hamming: neon::hamming,
                fastscan: neon::fastscan,
                ex_dot: neon::ex_dot,
            })
        }
        #[cfg(not(all(target_arch = "aarch64", target_feature = "neon")))]
        {
            None
        }
    }

    /// wasm32 SIMD128 kernels (4 lanes per register, `i8x16.popcnt`). `None` unless the
    /// module is compiled for wasm32 with `-C target-feature=+simd128`.
    pub fn simd128() -> Option<Kernels> {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            use arch::wasm32::simd128;
            Some(Kernels {
                name: "simd128",
                dot: simd128::dot,
                l2_sq: simd128::l2_sq,
                dot_batch: simd128::dot_batch,
                l2_sq_batch: simd128::l2_sq_batch,
                popcount: simd128::popcount,
                hamming: simd128::hamming,
                fastscan: simd128::fastscan,
                ex_dot: simd128::ex_dot,
            })
        }
        #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
        {
            None
        }
    }

    /// Short name of this implementation: `"scalar"`, `"sse2"`, `"avx2"`, `"avx512"`, `"neon"`
    /// or `"simd128"`.
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

    /// FastScan lookup sums over blocks of 32 4-bit codes; see [`arch::all::fastscan`] for the
    /// layout. Exact integers: every implementation returns the same values.
    #[inline]
    pub fn fastscan(&self, luts: &[u8], blocks: &[u8], out: &mut [u32]) {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.fastscan)(luts, blocks, out) }
    }

    /// Dot product of an extended RaBitQ code (`signs`, `width`-bit `levels`) and `q`; see
    /// [`arch::all::ex_dot`] for the layout. The same bits as [`dot`](Self::dot) of the decoded
    /// vector and `q`.
    #[inline]
    pub fn ex_dot(&self, signs: &[u8], levels: &[u8], width: usize, q: &[f32]) -> f32 {
        // SAFETY: a `Kernels` is only constructed with functions whose CPU features are present.
        unsafe { (self.ex_dot)(signs, levels, width, q) }
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
