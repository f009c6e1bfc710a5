use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use serde::Serialize;

use crate::Error;
use shoal_format::PointId;

/// Largest `limit` a request may ask for.
pub const MAX_LIMIT: usize = 10_000;
/// Longest `text` query, in bytes.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Largest `bm25_k1` a request may set (practical values are 0–3; beyond this BM25's terms
/// could overflow `f32` for large term counts).
pub const MAX_BM25_K1: f32 = 1000.0;
/// Largest `offset` a request may ask for.
pub const MAX_OFFSET: usize = 100_000;
/// Most `prefetch` entries at one level of a request.
pub const MAX_PREFETCH: usize = 16;
/// Deepest nesting of `prefetch` (a request's prefetches are level 1).
pub const MAX_PREFETCH_DEPTH: usize = 4;
/// Most `prefetch` entries in one request, all levels together.
pub const MAX_PREFETCH_TOTAL: usize = 64;

/// The search request, one JSON shape for every host.
///
/// ```
/// let req = shoal_core::SearchRequest::from_json(r#"{"vector": [1, 2], "limit": 5}"#).unwrap();
/// assert_eq!(req.limit, 5);
/// assert!(shoal_core::SearchRequest::from_json(r#"{"vector": [1], "limt": 5}"#).is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchRequest {
    /// Query vector.
    pub vector: Option<Vec<f32>>,
    /// Sparse query vector (`{"indices": [...], "values": [...]}`), searched in the sparse
    /// vector named by `using`: a ranking of its own, like `vector` or `text`.
    pub sparse: Option<crate::SparseVector>,
    /// The vector searched: a dense vector of the collection (with `vector`; `""` or none: the
    /// one named `""`, or the only one) or a sparse vector (with `sparse`).
    pub using: Option<String>,
    /// Full-text query over the collection's `text` fields: words (any may match), `+word`
    /// (must), `-word` (must not), `"a phrase"`; BM25-ranked. With `vector` too, the two
    /// rankings are fused.
    pub text: Option<String>,
    /// Number of results, 1..=[`MAX_LIMIT`]; default 10.
    pub limit: usize,
    /// Results to skip, 0..=[`MAX_OFFSET`].
    pub offset: usize,
    /// Payload filter in Qdrant's language (`must`, `should`, `must_not`, `min_should`;
    /// `match` value/any/except, `range`, `is_empty`, `is_null`, `has_id`), checked against the
    /// collection's schema when the search runs.
    pub filter: Option<serde_json::Value>,
    /// Index parameters.
    pub params: SearchParams,
    /// Searches whose results this request fuses (without `vector`) or re-scores exactly by
    /// its `vector`: each one a request of its own (`vector`, `text` or both, or a `prefetch`
    /// of its own, at most [`MAX_PREFETCH_DEPTH`] deep, at most [`MAX_PREFETCH`] per level;
    /// `filter`, `limit` — default 10 —, `params`, `score_threshold`, fusion settings; not
    /// `offset`, `with_payload` or `timeout_ms`, which are the top request's). This request's
    /// filter applies to every one of them, as well as their own.
    pub prefetch: Vec<SearchRequest>,
    /// How rankings are fused — a request's `vector` and `text`, or its `prefetch` results:
    /// `"rrf"` (reciprocal rank fusion, the default), `"dbsf"` (distribution-based score
    /// fusion: each ranking's scores normalised by its mean ± 3 standard deviations, then
    /// summed) or, for `vector` + `text` only, `"weighted"` (each ranking's scores scaled to
    /// 0..=1, then summed with the weights `alpha` and `1 - alpha`).
    pub fusion: Option<String>,
    /// `k` of reciprocal rank fusion (at least 1; default [`DEFAULT_RRF_K`](crate::DEFAULT_RRF_K)):
    /// a ranking adds `1 / ((p + 1) / w + k - 1)` at 0-based position `p`.
    pub rrf_k: Option<u32>,
    /// Weights `w` of reciprocal rank fusion, one per ranking (`vector` then `text`, or one per
    /// `prefetch`); default 1 each; a weight `<= 0` adds nothing.
    pub weights: Option<Vec<f32>>,
    /// Weight of the vector ranking in `"weighted"` fusion, 0..=1 (default 0.5); the text
    /// ranking gets `1 - alpha`.
    pub alpha: Option<f32>,
    /// Results scoring worse than this are left out: for an `l2` vector search, a squared
    /// distance above it; otherwise a score (similarity, BM25, fused) below it.
    pub score_threshold: Option<f32>,
    /// BM25 term frequency saturation of the text search, 0..=[`MAX_BM25_K1`] (default 1.2).
    pub bm25_k1: Option<f32>,
    /// BM25 length normalisation of the text search, 0..=1 (default 0.75).
    pub bm25_b: Option<f32>,
    /// Whether to return each point's stored payload object (`{}` when it has none).
    pub with_payload: bool,
    /// Time budget in milliseconds for the text search: when it runs out the best results
    /// found so far come back with `partial: true` (the host must supply a clock).
    pub timeout_ms: Option<u64>,
}

/// Index parameters of a request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchParams {
    /// Scan every point exactly even when an approximate index exists; a sparse search then
    /// scores every row its posting lists hold instead of skipping those that cannot be among
    /// the results (the same results, slower: for comparisons).
    pub exact: bool,
    /// Partitions to probe in an IVF index.
    pub nprobe: Option<u32>,
    /// Candidates re-ranked exactly per result.
    pub rerank: Option<u32>,
}

impl SearchRequest {
    /// Parses and checks a request. Errors name the offending field. A host may leave out
    /// `vector` and set it afterwards (the npm package passes it as a `Float32Array`).
    pub fn from_json(json: &str) -> Result<SearchRequest, Error> {
        // `from_slice`, never `from_str`, in every crate of the wasm package: the two are
        // separate instantiations of serde_json's parser (2.2 KB gzipped), and on text that is
        // already UTF-8 they give the same results.
        let v: serde_json::Value =
            serde_json::from_slice(json.as_bytes()).map_err(|e| Error::InvalidRequest(format!("{e}")))?;
        let req = SearchRequest::from_value(&v)?;
        req.check()?;
        Ok(req)
    }

    /// The request from decoded JSON (read field by field through `serde_json::Value`, not
    /// derived code: the npm package's size budget). Unknown fields are refused by name;
    /// `null` is "absent" for the optional fields. (What a prefetch may not set is refused by
    /// [`check`](Self::check).)
    fn from_value(v: &serde_json::Value) -> Result<SearchRequest, Error> {
        use serde_json::Value;
        let bad = |m: String| Error::InvalidRequest(m);
        const KEYS: [&str; 18] = [
            "vector",
            "sparse",
            "using",
            "text",
            "limit",
            "filter",
            "params",
            "prefetch",
            "fusion",
            "rrf_k",
            "weights",
            "alpha",
            "bm25_k1",
            "bm25_b",
            "score_threshold",
            "offset",
            "with_payload",
            "timeout_ms",
        ];
        let o = object(v, "request", &KEYS)?;
        let get = |k: &str| o.get(k).filter(|x| !x.is_null());
        let wrong = |k: &str, want: &str| bad(format!("invalid type for `{k}`: expected {want}"));
        // A JSON number as f32, as serde reads one: integers cast once, others through f64;
        // beyond f32's range (JSON has no infinities) it is no f32.
        let f32_of = |x: &Value| match x {
            Value::Number(n) => Some(match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => u as f32,
                (_, Some(i)) => i as f32,
                _ => n.as_f64()? as f32,
            })
            .filter(|f| f.is_finite()),
            _ => None,
        };
        let float = |k: &str| get(k).map(|x| f32_of(x).ok_or_else(|| wrong(k, "a number"))).transpose();
        let uint = |m: &serde_json::Map<String, Value>, k: &str| {
            m.get(k)
                .filter(|x| !x.is_null())
                .map(|x| x.as_u64().ok_or_else(|| wrong(k, "an unsigned integer")))
                .transpose()
        };
        let string =
            |k: &str| get(k).map(|x| x.as_str().map(String::from).ok_or_else(|| wrong(k, "a string"))).transpose();
        let flag = |m: &serde_json::Map<String, Value>, k: &str| {
            m.get(k).filter(|x| !x.is_null()).map_or(Ok(false), |x| x.as_bool().ok_or_else(|| wrong(k, "a bool")))
        };
        let numbers = |k: &str| {
            get(k)
                .map(|x| {
                    x.as_array()
                        .and_then(|a| a.iter().map(f32_of).collect::<Option<Vec<f32>>>())
                        .ok_or_else(|| wrong(k, "an array of numbers"))
                })
                .transpose()
        };
        let prefetch = match get("prefetch") {
            None => Vec::new(),
            Some(Value::Array(a)) => {
                let mut all = Vec::with_capacity(a.len());
                for p in a {
                    all.push(SearchRequest::from_value(p)?);
                }
                all
            }
            Some(_) => return Err(wrong("prefetch", "an array of requests")),
        };
        let params = match get("params") {
            None => SearchParams::default(),
            Some(p) => {
                let p = object(p, "params", &["exact", "nprobe", "rerank"])?;
                let small = |k: &str| uint(p, k)?.map(|x| u32::try_from(x).map_err(|_| wrong(k, "a u32"))).transpose();
                SearchParams { exact: flag(p, "exact")?, nprobe: small("nprobe")?, rerank: small("rerank")? }
            }
        };
        let size = |k: &str, default: usize| {
            uint(o, k)?.map_or(Ok(default), |x| usize::try_from(x).map_err(|_| wrong(k, "a smaller integer")))
        };
        let sparse = get("sparse")
            .map(|x| crate::SparseVector::from_value(x).map_err(|e| bad(format!("`sparse`: {e}"))))
            .transpose()?;
        Ok(SearchRequest {
            vector: numbers("vector")?,
            sparse,
            using: string("using")?,
            text: string("text")?,
            limit: size("limit", 10)?,
            offset: size("offset", 0)?,
            filter: get("filter").cloned(),
            params,
            prefetch,
            fusion: string("fusion")?,
            rrf_k: uint(o, "rrf_k")?.map(|x| u32::try_from(x).map_err(|_| wrong("rrf_k", "a u32"))).transpose()?,
            weights: numbers("weights")?,
            alpha: float("alpha")?,
            score_threshold: float("score_threshold")?,
            bm25_k1: float("bm25_k1")?,
            bm25_b: float("bm25_b")?,
            with_payload: flag(o, "with_payload")?,
            timeout_ms: uint(o, "timeout_ms")?,
        })
    }

    /// A request for the `limit` nearest neighbours of `vector`.
    pub fn nearest(vector: Vec<f32>, limit: usize) -> SearchRequest {
        SearchRequest { vector: Some(vector), limit, ..SearchRequest::default() }
    }

    /// Checks the limits and the capabilities this build has.
    pub fn check(&self) -> Result<(), Error> {
        fn count(r: &SearchRequest) -> usize {
            r.prefetch.iter().map(|p| 1 + count(p)).sum()
        }
        if count(self) > MAX_PREFETCH_TOTAL {
            // (The number is MAX_PREFETCH_TOTAL: a test holds them equal.)
            return Err(Error::InvalidRequest("prefetch: at most 64 in a request, all levels together".into()));
        }
        self.check_at(0)
    }

    /// Whether the request is a vector search alone (no `text`, `prefetch` or fusion settings).
    pub(crate) fn is_vector_only(&self) -> bool {
        self.text.is_none()
            && self.sparse.is_none()
            && self.prefetch.is_empty()
            && self.fusion.is_none()
            && self.rrf_k.is_none()
            && self.weights.is_none()
    }

    /// [`check`](Self::check) of a request at `depth` (a prefetch below the top request).
    fn check_at(&self, depth: usize) -> Result<(), Error> {
        if !self.prefetch.is_empty() && (depth >= MAX_PREFETCH_DEPTH || self.prefetch.len() > MAX_PREFETCH) {
            // (The numbers are MAX_PREFETCH and MAX_PREFETCH_DEPTH: a test holds them equal.)
            return Err(Error::InvalidRequest("prefetch: at most 16 per level, nested at most 4 deep".into()));
        }
        if depth > 0 && (self.offset > 0 || self.with_payload || self.timeout_ms.is_some()) {
            return Err(Error::InvalidRequest(
                "prefetch: offset, with_payload and timeout_ms are the top request's".into(),
            ));
        }
        if self.limit == 0 || self.limit > MAX_LIMIT {
            return Err(Error::InvalidRequest(format!("limit must be in 1..={MAX_LIMIT}, got {}", self.limit)));
        }
        if self.offset > MAX_OFFSET {
            return Err(Error::InvalidRequest(format!("offset must be in 0..={MAX_OFFSET}, got {}", self.offset)));
        }
        if self.params.nprobe == Some(0) || self.params.rerank == Some(0) {
            return Err(Error::InvalidRequest(String::from("params.nprobe and params.rerank must be at least 1")));
        }
        if let Some(f) = self.fusion.as_deref().filter(|&f| f != "rrf" && f != "weighted" && f != "dbsf") {
            return Err(Error::InvalidRequest(format!(
                "fusion must be \"rrf\", \"dbsf\" or \"weighted\", got \"{f}\""
            )));
        }
        let fusion = self.fusion.as_deref().unwrap_or("rrf");
        if self.alpha.is_some() && fusion != "weighted" {
            return Err(Error::InvalidRequest(String::from("alpha goes with fusion \"weighted\"")));
        }
        if self.alpha.is_some_and(|a| !(0.0..=1.0).contains(&a)) {
            return Err(Error::InvalidRequest(String::from("alpha must be in 0..=1")));
        }
        if (self.rrf_k.is_some() || self.weights.is_some()) && fusion != "rrf" {
            return Err(Error::InvalidRequest(String::from("rrf_k and weights go with fusion \"rrf\"")));
        }
        if self.rrf_k == Some(0) {
            return Err(Error::InvalidRequest(String::from("rrf_k must be at least 1")));
        }
        if self.bm25_k1.is_some_and(|k1| !(0.0..=MAX_BM25_K1).contains(&k1))
            || self.bm25_b.is_some_and(|b| !(0.0..=1.0).contains(&b))
        {
            return Err(Error::InvalidRequest(String::from("bm25_k1 must be in 0..=1000, bm25_b in 0..=1")));
        }
        if self.text.as_ref().is_some_and(|t| t.len() > MAX_TEXT_BYTES) {
            return Err(Error::InvalidRequest(format!("text must be at most {MAX_TEXT_BYTES} bytes")));
        }
        if self.timeout_ms == Some(0) {
            return Err(Error::InvalidRequest(String::from("timeout_ms must be at least 1")));
        }
        self.prefetch.iter().try_for_each(|p| p.check_at(depth + 1))
    }

    /// Checks what the request asks for as a whole, once its `vector` is set (a host may set it
    /// after parsing): what it ranks by, and that fusion settings have rankings to fuse.
    pub(crate) fn check_shape(&self) -> Result<(), Error> {
        let bad = |m: &str| Err(Error::InvalidRequest(String::from(m)));
        let fusing = self.fusion.is_some() || self.rrf_k.is_some() || self.weights.is_some();
        if self.sparse.is_some() {
            if self.vector.is_some() || self.text.is_some() || !self.prefetch.is_empty() || fusing {
                return bad("`sparse` is a ranking of its own: no `vector`, `text`, `prefetch` or fusion with it");
            }
            if self.using.as_deref().is_none_or(str::is_empty) {
                return bad("`sparse` needs `using`: the name of a sparse vector");
            }
            return Ok(());
        }
        if self.using.as_deref().is_some_and(|u| !u.is_empty()) && self.vector.is_none() {
            return bad("`using` names the vector searched: it goes with `vector` or `sparse`");
        }
        let lists = match (&self.vector, &self.text, self.prefetch.len()) {
            (_, Some(_), 1..) => return bad("`text` and `prefetch` do not go together"),
            (Some(_), None, 1..) if fusing => return bad("`vector` with `prefetch` re-scores: no fusion settings"),
            (Some(_), None, 1..) => 0,
            (None, None, 0) => return bad("give `vector`, `sparse`, `text`, `vector` and `text`, or `prefetch`"),
            (Some(_), Some(_), 0) => 2,
            (_, _, 0) if fusing => return bad("fusion needs both `vector` and `text`, or `prefetch`"),
            (_, _, n) => n,
        };
        if self.fusion.as_deref() == Some("weighted") && !self.prefetch.is_empty() {
            return bad("fusion \"weighted\" fuses `vector` and `text`");
        }
        if self.weights.as_ref().is_some_and(|w| w.len() != lists) {
            return Err(Error::InvalidRequest(format!("weights: give one per ranking fused ({lists})")));
        }
        self.prefetch.iter().try_for_each(SearchRequest::check_shape)
    }
}

/// One result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScoredPoint {
    /// External id: a JSON number for an integer, the canonical string for a UUID.
    pub id: PointId,
    /// Similarity (`dot`, `cosine`: higher is better) or squared distance (`l2`: lower is better).
    pub score: f32,
    /// The stored payload object, when the request asked `with_payload`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
}

/// The object `v` (`what` names it in errors) with no key outside `keys`.
fn object<'v>(
    v: &'v serde_json::Value,
    what: &str,
    keys: &[&str],
) -> Result<&'v serde_json::Map<String, serde_json::Value>, Error> {
    let o = v.as_object().ok_or_else(|| Error::InvalidRequest(format!("{what}: expected an object")))?;
    match o.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => {
            Err(Error::InvalidRequest(format!("{what}: unknown field `{k}`, expected one of `{}`", keys.join("`, `"))))
        }
        None => Ok(o),
    }
}

/// What a search did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SearchStats {
    /// Points whose exact distance or score was computed (for a sparse vector, rows whose dot
    /// product was summed: a segment's rows skipped by their bound are not counted).
    pub scanned: u64,
    /// Points whose distance was estimated from quantized codes.
    pub estimated: u64,
    /// Segments searched (sealed and mutable).
    pub segments: u32,
    /// Whether every live point was considered exactly.
    pub exact: bool,
}

/// The response: results best first, whether a deadline cut the search short, and stats.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SearchResponse {
    /// Results, best first; ties by ascending internal id.
    pub points: Vec<ScoredPoint>,
    /// True when the time budget ran out and these are the best results found so far.
    pub partial: bool,
    /// Statistics.
    pub stats: SearchStats,
}

impl SearchResponse {
    /// The response as JSON, the shape every host returns.
    pub fn to_json(&self) -> String {
        // Cannot fail (string keys, finite numbers); `unwrap_or_default` keeps serde_json::Error's
        // Debug (and core's string escaping) out of the wasm package.
        serde_json::to_string(self).unwrap_or_default()
    }
}
