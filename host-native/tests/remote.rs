//! Segments searched by byte ranges over HTTP: from nginx (a real static server: Range,
//! ETag, If-Match), directly and through a proxy that adds faults (`scripts/range-proxy.mjs`),
//! and with the `shoal` binary. Every answer is the local answer, bit for bit; every fault a
//! typed error or the right answer.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use shoal_core::{Collection, CollectionConfig, IndexKind, IvfParams, Metric, SearchRequest, SearchResponse};
use shoal_host::HostError;
use shoal_host::remote::{FileRanges, HttpRanges, RemoteCollection, RemoteError};
use shoal_testkit::{TempDir, clustered_vectors};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Waits until something accepts connections on `port`.
fn wait_for(port: u16, child: &mut Child, what: &str) {
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited: {status}");
        }
        assert!(t.elapsed() < Duration::from_secs(20), "{what} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// nginx serving a folder of its own on 127.0.0.1.
struct Nginx {
    child: Child,
    www: PathBuf,
    base: String,
    _dir: TempDir,
}

impl Nginx {
    fn start() -> Nginx {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("nginx is needed (Debian nginx-light; `make test` installs it)");
        let dir = TempDir::new("remote", "nginx");
        let d = &dir.path("");
        let www = d.join("www");
        std::fs::create_dir_all(www.join("tmp")).unwrap();
        let port = free_port();
        let conf = format!(
            "daemon off; master_process off; worker_processes 1; error_log {d}/error.log; pid {d}/nginx.pid;\n\
             events {{ worker_connections 256; }}\n\
             http {{ access_log off; client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp;\n\
               fastcgi_temp_path {d}/tmp; uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
               server {{ listen 127.0.0.1:{port}; root {www}; location / {{ }} }} }}\n",
            d = d.display(),
            www = www.display()
        );
        std::fs::write(d.join("nginx.conf"), conf).unwrap();
        let mut child = Command::new(nginx)
            .args(["-p", &d.display().to_string(), "-c", &d.join("nginx.conf").display().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        wait_for(port, &mut child, "nginx");
        Nginx { child, www, base: format!("http://127.0.0.1:{port}"), _dir: dir }
    }

    /// Serves `bytes` as `name` (written beside, then renamed into place: a replaced object
    /// gets a new ETag).
    fn put(&self, name: &str, bytes: &[u8]) -> String {
        let tmp = self.www.join("tmp").join(name);
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, self.www.join(name)).unwrap();
        format!("{}/{name}", self.base)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `scripts/range-proxy.mjs` in front of `upstream`.
struct Proxy {
    child: Child,
    base: String,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let mut child = Command::new("node")
            .arg(root().join("scripts/range-proxy.mjs"))
            .args(["--upstream", upstream])
            .stdout(Stdio::piped())
            .spawn()
            .expect("node");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line.trim().strip_prefix("listening on ").expect("the proxy's first line").to_string();
        Proxy { child, base }
    }

    fn control(&self, path: &str) -> String {
        agent().post(format!("{}{path}", self.base)).send_empty().unwrap().body_mut().read_to_string().unwrap()
    }

    fn fault(&self, mode: &str, times: Option<u32>) {
        let times = times.map(|t| format!("&times={t}")).unwrap_or_default();
        self.control(&format!("/__fault?mode={mode}{times}"));
    }

    fn clear(&self) {
        self.control("/__reset");
    }

    /// Requests forwarded since the last reset.
    fn requests(&self) -> u64 {
        let text = agent().get(format!("{}/__stats", self.base)).call().unwrap().body_mut().read_to_string().unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["requests"].as_u64().unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).build().into()
}

/// A sealed segment of `n` clustered points (ids `3i + 1`).
fn segment(metric: Metric, dim: usize, n: usize, params: IvfParams) -> Vec<u8> {
    let data = clustered_vectors(dim as u64 + n as u64, n, dim, 40);
    let ids: Vec<u64> = (0..n as u64).map(|i| i * 3 + 1).collect();
    let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(IndexKind::IvfRabitq(params)).unwrap();
    col.to_bytes().unwrap().to_vec()
}

fn request(q: &[f32], body: serde_json::Value) -> SearchRequest {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = Some(q.to_vec());
    req
}

fn bits(res: &SearchResponse) -> Vec<(u64, u32)> {
    res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect()
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
    let l2 = IvfParams { partitions: Some(100), seed: 3, bits: 1, codes_only: false };
    files.push(("l2-20k.shoal".into(), segment(Metric::L2, 48, 20_000, l2)));
    let codes = IvfParams { partitions: Some(60), seed: 4, bits: 4, codes_only: true };
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
    let bytes = segment(Metric::L2, 32, 6_000, IvfParams { partitions: Some(50), seed: 8, bits: 1, codes_only: false });
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
    let other = segment(Metric::L2, 32, 6_000, IvfParams { partitions: Some(50), seed: 9, bits: 1, codes_only: false });
    nginx.put("seg.shoal", &other);
    let err = col.search(&q.next().unwrap()).unwrap_err();
    assert_eq!(remote_code(&err), "object_changed", "{err}");
}

#[test]
fn shoal_search_reads_a_segment_over_http() {
    let nginx = Nginx::start();
    let dir = TempDir::new("remote", "cli");
    let bytes = segment(Metric::Cosine, 24, 5_000, IvfParams { partitions: Some(40), seed: 1, bits: 1, codes_only: false });
    let path = dir.path("seg.shoal");
    std::fs::write(&path, &bytes).unwrap();
    let url = nginx.put("seg.shoal", &bytes);
    let q: Vec<String> = clustered_vectors(2, 1, 24, 40).iter().map(|x| x.to_string()).collect();
    let run = |segment: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args(["search", segment, "--vector", &q.join(","), "--limit", "7", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{segment}: {}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (local, _) = run(&path.display().to_string());
    let (remote, log) = run(&url);
    let points = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap()["points"].clone();
    assert_eq!(points(&remote), points(&local));
    assert!(log.contains("waves") && log.contains("requests"), "{log}");
    // A missing object: a typed error and status 1.
    let out = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["search", &format!("{}/none.shoal", nginx.base), "--vector", &q.join(",")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HTTP 404 [remote_status]"));
}
