//! Qdrant's REST API for the calls Shoal shares with it: the same paths and JSON shapes, so
//! `qdrant-client` works unmodified against `shoal serve`.
//!
//! Differences, each an explicit 400 rather than a silent change: point ids are unsigned
//! integers (no UUIDs); one unnamed vector per point; payload values are keywords, integers,
//! floats, bools or text (no nested objects, geo or datetime). Collections created through
//! this API take new payload fields as they come (typed by their first value, as Qdrant's
//! payload indexes are); `PUT .../index` declares a field's type up front (needed for `text`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Map, Value, json};
use shoal_core::{FieldType, Metric, SearchParams, SearchRequest};

use super::batch::Batch;
use super::store::{Meta, Store};
use super::{ApiError, AppState, blocking, json_response, ok, parse_json};

type Shared = State<Arc<AppState>>;
type Body = Result<Bytes, BytesRejection>;

/// The Qdrant version whose API these routes follow (reported by `GET /`).
const QDRANT_API_VERSION: &str = "1.20.0";

static OPERATION: AtomicU64 = AtomicU64::new(1);

/// The `result` of a write: Qdrant's `UpdateResult`.
fn update_result() -> Value {
    json!({"operation_id": OPERATION.fetch_add(1, Ordering::Relaxed), "status": "completed"})
}

/// A JSON route on collection `name`: the body parsed as a JSON object, then `f` on a blocking
/// thread (it may read or write the collection), its value answered in Qdrant's envelope.
async fn on_json<F>(app: Arc<AppState>, name: String, body: Body, f: F) -> Response
where
    F: FnOnce(Arc<Store>, Map<String, Value>) -> Result<Value, ApiError> + Send + 'static,
{
    respond(async {
        let started = Instant::now();
        let store = app.get(&name)?;
        let body: Map<String, Value> = parse_json(&body?)?;
        let result = blocking(move || f(store, body)).await?;
        Ok(ok(result, started))
    })
    .await
}

/// The routes.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/", get(root))
        .route("/collections", get(list))
        .route("/collections/{name}", put(create).get(info).delete(delete_collection))
        .route("/collections/{name}/exists", get(exists))
        .route("/collections/{name}/index", put(create_index))
        .route("/collections/{name}/points", put(upsert).post(retrieve))
        .route("/collections/{name}/points/{id}", get(retrieve_one))
        .route("/collections/{name}/points/query", post(query))
        .route("/collections/{name}/points/search", post(search))
        .route("/collections/{name}/points/count", post(count))
        .route("/collections/{name}/points/scroll", post(scroll))
        .route("/collections/{name}/points/delete", post(delete_points))
}

/// Runs a handler body, turning an error into its response.
async fn respond(f: impl Future<Output = Result<Response, ApiError>>) -> Response {
    f.await.unwrap_or_else(IntoResponse::into_response)
}

async fn root() -> Response {
    let body = json!({"title": "shoal - vector search engine (Qdrant-compatible API)", "version": QDRANT_API_VERSION,
                      "shoal_version": env!("CARGO_PKG_VERSION")});
    json_response(body.to_string())
}

async fn list(State(app): Shared) -> Response {
    let started = Instant::now();
    let names: Vec<Value> = app.names().into_iter().map(|n| json!({"name": n})).collect();
    ok(json!({"collections": names}), started)
}

async fn exists(State(app): Shared, Path(name): Path<String>) -> Response {
    ok(json!({"exists": app.get(&name).is_ok()}), Instant::now())
}

/// `PUT /collections/{name}`: Qdrant's `{"vectors": {"size", "distance", "on_disk"}}`, or
/// Shoal's `{"dim", "metric", "fields", "index", "on_disk"}` (`index`: seal options, default
/// IVF-RaBitQ with 4-bit codes when mapped, 1-bit in RAM); Qdrant's other settings (HNSW,
/// optimizers, sharding) do not apply and are ignored.
async fn create(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    respond(async {
        let started = Instant::now();
        let body: Map<String, Value> = parse_json(&body?)?;
        let meta = create_meta(&body)?;
        blocking(move || app.create(&name, meta)).await?;
        Ok(ok(json!(true), started))
    })
    .await
}

fn create_meta(body: &Map<String, Value>) -> Result<Meta, ApiError> {
    // Qdrant's `vectors` object or Shoal's top-level `dim` and `metric`, each with its `on_disk`.
    let (dim, metric, on_disk) = match body.get("vectors") {
        Some(v) => {
            let v = v.as_object().ok_or_else(|| ApiError::bad_request("vectors: expected an object"))?;
            let size = match v.get("size") {
                Some(s) => s.as_u64().ok_or_else(|| ApiError::bad_request("vectors.size: expected an integer"))?,
                None => {
                    return Err(ApiError::bad_request(
                        "vectors: named vectors are not supported; give {\"size\": N, \"distance\": \"Cosine\"}",
                    ));
                }
            };
            let metric = match v.get("distance").and_then(Value::as_str) {
                Some("Cosine") => "cosine",
                Some("Dot") => "dot",
                Some("Euclid") => "l2",
                other => {
                    return Err(ApiError::bad_request(format!(
                        "vectors.distance {other:?}: Shoal supports Cosine, Dot and Euclid"
                    )));
                }
            };
            (size, metric, v.get("on_disk"))
        }
        None => {
            let dim = body.get("dim").and_then(Value::as_u64).ok_or_else(|| {
                ApiError::bad_request("give `vectors` ({\"size\", \"distance\"}) or `dim` and `metric`")
            })?;
            (dim, body.get("metric").and_then(Value::as_str).unwrap_or("cosine"), body.get("on_disk"))
        }
    };
    let on_disk = on_disk.and_then(Value::as_bool).unwrap_or(true);
    let fields = body.get("fields").cloned();
    // The default index: IVF-RaBitQ with 4-bit codes when the full vectors are mapped (the extra
    // bits settle most candidates without reading their vector from disk: ~4x fewer reads on
    // the RAM experiment's data), 1-bit codes when they are in RAM.
    let index = body
        .get("index")
        .cloned()
        .unwrap_or_else(|| json!({"index": "ivf-rabitq", "bits": if on_disk { 4 } else { 1 }}));
    Ok(Meta {
        dim: dim as usize,
        metric: metric.to_string(),
        dynamic: fields.is_none(),
        fields: fields.unwrap_or_else(|| json!({})),
        index,
        on_disk,
    })
}

fn distance_name(metric: &str) -> &'static str {
    match metric {
        "cosine" => "Cosine",
        "dot" => "Dot",
        _ => "Euclid",
    }
}

/// `GET /collections/{name}`: Qdrant's collection info, with Shoal's values.
async fn info(State(app): Shared, Path(name): Path<String>) -> Response {
    respond(async {
        let started = Instant::now();
        let store = app.get(&name)?;
        let result = blocking(move || Ok(collection_info(&store))).await?;
        Ok(ok(result, started))
    })
    .await
}

/// The `result` of `GET /collections/{name}`.
fn collection_info(store: &Store) -> Value {
    {
        let g = store.gauges();
        let col = store.read();
        let mut schema = Map::new();
        for (field, ty) in col.schema().into_iter().flat_map(|s| s.fields()) {
            schema.insert(field.to_string(), json!({"data_type": ty.name(), "points": 0}));
        }
        let m = &store.meta;
        let result = json!({
            "status": "green",
            "optimizer_status": "ok",
            "points_count": g.points,
            "indexed_vectors_count": col.sealed_len(),
            "segments_count": g.segments + u64::from(g.unsealed > 0),
            "config": {
                "params": {
                    "vectors": {"size": m.dim, "distance": distance_name(&m.metric), "on_disk": m.on_disk},
                    "shard_number": 1, "replication_factor": 1, "write_consistency_factor": 1,
                    "on_disk_payload": true
                },
                "hnsw_config": {"m": 0, "ef_construct": 100, "full_scan_threshold": 10000,
                                "max_indexing_threads": 0, "on_disk": m.on_disk},
                "optimizer_config": {"deleted_threshold": 0.2, "vacuum_min_vector_number": 1000,
                                     "default_segment_number": 1, "max_segment_size": null,
                                     "memmap_threshold": null, "indexing_threshold": 0,
                                     "flush_interval_sec": 0, "max_optimization_threads": 1},
                "wal_config": {"wal_capacity_mb": 0, "wal_segments_ahead": 0},
                "quantization_config": null
            },
            "payload_schema": schema,
        });
        result
    }
}

async fn delete_collection(State(app): Shared, Path(name): Path<String>) -> Response {
    respond(async {
        let started = Instant::now();
        let existed = blocking(move || app.drop_collection(&name)).await?;
        Ok(ok(json!(existed), started))
    })
    .await
}

/// `PUT /collections/{name}/index`: `{"field_name": "color", "field_schema": "keyword"}` (or
/// `{"type": "keyword", ...}`) declares a payload field.
async fn create_index(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let field = body
            .get("field_name")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::bad_request("missing field_name"))?;
        let ty = match body.get("field_schema") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(o)) => o.get("type").and_then(Value::as_str).unwrap_or("").to_string(),
            _ => return Err(ApiError::bad_request("missing field_schema")),
        };
        let ty = FieldType::from_name(&ty).ok_or_else(|| {
            ApiError::bad_request(format!(
                "field_schema {ty:?}: Shoal fields are keyword, integer, float, bool, text or text_en"
            ))
        })?;
        store.add_fields(&[(field.to_string(), ty)])?;
        Ok(update_result())
    })
    .await
}

/// A point id: an unsigned integer.
fn point_id(v: &Value, at: &str) -> Result<u64, ApiError> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| ApiError::bad_request(format!("{at}: ids are unsigned integers"))),
        Value::String(_) => Err(ApiError::bad_request(format!(
            "{at}: Shoal point ids are unsigned integers (UUID ids are not supported)"
        ))),
        _ => Err(ApiError::bad_request(format!("{at}: expected an unsigned integer id"))),
    }
}

/// A point's vector: a list of numbers, or `{"": [...]}` (the unnamed vector).
fn vector_of(v: &Value, at: &str, out: &mut Vec<f32>) -> Result<usize, ApiError> {
    let list = match v {
        Value::Array(a) => a,
        Value::Object(o) if o.len() == 1 && o.contains_key("") => {
            return vector_of(&o[""], at, out);
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "{at}: expected a list of numbers (named vectors are not supported)"
            )));
        }
    };
    for (i, x) in list.iter().enumerate() {
        let x = x.as_f64().ok_or_else(|| ApiError::bad_request(format!("{at}[{i}]: expected a number")))?;
        out.push(x as f32);
    }
    Ok(list.len())
}

/// `PUT /collections/{name}/points`: `{"points": [{"id", "vector", "payload"}]}` or
/// `{"batch": {"ids", "vectors", "payloads"}}`.
async fn upsert(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let dim = store.meta.dim;
        let (mut ids, mut vectors, mut payloads) = (Vec::new(), Vec::new(), Vec::new());
        let check_dim = |n: usize, at: &str| {
            if n == dim {
                return Ok(());
            }
            let mut e = ApiError::core(shoal_core::Error::DimensionMismatch { expected: dim, found: n });
            e.message = format!("{at}: {}", e.message);
            Err(e)
        };
        if let Some(points) = body.get("points") {
            let points = points.as_array().ok_or_else(|| ApiError::bad_request("points: expected a list"))?;
            for (i, p) in points.iter().enumerate() {
                let at = format!("points[{i}]");
                ids.push(point_id(p.get("id").unwrap_or(&Value::Null), &format!("{at}.id"))?);
                let v = p.get("vector").ok_or_else(|| ApiError::bad_request(format!("{at}: missing vector")))?;
                check_dim(vector_of(v, &format!("{at}.vector"), &mut vectors)?, &at)?;
                payloads.push(p.get("payload").cloned().unwrap_or(Value::Null));
            }
        } else if let Some(b) = body.get("batch") {
            let list = |k: &str| b.get(k).and_then(Value::as_array);
            let given = list("ids").ok_or_else(|| ApiError::bad_request("batch.ids: expected a list"))?;
            for (i, id) in given.iter().enumerate() {
                ids.push(point_id(id, &format!("batch.ids[{i}]"))?);
            }
            let vs = list("vectors").ok_or_else(|| ApiError::bad_request("batch.vectors: expected a list"))?;
            if vs.len() != ids.len() {
                return Err(ApiError::bad_request("batch: as many vectors as ids"));
            }
            for (i, v) in vs.iter().enumerate() {
                check_dim(vector_of(v, &format!("batch.vectors[{i}]"), &mut vectors)?, &format!("batch.vectors[{i}]"))?;
            }
            if let Some(ps) = list("payloads") {
                if ps.len() != ids.len() {
                    return Err(ApiError::bad_request("batch: as many payloads as ids"));
                }
                payloads = ps.clone();
            }
        } else {
            return Err(ApiError::bad_request("give `points` or `batch`"));
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
        let batch = Batch { dim, ids: ids.into(), vectors: vectors.into(), payloads };
        store.upsert(&batch, None)?;
        Ok(update_result())
    })
    .await
}

/// Which payload fields a response carries: `true`/`false`, a list of fields, or
/// `{"include": [...]}` / `{"exclude": [...]}`.
enum PayloadSel {
    None,
    All,
    Include(Vec<String>),
    Exclude(Vec<String>),
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

    fn wanted(&self) -> bool {
        !matches!(self, PayloadSel::None)
    }

    fn apply(&self, doc: Value) -> Value {
        let Value::Object(mut m) = doc else { return json!({}) };
        match self {
            PayloadSel::None => return Value::Null,
            PayloadSel::All => {}
            PayloadSel::Include(keep) => m.retain(|k, _| keep.contains(k)),
            PayloadSel::Exclude(drop) => m.retain(|k, _| !drop.contains(k)),
        }
        Value::Object(m)
    }
}

/// A record of `store`'s point `id`: `{"id", "payload", "vector"}`.
fn record(col: &shoal_core::Collection, id: u64, sel: &PayloadSel, with_vector: bool) -> Value {
    let payload = if sel.wanted() { sel.apply(col.payload(id).unwrap_or(Value::Null)) } else { Value::Null };
    let vector = if with_vector { col.vector(id).map_or(Value::Null, |v| json!(v)) } else { Value::Null };
    json!({"id": id, "payload": payload, "vector": vector})
}

fn ids_of(v: Option<&Value>, at: &str) -> Result<Vec<u64>, ApiError> {
    let list =
        v.and_then(Value::as_array).ok_or_else(|| ApiError::bad_request(format!("{at}: expected a list of ids")))?;
    list.iter().enumerate().map(|(i, x)| point_id(x, &format!("{at}[{i}]"))).collect()
}

/// `POST /collections/{name}/points`: `{"ids", "with_payload", "with_vector"}`.
async fn retrieve(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let ids = ids_of(body.get("ids"), "ids")?;
        let sel = PayloadSel::parse(body.get("with_payload"), true)?;
        let with_vector = body.get("with_vector").and_then(Value::as_bool).unwrap_or(false);
        let col = store.read();
        Ok(ids.iter().filter(|&&id| col.contains(id)).map(|&id| record(&col, id, &sel, with_vector)).collect())
    })
    .await
}

async fn retrieve_one(State(app): Shared, Path((name, id)): Path<(String, String)>) -> Response {
    respond(async {
        let started = Instant::now();
        let store = app.get(&name)?;
        let id: u64 = id.parse().map_err(|_| ApiError::bad_request("point ids are unsigned integers"))?;
        let rec = blocking(move || {
            let col = store.read();
            if !col.contains(id) {
                return Err(ApiError {
                    status: axum::http::StatusCode::NOT_FOUND,
                    code: "not_found",
                    message: format!("Not found: No point with id {id} found"),
                });
            }
            Ok(record(&col, id, &PayloadSel::All, true))
        })
        .await?;
        Ok(ok(rec, started))
    })
    .await
}

/// Runs a vector search for the Qdrant routes: `{"id", "version", "score", "payload", "vector"}`
/// per result. Euclid scores are distances (Shoal's `l2` is squared).
fn run_search(store: &Store, vector: Vec<f32>, body: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let limit = body
        .get("limit")
        .map_or(Ok(10), |v| v.as_u64().ok_or_else(|| ApiError::bad_request("limit: expected an integer")))?;
    let offset = body.get("offset").map_or(Ok(0), |v| {
        if v.is_null() { Ok(0) } else { v.as_u64().ok_or_else(|| ApiError::bad_request("offset: expected an integer")) }
    })?;
    let sel = PayloadSel::parse(body.get("with_payload"), false)?;
    let with_vector = body.get("with_vector").and_then(Value::as_bool).unwrap_or(false);
    let params = body.get("params").and_then(Value::as_object);
    let param = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_u64).map(|x| x as u32);
    let req = SearchRequest {
        vector: Some(vector),
        limit: limit as usize,
        offset: offset as usize,
        filter: body.get("filter").cloned().filter(|f| !f.is_null()),
        params: SearchParams {
            exact: params.and_then(|p| p.get("exact")).and_then(Value::as_bool).unwrap_or(false),
            nprobe: param("nprobe"),
            rerank: param("rerank"),
        },
        ..SearchRequest::default()
    };
    let threshold = body.get("score_threshold").and_then(Value::as_f64);
    let col = store.read();
    let res = col.search(&req).map_err(ApiError::core)?;
    let euclid = col.metric() == Metric::L2;
    Ok(res
        .points
        .iter()
        .map(|p| (p, if euclid { p.score.max(0.0).sqrt() } else { p.score }))
        .filter(|(_, s)| threshold.is_none_or(|t| if euclid { f64::from(*s) <= t } else { f64::from(*s) >= t }))
        .map(|(p, score)| {
            let mut r = record(&col, p.id, &sel, with_vector);
            r["score"] = json!(score);
            r["version"] = json!(0);
            r
        })
        .collect())
}

/// `POST /collections/{name}/points/query`: `{"query": [...] | {"nearest": [...]}, "filter",
/// "limit", "offset", "with_payload", "with_vector", "params", "score_threshold"}`.
async fn query(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let q = match body.get("query") {
            Some(Value::Object(o)) if o.contains_key("nearest") => &o["nearest"],
            Some(q @ Value::Array(_)) => q,
            Some(_) => return Err(ApiError::bad_request("query: Shoal supports a vector or {\"nearest\": vector}")),
            None => return Err(ApiError::bad_request("query: missing (give the query vector)")),
        };
        let mut vector = Vec::new();
        vector_of(q, "query", &mut vector)?;
        Ok(json!({"points": run_search(&store, vector, &body)?}))
    })
    .await
}

/// `POST /collections/{name}/points/search` (Qdrant's older search call).
async fn search(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let mut vector = Vec::new();
        vector_of(body.get("vector").unwrap_or(&Value::Null), "vector", &mut vector)?;
        Ok(Value::Array(run_search(&store, vector, &body)?))
    })
    .await
}

/// `POST /collections/{name}/points/count`: `{"filter", "exact"}`.
async fn count(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let col = store.read();
        let n = match body.get("filter").filter(|f| !f.is_null()) {
            None => col.len(),
            Some(f) => col.matching_ids(Some(f)).map_err(ApiError::core)?.len(),
        };
        Ok(json!({"count": n}))
    })
    .await
}

/// `POST /collections/{name}/points/scroll`: `{"filter", "limit", "offset", "with_payload",
/// "with_vector"}`, ids ascending; `next_page_offset` is the id to continue from.
async fn scroll(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        if body.get("order_by").is_some_and(|v| !v.is_null()) {
            return Err(ApiError::bad_request("scroll: order_by is not supported (points come in id order)"));
        }
        let limit = body.get("limit").and_then(Value::as_u64).unwrap_or(10).clamp(1, 10_000) as usize;
        let from = match body.get("offset") {
            None | Some(Value::Null) => 0,
            Some(v) => point_id(v, "offset")?,
        };
        let sel = PayloadSel::parse(body.get("with_payload"), true)?;
        let with_vector = body.get("with_vector").and_then(Value::as_bool).unwrap_or(false);
        let col = store.read();
        let ids = col.matching_ids(body.get("filter")).map_err(ApiError::core)?;
        let start = ids.partition_point(|&id| id < from);
        let page = &ids[start..ids.len().min(start + limit)];
        let next = ids.get(start + limit).copied();
        let points: Vec<Value> = page.iter().map(|&id| record(&col, id, &sel, with_vector)).collect();
        Ok(json!({"points": points, "next_page_offset": next}))
    })
    .await
}

/// `POST /collections/{name}/points/delete`: `{"points": [ids]}` or `{"filter": {...}}`.
async fn delete_points(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body| {
        let ids = match (body.get("points"), body.get("filter")) {
            (Some(p), None) => Some(ids_of(Some(p), "points")?),
            // `null` or `{}` would match every point: Qdrant refuses that, so does Shoal.
            (None, Some(Value::Object(f))) if !f.is_empty() => None,
            (None, Some(_)) => return Err(ApiError::bad_request("filter: expected a non-empty filter object")),
            _ => return Err(ApiError::bad_request("give `points` (ids) or `filter`")),
        };
        store.delete(ids.as_deref(), body.get("filter"))?;
        Ok(update_result())
    })
    .await
}
