//! Golden segment files: every released format version stays readable with the same results.
//!
//! `SHOAL_WRITE_GOLDEN=1 cargo test -p shoal-tests --test golden` (re)writes the files of the
//! *current* version only; files of older versions are frozen.
//!
//! The same tests run natively (x86_64, and aarch64 under QEMU) and as a wasm-bindgen-test
//! suite in Node and headless Chromium: there the files are compiled in ([`GOLDEN_FILES`]).

use std::path::PathBuf;

use shoal_core::{
    Collection, CollectionConfig, DenseSpec, IndexKind, IvfParams, Metric, PointId, SearchRequest, SparseSpec,
    SparseVector,
};
use shoal_testkit::{golden_v1_input, uniform_vectors};
#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// Every golden file name (without `.shoal` / `.expected.json`) with both files' bytes as
/// compiled in: what the wasm builds read (they have no file system). Natively the files are
/// read from `tests/golden/`, so that `SHOAL_WRITE_GOLDEN=1` reads back what it wrote;
/// `the_compiled_in_list_names_every_golden_file` keeps this list complete.
macro_rules! golden_files {
    ($($name:literal),* $(,)?) => {
        const GOLDEN_FILES: &[(&str, &[u8], &[u8])] = &[$(
            ($name, include_bytes!(concat!("../golden/", $name, ".shoal")),
             include_bytes!(concat!("../golden/", $name, ".expected.json"))),
        )*];
    };
}
golden_files![
    "v1-flat",
    "v1-ivf",
    "v1-ivf-calibrated",
    "v1-ivf-codes-only",
    "v1-payload-ppst1",
    "v1-payload",
    "v1-payload-direct",
    "v1-payload-counted",
    "v1-uuid",
    "v1-sparse",
    "v1-named",
    "v1-nested",
    "v2-ivf",
    "v2-coded",
    "v2-payload",
    "v2-payload-vcrc",
];

/// The bytes of golden file `file` (`NAME.shoal` or `NAME.expected.json`).
fn read_golden(file: &str) -> Vec<u8> {
    if cfg!(target_family = "wasm") {
        let (name, shoal) = match file.strip_suffix(".shoal") {
            Some(name) => (name, true),
            None => (file.strip_suffix(".expected.json").expect("a golden file name"), false),
        };
        let (_, bytes, expected) =
            GOLDEN_FILES.iter().find(|f| f.0 == name).unwrap_or_else(|| panic!("{name} is not in GOLDEN_FILES"));
        if shoal { bytes.to_vec() } else { expected.to_vec() }
    } else {
        std::fs::read(golden(file)).expect("golden files are committed")
    }
}

/// The golden files of format v1, the index each was sealed with, and whether the current
/// writer still produces it. `v1-ivf` is frozen: written before the default query settings were
/// calibrated at build time (its fixed `default_nprobe` must keep working); `v1-ivf-calibrated`
/// is what the writer produces now; `v1-ivf-codes-only` has no vectors (`vector_type` 1).
fn v1_files() -> [(&'static str, IndexKind, bool); 4] {
    let ivf = golden_ivf(1);
    let codes = IndexKind::IvfRabitq(IvfParams { partitions: Some(4), seed: 7, bits: Some(4), codes_only: true });
    [
        ("v1-flat", IndexKind::Flat, true),
        ("v1-ivf", ivf, false),
        ("v1-ivf-calibrated", ivf, true),
        ("v1-ivf-codes-only", codes, true),
    ]
}

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name)
}

/// Queries and their results (default settings, and exact unless codes-only), as stored next to
/// the golden file.
fn results(col: &Collection, dim: usize) -> serde_json::Value {
    let queries = uniform_vectors(0xfeed, 5, dim);
    let mut out = Vec::new();
    for exact in [false, true].into_iter().filter(|&e| !(e && col.codes_only())) {
        for q in queries.chunks_exact(dim) {
            let mut req = SearchRequest::nearest(q.to_vec(), 5);
            req.params.exact = exact;
            let res = col.search(&req).unwrap();
            out.push(serde_json::json!(res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()));
        }
    }
    serde_json::Value::from(out)
}

fn build(index: IndexKind) -> Collection {
    let (dim, metric, ids, vectors) = golden_v1_input();
    let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
    col.insert(&ids, &vectors).unwrap();
    col.seal_with(index).unwrap();
    col
}

/// The IVF index the golden segments carry: 4 partitions, seed 7, `bits` per coordinate.
fn golden_ivf(bits: u32) -> IndexKind {
    IndexKind::IvfRabitq(IvfParams { partitions: Some(4), seed: 7, bits: Some(bits), codes_only: false })
}

#[test]
fn v1_golden_files_read_verify_and_search_the_same() {
    let (dim, metric, ids, _) = golden_v1_input();
    for (name, index, current) in v1_files() {
        if current && std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
            let mut col = build(index);
            std::fs::write(golden(&format!("{name}.shoal")), col.to_bytes().unwrap()).unwrap();
            let expected = serde_json::to_vec_pretty(&results(&col, dim)).unwrap();
            std::fs::write(golden(&format!("{name}.expected.json")), expected).unwrap();
        }
        let bytes = read_golden(&format!("{name}.shoal"));
        let col = Collection::from_bytes(&bytes).unwrap();
        col.verify().unwrap();
        assert_eq!((col.len(), col.dim(), col.metric()), (ids.len(), dim, metric), "{name}");
        assert_eq!(col.segment(0).unwrap().index_kind(), index, "{name}");
        assert!(ids.iter().all(|&id| col.contains(PointId::Num(id))), "{name}");
        let expected: serde_json::Value =
            serde_json::from_slice(&read_golden(&format!("{name}.expected.json"))).unwrap();
        assert_eq!(results(&col, dim), expected, "{name}: results changed");
        assert_eq!(bytes[8], 1, "{name} must stay a version-1 file");
    }
}

#[test]
fn the_current_writer_reproduces_the_v1_golden_bytes() {
    // True while the writer writes v1; when v2 arrives this test moves to the v2 golden files.
    for (name, index, _) in v1_files().into_iter().filter(|f| f.2) {
        let bytes = read_golden(&format!("{name}.shoal"));
        assert!(
            build(index).to_bytes().unwrap() == &bytes[..],
            "{name}: the writer no longer reproduces the golden bytes"
        );
    }
}

/// The payloads of the golden payload files: a keyword (some multi-valued), an integer, a
/// float, a bool and a text field, some points without a payload.
fn golden_payloads(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| {
            if i % 13 == 0 {
                return serde_json::Value::Null;
            }
            let tag = ["red", "green", "blue", "teal"][i % 4];
            let tags = if i % 5 == 0 { serde_json::json!([tag, "sale"]) } else { serde_json::json!(tag) };
            let title = ["blue whale", "salt reef", "storm wave"][i % 3];
            serde_json::json!({"tag": tags, "n": (i * 7) % 40, "price": i as f64 / 8.0, "ok": i % 3 == 0, "title": title})
        })
        .collect()
}

const GOLDEN_FIELDS: &str = r#"{"tag": "keyword", "n": "integer", "price": "float", "ok": "bool", "title": "text"}"#;

/// What answers a golden file's requests: a collection, or a segment read by ranges.
trait Searcher {
    fn search(&self, req: &SearchRequest) -> Result<shoal_core::SearchResponse, shoal_core::Error>;
}

impl Searcher for Collection {
    fn search(&self, req: &SearchRequest) -> Result<shoal_core::SearchResponse, shoal_core::Error> {
        Collection::search(self, req)
    }
}

/// A format-2 segment read by ranges from its bytes (every range served from them).
struct ByRanges<'b> {
    bytes: &'b [u8],
    seg: shoal_core::remote::RemoteSegment,
    cache: std::cell::RefCell<shoal_core::remote::RangeCache>,
}

impl<'b> ByRanges<'b> {
    fn open(bytes: &'b [u8]) -> ByRanges<'b> {
        use shoal_core::remote::{RangeCache, RemoteSegment};
        let mut cache = RangeCache::new(u64::MAX);
        let seg = shoal_testkit::read_by_ranges(bytes, &mut cache, RemoteSegment::open);
        ByRanges { bytes, seg, cache: std::cell::RefCell::new(cache) }
    }
}

impl Searcher for ByRanges<'_> {
    fn search(&self, req: &SearchRequest) -> Result<shoal_core::SearchResponse, shoal_core::Error> {
        let mut cache = self.cache.borrow_mut();
        Ok(shoal_testkit::read_by_ranges(self.bytes, &mut cache, |c| self.seg.search(req, c)))
    }
}

/// Top 5 of every query with every filter: ids, score bits and payloads.
fn filtered_results(
    col: &dyn Searcher,
    queries: &[f32],
    dim: usize,
    filters: &[&str],
    exact: bool,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for q in queries.chunks_exact(dim) {
        for f in filters {
            let mut req = SearchRequest::nearest(q.to_vec(), 5);
            req.filter = Some(serde_json::from_str(f).unwrap());
            req.with_payload = true;
            req.params.exact = exact;
            let res = col.search(&req).unwrap();
            out.push(serde_json::json!(
                res.points.iter().map(|p| (p.id, p.score.to_bits(), p.payload.clone())).collect::<Vec<_>>()
            ));
        }
    }
    out
}

/// Filtered and text searches over a payload golden file, with their payloads.
fn payload_results(col: &Collection, dim: usize) -> serde_json::Value {
    payload_results_of(col, dim)
}

/// [`payload_results`] from any searcher.
fn payload_results_of(col: &dyn Searcher, dim: usize) -> serde_json::Value {
    let queries = uniform_vectors(0xbeef, 3, dim);
    let filters = [
        r#"{"must": [{"key": "tag", "match": {"value": "sale"}}]}"#,
        r#"{"must": [{"key": "tag", "match": {"any": ["red", "teal"]}}], "must_not": [{"key": "n", "range": {"gte": 20}}]}"#,
        r#"{"should": [{"key": "ok", "match": {"value": true}}, {"key": "price", "range": {"lt": 2.0}}]}"#,
        r#"{"must": [{"is_empty": {"key": "tag"}}]}"#,
    ];
    let mut out = filtered_results(col, &queries, dim, &filters, false);
    let text = SearchRequest::from_json(r#"{"text": "blue whale", "limit": 5}"#).unwrap();
    out.push(serde_json::json!(
        col.search(&text).unwrap().points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()
    ));
    serde_json::Value::from(out)
}

/// Checks a pair of payload golden files — `frozen` (written by an earlier writer) and
/// `current` (what the writer makes now) — built from the v1 input with `fields` and
/// `payloads`: each reads, verifies and gives the stored `results`; the current one is
/// reproduced byte for byte; `SHOAL_WRITE_GOLDEN=1` writes the current one (and a missing
/// frozen one). Returns each file's bytes and results.
fn check_payload_goldens(
    [frozen, current]: [&str; 2],
    fields: &str,
    payloads: fn(usize) -> Vec<serde_json::Value>,
    results: fn(&Collection, usize) -> serde_json::Value,
) -> Vec<(Vec<u8>, serde_json::Value)> {
    let (dim, metric, ids, vectors) = golden_v1_input();
    let build = || {
        let schema = shoal_core::Schema::from_json(fields).unwrap();
        let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema).unwrap();
        col.insert_with_payloads(&ids, &vectors, &payloads(ids.len())).unwrap();
        col.seal();
        col
    };
    let mut out = Vec::new();
    for (name, is_current) in [(frozen, false), (current, true)] {
        let path = golden(&format!("{name}.shoal"));
        if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() && (is_current || !path.exists()) {
            let mut col = build();
            std::fs::write(&path, col.to_bytes().unwrap()).unwrap();
            let expected = serde_json::to_vec_pretty(&results(&col, dim)).unwrap();
            std::fs::write(golden(&format!("{name}.expected.json")), expected).unwrap();
        }
        let bytes = read_golden(&format!("{name}.shoal"));
        let col = Collection::from_bytes(&bytes).unwrap();
        col.verify().unwrap();
        assert_eq!(col.len(), ids.len(), "{name}");
        let expected: serde_json::Value =
            serde_json::from_slice(&read_golden(&format!("{name}.expected.json"))).unwrap();
        let got = results(&col, dim);
        assert_eq!(got, expected, "{name}: results changed");
        if is_current {
            assert!(
                build().to_bytes().unwrap() == &bytes[..],
                "{name}: the writer no longer reproduces the golden bytes"
            );
        }
        out.push((bytes, got));
    }
    out
}

/// `v1-payload-ppst1` (frozen): payload sections with the raw row lists of `PAYLOAD_POSTINGS`
/// table version 1, written before the lists were block-coded; `v1-payload`: what the writer
/// makes now.
#[test]
fn v1_payload_golden_files_read_verify_and_filter_the_same() {
    check_payload_goldens(["v1-payload-ppst1", "v1-payload"], GOLDEN_FIELDS, golden_payloads, payload_results);
}

/// Multi-valued integer tags over a dictionary of hundreds of values: a direct column (every
/// third point has several tags, up to 20 — past the 15 a counted slot counts).
fn multi_tag_payloads(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| {
            let count = if i % 3 == 0 { 2 + i % 19 } else { i % 3 - 1 };
            let tags: Vec<usize> = (0..count).map(|j| (i * 37 + j * 101) % 997).collect();
            serde_json::json!({"tags": tags})
        })
        .collect()
}

/// Filtered searches over a multi-tag golden file, with their payloads.
fn multi_tag_results(col: &Collection, dim: usize) -> serde_json::Value {
    let queries = uniform_vectors(0xcafe, 3, dim);
    let filters = [
        r#"{"must": [{"key": "tags", "match": {"any": [5, 101, 202, 303, 404]}}]}"#,
        r#"{"must": [{"key": "tags", "range": {"gte": 100, "lt": 300}}]}"#,
        r#"{"must_not": [{"key": "tags", "range": {"lt": 500}}]}"#,
        r#"{"must": [{"key": "tags", "match": {"except": [0, 37, 74]}}]}"#,
        r#"{"must": [{"is_empty": {"key": "tags"}}]}"#,
    ];
    serde_json::Value::from(filtered_results(col, &queries, dim, &filters, true))
}

/// The `mode` of every `ColumnMeta` record (docs/format.md) in a file of `rows` points: the
/// 8-aligned 64-byte records holding `rows`, a valid width and 28 zero bytes at the end.
fn column_modes(bytes: &[u8], rows: u32) -> Vec<u32> {
    let u32_at = |c: &[u8], i: usize| u32::from_le_bytes(c[4 * i..4 * i + 4].try_into().unwrap());
    (0..bytes.len().saturating_sub(63))
        .step_by(8)
        .map(|at| &bytes[at..at + 64])
        .filter(|c| {
            u32_at(c, 0) == rows && [2, 4, 8, 16, 32].contains(&u32_at(c, 1)) && (9..16).all(|i| u32_at(c, i) == 0)
        })
        .map(|c| u32_at(c, 8))
        .collect()
}

/// `v1-payload-direct` (frozen): a multi-valued field in the uncounted direct column mode (2),
/// as the writer stored it before the counted mode; `v1-payload-counted`: what the writer makes
/// now (mode 3). Both answer the same filters with the same points.
#[test]
fn v1_direct_payload_golden_files_read_verify_and_filter_the_same() {
    let files = check_payload_goldens(
        ["v1-payload-direct", "v1-payload-counted"],
        r#"{"tags": "integer"}"#,
        multi_tag_payloads,
        multi_tag_results,
    );
    let rows = golden_v1_input().2.len() as u32;
    assert_eq!(column_modes(&files[0].0, rows), [2], "v1-payload-direct");
    assert_eq!(column_modes(&files[1].0, rows), [3], "v1-payload-counted");
    assert_eq!(files[0].1, files[1].1, "the two column modes answer differently");
}

/// [`GOLDEN_FILES`] lists every golden segment file of `tests/golden/` (so the wasm builds
/// check them all) and only those, and its compiled-in bytes are the files' bytes.
#[cfg(not(target_family = "wasm"))]
#[test]
fn the_compiled_in_list_names_every_golden_file() {
    let mut on_disk: Vec<String> = std::fs::read_dir(golden(""))
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().unwrap().strip_suffix(".shoal").map(String::from))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = GOLDEN_FILES.iter().map(|f| f.0.to_string()).collect();
    listed.sort();
    assert_eq!(listed, on_disk);
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_none() {
        for (name, bytes, expected) in GOLDEN_FILES {
            assert!(read_golden(&format!("{name}.shoal")) == *bytes, "{name}.shoal");
            assert!(read_golden(&format!("{name}.expected.json")) == *expected, "{name}.expected.json");
        }
    }
}

/// The ids of `v1-uuid`: row `i` of the v1 input has an integer id when `i % 3 == 0` (`0`
/// among them), a UUID otherwise (the nil UUID and the largest among them), and row 4 the
/// largest integer.
fn uuid_golden_ids(n: usize) -> Vec<PointId> {
    (0..n as u64)
        .map(|i| match i {
            1 => PointId::Uuid([0; 16]),
            2 => PointId::Uuid([0xff; 16]),
            4 => PointId::Num(u64::MAX),
            _ if i % 3 == 0 => PointId::Num(i),
            _ => {
                let mut u = [0u8; 16];
                u[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
                u[8..].copy_from_slice(&(!i).to_be_bytes());
                PointId::Uuid(u)
            }
        })
        .collect()
}

/// Searches (default settings and exact), a `has_id` filter naming ids of both kinds, and
/// every id in `PointId` order.
fn uuid_results(col: &Collection, dim: usize) -> serde_json::Value {
    let mut out = vec![results(col, dim)];
    let ids = uuid_golden_ids(col.len());
    let filter = serde_json::json!({"should": [{"has_id": [ids[0], ids[1], ids[2], ids[4], ids[7], 999]}]});
    let q = uniform_vectors(0xd1ce, 1, dim);
    let mut req = SearchRequest::nearest(q, 10);
    req.filter = Some(filter);
    out.push(serde_json::json!(
        col.search(&req).unwrap().points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()
    ));
    out.push(serde_json::json!(col.matching_ids(None).unwrap()));
    serde_json::Value::from(out)
}

/// `v1-uuid`: a segment of mixed ids (header flag bit 0, sections `UUIDS`, `ID_KINDS`,
/// `UUID_INDEX`) with an IVF index; the current writer reproduces it.
#[test]
fn v1_uuid_golden_file_reads_verifies_and_searches_the_same() {
    let (dim, metric, _, vectors) = golden_v1_input();
    let ids = uuid_golden_ids(vectors.len() / dim);
    let build = || {
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        col.upsert(&ids, &vectors, &[]).unwrap();
        col.seal_with(golden_ivf(1)).unwrap();
        col
    };
    let (_, col) = check_feature_golden("v1-uuid", shoal_format::FLAG_UUID_IDS, &build, &|c| uuid_results(c, dim));
    assert!(ids.iter().all(|&id| col.contains(id)));
}

/// The checks every golden file of a feature makes: `NAME.shoal` (rewritten from `build` with
/// `SHOAL_WRITE_GOLDEN`, with `results` as `NAME.expected.json`) has header flags `flags`,
/// opens, verifies, answers `results` as recorded, and the current writer reproduces it.
/// Returns its bytes and the collection opened from them.
fn check_feature_golden(
    name: &str,
    flags: u32,
    build: &dyn Fn() -> Collection,
    results: &dyn Fn(&Collection) -> serde_json::Value,
) -> (Vec<u8>, Collection) {
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        let mut col = build();
        std::fs::write(golden(&format!("{name}.shoal")), col.to_bytes().unwrap()).unwrap();
        let expected = serde_json::to_vec_pretty(&results(&col)).unwrap();
        std::fs::write(golden(&format!("{name}.expected.json")), expected).unwrap();
    }
    let (bytes, col) = read_feature_golden(name, flags, results);
    assert!(build().to_bytes().unwrap() == &bytes[..], "{name}: the writer no longer reproduces the golden bytes");
    (bytes, col)
}

/// Reads golden file `name`: its header flags, `verify`, and the searches `results` runs
/// against its expected file.
fn read_feature_golden(
    name: &str,
    flags: u32,
    results: &dyn Fn(&Collection) -> serde_json::Value,
) -> (Vec<u8>, Collection) {
    let bytes = read_golden(&format!("{name}.shoal"));
    assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), flags);
    let col = Collection::from_bytes(&bytes).unwrap();
    col.verify().unwrap();
    let expected: serde_json::Value = serde_json::from_slice(&read_golden(&format!("{name}.expected.json"))).unwrap();
    assert_eq!(results(&col), expected, "{name}: results changed");
    (bytes, col)
}

/// The sparse vectors of `v1-sparse` ("plain" and "weighted", the latter with the idf
/// modifier): row `i` holds a vector of `i % 5` pairs (none when `i % 7 == 3`; empty when
/// `i % 5 == 0`), indices from a fixed permutation of 0..40 and the largest index once.
fn sparse_golden_columns(n: usize) -> Vec<Vec<Option<SparseVector>>> {
    (0..2u32)
        .map(|t| {
            (0..n as u32)
                .map(|i| {
                    if (i + t) % 7 == 3 {
                        return None;
                    }
                    let indices: Vec<u32> = (0..(i + t) % 5)
                        .map(|j| if i == 11 && j == 0 { u32::MAX } else { (i * 7 + j * 13 + t) % 40 })
                        .collect();
                    let values: Vec<f32> = indices.iter().map(|&x| (x % 9) as f32 * 0.25 - 0.5).collect();
                    Some(SparseVector::new(&indices, &values).expect("distinct indices"))
                })
                .collect()
        })
        .collect()
}

/// Sparse searches in both vectors (alone and fused with the dense vector), a dense search,
/// and row 11's stored sparse vectors.
fn sparse_results(col: &Collection, dim: usize) -> serde_json::Value {
    let row11 = PointId::Num(golden_v1_input().2[11]);
    let mut out = vec![results(col, dim)];
    let q = uniform_vectors(0x5a5e, 1, dim);
    for using in ["plain", "weighted"] {
        let sparse = serde_json::json!({"indices": [3, 17, 29, 4294967295u32], "values": [1.0, -0.5, 2.0, 0.75]});
        for req in [
            serde_json::json!({"sparse": sparse, "using": using, "limit": 10}),
            serde_json::json!({"prefetch": [{"sparse": sparse, "using": using, "limit": 20}, {"vector": q, "limit": 20}], "fusion": "dbsf", "limit": 10}),
        ] {
            let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
            out.push(serde_json::json!(res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()));
        }
        out.push(col.sparse_vector(row11, using).unwrap().map_or(serde_json::Value::Null, |v| v.to_value()));
    }
    serde_json::Value::from(out)
}

/// `v1-sparse`: a segment with two sparse vectors (header flag bit 2, kinds 768 + 16 t + r)
/// beside an IVF index, rows sorted by partition; the current writer reproduces it.
#[test]
fn v1_sparse_golden_file_reads_verifies_and_searches_the_same() {
    let (dim, metric, ids, vectors) = golden_v1_input();
    let ids: Vec<PointId> = ids.iter().map(|&i| PointId::Num(i)).collect();
    let columns = sparse_golden_columns(ids.len());
    let build = || {
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        col.set_sparse_vectors(vec![
            SparseSpec { name: "weighted".into(), idf: true },
            SparseSpec { name: "plain".into(), idf: false },
        ])
        .unwrap();
        col.upsert_sparse(&ids, &vectors, &[], &columns).unwrap();
        col.seal_with(golden_ivf(1)).unwrap();
        col
    };
    let (bytes, col) =
        check_feature_golden("v1-sparse", shoal_format::FLAG_SPARSE, &build, &|c| sparse_results(c, dim));
    assert_eq!(col.sparse_vectors().len(), 2);
    // Row 11's vectors as they were given (the largest index among them).
    for (t, name) in ["plain", "weighted"].into_iter().enumerate() {
        assert_eq!(col.sparse_vector(ids[11], name).unwrap(), columns[t][11], "{name}");
    }
    // A damaged sparse section is a typed error: its checksum on verify.
    let mut damaged = bytes.clone();
    let aligned = shoal_core::AlignedBytes::from_slice(&bytes);
    let reader = shoal_format::SegmentReader::open(aligned.as_slice()).unwrap();
    let entries = reader
        .sections()
        .iter()
        .find(|e| e.kind == shoal_format::sparse_kind(1, shoal_format::SPARSE_ROW_ENTRIES))
        .unwrap();
    damaged[entries.offset as usize] ^= 1;
    let damaged = Collection::from_bytes(&damaged).unwrap();
    assert!(damaged.verify().is_err());
}

/// `v1-named`: a segment with three dense vectors (header flag bit 1): vector 0 (`""`, the
/// golden input, cosine) with the v1 sections and rows sorted by its partitions, "image" (dot,
/// 6-d) and "text" (l2, 9-d) each with its own IVF index, stored by its own partitions with
/// the position maps; the current writer reproduces it.
#[test]
fn v1_named_golden_file_reads_verifies_and_searches_the_same() {
    let (dim, metric, ids, vectors) = golden_v1_input();
    let ids: Vec<PointId> = ids.iter().map(|&i| PointId::Num(i)).collect();
    let image = uniform_vectors(0x1a6e, ids.len(), 6);
    let text = uniform_vectors(0x7e87, ids.len(), 9);
    let build = || {
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        col.set_dense_vectors(vec![
            DenseSpec { name: "text".into(), dim: 9, metric: Metric::L2 },
            DenseSpec { name: "image".into(), dim: 6, metric: Metric::Dot },
            DenseSpec { name: "".into(), dim, metric },
        ])
        .unwrap();
        col.upsert_vectors(&ids, &[&vectors, &image, &text], &[], &[]).unwrap();
        col.seal_with(golden_ivf(2)).unwrap();
        col
    };
    let named_results = |col: &Collection| {
        let mut out = vec![results(col, dim)];
        for (using, d) in [("image", 6), ("text", 9)] {
            for q in uniform_vectors(0x9a3e, 3, d).chunks_exact(d) {
                for params in [serde_json::json!({}), serde_json::json!({"exact": true})] {
                    let req = serde_json::json!({"vector": q, "using": using, "limit": 5, "params": params});
                    let res = col.search(&SearchRequest::from_json(&req.to_string()).unwrap()).unwrap();
                    out.push(serde_json::json!(
                        res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>()
                    ));
                }
            }
        }
        serde_json::Value::from(out)
    };
    let (bytes, col) = check_feature_golden("v1-named", shoal_format::FLAG_DENSE_VECTORS, &build, &named_results);
    let names: Vec<&str> = col.dense_vectors().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["", "image", "text"]);
    // Row 5's vectors as they were given (the dot and l2 ones are stored unchanged).
    assert_eq!(col.dense_vector(ids[5], 1).unwrap(), &image[30..36]);
    assert_eq!(col.dense_vector(ids[5], 2).unwrap(), &text[45..54]);
    // A damaged vector section of "text" is a typed error: its checksum on verify.
    let aligned = shoal_core::AlignedBytes::from_slice(&bytes);
    let reader = shoal_format::SegmentReader::open(aligned.as_slice()).unwrap();
    let section =
        reader.sections().iter().find(|e| e.kind == shoal_format::dense_kind(2, shoal_format::KIND_VECTORS)).unwrap();
    let mut damaged = bytes.clone();
    damaged[section.offset as usize] ^= 1;
    assert!(Collection::from_bytes(&damaged).unwrap().verify().is_err());
}

/// `v1-nested`: a segment with nested payloads (header flag bit 3) and declared paths built as
/// columns with stray rows (a nine-array `PAYLOAD_COLUMNS`): filters answered by the columns,
/// by the documents (an undeclared path, `nested`) and by both (strays); the current writer
/// reproduces it.
#[test]
fn v1_nested_golden_file_reads_verifies_and_filters_the_same() {
    let (dim, metric, ids, vectors) = golden_v1_input();
    const NAMES: [&str; 3] = ["a", "b", "c"];
    let docs: Vec<serde_json::Value> = (0..ids.len())
        .map(|i| {
            if i % 11 == 0 {
                return serde_json::Value::Null;
            }
            let topic = ["sea", "sky", "land"][i % 3];
            // A number now and then where the keyword path expects strings: a stray.
            let topic = if i % 7 == 0 { serde_json::json!(i) } else { serde_json::json!(topic) };
            let tags: Vec<serde_json::Value> =
                (0..i % 3).map(|j| serde_json::json!({"name": NAMES[(i + j) % 3], "score": (i * j) % 5})).collect();
            serde_json::json!({"page_content": format!("text {i}"), "metadata": {"topic": topic, "year": 1990 + i % 30, "tags": tags}})
        })
        .collect();
    let build = || {
        let paths = serde_json::json!({"metadata.topic": "keyword", "metadata.year": "integer", "metadata.tags[].name": "keyword"});
        let schema = Collection::parse_nested_schema(&paths).unwrap();
        let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema).unwrap();
        col.insert_with_payloads(&ids, &vectors, &docs).unwrap();
        col.seal_with(golden_ivf(2)).unwrap();
        col
    };
    let nested_results = |col: &Collection| {
        let queries = uniform_vectors(0xbeef, 3, dim);
        let filters = [
            r#"{"must": [{"key": "metadata.topic", "match": {"value": "sea"}}]}"#,
            r#"{"must": [{"key": "metadata.year", "range": {"gte": 2000}}], "must_not": [{"key": "metadata.tags[].name", "match": {"value": "a"}}]}"#,
            r#"{"must": [{"key": "metadata.tags[].score", "range": {"gte": 3}}]}"#,
            r#"{"must": [{"nested": {"key": "metadata.tags", "filter": {"must": [{"key": "name", "match": {"value": "a"}}, {"key": "score", "range": {"gte": 3}}]}}}]}"#,
            r#"{"should": [{"is_empty": {"key": "metadata.tags"}}, {"key": "metadata.topic", "match": {"any": [14, 28, "land"]}}]}"#,
        ];
        let mut out = filtered_results(col, &queries, dim, &filters, false);
        out.extend(filtered_results(col, &queries, dim, &filters, true));
        serde_json::Value::from(out)
    };
    let (_, col) = check_feature_golden("v1-nested", shoal_format::FLAG_NESTED_PAYLOAD, &build, &nested_results);
    assert!(col.nested());
    let built: Vec<&str> = col.segment(0).unwrap().schema().unwrap().fields().map(|(n, _)| n).collect();
    assert_eq!(built, ["metadata.tags[].name", "metadata.topic", "metadata.year"]);
}

/// Searches a segment read by ranges from `bytes` (every range served from them, as a server
/// would), as `results` searches a collection (no exact searches: not read by ranges).
fn ranges_results(bytes: &[u8], dim: usize) -> serde_json::Value {
    ranges_results_from(bytes, dim, false)
}

/// [`ranges_results`]; with `narrow`, each search from the bytes its open read alone, its
/// ranges fetched as asked (not merged), and the open reading its first 64 bytes first (not
/// the whole of a small file).
fn ranges_results_from(bytes: &[u8], dim: usize, narrow: bool) -> serde_json::Value {
    use shoal_core::remote::{RangeCache, RemoteSegment};
    use shoal_testkit::read_by_ranges as drive;
    let mut opened = RangeCache::new(u64::MAX);
    let mut seg = drive(bytes, &mut opened, |c| RemoteSegment::open_with(c, if narrow { 64 } else { 256 << 10 }));
    if narrow {
        seg.set_merge_gap(0);
    }
    let mut cache = opened.clone();
    let out: Vec<serde_json::Value> = uniform_vectors(0xfeed, 5, dim)
        .chunks_exact(dim)
        .map(|q| {
            let req = SearchRequest::nearest(q.to_vec(), 5);
            if narrow {
                cache = opened.clone();
            }
            let res = drive(bytes, &mut cache, |c| seg.search(&req, c));
            serde_json::json!(res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>())
        })
        .collect();
    serde_json::Value::from(out)
}

/// [`ranges_results`]' searches of `seg`'s format-1 twin (`write_reordered_v1`), read whole.
fn twin_results(seg: &shoal_core::SealedSegment, dim: usize) -> serde_json::Value {
    let twin = Collection::from_bytes(shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    let out: Vec<serde_json::Value> = uniform_vectors(0xfeed, 5, dim)
        .chunks_exact(dim)
        .map(|q| {
            let res = twin.search(&SearchRequest::nearest(q.to_vec(), 5)).unwrap();
            serde_json::json!(res.points.iter().map(|p| (p.id, p.score.to_bits())).collect::<Vec<_>>())
        })
        .collect();
    serde_json::Value::from(out)
}

#[test]
fn v2_golden_file_reads_by_ranges_and_searches_as_its_v1_twin() {
    // The golden input with an IVF index of 4 partitions (seed 7, 2 bits), laid out for ranges:
    // 12-d rows, so one vector block holds 85 rows (a partition's rows in one block).
    let (dim, _, _, _) = golden_v1_input();
    let index = golden_ivf(2);
    let col = build(index);
    let seg = col.segment(0).unwrap();
    let written = shoal_core::remote::write_for_ranges(seg).unwrap();
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        std::fs::write(golden("v2-ivf.shoal"), written.as_slice()).unwrap();
        let expected = serde_json::to_vec_pretty(&ranges_results(written.as_slice(), dim)).unwrap();
        std::fs::write(golden("v2-ivf.expected.json"), expected).unwrap();
    }
    let bytes = read_golden("v2-ivf.shoal");
    assert_eq!(bytes[8], 2, "v2-ivf must stay a version-2 file");
    assert!(written.as_slice() == &bytes[..], "the writer no longer reproduces v2-ivf's bytes");
    let expected: serde_json::Value = serde_json::from_slice(&read_golden("v2-ivf.expected.json")).unwrap();
    assert_eq!(ranges_results(&bytes, dim), expected, "v2-ivf: results changed");
    // The same index in format 1 answers the same, bit for bit.
    assert_eq!(twin_results(seg, dim), expected);
}

#[test]
fn v2_coded_golden_file_fetches_the_centroids_it_probes_and_searches_as_its_v1_twin() {
    // The golden input with an IVF index of 16 partitions (seed 7, 2 bits), its centroids
    // coded (IVF_CENTROID_CODES, kind 71) as a writer codes those over 8 MiB: each search
    // reads the centroids it may probe, proves it has the local search's, and answers as the
    // same index in format 1.
    let (dim, _, _, _) = golden_v1_input();
    let index = IndexKind::IvfRabitq(IvfParams { partitions: Some(16), seed: 7, bits: Some(2), codes_only: false });
    let col = build(index);
    let seg = col.segment(0).unwrap();
    let written = shoal_core::remote::write_for_ranges_with(seg, 0).unwrap();
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        std::fs::write(golden("v2-coded.shoal"), written.as_slice()).unwrap();
        let expected = serde_json::to_vec_pretty(&ranges_results_from(written.as_slice(), dim, true)).unwrap();
        std::fs::write(golden("v2-coded.expected.json"), expected).unwrap();
    }
    let bytes = read_golden("v2-coded.shoal");
    let head = shoal_format::SegmentHead::read(shoal_core::AlignedBytes::from_slice(&bytes).as_slice()).unwrap();
    assert!(head.entry(71).is_some_and(|e| e.flags & shoal_format::SECTION_HOT != 0), "coded centroids");
    assert!(written.as_slice() == &bytes[..], "the writer no longer reproduces v2-coded's bytes");
    let expected: serde_json::Value = serde_json::from_slice(&read_golden("v2-coded.expected.json")).unwrap();
    assert_eq!(ranges_results_from(&bytes, dim, true), expected, "v2-coded: results changed");
    assert_eq!(ranges_results_from(&bytes, dim, false), expected, "v2-coded: read whole");
    assert_eq!(twin_results(seg, dim), expected);
}

#[test]
fn v2_payload_golden_files_filter_by_ranges_as_their_v1_twin() {
    // The payload golden input with an IVF index (4 partitions, seed 7, 2 bits), laid out for
    // ranges: documents, text and the filter index by field (kinds 33-35, 39). `v2-payload` is
    // frozen: written before kinds 69-70 (vector CRCs outside the partitions), its exact scans
    // read partition blocks; `v2-payload-vcrc` is what the writer makes now.
    let (dim, metric, ids, vectors) = golden_v1_input();
    let schema = shoal_core::Schema::from_json(GOLDEN_FIELDS).unwrap();
    let mut col = Collection::with_schema(CollectionConfig { dim, metric }, schema).unwrap();
    col.insert_with_payloads(&ids, &vectors, &golden_payloads(ids.len())).unwrap();
    col.seal_with(golden_ivf(2)).unwrap();
    let seg = col.segment(0).unwrap();
    let written = shoal_core::remote::write_for_ranges(seg).unwrap();
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        std::fs::write(golden("v2-payload-vcrc.shoal"), written.as_slice()).unwrap();
        let expected = payload_results_of(&ByRanges::open(written.as_slice()), dim);
        std::fs::write(golden("v2-payload-vcrc.expected.json"), serde_json::to_vec_pretty(&expected).unwrap()).unwrap();
    }
    // The same rows in format 1 answer what both answer, bit for bit.
    let twin = Collection::from_bytes(shoal_core::remote::write_reordered_v1(seg).unwrap().as_slice()).unwrap();
    let local = payload_results_of(&twin, dim);
    for (name, kinds, current) in
        [("v2-payload", &[33u32, 34, 35, 37, 38, 39, 53][..], false), ("v2-payload-vcrc", &[39, 69, 70][..], true)]
    {
        let bytes = read_golden(&format!("{name}.shoal"));
        let head = shoal_format::SegmentHead::read(shoal_core::AlignedBytes::from_slice(&bytes).as_slice()).unwrap();
        assert!(kinds.iter().all(|&k| head.entry(k).is_some()), "{name}'s sections");
        assert_eq!(head.entry(69).is_some(), current, "{name}: vector CRCs");
        if current {
            assert!(written.as_slice() == &bytes[..], "the writer no longer reproduces {name}'s bytes");
        }
        let expected: serde_json::Value =
            serde_json::from_slice(&read_golden(&format!("{name}.expected.json"))).unwrap();
        assert_eq!(payload_results_of(&ByRanges::open(&bytes), dim), expected, "{name}: results changed");
        assert_eq!(local, expected, "{name}: the local answers");
    }
}
