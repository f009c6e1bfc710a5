//! A real hybrid collection read by byte ranges (`shoal search http://…`): the GCIDE dictionary
//! of `make demo` (about 25,500 entries: a 256-d vector, the definition as text, keyword and
//! integer fields) laid out in format 2 and searched natively through nginx with
//! `SHOAL_REMOTE_LATENCY_MS` (default 20) added to every request — by vector, by text, and
//! both fused, each with and without its results' payloads: requests, dependent round trips
//! (waves), bytes and time per query, cold (only the bootstrap region in memory) and warm (a
//! 1 GiB cache, second pass), with one range per request and with each wave's ranges in one
//! multipart request. The index: IVF-RaBitQ with `SHOAL_GCIDE_BITS` bits (default 4: tight
//! bounds, so the exact re-ranking reads few vectors), searched at the smallest `nprobe` whose
//! recall@10 reaches 0.9 locally (the sweep is printed). Vector queries are 200 entries' own
//! vectors (recall@10 against the exact neighbours); text queries one or two words of an
//! entry's definition (`a`, or `+a +b`: both required); hybrid queries two words and the
//! entry's vector (reciprocal rank fusion of each ranking's top 100). Every answer but the
//! plain vector ones (whose recall is reported) is checked against the local search of the
//! same rows: ids, score bits and payloads.
//!
//! Writes `~/.cache/shoal/results/remote-gcide.json`, and keeps the format-2 file and each kind's
//! requests with their local answers in `~/.cache/shoal/remote/` (`gcide-<kind>.json`) for
//! `bench/node/remote.mjs --datasets gcide-vector,gcide-text,gcide-hybrid` (Node and Chromium)
//! and `bench/node/pagefind.mjs` (the text queries against Pagefind).
//!
//! `python3 bench/prepare_gcide.py && cargo bench -p shoal-host --bench remote_hybrid`

use std::time::Instant;

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest, SearchResponse};
use shoal_host::remote::{HttpRanges, RemoteCollection, Trip};

mod common;
use common::{cache, load_vectors, write_result};

#[path = "../tests/support/servers.rs"]
mod servers;
use servers::{Nginx, Proxy};

/// Queries per kind.
const QUERIES: usize = 200;
const K: usize = 10;

/// A seeded xorshift.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// An entry's words: runs of 3+ ASCII letters, lowercased, each once.
fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_ascii_alphabetic()).filter(|w| w.len() >= 3) {
        let w = w.to_ascii_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// What each query of a pass cost, and whether it answered as expected.
struct Pass {
    trips: Vec<Trip>,
    ms: Vec<f64>,
    /// Fraction of the expected ids found (recall@10 for vectors; 1.0 when equal to local).
    found: f64,
}

fn summary(p: &Pass) -> Value {
    let n = p.trips.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Trip) -> f64| p.trips.iter().map(f).sum::<f64>() / n;
    let max = |f: &dyn Fn(&Trip) -> f64| p.trips.iter().map(f).fold(0.0, f64::max);
    let mut ms = p.ms.clone();
    ms.sort_by(f64::total_cmp);
    let pct = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    json!({
        "waves_mean": mean(&|t| f64::from(t.waves)), "waves_max": max(&|t| f64::from(t.waves)),
        "requests_mean": mean(&|t| f64::from(t.requests)), "requests_max": max(&|t| f64::from(t.requests)),
        "kb_mean": mean(&|t| t.bytes as f64 / 1e3), "kb_max": max(&|t| t.bytes as f64 / 1e3),
        "disk_kb_mean": mean(&|t| t.disk_bytes as f64 / 1e3),
        "ms_p50": pct(0.5), "ms_p90": pct(0.9), "found": p.found,
    })
}

/// Ids and score bits.
fn bits(r: &SearchResponse) -> Vec<(u64, u32)> {
    r.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect()
}

/// Runs `reqs` on `col`; `want[i]`: the expected answer (`exact`: the same ids, score bits and
/// payloads; else the ids to find, recall).
fn run(col: &RemoteCollection, reqs: &[SearchRequest], want: &[SearchResponse], exact: bool) -> Pass {
    let (mut trips, mut ms, mut found) = (Vec::new(), Vec::new(), 0usize);
    for (req, want) in reqs.iter().zip(want) {
        let t = Instant::now();
        let (res, trip) = col.search(req).expect("search");
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        trips.push(trip);
        if exact {
            assert_eq!(bits(&res), bits(want), "the local answer");
            let payloads = |r: &SearchResponse| r.points.iter().map(|p| p.payload.clone()).collect::<Vec<_>>();
            assert_eq!(payloads(&res), payloads(want), "the local payloads");
            found += want.points.len();
        } else {
            found += res.points.iter().filter(|p| want.points.iter().any(|w| w.id == p.id)).count();
        }
    }
    let total: usize = want.iter().map(|w| w.points.len()).sum();
    Pass { trips, ms, found: found as f64 / total.max(1) as f64 }
}

fn main() {
    let latency: u32 = std::env::var("SHOAL_REMOTE_LATENCY_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let bits: u32 = std::env::var("SHOAL_GCIDE_BITS").ok().and_then(|v| v.parse().ok()).unwrap_or(4);
    let dir = cache().join("gcide-demo");
    let (dim, vectors) = load_vectors(&dir.join("vectors.npy"));
    let fields: Value = serde_json::from_slice(
        &std::fs::read(dir.join("fields.json"))
            .expect("~/.cache/shoal/gcide-demo/fields.json: run python3 bench/prepare_gcide.py"),
    )
    .unwrap();
    let payloads: Vec<Value> = std::fs::read_to_string(dir.join("payloads.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let n = payloads.len();
    assert_eq!(n * dim, vectors.len());
    let t = Instant::now();
    let schema = Collection::parse_schema(&fields).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim, metric: Metric::Cosine }, schema).unwrap();
    let ids: Vec<u64> = (0..n as u64).collect();
    col.insert_with_payloads(&ids, &vectors, &payloads).unwrap();
    col.seal_with(IndexKind::IvfRabitq(IvfParams { bits: Some(bits), ..IvfParams::default() })).unwrap();
    let seg = col.segment(0).unwrap();
    let v2 = shoal_core::remote::write_for_ranges(seg).unwrap();
    // The local answers: the same rows in the same order, read whole.
    let local = Collection::from_bytes(shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    let hint = u64::from_le_bytes(v2.as_slice()[40..48].try_into().unwrap());
    println!(
        "== gcide: {n} entries x {dim}-d + text + fields, built in {:.1} s: format 2 {:.1} MB (bootstrap {:.0} KB), +{latency} ms per request",
        t.elapsed().as_secs_f64(),
        v2.as_slice().len() as f64 / 1e6,
        hint as f64 / 1e3,
    );

    // The queries: entries picked at random, their vectors and words.
    let mut rng = Rng(0x6c1d_e256);
    let (mut vreqs, mut treqs, mut hreqs): (Vec<SearchRequest>, Vec<SearchRequest>, Vec<SearchRequest>) =
        (Vec::new(), Vec::new(), Vec::new());
    while treqs.len() < QUERIES {
        let i = rng.below(n);
        let ws = words(payloads[i]["definition"].as_str().unwrap_or(""));
        if ws.len() < 2 {
            continue;
        }
        let (a, b) = (&ws[rng.below(ws.len())], &ws[rng.below(ws.len())]);
        if a == b {
            continue;
        }
        let v = vectors[i * dim..(i + 1) * dim].to_vec();
        vreqs.push(SearchRequest::nearest(v.clone(), K));
        let text = if treqs.len() % 2 == 0 { a.clone() } else { format!("+{a} +{b}") };
        treqs.push(SearchRequest { text: Some(text), limit: K, ..SearchRequest::default() });
        hreqs.push(SearchRequest {
            text: Some(format!("{a} {b}")),
            vector: Some(v),
            limit: K,
            ..SearchRequest::default()
        });
    }
    let with_payload = |reqs: &[SearchRequest]| -> Vec<SearchRequest> {
        reqs.iter().map(|r| SearchRequest { with_payload: true, ..r.clone() }).collect()
    };
    let exact_truth: Vec<SearchResponse> = vreqs
        .iter()
        .map(|r| {
            let mut e = r.clone();
            e.params.exact = true;
            local.search(&e).unwrap()
        })
        .collect();
    let local_of =
        |reqs: &[SearchRequest]| -> Vec<SearchResponse> { reqs.iter().map(|r| local.search(r).unwrap()).collect() };
    // The smallest nprobe reaching recall@10 0.9 locally.
    let recall = |res: &[SearchResponse]| {
        let hit: usize = res
            .iter()
            .zip(&exact_truth)
            .map(|(r, t)| r.points.iter().filter(|p| t.points.iter().any(|q| q.id == p.id)).count())
            .sum();
        hit as f64 / (res.len() * K) as f64
    };
    let mut nprobe = None;
    for np in [1u32, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64] {
        let reqs: Vec<SearchRequest> = vreqs
            .iter()
            .map(|r| {
                let mut r = r.clone();
                r.params.nprobe = Some(np);
                r
            })
            .collect();
        let rc = recall(&local_of(&reqs));
        println!("local: nprobe {np}: recall@10 {rc:.3}");
        if rc >= 0.9 {
            nprobe = Some(np);
            break;
        }
    }
    let nprobe = nprobe.expect("recall 0.9 within nprobe 64");
    for r in vreqs.iter_mut().chain(hreqs.iter_mut()) {
        r.params.nprobe = Some(nprobe);
    }

    // Filters: `pos` verb (28% of the rows: the IVF search checking each candidate), `letters`
    // >= 12 ("rare", 2.5%: an exact scan of its ~650 rows), text (verbs) and hybrid (nouns, 45%)
    // filtered.
    let filtered = |reqs: &[SearchRequest], f: Value| -> Vec<SearchRequest> {
        reqs.iter().map(|r| SearchRequest { filter: Some(f.clone()), ..r.clone() }).collect()
    };
    let verbs = json!({"must": [{"key": "pos", "match": {"value": "verb"}}]});
    let long = json!({"must": [{"key": "letters", "range": {"gte": 12}}]});
    let nouns = json!({"must": [{"key": "pos", "match": {"value": "noun"}}]});
    let (fv, fl, ft, fh) =
        (filtered(&vreqs, verbs.clone()), filtered(&vreqs, long), filtered(&treqs, verbs), filtered(&hreqs, nouns));
    // Files for the JavaScript benchmarks.
    let kept = cache().join("remote");
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("gcide.v2.shoal"), v2.as_slice()).unwrap();
    let js = |r: &SearchRequest| {
        let mut v = json!({"limit": r.limit});
        if let Some(t) = &r.text {
            v["text"] = json!(t);
        }
        if let Some(q) = &r.vector {
            v["vector"] = json!(q.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>());
            v["params"] = json!({"nprobe": r.params.nprobe});
        }
        if let Some(f) = &r.filter {
            v["filter"] = f.clone();
        }
        v
    };
    let ids_of = |res: &[SearchResponse]| -> Vec<Vec<u64>> {
        res.iter().map(|r| r.points.iter().map(|p| p.id.as_num().unwrap()).collect()).collect()
    };
    for (kind, reqs, truth) in [
        ("vector", &vreqs, ids_of(&exact_truth)),
        ("text", &treqs, ids_of(&local_of(&treqs))),
        ("hybrid", &hreqs, ids_of(&local_of(&hreqs))),
        // Filtered: the truth is the local answer (recall 1 means the same ids).
        ("filter", &fv, ids_of(&local_of(&fv))),
        ("rare", &fl, ids_of(&local_of(&fl))),
    ] {
        let name = format!("gcide-{kind}");
        let link = kept.join(format!("{name}.v2.shoal"));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("gcide.v2.shoal", &link).unwrap();
        let fixture = json!({"dataset": name, "n": n, "dim": dim, "metric": "cosine", "bootstrapLen": hint,
            "requests": reqs.iter().map(js).collect::<Vec<_>>(), "truth": truth});
        std::fs::write(kept.join(format!("{name}.json")), fixture.to_string()).unwrap();
    }

    let nginx = Nginx::start();
    let proxy = Proxy::start_with_latency(&nginx.base, latency);
    let url = nginx.put("gcide.v2.shoal", v2.as_slice()).replace(&nginx.base, &proxy.base);
    let cases: Vec<(&str, Vec<SearchRequest>, Vec<SearchResponse>, bool)> = vec![
        ("vector", vreqs.clone(), exact_truth.clone(), false),
        ("vector+filter", fv.clone(), local_of(&fv), true),
        ("vector+rare", fl.clone(), local_of(&fl), true),
        ("text+filter", ft.clone(), local_of(&ft), true),
        ("hybrid+filter", fh.clone(), local_of(&fh), true),
        ("vector+payload", with_payload(&vreqs), local_of(&with_payload(&vreqs)), true),
        ("text", treqs.clone(), local_of(&treqs), true),
        ("text+payload", with_payload(&treqs), local_of(&with_payload(&treqs)), true),
        ("hybrid", hreqs.clone(), local_of(&hreqs), true),
        ("hybrid+payload", with_payload(&hreqs), local_of(&with_payload(&hreqs)), true),
    ];
    let mut layouts = serde_json::Map::new();
    for multipart in [false, true] {
        let source = || Box::new(HttpRanges::new(&url).with_multipart(multipart));
        let gap = if multipart { shoal_host::remote::MULTIPART_MERGE_GAP } else { shoal_core::remote::MERGE_GAP };
        let t = Instant::now();
        let mut cold = RemoteCollection::open_with(source(), 0, hint).expect("open");
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        let opened = cold.opened();
        let mut warm = RemoteCollection::open_with(source(), 1 << 30, hint).expect("open");
        cold.set_merge_gap(gap);
        warm.set_merge_gap(gap);
        let how = if multipart { "multipart ranges" } else { "one range per request" };
        println!(
            "{how}: open {} requests, {} waves, {:.0} KB, {open_ms:.0} ms",
            opened.requests,
            opened.waves,
            opened.bytes as f64 / 1e3
        );
        // A reader restarted over a disk cache an earlier one filled (`--cache-dir`): no bytes
        // in memory, what the earlier one fetched on disk (one range per request only).
        let disk_dir = shoal_testkit::TempDir::new("remote_hybrid", "disk");
        let on_disk = |dir: &std::path::Path| {
            let disk = shoal_host::remote::DiskCache::open(dir, 1 << 34).expect("disk cache");
            let mut r =
                RemoteCollection::open_with(Box::new(shoal_host::remote::DiskCached::new(source(), disk)), 0, hint)
                    .expect("open");
            r.set_merge_gap(gap);
            r
        };
        let mut kinds = serde_json::Map::new();
        for (kind, reqs, want, exact) in &cases {
            let c = summary(&run(&cold, reqs, want, *exact));
            run(&warm, reqs, want, *exact);
            let w = summary(&run(&warm, reqs, want, *exact));
            let d = (!multipart).then(|| {
                let dir = disk_dir.path(kind);
                run(&on_disk(&dir), reqs, want, *exact);
                summary(&run(&on_disk(&dir), reqs, want, *exact))
            });
            if let Some(d) = &d {
                println!(
                    "{kind:>15}: restarted over the disk cache: {:.1} requests, {:.1} KB (+ {:.1} KB from disk), p50 {:.1} ms",
                    d["requests_mean"].as_f64().unwrap(),
                    d["kb_mean"].as_f64().unwrap(),
                    d["disk_kb_mean"].as_f64().unwrap(),
                    d["ms_p50"].as_f64().unwrap()
                );
            }
            let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
            println!(
                "{kind:>15}: cold {:.2} waves (max {}), {:.1} requests (max {}), {:.1} KB (max {:.0}), p50 {:.0} ms, p90 {:.0} ms | warm {:.1} requests, {:.1} KB, p50 {:.1} ms | {}",
                f(&c, "waves_mean"),
                c["waves_max"],
                f(&c, "requests_mean"),
                c["requests_max"],
                f(&c, "kb_mean"),
                f(&c, "kb_max"),
                f(&c, "ms_p50"),
                f(&c, "ms_p90"),
                f(&w, "requests_mean"),
                f(&w, "kb_mean"),
                f(&w, "ms_p50"),
                if *exact { "= local".to_string() } else { format!("recall@10 {:.3}", f(&c, "found")) },
            );
            kinds.insert((*kind).into(), json!({"cold": c, "warm": w, "disk": d, "checked_equal_to_local": exact}));
        }
        let open =
            json!({"requests": opened.requests, "waves": opened.waves, "kb": opened.bytes as f64 / 1e3, "ms": open_ms});
        layouts.insert(if multipart { "multipart" } else { "single" }.into(), json!({"open": open, "kinds": kinds}));
    }
    write_result(
        "remote-gcide.json",
        &json!({"dataset": "gcide", "n": n, "dim": dim, "file_bytes": v2.as_slice().len(), "bootstrap_bytes": hint,
                "queries": QUERIES, "latency_ms": latency, "bits": bits, "nprobe": nprobe,
                "layouts": layouts}),
    );
}
