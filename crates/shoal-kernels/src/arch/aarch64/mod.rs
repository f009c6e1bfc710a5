//! aarch64 kernels. NEON (Advanced SIMD) is part of the aarch64 baseline.

pub mod neon;
