//! Shoal's IVF + RaBitQ index on the benchmark datasets of `bench/datasets.py`: build time,
//! index memory, and recall@10 / QPS over a sweep of `nprobe` x `rerank`, single-threaded, one
//! query at a time, with what a query does at each point (the mean rows estimated from codes and
//! vectors re-ranked exactly, from the search's stats). Writes `~/.cache/shoal/results/shoal-<dataset>.json` in the shape of
//! `bench/peers.py`'s results (the tables of `docs/benchmarks.md` put both side by side).
//!
//! `SHOAL_ANN_DATASETS=glove-100k,gcide-256 SHOAL_ANN_BITS=1,4 cargo bench -p shoal-host --bench ann`
//! (`SHOAL_ANN_SWEEP=nprobe:rerank,...`, `SHOAL_ANN_REPEATS`, `SHOAL_ANN_PARTITIONS` narrow a run
//! down for profiling; `SHOAL_ANN_CODES_ONLY=1` builds codes-only indexes, ranked by the
//! extended-bit estimates without the full vectors; `SHOAL_ANN_SEGMENTS=8` builds the same
//! points as 8 segments of a set, sealed one after another without merges, to measure what
//! searching several segments costs against one; `SHOAL_ANN_THREADS=2` gives the build and a
//! query's segments two threads — by default everything runs on one; `SHOAL_ANN_QUERY_THREADS=1,2`
//! also times every sweep point with queries answered by 1 and by 2 threads at once, each
//! thread one query at a time, and reports both QPS).

use std::time::Instant;

use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest};

mod common;
use common::{cache, load_gt, load_vectors, pass_seconds, write_result};

fn main() {
    let threads: usize = std::env::var("SHOAL_ANN_THREADS").ok().and_then(|t| t.parse().ok()).unwrap_or(1);
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().expect("the first use of rayon's pool");
    println!("{threads} thread(s): builds, and a query's segments (one query at a time)");
    let query_threads: Vec<usize> = std::env::var("SHOAL_ANN_QUERY_THREADS")
        .map(|t| t.split(',').map(|n| n.parse().expect("SHOAL_ANN_QUERY_THREADS is a list of counts")).collect())
        .unwrap_or_default();
    let names = std::env::var("SHOAL_ANN_DATASETS").unwrap_or_else(|_| "glove-100k".into());
    for name in names.split(',') {
        let dir = cache().join("datasets").join(name);
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("meta.json")).expect("meta.json")).expect("meta.json");
        let metric = Metric::parse(meta["metric"].as_str().unwrap()).expect("metric");
        let gt_k = meta["gt_k"].as_u64().unwrap_or(100) as usize;
        let (dim, base) = load_vectors(&dir.join("base.npy"));
        let (_, queries) = load_vectors(&dir.join("queries.npy"));
        let nq = queries.len() / dim;
        let gt = load_gt(&dir.join("gt.npy"), nq, gt_k);
        // Queries taken from the base (glove-400k): each query's own row is left out of its
        // ground truth, so it is left out of the results too (one more asked for, then dropped).
        let own_rows = dir.join("query_rows.npy");
        let own: Option<Vec<u32>> = own_rows.exists().then(|| load_gt(&own_rows, nq, 1));
        let n = base.len() / dim;
        println!("== {name}: {n} x {dim}-d, {}, {nq} queries", metric.name());

        let bits_list = std::env::var("SHOAL_ANN_BITS").unwrap_or_else(|_| "1".into());
        for bits in bits_list.split(',').map(|b| b.trim().parse::<u32>().expect("SHOAL_ANN_BITS is a list of 1..=8")) {
            let codes_only = std::env::var("SHOAL_ANN_CODES_ONLY").is_ok_and(|v| v == "1");
            println!("-- {bits}-bit codes{}", if codes_only { ", codes only (no full vectors)" } else { "" });
            let ids: Vec<u64> = (0..n as u64).collect();
            let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
            let t = Instant::now();
            let mut params = IvfParams { bits: Some(bits), codes_only, ..IvfParams::default() };
            if let Some(p) = std::env::var("SHOAL_ANN_PARTITIONS").ok().and_then(|p| p.parse().ok()) {
                params.partitions = Some(p);
            }
            let segments: usize = std::env::var("SHOAL_ANN_SEGMENTS").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
            if segments <= 1 {
                col.insert(&ids, &base).unwrap();
                col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
            } else {
                col.set_index_kind(IndexKind::IvfRabitq(params)).unwrap();
                col.set_merge_policy(shoal_core::set::MergePolicy { merge_factor: usize::MAX, ..Default::default() });
                for s in 0..segments {
                    let (a, b) = (s * n / segments, (s + 1) * n / segments);
                    col.insert(&ids[a..b], &base[a * dim..b * dim]).unwrap();
                    col.seal();
                }
                assert_eq!(col.segment_count(), segments);
                println!("{segments} segments of {} points each", n / segments);
            }
            let build_s = t.elapsed().as_secs_f64();
            let seg = col.segment(0).unwrap();
            let (index, _, defaults) = seg.ivf().unwrap();
            let index_bytes: u64 = (0..col.segment_count())
                .map(|i| {
                    col.segment(i)
                        .unwrap()
                        .reader()
                        .sections()
                        .iter()
                        .filter(|e| e.kind >= 16)
                        .map(|e| e.length)
                        .sum::<u64>()
                })
                .sum();
            let vector_bytes = (n * dim * 4) as u64;
            println!(
                "build {build_s:.2} s; nlist {} (segment 0); index (codes, factors, centroids) {:.1} MB = {:.1} B/vector; full vectors {:.1} MB",
                index.nlist,
                index_bytes as f64 / 1e6,
                index_bytes as f64 / n as f64,
                vector_bytes as f64 / 1e6
            );
            let limit = if own.is_some() { 11 } else { 10 };
            let requests: Vec<SearchRequest> =
                queries.chunks_exact(dim).map(|q| SearchRequest::nearest(q.to_vec(), limit)).collect();
            let mut out = Vec::new();
            let mut points = Vec::new();
            let mut settings: Vec<(Option<u32>, Option<u32>)> = vec![(None, None)];
            if let Ok(only) = std::env::var("SHOAL_ANN_SWEEP") {
                // `nprobe:rerank,...`: just these points (for profiling).
                for p in only.split(',').filter(|p| !p.is_empty()) {
                    let (a, b) = p.split_once(':').expect("SHOAL_ANN_SWEEP is nprobe:rerank,...");
                    settings.push((Some(a.parse().unwrap()), Some(b.parse().unwrap())));
                }
            } else {
                // Up to every partition: the sweep, not the index, must not be what caps recall.
                let nlist = index.nlist as u32;
                let steps = [8u32, 12, 16, 24, 32, 48, 64, 96, 128, 160, 192, 256, 384, 512, 768, 1024];
                for nprobe in steps.into_iter().filter(|&p| p < nlist).chain([nlist]) {
                    // With extra bits the candidates are chosen by the extended-bit estimates:
                    // shallow depths reach the recall 1-bit codes need deep ones for.
                    let reranks = if bits > 1 { [1u32, 2, 4, 8, 16, 32] } else { [8u32, 16, 32, 64, 128, 256] };
                    for rerank in reranks {
                        settings.push((Some(nprobe), Some(rerank)));
                    }
                }
            }
            println!(
                "{:>7} {:>7} {:>9} {:>10} {:>10} {:>10} {:>10} {:>9}",
                "nprobe", "rerank", "recall@10", "QPS", "QPS best", "ms/query", "estimated", "reranked"
            );
            for (nprobe, rerank) in settings {
                let reqs: Vec<SearchRequest> = requests
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        r.params.nprobe = nprobe;
                        r.params.rerank = rerank;
                        r
                    })
                    .collect();
                // Recall, and what a query does (rows estimated, vectors re-ranked exactly): from
                // an untimed pass.
                let (mut hits, mut estimated, mut scanned) = (0, 0u64, 0u64);
                for (q, r) in reqs.iter().enumerate() {
                    let res = col.search(r).unwrap();
                    estimated += res.stats.estimated;
                    scanned += res.stats.scanned;
                    let truth = &gt[q * gt_k..q * gt_k + 10];
                    let skip = own.as_ref().map(|o| u64::from(o[q]));
                    let results = res.points.iter().filter(|p| p.id.as_num() != skip).take(10);
                    hits += results.filter(|p| p.id.as_num().is_some_and(|id| truth.contains(&(id as u32)))).count();
                }
                let recall = hits as f64 / (10 * nq) as f64;
                let (estimated, scanned) = (estimated as f64 / nq as f64, scanned as f64 / nq as f64);
                let repeats = std::env::var("SHOAL_ANN_REPEATS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
                let times = pass_seconds(&col, &reqs, &mut out, repeats);
                let best = times.iter().copied().fold(f64::INFINITY, f64::min);
                let secs = common::median(times);
                let qps = nq as f64 / secs;
                // The peers' driver reports its fastest pass: the same statistic, beside the median.
                let qps_best = nq as f64 / best;
                // Queries in parallel: the median pass of each thread count, alternating.
                let mut by_threads: Vec<Vec<f64>> = vec![Vec::new(); query_threads.len()];
                for _ in 0..repeats {
                    for (times, &t) in by_threads.iter_mut().zip(&query_threads) {
                        times.extend(common::pass_seconds_threads(&col, &reqs, t, 1));
                    }
                }
                let qps_threads: serde_json::Map<String, serde_json::Value> = query_threads
                    .iter()
                    .zip(by_threads)
                    .map(|(t, times)| (t.to_string(), (nq as f64 / common::median(times)).into()))
                    .collect();
                let (np, rr) = (nprobe.unwrap_or(defaults.nprobe as u32), rerank.unwrap_or(defaults.rerank as u32));
                let label = if nprobe.is_none() {
                    format!(" (defaults; adaptive ratio {})", defaults.probe_ratio)
                } else {
                    String::new()
                };
                let parallel: String =
                    qps_threads.iter().map(|(t, q)| format!("  x{t} {:.0}", q.as_f64().unwrap())).collect();
                println!(
                    "{np:>7} {rr:>7} {recall:>9.4} {qps:>10.0} {qps_best:>10.0} {:>10.3} {estimated:>10.0} {scanned:>9.0}{parallel}{label}",
                    1e3 * secs / nq as f64
                );
                let mut point = serde_json::json!({
                    "params": {"nprobe": np, "rerank": rr, "defaults": nprobe.is_none()},
                    "recall": recall, "qps": qps, "qps_best": qps_best,
                    "estimated_per_query": estimated, "reranked_per_query": scanned,
                });
                if !qps_threads.is_empty() {
                    point["qps_threads"] = qps_threads.into();
                }
                points.push(point);
            }
            // QPS at a recall target is read off the frontier of these points, interpolated
            // between the two around the target, for every engine alike: `bench/plots.py`.
            let results = serde_json::json!({
                "engine": "shoal", "dataset": name, "threads": threads, "bits": bits, "segments": segments,
                "codes_only": codes_only, "build_seconds": build_s, "index_bytes": index_bytes, "vector_bytes": vector_bytes,
                "nlist": index.nlist, "points": points,
            });
            let mut file = match (bits, codes_only) {
                (_, true) => format!("shoal-{name}-b{bits}-codes"),
                (1, false) => format!("shoal-{name}"),
                _ => format!("shoal-{name}-b{bits}"),
            };
            if segments > 1 {
                file.push_str(&format!("-s{segments}"));
            }
            if threads > 1 {
                file.push_str(&format!("-t{threads}"));
            }
            if !query_threads.is_empty() {
                file.push_str("-queries-parallel");
            }
            let file = format!("{file}.json");
            write_result(&file, &results);
        }
    }
}
