//! Qdrant's request bodies as types. Every field Qdrant's REST API (1.20) defines for the
//! calls Shoal answers is named here, so a field it does not define is refused while parsing
//! ("unknown field `x`, expected one of …"). Of Qdrant's fields, each is one of three kinds
//! (`docs/qdrant-compat.md` lists them):
//! - supported: read and acted on;
//! - tuning only (HNSW, WAL, optimizer and replication settings, quantization hints): they
//!   steer Qdrant's own machinery and change no answer, so they are accepted and have no
//!   effect;
//! - not supported: a request using one is refused with a 400 naming it ([`refuse`]), never
//!   half-done.

use serde::Deserialize;
use serde_json::Value;

use crate::server::ApiError;

/// Fails with a 400 naming `field` when it is present (and not `null`).
pub fn refuse(field: &str, value: &Option<Value>, why: &str) -> Result<(), ApiError> {
    match value {
        Some(v) if !v.is_null() => Err(ApiError::bad_request(format!("{field}: not supported by Shoal ({why})"))),
        _ => Ok(()),
    }
}

/// Refuses `shard_key`: a Shoal collection is one shard.
pub fn refuse_shard_key(value: &Option<Value>) -> Result<(), ApiError> {
    refuse("shard_key", value, "a collection is one shard; custom sharding does not apply")
}

/// `PUT /collections/{name}`: Qdrant's `CreateCollection`, plus Shoal's own `dim`, `metric`,
/// `fields` and `index` (and a top-level `on_disk`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateCollection {
    /// `{"size", "distance", …}`, or named vectors (refused unless the one name is `""`).
    pub vectors: Option<Value>,
    /// Shoal: the dimension (instead of `vectors`).
    pub dim: Option<u64>,
    /// Shoal: `cosine`, `dot` or `l2`.
    pub metric: Option<String>,
    /// Shoal: payload fields and their types, declared up front.
    pub fields: Option<Value>,
    /// Shoal: seal options (`IndexKind`'s JSON).
    pub index: Option<Value>,
    /// Shoal: full vectors memory-mapped (with `dim`).
    pub on_disk: Option<bool>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub shard_number: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub replication_factor: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub write_consistency_factor: Option<Value>,
    /// Tuning only (payloads are always in the segment files).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub on_disk_payload: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub payload: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub id_tracker: Option<Value>,
    /// Tuning only (Shoal's index is IVF + RaBitQ).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub hnsw_config: Option<Value>,
    /// Tuning only (Shoal's log is its own).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub wal_config: Option<Value>,
    /// Tuning only (Shoal's merge policy is `shoal serve`'s flags).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub optimizers_config: Option<Value>,
    /// Tuning only (vectors are always quantized with RaBitQ).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub quantization_config: Option<Value>,
    /// Not supported.
    pub sharding_method: Option<Value>,
    /// Sparse vectors: name -> [`SparseVectorParams`].
    pub sparse_vectors: Option<Value>,
    /// Not supported.
    pub strict_mode_config: Option<Value>,
    /// Not supported.
    pub metadata: Option<Value>,
    /// Not supported.
    pub init_from: Option<Value>,
}

/// Qdrant's `VectorParams`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorParams {
    /// Dimension.
    pub size: u64,
    /// `Cosine`, `Dot` or `Euclid` (`Manhattan` is refused).
    pub distance: String,
    /// Full vectors memory-mapped from the segment files (default) or read into RAM.
    pub on_disk: Option<bool>,
    /// Qdrant's newer placement: `cold` and `cached` map the vectors (as `on_disk: true`),
    /// `pinned` reads them into RAM.
    pub memory: Option<String>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub hnsw_config: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub quantization_config: Option<Value>,
    /// Not supported.
    pub datatype: Option<Value>,
    /// Not supported.
    pub multivector_config: Option<Value>,
}

/// Qdrant's `SearchParams`, plus Shoal's `nprobe` and `rerank`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Exact search (every live point scanned).
    pub exact: Option<bool>,
    /// Shoal: IVF partitions to probe.
    pub nprobe: Option<u32>,
    /// Shoal: exact re-ranking depth per result.
    pub rerank: Option<u32>,
    /// Tuning only (HNSW's beam width; Shoal's are `nprobe` and `rerank`).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub hnsw_ef: Option<Value>,
    /// Tuning only (rescoring is always exact).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub quantization: Option<Value>,
    /// Tuning only (every segment is indexed).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub indexed_only: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub acorn: Option<Value>,
    /// Not supported (sparse vectors).
    pub idf: Option<Value>,
}

/// `POST /collections/{name}/points/query`: Qdrant's `QueryRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryRequest {
    /// A vector, or `{"nearest": vector}`.
    pub query: Option<Value>,
    /// The vector to search: `""` (the dense one) or a sparse vector's name.
    pub using: Option<String>,
    /// A filter.
    pub filter: Option<Value>,
    /// Search settings.
    pub params: Option<SearchParams>,
    /// Results must score at least this (Euclid: at most this distance).
    pub score_threshold: Option<f64>,
    /// Results (default 10).
    pub limit: Option<u64>,
    /// Results skipped.
    pub offset: Option<u64>,
    /// Vectors in the results.
    pub with_vector: Option<Value>,
    /// Payloads in the results.
    pub with_payload: Option<Value>,
    /// Not supported.
    pub shard_key: Option<Value>,
    /// Searches whose results `query` fuses or re-scores: a [`Prefetch`] or a list of them.
    pub prefetch: Option<Value>,
    /// Not supported.
    pub lookup_from: Option<Value>,
}

/// Qdrant's `Prefetch`: a search whose results the query above it fuses or re-scores.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prefetch {
    /// Its own prefetches.
    pub prefetch: Option<Value>,
    /// A vector, `{"nearest": vector}`, `{"fusion": ...}` or `{"rrf": ...}`.
    pub query: Option<Value>,
    /// The vector to search: `""` (the dense one) or a sparse vector's name.
    pub using: Option<String>,
    /// A filter (the filters above it apply too).
    pub filter: Option<Value>,
    /// Search settings.
    pub params: Option<SearchParams>,
    /// Results must score at least this (Euclid: at most this distance).
    pub score_threshold: Option<f64>,
    /// Results (default 10).
    pub limit: Option<u64>,
    /// Not supported.
    pub lookup_from: Option<Value>,
}

/// `POST /collections/{name}/points/search`: Qdrant's older `SearchRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// The query vector.
    pub vector: Value,
    /// A filter.
    pub filter: Option<Value>,
    /// Search settings.
    pub params: Option<SearchParams>,
    /// Results (default 10).
    pub limit: Option<u64>,
    /// Results skipped.
    pub offset: Option<u64>,
    /// Payloads in the results.
    pub with_payload: Option<Value>,
    /// Vectors in the results.
    pub with_vector: Option<Value>,
    /// Results must score at least this (Euclid: at most this distance).
    pub score_threshold: Option<f64>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `POST /collections/{name}/points/query/batch`: Qdrant's `QueryRequestBatch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryBatch {
    /// The queries, answered in order.
    pub searches: Vec<QueryRequest>,
}

/// `POST /collections/{name}/points/search/batch`: Qdrant's `SearchRequestBatch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchBatch {
    /// The searches, answered in order.
    pub searches: Vec<SearchRequest>,
}

/// `POST /collections/{name}/points/scroll`: Qdrant's `ScrollRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrollRequest {
    /// The id to start from.
    pub offset: Option<Value>,
    /// Points per page (default 10).
    pub limit: Option<u64>,
    /// A filter.
    pub filter: Option<Value>,
    /// Payloads in the results (default: all).
    pub with_payload: Option<Value>,
    /// Vectors in the results.
    pub with_vector: Option<Value>,
    /// Not supported (points come in id order).
    pub order_by: Option<Value>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `POST /collections/{name}/points/count`: Qdrant's `CountRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountRequest {
    /// A filter.
    pub filter: Option<Value>,
    /// Tuning only: counts are always exact.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub exact: Option<bool>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `POST /collections/{name}/points`: Qdrant's `PointRequest`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointRequest {
    /// The ids to retrieve.
    pub ids: Vec<Value>,
    /// Payloads in the results (default: all).
    pub with_payload: Option<Value>,
    /// Vectors in the results.
    pub with_vector: Option<Value>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `PUT /collections/{name}/points`: Qdrant's `PointsList` or `PointsBatch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upsert {
    /// Points, each `{"id", "vector", "payload"}`.
    pub points: Option<Vec<PointStruct>>,
    /// Columns: `{"ids", "vectors", "payloads"}`.
    pub batch: Option<Batch>,
    /// Not supported.
    pub shard_key: Option<Value>,
    /// Not supported (conditional updates).
    pub update_filter: Option<Value>,
    /// Not supported (every upsert inserts or replaces).
    pub update_mode: Option<Value>,
}

/// Qdrant's `PointStruct`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointStruct {
    /// The id.
    pub id: Value,
    /// The vector (a list, or `{"": list}`).
    pub vector: Value,
    /// The payload (an object, or `null`).
    pub payload: Option<Value>,
}

/// Qdrant's `Batch`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    /// The ids.
    pub ids: Vec<Value>,
    /// One vector per id (a list), or per vector name one per id (Qdrant's named batch:
    /// `{"image": [[...], ...], "keywords": [{"indices", "values"}, ...]}`).
    pub vectors: Value,
    /// One payload per id, or none.
    pub payloads: Option<Vec<Value>>,
}

/// `POST /collections/{name}/points/delete`: Qdrant's `PointIdsList` or `FilterSelector`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delete {
    /// The ids to delete.
    pub points: Option<Vec<Value>>,
    /// Or the filter whose points to delete.
    pub filter: Option<Value>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `POST` (set: merged into) and `PUT` (overwrite) `/collections/{name}/points/payload`:
/// Qdrant's `SetPayload`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetPayload {
    /// The payload: its keys are set (POST) or it replaces the old one (PUT).
    pub payload: serde_json::Map<String, Value>,
    /// The points, by id.
    pub points: Option<Vec<Value>>,
    /// Or the filter whose points to change.
    pub filter: Option<Value>,
    /// Not supported (a nested path).
    pub key: Option<Value>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `POST /collections/{name}/points/payload/delete`: Qdrant's `DeletePayload`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeletePayload {
    /// The keys to remove.
    pub keys: Vec<String>,
    /// The points, by id.
    pub points: Option<Vec<Value>>,
    /// Or the filter whose points to change.
    pub filter: Option<Value>,
    /// Not supported.
    pub shard_key: Option<Value>,
}

/// `PUT /collections/{name}/index`: Qdrant's `CreateFieldIndex`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateFieldIndex {
    /// The payload field.
    pub field_name: String,
    /// Its type: a name (`"keyword"`), or `{"type": name}` (other options are refused).
    pub field_schema: Option<Value>,
}

/// Which vectors a response carries (`with_vector`).
#[derive(Debug)]
pub enum VectorSel {
    /// None (`false`, absent).
    None,
    /// Every vector the point holds (`true`).
    All,
    /// Those named (`""` is the dense vector).
    Names(Vec<String>),
}

impl VectorSel {
    /// Whether vector `name` is wanted.
    pub fn wants(&self, name: &str) -> bool {
        match self {
            VectorSel::None => false,
            VectorSel::All => true,
            VectorSel::Names(names) => names.iter().any(|n| n == name),
        }
    }

    /// Refuses a name the collection does not have (`dense`: its dense vectors' names).
    pub fn check(&self, col: &shoal_core::Collection, dense: &[String]) -> Result<(), ApiError> {
        if let VectorSel::Names(names) = self
            && let Some(name) =
                names.iter().find(|n| !dense.contains(n) && !col.sparse_vectors().iter().any(|s| &s.name == *n))
        {
            return Err(ApiError::bad_request(format!(
                "with_vector: no vector named {name:?} (the dense vectors are {dense:?}, then the sparse vectors)"
            )));
        }
        Ok(())
    }
}

/// `with_vector`: `true`/`false`, or a list of vector names.
pub fn with_vector(v: &Option<Value>) -> Result<VectorSel, ApiError> {
    let bad = || ApiError::bad_request("with_vector: expected a bool or a list of vector names");
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(VectorSel::None),
        Some(Value::Bool(true)) => Ok(VectorSel::All),
        Some(Value::Array(names)) => {
            let names = names.iter().map(|n| n.as_str().map(String::from).ok_or_else(bad)).collect::<Result<_, _>>()?;
            Ok(VectorSel::Names(names))
        }
        Some(_) => Err(bad()),
    }
}

/// Qdrant's `SparseVectorParams`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparseVectorParams {
    /// `{"on_disk", "full_scan_threshold", "datatype"}`: [`SparseIndexParams`].
    pub index: Option<Value>,
    /// `"none"` (default) or `"idf"`.
    pub modifier: Option<String>,
}

/// Qdrant's `SparseIndexParams`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SparseIndexParams {
    /// Tuning only (segments are memory-mapped files).
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub on_disk: Option<Value>,
    /// Tuning only.
    #[allow(dead_code)] // accepted: no effect (docs/qdrant-compat.md)
    pub full_scan_threshold: Option<Value>,
    /// `float32` only.
    pub datatype: Option<Value>,
}

impl SearchParams {
    /// Refuses what Shoal does not support; the tuning-only fields pass.
    pub fn check(&self) -> Result<(), ApiError> {
        refuse("params.idf", &self.idf, "sparse vectors are not supported")
    }
}
