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
    pub www: PathBuf,
    /// `http://127.0.0.1:PORT` (`https://` with TLS).
    pub base: String,
    /// With TLS: the PEM file of the certificate authority that signed the server's
    /// certificate (for `SSL_CERT_FILE`).
    pub ca: Option<PathBuf>,
    _dir: TempDir,
}

/// Makes a certificate authority and a certificate it signs for `127.0.0.1` in `d` with the
/// `openssl` command (EC P-256, valid two days): `(ca.pem, server.pem, server.key)`.
fn make_certificates(d: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).current_dir(d).output().expect("the openssl command");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    run(&[
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=shoal test CA"],
        &["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
    ]
    .concat());
    run(&[&["req"][..], &ec, &["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]].concat());
    std::fs::write(
        d.join("server.ext"),
        "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
    (d.join("ca.pem"), d.join("server.pem"), d.join("server.key"))
}

impl Nginx {
    /// Starts nginx on a free port, serving a folder of its own.
    pub fn start() -> Nginx {
        Nginx::start_with(false)
    }

    /// [`start`](Self::start) over TLS, with a certificate of a test authority ([`Nginx::ca`]).
    pub fn start_tls() -> Nginx {
        Nginx::start_with(true)
    }

    fn start_with(tls: bool) -> Nginx {
        let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .expect("nginx is needed (Debian nginx-light; `make test` installs it)");
        let dir = TempDir::new("servers", "nginx");
        let d = &dir.path("");
        let www = d.join("www");
        std::fs::create_dir_all(www.join("tmp")).unwrap();
        let port = free_port();
        let (ca, listen) = if tls {
            let (ca, cert, key) = make_certificates(d);
            let listen = format!(
                "listen 127.0.0.1:{port} ssl; ssl_certificate {}; ssl_certificate_key {};",
                cert.display(),
                key.display()
            );
            (Some(ca), listen)
        } else {
            (None, format!("listen 127.0.0.1:{port};"))
        };
        let conf = format!(
            "daemon off; master_process off; worker_processes 1; error_log {d}/error.log; pid {d}/nginx.pid;\n\
             events {{ worker_connections 256; }}\n\
             http {{ access_log off; client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp;\n\
               fastcgi_temp_path {d}/tmp; uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;\n\
               server {{ {listen} root {www}; location / {{ }} }} }}\n",
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
        let scheme = if tls { "https" } else { "http" };
        Nginx { child, www, base: format!("{scheme}://127.0.0.1:{port}"), ca, _dir: dir }
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
        Proxy::spawn(upstream, latency_ms, false)
    }

    /// Starts the proxy in front of `upstream`, forwarding the Host header unchanged (for
    /// requests signed for the proxy's address).
    pub fn start_keeping_host(upstream: &str) -> Proxy {
        Proxy::spawn(upstream, 0, true)
    }

    fn spawn(upstream: &str, latency_ms: u32, keep_host: bool) -> Proxy {
        let mut child = Command::new("node")
            .arg(root().join("scripts/range-proxy.mjs"))
            .args(["--upstream", upstream, "--latency-ms", &latency_ms.to_string()])
            .args(keep_host.then_some("--keep-host"))
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

/// MinIO (a real S3 API) on 127.0.0.1, with a bucket, over a folder of its own: the binary
/// `make setup-minio` builds (`$SHOAL_MINIO`, else `~/.cache/shoal/bin/minio`).
pub struct Minio {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The bucket the tests use.
    pub bucket: String,
    _dir: TempDir,
}

/// MinIO's root credentials in the tests.
pub const MINIO_USER: &str = "shoal-test";
/// (See [`MINIO_USER`].)
pub const MINIO_PASSWORD: &str = "shoal-test-secret";

impl Minio {
    /// Starts MinIO on a free port and creates the bucket `shoal`.
    pub fn start() -> Minio {
        let binary = std::env::var_os("SHOAL_MINIO")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/shoal/bin/minio"));
        assert!(binary.exists(), "MinIO is needed at {} (`make setup-minio` builds it)", binary.display());
        let dir = TempDir::new("servers", "minio");
        let (port, console) = (free_port(), free_port());
        let mut child = Command::new(&binary)
            .args(["server", "--quiet", "--address", &format!("127.0.0.1:{port}")])
            .args(["--console-address", &format!("127.0.0.1:{console}")])
            .arg(dir.path("data"))
            .env("MINIO_ROOT_USER", MINIO_USER)
            .env("MINIO_ROOT_PASSWORD", MINIO_PASSWORD)
            .env("MINIO_BROWSER", "off")
            .env("MINIO_UPDATE", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("MinIO starts");
        wait_for(port, &mut child, "MinIO");
        let endpoint = format!("http://127.0.0.1:{port}");
        // Ready when its health endpoint says so; then the bucket, with a signed PUT.
        let t = Instant::now();
        while ureq_status(&format!("{endpoint}/minio/health/ready")) != Some(200) {
            assert!(t.elapsed() < Duration::from_secs(30), "MinIO did not get ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        let minio = Minio { child, endpoint, bucket: "shoal".into(), _dir: dir };
        // (A MinIO that says it is ready may still refuse for a moment when several start at
        // once on two cores: tried for up to 30 s.)
        let t = Instant::now();
        loop {
            let out = Command::new("curl")
                .args([
                    "-s",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                    "-X",
                    "PUT",
                    "--aws-sigv4",
                    "aws:amz:us-east-1:s3",
                ])
                .arg("--user")
                .arg(format!("{MINIO_USER}:{MINIO_PASSWORD}"))
                .arg(format!("{}/{}", minio.endpoint, minio.bucket))
                .output()
                .expect("curl");
            // 200: made; 409 (owned by you): an earlier try made it.
            if matches!(&out.stdout[..], b"200" | b"409") {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "creating the bucket failed");
            std::thread::sleep(Duration::from_millis(200));
        }
        minio
    }

    /// The environment that points the `object_store` crate (and `shoal`) at this MinIO.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", MINIO_USER.into()),
            ("AWS_SECRET_ACCESS_KEY", MINIO_PASSWORD.into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ENDPOINT", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// An S3 client of this MinIO's bucket, talking to `endpoint` (MinIO's own, or a proxy
    /// in front of it that keeps the Host header).
    pub fn client_at(&self, endpoint: &str) -> object_store::aws::AmazonS3 {
        object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(&self.bucket)
            .with_access_key_id(MINIO_USER)
            .with_secret_access_key(MINIO_PASSWORD)
            .with_region("us-east-1")
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .build()
            .expect("an S3 client")
    }

    /// An S3 client of this MinIO's bucket.
    pub fn client(&self) -> object_store::aws::AmazonS3 {
        self.client_at(&self.endpoint)
    }

    /// Stores `bytes` as `key`; its `s3://` URL.
    pub fn put(&self, key: &str, bytes: &[u8]) -> String {
        use object_store::ObjectStoreExt as _;
        let client = self.client();
        let path = object_store::path::Path::parse(key).unwrap();
        shoal_host::remote::store::block_on(client.put(&path, bytes.to_vec().into())).expect("PUT");
        format!("s3://{}/{key}", self.bucket)
    }

    /// A presigned GET URL of `key` (an hour), on MinIO's own address.
    pub fn presign(&self, key: &str) -> String {
        use object_store::signer::Signer as _;
        let path = object_store::path::Path::parse(key).unwrap();
        let url = shoal_host::remote::store::block_on(self.client().signed_url(
            object_store::signer::Method::GET,
            &path,
            Duration::from_secs(3600),
        ))
        .expect("a presigned URL");
        url.to_string()
    }
}

/// The status of a GET of `url` (`None`: no answer).
fn ureq_status(url: &str) -> Option<u16> {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    agent.get(url).call().ok().map(|r| r.status().as_u16())
}

impl Drop for Minio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
