//! Requests and answers of the tests of segments read by ranges (`tests/remote.rs`,
//! `tests/object_store.rs`, included with `#[path]`).
#![allow(dead_code)]

use shoal_core::{SearchRequest, SearchResponse};

/// The search request `body` (JSON) with `q` as its vector.
pub fn request(q: &[f32], body: serde_json::Value) -> SearchRequest {
    let mut req = SearchRequest::from_json(&body.to_string()).unwrap();
    req.vector = Some(q.to_vec());
    req
}

/// An answer as (id, score bits) pairs: what "bit for bit" compares.
pub fn bits(res: &SearchResponse) -> Vec<(u64, u32)> {
    res.points.iter().map(|p| (p.id.as_num().unwrap(), p.score.to_bits())).collect()
}
