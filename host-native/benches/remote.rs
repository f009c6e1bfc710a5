//! Segments read by byte ranges (`shoal search http://…`): what a query costs when the segment
//! lies on a static server — requests, dependent round trips (waves), bytes and time per query,
//! just after open (cold) and with a cache (warm), format 1 against format 2
//! (`--layout ranges`), and format 2 with each wave's ranges in one multipart request
//! (`--multipart-ranges`), with recall@10 against the exact neighbours; and format 2 with its
//! centroids coded (`IVF_CENTROID_CODES`, what a writer does past 8 MiB of centroids, forced
//! here by a zero budget: each query first fetches the centroids it may probe).
//!
//! Per dataset (`SHOAL_REMOTE_DATASETS`, default `glove-400k,synthetic-1m-128`): one IVF-RaBitQ
//! index (1 bit, default build and search settings) written in both formats to nginx's folder,
//! read through `scripts/range-proxy.mjs`, which adds `SHOAL_REMOTE_LATENCY_MS` (default 20)
//! to every request. `SHOAL_REMOTE_QUERIES` (default 200) queries one at a time:
//! - cold: a reader whose cache is emptied before each query (what a query costs just after
//!   open: only the bootstrap is in memory);
//! - warm: a reader with a 1 GiB cache, timed on its second pass over the queries.
//!
//! `SHOAL_REMOTE_MERGE_GAP` (bytes, default 16 KiB; 1 KiB for the multipart reads): ranges this
//! close are fetched as one.
//!
//! Writes `~/.cache/shoal/results/remote-<dataset>.json`, and keeps the format-2 file and the
//! queries in `~/.cache/shoal/remote/` for `bench/node/remote.mjs` (Node and Chromium).
//! `python3 bench/datasets.py --only synthetic-1m-128 && cargo bench -p shoal-host --bench remote`

use std::time::Instant;

use serde_json::json;
use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_host::remote::{HttpRanges, RemoteCollection, Trip};

mod common;
use common::{cache, load_gt, load_vectors, write_result};

#[path = "../tests/support/servers.rs"]
mod servers;
use servers::{Nginx, Proxy};

/// Per-query costs of one pass.
struct Pass {
    trips: Vec<Trip>,
    ms: Vec<f64>,
    recall: f64,
}

impl Pass {
    fn summary(&self) -> serde_json::Value {
        let n = self.trips.len().max(1) as f64;
        let mean = |f: &dyn Fn(&Trip) -> f64| self.trips.iter().map(f).sum::<f64>() / n;
        let max = |f: &dyn Fn(&Trip) -> f64| self.trips.iter().map(f).fold(0.0, f64::max);
        let mut ms = self.ms.clone();
        ms.sort_by(f64::total_cmp);
        let pct = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
        json!({
            "waves_mean": mean(&|t| f64::from(t.waves)),
            "waves_max": max(&|t| f64::from(t.waves)),
            "requests_mean": mean(&|t| f64::from(t.requests)),
            "requests_max": max(&|t| f64::from(t.requests)),
            "kb_mean": mean(&|t| t.bytes as f64 / 1e3),
            "kb_max": max(&|t| t.bytes as f64 / 1e3),
            "ms_p50": pct(0.5),
            "ms_p90": pct(0.9),
            "recall_at_10": self.recall,
        })
    }
}

fn run_pass(col: &RemoteCollection, reqs: &[SearchRequest], gt: &[u32], k: usize) -> Pass {
    let (mut trips, mut ms, mut hits) = (Vec::new(), Vec::new(), 0usize);
    for (i, r) in reqs.iter().enumerate() {
        let t = Instant::now();
        let (res, trip) = col.search(r).expect("search");
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        trips.push(trip);
        let want = &gt[i * k..(i + 1) * k];
        hits += res.points.iter().filter(|p| p.id.as_num().is_some_and(|id| want.contains(&(id as u32)))).count();
    }
    Pass { trips, ms, recall: hits as f64 / (reqs.len() * k) as f64 }
}

fn main() {
    let datasets = std::env::var("SHOAL_REMOTE_DATASETS").unwrap_or_else(|_| "glove-400k,synthetic-1m-128".into());
    let latency: u32 = std::env::var("SHOAL_REMOTE_LATENCY_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let nq: usize = std::env::var("SHOAL_REMOTE_QUERIES").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let gap_set: Option<u64> = std::env::var("SHOAL_REMOTE_MERGE_GAP").ok().and_then(|v| v.parse().ok());
    let gap = gap_set.unwrap_or(shoal_core::remote::MERGE_GAP);
    let gap_set = gap_set.is_some();
    let nginx = Nginx::start();
    let proxy = Proxy::start_with_latency(&nginx.base, latency);
    for name in datasets.split(',') {
        let dir = cache().join("datasets").join(name);
        let meta: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("meta.json")).expect("meta.json: run bench/datasets.py"))
                .unwrap();
        let metric = Metric::parse(meta["metric"].as_str().unwrap()).unwrap();
        let (dim, base) = load_vectors(&dir.join("base.npy"));
        let (_, queries) = load_vectors(&dir.join("queries.npy"));
        let n = base.len() / dim;
        let nq = nq.min(queries.len() / dim);
        let k = 10;
        let gt_k = meta["gt_k"].as_u64().unwrap_or(100) as usize;
        let wide = load_gt(&dir.join("gt.npy"), queries.len() / dim, gt_k);
        let gt: Vec<u32> = wide.chunks_exact(gt_k).flat_map(|row| row[..k].to_vec()).collect();
        println!(
            "== {name}: {n} x {dim}-d ({}), {nq} queries, +{latency} ms per request, ranges {gap} B apart merged",
            metric.name()
        );
        let t = Instant::now();
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        let ids: Vec<u64> = (0..n as u64).collect();
        col.insert(&ids, &base).unwrap();
        drop(base);
        col.seal_with(IndexKind::IvfRabitq(IvfParams { bits: Some(1), ..IvfParams::default() })).unwrap();
        let v2 = shoal_core::remote::write_for_ranges(col.segment(0).unwrap()).unwrap();
        let coded = shoal_core::remote::write_for_ranges_with(col.segment(0).unwrap(), 0).unwrap();
        let v1 = col.to_bytes().unwrap().to_vec();
        drop(col);
        println!(
            "built in {:.1} s: format 1 {} MB, format 2 {} MB",
            t.elapsed().as_secs_f64(),
            v1.len() / 1_000_000,
            v2.as_slice().len() / 1_000_000
        );
        let hint = u64::from_le_bytes(v2.as_slice()[40..48].try_into().unwrap());
        let coded_hint = u64::from_le_bytes(coded.as_slice()[40..48].try_into().unwrap());
        // The format-2 file and the queries with their neighbours, for the JavaScript benchmark
        // (bench/node/remote.mjs: the same reads from Node and Chromium).
        let kept = cache().join("remote");
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join(format!("{name}.v2.shoal")), v2.as_slice()).unwrap();
        let js_queries: Vec<serde_json::Value> = queries
            .chunks_exact(dim)
            .take(nq)
            .map(|q| json!({"vector": q.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>(), "limit": k}))
            .collect();
        let js_fixture = json!({"dataset": name, "n": n, "dim": dim, "metric": metric.name(), "bootstrapLen": hint,
            "requests": js_queries, "truth": gt.chunks_exact(k).take(nq).collect::<Vec<_>>()});
        std::fs::write(kept.join(format!("{name}.json")), js_fixture.to_string()).unwrap();
        let hints = std::collections::HashMap::from([
            ("v1", shoal_core::remote::OPEN_PREFIX),
            ("v2", hint),
            ("v2-multipart", hint),
            ("v2-coded", coded_hint),
            ("v2-coded-multipart", coded_hint),
        ]);
        let (u1, u2) = (nginx.put("v1.shoal", &v1), nginx.put("v2.shoal", v2.as_slice()));
        let u3 = nginx.put("v2-coded.shoal", coded.as_slice());
        // Format 2 also with each wave's ranges in one multipart request (nginx answers them).
        let urls = [
            ("v1", u1),
            ("v2", u2.clone()),
            ("v2-multipart", u2),
            ("v2-coded", u3.clone()),
            ("v2-coded-multipart", u3),
        ];
        drop((v1, v2, coded));
        let reqs: Vec<SearchRequest> =
            queries.chunks_exact(dim).take(nq).map(|q| SearchRequest::nearest(q.to_vec(), k)).collect();
        let mut layouts = serde_json::Map::new();
        for (layout, url) in urls {
            let url = url.replace(&nginx.base, &proxy.base);
            let t = Instant::now();
            // Opened as a set manifest's entry would open it: with the bootstrap hint (format 2).
            let multipart = layout.ends_with("-multipart");
            let source = || Box::new(HttpRanges::new(&url).with_multipart(multipart));
            // (With multipart requests the default gap is MULTIPART_MERGE_GAP, as in `shoal search`.)
            let gap = if multipart && !gap_set { shoal_host::remote::MULTIPART_MERGE_GAP } else { gap };
            let mut cold = RemoteCollection::open_with(source(), 0, hints[layout]).expect("open");
            cold.set_merge_gap(gap);
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            let opened = cold.opened();
            let cold_pass = run_pass(&cold, &reqs, &gt, k);
            let mut warm = RemoteCollection::open(source(), 1 << 30).expect("open");
            warm.set_merge_gap(gap);
            run_pass(&warm, &reqs, &gt, k);
            let warm_pass = run_pass(&warm, &reqs, &gt, k);
            let (c, w) = (cold_pass.summary(), warm_pass.summary());
            println!(
                "{layout}: open {} requests in {} waves, {:.1} KB, {open_ms:.0} ms | cold per query {:.2} waves (max {}), {:.1} requests (max {}), {:.0} KB (max {:.0}), p50 {:.0} ms, p90 {:.0} ms | warm {:.2} waves, {:.1} requests, {:.1} KB, p50 {:.1} ms | recall@10 {:.4}",
                opened.requests,
                opened.waves,
                opened.bytes as f64 / 1e3,
                c["waves_mean"].as_f64().unwrap(),
                c["waves_max"],
                c["requests_mean"].as_f64().unwrap(),
                c["requests_max"],
                c["kb_mean"].as_f64().unwrap(),
                c["kb_max"].as_f64().unwrap(),
                c["ms_p50"].as_f64().unwrap(),
                c["ms_p90"].as_f64().unwrap(),
                w["waves_mean"].as_f64().unwrap(),
                w["requests_mean"].as_f64().unwrap(),
                w["kb_mean"].as_f64().unwrap(),
                w["ms_p50"].as_f64().unwrap(),
                c["recall_at_10"].as_f64().unwrap(),
            );
            layouts.insert(
                layout.into(),
                json!({
                    "open": {"requests": opened.requests, "waves": opened.waves, "kb": opened.bytes as f64 / 1e3, "ms": open_ms},
                    "cold": c,
                    "warm": w,
                }),
            );
        }
        write_result(
            &format!(
                "remote-{name}{}.json",
                if gap == shoal_core::remote::MERGE_GAP { String::new() } else { format!("-gap{gap}") }
            ),
            &json!({"dataset": name, "n": n, "dim": dim, "metric": metric.name(), "queries": nq,
                    "latency_ms": latency, "merge_gap": gap, "index": "ivf-rabitq, 1 bit, default settings", "layouts": layouts}),
        );
    }
}
