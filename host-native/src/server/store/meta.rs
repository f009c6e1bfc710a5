//! A collection's configuration as given at creation (`collection.json`), and what it means
//! for the core: dimensions, metric, payload fields or paths, index, dense and sparse vectors.

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, DenseSpec, IndexKind, Metric, Schema, SparseSpec};

use super::super::ApiError;

/// How a collection was configured at creation (`collection.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Vector dimension.
    pub dim: usize,
    /// `cosine`, `dot` or `l2`.
    pub metric: String,
    /// Payload fields declared at creation (`{"tag": "keyword", ...}`).
    #[serde(default = "empty_object")]
    pub fields: Value,
    /// Seal options (`{"index": "ivf-rabitq", "bits": 1}`); `{}` is flat.
    #[serde(default = "empty_object")]
    pub index: Value,
    /// Full vectors memory-mapped (true) or read into RAM (false).
    #[serde(default = "yes")]
    pub on_disk: bool,
    /// Unknown payload fields add themselves to the schema (as Qdrant collections did before
    /// nested payloads) instead of being refused.
    #[serde(default)]
    pub dynamic: bool,
    /// `"nested"`: payloads are any JSON objects and `fields` are declared paths
    /// (`docs/format.md`, "Nested payloads"); absent: flat fields. Written only when nested,
    /// so a collection without the feature keeps today's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// Sparse vectors: name -> `{"modifier": "none" | "idf"}` (as manifest 2). Written only
    /// when there are some, so a collection without the feature keeps today's file.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub sparse_vectors: serde_json::Map<String, Value>,
    /// Qdrant's name of the dense vector when the collection was created with one named dense
    /// vector (`{"vectors": {"text-dense": {...}}}`): requests and answers use that name for
    /// the collection's one dense vector. Absent: Qdrant's unnamed form (`""`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_name: Option<String>,
    /// Two or more dense vectors: name -> `{"dim", "metric"}` (as manifest 2, without the
    /// index); `dim`, `metric` and `vector_name` then describe the first by name. Written only
    /// when there are two or more, so a collection without the feature keeps today's file.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub dense_vectors: serde_json::Map<String, Value>,
}

fn empty_object() -> Value {
    json!({})
}

fn yes() -> bool {
    true
}

impl Meta {
    /// The dense vectors' names in Qdrant's requests and answers, in the core's order (one:
    /// `""` unless the collection was created with a named one).
    pub fn dense_names(&self) -> Vec<String> {
        if self.dense_vectors.is_empty() {
            return vec![self.vector_name.clone().unwrap_or_default()];
        }
        let mut names: Vec<String> = self.dense_vectors.keys().cloned().collect();
        names.sort();
        names
    }

    /// Whether `name` is a dense vector's name in Qdrant's requests.
    pub fn is_dense_name(&self, name: &str) -> bool {
        self.dense_names().iter().any(|n| n == name)
    }

    /// The core's `using` for Qdrant's: with one dense vector, its name (or `""`, or none) is
    /// the core's unnamed vector and another name a sparse one; with several, names are the
    /// core's.
    pub fn core_using(&self, using: Option<String>) -> Option<String> {
        match using {
            Some(u) if self.dense_vectors.is_empty() && (u.is_empty() || self.is_dense_name(&u)) => None,
            other => other,
        }
    }

    /// The dense vectors as the core's, by name (one: named `""` in the core).
    pub fn dense_specs(&self) -> Result<Vec<DenseSpec>, ApiError> {
        if self.dense_vectors.is_empty() {
            let (config, ..) = self.parse_one()?;
            return Ok(vec![DenseSpec { name: String::new(), dim: config.dim, metric: config.metric }]);
        }
        DenseSpec::list_from_value(&Value::Object(self.dense_vectors.clone())).map_err(ApiError::core)
    }

    /// The sparse vectors, by name ascending.
    pub fn sparse_specs(&self) -> Result<Vec<SparseSpec>, ApiError> {
        SparseSpec::list_from_value(&Value::Object(self.sparse_vectors.clone()), true).map_err(ApiError::core)
    }

    /// Checks the configuration and returns what it means.
    pub fn parse(&self) -> Result<(CollectionConfig, Schema, IndexKind), ApiError> {
        let parsed = self.parse_one()?;
        if !self.dense_vectors.is_empty() {
            let specs = self.dense_specs()?;
            let first = (&specs[0].name, specs[0].dim, specs[0].metric);
            let named = self.vector_name.as_ref().unwrap_or(&String::new()).clone();
            if specs.len() < 2 || first != (&named, parsed.0.dim, parsed.0.metric) {
                return Err(ApiError::bad_request(
                    "dense_vectors: two or more, the first by name being dim, metric and vector_name",
                ));
            }
        }
        Ok(parsed)
    }

    /// [`parse`](Self::parse) without the check of `dense_vectors`.
    fn parse_one(&self) -> Result<(CollectionConfig, Schema, IndexKind), ApiError> {
        self.sparse_specs()?;
        let metric = match self.metric.as_str() {
            "cosine" => Metric::Cosine,
            "dot" => Metric::Dot,
            "l2" => Metric::L2,
            m => return Err(ApiError::bad_request(format!("metric {m:?}: expected cosine, dot or l2"))),
        };
        if self.dim == 0 || self.dim > 65_536 {
            return Err(ApiError::bad_request(format!("dim {} is not in 1..=65536", self.dim)));
        }
        let schema = match self.payload.as_deref() {
            None | Some("flat") => Collection::parse_schema(&self.fields),
            Some("nested") => Collection::parse_nested_schema(&self.fields),
            Some(other) => return Err(ApiError::bad_request(format!("payload {other:?}: expected flat or nested"))),
        }
        .map_err(ApiError::core)?;
        let index = IndexKind::from_json(&self.index.to_string()).map_err(ApiError::core)?;
        if matches!(index, IndexKind::IvfRabitq(p) if p.codes_only) {
            // A served collection takes writes and reseals; a codes-only segment cannot be
            // rebuilt. Codes-only segments are served read-only through `shoal import`.
            return Err(ApiError::bad_request(
                "index.codes_only: a served collection keeps its vectors (import a codes-only segment instead)",
            ));
        }
        Ok((CollectionConfig { dim: self.dim, metric }, schema, index))
    }
}
