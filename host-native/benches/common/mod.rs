#![allow(dead_code)] // each bench uses a subset
//! Helpers shared by the dataset benchmarks (`ann`, `filtered`, `seal_phases`): where `bench/datasets.py`
//! puts its files, and reading them.

use std::path::{Path, PathBuf};

use shoal_core::{Collection, ScoredPoint, SearchRequest};
use shoal_host::input::VectorFile;

/// `~/.cache/shoal` (or `$SHOAL_CACHE`), where `bench/datasets.py` writes its datasets.
pub fn cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("SHOAL_CACHE") {
        return PathBuf::from(dir);
    }
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".cache/shoal")
}

/// `(dim, row-major f32 rows)` of a vector file.
pub fn load_vectors(path: &Path) -> (usize, Vec<f32>) {
    let f = VectorFile::open(path, None, None)
        .unwrap_or_else(|e| panic!("{}: {e} (run bench/datasets.py)", path.display()));
    let mut v = vec![0f32; f.rows() * f.dim()];
    f.read_rows(0, &mut v).expect("read vectors");
    (f.dim(), v)
}

/// The median of `v` (the upper one for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Writes `value` as pretty JSON to `~/.cache/shoal/results/<name>`.
pub fn write_result(name: &str, value: &serde_json::Value) {
    let out_dir = cache().join("results");
    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(out_dir.join(name), serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// Seconds of one pass of `reqs` through `search_into`, the median of `repeats` passes.
pub fn median_pass_seconds(
    col: &Collection,
    reqs: &[SearchRequest],
    out: &mut Vec<ScoredPoint>,
    repeats: usize,
) -> f64 {
    median(pass_seconds(col, reqs, out, repeats))
}

/// The time of each of `repeats` passes over `reqs`, in order.
pub fn pass_seconds(col: &Collection, reqs: &[SearchRequest], out: &mut Vec<ScoredPoint>, repeats: usize) -> Vec<f64> {
    (0..repeats.max(1))
        .map(|_| {
            let t = std::time::Instant::now();
            for r in reqs {
                col.search_into(std::hint::black_box(r), out).unwrap();
            }
            t.elapsed().as_secs_f64()
        })
        .collect()
}

/// Wall seconds of each of `repeats` passes over `reqs` by `threads` threads at once (query `i`
/// on thread `i % threads`, each with its own result buffer): queries in parallel, as a server
/// answers concurrent requests.
pub fn pass_seconds_threads(col: &Collection, reqs: &[SearchRequest], threads: usize, repeats: usize) -> Vec<f64> {
    (0..repeats.max(1))
        .map(|_| {
            let t = std::time::Instant::now();
            std::thread::scope(|s| {
                for j in 0..threads {
                    s.spawn(move || {
                        let mut out = Vec::new();
                        for r in reqs.iter().skip(j).step_by(threads) {
                            col.search_into(std::hint::black_box(r), &mut out).unwrap();
                        }
                    });
                }
            });
            t.elapsed().as_secs_f64()
        })
        .collect()
}

/// The int32 ground-truth matrix (`queries x k`) of a `.npy` file.
pub fn load_gt(path: &Path, queries: usize, k: usize) -> Vec<u32> {
    let bytes = std::fs::read(path).expect("read gt.npy");
    assert_eq!(&bytes[..6], b"\x93NUMPY", "gt.npy is an npy file");
    let header_len = if bytes[6] == 1 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize + 10
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize + 12
    };
    let header = String::from_utf8_lossy(&bytes[..header_len]);
    assert!(header.contains("'<i4'") && header.contains("False"), "gt.npy must be C-order int32: {header}");
    let data = &bytes[header_len..];
    assert_eq!(data.len(), queries * k * 4, "gt.npy shape");
    data.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as u32).collect()
}
