//! Kernel implementations, one folder per target; `all` is the portable scalar reference.

pub mod all;
