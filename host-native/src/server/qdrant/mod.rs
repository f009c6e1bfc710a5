//! Qdrant's REST API for the calls Shoal shares with it: the same paths and JSON shapes, so
//! `qdrant-client` works unmodified against `shoal serve`.
//!
//! Request bodies are typed (`bodies.rs`): a field Qdrant does not define, or one Shoal does
//! not support, is a 400 naming it; `docs/qdrant-compat.md` lists every endpoint and option.
//! The search calls (`query` with `prefetch` and fusion, `search`, their batches) are in
//! `search.rs`, the collection calls in `collections.rs`. Point ids are integers or UUIDs;
//! collections hold named dense vectors and sparse vectors. Collections created with Qdrant's
//! shape have nested payloads (any JSON object, filters by path); `PUT .../index` declares a
//! path's type, `DELETE .../index/{field}` removes it.

mod bodies;
mod collections;
mod search;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use serde_json::{Map, Value, json};
use shoal_core::{PointId, SparseVector};
use shoal_payload::path::Step;

use self::bodies::{VectorSel, refuse, refuse_shard_key, with_vector};
use self::collections::{create, create_index, delete_collection, delete_index, exists, info, list, root};
use self::search::{query, query_batch, search, search_batch};
use super::batch::Batch;
use super::remote::Target;
use super::store::Store;
use super::{ApiError, AppState, blocking, ok, parse_json};

type Shared = State<Arc<AppState>>;
type Body = Result<Bytes, BytesRejection>;

/// The Qdrant version whose API these routes follow (reported by `GET /`).
const QDRANT_API_VERSION: &str = "1.20.0";

static OPERATION: AtomicU64 = AtomicU64::new(1);

/// The `result` of a write: Qdrant's `UpdateResult`.
fn update_result() -> Value {
    json!({"operation_id": OPERATION.fetch_add(1, Ordering::Relaxed), "status": "completed"})
}

/// A JSON route on collection `name`: the body parsed as `T` (Qdrant's request type), then `f`
/// on a blocking thread (it may read or write the collection), its value answered in Qdrant's
/// envelope.
async fn on_json<T, F>(app: Arc<AppState>, name: String, body: Body, f: F) -> Response
where
    T: serde::de::DeserializeOwned + Send + 'static,
    F: FnOnce(Arc<Store>, T) -> Result<Value, ApiError> + Send + 'static,
{
    json_route(app.get(&name), body, f).await
}

/// [`on_json`] for the search routes, which also search read-only collections.
async fn on_search<T, F>(app: Arc<AppState>, name: String, body: Body, f: F) -> Response
where
    T: serde::de::DeserializeOwned + Send + 'static,
    F: FnOnce(Target, T) -> Result<Value, ApiError> + Send + 'static,
{
    json_route(app.target(&name), body, f).await
}

async fn json_route<C, T, F>(found: Result<C, ApiError>, body: Body, f: F) -> Response
where
    C: Send + 'static,
    T: serde::de::DeserializeOwned + Send + 'static,
    F: FnOnce(C, T) -> Result<Value, ApiError> + Send + 'static,
{
    respond(async {
        let started = Instant::now();
        let collection = found?;
        let body: T = parse_json(&body?)?;
        let result = blocking(move || f(collection, body)).await?;
        Ok(ok(result, started))
    })
    .await
}

/// Qdrant endpoints Shoal does not answer (yet), each a 400 naming it rather than a 404 that
/// reads like a typo (`docs/qdrant-compat.md`).
const UNSUPPORTED: &[(&str, &[&str])] = &[
    ("/aliases", &["GET"]),
    ("/collections/aliases", &["POST"]),
    ("/collections/{name}/aliases", &["GET"]),
    ("/collections/{name}/points/vectors", &["PUT"]),
    ("/collections/{name}/points/vectors/delete", &["POST"]),
    ("/collections/{name}/points/batch", &["POST"]),
    ("/collections/{name}/points/search/groups", &["POST"]),
    ("/collections/{name}/points/search/matrix/pairs", &["POST"]),
    ("/collections/{name}/points/search/matrix/offsets", &["POST"]),
    ("/collections/{name}/points/query/groups", &["POST"]),
    ("/collections/{name}/points/recommend", &["POST"]),
    ("/collections/{name}/points/recommend/batch", &["POST"]),
    ("/collections/{name}/points/recommend/groups", &["POST"]),
    ("/collections/{name}/points/discover", &["POST"]),
    ("/collections/{name}/points/discover/batch", &["POST"]),
    ("/collections/{name}/facet", &["POST"]),
    ("/collections/{name}/optimizations", &["GET"]),
    ("/collections/{name}/vectors/{vector}", &["PUT", "DELETE"]),
    ("/collections/{name}/shards/{shard}/snapshot", &["GET"]),
    ("/collections/{name}/shards/{shard}/snapshots", &["GET", "POST"]),
    ("/collections/{name}/shards/{shard}/snapshots/upload", &["POST"]),
    ("/collections/{name}/shards/{shard}/snapshots/recover", &["PUT"]),
    ("/collections/{name}/shards/{shard}/snapshots/{snapshot}", &["GET", "DELETE"]),
    ("/cluster/telemetry", &["GET"]),
    ("/cluster/recover", &["POST"]),
    ("/cluster/peer/{peer}", &["DELETE"]),
    ("/quotas", &["GET", "PUT"]),
    ("/collections/{name}/snapshots", &["GET", "POST"]),
    ("/collections/{name}/snapshots/upload", &["POST"]),
    ("/collections/{name}/snapshots/recover", &["PUT"]),
    ("/collections/{name}/snapshots/{snapshot}", &["GET", "DELETE"]),
    ("/snapshots", &["GET", "POST"]),
    ("/snapshots/{snapshot}", &["GET", "DELETE"]),
    ("/collections/{name}/cluster", &["GET", "POST"]),
    ("/collections/{name}/shards", &["GET", "PUT"]),
    ("/collections/{name}/shards/delete", &["POST"]),
    ("/cluster", &["GET"]),
    ("/telemetry", &["GET"]),
    ("/locks", &["GET", "POST"]),
    ("/issues", &["GET", "DELETE"]),
];

/// The answer to an endpoint of [`UNSUPPORTED`].
async fn unsupported(method: axum::http::Method, path: axum::extract::MatchedPath) -> Response {
    ApiError::bad_request(format!(
        "{method} {}: not supported by Shoal (see docs/qdrant-compat.md for what is)",
        path.as_str()
    ))
    .into_response()
}

/// The routes.
pub fn routes() -> Router<Arc<AppState>> {
    let mut router = Router::new()
        .route("/", get(root))
        .route("/collections", get(list))
        .route("/collections/{name}", put(create).get(info).delete(delete_collection).patch(unsupported))
        .route("/collections/{name}/exists", get(exists))
        .route("/collections/{name}/index", put(create_index))
        .route("/collections/{name}/index/{field}", delete(delete_index))
        .route("/collections/{name}/points", put(upsert).post(retrieve))
        .route("/collections/{name}/points/{id}", get(retrieve_one))
        .route("/collections/{name}/points/query", post(query))
        .route("/collections/{name}/points/query/batch", post(query_batch))
        .route("/collections/{name}/points/search/batch", post(search_batch))
        .route("/collections/{name}/points/search", post(search))
        .route("/collections/{name}/points/count", post(count))
        .route("/collections/{name}/points/scroll", post(scroll))
        .route("/collections/{name}/points/delete", post(delete_points))
        .route("/collections/{name}/points/payload", post(set_payload).put(overwrite_payload))
        .route("/collections/{name}/points/payload/delete", post(delete_payload))
        .route("/collections/{name}/points/payload/clear", post(clear_payload));
    for &(path, methods) in UNSUPPORTED {
        let mut route = axum::routing::MethodRouter::new();
        for m in methods {
            let filter =
                axum::routing::MethodFilter::try_from(axum::http::Method::from_bytes(m.as_bytes()).expect("a method"))
                    .expect("a routable method");
            route = route.on(filter, unsupported);
        }
        router = router.route(path, route);
    }
    router
}

/// Runs a handler body, turning an error into its response.
async fn respond(f: impl Future<Output = Result<Response, ApiError>>) -> Response {
    f.await.unwrap_or_else(IntoResponse::into_response)
}

/// A point id: an unsigned integer, or a string holding a UUID (Qdrant's forms).
fn point_id(v: &Value, at: &str) -> Result<PointId, ApiError> {
    shoal_payload::point_id_from_json(v).ok_or_else(|| {
        let mut e = ApiError::bad_request(format!(
            "{at}: a point id is an unsigned integer or a UUID string, not {}",
            truncated_json(v)
        ));
        e.code = "invalid_id";
        e
    })
}

/// `v` as JSON, cut to 60 bytes for an error message.
fn truncated_json(v: &Value) -> String {
    let mut text = v.to_string();
    if text.len() > 60 {
        let mut cut = 57;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    text
}

/// A point's vector: a list of numbers, or `{"": [...]}` (the unnamed vector).
fn vector_of(v: &Value, at: &str, out: &mut Vec<f32>) -> Result<usize, ApiError> {
    let list = match v {
        Value::Array(a) => a,
        Value::Object(o) if o.len() == 1 && o.contains_key("") => {
            return vector_of(&o[""], at, out);
        }
        _ => {
            return Err(ApiError::bad_request(format!("{at}: expected a list of numbers")));
        }
    };
    for (i, x) in list.iter().enumerate() {
        let x = x.as_f64().ok_or_else(|| ApiError::bad_request(format!("{at}[{i}]: expected a number")))?;
        out.push(x as f32);
    }
    Ok(list.len())
}

/// A batch's vectors as they are read, point by point: the dense ones (every point holds each)
/// and the sparse ones (by the collection's names) into columns.
struct PointVectors {
    columns: crate::server::batch::SparseColumns,
    /// The dense vectors' names in requests (one: `""` unless the collection named it), in the
    /// core's order, with their dimensions and the vectors read so far.
    dense: Vec<(String, usize, Vec<f32>)>,
}

impl PointVectors {
    fn new(store: &Store) -> PointVectors {
        let col = store.read();
        let names = store.meta.dense_names();
        PointVectors {
            columns: store.meta.sparse_vectors.keys().map(|n| (n.clone(), Vec::new())).collect(),
            dense: names.into_iter().zip(col.dense_vectors()).map(|(n, s)| (n, s.dim, Vec::new())).collect(),
        }
    }

    /// Reads the vectors of one point: a list (the collection's one dense vector), or `{NAME:
    /// list | {"indices", "values"}, ...}` holding every dense vector and any sparse ones
    /// (`None` in the columns for those it lacks).
    fn push(&mut self, v: &Value, at: &str) -> Result<(), ApiError> {
        let names = || self.dense.iter().map(|d| format!("{:?}", d.0)).collect::<Vec<_>>().join(", ");
        match v {
            Value::Object(o) => {
                if let Some(name) = o
                    .keys()
                    .find(|k| !self.dense.iter().any(|d| d.0 == **k) && !self.columns.iter().any(|(n, _)| n == *k))
                {
                    return Err(ApiError::bad_request(format!(
                        "{at}: the collection has no vector named {name:?} (its dense vectors: {}, and its sparse vectors)",
                        names()
                    )));
                }
                for (name, dim, out) in &mut self.dense {
                    let v = o.get(name.as_str()).ok_or_else(|| {
                        ApiError::bad_request(format!("{at}: every point holds the dense vector {name:?} in Shoal"))
                    })?;
                    read_dense(v, &format!("{at}.{name}"), *dim, out)?;
                }
            }
            v if self.dense.len() == 1 => {
                let (_, dim, out) = &mut self.dense[0];
                read_dense(v, at, *dim, out)?;
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "{at}: the collection has several dense vectors: give {{name: vector}} for each of {}",
                    names()
                )));
            }
        }
        for (name, column) in &mut self.columns {
            let sparse = match v.get(name.as_str()) {
                Some(s) => {
                    Some(SparseVector::from_value(s).map_err(|e| ApiError::bad_request(format!("{at}.{name}: {e}")))?)
                }
                None => None,
            };
            column.push(sparse);
        }
        Ok(())
    }

    /// The batch of `ids` and `payloads` with the vectors read.
    fn batch(mut self, ids: Vec<PointId>, payloads: Vec<Value>) -> Batch<'static> {
        self.columns.retain(|(_, c)| c.iter().any(Option::is_some));
        let mut dense = self.dense.into_iter();
        let (_, dim, vectors) = dense.next().expect("one dense vector at least");
        let dense = dense.map(|(_, dim, v)| (dim, v)).collect();
        Batch { dim, ids, vectors: vectors.into(), payloads, sparse: self.columns, dense }
    }
}

/// One dense vector of `dim` numbers at `at`, appended to `out`.
fn read_dense(v: &Value, at: &str, dim: usize, out: &mut Vec<f32>) -> Result<(), ApiError> {
    let n = vector_of(v, at, out)?;
    if n != dim {
        let mut e = ApiError::core(shoal_core::Error::DimensionMismatch { expected: dim, found: n });
        e.message = format!("{at}: {}", e.message);
        return Err(e);
    }
    Ok(())
}

/// `PUT /collections/{name}/points`: `{"points": [{"id", "vector", "payload"}]}` or
/// `{"batch": {"ids", "vectors", "payloads"}}`.
async fn upsert(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::Upsert| {
        refuse_shard_key(&body.shard_key)?;
        refuse("update_filter", &body.update_filter, "conditional updates are not supported")?;
        refuse("update_mode", &body.update_mode, "every upsert inserts or replaces")?;
        let (mut ids, mut payloads) = (Vec::new(), Vec::new());
        let mut vectors = PointVectors::new(&store);
        match (body.points, body.batch) {
            (Some(points), None) => {
                for (i, p) in points.into_iter().enumerate() {
                    let at = format!("points[{i}]");
                    ids.push(point_id(&p.id, &format!("{at}.id"))?);
                    vectors.push(&p.vector, &format!("{at}.vector"))?;
                    payloads.push(p.payload.unwrap_or(Value::Null));
                }
            }
            (None, Some(b)) => {
                for (i, id) in b.ids.iter().enumerate() {
                    ids.push(point_id(id, &format!("batch.ids[{i}]"))?);
                }
                let n = ids.len();
                match &b.vectors {
                    Value::Array(list) if list.len() == n => {
                        for (i, v) in list.iter().enumerate() {
                            vectors.push(v, &format!("batch.vectors[{i}]"))?;
                        }
                    }
                    // Named: per name one vector per id, read point by point as `{name: vector}`.
                    Value::Object(columns) if columns.values().all(|c| c.as_array().is_some_and(|c| c.len() == n)) => {
                        for i in 0..n {
                            // (`null`: the point does not hold that vector.)
                            let point: Map<String, Value> = columns
                                .iter()
                                .filter(|(_, c)| !c[i].is_null())
                                .map(|(name, c)| (name.clone(), c[i].clone()))
                                .collect();
                            vectors.push(&Value::Object(point), &format!("batch.vectors[{i}]"))?;
                        }
                    }
                    _ => {
                        return Err(ApiError::bad_request(
                            "batch.vectors: one vector per id, or per vector name a list of one vector per id",
                        ));
                    }
                }
                if let Some(ps) = b.payloads {
                    if ps.len() != ids.len() {
                        return Err(ApiError::bad_request("batch: as many payloads as ids"));
                    }
                    payloads = ps;
                }
            }
            _ => return Err(ApiError::bad_request("give `points` or `batch`")),
        }
        if ids.is_empty() {
            return Ok(update_result());
        }
        // `{}` and null are both "no payload"; all-empty means the batch carries none.
        for p in &mut payloads {
            if p.as_object().is_some_and(Map::is_empty) {
                *p = Value::Null;
            }
        }
        if payloads.iter().all(Value::is_null) {
            payloads.clear();
        }
        let batch = vectors.batch(ids, payloads);
        store.upsert(&batch, None)?;
        Ok(update_result())
    })
    .await
}

/// Which payload fields a response carries: `true`/`false`, a list of fields, or
/// `{"include": [...]}` / `{"exclude": [...]}` — top-level keys, or on a nested collection JSON
/// paths ([`on`](Self::on) parses them once per request).
enum PayloadSel {
    None,
    All,
    Include(Vec<String>),
    Exclude(Vec<String>),
    IncludePaths(Vec<Vec<Step>>),
    ExcludePaths(Vec<Vec<Step>>),
}

impl PayloadSel {
    fn parse(v: Option<&Value>, default: bool) -> Result<PayloadSel, ApiError> {
        let names = |v: &Value| -> Result<Vec<String>, ApiError> {
            v.as_array()
                .and_then(|a| a.iter().map(|x| x.as_str().map(String::from)).collect::<Option<Vec<_>>>())
                .ok_or_else(|| ApiError::bad_request("with_payload: expected a list of field names"))
        };
        Ok(match v {
            None | Some(Value::Null) => {
                if default {
                    PayloadSel::All
                } else {
                    PayloadSel::None
                }
            }
            Some(Value::Bool(true)) => PayloadSel::All,
            Some(Value::Bool(false)) => PayloadSel::None,
            Some(a @ Value::Array(_)) => PayloadSel::Include(names(a)?),
            Some(Value::Object(o)) => match (o.get("include"), o.get("exclude")) {
                (Some(i), None) => PayloadSel::Include(names(i)?),
                (None, Some(e)) => PayloadSel::Exclude(names(e)?),
                _ => return Err(ApiError::bad_request("with_payload: give include or exclude")),
            },
            Some(_) => return Err(ApiError::bad_request("with_payload: expected a bool, a list or include/exclude")),
        })
    }

    /// The selection for a collection: on a nested one the keys are JSON paths, parsed here
    /// (a key that is not a path is refused, as Qdrant refuses it).
    fn on(self, nested: bool) -> Result<PayloadSel, ApiError> {
        let paths = |names: Vec<String>| {
            names
                .iter()
                .map(|n| {
                    shoal_payload::path::parse(n)
                        .ok_or_else(|| ApiError::bad_request(format!("with_payload: {n:?} is not a JSON path")))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match self {
            PayloadSel::Include(n) if nested => PayloadSel::IncludePaths(paths(n)?),
            PayloadSel::Exclude(n) if nested => PayloadSel::ExcludePaths(paths(n)?),
            other => other,
        })
    }

    fn wanted(&self) -> bool {
        !matches!(self, PayloadSel::None)
    }

    /// The selected part of a stored payload: top-level keys, or JSON paths selected as Qdrant
    /// does (`a.b` keeps `a` with only its `b`).
    fn apply(&self, doc: Value) -> Value {
        use shoal_payload::path;
        let Value::Object(mut m) = doc else { return json!({}) };
        match self {
            PayloadSel::None => return Value::Null,
            PayloadSel::All => {}
            PayloadSel::IncludePaths(ps) => m = path::select(&m, &|at| ps.iter().any(|p| path::included(p, at))),
            PayloadSel::ExcludePaths(ps) => m = path::select(&m, &|at| !ps.iter().any(|p| path::excluded(p, at))),
            PayloadSel::Include(keep) => m.retain(|k, _| keep.contains(k)),
            PayloadSel::Exclude(drop) => m.retain(|k, _| !drop.contains(k)),
        }
        Value::Object(m)
    }
}

/// The dense vectors' names in a collection's requests and answers, in the core's order.
fn dense_names(store: &Store) -> Vec<String> {
    store.meta.dense_names()
}

/// A record of point `id`: `{"id", "payload", "vector"}`. `dense`: the dense vectors' names in
/// answers (one: `""` unless the collection named it; an unnamed vector alone comes as a bare
/// list, as Qdrant gives it).
fn record(col: &shoal_core::Collection, id: PointId, sel: &PayloadSel, vectors: &VectorSel, dense: &[String]) -> Value {
    let payload = if sel.wanted() { sel.apply(col.payload(id).unwrap_or(Value::Null)) } else { Value::Null };
    let vector = |d: usize| col.dense_vector(id, d).map_or(Value::Null, |v| json!(v));
    let vector = match vectors {
        VectorSel::None => Value::Null,
        VectorSel::Names(names) if names.is_empty() => Value::Null,
        // One dense vector and nothing else: a bare list, as Qdrant answers for its unnamed vector.
        _ if col.sparse_vectors().is_empty() && dense.len() == 1 && dense[0].is_empty() => vector(0),
        sel => {
            let mut m = Map::new();
            for (d, name) in dense.iter().enumerate().filter(|(_, n)| sel.wants(n)) {
                m.insert(name.clone(), vector(d));
            }
            for s in col.sparse_vectors().iter().filter(|s| sel.wants(&s.name)) {
                // A damaged segment (which `verify` reports) shows no vector here.
                if let Ok(Some(v)) = col.sparse_vector(id, &s.name) {
                    m.insert(s.name.clone(), v.to_value());
                }
            }
            Value::Object(m)
        }
    };
    json!({"id": id, "payload": payload, "vector": vector})
}

fn ids_of(list: &[Value], at: &str) -> Result<Vec<PointId>, ApiError> {
    list.iter().enumerate().map(|(i, x)| point_id(x, &format!("{at}[{i}]"))).collect()
}

/// `POST /collections/{name}/points`: `{"ids", "with_payload", "with_vector"}`.
async fn retrieve(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::PointRequest| {
        refuse_shard_key(&body.shard_key)?;
        let ids = ids_of(&body.ids, "ids")?;
        let sel = PayloadSel::parse(body.with_payload.as_ref(), true)?;
        let with_vector = with_vector(&body.with_vector)?;
        let col = store.read();
        with_vector.check(&col, &dense_names(&store))?;
        let sel = sel.on(col.nested())?;
        Ok(ids
            .iter()
            .filter(|&&id| col.contains(id))
            .map(|&id| record(&col, id, &sel, &with_vector, &dense_names(&store)))
            .collect())
    })
    .await
}

async fn retrieve_one(State(app): Shared, Path((name, id)): Path<(String, String)>) -> Response {
    respond(async {
        let started = Instant::now();
        let store = app.get(&name)?;
        let id = PointId::parse_path(&id).ok_or_else(|| {
            let mut e = ApiError::bad_request(format!(
                "point id {:?} is neither an unsigned integer nor a UUID",
                id.chars().take(60).collect::<String>()
            ));
            e.code = "invalid_id";
            e
        })?;
        let rec = blocking(move || {
            let col = store.read();
            if !col.contains(id) {
                return Err(ApiError {
                    status: axum::http::StatusCode::NOT_FOUND,
                    code: "not_found",
                    message: format!("Not found: No point with id {id} found"),
                });
            }
            Ok(record(&col, id, &PayloadSel::All, &VectorSel::All, &dense_names(&store)))
        })
        .await?;
        Ok(ok(rec, started))
    })
    .await
}

/// `POST /collections/{name}/points/count`: `{"filter", "exact"}`.
async fn count(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::CountRequest| {
        refuse_shard_key(&body.shard_key)?;
        let col = store.read();
        let n = match body.filter.filter(|f| !f.is_null()) {
            None => col.len(),
            Some(f) => col.matching_ids(Some(&f)).map_err(ApiError::core)?.len(),
        };
        Ok(json!({"count": n}))
    })
    .await
}

/// `POST /collections/{name}/points/scroll`: `{"filter", "limit", "offset", "with_payload",
/// "with_vector"}`, ids ascending; `next_page_offset` is the id to continue from.
async fn scroll(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::ScrollRequest| {
        refuse_shard_key(&body.shard_key)?;
        refuse("order_by", &body.order_by, "points come in id order")?;
        let limit = body.limit.unwrap_or(10).clamp(1, 10_000) as usize;
        let from = match &body.offset {
            None | Some(Value::Null) => PointId::Num(0),
            Some(v) => point_id(v, "offset")?,
        };
        let sel = PayloadSel::parse(body.with_payload.as_ref(), true)?;
        let with_vector = with_vector(&body.with_vector)?;
        let col = store.read();
        with_vector.check(&col, &dense_names(&store))?;
        let sel = sel.on(col.nested())?;
        let ids = col.matching_ids(body.filter.as_ref()).map_err(ApiError::core)?;
        let start = ids.partition_point(|&id| id < from);
        let page = &ids[start..ids.len().min(start + limit)];
        let next = ids.get(start + limit).copied();
        let points: Vec<Value> =
            page.iter().map(|&id| record(&col, id, &sel, &with_vector, &dense_names(&store))).collect();
        Ok(json!({"points": points, "next_page_offset": next}))
    })
    .await
}

/// `POST /collections/{name}/points/delete`: `{"points": [ids]}` or `{"filter": {...}}`.
async fn delete_points(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::Delete| {
        refuse_shard_key(&body.shard_key)?;
        let ids = selector(&body.points, &body.filter)?;
        store.delete(ids.as_deref(), body.filter.as_ref())?;
        Ok(update_result())
    })
    .await
}

/// The points a delete or a payload change applies to: ids (`Some`), or every point passing
/// the filter (`None`), which must be a non-empty object.
fn selector(points: &Option<Vec<Value>>, filter: &Option<Value>) -> Result<Option<Vec<PointId>>, ApiError> {
    match (points, filter) {
        (Some(p), None) => Ok(Some(ids_of(p, "points")?)),
        // `{}` would match every point: Qdrant refuses that, so does Shoal.
        (None, Some(Value::Object(f))) if !f.is_empty() => Ok(None),
        (None, Some(_)) => Err(ApiError::bad_request("filter: expected a non-empty filter object")),
        // (A `null` filter reads as none.)
        _ => Err(ApiError::bad_request("give `points` (ids) or a non-empty filter object")),
    }
}

/// Deepest a payload may nest after a change (a write-ahead log line must parse back: JSON
/// parsers stop at 128 levels).
const MAX_PAYLOAD_DEPTH: usize = 64;

/// `POST /collections/{name}/points/payload`: sets the given keys of the points' payloads
/// (the other keys stay); with `key` (a JSON path, nested collections only), merges them into
/// the object(s) at that path instead, as Qdrant does (`shoal_payload::path::set_at`; arrays
/// grow by at most `MAX_SET_GROWTH` elements, payloads nest at most `MAX_PAYLOAD_DEPTH` deep).
async fn set_payload(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    use shoal_payload::path;
    on_json(app, name, body, |store, body: bodies::SetPayload| {
        refuse_shard_key(&body.shard_key)?;
        let steps = match &body.key {
            None | Some(Value::Null) => None,
            Some(_) if !store.read().nested() => {
                return Err(ApiError::bad_request(
                    "key: not supported by Shoal on a collection of flat fields (set top-level keys)",
                ));
            }
            Some(Value::String(key)) => Some(
                path::parse(key).ok_or_else(|| ApiError::bad_request(format!("key: {key:?} is not a JSON path")))?,
            ),
            Some(_) => return Err(ApiError::bad_request("key: expected a JSON path string")),
        };
        let ids = selector(&body.points, &body.filter)?;
        store.edit_payloads(ids.as_deref(), body.filter.as_ref(), |old| {
            let mut doc = match old {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            match &steps {
                Some(steps) if !path::set_at(&mut doc, steps, &body.payload) => {
                    return Err(ApiError::bad_request(format!(
                        "key: not supported by Shoal past {} new array elements per point (Qdrant grows arrays to any index)",
                        path::MAX_SET_GROWTH
                    )));
                }
                Some(_) => {}
                None => doc.extend(body.payload.clone()),
            }
            let doc = Value::Object(doc);
            if path::depth(&doc) > MAX_PAYLOAD_DEPTH {
                return Err(ApiError::bad_request(format!(
                    "key: the payload would nest more than {MAX_PAYLOAD_DEPTH} levels deep"
                )));
            }
            Ok(doc)
        })?;
        Ok(update_result())
    })
    .await
}

/// `PUT /collections/{name}/points/payload`: replaces the points' payloads.
async fn overwrite_payload(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::SetPayload| {
        refuse_shard_key(&body.shard_key)?;
        refuse("key", &body.key, "an overwrite replaces the whole payload")?;
        let ids = selector(&body.points, &body.filter)?;
        store.edit_payloads(ids.as_deref(), body.filter.as_ref(), |_| Ok(Value::Object(body.payload.clone())))?;
        Ok(update_result())
    })
    .await
}

/// `POST /collections/{name}/points/payload/delete`: removes keys from the points' payloads.
async fn delete_payload(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::DeletePayload| {
        refuse_shard_key(&body.shard_key)?;
        let ids = selector(&body.points, &body.filter)?;
        store.edit_payloads(ids.as_deref(), body.filter.as_ref(), |old| {
            Ok(match old {
                Value::Object(mut m) => {
                    m.retain(|k, _| !body.keys.contains(k));
                    Value::Object(m)
                }
                other => other,
            })
        })?;
        Ok(update_result())
    })
    .await
}

/// `POST /collections/{name}/points/payload/clear`: removes the points' payloads.
async fn clear_payload(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::Delete| {
        refuse_shard_key(&body.shard_key)?;
        let ids = selector(&body.points, &body.filter)?;
        store.edit_payloads(ids.as_deref(), body.filter.as_ref(), |_| Ok(Value::Null))?;
        Ok(update_result())
    })
    .await
}
