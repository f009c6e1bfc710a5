//! wasm32 kernels. WebAssembly has no run-time feature detection: the SIMD128 kernels exist
//! only when the module is compiled with `-C target-feature=+simd128`.

#[cfg(target_feature = "simd128")]
pub mod simd128;
