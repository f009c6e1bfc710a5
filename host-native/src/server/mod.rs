//! `shoal serve`: the HTTP server of the native host.
//!
//! Collections live in `DATA/collections/NAME/` ([`store`]); every write is logged and synced
//! ([`wal`]) before it is acknowledged; sealed segments are memory-mapped. Routes:
//!
//! - Shoal's own: `POST /collections/{name}/search` (the search request, `shoal_core::SearchRequest`, the
//!   same JSON as `collection.search` in JavaScript), `POST /collections/{name}/points/binary`
//!   (binary batches, [`batch`]), `POST /collections/{name}/seal`, `GET /healthz`,
//!   `GET /metrics` (Prometheus text).
//! - Qdrant's, for the calls Shoal shares with it ([`qdrant`]): collections, upsert, query,
//!   search, retrieve, count, scroll, delete, payload indexes; same paths and JSON shapes, so
//!   the official `qdrant-client` works unmodified.
//!
//! Errors are `{"status": {"error": "..."}, "code": "...", "time": 0.0}` with a 4xx status for
//! bad input (nothing changed) and 5xx for a failure of the host (disk full, ...).

pub mod batch;
mod metrics;
mod qdrant;
pub mod remote;
pub mod store;
pub mod wal;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::HostError;
use remote::{ServedSet, Target};
use store::{Meta, Store};

/// `shoal serve` options.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Folder holding the collections (created if missing).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:6333")]
    pub addr: SocketAddr,
    /// Require this key on every route (header `api-key: KEY` or `Authorization: Bearer KEY`);
    /// also read from SHOAL_API_KEY.
    #[arg(long, env = "SHOAL_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// `batch`: sync the log before acknowledging each write (default). `relaxed`: leave
    /// flushing to the OS — faster, and a machine crash (not a process crash) can lose the
    /// last seconds of acknowledged writes.
    #[arg(long, value_enum, default_value_t = Durability::Batch)]
    pub durability: Durability,
    /// Seal a collection's logged points into a new segment once this many are unsealed.
    #[arg(long, default_value_t = 200_000)]
    pub seal_rows: u64,
    /// Segments of one size tier that merge into one (the size-tiered merge policy).
    #[arg(long, default_value_t = 8)]
    pub merge_factor: usize,
    /// No merge makes a segment of more live points than this. A merge's memory grows with
    /// its output, not with the collection (about 12 bytes per point, the k-means sample of
    /// 128·√points vectors, and the payload and text sections it writes), so this bounds the
    /// memory background work takes whatever the collection's size.
    #[arg(long, default_value_t = 16_000_000)]
    pub max_segment_rows: u64,
    /// Largest request body, in MiB.
    #[arg(long, default_value_t = 64)]
    pub max_body_mib: usize,
    /// Log every request (one JSON line on standard error).
    #[arg(long)]
    pub log_requests: bool,
    /// Serve the files of this folder under `/ui/` (e.g. the repository root, for
    /// `/ui/examples/browser/`).
    #[arg(long, value_name = "DIR")]
    pub static_dir: Option<PathBuf>,
    /// A read-only collection read by ranges from a set `shoal publish` wrote: `NAME=MANIFEST`,
    /// the manifest's location (`s3://bucket/prefix/manifest.json`, `gs://…`, `az://…`,
    /// `http://…`, or a path; buckets take their credentials from the environment, as
    /// `shoal search` does). Repeat for more. Opened at start: a set that cannot be read stops
    /// the server.
    #[arg(long = "remote", value_name = "NAME=MANIFEST")]
    pub remote: Vec<String>,
    /// Fetched bytes each `--remote` collection keeps in memory, in MiB.
    #[arg(long, default_value_t = 256)]
    pub remote_cache_mib: u64,
    /// A folder where the `--remote` collections' fetched bytes are also kept on disk, across
    /// restarts (checked when read; per object version: a replaced object's bytes are not
    /// reused). Processes may share it.
    #[arg(long, value_name = "DIR")]
    pub remote_cache_dir: Option<std::path::PathBuf>,
    /// The most bytes kept in `--remote-cache-dir`, in MiB (the least recently read go first).
    #[arg(long, default_value_t = 4096, requires = "remote_cache_dir")]
    pub remote_cache_dir_mib: u64,
    /// How often (seconds) each `--remote` collection reads its manifest to follow new
    /// publications at its location: another set published there is opened and served from
    /// the next search on (one that cannot be opened is logged, the set served is kept, and it
    /// is tried again at the next poll, then less and less often, up to every 5 minutes; one of
    /// another dimension or metric is never served).
    /// 0: never (the set opened at start is served until the server stops).
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub remote_poll: u64,
}

/// Reads the manifest of the `--remote` collection `name` every `every` and serves the set
/// published there when it changes (a thread that ends with the collection), logging each
/// change and each failure (an error once, until another one, a set served or the manifest
/// back to the one served).
fn follow(name: &str, set: std::sync::Weak<ServedSet>, every: std::time::Duration) {
    let who = name.to_string();
    let spawned = std::thread::Builder::new().name(format!("remote-poll-{name}")).spawn(move || {
        let name = who;
        let mut last_error = None;
        loop {
            std::thread::sleep(every);
            let Some(set) = set.upgrade() else { return };
            match set.refresh() {
                Ok(remote::Refresh::Held) => {}
                Ok(done) => {
                    if done == remote::Refresh::Served {
                        let now = set.snapshot();
                        eprintln!(
                            "{}",
                            json!({"event": "remote_reloaded", "collection": name, "location": set.location,
                                   "segments": now.segments(), "points": now.rows()})
                        );
                    }
                    last_error = None;
                }
                Err(e) => {
                    let e = e.to_string();
                    if last_error.as_ref() != Some(&e) {
                        eprintln!(
                            "{}",
                            json!({"event": "remote_reload_failed", "collection": name, "location": set.location,
                                   "error": e, "kept": "the set served"})
                        );
                        last_error = Some(e);
                    }
                }
            }
        }
    });
    if let Err(e) = spawned {
        eprintln!(
            "{}",
            json!({"event": "remote_reload_failed", "collection": name, "error": format!("no polling thread: {e}")})
        );
    }
}

/// When the log is synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Durability {
    /// fdatasync per write request, before the acknowledgement.
    Batch,
    /// No sync: the OS flushes.
    Relaxed,
}

/// Settings shared by every collection.
#[derive(Debug)]
pub struct Options {
    /// Sync the log per write.
    pub sync: bool,
    /// See [`ServeArgs::seal_rows`].
    pub seal_rows: u64,
    /// The merge policy of every collection.
    pub merge_policy: shoal_core::set::MergePolicy,
}

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable kind.
    pub code: &'static str,
    /// What went wrong.
    pub message: String,
}

impl ApiError {
    /// 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, code: "bad_request", message: message.into() }
    }

    /// The same error, its message prefixed with where in the request it arose.
    pub fn at(mut self, place: &str) -> ApiError {
        self.message = format!("{place}: {}", self.message);
        self
    }

    /// 404: no such collection.
    pub fn not_found(name: &str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            message: format!("Not found: Collection `{name}` doesn't exist!"),
        }
    }

    /// 500: the host failed (I/O).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::INTERNAL_SERVER_ERROR, code: "internal", message: message.into() }
    }

    /// 503: the server cannot take the write now (retry later).
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, code: "unavailable", message: message.into() }
    }

    /// 400 from the core's typed error (which names what is wrong and where).
    pub fn core(e: shoal_core::Error) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, code: e.code(), message: e.to_string() }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"status": {"error": self.message}, "code": self.code, "time": 0.0});
        (self.status, json_response(body.to_string())).into_response()
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> ApiError {
        let status = r.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE { "too_large" } else { "bad_body" };
        ApiError { status, code, message: r.body_text() }
    }
}

/// The server's state: the open collections.
pub struct AppState {
    collections: RwLock<BTreeMap<String, Arc<Store>>>,
    /// The read-only collections of `--remote` (fixed at start).
    remote: BTreeMap<String, Arc<ServedSet>>,
    root: PathBuf,
    opts: Arc<Options>,
    api_key: Option<String>,
    metrics: metrics::Metrics,
    log_requests: bool,
    static_dir: Option<PathBuf>,
}

impl AppState {
    /// Opens every collection under `data/collections`.
    pub fn open(args: &ServeArgs) -> Result<AppState, HostError> {
        let root = args.data.join("collections");
        std::fs::create_dir_all(&root).map_err(|e| HostError::io(&root, "create", e))?;
        let seal_rows = args.seal_rows.max(1);
        let merge_policy = shoal_core::set::MergePolicy {
            merge_factor: args.merge_factor.max(2),
            min_merge_rows: seal_rows,
            max_merge_rows: args.max_segment_rows.max(seal_rows),
            ..shoal_core::set::MergePolicy::default()
        };
        let opts = Arc::new(Options { sync: args.durability == Durability::Batch, seal_rows, merge_policy });
        let mut collections = BTreeMap::new();
        for entry in std::fs::read_dir(&root).map_err(|e| HostError::io(&root, "list", e))? {
            let entry = entry.map_err(|e| HostError::io(&root, "list", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                // A creation or deletion that a crash interrupted.
                let _ = std::fs::remove_dir_all(entry.path());
                continue;
            }
            if !valid_name(&name) {
                continue;
            }
            let store = Store::open(entry.path(), &name, Arc::clone(&opts))
                .map_err(|e| HostError::Usage(format!("collection {name}: {}", e.message)))?;
            let store = Arc::new(store);
            // Merges a previous run did not get to.
            store.maybe_merge();
            collections.insert(name, store);
        }
        let remote = Self::open_remote(args, &collections)?;
        Ok(AppState {
            collections: RwLock::new(collections),
            remote,
            root,
            opts,
            api_key: args.api_key.clone().filter(|k| !k.is_empty()),
            metrics: metrics::Metrics::default(),
            log_requests: args.log_requests,
            static_dir: args.static_dir.clone(),
        })
    }

    /// Opens the sets of `--remote`, each named once and not as a local collection.
    fn open_remote(
        args: &ServeArgs,
        local: &BTreeMap<String, Arc<Store>>,
    ) -> Result<BTreeMap<String, Arc<ServedSet>>, HostError> {
        let mut remote = BTreeMap::new();
        // Searches that may read at once per collection: one per thread that can run them.
        let lanes = crate::commands::threads()
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get()))
            .clamp(2, 16);
        let disk = match &args.remote_cache_dir {
            Some(dir) => Some(crate::remote::DiskCache::open(dir, args.remote_cache_dir_mib.saturating_mul(1 << 20))?),
            None => None,
        };
        let options = crate::remote::ReadOptions {
            cache_bytes: args.remote_cache_mib.saturating_mul(1 << 20),
            multipart: false,
            disk,
        };
        for spec in &args.remote {
            let (name, location) = remote::parse_spec(spec)?;
            if local.contains_key(&name) || remote.contains_key(&name) {
                return Err(HostError::Usage(format!("--remote {spec:?}: a collection named {name:?} exists already")));
            }
            let set = ServedSet::open(&location, options.clone(), lanes)
                .map_err(|e| HostError::Usage(format!("--remote {name}: {e}")))?;
            let set = Arc::new(set);
            if args.remote_poll > 0 {
                follow(&name, Arc::downgrade(&set), std::time::Duration::from_secs(args.remote_poll));
            }
            remote.insert(name, set);
        }
        Ok(remote)
    }

    /// The collection called `name` of the data folder (a read-only one is refused: only
    /// [`target`](Self::target) gives it).
    fn get(&self, name: &str) -> Result<Arc<Store>, ApiError> {
        if self.remote.contains_key(name) {
            return Err(remote::read_only(name));
        }
        self.collections.read().expect("lock poisoned").get(name).cloned().ok_or_else(|| ApiError::not_found(name))
    }

    /// The collection called `name`, local or read-only, for the routes that can search both.
    fn target(&self, name: &str) -> Result<Target, ApiError> {
        match self.remote.get(name) {
            Some(set) => Ok(Target::Remote(set.snapshot())),
            None => self.get(name).map(Target::Local),
        }
    }

    /// Names of the collections (local and read-only).
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.collections.read().expect("lock poisoned").keys().cloned().collect();
        names.extend(self.remote.keys().cloned());
        names.sort();
        names
    }

    /// Creates a collection; 409 if it exists.
    fn create(&self, name: &str, meta: Meta) -> Result<(), ApiError> {
        check_name(name)?;
        let mut all = self.collections.write().expect("lock poisoned");
        if all.contains_key(name) || self.remote.contains_key(name) {
            return Err(ApiError {
                status: StatusCode::CONFLICT,
                code: "exists",
                message: format!("Wrong input: Collection `{name}` already exists!"),
            });
        }
        let store = Store::create(self.root.join(name), name, meta, Arc::clone(&self.opts))?;
        all.insert(name.to_string(), Arc::new(store));
        Ok(())
    }

    /// Deletes a collection; false if there was none.
    fn drop_collection(&self, name: &str) -> Result<bool, ApiError> {
        check_name(name)?;
        if self.remote.contains_key(name) {
            return Err(remote::read_only(name));
        }
        let store = self.collections.write().expect("lock poisoned").remove(name);
        match store {
            Some(s) => s.destroy().map(|()| true),
            None => Ok(false),
        }
    }
}

/// Collection names: 1–64 of `A-Z a-z 0-9 _ -`, not starting with `-` (no path can be formed).
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('-')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_name(name: &str) -> Result<(), ApiError> {
    if name == "aliases" {
        // `/collections/aliases` is Qdrant's alias route, not a collection's.
        return Err(ApiError::bad_request("collection name \"aliases\": reserved (Qdrant's /collections/aliases)"));
    }
    if valid_name(name) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "collection name {name:?}: use 1-64 characters of A-Z a-z 0-9 _ - (not starting with -)"
        )))
    }
}

/// A response with a JSON body.
pub(crate) fn json_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// The JSON of a successful Qdrant-style response.
pub(crate) fn ok(result: Value, started: Instant) -> Response {
    let body = json!({"result": result, "status": "ok", "time": started.elapsed().as_secs_f64()});
    json_response(body.to_string())
}

/// Parses a JSON body (`{}` when empty).
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("malformed JSON body: {e}")))
}

/// Runs blocking work (a search, a synced write) off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ApiError::internal(format!("worker failed: {e}")))?
}

type Shared = State<Arc<AppState>>;

/// `POST /collections/{name}/search`: Shoal's search request and response.
async fn search(State(app): Shared, Path(name): Path<String>, body: Result<Bytes, BytesRejection>) -> Response {
    let run = async {
        let target = app.target(&name)?;
        let body = body?;
        let text = std::str::from_utf8(&body).map_err(|_| ApiError::bad_request("body is not UTF-8"))?;
        let req = shoal_core::SearchRequest::from_json(text).map_err(ApiError::core)?;
        let res = blocking(move || match target {
            Target::Local(store) => store.read().search(&req).map_err(ApiError::core),
            Target::Remote(set) => set.search(&req),
        })
        .await?;
        Ok::<_, ApiError>(json_response(res.to_json()))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// `POST /collections/{name}/points/binary`: a binary batch, logged as received.
async fn upsert_binary(
    State(app): Shared,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let run = async {
        let store = app.get(&name)?;
        let ct = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        if ct != "application/octet-stream" {
            return Err(ApiError {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                code: "content_type",
                message: "binary batches are sent as application/octet-stream".into(),
            });
        }
        let body = body?;
        let n = blocking(move || {
            let b = batch::parse(&body).map_err(ApiError::bad_request)?;
            store.upsert(&b, Some(&body))?;
            Ok(b.ids.len())
        })
        .await?;
        Ok(ok(json!({"status": "completed", "points": n}), started))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// `POST /collections/{name}/seal`: seal logged points into a new segment now (waits; merges
/// the policy then asks for run in the background).
async fn seal(State(app): Shared, Path(name): Path<String>) -> Response {
    let started = Instant::now();
    let run = async {
        let store = app.get(&name)?;
        let sealed = blocking(move || {
            let sealed = store.seal();
            store.maybe_merge();
            sealed
        })
        .await?;
        Ok::<_, ApiError>(ok(json!({"sealed": sealed}), started))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// `GET /ui/{path}`: a file of `--static-dir` (a folder gives its `index.html`). Paths with
/// `..` or hidden components are refused, so nothing outside the folder is reachable.
async fn static_file(State(app): Shared, path: Option<Path<String>>) -> Response {
    let not_found = || ApiError { status: StatusCode::NOT_FOUND, code: "not_found", message: "no such file".into() };
    let Some(mut file) = app.static_dir.clone() else { return not_found().into_response() };
    let path = path.map(|Path(p)| p).unwrap_or_default();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        // One plain name per part: no `..`, no hidden files, no `C:` or other prefixes.
        let mut components = std::path::Path::new(part).components();
        let plain = matches!(components.next(), Some(std::path::Component::Normal(_))) && components.next().is_none();
        if !plain || part.starts_with('.') || part.contains('\\') {
            return not_found().into_response();
        }
        file.push(part);
    }
    if file.is_dir() {
        file.push("index.html");
    }
    let kind = match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "wasm" => "application/wasm",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    };
    match tokio::fs::read(&file).await {
        Ok(bytes) => ([(header::CONTENT_TYPE, kind)], bytes).into_response(),
        Err(_) => not_found().into_response(),
    }
}

async fn healthz() -> Response {
    json_response(r#"{"status":"ok"}"#.to_string())
}

async fn metrics_route(State(app): Shared) -> Response {
    let stores: Vec<Arc<Store>> = app.collections.read().expect("lock poisoned").values().cloned().collect();
    // Gauges take each collection's read lock: off the async workers.
    let text = blocking(move || {
        let collections: Vec<(String, store::Gauges)> = stores.iter().map(|s| (s.name.clone(), s.gauges())).collect();
        Ok(app.metrics.render(&collections))
    })
    .await;
    match text {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Checks the API key, then counts and times the request.
async fn guard(State(app): Shared, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = req.method().clone();
    let response = match &app.api_key {
        Some(key) if !has_key(req.headers(), key) => ApiError {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message: "Unauthorized: missing or wrong api-key".into(),
        }
        .into_response(),
        _ => next.run(req).await,
    };
    let elapsed = started.elapsed();
    app.metrics.record(method.as_str(), &route, response.status().as_u16(), elapsed);
    if app.log_requests {
        let line = json!({"method": method.as_str(), "route": route, "status": response.status().as_u16(),
                          "ms": elapsed.as_secs_f64() * 1e3});
        eprintln!("{line}");
    }
    response
}

fn has_key(headers: &HeaderMap, key: &str) -> bool {
    let given = headers.get("api-key").and_then(|v| v.to_str().ok()).or_else(|| {
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
    });
    // Compare in constant time: the key's length is not secret, its bytes are.
    given.is_some_and(|g| g.len() == key.len() && g.bytes().zip(key.bytes()).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0)
}

/// The router of `shoal serve` over `app`.
pub fn router(app: Arc<AppState>, max_body: usize) -> Router {
    Router::new()
        // Liveness and readiness probes, under Qdrant's names too.
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/readyz", get(healthz))
        .route("/metrics", get(metrics_route))
        .route("/collections/{name}/search", post(search))
        .route("/collections/{name}/points/binary", post(upsert_binary))
        .route("/collections/{name}/seal", post(seal))
        .route("/ui/", get(static_file))
        .route("/ui/{*path}", get(static_file))
        .merge(qdrant::routes())
        .fallback(|| async {
            ApiError { status: StatusCode::NOT_FOUND, code: "no_route", message: "no such route".into() }
        })
        .method_not_allowed_fallback(|method: axum::http::Method, uri: axum::http::Uri| async move {
            ApiError {
                status: StatusCode::METHOD_NOT_ALLOWED,
                code: "method_not_allowed",
                message: format!("{method} {}: this route takes other methods", uri.path()),
            }
        })
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), guard))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(app)
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(args: &ServeArgs) -> Result<(), HostError> {
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    // `shoal --threads N serve`: N request workers, and N threads for seals and merges.
    if let Some(n) = crate::commands::threads() {
        rt.worker_threads(n);
    }
    let rt = rt.enable_all().build().map_err(|e| HostError::io(&args.data, "start the runtime for", e))?;
    let app = Arc::new(AppState::open(args)?);
    let names = app.names();
    let remote: BTreeMap<String, String> = app.remote.iter().map(|(n, s)| (n.clone(), s.location.clone())).collect();
    rt.block_on(async {
        let listener =
            tokio::net::TcpListener::bind(args.addr).await.map_err(|e| HostError::io(&args.data, "listen for", e))?;
        let addr = listener.local_addr().map_err(|e| HostError::io(&args.data, "listen for", e))?;
        eprintln!(
            "{}",
            json!({"event": "listening", "addr": addr.to_string(), "data": args.data, "collections": names,
                   "remote": remote})
        );
        let router = router(app, args.max_body_mib.saturating_mul(1 << 20));
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown())
            .await
            .map_err(|e| HostError::io(&args.data, "serve", e))
    })
}

async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
    eprintln!("{}", json!({"event": "shutdown"}));
}
