//! Qdrant's search calls as Shoal's search requests: `points/query` — a vector, or `prefetch`
//! searches fused (`{"fusion": "rrf" | "dbsf"}`, `{"rrf": {"k", "weights"}}`) or re-scored by a
//! vector — `points/search`, and their batches.

use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Value, json};
use shoal_core::{Metric, PointId, SearchParams, SearchRequest, SearchResponse, SparseVector};

use super::bodies::VectorSel;
use super::bodies::{self, refuse, refuse_shard_key, with_vector};
use super::{Body, PayloadSel, Shared, on_search, record, vector_of};
use crate::server::ApiError;
use crate::server::remote::{Snapshot, Target};
use crate::server::store::Meta;

/// Qdrant's default `k` of reciprocal rank fusion (Shoal's own requests default to 61).
const QDRANT_RRF_K: u32 = 2;

/// `POST /collections/{name}/points/query`: `{"query": vector | {"nearest": vector} |
/// {"fusion": "rrf" | "dbsf"} | {"rrf": {"k", "weights"}}, "prefetch", "using": "", "filter",
/// "limit", "offset", "with_payload", "with_vector", "params", "score_threshold"}`.
pub(super) async fn query(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_search(app, name, body, |target, body: bodies::QueryRequest| Ok(json!({"points": run_query(&target, body)?})))
        .await
}

/// `POST /collections/{name}/points/query/batch`: `{"searches": [QueryRequest, ...]}`, a
/// `{"points"}` per search, in order.
pub(super) async fn query_batch(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_search(app, name, body, |target, body: bodies::QueryBatch| {
        answer_each(body.searches, |q| Ok(json!({"points": run_query(&target, q)?})))
    })
    .await
}

/// `POST /collections/{name}/points/search` (Qdrant's older search call).
pub(super) async fn search(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_search(app, name, body, |target, body: bodies::SearchRequest| Ok(Value::Array(run_old_search(&target, body)?)))
        .await
}

/// `POST /collections/{name}/points/search/batch`: `{"searches": [SearchRequest, ...]}`, a
/// list of results per search, in order.
pub(super) async fn search_batch(State(app): Shared, Path(name): Path<String>, body: Body) -> Response {
    on_search(app, name, body, |target, body: bodies::SearchBatch| {
        answer_each(body.searches, |q| Ok(Value::Array(run_old_search(&target, q)?)))
    })
    .await
}

/// The answers of a batch's `searches`, in order; an error names the search it came from.
fn answer_each<T>(searches: Vec<T>, answer: impl Fn(T) -> Result<Value, ApiError>) -> Result<Value, ApiError> {
    let answers = searches.into_iter().enumerate().map(|(i, q)| answer(q).map_err(|e| e.at(&format!("searches[{i}]"))));
    answers.collect::<Result<Vec<_>, _>>().map(Value::Array)
}

/// What a response carries besides ids and scores.
struct Output<'a> {
    with_payload: Option<&'a Value>,
    with_vector: &'a Option<Value>,
    score_threshold: Option<f64>,
}

/// The results of one `QueryRequest`.
fn run_query(target: &Target, body: bodies::QueryRequest) -> Result<Vec<Value>, ApiError> {
    refuse_shard_key(&body.shard_key)?;
    let out = Output {
        with_payload: body.with_payload.as_ref(),
        with_vector: &body.with_vector,
        score_threshold: body.score_threshold,
    };
    let top = bodies::Prefetch {
        prefetch: body.prefetch,
        query: body.query,
        using: body.using,
        filter: body.filter,
        params: body.params,
        // Applied to the answer as Qdrant states it (distances, not squared).
        score_threshold: None,
        limit: body.limit,
        lookup_from: body.lookup_from,
    };
    answer(
        target,
        |euclid| {
            let mut req = stage(top, euclid, target.meta())?;
            req.offset = body.offset.unwrap_or(0) as usize;
            Ok(req)
        },
        out,
    )
}

/// The results of one (older) `SearchRequest`.
fn run_old_search(target: &Target, body: bodies::SearchRequest) -> Result<Vec<Value>, ApiError> {
    refuse_shard_key(&body.shard_key)?;
    // A vector, or Qdrant's `NamedVector` / `NamedSparseVector`: `{"name", "vector"}`.
    let mut named = SearchRequest::default();
    match &body.vector {
        Value::Object(o) if o.contains_key("name") => {
            if let Some(k) = o.keys().find(|k| *k != "name" && *k != "vector") {
                return Err(ApiError::bad_request(format!("vector: unknown field `{k}` (expected name and vector)")));
            }
            let name = o["name"].as_str().ok_or_else(|| ApiError::bad_request("vector.name: expected a string"))?;
            named.using = target.meta().core_using(Some(name.to_string()));
            query_into(&mut named, o.get("vector").unwrap_or(&Value::Null), "vector.vector")?;
        }
        v => query_into(&mut named, v, "vector")?,
    }
    let params = core_params(body.params)?;
    let out = Output {
        with_payload: body.with_payload.as_ref(),
        with_vector: &body.with_vector,
        score_threshold: body.score_threshold,
    };
    answer(
        target,
        |_| {
            Ok(SearchRequest {
                vector: named.vector,
                sparse: named.sparse,
                using: named.using,
                limit: body.limit.unwrap_or(10) as usize,
                offset: body.offset.unwrap_or(0) as usize,
                filter: body.filter.filter(|f| !f.is_null()),
                params,
                ..SearchRequest::default()
            })
        },
        out,
    )
}

/// Qdrant's search params as Shoal's (what Shoal does not support refused).
fn core_params(params: Option<bodies::SearchParams>) -> Result<SearchParams, ApiError> {
    let p = params.unwrap_or_default();
    p.check()?;
    Ok(SearchParams { exact: p.exact.unwrap_or(false), nprobe: p.nprobe, rerank: p.rerank })
}

/// Whether a core request's `using` searches a Euclid dense vector.
type Euclid<'a> = &'a dyn Fn(Option<&str>) -> bool;

/// Runs the request `build` makes (told which of the collection's dense vectors are Euclid)
/// and answers Qdrant's `ScoredPoint`s: `{"id", "version", "score", "payload", "vector"}`.
/// When the request ranks by a Euclid vector, scores are distances (Shoal's `l2` is squared);
/// fused scores are as fused. The threshold applies to those scores.
fn answer(
    target: &Target,
    build: impl FnOnce(Euclid<'_>) -> Result<SearchRequest, ApiError>,
    out: Output<'_>,
) -> Result<Vec<Value>, ApiError> {
    let sel = PayloadSel::parse(out.with_payload, false)?;
    let with_vector = with_vector(out.with_vector)?;
    let store = match target {
        Target::Local(store) => store,
        Target::Remote(set) => return answer_remote(set, build, sel, &with_vector, out.score_threshold),
    };
    let col = store.read();
    let dense = super::dense_names(store);
    with_vector.check(&col, &dense)?;
    let sel = sel.on(col.nested())?;
    let euclid = |using: Option<&str>| {
        let d = col.dense_position(using.unwrap_or("")).or((col.dense_vectors().len() == 1).then_some(0));
        d.is_some_and(|d| col.dense_vectors()[d].metric == Metric::L2)
    };
    let req = build(&euclid)?;
    let res = col.search(&req).map_err(ApiError::core)?;
    let distances = euclid(req.using.as_deref()) && req.vector.is_some();
    Ok(scored(&res, distances, out.score_threshold, |id| record(&col, id, &sel, &with_vector, &dense)))
}

/// [`answer`] on a read-only collection: its one unnamed vector, its payloads (read with the
/// results), no vectors returned.
fn answer_remote(
    set: &Snapshot,
    build: impl FnOnce(Euclid<'_>) -> Result<SearchRequest, ApiError>,
    sel: PayloadSel,
    with_vector: &VectorSel,
    threshold: Option<f64>,
) -> Result<Vec<Value>, ApiError> {
    if !matches!(with_vector, VectorSel::None) && !matches!(with_vector, VectorSel::Names(n) if n.is_empty()) {
        return Err(ApiError::bad_request(
            "with_vector: a read-only collection (shoal serve --remote) does not return vectors",
        ));
    }
    let l2 = set.metric() == Metric::L2;
    let euclid = |using: Option<&str>| l2 && using.is_none_or(str::is_empty);
    let sel = sel.on(set.meta().payload.is_some())?;
    let mut req = build(&euclid)?;
    req.with_payload = sel.wanted();
    let res = set.search(&req)?;
    let distances = euclid(req.using.as_deref()) && req.vector.is_some();
    let payloads: std::collections::HashMap<PointId, &Value> =
        res.points.iter().filter_map(|p| Some((p.id, p.payload.as_ref()?))).collect();
    let payload = |id: PointId| match payloads.get(&id) {
        Some(&p) if sel.wanted() => sel.apply(p.clone()),
        _ => Value::Null,
    };
    Ok(scored(&res, distances, threshold, |id| json!({"id": id, "payload": payload(id), "vector": null})))
}

/// Qdrant's `ScoredPoint`s of `res`: each point's `record` with its score (a distance when
/// `distances`: Shoal's `l2` is squared) and version, those past `threshold` left out.
fn scored(
    res: &SearchResponse,
    distances: bool,
    threshold: Option<f64>,
    record: impl Fn(PointId) -> Value,
) -> Vec<Value> {
    res.points
        .iter()
        .map(|p| (p, if distances { p.score.max(0.0).sqrt() } else { p.score }))
        .filter(|(_, s)| threshold.is_none_or(|t| if distances { f64::from(*s) <= t } else { f64::from(*s) >= t }))
        .map(|(p, score)| {
            let mut r = record(p.id);
            r["score"] = json!(score);
            r["version"] = json!(0);
            r
        })
        .collect()
}

/// Qdrant's `Prefetch` (or the query part of a `QueryRequest`) as Shoal's request: what it
/// ranks by, its own prefetches, filter, params, limit and threshold (a Euclid distance
/// squared, as Shoal's `l2` scores are). Their number and depth are checked by the search.
fn stage(p: bodies::Prefetch, euclid: Euclid<'_>, meta: &Meta) -> Result<SearchRequest, ApiError> {
    refuse("lookup_from", &p.lookup_from, "vectors come from the query itself")?;
    let prefetch: Vec<Value> = match p.prefetch {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a,
        Some(one @ Value::Object(_)) => vec![one],
        Some(_) => return Err(ApiError::bad_request("prefetch: expected a prefetch object or a list of them")),
    };
    let mut req = SearchRequest {
        // Qdrant's names as the core's (the search checks they exist).
        using: meta.core_using(p.using),
        limit: p.limit.unwrap_or(10) as usize,
        filter: p.filter.filter(|f| !f.is_null()),
        params: core_params(p.params)?,
        ..SearchRequest::default()
    };
    for (i, v) in prefetch.into_iter().enumerate() {
        let at = format!("prefetch[{i}]");
        let sub: bodies::Prefetch =
            serde_json::from_value(v).map_err(|e| ApiError::bad_request(format!("{at}: {e}")))?;
        req.prefetch.push(stage(sub, euclid, meta).map_err(|e| e.at(&at))?);
    }
    let fusion = |req: &mut SearchRequest, name: &str, k: Option<u32>, weights: Option<Vec<f32>>| {
        req.fusion = Some(name.into());
        req.rrf_k = k;
        req.weights = weights;
    };
    match &p.query {
        None | Some(Value::Null) => return Err(ApiError::bad_request("query: missing (give a vector or a fusion)")),
        Some(Value::Object(o)) if o.len() == 1 && o.contains_key("nearest") => {
            query_into(&mut req, &o["nearest"], "query.nearest")?;
        }
        Some(sparse @ Value::Object(o)) if o.contains_key("indices") => query_into(&mut req, sparse, "query")?,
        Some(Value::Object(o)) if o.len() == 1 && o.contains_key("fusion") => match o["fusion"].as_str() {
            Some("rrf") => fusion(&mut req, "rrf", Some(QDRANT_RRF_K), None),
            Some("dbsf") => fusion(&mut req, "dbsf", None, None),
            _ => return Err(ApiError::bad_request("query.fusion: expected \"rrf\" or \"dbsf\"")),
        },
        Some(Value::Object(o)) if o.len() == 1 && o.contains_key("rrf") => {
            let (k, weights) = rrf_params(&o["rrf"])?;
            fusion(&mut req, "rrf", Some(k.unwrap_or(QDRANT_RRF_K)), weights);
        }
        Some(Value::Object(o)) => {
            let kind = o.keys().next().map_or("{}", String::as_str);
            return Err(ApiError::bad_request(format!(
                "query.{kind}: not supported by Shoal (a query is a vector, {{\"nearest\": vector}}, {{\"fusion\": \"rrf\" | \"dbsf\"}} or {{\"rrf\": {{\"k\", \"weights\"}}}})"
            )));
        }
        Some(Value::Number(_) | Value::String(_)) => {
            return Err(ApiError::bad_request("query: a point id is not supported by Shoal (give the query vector)"));
        }
        Some(q) => query_into(&mut req, q, "query")?,
    }
    // A distance threshold as a squared one (negative: no point, as no distance is below it).
    let squared = |t: f64| if t < 0.0 { -1.0 } else { (t * t) as f32 };
    let distances = euclid(req.using.as_deref()) && req.vector.is_some();
    req.score_threshold = p.score_threshold.map(|t| if distances { squared(t) } else { t as f32 });
    Ok(req)
}

/// A query vector into `req`: dense (a list), or sparse (`{"indices", "values"}`).
fn query_into(req: &mut SearchRequest, v: &Value, at: &str) -> Result<(), ApiError> {
    if v.get("indices").is_some() {
        let sparse = SparseVector::from_value(v).map_err(|e| ApiError::bad_request(format!("{at}: {e}")))?;
        req.sparse = Some(sparse);
    } else {
        let mut vector = Vec::new();
        vector_of(v, at, &mut vector)?;
        req.vector = Some(vector);
    }
    Ok(())
}

/// `{"k": integer >= 1, "weights": [number, ...]}` (both optional).
fn rrf_params(v: &Value) -> Result<(Option<u32>, Option<Vec<f32>>), ApiError> {
    let bad = |m: &str| ApiError::bad_request(format!("query.rrf: {m}"));
    let o = v.as_object().ok_or_else(|| bad("expected {\"k\", \"weights\"}"))?;
    if let Some(key) = o.keys().find(|k| *k != "k" && *k != "weights") {
        return Err(bad(&format!("unknown field `{key}`, expected `k` or `weights`")));
    }
    let k = match o.get("k") {
        None | Some(Value::Null) => None,
        Some(k) => Some(
            k.as_u64()
                .and_then(|k| u32::try_from(k).ok())
                .filter(|&k| k >= 1)
                .ok_or_else(|| bad("k must be an integer >= 1"))?,
        ),
    };
    let weights = match o.get("weights") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => Some(
            a.iter()
                .map(|w| w.as_f64().map(|w| w as f32).filter(|w| w.is_finite()))
                .collect::<Option<Vec<f32>>>()
                .ok_or_else(|| bad("weights must be numbers"))?,
        ),
        Some(_) => return Err(bad("weights must be a list of numbers")),
    };
    Ok((k, weights))
}
