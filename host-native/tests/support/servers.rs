//! Real servers for the tests and benchmarks of segments read by byte ranges: nginx (a static
//! server with Range, ETag and If-Match) and `scripts/range-proxy.mjs` (latency and faults) in
//! front of it. Included by `tests/remote.rs` and `benches/remote.rs` (`#[path]`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use shoal_testkit::TempDir;

/// The repository's root.
pub fn root() -> PathBuf {
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
pub struct Nginx {
    child: Child,
    www: PathBuf,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    _dir: TempDir,
}

impl Nginx {
    /// Starts nginx on a free port, serving a folder of its own.
    pub fn start() -> Nginx {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("nginx is needed (Debian nginx-light; `make test` installs it)");
        let dir = TempDir::new("servers", "nginx");
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
    pub fn put(&self, name: &str, bytes: &[u8]) -> String {
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
pub struct Proxy {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Proxy {
    /// Starts the proxy in front of `upstream`, adding `latency_ms` to every request.
    pub fn start_with_latency(upstream: &str, latency_ms: u32) -> Proxy {
        let mut child = Command::new("node")
            .arg(root().join("scripts/range-proxy.mjs"))
            .args(["--upstream", upstream, "--latency-ms", &latency_ms.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("node");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let base = line.trim().strip_prefix("listening on ").expect("the proxy's first line").to_string();
        Proxy { child, base }
    }

    /// Starts the proxy in front of `upstream`.
    pub fn start(upstream: &str) -> Proxy {
        Proxy::start_with_latency(upstream, 0)
    }

    /// Sends `METHOD path` to the proxy's control endpoints; the response body.
    fn control(&self, method: &str, path: &str) -> String {
        let addr = self.base.strip_prefix("http://").expect("http");
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
    }

    /// The next `times` requests (all, with `None`) get fault `mode` (see the script).
    pub fn fault(&self, mode: &str, times: Option<u32>) {
        let times = times.map(|t| format!("&times={t}")).unwrap_or_default();
        self.control("POST", &format!("/__fault?mode={mode}{times}"));
    }

    /// Clears the fault and the counters.
    pub fn clear(&self) {
        self.control("POST", "/__reset");
    }

    /// Requests forwarded since the last reset.
    pub fn requests(&self) -> u64 {
        let text = self.control("GET", "/__stats");
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["requests"].as_u64().unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
