//! End-to-end tests of `shoal serve`: the real binary on a real port with a real data folder.
//! Routes, bad input (4xx, nothing written, still serving), restart and replay, background
//! seals, and `kill -9` at random moments during concurrent upserts (nothing acknowledged lost).

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use shoal_testkit::TempDir;

#[path = "support/serve.rs"]
mod serve;
use serve::{Server, agent, call, json_call, okj};

/// The vector of point `id` in the tests: derived from the id, so any copy can be checked.
fn vector_of(id: u64, dim: usize) -> Vec<f32> {
    (0..dim).map(|j| ((id * 31 + j as u64 * 17) % 101) as f32 / 7.0 - 3.0).collect()
}

/// A binary batch (`docs/format.md`).
fn binary_batch(ids: &[u64], dim: usize, payloads: Option<&[Value]>) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"SHB1");
    b.extend_from_slice(&(dim as u32).to_le_bytes());
    b.extend_from_slice(&(ids.len() as u32).to_le_bytes());
    b.extend_from_slice(&u32::from(payloads.is_some()).to_le_bytes());
    for id in ids {
        b.extend_from_slice(&id.to_le_bytes());
    }
    for &id in ids {
        for x in vector_of(id, dim) {
            b.extend_from_slice(&x.to_le_bytes());
        }
    }
    for p in payloads.unwrap_or(&[]) {
        b.extend_from_slice(p.to_string().as_bytes());
        b.push(b'\n');
    }
    b
}

fn post_binary(s: &Server, name: &str, batch: Vec<u8>) -> (u16, Value) {
    call(s, "POST", &format!("/collections/{name}/points/binary"), Some(("application/octet-stream", batch)), &[])
}

/// The value of gauge `gauge` for collection `name` in `/metrics`.
fn gauge(s: &Server, gauge: &str, name: &str) -> u64 {
    let text = agent().get(format!("{}/metrics", s.base)).call().unwrap().body_mut().read_to_string().unwrap();
    let prefix = format!("{gauge}{{collection=\"{name}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).expect("the gauge is exported").trim().parse().unwrap()
}

#[test]
fn writes_faster_than_seals_wait_for_them() {
    // 500-point batches as fast as one client sends them, seals every 1,000: without the wait
    // the unsealed points (held in memory) grow with the write rate.
    let dir = TempDir::new("serve", "backpressure");
    let s = Server::start(&dir.0, &["--seal-rows", "1000", "--durability", "relaxed"]);
    create(&s, "b", json!({"vectors": {"size": 64, "distance": "Euclid"}}));
    let a = agent();
    let mut most = 0;
    for k in 0..60u64 {
        let ids: Vec<u64> = (k * 500..(k + 1) * 500).collect();
        let r = a
            .post(format!("{}/collections/b/points/binary", s.base))
            .header("content-type", "application/octet-stream")
            .send(&binary_batch(&ids, 64, None)[..])
            .unwrap();
        assert_eq!(r.status(), 200);
        most = most.max(gauge(&s, "shoal_unsealed_points", "b"));
    }
    // A write waits while 2 x 1,000 are unsealed; one batch may land on top.
    assert!(most <= 2 * 1000 + 500, "{most} points unsealed");
    wait_for_background_work(&s, "b");
    assert_eq!(count(&s, "b"), 30_000);
}

/// Waits until no seal or merge of collection `name` runs (the `shoal_background_jobs` gauge).
fn wait_for_background_work(s: &Server, name: &str) {
    for _ in 0..1200 {
        if gauge(s, "shoal_background_jobs", name) == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("background work still running after 60 s:\n{}", s.log());
}

fn count(s: &Server, name: &str) -> u64 {
    okj(s, "POST", &format!("/collections/{name}/points/count"), json!({}))["result"]["count"].as_u64().unwrap()
}

/// Bytes of every file in the collection's folder (to show a refused write wrote nothing).
fn folder_bytes(data: &Path, name: &str) -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = std::fs::read_dir(data.join("collections").join(name))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.file_name().into_string().unwrap(), e.metadata().unwrap().len())
        })
        .collect();
    v.sort();
    v
}

/// Checks a collection folder against its manifest: every segment and live-rows file it names
/// exists, no other one does, no temporary file is left, and one log; returns the segments.
fn set_files_match_manifest(s: &Server, data: &Path, name: &str) -> usize {
    wait_for_background_work(s, name);
    let files = folder_bytes(data, name);
    assert_eq!(files.iter().filter(|f| f.0.starts_with("wal-")).count(), 1, "{files:?}");
    set_files_named_by_manifest(s, data, name).len()
}

/// Once no seal or merge runs (a running one has its temporary file), the segment and live-rows
/// files of a collection folder are exactly those its manifest names, and no temporary file is
/// left; returns the rows of each segment.
fn set_files_named_by_manifest(s: &Server, data: &Path, name: &str) -> Vec<u64> {
    wait_for_background_work(s, name);
    let dir = data.join("collections").join(name);
    let m = shoal_core::set::Manifest::from_json(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let mut named: Vec<String> = m.segments.iter().map(|s| s.file.clone()).collect();
    named.extend(m.segments.iter().filter_map(|s| s.live.as_ref().map(|l| l.file.clone())));
    named.sort();
    let files = folder_bytes(data, name);
    let mut on_disk: Vec<String> = files.iter().map(|f| f.0.clone()).filter(|f| f.starts_with("seg-")).collect();
    on_disk.sort();
    assert_eq!(on_disk, named, "{files:?}");
    assert!(!files.iter().any(|f| f.0.ends_with(".tmp")), "{files:?}");
    m.segments.iter().map(|s| s.rows).collect()
}

fn create(s: &Server, name: &str, body: Value) {
    okj(s, "PUT", &format!("/collections/{name}"), body);
}

const TAGS: [&str; 3] = ["red", "green", "blue"];

#[test]
fn json_and_binary_upserts_search_alike_and_survive_restart() {
    let dir = TempDir::new("serve", "alike");
    let dim = 8;
    let s = Server::start(&dir.0, &[]);
    let fields = json!({"tag": "keyword", "n": "integer", "title": "text"});
    create(&s, "a", json!({"dim": dim, "metric": "cosine", "fields": fields}));
    create(&s, "b", json!({"vectors": {"size": dim, "distance": "Cosine"}}));
    let ids: Vec<u64> = (0..300).map(|i| i * 3 + 1).collect();
    let docs: Vec<Value> = ids
        .iter()
        .map(|&i| json!({"tag": TAGS[(i % 3) as usize], "n": i % 10, "title": format!("word{} common", i % 7)}))
        .collect();
    // a: the binary route, in two batches (the second with payloads only).
    assert_eq!(post_binary(&s, "a", binary_batch(&ids[..100], dim, Some(&docs[..100]))).0, 200);
    assert_eq!(post_binary(&s, "a", binary_batch(&ids[100..], dim, Some(&docs[100..]))).0, 200);
    // b: Qdrant's JSON upsert (points, then batch form).
    let points: Vec<Value> = ids[..150]
        .iter()
        .zip(&docs)
        .map(|(&id, d)| json!({"id": id, "vector": vector_of(id, dim), "payload": d}))
        .collect();
    okj(&s, "PUT", "/collections/b/points?wait=true", json!({"points": points}));
    let vectors: Vec<Vec<f32>> = ids[150..].iter().map(|&id| vector_of(id, dim)).collect();
    okj(
        &s,
        "PUT",
        "/collections/b/points",
        json!({"batch": {"ids": &ids[150..], "vectors": vectors, "payloads": &docs[150..]}}),
    );
    assert_eq!((count(&s, "a"), count(&s, "b")), (300, 300));

    let searches = [
        json!({"vector": vector_of(5, dim), "limit": 7, "with_payload": true}),
        json!({"vector": vector_of(9, dim), "limit": 5, "filter": {"must": [{"key": "tag", "match": {"value": "red"}}]}}),
        json!({"text": "word3", "limit": 5, "filter": {"must": [{"key": "n", "range": {"gte": 4}}]}}),
        json!({"vector": vector_of(2, dim), "text": "common word1", "limit": 6, "with_payload": true}),
    ];
    let run = |s: &Server, name: &str| -> Vec<Value> {
        searches.iter().map(|q| okj(s, "POST", &format!("/collections/{name}/search"), q.clone())).collect()
    };
    let before = run(&s, "a");
    // b's schema was inferred from the payloads except `title`, a keyword there: text search
    // needs a text field, so only the vector searches compare.
    let before_b: Vec<Value> =
        searches[..2].iter().map(|q| okj(&s, "POST", "/collections/b/search", q.clone())).collect();
    assert_eq!(before[..2], before_b[..]);
    let (status, v) = json_call(&s, "POST", "/collections/b/search", searches[2].clone());
    assert!(status == 400 && v["status"]["error"].as_str().unwrap().contains("no text fields"), "{v}");
    assert!(before[2]["points"].as_array().unwrap().len() == 5, "{}", before[2]);
    // Exact check of the first search against the points themselves.
    let got: Vec<u64> = before[0]["points"].as_array().unwrap().iter().map(|p| p["id"].as_u64().unwrap()).collect();
    let q = vector_of(5, dim);
    let mut want: Vec<(f32, u64)> = ids.iter().map(|&id| (-cosine(&q, &vector_of(id, dim)), id)).collect();
    want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    assert_eq!(got, want.iter().take(7).map(|w| w.1).collect::<Vec<_>>());

    // Restart: the log replays to the same results; seal, restart again: the segment serves them.
    drop(s);
    let s = Server::start(&dir.0, &[]);
    assert_eq!(run(&s, "a"), before);
    assert_eq!(okj(&s, "POST", "/collections/a/seal", json!({}))["result"]["sealed"], true);
    assert!(set_files_match_manifest(&s, &dir.0, "a") >= 1);
    let exact = |q: &Value| {
        let mut q = q.clone();
        q["params"] = json!({"exact": true});
        q
    };
    let sealed: Vec<Value> = searches.iter().map(|q| okj(&s, "POST", "/collections/a/search", exact(q))).collect();
    drop(s);
    let s = Server::start(&dir.0, &[]);
    let again: Vec<Value> = searches.iter().map(|q| okj(&s, "POST", "/collections/a/search", exact(q))).collect();
    assert_eq!(again, sealed);
    assert_eq!(ids_of(&again[0]), ids_of(&before[0]));
    assert_eq!(count(&s, "a"), 300);
}

fn ids_of(res: &Value) -> Vec<u64> {
    res["points"].as_array().unwrap().iter().map(|p| p["id"].as_u64().unwrap()).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn bad_input_gets_a_clear_4xx_and_writes_nothing() {
    let dir = TempDir::new("serve", "bad");
    let dim = 4;
    let s = Server::start(&dir.0, &["--max-body-mib", "1", "--api-key", "sesame"]);
    let key = [("api-key", "sesame")];
    let put =
        |path: &str, body: &str| call(&s, "PUT", path, Some(("application/json", body.as_bytes().to_vec())), &key);
    let post = |path: &str, ct: &str, body: Vec<u8>| call(&s, "POST", path, Some((ct, body)), &key);
    let get = |path: &str| call(&s, "GET", path, None, &key);
    assert_eq!(put("/collections/c", r#"{"dim": 4, "metric": "l2", "fields": {"tag": "keyword"}}"#).0, 200);
    assert_eq!(
        post("/collections/c/points/binary", "application/octet-stream", binary_batch(&[1, 2, 3], dim, None)).0,
        200
    );
    let files = folder_bytes(&dir.0, "c");

    let mut nan = binary_batch(&[9], dim, None);
    let at = nan.len() - 4;
    nan[at..].copy_from_slice(&f32::NAN.to_le_bytes());
    let full = binary_batch(&[7, 8], dim, None);
    let big = format!(r#"{{"points": [{{"id": 5, "vector": [{}]}}]}}"#, vec!["1.0"; 300_000].join(","));
    let cases: Vec<(&str, (u16, Value), &str)> = vec![
        (
            "wrong dimension",
            put("/collections/c/points", r#"{"points": [{"id": 5, "vector": [1, 2, 3]}]}"#),
            "dimension",
        ),
        (
            "binary wrong dimension",
            post("/collections/c/points/binary", "application/octet-stream", binary_batch(&[5], 3, None)),
            "dimension",
        ),
        ("NaN", post("/collections/c/points/binary", "application/octet-stream", nan), "finite"),
        (
            "malformed JSON",
            put("/collections/c/points", r#"{"points": [{"id": 5, "vector": [1, 2, 3, 4]}"#),
            "malformed JSON",
        ),
        (
            "malformed filter",
            post(
                "/collections/c/search",
                "application/json",
                br#"{"vector": [1, 2, 3, 4], "filter": {"must": [{"key": "tag", "match": {"valu": "x"}}]}}"#.to_vec(),
            ),
            "filter",
        ),
        (
            "unknown filter field",
            post(
                "/collections/c/points/count",
                "application/json",
                br#"{"filter": {"must": [{"key": "nope", "match": {"value": "x"}}]}}"#.to_vec(),
            ),
            "nope",
        ),
        (
            "unknown payload field",
            put(
                "/collections/c/points",
                r#"{"points": [{"id": 5, "vector": [1, 2, 3, 4], "payload": {"colour": "red"}}]}"#,
            ),
            "colour",
        ),
        (
            "truncated binary batch",
            post("/collections/c/points/binary", "application/octet-stream", full[..full.len() - 3].to_vec()),
            "truncated",
        ),
        ("binary as JSON", post("/collections/c/points/binary", "application/json", full.clone()), "octet-stream"),
        (
            "an id neither an integer nor a UUID",
            put("/collections/c/points", r#"{"points": [{"id": "5c56c793-69f3-4fbf-87e6", "vector": [1, 2, 3, 4]}]}"#),
            "unsigned integer or a UUID",
        ),
        (
            "a negative id",
            put("/collections/c/points", r#"{"points": [{"id": -1, "vector": [1, 2, 3, 4]}]}"#),
            "unsigned integer or a UUID",
        ),
        ("a malformed id in a path", get("/collections/c/points/12-x"), "neither an unsigned integer nor a UUID"),
        ("bad collection name", put("/collections/a.b", r#"{"dim": 4}"#), "collection name"),
        ("bad metric", put("/collections/d", r#"{"dim": 4, "metric": "manhattan"}"#), "metric"),
        (
            "codes-only served collection",
            put(
                "/collections/d",
                r#"{"dim": 4, "metric": "l2", "index": {"index": "ivf-rabitq", "bits": 2, "codes_only": true}}"#,
            ),
            "codes_only",
        ),
        ("missing collection", put("/collections/nope/points", r#"{"points": []}"#), "doesn't exist"),
        (
            "delete with a null filter",
            post("/collections/c/points/delete", "application/json", br#"{"filter": null}"#.to_vec()),
            "non-empty filter",
        ),
        ("oversized body", put("/collections/c/points", &big), "length limit"),
        ("missing API key", call(&s, "POST", "/collections/c/points/count", None, &[]), "api-key"),
        ("wrong API key", call(&s, "GET", "/collections", None, &[("api-key", "sesam")]), "api-key"),
    ];
    for (what, (status, body), needle) in cases {
        assert!((400..500).contains(&status), "{what}: status {status}, {body}");
        let msg = body["status"]["error"].as_str().unwrap_or_else(|| panic!("{what}: no JSON error: {body}"));
        assert!(msg.contains(needle), "{what}: {msg:?} should mention {needle:?}");
    }
    assert_eq!(folder_bytes(&dir.0, "c"), files, "a refused write changed the folder");
    assert!(!dir.0.join("collections").join("d").exists());
    let (status, v) = call(&s, "POST", "/collections/c/points/count", Some(("application/json", b"{}".to_vec())), &key);
    assert_eq!((status, v["result"]["count"].as_u64()), (200, Some(3)), "still serving");
    let (status, _) = call(&s, "GET", "/metrics", None, &[("Authorization", "Bearer sesame")]);
    assert_eq!(status, 200);
    assert!(!s.log().contains("panicked"));
}

#[test]
fn background_seals_keep_serving_and_lose_nothing() {
    let dir = TempDir::new("serve", "seal");
    let dim = 16;
    let s = Server::start(&dir.0, &["--seal-rows", "500"]);
    create(&s, "g", json!({"vectors": {"size": dim, "distance": "Dot"}}));
    let mut next = 0u64;
    for round in 0..12 {
        let ids: Vec<u64> = (next..next + 250).collect();
        next += 250;
        let docs: Vec<Value> = ids.iter().map(|i| json!({"round": round, "odd": i % 2 == 1})).collect();
        assert_eq!(post_binary(&s, "g", binary_batch(&ids, dim, Some(&docs))).0, 200);
        if round % 3 == 2 {
            let gone: Vec<u64> = ids.iter().copied().filter(|i| i % 10 == 0).collect();
            okj(&s, "POST", "/collections/g/points/delete", json!({"points": gone}));
        }
        let q = json!({"query": vector_of(round, dim), "limit": 3});
        assert_eq!(okj(&s, "POST", "/collections/g/points/query", q)["result"]["points"].as_array().unwrap().len(), 3);
    }
    okj(
        &s,
        "POST",
        "/collections/g/points/delete",
        json!({"filter": {"must": [{"key": "round", "match": {"value": 0}}]}}),
    );
    let want = (250..3000u64).filter(|i| !(i % 10 == 0 && (i / 250) % 3 == 2)).count() as u64;
    // Background seals ran (segments exist); whichever state the last one left, nothing is lost.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !folder_bytes(&dir.0, "g").iter().any(|f| f.0 == "manifest.json") {
        assert!(Instant::now() < deadline, "no background seal");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(count(&s, "g"), want);
    okj(&s, "POST", "/collections/g/seal", json!({}));
    assert_eq!(count(&s, "g"), want);
    let odd = json!({"filter": {"must": [{"key": "odd", "match": {"value": true}}]}, "exact": true});
    let n_odd = okj(&s, "POST", "/collections/g/points/count", odd.clone())["result"]["count"].as_u64().unwrap();
    drop(s);
    let s = Server::start(&dir.0, &["--seal-rows", "500"]);
    assert_eq!(count(&s, "g"), want);
    assert_eq!(okj(&s, "POST", "/collections/g/points/count", odd)["result"]["count"].as_u64(), Some(n_odd));
    assert!(set_files_match_manifest(&s, &dir.0, "g") >= 1);
}

#[test]
fn kill_9_during_concurrent_upserts_loses_no_acknowledged_point() {
    let dir = TempDir::new("serve", "kill");
    let dim = 12;
    // Small seals, and every two segments of a tier merge: kills land in seals and merges.
    let args = ["--seal-rows", "3000", "--merge-factor", "2"];
    let s = Server::start(&dir.0, &args);
    create(&s, "k", json!({"vectors": {"size": dim, "distance": "Euclid"}}));
    drop(s);
    let acked: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next_rand = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let writers = 3u64;
    // Writer w owns the ids k * writers + w; `next[w]` is its next k. A batch cut by a kill may
    // or may not have been logged; its ids are written again later with the same contents.
    let mut next = [0u64; 3];
    for round in 0..20 {
        let s = Server::start(&dir.0, &args);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let (base, acked, stop) = (s.base.clone(), Arc::clone(&acked), Arc::clone(&stop));
                let mut k = next[w as usize];
                std::thread::spawn(move || {
                    let a = agent();
                    while !stop.load(Ordering::Relaxed) {
                        let n = 50 + k % 150;
                        let ids: Vec<u64> = (k..k + n).map(|k| k * writers + w).collect();
                        let docs: Vec<Value> = ids.iter().map(|i| json!({"w": w, "i": i})).collect();
                        let r = a
                            .post(format!("{base}/collections/k/points/binary"))
                            .header("content-type", "application/octet-stream")
                            .send(&binary_batch(&ids, dim, Some(&docs))[..]);
                        match r {
                            Ok(resp) if resp.status() == 200 => acked.lock().unwrap().extend(&ids),
                            Ok(resp) => panic!("upsert refused: {}", resp.status()),
                            Err(_) => break, // killed: this batch was not acknowledged
                        }
                        k += n;
                    }
                    k
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + next_rand() % 400));
        if round % 5 == 4 {
            // Every fifth round lets the seals and merges finish before the kill, so a set is
            // made however slow the machine is; the other rounds kill them midway.
            stop.store(true, Ordering::Relaxed);
            for (w, h) in handles.into_iter().enumerate() {
                next[w] = h.join().unwrap();
            }
            let (status, body) = call(&s, "POST", "/collections/k/seal", None, &[]);
            assert_eq!(status, 200, "{body}");
            wait_for_background_work(&s, "k");
            s.kill9();
            continue;
        }
        s.kill9();
        stop.store(true, Ordering::Relaxed);
        for (w, h) in handles.into_iter().enumerate() {
            next[w] = h.join().unwrap();
        }
    }
    // Restarted without merges (so nothing runs in the background): recovery left exactly the
    // files the manifest names, whatever the kills interrupted.
    let s = Server::start(&dir.0, &["--seal-rows", "3000", "--merge-factor", "100000"]);
    let rows = set_files_named_by_manifest(&s, &dir.0, "k");
    eprintln!("segments after 20 kills: {rows:?}");
    assert!(rows.iter().any(|&r| r > 6000), "no merge ran: {rows:?}");
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 10_000, "too few writes to mean anything: {}", acked.len());
    let total = count(&s, "k");
    assert!(total >= acked.len() as u64);
    for chunk in acked.chunks(2000) {
        let got =
            okj(&s, "POST", "/collections/k/points", json!({"ids": chunk, "with_vector": true, "with_payload": true}));
        let got = got["result"].as_array().unwrap();
        assert_eq!(got.len(), chunk.len(), "acknowledged points missing");
        for (p, &id) in got.iter().zip(chunk) {
            assert_eq!(p["id"].as_u64(), Some(id));
            let v: Vec<f32> = p["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            assert_eq!(v, vector_of(id, dim), "vector of {id}");
            assert_eq!(p["payload"]["i"].as_u64(), Some(id), "payload of {id}");
        }
    }
    eprintln!("{} acknowledged points checked after 20 kills; {} present", acked.len(), total);
}

#[test]
fn imported_segments_are_served_and_static_files_stay_inside_their_folder() {
    let dir = TempDir::new("serve", "import");
    let dim = 5;
    // A segment from `shoal build` (raw f32 input), imported as collection `w`.
    let ids: Vec<u64> = (0..40).collect();
    let raw: Vec<u8> = ids.iter().flat_map(|&id| vector_of(id, dim)).flat_map(f32::to_le_bytes).collect();
    let input = dir.0.join("v.f32");
    std::fs::write(&input, &raw).unwrap();
    let seg = dir.0.join("v.shoal");
    let shoal = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shoal")).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    shoal(&[
        "build".as_ref(),
        input.as_os_str(),
        "--dim".as_ref(),
        "5".as_ref(),
        "--metric".as_ref(),
        "l2".as_ref(),
        "--quiet".as_ref(),
        "--out".as_ref(),
        seg.as_os_str(),
    ]);
    let data = dir.0.join("data");
    shoal(&["import".as_ref(), "--data".as_ref(), data.as_os_str(), "--name".as_ref(), "w".as_ref(), seg.as_os_str()]);
    // An existing name is refused before the segment is read (here: a file that does not exist).
    let again = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args([
            "import".as_ref(),
            "--data".as_ref(),
            data.as_os_str(),
            "--name".as_ref(),
            "w".as_ref(),
            dir.0.join("missing.shoal").as_os_str(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success() && err.contains("collection w exists"), "{err}");
    let www = dir.0.join("www");
    std::fs::create_dir_all(www.join("sub")).unwrap();
    std::fs::write(www.join("sub").join("index.html"), "<p>hi</p>").unwrap();
    std::fs::write(dir.0.join("secret.txt"), "no").unwrap();
    let www_arg = www.to_str().unwrap().to_string();
    let s = Server::start(&data, &["--static-dir", &www_arg]);
    assert_eq!(count(&s, "w"), 40);
    let res = okj(&s, "POST", "/collections/w/search", json!({"vector": vector_of(7, dim), "limit": 1}));
    assert_eq!(ids_of(&res), vec![7]);
    // Writes after the import land in the log and survive a restart.
    assert_eq!(post_binary(&s, "w", binary_batch(&[100], dim, None)).0, 200);
    drop(s);
    let s = Server::start(&data, &["--static-dir", &www_arg]);
    assert_eq!(count(&s, "w"), 41);
    let (status, body) = call(&s, "GET", "/ui/sub/", None, &[]);
    assert_eq!((status, body), (200, Value::String("<p>hi</p>".into())));
    for path in ["/ui/../secret.txt", "/ui/%2e%2e/secret.txt", "/ui/sub/../../secret.txt", "/ui/.hidden"] {
        assert_eq!(call(&s, "GET", path, None, &[]).0, 404, "{path}");
    }
}

/// A flipped byte in a sealed segment on disk: the merge that reads it fails with the checksum
/// error (logged), the collection keeps serving what it served, and nothing is rewritten — the
/// damaged file stays named by the manifest, no merged segment appears.
#[test]
fn a_damaged_segment_fails_its_merge_and_the_collection_keeps_serving() {
    let dir = TempDir::new("serve", "damaged");
    let dim = 8;
    let s = Server::start(&dir.0, &["--merge-factor", "2", "--seal-rows", "1000000"]);
    create(&s, "d", json!({"vectors": {"size": dim, "distance": "Euclid"}}));
    let batch = |from: u64| (from..from + 300).collect::<Vec<u64>>();
    assert_eq!(post_binary(&s, "d", binary_batch(&batch(0), dim, None)).0, 200);
    okj(&s, "POST", "/collections/d/seal", json!({}));
    let first = {
        let m =
            shoal_core::set::Manifest::from_json(&std::fs::read(dir.0.join("collections/d/manifest.json")).unwrap())
                .unwrap();
        assert_eq!(m.segments.len(), 1);
        dir.0.join("collections/d").join(&m.segments[0].file)
    };
    // Flip a byte inside the vectors, in place (the file is mapped: the server sees it too;
    // rewriting the file would truncate it under the mapping).
    let mut bytes = std::fs::read(&first).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x20;
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(&first).unwrap();
        f.write_all_at(&bytes[at..at + 1], at as u64).unwrap();
    }
    // A second segment: the policy merges the two, reading the damaged one.
    assert_eq!(post_binary(&s, "d", binary_batch(&batch(300), dim, None)).0, 200);
    okj(&s, "POST", "/collections/d/seal", json!({}));
    // What the set answers (the same whether the merge has failed yet or not).
    let q = json!({"vector": vector_of(7, dim), "limit": 5});
    let before = okj(&s, "POST", "/collections/d/search", q.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.log().contains("background merge failed") {
        assert!(Instant::now() < deadline, "no merge attempt:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(s.log().contains("checksum mismatch"), "{}", s.log());
    assert_eq!(set_files_named_by_manifest(&s, &dir.0, "d").len(), 2, "the two segments stay, nothing merged");
    assert_eq!(std::fs::read(&first).unwrap(), bytes, "the damaged file is left as it is");
    assert_eq!(count(&s, "d"), 600);
    assert_eq!(okj(&s, "POST", "/collections/d/search", q)["points"], before["points"]);
}

/// `--max-segment-rows` bounds what background merges make (and so their memory): seals of
/// 500 points merge two at a time up to 1,000 rows and no further, and nothing is lost.
#[test]
fn merges_stop_at_the_largest_segment_allowed() {
    let dir = TempDir::new("serve", "maxseg");
    let dim = 8;
    let s = Server::start(&dir.0, &["--seal-rows", "500", "--merge-factor", "2", "--max-segment-rows", "1000"]);
    create(&s, "m", json!({"vectors": {"size": dim, "distance": "Euclid"}}));
    for from in (0..4000u64).step_by(500) {
        let ids: Vec<u64> = (from..from + 500).collect();
        assert_eq!(post_binary(&s, "m", binary_batch(&ids, dim, None)).0, 200);
        okj(&s, "POST", "/collections/m/seal", json!({}));
    }
    let rows = set_files_named_by_manifest(&s, &dir.0, "m");
    assert_eq!(rows.iter().sum::<u64>(), 4000, "{rows:?}");
    assert!(rows.iter().all(|&r| r <= 1000), "a segment over the limit: {rows:?}");
    assert!(rows.contains(&1000), "pairs of seals merged: {rows:?}");
    assert_eq!(count(&s, "m"), 4000);
}

/// `DELETE /collections/{name}/index/{field}` on a collection with nested payloads: the path is
/// no longer listed, filters on it keep their answers, and the removal (and a later retyped
/// declaration) holds across restarts from the log alone and from a sealed segment's manifest.
/// A collection with Shoal's flat fields keeps them: a 400 that changes nothing.
#[test]
fn declared_paths_are_removed_and_stay_removed_after_restarts() {
    let dir = TempDir::new("serve", "dropindex");
    let s = Server::start(&dir.0, &[]);
    create(&s, "q", json!({"vectors": {"size": 4, "distance": "Dot"}}));
    create(&s, "flat", json!({"dim": 4, "metric": "dot", "fields": {"tag": "keyword"}}));
    for (field, ty) in [("metadata.topic", "keyword"), ("year", "integer")] {
        okj(&s, "PUT", "/collections/q/index", json!({"field_name": field, "field_schema": ty}));
    }
    let points: Vec<Value> = (0..60u64)
        .map(|i| {
            let topic = TAGS[(i % 3) as usize];
            json!({"id": i, "vector": vector_of(i, 4), "payload": {"metadata": {"topic": topic}, "year": 1990 + i}})
        })
        .collect();
    okj(&s, "PUT", "/collections/q/points?wait=true", json!({"points": points}));
    let schema = |s: &Server| {
        let info = okj(s, "GET", "/collections/q", Value::Null);
        let fields = info["result"]["payload_schema"].as_object().unwrap();
        fields.iter().map(|(k, v)| format!("{k}:{}", v["data_type"].as_str().unwrap())).collect::<Vec<_>>()
    };
    let filter = json!({"must": [{"key": "year", "range": {"gte": 2000, "lt": 2020}},
                                 {"key": "metadata.topic", "match": {"value": "red"}}]});
    let search = |s: &Server| {
        let q = json!({"vector": vector_of(3, 4), "limit": 100, "filter": filter});
        ids_of(&okj(s, "POST", "/collections/q/search", q))
    };
    let matching: Vec<u64> = search(&s);
    let mut sorted = matching.clone();
    sorted.sort();
    assert_eq!(sorted, (10..30u64).filter(|i| i % 3 == 0).collect::<Vec<_>>());
    assert_eq!(schema(&s), ["metadata.topic:keyword", "year:integer"]);

    okj(&s, "DELETE", "/collections/q/index/year?wait=true", Value::Null);
    assert_eq!(schema(&s), ["metadata.topic:keyword"]);
    assert_eq!(search(&s), matching, "a filter on a path no longer declared answers the same");
    // A path never declared: nothing to remove, no error (as in Qdrant).
    okj(&s, "DELETE", "/collections/q/index/never", Value::Null);
    assert_eq!(schema(&s), ["metadata.topic:keyword"]);
    // Flat fields hold the payloads' values: refused, nothing changed.
    let (status, v) = call(&s, "DELETE", "/collections/flat/index/tag", None, &[]);
    assert!(status == 400 && v["status"]["error"].as_str().unwrap().contains("keeps its fields"), "{status} {v}");
    let flat = okj(&s, "GET", "/collections/flat", Value::Null);
    assert_eq!(flat["result"]["payload_schema"]["tag"]["data_type"], "keyword", "{flat}");

    // From the log alone (killed, not stopped).
    s.kill9();
    let s = Server::start(&dir.0, &[]);
    assert_eq!(schema(&s), ["metadata.topic:keyword"]);
    assert_eq!(search(&s), matching);
    // Sealed: the manifest holds the paths (the log after it none).
    assert_eq!(okj(&s, "POST", "/collections/q/seal", json!({}))["result"]["sealed"], true);
    s.kill9();
    let s = Server::start(&dir.0, &[]);
    assert_eq!(schema(&s), ["metadata.topic:keyword"]);
    // Declarations a nested collection refuses (a text path, an element index) are 400s that
    // log nothing: the server still starts after them.
    for (field, ty) in [("title", "text"), ("items[0].k", "keyword"), ("a..b", "keyword")] {
        let body = json!({"field_name": field, "field_schema": ty});
        let (status, v) = json_call(&s, "PUT", "/collections/q/index", body);
        assert_eq!(status, 400, "{field} {ty}: {v}");
    }
    // `year` declared again with another type, in the log after the manifest.
    okj(&s, "PUT", "/collections/q/index", json!({"field_name": "year", "field_schema": "float"}));
    okj(&s, "DELETE", "/collections/q/index/metadata.topic", Value::Null);
    s.kill9();
    let s = Server::start(&dir.0, &[]);
    assert_eq!(schema(&s), ["year:float"]);
    assert_eq!(search(&s), matching);
    assert_eq!(count(&s, "q"), 60);
}
