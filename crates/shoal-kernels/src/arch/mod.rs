//! Kernel implementations, one folder per target; `all` is the portable scalar reference.
//!
//! * [`all`]: the portable scalar reference, available everywhere.
//! * `generic` (private): each float algorithm written once against a small vector trait.
//! * `x86_64`, `aarch64`, `wasm32`: per-target glue — the trait implementation for the target's
//!   vector type plus `#[target_feature]` entry points that call the generic code, and the
//!   target's popcount kernels.

pub mod all;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64", all(target_arch = "wasm32", target_feature = "simd128")))]
pub(crate) mod generic;

#[cfg(target_arch = "x86_64")]
pub mod x86_64;

#[cfg(target_arch = "aarch64")]
pub mod aarch64;

#[cfg(target_arch = "wasm32")]
pub mod wasm32;
