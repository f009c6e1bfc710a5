//! The cross-target conformance scenario: one deterministic sequence of inserts, upserts,
//! deletes, seals, byte round trips and searches, run natively (scalar and SIMD kernels), in
//! wasm under wasmtime (SIMD128 and scalar builds) and through the npm package in Node. Every
//! run must produce the same ids, the same f32 score bits and the same segment bytes.
//! Configurations with payloads also store a payload per point and filter most searches.

use serde_json::{Value, json};
use shoal_core::{Collection, CollectionConfig, IndexKind, Kernels, Metric, PointId, SparseSpec, SparseVector};

use crate::Rng;

mod queries;
pub use queries::*;

/// Points as `(external id, stored vector)`, in internal-id order.
pub type Points = Vec<(PointId, Vec<f32>)>;

/// One configuration of the scenario.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Name, used for fixture files.
    pub name: &'static str,
    /// Metric.
    pub metric: Metric,
    /// Dimension.
    pub dim: usize,
    /// Number of queries.
    pub queries: usize,
    /// Results per query.
    pub k: usize,
    /// Data seed.
    pub seed: u64,
    /// IVF partitions of the first seal (`None`: flat). With an index, searches after that seal
    /// are approximate: still identical on every target, but not comparable to the oracle.
    pub ivf_partitions: Option<u32>,
    /// Bits per coordinate of the IVF codes (1..=8).
    pub ivf_bits: u32,
    /// Whether points carry payloads ([`FIELDS`]) and searches cycle through [`FILTERS`].
    pub payloads: bool,
    /// Whether the scenario ends by resealing codes-only ([`codes_only_options`]) and searching
    /// that, before and after a byte round trip.
    pub codes_only: bool,
    /// Whether two ids in three are UUIDs ([`point_id`]): ids of both kinds mixed in every
    /// batch, segment and filter.
    pub uuids: bool,
    /// With `payloads`: nested payloads ([`nested_payload`], [`NESTED_FILTERS`]; no text).
    pub nested: bool,
    /// Queries are prefetches fused (RRF with `k` and weights, DBSF, nested), re-scored, or
    /// thresholded ([`fusion_request`]).
    pub fusion: bool,
    /// With `fusion`: points carry two sparse vectors ([`SPARSE`]: one plain, one with the idf
    /// modifier) and queries search them, alone and fused with the dense vector
    /// ([`sparse_request`]).
    pub sparse: bool,
    /// Points carry three dense vectors: "a" (this config's `dim` and `metric`, not cosine) and
    /// [`NAMED`]'s, derived from "a" ([`named_vector`]); queries search each in turn, alone, with
    /// text, and two of them fused ([`named_request`]).
    pub named: bool,
}

/// The sparse vectors of configurations with [`Config::sparse`], as the JSON every host parses.
pub const SPARSE: &str = r#"{"plain": {"modifier": "none"}, "weighted": {"modifier": "idf"}}"#;

/// The filters of nested configurations (query `q` uses `NESTED_FILTERS[q % len]`): JSON paths
/// into objects and arrays of objects, `nested`, `is_empty` / `is_null` over paths, `has_id`.
pub const NESTED_FILTERS: [&str; 8] = [
    "null",
    r#"{"must_not": [{"key": "meta.color", "match": {"value": "red"}}]}"#,
    r#"{"must": [{"key": "meta.n", "range": {"gte": 10, "lt": 60}}], "must_not": [{"key": "meta.tags", "match": {"any": ["x"]}}]}"#,
    r#"{"must": [{"key": "items[].k", "match": {"value": "b"}}, {"key": "items[].v", "range": {"gte": 3}}]}"#,
    r#"{"must": [{"nested": {"key": "items", "filter": {"must": [{"key": "k", "match": {"value": "b"}}, {"key": "v", "range": {"gte": 3}}]}}}]}"#,
    r#"{"should": [{"is_empty": {"key": "meta.tags"}}, {"is_null": {"key": "meta.flag"}}, {"has_id": [3, 700, 1201, 9007199254740992]}]}"#,
    r#"{"must": [{"key": "items[0].k", "match": {"any": ["a", "c"]}}], "must_not": [{"is_empty": {"key": "items"}}]}"#,
    r#"{"min_should": {"conditions": [{"key": "meta.color", "match": {"any": ["red", "blue"]}}, {"key": "meta.n", "range": {"gt": 50}}, {"key": "items[].v", "match": {"value": 2}}], "min_count": 2}}"#,
];

/// The payload of point `id` in a nested configuration: [`payload`] under `meta`, beside an
/// array of objects (`items`, 0–3 of them) for paths with `[]` and `nested` conditions.
pub fn nested_payload(id: u64, step: usize) -> Value {
    let flat = payload(id, step);
    if flat.is_null() {
        return Value::Null;
    }
    let n = flat["n"].as_u64().unwrap_or(0);
    const KEYS: [&str; 3] = ["a", "b", "c"];
    let items: Vec<Value> = (0..id.wrapping_add(step as u64) % 4)
        .map(|j| {
            let k = KEYS[((n + j) % 3) as usize];
            let v = (n + 2 * j) % 7;
            // A string now and then: a stray of the `integer` path `items[].v`.
            if (n + j).is_multiple_of(5) { json!({"k": k, "v": v.to_string()}) } else { json!({"k": k, "v": v}) }
        })
        .collect();
    json!({"meta": flat, "items": items})
}

/// The id the scenario gives its point number `n`: `n` itself, or with [`Config::uuids`] for
/// two numbers in three a UUID made of a scrambled `n` (8 bytes, so UUIDs do not sort like
/// their numbers) and `n` (8 bytes, so they are unique).
pub fn point_id(config: &Config, n: u64) -> PointId {
    if !config.uuids || n.is_multiple_of(3) {
        return PointId::Num(n);
    }
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    u[8..].copy_from_slice(&n.to_be_bytes());
    PointId::Uuid(u)
}

/// A point id as JSON: a number, or a UUID's canonical text.
pub fn id_json(id: PointId) -> Value {
    match id {
        PointId::Num(n) => json!(n),
        PointId::Uuid(_) => json!(id.to_string()),
    }
}

/// The declared paths of nested configurations, built as columns (`meta.flag` is left
/// undeclared, so its conditions are answered from the documents; `meta.price` holds mostly
/// fractions, strays of an `integer` path, and `items[].v` sometimes a string).
pub const NESTED_FIELDS: &str = r#"{"meta.color": "keyword", "meta.n": "integer", "meta.tags": "keyword", "meta.price": "integer", "items[].k": "keyword", "items[].v": "integer"}"#;

/// The payload fields of configurations with payloads, as the JSON every host parses.
/// `refs` is multi-valued over hundreds of values (a counted direct column, some rows past the
/// 15 codes a slot counts).
pub const FIELDS: &str = r#"{"color": "keyword", "n": "integer", "tags": "keyword", "price": "float", "flag": "bool", "title": "text_en", "refs": "integer"}"#;

/// Words of the `title` text field (`text_en`: stemmed, so `salted` matches the query `salt`
/// and `Storms` is excluded by `-storm`).
const VOCAB: [&str; 8] = ["blue", "whale", "ocean", "salted", "reef", "Storms", "Blue", "waves"];

/// The text queries of configurations with payloads: query `q` uses `TEXTS[q % TEXTS.len()]`
/// (`""`: none), with its vector (hybrid) when `(q / TEXTS.len())` is even, alone otherwise.
pub const TEXTS: [&str; 6] = ["", "whale", "ocean salt", "\"blue whale\"", "+reef -storm", ""];

/// The filters that searches of configurations with payloads cycle through (query `q` uses
/// `FILTERS[q % FILTERS.len()]`; `null` is no filter). Some match most points (the IVF index
/// is searched with the filter checked per candidate), some few (scanned exactly).
pub const FILTERS: [&str; 10] = [
    "null",
    r#"{"must_not": [{"key": "color", "match": {"value": "red"}}]}"#,
    r#"{"must": [{"key": "n", "range": {"gte": 10, "lt": 60}}], "must_not": [{"key": "tags", "match": {"any": ["x"]}}]}"#,
    r#"{"should": [{"key": "flag", "match": {"value": true}}, {"key": "price", "range": {"lt": 0.25}}]}"#,
    r#"{"must": [{"key": "n", "match": {"value": 7}}]}"#,
    r#"{"must": [{"key": "tags", "match": {"except": ["x", "y"]}}]}"#,
    r#"{"should": [{"is_empty": {"key": "tags"}}, {"is_null": {"key": "flag"}}, {"has_id": [3, 700, 1201, 9007199254740992]}]}"#,
    r#"{"min_should": {"conditions": [{"key": "color", "match": {"any": ["red", "blue"]}}, {"key": "n", "range": {"gt": 50}}, {"key": "flag", "match": {"value": false}}], "min_count": 2}}"#,
    r#"{"must": [{"key": "refs", "range": {"gte": 100, "lt": 400}}]}"#,
    r#"{"must": [{"key": "refs", "match": {"except": [7, 8]}}], "must_not": [{"key": "refs", "match": {"any": [1, 2, 3, 500, 999]}}]}"#,
];

/// The payload of point `id` inserted by step `step`: every field type, multi-valued and
/// missing fields, nulls, and points without a payload (`null`). No random draws, so the
/// vectors of a scenario do not depend on whether it has payloads.
pub fn payload(id: u64, step: usize) -> Value {
    let mut h = id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (step as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    h ^= h >> 31;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 29;
    if h.is_multiple_of(23) {
        return Value::Null;
    }
    let color = ["red", "green", "blue"][(h % 3) as usize];
    let mut doc = json!({
        "color": color,
        "n": (h >> 8) % 100,
        "price": ((h >> 24) % 1000) as f64 / 1000.0,
        "flag": if h % 17 == 1 { Value::Null } else { Value::Bool((h >> 40).is_multiple_of(2)) },
    });
    if !h.is_multiple_of(5) {
        let words: Vec<&str> = (0..2 + (h >> 60) % 3).map(|i| VOCAB[((h >> (44 + 4 * i)) % 8) as usize]).collect();
        doc["title"] = Value::String(words.join(" "));
    }
    match (h >> 16) % 4 {
        0 => {}
        1 => doc["tags"] = json!(["x"]),
        2 => doc["tags"] = json!(["x", "y"]),
        _ => doc["tags"] = json!("z"),
    }
    let refs = match (h >> 20) % 8 {
        0 => 0,
        1..=4 => 1,
        7 if h.is_multiple_of(7) => 16 + (h >> 3) % 5,
        _ => 2 + (h >> 50) % 4,
    };
    if refs > 0 {
        let r: Vec<u64> = (0..refs).map(|i| (h >> (i % 5 * 10)).wrapping_add(i * 37) % 1000).collect();
        doc["refs"] = if refs == 1 { json!(r[0]) } else { json!(r) };
    }
    doc
}

/// The configurations every target runs: each metric, GloVe's 50-d, an odd dimension whose
/// tail splits a SIMD register, and a common embedding size.
pub const CONFIGS: [Config; 12] = [
    Config {
        name: "l2-50",
        metric: Metric::L2,
        dim: 50,
        queries: 400,
        k: 10,
        seed: 1,
        ivf_partitions: None,
        payloads: true,
        ivf_bits: 1,
        codes_only: false,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "dot-131",
        metric: Metric::Dot,
        dim: 131,
        queries: 400,
        k: 10,
        seed: 2,
        ivf_partitions: None,
        payloads: false,
        ivf_bits: 1,
        codes_only: false,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "cosine-384",
        metric: Metric::Cosine,
        dim: 384,
        queries: 400,
        k: 10,
        seed: 3,
        ivf_partitions: None,
        payloads: false,
        ivf_bits: 1,
        codes_only: false,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "cosine-50",
        metric: Metric::Cosine,
        dim: 50,
        queries: 400,
        k: 10,
        seed: 4,
        ivf_partitions: None,
        payloads: false,
        ivf_bits: 1,
        codes_only: false,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "ivf-l2-64",
        metric: Metric::L2,
        dim: 64,
        queries: 400,
        k: 10,
        seed: 5,
        ivf_partitions: Some(16),
        payloads: false,
        ivf_bits: 3,
        codes_only: true,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "ivf-cosine-50",
        metric: Metric::Cosine,
        dim: 50,
        queries: 400,
        k: 10,
        seed: 6,
        ivf_partitions: Some(24),
        payloads: true,
        ivf_bits: 1,
        codes_only: true,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "ivf-dot-200",
        metric: Metric::Dot,
        dim: 200,
        queries: 400,
        k: 10,
        seed: 7,
        ivf_partitions: Some(12),
        payloads: false,
        ivf_bits: 8,
        codes_only: true,
        uuids: false,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "uuid-ivf-l2-40",
        metric: Metric::L2,
        dim: 40,
        queries: 600,
        k: 10,
        seed: 8,
        ivf_partitions: Some(8),
        payloads: true,
        ivf_bits: 1,
        codes_only: false,
        uuids: true,
        nested: false,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "nested-dot-24",
        metric: Metric::Dot,
        dim: 24,
        // Few queries: filters on undeclared paths or with `nested` parse every row's JSON,
        // which in the debug wasm builds under a browser must stay well inside the driver's
        // timeouts.
        queries: 80,
        k: 10,
        seed: 9,
        ivf_partitions: Some(6),
        payloads: true,
        ivf_bits: 2,
        codes_only: false,
        uuids: false,
        nested: true,
        fusion: false,
        sparse: false,
        named: false,
    },
    Config {
        name: "fusion-cosine-16",
        metric: Metric::Cosine,
        dim: 16,
        // Few queries: each is several searches (text among them), and the debug wasm build under a
        // browser must stay well inside the driver's timeouts.
        queries: 30,
        k: 10,
        seed: 10,
        ivf_partitions: Some(4),
        payloads: true,
        ivf_bits: 1,
        codes_only: false,
        uuids: true,
        nested: false,
        fusion: true,
        sparse: false,
        named: false,
    },
    Config {
        name: "sparse-dot-12",
        metric: Metric::Dot,
        dim: 12,
        // Few queries: each is one or two searches, in the debug wasm build under a browser too.
        queries: 40,
        k: 10,
        seed: 11,
        ivf_partitions: Some(4),
        payloads: true,
        ivf_bits: 2,
        codes_only: false,
        uuids: true,
        nested: false,
        fusion: true,
        sparse: true,
        named: false,
    },
    Config {
        name: "named-dot-24",
        metric: Metric::Dot,
        dim: 24,
        queries: 48,
        k: 10,
        seed: 12,
        ivf_partitions: Some(4),
        payloads: true,
        ivf_bits: 3,
        codes_only: false,
        uuids: true,
        nested: false,
        fusion: false,
        sparse: false,
        named: true,
    },
];

/// The IVF seal options of a config's first seal, as the JSON every host parses.
pub fn seal_options(c: &Config) -> Option<String> {
    c.ivf_partitions
        .map(|p| format!(r#"{{"index": "ivf-rabitq", "partitions": {p}, "seed": {}, "bits": {}}}"#, c.seed, c.ivf_bits))
}

/// The codes-only reseal of a config with [`Config::codes_only`]: its IVF settings with at
/// least 4 bits (the extra bits are what a codes-only index ranks by).
pub fn codes_only_options(c: &Config) -> String {
    format!(
        r#"{{"index": "ivf-rabitq", "partitions": {}, "seed": {}, "bits": {}, "codes_only": true}}"#,
        c.ivf_partitions.unwrap_or(16),
        c.seed,
        c.ivf_bits.max(4)
    )
}

/// One step of the scenario.
#[derive(Clone, Debug)]
pub enum Op {
    /// `Collection::insert` (upsert), with payloads when the config has them.
    Insert {
        /// Ids.
        ids: Vec<PointId>,
        /// Row-major vectors.
        vectors: Vec<f32>,
        /// One payload per id, or none.
        payloads: Vec<Value>,
        /// With [`Config::sparse`]: the sparse vectors ("plain", then "weighted"), one (or
        /// `None`) per id; otherwise empty.
        sparse: Vec<Vec<Option<SparseVector>>>,
    },
    /// `Collection::delete`.
    Delete {
        /// Ids.
        ids: Vec<PointId>,
    },
    /// `Collection::seal`, or `seal_with` the given JSON seal options.
    Seal(Option<String>),
    /// `to_bytes` then `from_bytes` into a new collection.
    RoundTrip,
    /// Seal, write the segment set (manifest, segment and live-rows files), then open it
    /// again as a new collection.
    SetRoundTrip,
    /// Run every query and record the results.
    Search,
}

/// A scenario: its config, its steps and its queries.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Configuration.
    pub config: Config,
    /// Steps, in order.
    pub ops: Vec<Op>,
    /// `config.queries * config.dim` floats.
    pub queries: Vec<f32>,
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// External ids of every result of every search step, in order.
    pub ids: Vec<PointId>,
    /// `f32::to_bits` of every score, aligned with `ids`.
    pub score_bits: Vec<u32>,
    /// Number of results of each query of each search step.
    pub counts: Vec<u32>,
    /// The final collection's segment bytes.
    pub segment: Vec<u8>,
    /// The manifest JSON of every [`Op::SetRoundTrip`], in order.
    pub manifests: Vec<String>,
}

impl Output {
    /// A short record of the output, comparable across targets and committed in
    /// `tests/golden/conformance.json`: per part (`ids`, `score_bits`, `counts`, `segment`) its
    /// element count and the CRC-32C of its little-endian bytes (an integer id's 8 bytes, a
    /// UUID's 16).
    pub fn digest(&self) -> Value {
        fn part<T: Copy, const N: usize>(items: &[T], bytes: fn(T) -> [u8; N]) -> Value {
            let all: Vec<u8> = items.iter().flat_map(|&x| bytes(x)).collect();
            json!({"len": items.len(), "crc32c": shoal_format::crc32c(&all)})
        }
        json!({
            "ids": {
                "len": self.ids.len(),
                "crc32c": shoal_format::crc32c(&self.ids.iter().flat_map(|id| match id {
                    PointId::Num(n) => n.to_le_bytes().to_vec(),
                    PointId::Uuid(u) => u.to_vec(),
                }).collect::<Vec<u8>>()),
            },
            "score_bits": part(&self.score_bits, u32::to_le_bytes),
            "counts": part(&self.counts, u32::to_le_bytes),
            "segment": part(&self.segment, |b: u8| [b]),
            "manifests": part(self.manifests.concat().as_bytes(), |b: u8| [b]),
        })
    }
}

/// The committed digests of every configuration's output (`tests/golden/conformance.json`,
/// keyed by [`Config::name`]), compiled in so that targets without a file system (wasm) check
/// them too. `SHOAL_WRITE_GOLDEN=1 cargo test -p shoal-tests --test conformance` rewrites the
/// file when the scenario or the writer changes on purpose.
pub fn committed_digests() -> Value {
    serde_json::from_str(include_str!("../../../../tests/golden/conformance.json")).expect("valid digests JSON")
}

/// Checks `out` (from the named kernel variant) against the committed digest of `config`,
/// with a message naming the parts that differ.
pub fn check_digest(config: &Config, kernels: &str, out: &Output) {
    let committed = committed_digests();
    let want = &committed[config.name];
    assert!(!want.is_null(), "{}: no committed digest in tests/golden/conformance.json", config.name);
    let got = out.digest();
    let differs: Vec<&str> =
        ["ids", "score_bits", "counts", "segment", "manifests"].into_iter().filter(|p| got[p] != want[p]).collect();
    assert!(
        differs.is_empty(),
        "{} with kernels {kernels}: {differs:?} differ from tests/golden/conformance.json\n got {got}\nwant {want}",
        config.name
    );
}

/// A random sparse vector (indices from 0..48, so points share them; values of both signs,
/// some zero), or `None` (one in eight), or empty (one in sixteen).
fn sparse_vector(rng: &mut Rng) -> Option<SparseVector> {
    match rng.below(16) {
        0 | 1 => return None,
        2 => return Some(SparseVector::default()),
        _ => {}
    }
    let n = 1 + rng.below(8) as usize;
    let mut indices: Vec<u32> = Vec::with_capacity(n);
    while indices.len() < n {
        let i = rng.below(48) as u32;
        if !indices.contains(&i) {
            indices.push(i);
        }
    }
    let values: Vec<f32> = indices.iter().map(|&i| if i % 11 == 0 { 0.0 } else { rng.signed_f32() * 3.0 }).collect();
    Some(SparseVector::new(&indices, &values).expect("a valid sparse vector"))
}

fn row(rng: &mut Rng, dim: usize, i: u64) -> Vec<f32> {
    // Mostly uniform values; some rows scaled up or down by powers of two (exact) so sums see
    // very different magnitudes, and a zero row.
    let scale = match i % 50 {
        0 => 0.0,
        7 => 1024.0,
        13 => 1.0 / 4096.0,
        _ => 1.0,
    };
    (0..dim).map(|_| rng.signed_f32() * scale).collect()
}

fn insert_op(
    rng: &mut Rng,
    config: &Config,
    step: usize,
    ids: impl Iterator<Item = u64>,
    existing: &mut Vec<Vec<f32>>,
) -> Op {
    let dim = config.dim;
    let mut all_ids = Vec::new();
    let mut vectors = Vec::new();
    for id in ids {
        // Every 9th point copies an earlier vector exactly: equal scores whose order only the
        // tie-break rule decides.
        let v = if id % 9 == 4 && !existing.is_empty() {
            existing[rng.below(existing.len() as u64) as usize].clone()
        } else {
            row(rng, dim, id)
        };
        existing.push(v.clone());
        all_ids.push(id);
        vectors.extend_from_slice(&v);
    }
    let doc = if config.nested { nested_payload } else { payload };
    let payloads = if config.payloads { all_ids.iter().map(|&id| doc(id, step)).collect() } else { Vec::new() };
    let sparse = if config.sparse {
        (0..2).map(|_| all_ids.iter().map(|_| sparse_vector(rng)).collect()).collect()
    } else {
        Vec::new()
    };
    Op::Insert { ids: all_ids.iter().map(|&n| point_id(config, n)).collect(), vectors, payloads, sparse }
}

fn delete_op(config: &Config, ids: impl Iterator<Item = u64>) -> Op {
    Op::Delete { ids: ids.map(|n| point_id(config, n)).collect() }
}

/// Builds the scenario of `config`.
pub fn scenario(config: Config) -> Scenario {
    let mut rng = Rng::new(config.seed);
    let dim = config.dim;
    let mut existing = Vec::new();
    let big = [1u64 << 53, (1u64 << 53) + 7, u64::MAX - 3, u64::MAX];
    // Evaluated in order: the inserts draw from `rng` one after the other.
    let mut ops = vec![
        insert_op(&mut rng, &config, 0, 0..800, &mut existing),
        insert_op(&mut rng, &config, 1, 700..1300, &mut existing), // 700..800 are upserts
        delete_op(&config, (0..1300).step_by(13).chain([5000, 5001])),
        Op::Search,
        Op::Seal(seal_options(&config)),
        Op::Search,
        // Upserts into the sealed segment, and ids at the edges of the u64 and f64 ranges.
        insert_op(&mut rng, &config, 6, (1200..1600).chain(big), &mut existing),
        delete_op(&config, (3..1600).step_by(17)),
        Op::Search,
        // A second segment: the set holds two, the first with deleted rows.
        Op::Seal(None),
        Op::Search,
        // Upserts into both segments, deletes in both and in the mutable segment; the set
        // written and opened again (manifest, live-rows files).
        insert_op(&mut rng, &config, 7, (1500..1700).chain((100..300).step_by(7)), &mut existing),
        delete_op(&config, (0..1700).step_by(29).chain([1650, 1651])),
        Op::Search,
        Op::SetRoundTrip,
        Op::Search,
        Op::RoundTrip,
        Op::Search,
    ];
    if config.codes_only {
        ops.extend([Op::Seal(Some(codes_only_options(&config))), Op::Search, Op::RoundTrip, Op::Search]);
    }
    let mut queries = Vec::with_capacity(config.queries * dim);
    for q in 0..config.queries {
        match q % 4 {
            // A stored vector itself: its point (and its exact copies) tie at the top.
            0 => queries.extend_from_slice(&existing[rng.below(existing.len() as u64) as usize]),
            // A stored vector scaled by two (exact).
            1 => queries.extend(existing[rng.below(existing.len() as u64) as usize].iter().map(|x| x * 2.0)),
            _ => queries.extend(row(&mut rng, dim, 1 + q as u64 % 49)),
        }
    }
    Scenario { config, ops, queries }
}

/// Runs a scenario with the given kernels.
pub fn run(s: &Scenario, kernels: Kernels) -> Output {
    let c = s.config;
    let config = CollectionConfig { dim: c.dim, metric: c.metric };
    let mut col = if c.payloads && c.nested {
        let paths: Value = serde_json::from_str(NESTED_FIELDS).expect("valid paths JSON");
        Collection::with_schema(config, Collection::parse_nested_schema(&paths).expect("valid paths"))
    } else if c.payloads {
        let fields: Value = serde_json::from_str(FIELDS).expect("valid fields JSON");
        Collection::with_schema(config, Collection::parse_schema(&fields).expect("valid fields"))
    } else {
        Collection::new(config)
    }
    .expect("valid config");
    if c.named {
        col.set_dense_vectors(dense_specs(&c)).expect("an empty collection");
    }
    if c.sparse {
        let specs = serde_json::from_str(SPARSE).expect("valid sparse JSON");
        col.set_sparse_vectors(SparseSpec::list_from_value(&specs, true).expect("valid sparse vectors"))
            .expect("an empty collection");
    }
    col.set_kernels(kernels);
    let mut out = Output {
        ids: Vec::new(),
        score_bits: Vec::new(),
        counts: Vec::new(),
        segment: Vec::new(),
        manifests: Vec::new(),
    };
    for op in &s.ops {
        match op {
            Op::Insert { ids, vectors, payloads, sparse } => {
                let specs = dense_specs(&c);
                let dense: Vec<Vec<f32>> = (0..specs.len())
                    .map(|d| vectors.chunks_exact(c.dim).flat_map(|v| named_vector(v, d)).collect())
                    .collect();
                let dense: Vec<&[f32]> = dense.iter().map(Vec::as_slice).collect();
                col.upsert_vectors(ids, &dense, payloads, sparse).expect("valid insert")
            }
            Op::Delete { ids } => {
                col.delete(ids).expect("a writable collection");
            }
            Op::Seal(None) => col.seal(),
            Op::Seal(Some(json)) => {
                col.seal_with(IndexKind::from_json(json).expect("valid seal options")).expect("a writable collection")
            }
            Op::RoundTrip => {
                let bytes = col.to_bytes().expect("the scenario's segments verify").to_vec();
                col = Collection::from_bytes(&bytes).expect("round trip");
                col.set_kernels(kernels);
            }
            Op::SetRoundTrip => {
                let (manifest, files) = write_set(&mut col);
                out.manifests.push(manifest.clone());
                col = open_set(&manifest, &files);
                col.set_kernels(kernels);
            }
            Op::Search => {
                for (i, q) in s.queries.chunks_exact(c.dim).enumerate() {
                    let res = col.search(&request_of(&c, i, q)).expect("valid search");
                    out.counts.push(res.points.len() as u32);
                    for p in res.points {
                        out.ids.push(p.id);
                        out.score_bits.push(p.score.to_bits());
                    }
                }
            }
        }
    }
    out.segment = col.to_bytes().expect("the scenario's segments verify").to_vec();
    out
}

/// Seals `col` and writes its segment set: the manifest JSON and every file it names.
pub fn write_set(col: &mut Collection) -> (String, Vec<(String, Vec<u8>)>) {
    col.seal();
    let cp = col.checkpoint(None);
    let mut files: Vec<(String, Vec<u8>)> = col
        .segments()
        .into_iter()
        .enumerate()
        .map(|(i, info)| (info.name, col.segment(i).expect("listed").bytes().to_vec()))
        .collect();
    files.extend(cp.live_files.iter().cloned());
    col.checkpoint_written(&cp);
    (String::from_utf8(cp.manifest.to_json()).expect("JSON is UTF-8"), files)
}

/// Opens a segment set written by [`write_set`].
pub fn open_set(manifest: &str, files: &[(String, Vec<u8>)]) -> Collection {
    let manifest = shoal_core::set::Manifest::from_json(manifest.as_bytes()).expect("a valid manifest");
    let find = |name: &str| files.iter().find(|f| f.0 == name).map(|f| f.1.clone());
    let missing = |name: &str| shoal_core::Error::BadSet(format!("{name}: missing"));
    Collection::open_set(
        &manifest,
        &mut |e| {
            let bytes = find(&e.file).ok_or_else(|| missing(&e.file))?;
            Ok(Box::new(shoal_core::AlignedBytes::from_slice(&bytes)))
        },
        &mut |l| find(&l.file).ok_or_else(|| missing(&l.file)),
    )
    .expect("the set opens")
}

/// The live points of a scenario at one search step, in internal-id order.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// `(id, stored vector)` of each live point.
    pub points: Points,
    /// Each point's payload (`null` for none), aligned with `points`.
    pub payloads: Vec<Value>,
}

/// The live points at each search step of a scenario, mirroring the collection's model, for
/// checking results against the oracle; each with whether that search is exact (`false` when it
/// runs over an approximate index).
pub fn live_points_at_searches(s: &Scenario) -> Vec<(Snapshot, bool)> {
    let c = s.config;
    let prep = |v: &[f32]| {
        if c.metric == Metric::Cosine { crate::oracle::normalized(v) } else { v.to_vec() }
    };
    // (id, vector, payload, live) of the sealed rows, then of the mutable rows.
    type Row = (PointId, Vec<f32>, Value, bool);
    let mut sealed: Vec<Row> = Vec::new();
    let mut mutable: Vec<Row> = Vec::new();
    let mut snapshots = Vec::new();
    let mut approximate = false;
    let kill = |rows: &mut Vec<Row>, id: PointId| rows.iter_mut().filter(|r| r.0 == id).for_each(|r| r.3 = false);
    for op in &s.ops {
        match op {
            Op::Insert { ids, vectors, payloads, .. } => {
                for (i, (id, v)) in ids.iter().zip(vectors.chunks_exact(c.dim)).enumerate() {
                    kill(&mut mutable, *id);
                    kill(&mut sealed, *id);
                    mutable.push((*id, prep(v), payloads.get(i).cloned().unwrap_or(Value::Null), true));
                }
            }
            Op::Delete { ids } => {
                for id in ids {
                    kill(&mut mutable, *id);
                    kill(&mut sealed, *id);
                }
            }
            Op::Seal(_) | Op::RoundTrip | Op::SetRoundTrip => {
                approximate |= c.ivf_partitions.is_some();
                sealed.retain(|r| r.3);
                sealed.extend(mutable.drain(..).filter(|r| r.3));
            }
            Op::Search => {
                let live = sealed.iter().chain(&mutable).filter(|r| r.3);
                let snap = Snapshot {
                    points: live.clone().map(|r| (r.0, r.1.clone())).collect(),
                    payloads: live.map(|r| r.2.clone()).collect(),
                };
                snapshots.push((snap, !approximate));
            }
        }
    }
    snapshots
}
