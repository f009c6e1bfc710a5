//! Throughput of every kernel × dimension × variant usable on this machine.
//!
//! `cargo bench -p shoal-kernels` (about 2 minutes); filter with e.g. `-- dot/` or `-- /384`.
//! Benchmark ids read `kernel/variant/dimension`; criterion reports GB/s of input read:
//! * `dot`, `l2_sq`: one pair of `d`-float vectors (`8·d` bytes, in L1);
//! * `dot_batch`: one query against 4096 rows of `d` floats (`16 KiB·d` of rows, L2/L3);
//! * `hamming`: one code against 4096 codes of `d` bits (`⌈d/64⌉` words each);
//! * `popcount`: one array of 16, 64 or 4096 words (ids give bits);
//! * `fastscan`: 256 blocks of 32 `d`-bit codes against one set of lookup tables.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use shoal_kernels::Kernels;

const DIMS: [usize; 5] = [50, 128, 384, 768, 1536];
const ROWS: usize = 4096;
/// Popcount lengths in words (the benchmark ids give bits).
const POPCOUNT_WORDS: [usize; 3] = [16, 64, 4096];

/// Deterministic values in [-1, 1) (xorshift64*).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let r = s.wrapping_mul(0x2545_f491_4f6c_dd1d);
            (r >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn words(seed: u64, n: usize) -> Vec<u64> {
    values(seed, 2 * n).chunks_exact(2).map(|p| u64::from(p[0].to_bits()) << 32 | u64::from(p[1].to_bits())).collect()
}

fn pair_kernels(c: &mut Criterion) {
    for (kernel, f) in [("dot", Kernels::dot as fn(&Kernels, &[f32], &[f32]) -> f32), ("l2_sq", Kernels::l2_sq)] {
        let mut group = c.benchmark_group(kernel);
        for d in DIMS {
            let (a, b) = (values(1, d), values(2, d));
            group.throughput(Throughput::Bytes((2 * d * 4) as u64));
            for k in Kernels::available() {
                group.bench_with_input(BenchmarkId::new(k.name(), d), &d, |bench, _| {
                    bench.iter(|| f(&k, black_box(&a), black_box(&b)))
                });
            }
        }
        group.finish();
    }
}

fn dot_batch(c: &mut Criterion) {
    let mut group = c.benchmark_group("dot_batch");
    for d in DIMS {
        let query = values(3, d);
        let rows = values(4, d * ROWS);
        let mut out = vec![0.0f32; ROWS];
        group.throughput(Throughput::Bytes(((ROWS + 1) * d * 4) as u64));
        for k in Kernels::available() {
            group.bench_with_input(BenchmarkId::new(k.name(), d), &d, |bench, _| {
                bench.iter(|| k.dot_batch(black_box(&query), black_box(&rows), &mut out))
            });
        }
    }
    group.finish();
}

fn hamming(c: &mut Criterion) {
    let mut group = c.benchmark_group("hamming");
    for d in DIMS {
        let w = d.div_ceil(64);
        let query = words(5, w);
        let codes = words(6, w * ROWS);
        group.throughput(Throughput::Bytes(((ROWS + 1) * w * 8) as u64));
        for k in Kernels::available() {
            group.bench_with_input(BenchmarkId::new(k.name(), d), &d, |bench, _| {
                bench.iter(|| {
                    let q = black_box(&query[..]);
                    black_box(&codes).chunks_exact(w).map(|code| k.hamming(q, code)).fold(0u32, u32::wrapping_add)
                })
            });
        }
    }
    group.finish();
}

fn popcount(c: &mut Criterion) {
    let mut group = c.benchmark_group("popcount");
    for n in POPCOUNT_WORDS {
        let a = words(7, n);
        group.throughput(Throughput::Bytes((n * 8) as u64));
        for k in Kernels::available() {
            group.bench_with_input(BenchmarkId::new(k.name(), n * 64), &n, |bench, _| {
                bench.iter(|| k.popcount(black_box(&a)))
            });
        }
    }
    group.finish();
}

/// FastScan over 256 blocks (8,192 codes) of `d`-bit codes: GB/s of code bytes read.
fn fastscan(c: &mut Criterion) {
    let mut group = c.benchmark_group("fastscan");
    for d in [64usize, 128, 256, 512, 1024] {
        let groups = d / 4;
        let blocks = 256;
        let luts: Vec<u8> = words(7, groups * 2).iter().flat_map(|w| w.to_le_bytes()).map(|b| b % 61).collect();
        let codes: Vec<u8> = words(8, blocks * groups * 2).iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut out = vec![0u32; blocks * 32];
        group.throughput(Throughput::Bytes(codes.len() as u64));
        for k in Kernels::available() {
            group.bench_with_input(BenchmarkId::new(k.name(), d), &d, |bench, _| {
                bench.iter(|| k.fastscan(black_box(&luts), black_box(&codes), &mut out))
            });
        }
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

criterion_group! {
    name = benches;
    config = config();
    targets = pair_kernels, dot_batch, hamming, popcount, fastscan
}
criterion_main!(benches);
