//! Full-text search on GCIDE (issue 5), natively: the queries and relevance set of
//! `bench/text.py prepare`, through `Collection::search` with `text` (one `text` payload field;
//! the collection's vectors are a 1-d placeholder), single-threaded, top-10. Latency per query
//! (mean, p50, p99 per query kind; the best of 3 passes by total time), relevance (the entry's
//! own document in the top 10), and the deadline experiment: a heavy workload (the corpus
//! repeated `SHOAL_TEXT_COPIES` times, default 8; disjunctions of common words and phrases of
//! them) untimed, then with `timeout_ms` = 5. Writes `~/.cache/shoal/results/text-shoal.json`.
//!
//! `python3 bench/text.py prepare && cargo bench -p shoal-host --bench text`

use std::io::BufRead;
use std::time::Instant;

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, Metric, SearchRequest};

mod common;
use common::{cache, write_result};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p / 100.0).round() as usize;
    sorted[i]
}

fn stats(lat: &[f64]) -> Value {
    let mut s = lat.to_vec();
    s.sort_by(f64::total_cmp);
    json!({"mean_us": s.iter().sum::<f64>() / s.len() as f64, "p50_us": percentile(&s, 50.0),
           "p99_us": percentile(&s, 99.0), "n": s.len()})
}

/// A collection of `docs` (each `copies` times), text in the `text` field.
fn build(docs: &[String], copies: usize) -> Collection {
    let schema = Collection::parse_schema(&json!({"text": "text"})).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: 1, metric: Metric::L2 }, schema).unwrap();
    col.set_clock(Box::new(shoal_host::storage::monotonic_micros));
    let n = docs.len();
    for c in 0..copies {
        let ids: Vec<u64> = (0..n as u64).map(|i| i + (c * n) as u64).collect();
        let payloads: Vec<Value> = docs.iter().map(|t| json!({"text": t})).collect();
        col.insert_with_payloads(&ids, &vec![0.0; n], &payloads).unwrap();
        col.seal();
    }
    col
}

fn request(text: &str, extra: &str) -> SearchRequest {
    SearchRequest::from_json(&format!(r#"{{"text": {}, "limit": 10{extra}}}"#, json!(text))).unwrap()
}

/// Latencies (µs) of one pass over `reqs`; also the partial flags.
fn pass(col: &Collection, reqs: &[SearchRequest]) -> (Vec<f64>, usize) {
    let mut partial = 0;
    let lat = reqs
        .iter()
        .map(|r| {
            let t = Instant::now();
            let res = col.search(r).unwrap();
            let us = t.elapsed().as_secs_f64() * 1e6;
            partial += usize::from(res.partial);
            us
        })
        .collect();
    (lat, partial)
}

fn best_of(col: &Collection, reqs: &[SearchRequest], passes: usize) -> (Vec<f64>, usize) {
    (0..passes).map(|_| pass(col, reqs)).min_by(|a, b| a.0.iter().sum::<f64>().total_cmp(&b.0.iter().sum())).unwrap()
}

fn main() {
    let dir = cache().join("datasets/gcide-text");
    let docs: Vec<String> = std::io::BufReader::new(
        std::fs::File::open(dir.join("docs.jsonl")).expect("docs.jsonl: run python3 bench/text.py prepare"),
    )
    .lines()
    .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap()["text"].as_str().unwrap().to_string())
    .collect();
    let queries: Vec<Value> = serde_json::from_slice(&std::fs::read(dir.join("queries.json")).unwrap()).unwrap();
    let rel: Vec<Value> = serde_json::from_slice(&std::fs::read(dir.join("relevance.json")).unwrap()).unwrap();

    let t = Instant::now();
    let col = build(&docs, 1);
    let build_s = t.elapsed().as_secs_f64();
    let text_bytes: u64 = col
        .segment(0)
        .unwrap()
        .reader()
        .sections()
        .iter()
        .filter(|e| (48..64).contains(&e.kind))
        .map(|e| e.length)
        .sum();
    println!(
        "== GCIDE: {} documents; build {build_s:.2} s (1 core); text sections {:.1} MB",
        docs.len(),
        text_bytes as f64 / 1e6
    );

    // `SHOAL_TEXT_KIND=term|and|phrase`: only those queries (for profiling).
    let only = std::env::var("SHOAL_TEXT_KIND").unwrap_or_default();
    let queries: Vec<Value> = queries.into_iter().filter(|q| only.is_empty() || q["kind"] == only.as_str()).collect();
    let reqs: Vec<SearchRequest> = queries.iter().map(|q| request(q["q"].as_str().unwrap(), "")).collect();
    let kinds: Vec<&str> = queries.iter().map(|q| q["kind"].as_str().unwrap()).collect();
    pass(&col, &reqs[..200.min(reqs.len())]);
    let passes = std::env::var("SHOAL_TEXT_PASSES").ok().and_then(|p| p.parse().ok()).unwrap_or(3);
    let (lat, _) = best_of(&col, &reqs, passes);
    let mut latency = serde_json::Map::new();
    for kind in ["term", "and", "phrase", "all"] {
        let sel: Vec<f64> =
            lat.iter().zip(&kinds).filter(|(_, k)| kind == "all" || **k == kind).map(|(l, _)| *l).collect();
        if sel.is_empty() {
            continue;
        }
        let s = stats(&sel);
        println!(
            "{kind:>6}: mean {:>8.1} us  p50 {:>8.1} us  p99 {:>8.1} us",
            s["mean_us"].as_f64().unwrap(),
            s["p50_us"].as_f64().unwrap(),
            s["p99_us"].as_f64().unwrap()
        );
        latency.insert(kind.into(), s);
    }
    let hits = rel
        .iter()
        .filter(|r| {
            let res = col.search(&request(r["q"].as_str().unwrap(), "")).unwrap();
            res.points.iter().any(|p| p.id == r["doc"].as_u64().unwrap())
        })
        .count();
    let relevance = hits as f64 / rel.len() as f64;
    println!(
        "relevance: the entry's own document in the top 10 for {:.1}% of {} definition queries",
        100.0 * relevance,
        rel.len()
    );

    // Deadlines: a heavy workload on a bigger corpus.
    let copies: usize = std::env::var("SHOAL_TEXT_COPIES").ok().and_then(|c| c.parse().ok()).unwrap_or(8);
    if copies == 0 {
        return;
    }
    let t = Instant::now();
    let big = build(&docs, copies);
    println!(
        "== deadline workload: GCIDE x {copies} = {} documents (built in {:.1} s)",
        big.len(),
        t.elapsed().as_secs_f64()
    );
    let common =
        ["the", "of", "and", "a", "to", "in", "or", "as", "is", "by", "with", "for", "which", "from", "that", "an"];
    let mut heavy = Vec::new();
    for i in 0..200 {
        let w = |j: usize| common[(i * 7 + j * 3) % common.len()];
        heavy.push(match i % 4 {
            0 => format!("{} {} {} {} {} {}", w(0), w(1), w(2), w(3), w(4), w(5)),
            1 => format!("\"{} {}\" {} {}", w(0), w(1), w(2), w(3)),
            2 => format!("+{} +{} +{}", w(0), w(1), w(2)),
            _ => format!("\"{} {} {}\"", w(0), w(1), w(2)),
        });
    }
    let untimed: Vec<SearchRequest> = heavy.iter().map(|q| request(q, "")).collect();
    let timed: Vec<SearchRequest> = heavy.iter().map(|q| request(q, r#", "timeout_ms": 5"#)).collect();
    pass(&big, &untimed[..20]);
    let (u, _) = best_of(&big, &untimed, 1);
    let (d, partial) = best_of(&big, &timed, 1);
    let (us, ds) = (stats(&u), stats(&d));
    println!(
        "untimed: mean {:.2} ms p99 {:.2} ms; timeout_ms 5: mean {:.2} ms p99 {:.2} ms max {:.2} ms, partial {partial}/{}",
        us["mean_us"].as_f64().unwrap() / 1e3,
        us["p99_us"].as_f64().unwrap() / 1e3,
        ds["mean_us"].as_f64().unwrap() / 1e3,
        ds["p99_us"].as_f64().unwrap() / 1e3,
        d.iter().cloned().fold(0.0, f64::max) / 1e3,
        timed.len()
    );
    write_result(
        "text-shoal.json",
        &json!({"engine": "shoal", "where": "native", "documents": docs.len(), "build_seconds": build_s,
                "text_bytes": text_bytes, "latency": latency, "relevance_top10": relevance,
                "deadline": {"copies": copies, "documents": big.len(), "untimed": us, "timeout_5ms": ds,
                             "partial": partial, "queries": heavy}}),
    );
}
