//! x86_64 kernels: SSE2 (baseline), AVX2, AVX-512F (+ VPOPCNTDQ) and the `popcnt` instruction.
//!
//! Which of these may run is decided by the `has_*` functions: with the `std` feature they
//! detect the running CPU (`is_x86_feature_detected!`), without it they report the features
//! enabled at compile time (`-C target-feature` / `-C target-cpu`).

pub mod avx2;
pub mod avx512;
pub mod popcnt;
pub mod sse2;

/// Whether the `popcnt` instruction is usable.
pub(crate) fn has_popcnt() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "popcnt")
    }
}

/// Whether AVX2 and `popcnt` are usable (every AVX2 CPU has `popcnt`; the AVX2 bit kernels
/// use it for short inputs).
pub(crate) fn has_avx2() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(target_feature = "avx2", target_feature = "popcnt"))
    }
}

/// Whether AVX-512F and everything [`has_avx2`] requires are usable (the AVX-512 variant falls
/// back to the AVX2 bit kernels without VPOPCNTDQ).
pub(crate) fn has_avx512f() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512f") && has_avx2()
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(target_feature = "avx512f") && has_avx2()
    }
}

/// Whether AVX-512BW (with AVX-512F) is usable.
pub(crate) fn has_avx512bw() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(target_feature = "avx512f", target_feature = "avx512bw"))
    }
}

/// Whether AVX-512 VPOPCNTDQ (with AVX-512F) is usable.
pub(crate) fn has_avx512_vpopcntdq() -> bool {
    #[cfg(feature = "std")]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vpopcntdq")
    }
    #[cfg(not(feature = "std"))]
    {
        cfg!(all(target_feature = "avx512f", target_feature = "avx512vpopcntdq"))
    }
}
