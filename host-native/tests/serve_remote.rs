//! `shoal serve --remote NAME=MANIFEST`: read-only collections read by ranges from a set that
//! `shoal publish` wrote to a bucket (MinIO, a real S3 API). A served collection is written,
//! sealed and published; two readers of the one copy answer Shoal's and Qdrant's searches as
//! the writer answered them, bit for bit, and as each other; killing and restarting a reader
//! loses nothing; writes are refused and change nothing; bad requests are typed 400s; a set
//! that cannot be read stops a reader at start, and bytes gone from the bucket while serving
//! are a typed 502, never a wrong answer.

use std::process::{Command, Output};

use serde_json::{Value, json};
use shoal_testkit::{TempDir, clustered_vectors};

#[path = "support/serve.rs"]
mod serve;
#[path = "support/servers.rs"]
mod servers;
use serve::{Server, json_call, okj};
use servers::Minio;

const DIM: usize = 32;

fn shoal(args: &[&str], env: &[(&'static str, String)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal")).args(args).envs(env.iter().map(|(k, v)| (k, v))).output().unwrap()
}

/// The searches every server is asked, as (route, body): Qdrant's query and search calls
/// (distances, with and without payloads, offsets, thresholds, batches) and Shoal's own.
fn searches(queries: &[f32]) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    for (i, q) in queries.chunks_exact(DIM).enumerate() {
        let nprobe = 2 + i % 6;
        out.push(("points/query", json!({"query": q, "limit": 10, "params": {"nprobe": nprobe}})));
        out.push(("points/query", json!({"query": {"nearest": q}, "limit": 7, "offset": i % 3, "with_payload": true})));
        out.push(("points/search", json!({"vector": q, "limit": 5, "score_threshold": 9.0 + i as f64})));
        out.push(("search", json!({"vector": q, "limit": 12, "params": {"nprobe": nprobe, "rerank": 2}})));
        // Filters on the indexed path `a` (read by ranges: its column and value -> rows lists).
        let filter = if i % 2 == 0 {
            json!({"must": [{"key": "a", "match": {"value": i % 4}}]})
        } else {
            json!({"must": [{"key": "a", "range": {"gte": 2}}], "must_not": [{"key": "a", "match": {"value": 3}}]})
        };
        out.push(("points/query", json!({"query": q, "limit": 6, "filter": filter, "with_payload": i % 3 == 0})));
    }
    let two: Vec<Value> = queries.chunks_exact(DIM).take(2).map(|q| json!({"query": q, "limit": 4})).collect();
    out.push(("points/query/batch", json!({"searches": two})));
    out
}

/// Each search's answer (Qdrant's `result`, or Shoal's response), by the server `s`.
fn answers(s: &Server, all: &[(&str, Value)]) -> Vec<Value> {
    all.iter()
        .map(|(route, body)| {
            let v = okj(s, "POST", &format!("/collections/docs/{route}"), body.clone());
            if *route == "search" { v } else { v["result"].clone() }
        })
        .collect()
}

#[test]
fn readers_of_one_published_copy_answer_as_the_writer() {
    let minio = Minio::start();
    let env = minio.env();
    let dir = TempDir::new("serve_remote", "share");

    // The writer: a served collection (Qdrant's API, Euclid), three sealed segments.
    let writer_data = dir.path("writer");
    let writer = Server::start(&writer_data, &["--merge-factor", "100", "--seal-rows", "100000"]);
    okj(&writer, "PUT", "/collections/docs", json!({"vectors": {"size": DIM, "distance": "Euclid"}}));
    okj(&writer, "PUT", "/collections/docs/index", json!({"field_name": "a", "field_schema": "integer"}));
    let n = 2_000;
    for s in 0..3u64 {
        let data = clustered_vectors(40 + s, n, DIM, 24);
        let points: Vec<Value> = data
            .chunks_exact(DIM)
            .enumerate()
            .map(|(i, v)| json!({"id": (s * n as u64 + i as u64) * 7 + 3, "vector": v, "payload": {"a": i % 5, "b": {"c": i % 2}}}))
            .collect();
        okj(&writer, "PUT", "/collections/docs/points?wait=true", json!({"points": points}));
        okj(&writer, "POST", "/collections/docs/seal", json!({}));
    }
    let info = okj(&writer, "GET", "/collections/docs", json!({}));
    assert_eq!(info["result"]["points_count"], 3 * n);
    let queries = clustered_vectors(77, 12, DIM, 24);
    let all = searches(&queries);
    let want = answers(&writer, &all);
    assert!(want.iter().all(|a| a != &json!([]) && a != &json!({"points": []})), "every search finds points");
    writer.kill9();

    // Published to the bucket.
    let published =
        shoal(&["publish", writer_data.join("collections/docs").to_str().unwrap(), "s3://shoal/docs"], &env);
    assert!(published.status.success(), "publish: {}", String::from_utf8_lossy(&published.stderr));
    let remote = ["--remote", "docs=s3://shoal/docs/manifest.json"];
    // Readers that never read the manifest again, and one that reads it every second (and
    // keeps what it reads on disk, across its restart).
    let fixed = ["--remote", "docs=s3://shoal/docs/manifest.json", "--remote-poll", "0"];
    let cache_dir = dir.path("reader-a-cache");
    let cache_arg = format!("--remote-cache-dir={}", cache_dir.display());
    let follows = ["--remote", "docs=s3://shoal/docs/manifest.json", "--remote-poll", "1", &cache_arg];

    // Two readers, each with a data folder of its own, read the one copy.
    let (data_a, data_b) = (dir.path("reader-a"), dir.path("reader-b"));
    let a =
        Server::start_with_env(&data_a, &[&remote[..], &[cache_arg.as_str()]].concat(), &env).expect("reader a starts");
    let b = Server::start_with_env(&data_b, &fixed, &env).expect("reader b starts");
    for r in [&a, &b] {
        assert_eq!(answers(r, &all), want, "a reader answers as the writer did");
        let info = okj(r, "GET", "/collections/docs", json!({}))["result"].clone();
        assert_eq!(info["points_count"], 3 * n);
        assert_eq!(info["segments_count"], 3);
        assert_eq!(info["config"]["params"]["vectors"], json!({"size": DIM, "distance": "Euclid", "on_disk": true}));
        assert_eq!(okj(r, "GET", "/collections", json!({}))["result"]["collections"], json!([{"name": "docs"}]));
        assert_eq!(okj(r, "GET", "/collections/docs/exists", json!({}))["result"]["exists"], true);
    }

    // Writes are refused, typed, and change nothing.
    let q = &queries[..DIM];
    let refused = [
        ("PUT", "/collections/docs/points", json!({"points": [{"id": 1, "vector": q}]})),
        ("POST", "/collections/docs/points/delete", json!({"points": [3]})),
        ("POST", "/collections/docs/points/payload", json!({"payload": {"a": 1}, "points": [3]})),
        ("PUT", "/collections/docs/index", json!({"field_name": "a", "field_schema": "keyword"})),
        ("POST", "/collections/docs/points/scroll", json!({})),
        ("POST", "/collections/docs/points/count", json!({})),
        ("POST", "/collections/docs/seal", json!({})),
        ("DELETE", "/collections/docs", json!({})),
    ];
    for (method, path, body) in &refused {
        let (status, v) = json_call(&a, method, path, body.clone());
        assert_eq!((status, v["code"].as_str()), (403, Some("read_only")), "{method} {path}: {v}");
    }
    let (status, v) = json_call(&a, "PUT", "/collections/docs", json!({"vectors": {"size": 4, "distance": "Dot"}}));
    assert_eq!((status, v["code"].as_str()), (409, Some("exists")), "{v}");

    // Bad requests are typed 400s.
    let bad = [
        ("points/query", json!({"query": [1.0, 2.0], "limit": 3}), "dimension_mismatch"),
        ("points/query", json!({"query": q, "filter": {"must": [{"has_id": [3]}]}}), "unsupported"),
        // (A path without a payload index: its documents would be read.)
        (
            "points/query",
            json!({"query": q, "filter": {"must": [{"key": "b.c", "match": {"value": 1}}]}}),
            "unsupported",
        ),
        ("points/query", json!({"query": q, "with_vector": true}), "bad_request"),
        ("points/query", json!({"query": q, "params": {"exact": true}}), "unsupported"),
        ("search", json!({"vector": q, "limit": -1}), "invalid_request"),
    ];
    for (route, body, code) in &bad {
        let (status, v) = json_call(&a, "POST", &format!("/collections/docs/{route}"), body.clone());
        assert_eq!((status, v["code"].as_str()), (400, Some(*code)), "{route} {body}: {v}");
    }
    let (status, v) =
        serve::call(&a, "POST", "/collections/docs/points/query", Some(("application/json", b"{".to_vec())), &[]);
    assert_eq!((status, v["code"].as_str()), (400, Some("bad_request")), "{v}");

    // Killed and restarted, a reader answers the same; the other never stopped, and answers
    // the same to four clients at once (its searches in lanes, each with its own cache).
    a.kill9();
    assert!(std::fs::read_dir(&cache_dir).unwrap().count() == 3, "a folder per segment in the disk cache");
    let a = Server::start_with_env(&data_a, &follows, &env).expect("reader a restarts");
    assert_eq!(answers(&a, &all), want, "after a restart (what it read before, from disk)");
    std::thread::scope(|s| {
        let clients: Vec<_> = (0..4).map(|_| s.spawn(|| answers(&b, &all))).collect();
        for c in clients {
            assert_eq!(c.join().unwrap(), want, "concurrent clients of the other reader");
        }
    });

    // The writer takes more points and publishes again to the same place: only the new segment
    // is written (the others are there, unchanged), then the manifest. A running reader that
    // does not poll keeps its set; one that polls serves the new one from some search on (each
    // answer the old set's or the new one's, never a mix); a reader started now reads the new
    // one and answers as the writer does now.
    let writer = Server::start(&writer_data, &["--merge-factor", "100", "--seal-rows", "100000"]);
    let data = clustered_vectors(43, n, DIM, 24);
    let points: Vec<Value> =
        data.chunks_exact(DIM).enumerate().map(|(i, v)| json!({"id": 1_000_000 + i, "vector": v})).collect();
    okj(&writer, "PUT", "/collections/docs/points?wait=true", json!({"points": points}));
    okj(&writer, "POST", "/collections/docs/seal", json!({}));
    let want2 = answers(&writer, &all);
    assert_ne!(want2, want, "the new points change the answers");
    writer.kill9();
    let again = shoal(&["publish", writer_data.join("collections/docs").to_str().unwrap(), "s3://shoal/docs"], &env);
    let log = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "publish again: {log}");
    assert_eq!(log.matches("there already: kept").count(), 3, "{log}");
    assert_eq!(answers(&b, &all), want, "the running reader keeps the set it opened");
    let since = std::time::Instant::now();
    loop {
        let now = answers(&a, &all);
        if now == want2 {
            break;
        }
        for ((got, old), new) in now.iter().zip(&want).zip(&want2) {
            assert!(got == old || got == new, "each answer is the old set's or the new one's: {got}");
        }
        assert!(since.elapsed().as_secs() < 120, "a reader polling every second follows the publication");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(okj(&a, "GET", "/collections/docs", json!({}))["result"]["segments_count"], 4);
    wait_for_log(&a, "\"remote_reloaded\"", "the reader logs the set it now serves");
    // A manifest naming an object that is not there, then one of another dimension: not
    // served (each failure logged once), and the set served stays.
    let good = minio_get(&minio, "docs/manifest.json");
    let mut broken: Value = serde_json::from_slice(&good).unwrap();
    // (The same table CRC, which the name must carry, under a number no object has.)
    let file = broken["segments"][0]["file"].as_str().unwrap().to_string();
    let missing = format!("seg-0000000999-{}", &file["seg-0000000000-".len()..]);
    broken["segments"][0]["file"] = json!(missing);
    minio_put(&minio, "docs/manifest.json", serde_json::to_vec(&broken).unwrap());
    for (what, says) in [("a missing segment", missing.as_str()), ("another dimension", "12-d")] {
        wait_for_log(&a, says, what);
        assert_eq!(answers(&a, &all), want2, "{what}: the reader keeps serving the set it had");
        // Polled again (each second) and not opened again: logged once.
        std::thread::sleep(std::time::Duration::from_millis(3_000));
        let failed: Vec<String> =
            a.log().lines().filter(|l| l.contains("remote_reload_failed")).map(String::from).collect();
        assert_eq!(failed.iter().filter(|l| l.contains(says)).count(), 1, "{what}: {failed:?}");
        if says != "12-d" {
            // A collection of 12-d vectors published to the same place.
            let writer = Server::start(&writer_data, &["--merge-factor", "100", "--seal-rows", "100000"]);
            okj(&writer, "PUT", "/collections/other", json!({"vectors": {"size": 12, "distance": "Euclid"}}));
            let points: Vec<Value> = clustered_vectors(44, 500, 12, 8)
                .chunks_exact(12)
                .enumerate()
                .map(|(i, v)| json!({"id": i, "vector": v}))
                .collect();
            okj(&writer, "PUT", "/collections/other/points?wait=true", json!({"points": points}));
            okj(&writer, "POST", "/collections/other/seal", json!({}));
            writer.kill9();
            let other = writer_data.join("collections/other");
            let out = shoal(&["publish", other.to_str().unwrap(), "s3://shoal/docs"], &env);
            assert!(out.status.success(), "publish: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    minio_put(&minio, "docs/manifest.json", good);
    drop(a);
    let c = Server::start_with_env(&dir.path("reader-c"), &remote, &env).expect("reader c starts");
    assert_eq!(answers(&c, &all), want2, "a new reader reads the new set");
    assert_eq!(okj(&c, "GET", "/collections/docs", json!({}))["result"]["segments_count"], 4);
    drop(c);

    // A segment gone from the bucket while serving: a search that needs its bytes is a typed 502,
    // and the server keeps serving.
    let manifest: Value = serde_json::from_slice(&minio_get(&minio, "docs/manifest.json")).unwrap();
    let file = manifest["segments"][0]["file"].as_str().unwrap();
    minio_delete(&minio, &format!("docs/{file}"));
    let fresh = clustered_vectors(78, 4, DIM, 24);
    for q in fresh.chunks_exact(DIM) {
        let (status, v) =
            json_call(&b, "POST", "/collections/docs/points/query", json!({"query": q, "params": {"nprobe": 64}}));
        assert!(status == 502 && v["code"] == "remote_status", "{status} {v}");
    }
    assert_eq!(okj(&b, "GET", "/healthz", json!({}))["status"], "ok");

    // A set that cannot be read stops a reader at start, naming it; so does a bad `--remote`.
    let missing = Server::start_with_env(&dir.path("c"), &["--remote", "docs=s3://shoal/none/manifest.json"], &env);
    let log = missing.err().expect("a missing manifest stops the server");
    assert!(log.contains("--remote docs") && log.contains("remote_status"), "{log}");
    let log = Server::start_with_env(&dir.path("d"), &["--remote", "docs"], &env).err().expect("a bad spec");
    assert!(log.contains("NAME=MANIFEST"), "{log}");
    // A name taken by a collection of the data folder.
    let log = Server::start_with_env(&writer_data, &remote, &env).err().expect("a name clash");
    assert!(log.contains("exists already"), "{log}");
}

fn minio_get(minio: &Minio, key: &str) -> Vec<u8> {
    use object_store::ObjectStoreExt as _;
    let path = object_store::path::Path::parse(key).unwrap();
    let client = minio.client();
    shoal_host::remote::store::block_on(async { client.get(&path).await.unwrap().bytes().await.unwrap() }).to_vec()
}

fn minio_delete(minio: &Minio, key: &str) {
    use object_store::ObjectStoreExt as _;
    let path = object_store::path::Path::parse(key).unwrap();
    shoal_host::remote::store::block_on(minio.client().delete(&path)).unwrap();
}

fn minio_put(minio: &Minio, key: &str, bytes: Vec<u8>) {
    use object_store::ObjectStoreExt as _;
    let path = object_store::path::Path::parse(key).unwrap();
    shoal_host::remote::store::block_on(minio.client().put(&path, bytes.into())).unwrap();
}

/// Waits (up to two minutes) until `server`'s log holds `text`.
fn wait_for_log(server: &Server, text: &str, what: &str) {
    let since = std::time::Instant::now();
    while !server.log().contains(text) {
        assert!(since.elapsed().as_secs() < 120, "{what}: no {text:?} in the log:\n{}", server.log());
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
