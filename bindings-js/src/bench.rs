//! Kernel benchmark exports (feature `bench`): synthetic rows and timed batch-kernel loops for
//! `bench/node/kernels.mjs`. Not part of the published package.

use shoal_core::Kernels;
use wasm_bindgen::prelude::*;

/// Synthetic data for the kernel benchmarks: a query and `rows` rows of `dim` floats.
#[wasm_bindgen]
pub struct KernelBench {
    query: Vec<f32>,
    rows: Vec<f32>,
    out: Vec<f32>,
    kernels: Kernels,
}

#[wasm_bindgen]
impl KernelBench {
    /// Generates the data (a fixed xorshift sequence in `[-1, 1)`).
    #[wasm_bindgen(constructor)]
    pub fn new(dim: usize, rows: usize) -> KernelBench {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0
        };
        let query = (0..dim).map(|_| next()).collect();
        let rows_data = (0..dim * rows).map(|_| next()).collect();
        KernelBench { query, rows: rows_data, out: vec![0.0; rows], kernels: Kernels::best() }
    }

    fn checksum(&self, iters: usize) -> f64 {
        iters as f64 * self.out.iter().map(|&x| x as f64).sum::<f64>()
    }

    /// Runs `dot_batch` over all rows `iters` times; returns a checksum of the outputs.
    pub fn dot(&mut self, iters: usize) -> f64 {
        for _ in 0..iters {
            let (q, r) = (core::hint::black_box(&self.query[..]), core::hint::black_box(&self.rows[..]));
            self.kernels.dot_batch(q, r, core::hint::black_box(&mut self.out[..]));
        }
        self.checksum(iters)
    }

    /// Runs `l2_sq_batch` over all rows `iters` times; returns a checksum of the outputs.
    pub fn l2(&mut self, iters: usize) -> f64 {
        for _ in 0..iters {
            let (q, r) = (core::hint::black_box(&self.query[..]), core::hint::black_box(&self.rows[..]));
            self.kernels.l2_sq_batch(q, r, core::hint::black_box(&mut self.out[..]));
        }
        self.checksum(iters)
    }
}

/// Kernel benchmark: `dot_batch` of one query against `rows` generated rows of `dim` floats,
/// `iters` times, inside wasm. Returns a checksum (time the call from JavaScript; data
/// generation is included, so use many `iters` or [`KernelBench`]).
#[wasm_bindgen]
pub fn bench_dot(dim: usize, rows: usize, iters: usize) -> f64 {
    KernelBench::new(dim, rows).dot(iters)
}

/// Kernel benchmark: like [`bench_dot`] with `l2_sq_batch`.
#[wasm_bindgen]
pub fn bench_l2(dim: usize, rows: usize, iters: usize) -> f64 {
    KernelBench::new(dim, rows).l2(iters)
}
