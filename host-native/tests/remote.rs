//! Segments searched by byte ranges over HTTP: from nginx (a real static server: Range,
//! ETag, If-Match), directly and through a proxy that adds faults (`scripts/range-proxy.mjs`),
//! and with the `shoal` binary. Every answer is the local answer, bit for bit; every fault a
//! typed error or the right answer.

use std::process::Command;

use serde_json::json;
use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest};
use shoal_host::HostError;
use shoal_host::remote::{FileRanges, HttpRanges, RemoteCollection, RemoteError};
use shoal_testkit::{TempDir, clustered_vectors};

#[path = "support/answers.rs"]
mod answers;
#[path = "support/servers.rs"]
mod servers;
use answers::{bits, request};
use servers::{Nginx, Proxy, root};

/// A sealed segment of `n` clustered points (ids `3i + 1`).
fn segment(metric: Metric, dim: usize, n: usize, params: IvfParams) -> Vec<u8> {
    let data = clustered_vectors(dim as u64 + n as u64, n, dim, 40);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
    let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
    col.to_bytes().unwrap().to_vec()
}

fn remote_code(e: &HostError) -> &'static str {
    match e {
        HostError::Remote { error, .. } => error.code(),
        other => panic!("expected a remote error, got {other}"),
    }
}

#[test]
fn http_and_file_ranges_answer_as_the_local_segment() {
    let nginx = Nginx::start();
    let proxy = Proxy::start(&nginx.base);
    let dir = TempDir::new("remote", "files");
    let mut files: Vec<(String, Vec<u8>)> = ["v1-ivf", "v1-ivf-calibrated", "v1-ivf-codes-only"]
        .iter()
        .map(|g| (format!("{g}.shoal"), std::fs::read(root().join(format!("tests/golden/{g}.shoal"))).unwrap()))
        .collect();
    let l2 = IvfParams { partitions: Some(100), seed: 3, bits: Some(1), codes_only: false };
    files.push(("l2-20k.shoal".into(), segment(Metric::L2, 48, 20_000, l2)));
    let codes = IvfParams { partitions: Some(60), seed: 4, bits: Some(4), codes_only: true };
    files.push(("cosine-codes.shoal".into(), segment(Metric::Cosine, 32, 8_000, codes)));
    for (name, bytes) in &files {
        let local = Collection::from_bytes(bytes).unwrap();
        let dim = local.dim();
        let path = dir.path(name);
        std::fs::write(&path, bytes).unwrap();
        let url = nginx.put(name, bytes);
        let proxied = url.replace(&nginx.base, &proxy.base);
        let http = RemoteCollection::open(Box::new(HttpRanges::new(&url)), 64 << 20).unwrap();
        let file = RemoteCollection::open(Box::new(FileRanges::open(&path).unwrap()), 0).unwrap();
        proxy.clear();
        let counted = RemoteCollection::open(Box::new(HttpRanges::new(&proxied)), 0).unwrap();
        let mut sent = u64::from(counted.opened().requests);
        assert!(counted.opened().waves <= 2, "{name}: open {:?}", counted.opened());
        for (i, q) in clustered_vectors(77, 30, dim, 40).chunks_exact(dim).enumerate() {
            let body = if i % 3 == 0 { json!({"limit": 10, "offset": 2}) } else { json!({"limit": 5}) };
            let req = request(q, body);
            let want = local.search(&req).unwrap();
            for (how, col) in [("http", &http), ("file", &file), ("proxied, no cache", &counted)] {
                let (got, trip) = col.search(&req).unwrap();
                assert_eq!(bits(&got), bits(&want), "{name} query {i} over {how}");
                assert!(trip.waves <= 3, "{name}: {trip:?}");
                if how.starts_with("proxied") {
                    sent += u64::from(trip.requests);
                }
            }
        }
        assert_eq!(proxy.requests(), sent, "{name}: the requests the reader counts are the server's");
    }
}

#[test]
fn faults_give_typed_errors_or_the_right_answer() {
    let nginx = Nginx::start();
    let proxy = Proxy::start(&nginx.base);
    let bytes =
        segment(Metric::L2, 32, 6_000, IvfParams { partitions: Some(50), seed: 8, bits: Some(1), codes_only: false });
    let local = Collection::from_bytes(&bytes).unwrap();
    let url = nginx.put("seg.shoal", &bytes).replace(&nginx.base, &proxy.base);
    let queries = clustered_vectors(5, 40, 32, 40);
    let mut q = queries.chunks_exact(32).map(|q| request(q, json!({"limit": 10})));
    // Each case on a freshly opened reader without a cache, so every search reads.
    let open = |cap: Option<u64>| {
        let mut source = HttpRanges::new(&url);
        if let Some(cap) = cap {
            source = source.with_whole_body_cap(cap);
        }
        RemoteCollection::open(Box::new(source), 0).unwrap()
    };
    let right = |col: &RemoteCollection, req: &SearchRequest| {
        let (got, _) = col.search(req).expect("the right answer");
        assert_eq!(bits(&got), bits(&local.search(req).unwrap()));
    };
    let cases: [(&str, Option<u32>, Option<&str>); 9] = [
        ("status-404", None, Some("remote_status")),
        ("status-403", None, Some("remote_status")),
        ("status-500", Some(1), None),
        ("status-503", None, Some("remote_status")),
        ("truncate", Some(1), None),
        ("truncate", None, Some("transport")),
        ("ignore-range", None, None),
        ("wrong-range", Some(1), Some("bad_response")),
        ("etag", Some(1), Some("object_changed")),
    ];
    for (mode, times, code) in cases {
        let col = open(None);
        let req = q.next().unwrap();
        proxy.fault(mode, times);
        match code {
            Some(code) => {
                let err = col.search(&req).unwrap_err();
                assert_eq!(remote_code(&err), code, "{mode}: {err}");
            }
            None => right(&col, &req),
        }
        proxy.clear();
        // The same reader answers right once the server does.
        right(&col, &req);
    }
    // A server that ignores Range on an object too large to take whole.
    let col = open(Some(64 << 10));
    proxy.fault("ignore-range", None);
    let req = q.next().unwrap();
    let err = col.search(&req).unwrap_err();
    assert!(matches!(err, HostError::Remote { error: RemoteError::RangeIgnored { length: Some(_) }, .. }), "{err}");
    proxy.clear();
    right(&col, &req);
    // Opening through faults: a typed error, nothing opened.
    for (mode, code) in [("status-404", "remote_status"), ("truncate", "transport"), ("wrong-range", "bad_response")] {
        proxy.fault(mode, None);
        let err = RemoteCollection::open(Box::new(HttpRanges::new(&url)), 0).unwrap_err();
        assert_eq!(remote_code(&err), code, "open with {mode}: {err}");
        proxy.clear();
    }
    // The object replaced while open: nginx's ETag changes and If-Match fails (412).
    let col = open(None);
    let req = q.next().unwrap();
    right(&col, &req);
    let other =
        segment(Metric::L2, 32, 6_000, IvfParams { partitions: Some(50), seed: 9, bits: Some(1), codes_only: false });
    nginx.put("seg.shoal", &other);
    let err = col.search(&q.next().unwrap()).unwrap_err();
    assert_eq!(remote_code(&err), "object_changed", "{err}");
}

#[test]
fn shoal_search_reads_a_segment_over_http_and_https() {
    let dir = TempDir::new("remote", "cli");
    let bytes = segment(
        Metric::Cosine,
        24,
        5_000,
        IvfParams { partitions: Some(40), seed: 1, bits: Some(1), codes_only: false },
    );
    let path = dir.path("seg.shoal");
    std::fs::write(&path, &bytes).unwrap();
    let q: Vec<String> = clustered_vectors(2, 1, 24, 40).iter().map(|x| x.to_string()).collect();
    // `shoal search LOCATION`, the environment given (`SSL_CERT_FILE` and `SSL_CERT_DIR` taken
    // away unless given: the system's roots).
    let shoal = |segment: &str, env: &[(&str, &std::path::Path)]| {
        Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["search", segment, "--vector", &q.join(","), "--limit", "7", "--json"])
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let run = |segment: &str, env: &[(&str, &std::path::Path)]| {
        let out = shoal(segment, env);
        assert!(out.status.success(), "{segment}: {}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let points = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["points"].clone();
    let (local, _) = run(&path.display().to_string(), &[]);
    for nginx in [Nginx::start(), Nginx::start_tls()] {
        let url = nginx.put("seg.shoal", &bytes);
        // Over TLS the server's certificate is checked against the system's roots, here the
        // test authority's file.
        let env: Vec<(&str, &std::path::Path)> = nginx.ca.iter().map(|ca| ("SSL_CERT_FILE", ca.as_path())).collect();
        let (remote, log) = run(&url, &env);
        assert_eq!(points(&remote), points(&local), "{url}");
        assert!(log.contains("waves") && log.contains("requests"), "{log}");
        // With a disk cache, a second run's search reads nothing from the server.
        let cache = dir.path(&format!("cache-{}", nginx.ca.is_some()));
        let cached = format!("--cache-dir={}", cache.display());
        let mut runs = (0..2).map(|_| {
            let out = Command::new(env!("CARGO_BIN_EXE_shoal"))
                .args(["search", &url, "--vector", &q.join(","), "--limit", "7", "--json", &cached])
                .env_remove("SSL_CERT_FILE")
                .env_remove("SSL_CERT_DIR")
                .envs(env.iter().copied())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
        });
        let ((first, log1), (second, log2)) = (runs.next().unwrap(), runs.next().unwrap());
        assert_eq!((points(&first), points(&second)), (points(&local), points(&local)));
        let search_line = |log: &str| log.lines().find(|l| l.starts_with("search:")).unwrap().to_string();
        assert!(!search_line(&log1).contains("from disk"), "{log1}");
        assert!(search_line(&log2).contains(" 0 requests") && search_line(&log2).contains("from disk"), "{log2}");
        // A missing object: a typed error and status 1.
        let out = shoal(&format!("{}/none.shoal", nginx.base), &env);
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("HTTP 404 [remote_status]"), "{out:?}");
        if nginx.ca.is_some() {
            // A certificate no trusted authority signed: refused, typed.
            let out = shoal(&url, &[]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert!(err.contains("[transport]") && err.contains("certificate"), "{err}");
        }
    }
}

/// A segment in format 2, and the same index in format 1 (`write_reordered_v1`).
fn both_layouts(metric: Metric, dim: usize, n: usize, params: IvfParams) -> (Vec<u8>, Collection) {
    let v1 = Collection::from_bytes(&segment(metric, dim, n, params)).unwrap();
    let seg = v1.segment(0).unwrap();
    let v2 = shoal_core::remote::write_for_ranges(seg).unwrap().as_slice().to_vec();
    let reordered = Collection::from_bytes(shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    (v2, reordered)
}

#[test]
fn format_2_over_http_answers_as_format_1_and_checks_what_arrives() {
    let nginx = Nginx::start();
    let proxy = Proxy::start(&nginx.base);
    let params = IvfParams { partitions: Some(120), seed: 5, bits: Some(1), codes_only: false };
    let (v2, local) = both_layouts(Metric::L2, 64, 20_000, params);
    let url = nginx.put("v2.shoal", &v2).replace(&nginx.base, &proxy.base);
    let col = RemoteCollection::open(Box::new(HttpRanges::new(&url)), 0).unwrap();
    assert_eq!((col.segment().version(), col.opened().requests), (2, 1), "one request opens it");
    let queries = clustered_vectors(12, 30, 64, 40);
    let mut q = queries.chunks_exact(64).map(|q| request(q, json!({"limit": 10})));
    let mut per_query = Vec::new();
    for _ in 0..20 {
        let req = q.next().unwrap();
        let (got, trip) = col.search(&req).unwrap();
        assert_eq!(bits(&got), bits(&local.search(&req).unwrap()));
        assert_eq!(trip.retries, 0);
        per_query.push(trip.requests);
    }
    eprintln!("format 2, 20k x 64, no cache: requests per query {per_query:?}");
    // One flipped byte in transit: the CRC catches it, the search starts again and answers right.
    let req = q.next().unwrap();
    proxy.fault("flip", Some(1));
    let (got, trip) = col.search(&req).unwrap();
    assert_eq!((bits(&got), trip.retries), (bits(&local.search(&req).unwrap()), 1));
    // Every response altered: a checksum error, never an answer.
    proxy.fault("flip", None);
    let err = col.search(&q.next().unwrap()).unwrap_err();
    assert!(
        matches!(
            &err,
            HostError::Segment {
                source: shoal_core::Error::Format(shoal_core::FormatError::ChecksumMismatch { .. }),
                ..
            }
        ),
        "{err}"
    );
    // Opening through altered bytes: the bootstrap region is checked; bytes past it that came
    // with the first read are checked when a search uses them.
    let opened = RemoteCollection::open(Box::new(HttpRanges::new(&url)), 64 << 20);
    proxy.clear();
    let req = q.next().unwrap();
    assert_eq!(bits(&col.search(&req).unwrap().0), bits(&local.search(&req).unwrap()));
    match opened {
        Err(err) => assert!(matches!(&err, HostError::Segment { .. }), "open through altered bytes: {err}"),
        Ok(other) => {
            for _ in 0..5 {
                let req = q.next().unwrap();
                assert_eq!(bits(&other.search(&req).unwrap().0), bits(&local.search(&req).unwrap()));
            }
        }
    }
    // One byte of the bootstrap region flipped in transit: opening reads it again once.
    proxy.fault("flip", Some(1));
    let boot = col.segment().bootstrap_len();
    let reopened = RemoteCollection::open_with(Box::new(HttpRanges::new(&url)), 64 << 20, boot).unwrap();
    assert_eq!((reopened.opened().retries, reopened.opened().waves), (1, 2));
    let req = q.next().unwrap();
    assert_eq!(bits(&reopened.search(&req).unwrap().0), bits(&local.search(&req).unwrap()));
}

#[test]
fn shoal_build_lays_out_for_ranges_and_search_reads_it_anywhere() {
    let nginx = Nginx::start();
    let dir = TempDir::new("remote", "build");
    let (n, dim) = (3_000, 20);
    let data = clustered_vectors(6, n, dim, 30);
    let npy = dir.path("in.npy");
    let mut bytes = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({n}, {dim}), }}").into_bytes();
    while (bytes.len() + 11) % 64 != 0 {
        bytes.push(b' ');
    }
    bytes.push(b'\n');
    let mut file = b"\x93NUMPY\x01\x00".to_vec();
    file.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    file.extend_from_slice(&bytes);
    file.extend(data.iter().flat_map(|x| x.to_le_bytes()));
    std::fs::write(&npy, file).unwrap();
    let shoal = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_shoal")).args(args).output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let v2 = dir.path("v2.shoal").display().to_string();
    let built = shoal(&[
        "build",
        &npy.display().to_string(),
        "--index",
        "ivf-rabitq",
        "--layout",
        "ranges",
        "--out",
        &v2,
        "-q",
    ]);
    assert_eq!(built.0, Some(0), "{}", built.2);
    let url = nginx.put("v2.shoal", &std::fs::read(&v2).unwrap());
    let q: Vec<String> = data[..dim].iter().map(|x| (x + 0.01).to_string()).collect();
    let search = |seg: &str| shoal(&["search", seg, "--vector", &q.join(","), "--json"]);
    let (local, remote) = (search(&v2), search(&url));
    assert_eq!(local.0, Some(0), "{}", local.2);
    assert_eq!(local.1, remote.1, "a local format-2 file and the same file over http");
    let multipart = shoal(&["search", &url, "--vector", &q.join(","), "--json", "--multipart-ranges"]);
    assert_eq!((multipart.0, &multipart.1), (Some(0), &local.1), "{}", multipart.2);
    let first: serde_json::Value = serde_json::from_str(local.1.lines().next().unwrap()).unwrap();
    assert_eq!(first["points"][0]["id"], 0, "the query's own point first: {first}");
    // The layout's limits are usage errors before any input is read.
    let refused = shoal(&["build", &npy.display().to_string(), "--layout", "ranges", "--out", &v2]);
    assert_eq!(refused.0, Some(1));
    assert!(refused.2.contains("--layout ranges needs --index ivf-rabitq"), "{}", refused.2);
}

#[test]
fn multipart_ranges_fetch_each_wave_in_one_request_and_answer_the_same() {
    let nginx = Nginx::start();
    let proxy = Proxy::start(&nginx.base);
    let params = IvfParams { partitions: Some(120), seed: 9, bits: Some(2), codes_only: false };
    let (v2, local) = both_layouts(Metric::Cosine, 48, 20_000, params);
    let url = nginx.put("v2.shoal", &v2).replace(&nginx.base, &proxy.base);
    let boot = u64::from_le_bytes(v2[40..48].try_into().unwrap());
    let open = |multipart: bool| {
        RemoteCollection::open_with(Box::new(HttpRanges::new(&url).with_multipart(multipart)), 0, boot).unwrap()
    };
    let (multi, single) = (open(true), open(false));
    let queries = clustered_vectors(31, 25, 48, 40);
    let (mut multi_requests, mut single_requests) = (0, 0);
    for q in queries.chunks_exact(48).take(20) {
        let req = request(q, json!({"limit": 10}));
        let want = bits(&local.search(&req).unwrap());
        let (got, trip) = multi.search(&req).unwrap();
        assert_eq!(bits(&got), want);
        // One request per wave (a wave holds fewer than 64 ranges here).
        assert_eq!(trip.requests, trip.waves, "{trip:?}");
        let (got, trip) = single.search(&req).unwrap();
        assert_eq!(bits(&got), want);
        multi_requests += trip.waves;
        single_requests += trip.requests;
    }
    assert!(multi_requests < single_requests, "{multi_requests} requests against {single_requests}");
    // Faults in transit: a flipped byte is caught by its CRC and fetched again; a body cut short
    // is a broken connection, retried.
    let req = request(&queries[20 * 48..21 * 48], json!({"limit": 10}));
    proxy.fault("flip", Some(1));
    let (got, trip) = multi.search(&req).unwrap();
    assert_eq!((bits(&got), trip.retries), (bits(&local.search(&req).unwrap()), 1));
    proxy.fault("truncate", Some(1));
    let req = request(&queries[21 * 48..22 * 48], json!({"limit": 10}));
    assert_eq!(bits(&multi.search(&req).unwrap().0), bits(&local.search(&req).unwrap()));
    // Another object's ETag: never mixed bytes.
    proxy.fault("etag", None);
    let req = request(&queries[22 * 48..23 * 48], json!({"limit": 10}));
    let err = multi.search(&req).unwrap_err();
    assert!(matches!(&err, HostError::Remote { error: RemoteError::Changed(_), .. }), "{err}");
}

/// Every extent file of a disk cache: its path and length.
fn extents(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    for folder in std::fs::read_dir(dir).unwrap().flatten() {
        for e in std::fs::read_dir(folder.path()).into_iter().flatten().flatten() {
            if e.file_name().to_str().unwrap().parse::<u64>().is_ok() {
                out.push((e.path(), e.metadata().unwrap().len()));
            }
        }
    }
    out
}

#[test]
fn a_disk_cache_serves_a_restarted_reader_and_never_a_replaced_object() {
    use shoal_host::remote::{DiskCache, ReadOptions, RemoteSetReader};
    let dim = 32;
    let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
    col.set_index_kind(IndexKind::IvfRabitq(IvfParams {
        partitions: Some(30),
        seed: 2,
        bits: Some(2),
        codes_only: false,
    }))
    .unwrap();
    for s in 0..2u64 {
        let ids: Vec<u64> = (0..4000).map(|i| s * 10_000 + i).collect();
        col.insert(&ids, &clustered_vectors(60 + s, 4000, dim, 30)).unwrap();
        col.seal();
    }
    let p = shoal_testkit::publish_with_twins(&col);
    let nginx = Nginx::start();
    let proxy = Proxy::start(&nginx.base);
    let manifest = nginx.put("manifest.json", &p.manifest.to_json());
    for (e, bytes) in p.manifest.manifest.segments.iter().zip(&p.files) {
        nginx.put(&e.file, bytes);
    }
    let at = manifest.replace(&nginx.base, &proxy.base);
    let dir = TempDir::new("remote", "disk-cache");
    let cache_dir = dir.path("cache");
    // No memory cache between searches: what a search does not fetch comes from disk.
    let open = |budget: u64| {
        let disk = DiskCache::open(&cache_dir, budget).unwrap();
        RemoteSetReader::open(&at, &ReadOptions { cache_bytes: 0, multipart: false, disk: Some(disk) }).unwrap()
    };
    let queries: Vec<SearchRequest> = clustered_vectors(5, 24, dim, 30)
        .chunks_exact(dim)
        .map(|q| request(q, json!({"limit": 10, "params": {"nprobe": 6}})))
        .collect();
    // Each query's answer checked; the requests of the searches, and the bytes the first one
    // read from disk (later ones read what earlier ones kept).
    let run = |reader: &RemoteSetReader| {
        let (mut requests, mut first_disk) = (0, None);
        for req in &queries {
            let (got, trip) = reader.search(req).unwrap();
            assert_eq!(bits(&got), bits(&p.local.search(req).unwrap()));
            requests += trip.requests;
            first_disk.get_or_insert(trip.disk_bytes);
        }
        (requests, first_disk.unwrap())
    };
    let first = open(1 << 30);
    let (cold, from_disk) = run(&first);
    assert!(cold >= 24 && from_disk == 0, "cold: {cold} requests, {from_disk} bytes from disk first");
    assert_eq!(run(&first).0, 0, "the same searches again: every byte from disk");
    drop(first);
    // A restarted reader: its open reads the manifest and the bootstrap regions (one request
    // each: the objects' ETags pinned), its searches only the disk.
    let again = open(1 << 30);
    assert_eq!(again.opened().requests, 3);
    let (requests, from_disk) = run(&again);
    assert!(requests == 0 && from_disk > 0, "{requests} requests, {from_disk} bytes from disk");
    // Damaged extents (a flipped byte in each): fetched again, never answered from.
    let held = extents(&cache_dir);
    assert!(!held.is_empty());
    for (path, _) in &held {
        let mut bytes = std::fs::read(path).unwrap();
        bytes[0] ^= 0x10;
        std::fs::write(path, bytes).unwrap();
    }
    let damaged = open(1 << 30);
    let (requests, _) = run(&damaged);
    assert!(requests >= 24, "damaged extents refetched: {requests} requests");
    assert_eq!(run(&damaged).0, 0, "and kept again");
    // Bytes kept on disk with a right CRC of their own but wrong for the segment (as a fault
    // in transit would leave them; here every byte of every extent inverted, the extents'
    // CRCs computed again): a search fails the segment's checksums, runs again past the disk
    // (one retry), and what it reads then replaces them — a restarted reader then reads from
    // disk, right, with no retry.
    for folder in std::fs::read_dir(&cache_dir).unwrap().flatten() {
        let Ok(spelled) = std::fs::read(folder.path().join("object")) else { continue };
        for e in std::fs::read_dir(folder.path()).unwrap().flatten() {
            let Ok(start) = e.file_name().to_str().unwrap().parse::<u64>() else { continue };
            let mut bytes = std::fs::read(e.path()).unwrap();
            let n = bytes.len() - 4;
            bytes[..n].iter_mut().for_each(|b| *b = !*b);
            let crc = crc32c::crc32c_append(
                crc32c::crc32c_append(crc32c::crc32c(&spelled), &start.to_le_bytes()),
                &bytes[..n],
            );
            bytes[n..].copy_from_slice(&crc.to_le_bytes());
            std::fs::write(e.path(), bytes).unwrap();
        }
    }
    let poisoned = open(1 << 30);
    let mut retries = 0;
    for req in &queries {
        let (got, trip) = poisoned.search(req).unwrap();
        assert_eq!(bits(&got), bits(&p.local.search(req).unwrap()));
        retries += trip.retries;
    }
    assert!(retries >= 1, "bad bytes under a right disk CRC: searches run again past the disk");
    // (A retry deletes the whole extents its ranges overlap — the bad bytes may be anywhere in
    // them — so the next pass fetches what they held beyond; the one after, nothing.)
    let (_, _) = run(&poisoned);
    let again = open(1 << 30);
    for req in &queries {
        let (got, trip) = again.search(req).unwrap();
        assert_eq!(bits(&got), bits(&p.local.search(req).unwrap()));
        assert_eq!((trip.requests, trip.retries), (0, 0), "the replaced bytes, from disk: {trip:?}");
    }
    drop((damaged, poisoned, again));
    // The same objects published again (new ETags): not the bytes cached for the old ones.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(30);
    for (e, bytes) in p.manifest.manifest.segments.iter().zip(&p.files) {
        nginx.put(&e.file, bytes);
        let f = std::fs::File::options().append(true).open(nginx.www.join(&e.file)).unwrap();
        f.set_modified(later).unwrap();
    }
    let replaced = open(1 << 30);
    let (requests, from_disk) = run(&replaced);
    assert!(requests >= 24 && from_disk == 0, "a new version: {requests} requests, {from_disk} from disk");
    drop(replaced);
    // A budget: the least recently read extents go, the cache stays under it.
    let budget = 300_000;
    let small = open(budget);
    run(&small);
    run(&small);
    let total: u64 = extents(&cache_dir).iter().map(|(_, len)| len).sum();
    assert!(total <= budget, "{total} bytes on disk, budget {budget}");
}

#[test]
fn shoal_search_filters_a_published_set_over_http() {
    // Two segments with payloads (a tag, a number), published: `shoal search URL/manifest.json
    // --filter` answers as the same rows read whole, payloads included.
    let schema = Collection::parse_schema(&json!({"tag": "keyword", "n": "integer"})).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim: 16, metric: Metric::L2 }, schema).unwrap();
    for s in 0..2u64 {
        let data = clustered_vectors(30 + s, 2_000, 16, 20);
        let ids: Vec<u64> = (0..2_000).map(|i| s * 2_000 + i).collect();
        let payloads: Vec<serde_json::Value> =
            (0..2_000).map(|i| json!({"tag": format!("t{}", i % 5), "n": i})).collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        col.set_index_kind(IndexKind::IvfRabitq(IvfParams {
            partitions: Some(16),
            seed: 3,
            bits: Some(2),
            codes_only: false,
        }))
        .unwrap();
        col.seal();
    }
    let p = shoal_testkit::publish_with_twins(&col);
    let nginx = Nginx::start();
    for (e, bytes) in p.manifest.manifest.segments.iter().zip(&p.files) {
        nginx.put(&e.file, bytes);
    }
    let manifest = nginx.put("manifest.json", &p.manifest.to_json());
    let q = clustered_vectors(5, 1, 16, 20);
    let text: Vec<String> = q.iter().map(|x| x.to_string()).collect();
    for filter in [
        json!({"must": [{"key": "tag", "match": {"value": "t2"}}]}),
        json!({"must": [{"key": "n", "range": {"lt": 40}}]}),
        json!({"must_not": [{"key": "tag", "match": {"any": ["t0", "t1"]}}], "must": [{"key": "n", "range": {"gte": 1000}}]}),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["search", &manifest, "--vector", &text.join(","), "--limit", "6", "--json", "--with-payload"])
            .args(["--filter", &filter.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{filter}: {}", String::from_utf8_lossy(&out.stderr));
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut req = SearchRequest::nearest(q.clone(), 6);
        req.filter = Some(filter.clone());
        req.with_payload = true;
        let want = p.local.search(&req).unwrap();
        let rows = |v: &serde_json::Value| -> Vec<(u64, u32, serde_json::Value)> {
            v["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (p["id"].as_u64().unwrap(), (p["score"].as_f64().unwrap() as f32).to_bits(), p["payload"].clone())
                })
                .collect()
        };
        let want_rows: Vec<(u64, u32, serde_json::Value)> = want
            .points
            .iter()
            .map(|p| (p.id.as_num().unwrap(), p.score.to_bits(), p.payload.clone().unwrap()))
            .collect();
        assert_eq!(rows(&got), want_rows, "{filter}");
        assert_eq!(want_rows.len(), 6, "{filter}");
    }
}
