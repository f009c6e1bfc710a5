//! Exact search throughput against memory bandwidth, measured in the same run.
//!
//! Data: GloVe 6B 50-d (400,000 x 50, cosine) from `~/.cache/shoal/glove50/vectors.npy`
//! (`python3 bench/prepare_glove.py`), or, when absent, 400,000 x 50 clustered synthetic vectors
//! (said in the output). Baseline: one core streaming the same vector bytes as fast as it can —
//! the faster of a plain read loop (eight independent u64 accumulators) and the best popcount
//! kernel (AVX-512 VPOPCNTDQ where present) over them: the bytes exact search must read per query.
//! Reports the median of several runs for every kernel variant.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use shoal_core::{Collection, CollectionConfig, Kernels, Metric, SearchRequest};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds for one pass of the read-bandwidth baseline over `bytes`.
fn read_pass(words: &[u64]) -> f64 {
    let t = Instant::now();
    let mut acc = [0u64; 8];
    for c in words.chunks_exact(8) {
        for i in 0..8 {
            acc[i] = acc[i].wrapping_add(c[i]);
        }
    }
    black_box(acc);
    t.elapsed().as_secs_f64()
}

fn load() -> (String, usize, Vec<f32>) {
    let path = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".cache/shoal/glove50/vectors.npy");
    if let Ok(file) = shoal_host::input::VectorFile::open(&path, None, None) {
        let mut v = vec![0f32; file.rows() * file.dim()];
        file.read_rows(0, &mut v).expect("read GloVe");
        return (format!("GloVe 6B {} x {}-d", file.rows(), file.dim()), file.dim(), v);
    }
    eprintln!("GloVe not prepared (python3 bench/prepare_glove.py): using clustered synthetic data");
    (
        String::from("clustered synthetic 400000 x 50-d (seed 42)"),
        50,
        shoal_testkit::clustered_vectors(42, 400_000, 50, 2000),
    )
}

fn main() {
    let (name, dim, vectors) = load();
    let n = vectors.len() / dim;
    let ids: Vec<u64> = (0..n as u64).collect();
    let mut col = Collection::new(CollectionConfig { dim, metric: Metric::Cosine }).unwrap();
    col.insert(&ids, &vectors).unwrap();
    col.seal();
    let seg = col.segment(0).unwrap();
    let stored = seg.vectors().expect("a flat segment keeps its vectors");
    let bytes = (stored.len() * 4) as f64;
    let words: Vec<u64> = bytemuck::cast_slice::<f32, u64>(&stored[..stored.len() / 2 * 2]).to_vec();
    let queries: Vec<Vec<f32>> = (0..32).map(|i| stored[i * 997 % n * dim..][..dim].to_vec()).collect();

    println!("exact search, {name}, cosine, top-10, one thread");
    read_pass(&words);
    let plain = median((0..15).map(|_| read_pass(&words)).collect());
    let best = Kernels::best();
    let popcount_pass = || {
        let t = Instant::now();
        black_box(best.popcount(black_box(&words)));
        t.elapsed().as_secs_f64()
    };
    popcount_pass();
    let popcount = median((0..15).map(|_| popcount_pass()).collect());
    let base = plain.min(popcount);
    println!(
        "baseline read: {:.2} GB/s (plain loop {:.2} GB/s, {} popcount {:.2} GB/s; {:.1} MB per pass)",
        bytes / base / 1e9,
        bytes / plain / 1e9,
        best.name(),
        bytes / popcount / 1e9,
        bytes / 1e6
    );
    println!("{:<8} {:>10} {:>9} {:>12}", "kernels", "ms/query", "GB/s", "vs baseline");
    for k in Kernels::available() {
        col.set_kernels(k);
        let mut times = Vec::new();
        for round in 0..5 {
            let t = Instant::now();
            for q in &queries {
                black_box(col.search(&SearchRequest::nearest(q.clone(), 10)).unwrap());
            }
            if round > 0 {
                times.push(t.elapsed().as_secs_f64() / queries.len() as f64);
            }
        }
        let per_query = median(times);
        println!(
            "{:<8} {:>10.3} {:>9.2} {:>11.0}%",
            k.name(),
            per_query * 1e3,
            bytes / per_query / 1e9,
            100.0 * base / per_query
        );
    }
}
