//! The native side of `bench/node/kernels.mjs`: the same workload (one query against ~8 MB of
//! rows, the same xorshift data, best of 5 timed calls) for every native kernel variant, so the
//! wasm builds can be compared with native in ratios. Prints a table and writes
//! `target/bench/native-kernels.json`, which the Node benchmark reads.
//!
//! `cargo bench -p shoal-kernels --bench same_as_wasm`

use std::hint::black_box;
use std::time::Instant;

use shoal_kernels::Kernels;

const BYTES: usize = 8_000_000;
const MIN_SECS: f64 = 0.3;
const DIMS: [usize; 5] = [50, 128, 384, 768, 1536];

/// The data of the wasm `KernelBench` (bindings-js/src/lib.rs), value for value.
fn data(dim: usize, rows: usize) -> (Vec<f32>, Vec<f32>) {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0
    };
    let query = (0..dim).map(|_| next()).collect();
    let rows = (0..dim * rows).map(|_| next()).collect();
    (query, rows)
}

fn measure(k: Kernels, kernel: &str, dim: usize) -> f64 {
    let rows_n = (BYTES / (dim * 4)).max(1);
    let (query, rows) = data(dim, rows_n);
    let mut out = vec![0f32; rows_n];
    let mut run = |iters: usize| {
        for _ in 0..iters {
            if kernel == "dot" {
                k.dot_batch(black_box(&query), black_box(&rows), black_box(&mut out));
            } else {
                k.l2_sq_batch(black_box(&query), black_box(&rows), black_box(&mut out));
            }
        }
    };
    run(2);
    let mut iters = 1;
    let mut best;
    loop {
        let t = Instant::now();
        run(iters);
        let s = t.elapsed().as_secs_f64();
        if s >= MIN_SECS / 5.0 {
            best = s / iters as f64;
            break;
        }
        iters *= 2;
    }
    for _ in 0..4 {
        let t = Instant::now();
        run(iters);
        best = best.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    (rows_n * dim * 4) as f64 / best / 1e9
}

fn main() {
    let variants: Vec<Kernels> = Kernels::available().collect();
    println!("native kernels: one query vs ~{} MB of rows, GB/s of rows read (best of 5)", BYTES / 1_000_000);
    print!("| kernel | dim |");
    for k in &variants {
        print!(" {} |", k.name());
    }
    println!(" best/scalar |");
    let mut json = Vec::new();
    for kernel in ["dot", "l2"] {
        for dim in DIMS {
            print!("| {kernel} | {dim} |");
            let mut scalar = 0.0;
            let mut best: f64 = 0.0;
            for k in &variants {
                let g = measure(*k, kernel, dim);
                if k.name() == "scalar" {
                    scalar = g;
                }
                best = best.max(g);
                print!(" {g:.2} |");
                json.push(format!(r#"{{"kernel":"{kernel}","dim":{dim},"variant":"{}","gbps":{g:.4}}}"#, k.name()));
            }
            println!(" {:.2} |", best / scalar);
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    std::fs::create_dir_all(&dir).expect("create target/bench");
    std::fs::write(dir.join("native-kernels.json"), format!("[{}]\n", json.join(","))).expect("write results");
}
