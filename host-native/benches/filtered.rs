//! Filtered vector search (issue 4): Shoal's IVF + RaBitQ index with payload filters on GloVe
//! 400k and the synthetic attributes of `bench/filtered.py prepare` (keyword any, integer range,
//! and range + must_not, each at 50% / 10% / 1% / 0.1% selectivity), single-threaded, one query
//! at a time, default search settings (the planner chooses exact or index search per query).
//! Recall@10 against the exact filtered top-10; QPS is the median of `SHOAL_FILTERED_REPEATS`
//! (default 5) passes over all queries. Writes `~/.cache/shoal/results/filtered-shoal-<dataset>.json`
//! for `bench/filtered.py report`.
//!
//! `SHOAL_FILTERED_PAYLOAD=nested` runs the same searches on a collection with nested payloads
//! (each payload under `metadata`, filter keys `metadata.cat` / `metadata.price`) whose paths
//! are declared, so built as columns; `nested-documents` declares none, so every condition is
//! answered from the stored documents. Their results go to
//! `filtered-shoal-<mode>-<dataset>.json`.
//!
//! `python3 bench/filtered.py prepare && cargo bench -p shoal-host --bench filtered`

use std::io::BufRead;
use std::time::Instant;

use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest};

mod common;
use common::{cache, load_vectors, median_pass_seconds, write_result};

fn main() {
    let name = std::env::var("SHOAL_FILTERED_DATASET").unwrap_or_else(|_| "glove-400k".into());
    let repeats: usize = std::env::var("SHOAL_FILTERED_REPEATS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let dir = cache().join("datasets").join(&name);
    let work = dir.join("filtered");
    let doc: serde_json::Value = serde_json::from_slice(
        &std::fs::read(work.join("cases.json")).expect("cases.json: run python3 bench/filtered.py prepare"),
    )
    .expect("cases.json");
    let metric = Metric::parse(doc["metric"].as_str().unwrap()).expect("metric");
    let (dim, base) = load_vectors(&dir.join("base.npy"));
    let (_, mut queries) = load_vectors(&dir.join("queries.npy"));
    // `SHOAL_FILTERED_QUERIES=n`: the first n queries only (documents-only filters are slow).
    if let Some(q) = std::env::var("SHOAL_FILTERED_QUERIES").ok().and_then(|q| q.parse::<usize>().ok()) {
        queries.truncate(q * dim);
    }
    let n = base.len() / dim;
    let nq = queries.len() / dim;
    let exclude: Option<Vec<u64>> =
        doc["exclude_self"].as_array().map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect());
    let payloads: Vec<serde_json::Value> =
        std::io::BufReader::new(std::fs::File::open(work.join("payloads.jsonl")).expect("payloads.jsonl"))
            .lines()
            .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
            .collect();
    assert_eq!(payloads.len(), n, "one payload per base row");
    let mode = std::env::var("SHOAL_FILTERED_PAYLOAD").unwrap_or_else(|_| "flat".into());
    println!("== {name}: {n} x {dim}-d, {}, {nq} queries, filtered, {mode} payloads", metric.name());
    let (schema, payloads) = match mode.as_str() {
        "flat" => {
            (Collection::parse_schema(&serde_json::json!({"cat": "keyword", "price": "integer"})).unwrap(), payloads)
        }
        "nested" | "nested-documents" => {
            let paths = if mode == "nested" {
                serde_json::json!({"metadata.cat": "keyword", "metadata.price": "integer"})
            } else {
                serde_json::json!({})
            };
            let wrap = |p: serde_json::Value| serde_json::json!({"page_content": "", "metadata": p});
            (Collection::parse_nested_schema(&paths).unwrap(), payloads.into_iter().map(wrap).collect())
        }
        m => panic!("SHOAL_FILTERED_PAYLOAD is flat, nested or nested-documents, not {m}"),
    };
    let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema).unwrap();
    let t = Instant::now();
    let ids: Vec<u64> = (0..n as u64).collect();
    col.insert_with_payloads(&ids, &base, &payloads).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { bits: Some(1), ..IvfParams::default() })).unwrap();
    let build_s = t.elapsed().as_secs_f64();
    println!("build {build_s:.2} s (1 core, vectors + payload columns + IVF)");
    {
        // The payload sections' sizes (kinds 33-36), per point.
        let bytes = shoal_format::AlignedBytes::from_slice(col.to_bytes().unwrap());
        let reader = shoal_format::SegmentReader::open(bytes.as_slice()).unwrap();
        let size = |kind| reader.section(kind).map_or(0, <[u8]>::len);
        let per_point = |b: usize| b as f64 / n as f64;
        println!(
            "payload bytes/point: columns {:.2}, dictionaries {:.2}, postings {:.2}, documents {:.2}",
            per_point(size(33)),
            per_point(size(34)),
            per_point(size(35)),
            per_point(size(36))
        );
    }
    drop(payloads);

    let (index, _, defaults) = col.segment(0).unwrap().ivf().unwrap();
    println!(
        "nlist {}; defaults nprobe {} rerank {} probe ratio {}",
        index.nlist, defaults.nprobe, defaults.rerank, defaults.probe_ratio
    );
    // `SHOAL_FILTERED_SWEEP=nprobe,...`: also run every case at these fixed nprobe values.
    let sweep: Vec<Option<u32>> = std::iter::once(None)
        .chain(
            std::env::var("SHOAL_FILTERED_SWEEP")
                .unwrap_or_default()
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| Some(p.parse().expect("SHOAL_FILTERED_SWEEP is a list of nprobe values"))),
        )
        .collect();
    let k = doc["k"].as_u64().unwrap() as usize;
    let kq = k + usize::from(exclude.is_some());
    let mut out = Vec::new();
    let mut cases = Vec::new();
    println!("{:<14} {:>9} {:>9} {:>10} {:>10}  path", "filter", "matching", "recall@10", "QPS", "ms/query");
    // `SHOAL_FILTERED_CASES=range,combo`: only the cases whose name contains one of these.
    let only = std::env::var("SHOAL_FILTERED_CASES").unwrap_or_default();
    let wanted =
        |c: &&serde_json::Value| only.is_empty() || only.split(',').any(|w| c["name"].as_str().unwrap().contains(w));
    for (case, nprobe) in
        doc["cases"].as_array().unwrap().iter().filter(wanted).flat_map(|c| sweep.iter().map(move |&p| (c, p)))
    {
        let mut filter = (!case["filter"].is_null()).then(|| case["filter"].clone());
        if mode != "flat"
            && let Some(f) = &mut filter
        {
            under_metadata(f);
        }
        let reqs: Vec<SearchRequest> = queries
            .chunks_exact(dim)
            .map(|q| {
                let mut r = SearchRequest { filter: filter.clone(), ..SearchRequest::nearest(q.to_vec(), kq) };
                r.params.nprobe = nprobe;
                r
            })
            .collect();
        let gt = case["gt"].as_array().unwrap();
        let (mut hits, mut want, mut exact) = (0usize, 0usize, 0usize);
        for (q, r) in reqs.iter().enumerate() {
            let stats = col.search_into(r, &mut out).unwrap();
            exact += usize::from(stats.exact);
            let truth: Vec<u64> = gt[q].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
            let got = out
                .iter()
                .filter_map(|p| p.id.as_num())
                .filter(|&id| exclude.as_ref().is_none_or(|e| e[q] != id))
                .take(k);
            hits += got.filter(|id| truth.contains(id)).count();
            want += truth.len();
        }
        let recall = hits as f64 / want as f64;
        let secs = median_pass_seconds(&col, &reqs, &mut out, repeats);
        let qps = nq as f64 / secs;
        let path = match exact {
            0 => "index".to_string(),
            e if e == nq => "exact".to_string(),
            e => format!("exact {e}/{nq}"),
        };
        let cname = match nprobe {
            None => case["name"].as_str().unwrap().to_string(),
            Some(p) => format!("{} np{p}", case["name"].as_str().unwrap()),
        };
        let matching = case["matching"].as_u64().unwrap();
        println!("{cname:<14} {matching:>9} {recall:>9.4} {qps:>10.0} {:>10.3}  {path}", 1e3 * secs / nq as f64);
        cases.push(serde_json::json!({
            "name": cname, "nprobe": nprobe, "matching": matching, "selectivity": case["selectivity"],
            "recall": recall, "qps": qps, "path": path,
        }));
    }
    let file = if mode == "flat" {
        format!("filtered-shoal-{name}.json")
    } else {
        format!("filtered-shoal-{mode}-{name}.json")
    };
    write_result(
        &file,
        &serde_json::json!({
            "engine": "shoal", "dataset": name, "payload": mode, "threads": 1, "queries": nq, "build_seconds": build_s,
            "repeats": repeats, "cases": cases,
        }),
    );
}

/// Prefixes every condition key of filter `f` with `metadata.` (the nested payloads' paths).
fn under_metadata(f: &mut serde_json::Value) {
    match f {
        serde_json::Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                if k == "key" {
                    *v = serde_json::Value::String(format!("metadata.{}", v.as_str().expect("a key")));
                } else {
                    under_metadata(v);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(under_metadata),
        _ => {}
    }
}
