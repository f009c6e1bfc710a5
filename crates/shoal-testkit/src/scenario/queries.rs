//! The scenario's queries: each configuration's request of query `q` — plain vector, filter and
//! text; fused prefetches; sparse; several named dense vectors.

use serde_json::{Value, json};
use shoal_core::{DenseSpec, Metric, SearchRequest};

use super::*;

/// The dense vectors after "a" of configurations with [`Config::named`]: name, dimension,
/// metric. Vector `d` of a point is [`named_vector`] of its vector "a".
pub const NAMED: [(&str, usize, Metric); 2] = [("b", 7, Metric::L2), ("c", 19, Metric::Cosine)];

/// The dense vectors of a configuration, by name (one named `""` unless [`Config::named`]).
pub fn dense_specs(c: &Config) -> Vec<DenseSpec> {
    let first = DenseSpec { name: if c.named { "a" } else { "" }.into(), dim: c.dim, metric: c.metric };
    let named = NAMED.iter().map(|&(name, dim, metric)| DenseSpec { name: name.into(), dim, metric });
    core::iter::once(first).chain(named.take(if c.named { NAMED.len() } else { 0 })).collect()
}

/// Dense vector `d` of a point (or query) whose vector "a" is `v`: `v` itself for `d == 0`, then
/// alternately the last and the first [`NAMED`]`[d - 1]` coordinates — so exact copies, zero
/// rows and scaled queries carry over to every vector.
pub fn named_vector(v: &[f32], d: usize) -> Vec<f32> {
    match d {
        0 => v.to_vec(),
        _ if d % 2 == 1 => v[v.len() - NAMED[d - 1].1..].to_vec(),
        _ => v[..NAMED[d - 1].1].to_vec(),
    }
}

/// Which dense vector query `q` of a [`Config::named`] configuration searches alone (`None`:
/// a fusion of two, or text alone): `(q + q / 6) % 3`, so that the queries without text (`q %
/// 6 == 0`) reach every vector too, but every sixth query fuses "a" and "c".
pub fn named_using(config: &Config, q: usize) -> Option<usize> {
    let text_alone = text_of(config, q).is_some() && (q / TEXTS.len()) % 2 == 1;
    (q % 6 != 5 && !text_alone).then_some((q + q / 6) % 3)
}

/// The request of query `q` (vector "a" `v`) of a [`Config::named`] configuration, whole (the
/// fixtures carry it as it is): vector [`named_using`] by name, with the query's filter and text; every
/// sixth query the RRF of "a" and "c" in prefetches.
pub fn named_request(config: &Config, q: usize, v: &[f32]) -> Value {
    let name = |d: usize| if d == 0 { "a" } else { NAMED[d - 1].0 };
    let mut req = json!({"limit": config.k});
    if q % 6 == 5 {
        req["prefetch"] = json!([
            {"vector": v, "using": "a", "limit": 20},
            {"vector": named_vector(v, 2), "using": "c", "limit": 20},
        ]);
    } else if let Some(d) = named_using(config, q) {
        req["vector"] = json!(named_vector(v, d));
        req["using"] = json!(name(d));
    }
    if let Some(text) = text_of(config, q) {
        req["text"] = json!(text);
    }
    if let Some(f) = filter_of(config, q) {
        req["filter"] = f;
    }
    req
}

/// The request of query `q` (vector `v`) of a configuration: its filter, text and vector.
pub fn request_of(config: &Config, q: usize, v: &[f32]) -> SearchRequest {
    if config.named {
        let json = named_request(config, q, v).to_string();
        return SearchRequest::from_json(&json).expect("a valid request of several dense vectors");
    }
    if config.fusion {
        let json = fusion_request(config, q, v).to_string();
        return SearchRequest::from_json(&json).expect("a valid fusion request");
    }
    let mut req = SearchRequest { filter: filter_of(config, q), ..SearchRequest::nearest(v.to_vec(), config.k) };
    if let Some(text) = text_of(config, q) {
        req.text = Some(text.into());
        if (q / TEXTS.len()) % 2 == 1 {
            req.vector = None;
        }
    }
    req
}

/// The request of query `q` (vector `v`) of a fusion configuration, whole (the fixtures carry it
/// as it is): prefetches of vector and text searches fused by RRF (`k` 2, then `k` 5 with
/// weights) and DBSF (also nested in another prefetch), re-scored by a vector, and a threshold
/// — with the query's filter at the top, and another vector `w` (`v` reversed).
pub fn fusion_request(config: &Config, q: usize, v: &[f32]) -> Value {
    if config.sparse {
        return sparse_request(config, q, v);
    }
    let w: Vec<f32> = v.iter().rev().copied().collect();
    let t = TEXTS[q % TEXTS.len()];
    let t = if t.is_empty() { "whale" } else { t };
    let k = config.k;
    let mut req = match q % 5 {
        0 => json!({"prefetch": [{"vector": v, "limit": 20}, {"text": t, "limit": 15}], "rrf_k": 2, "limit": k}),
        1 => json!({
            "prefetch": [{"vector": v, "limit": 30}, {"vector": w, "limit": 20, "params": {"exact": true}}],
            "fusion": "dbsf", "limit": k, "offset": 2,
        }),
        2 => json!({"vector": w, "prefetch": [{"vector": v, "limit": 25}, {"text": t, "limit": 25}], "limit": k}),
        3 => json!({"vector": v, "text": t, "rrf_k": 5, "weights": [2.0, 0.5], "limit": k}),
        _ => json!({
            "prefetch": [
                {"prefetch": [{"vector": v, "limit": 10}, {"vector": w, "limit": 10}], "fusion": "dbsf", "limit": 15},
                {"text": t, "limit": 10, "score_threshold": 0.5},
                {"vector": v, "limit": 12, "score_threshold": 0.0},
            ],
            "limit": k,
        }),
    };
    if let Some(f) = filter_of(config, q) {
        req["filter"] = f;
    }
    req
}

/// The text of query `q` of a configuration, if it has one.
pub fn text_of(config: &Config, q: usize) -> Option<&'static str> {
    Some(TEXTS[q % TEXTS.len()]).filter(|t| config.payloads && !config.nested && !t.is_empty())
}

/// The filter of query `q` (`None` for no filter) of a configuration.
pub fn filter_of(config: &Config, q: usize) -> Option<Value> {
    if !config.payloads {
        return None;
    }
    let list: &[&str] = if config.nested { &NESTED_FILTERS } else { &FILTERS };
    let mut f: Value = serde_json::from_str(list[q % list.len()]).expect("valid filter JSON");
    if config.uuids {
        // `has_id` names the same points, by their ids of either kind.
        for c in f.get_mut("should").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(ids) = c.get_mut("has_id").and_then(Value::as_array_mut) {
                for id in ids.iter_mut() {
                    *id = id_json(point_id(config, id.as_u64().expect("integer ids in FILTERS")));
                }
            }
        }
    }
    (!f.is_null()).then_some(f)
}

/// The sparse query of query `q` (vector `v`): indices and values taken from `v`'s bits, so
/// every host derives the same one.
pub fn sparse_query(q: usize, v: &[f32]) -> Value {
    let mut indices: Vec<u32> = Vec::new();
    let mut values: Vec<f32> = Vec::new();
    for (j, x) in v.iter().enumerate().take(2 + q % 5) {
        let i = (x.to_bits() >> 9) % 48;
        if !indices.contains(&i) {
            indices.push(i);
            values.push(if j % 3 == 2 { -x.abs() } else { x.abs() + 0.25 });
        }
    }
    json!({"indices": indices, "values": values})
}

/// The request of query `q` of a sparse configuration, whole: a sparse vector alone (plain or
/// weighted, with the query's filter), or fused with the dense vector (RRF `k` 2, DBSF).
pub fn sparse_request(config: &Config, q: usize, v: &[f32]) -> Value {
    let s = sparse_query(q, v);
    let k = config.k;
    let mut req = match q % 4 {
        0 => json!({"sparse": s, "using": "plain", "limit": k}),
        1 => json!({"sparse": s, "using": "weighted", "limit": k, "offset": 1}),
        2 => json!({
            "prefetch": [{"vector": v, "limit": 20}, {"sparse": s, "using": "weighted", "limit": 20}],
            "rrf_k": 2, "limit": k,
        }),
        _ => json!({
            "prefetch": [{"sparse": s, "using": "plain", "limit": 15}, {"vector": v, "limit": 15}],
            "fusion": "dbsf", "limit": k,
        }),
    };
    if let Some(f) = filter_of(config, q) {
        req["filter"] = f;
    }
    req
}
