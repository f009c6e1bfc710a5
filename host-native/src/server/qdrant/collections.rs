//! Qdrant's collection endpoints: list, create (Qdrant's shape or Shoal's), info with the
//! configuration clients read back, delete, and payload indexes (declared paths or fields).

use std::time::Instant;

use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Map, Value, json};
use shoal_core::FieldType;

use super::bodies::{self, refuse};
use super::{Body, QDRANT_API_VERSION, Shared, on_json, respond, update_result};
use crate::server::remote::{Snapshot, Target};
use crate::server::store::{Meta, Store};
use crate::server::{ApiError, blocking, json_response, ok, parse_json};

pub(super) async fn root() -> Response {
    let body = json!({"title": "shoal - vector search engine (Qdrant-compatible API)", "version": QDRANT_API_VERSION,
                      "shoal_version": env!("CARGO_PKG_VERSION")});
    json_response(body.to_string())
}

pub(super) async fn list(State(app): Shared) -> Response {
    let started = Instant::now();
    let names: Vec<Value> = app.names().into_iter().map(|n| json!({"name": n})).collect();
    ok(json!({"collections": names}), started)
}

pub(super) async fn exists(State(app): Shared, Path(name): Path<String>) -> Response {
    ok(json!({"exists": app.target(&name).is_ok()}), Instant::now())
}

/// `PUT /collections/{name}`: Qdrant's `{"vectors": {"size", "distance", "on_disk"}}`, or
/// Shoal's `{"dim", "metric", "fields", "index", "on_disk"}` (`index`: seal options, default
/// IVF-RaBitQ with 4-bit codes when mapped, the dimension's default in RAM). Qdrant's tuning settings (HNSW,
/// optimizers, sharding factors) are accepted and have no effect; the rest is refused
/// (`bodies::CreateCollection`).
pub(super) async fn create(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    respond(async {
        let started = Instant::now();
        let body: bodies::CreateCollection = parse_json(&body?)?;
        let meta = create_meta(body)?;
        blocking(move || app.create(&name, meta)).await?;
        Ok(ok(json!(true), started))
    })
    .await
}

fn create_meta(body: bodies::CreateCollection) -> Result<Meta, ApiError> {
    refuse("sharding_method", &body.sharding_method, "a collection is one shard")?;
    let sparse_vectors = sparse_config(body.sparse_vectors.as_ref())?;
    refuse("strict_mode_config", &body.strict_mode_config, "no strict mode")?;
    refuse("metadata", &body.metadata, "collection metadata is not stored")?;
    refuse("init_from", &body.init_from, "create the collection, then copy the points")?;
    // Qdrant's `vectors` object or Shoal's top-level `dim` and `metric`, each with its `on_disk`.
    let qdrant_shape = body.vectors.is_some();
    let mut vector_name = None;
    let mut dense_vectors = Map::new();
    let (dim, metric, on_disk) = match body.vectors {
        Some(v) => {
            if body.dim.is_some() || body.metric.is_some() || body.on_disk.is_some() {
                return Err(ApiError::bad_request("give `vectors` or `dim` / `metric` / `on_disk`, not both"));
            }
            match v {
                // Named vectors, any number of them (`""` is Qdrant's unnamed one).
                Value::Object(o) if !o.contains_key("size") => {
                    if o.is_empty() {
                        return Err(ApiError::bad_request("vectors: give at least one dense vector"));
                    }
                    let mut named = Vec::with_capacity(o.len());
                    for (name, v) in o {
                        let params = vector_params(v, &format!("vectors.{name}"))?;
                        named.push((name, params));
                    }
                    named.sort_by(|a, b| a.0.cmp(&b.0));
                    // The vectors that set it must agree; it then holds for the collection.
                    let on_disk = named.iter().find_map(|(_, p)| p.2);
                    if named.iter().any(|(_, p)| p.2.is_some() && p.2 != on_disk) {
                        return Err(ApiError::bad_request(
                            "vectors: on_disk (or memory) applies to the whole collection in Shoal: give every vector the same",
                        ));
                    }
                    if named.len() > 1 {
                        for (name, (dim, metric, _)) in &named {
                            dense_vectors.insert(name.clone(), json!({"dim": dim, "metric": metric}));
                        }
                    }
                    let (name, (dim, metric, _)) = named.swap_remove(0);
                    vector_name = Some(name).filter(|n| !n.is_empty());
                    (dim, metric, on_disk)
                }
                v => vector_params(v, "vectors")?,
            }
        }
        None => {
            let dim = body.dim.ok_or_else(|| {
                ApiError::bad_request("give `vectors` ({\"size\", \"distance\"}) or `dim` and `metric`")
            })?;
            (dim, body.metric.unwrap_or_else(|| "cosine".into()), body.on_disk)
        }
    };
    let dense_names: Vec<&String> =
        if dense_vectors.is_empty() { vector_name.iter().collect() } else { dense_vectors.keys().collect() };
    if let Some(name) = dense_names.into_iter().find(|n| sparse_vectors.contains_key(n.as_str())) {
        return Err(ApiError::bad_request(format!("vectors: {name:?} names a dense and a sparse vector")));
    }
    let on_disk = on_disk.unwrap_or(true);
    // The default index: IVF-RaBitQ with 4-bit codes when the full vectors are mapped (the extra
    // bits settle most candidates without reading their vector from disk: ~4x fewer reads on
    // the RAM experiment's data); in RAM, the dimension's default (`default_bits`: 4 bits up to
    // 128 dimensions, 1 above), chosen at each seal.
    let index = body.index.unwrap_or_else(|| {
        if on_disk { json!({"index": "ivf-rabitq", "bits": 4}) } else { json!({"index": "ivf-rabitq"}) }
    });
    // Qdrant's shape makes a collection as Qdrant does: nested payloads (any JSON object,
    // filters by path, indexes declared with `PUT .../index`); Shoal's shape declares flat
    // fields (or, without them, takes new top-level fields as they come).
    let qdrant = qdrant_shape && body.fields.is_none();
    Ok(Meta {
        dim: dim as usize,
        metric,
        dynamic: body.fields.is_none() && !qdrant,
        fields: body.fields.unwrap_or_else(|| json!({})),
        index,
        on_disk,
        payload: qdrant.then(|| "nested".to_string()),
        sparse_vectors,
        vector_name,
        dense_vectors,
    })
}

/// Qdrant's `VectorParams` of one dense vector (at `at`): dimension, Shoal's metric name and
/// `on_disk` (from `on_disk` or `memory`).
fn vector_params(v: Value, at: &str) -> Result<(u64, String, Option<bool>), ApiError> {
    let v: bodies::VectorParams = serde_json::from_value(v).map_err(|e| ApiError::bad_request(format!("{at}: {e}")))?;
    refuse(&format!("{at}.datatype"), &v.datatype.filter(|d| d != "float32"), "vectors are float32")?;
    refuse(&format!("{at}.multivector_config"), &v.multivector_config, "one vector per point")?;
    let metric = match v.distance.as_str() {
        "Cosine" => "cosine",
        "Dot" => "dot",
        "Euclid" => "l2",
        other => {
            return Err(ApiError::bad_request(format!(
                "{at}.distance {other:?}: Shoal supports Cosine, Dot and Euclid"
            )));
        }
    };
    let on_disk = match v.memory.as_deref() {
        None => v.on_disk,
        Some("cold" | "cached") => Some(true),
        Some("pinned") => Some(false),
        Some(other) => {
            return Err(ApiError::bad_request(format!("{at}.memory {other:?}: expected cold, cached or pinned")));
        }
    };
    Ok((v.size, metric.to_string(), on_disk))
}

/// Qdrant's `sparse_vectors`: name -> `{"modifier": "none" | "idf", "index": {...}}` (`index`:
/// `on_disk` and `full_scan_threshold` are tuning only, `datatype` float32 only) as the
/// collection file's `{"modifier"}` per name.
fn sparse_config(v: Option<&Value>) -> Result<Map<String, Value>, ApiError> {
    let mut out = Map::new();
    let Some(v) = v.filter(|v| !v.is_null()) else { return Ok(out) };
    let o = v.as_object().ok_or_else(|| ApiError::bad_request("sparse_vectors: expected an object"))?;
    for (name, params) in o {
        let at = format!("sparse_vectors.{name}");
        let p: bodies::SparseVectorParams =
            serde_json::from_value(params.clone()).map_err(|e| ApiError::bad_request(format!("{at}: {e}")))?;
        if let Some(index) = &p.index {
            let index: bodies::SparseIndexParams =
                serde_json::from_value(index.clone()).map_err(|e| ApiError::bad_request(format!("{at}.index: {e}")))?;
            refuse(&format!("{at}.index.datatype"), &index.datatype.filter(|d| d != "float32"), "values are float32")?;
        }
        let modifier = match p.modifier.as_deref() {
            None | Some("none") => "none",
            Some("idf") => "idf",
            Some(other) => return Err(ApiError::bad_request(format!("{at}.modifier {other:?}: expected none or idf"))),
        };
        out.insert(name.clone(), json!({ "modifier": modifier }));
    }
    Ok(out)
}

fn distance_name(metric: &str) -> &'static str {
    match metric {
        "cosine" => "Cosine",
        "dot" => "Dot",
        _ => "Euclid",
    }
}

/// A collection's `vectors` config as Qdrant gives it: `{"size", "distance", "on_disk"}` for the
/// unnamed vector alone, else one such object per name.
fn vectors_info(m: &Meta) -> Value {
    let params =
        |dim: &Value, metric: &str| json!({"size": dim, "distance": distance_name(metric), "on_disk": m.on_disk});
    match (&m.vector_name, m.dense_vectors.is_empty()) {
        (None, true) => params(&json!(m.dim), &m.metric),
        (Some(n), true) => json!({ n: params(&json!(m.dim), &m.metric) }),
        (_, false) => Value::Object(
            m.dense_vectors
                .iter()
                .map(|(n, v)| (n.clone(), params(&v["dim"], v["metric"].as_str().unwrap_or(""))))
                .collect(),
        ),
    }
}

/// `GET /collections/{name}`: Qdrant's collection info, with Shoal's values.
pub(super) async fn info(State(app): Shared, Path(name): Path<String>) -> Response {
    respond(async {
        let started = Instant::now();
        let result = match app.target(&name)? {
            Target::Local(store) => blocking(move || Ok(collection_info(&store))).await?,
            Target::Remote(set) => remote_info(&set),
        };
        Ok(ok(result, started))
    })
    .await
}

/// The `result` of `GET /collections/{name}`.
fn collection_info(store: &Store) -> Value {
    let g = store.gauges();
    let col = store.read();
    let mut schema = Map::new();
    for (field, ty) in col.schema().into_iter().flat_map(|s| s.fields()) {
        schema.insert(field.to_string(), json!({"data_type": ty.name(), "points": 0}));
    }
    let counts = (g.points, col.sealed_len() as u64, g.segments + u64::from(g.unsealed > 0));
    info_result(&store.meta, counts, schema)
}

/// The `result` of `GET /collections/{name}` for a read-only collection: every point indexed,
/// no payload schema (Qdrant's shape kept exactly, as clients validate it).
fn remote_info(set: &Snapshot) -> Value {
    info_result(set.meta(), (set.rows(), set.rows(), set.segments() as u64), Map::new())
}

/// Qdrant's collection info: `counts` are points, indexed points and segments.
fn info_result(m: &Meta, (points, indexed, segments): (u64, u64, u64), schema: Map<String, Value>) -> Value {
    json!({
            "status": "green",
            "optimizer_status": "ok",
            "points_count": points,
            "indexed_vectors_count": indexed,
            "segments_count": segments,
            "config": {
                "params": {
                    "vectors": vectors_info(m),
                    "sparse_vectors": m.sparse_vectors,
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
    })
}

pub(super) async fn delete_collection(State(app): Shared, Path(name): Path<String>) -> Response {
    respond(async {
        let started = Instant::now();
        let existed = blocking(move || app.drop_collection(&name)).await?;
        Ok(ok(json!(existed), started))
    })
    .await
}

/// `PUT /collections/{name}/index`: `{"field_name": "color", "field_schema": "keyword"}` (or
/// `{"type": "keyword", ...}`) declares a payload field.
pub(super) async fn create_index(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_json(app, name, body, |store, body: bodies::CreateFieldIndex| {
        let ty = match body.field_schema {
            Some(Value::String(s)) => s,
            Some(Value::Object(mut o)) => {
                let ty = match o.remove("type") {
                    Some(Value::String(t)) => t,
                    _ => return Err(ApiError::bad_request("field_schema.type: expected a type name")),
                };
                if let Some(option) = o.iter().find(|(_, v)| !v.is_null()).map(|(k, _)| k) {
                    return Err(ApiError::bad_request(format!(
                        "field_schema.{option}: not supported by Shoal (index options do not apply; give the type alone)"
                    )));
                }
                ty
            }
            _ => return Err(ApiError::bad_request("missing field_schema")),
        };
        let ty = FieldType::from_name(&ty).ok_or_else(|| {
            ApiError::bad_request(format!(
                "field_schema {ty:?}: Shoal fields are keyword, integer, float, bool, text or text_en"
            ))
        })?;
        store.add_fields(&[(body.field_name, ty)])?;
        Ok(update_result())
    })
    .await
}

/// `DELETE /collections/{name}/index/{field}`: removes a declared path of a collection with
/// nested payloads (Qdrant's shape); nothing stored changes, filters keep their answers. A
/// field never declared is no error (as in Qdrant); a collection with Shoal's flat fields keeps
/// them (a 400).
pub(super) async fn delete_index(State(app): Shared, Path((name, field)): Path<(String, String)>) -> Response {
    respond(async {
        let started = Instant::now();
        let store = app.get(&name)?;
        blocking(move || store.drop_field(&field)).await?;
        Ok(ok(update_result(), started))
    })
    .await
}
