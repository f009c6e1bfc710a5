//! `NewSegment` (rows written straight from where a host holds them) against the collection
//! path it stands in for: the same points inserted into a collection and sealed give the same
//! bytes, for every metric and index, with and without payloads and text; bad rows are the same
//! typed errors, naming the row.

use serde_json::{Value, json};
use shoal_core::{
    AlignedBytes, Collection, CollectionConfig, Error, IndexKind, IvfParams, Metric, NewSegment, PointId, Schema,
};
use shoal_testkit::clustered_vectors;

fn schema() -> Schema {
    Collection::parse_schema(&json!({"tag": "keyword", "year": "integer", "body": "text"})).unwrap()
}

fn payloads(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| match i % 4 {
            0 => Value::Null,
            // A float spelling of an integer: stored canonically either way.
            1 => json!({"tag": format!("t{}", i % 7), "year": 1990.0 + (i % 30) as f64}),
            _ => json!({"tag": format!("t{}", i % 7), "year": 1990 + i % 30, "body": format!("word{} shared text", i % 11)}),
        })
        .collect()
}

fn via_collection(
    config: CollectionConfig,
    schema: Option<&Schema>,
    index: IndexKind,
    first_id: u64,
    vectors: &[f32],
    docs: Option<&[Value]>,
) -> Vec<u8> {
    let mut col = match schema {
        Some(s) => Collection::with_schema(config, s.clone()).unwrap(),
        None => Collection::new(config).unwrap(),
    };
    let n = vectors.len() / config.dim;
    let ids: Vec<u64> = (0..n as u64).map(|r| first_id + r).collect();
    match docs {
        Some(d) => col.insert_with_payloads(&ids, vectors, d).unwrap(),
        None => col.insert(&ids, vectors).unwrap(),
    }
    col.seal_with(index).unwrap();
    col.to_bytes().unwrap().to_vec()
}

fn build(seg: &NewSegment<'_>) -> Result<AlignedBytes, Error> {
    seg.build_into(&shoal_core::Kernels::best(), |len| Ok(AlignedBytes::zeroed(len)))
}

#[test]
fn same_bytes_as_a_sealed_collection() {
    let (n, dim) = (3000, 24);
    let vectors = clustered_vectors(7, n, dim, 16);
    let docs = payloads(n);
    let schema = schema();
    let ivf = IvfParams::default();
    for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
        for index in [
            IndexKind::Flat,
            IndexKind::IvfRabitq(ivf),
            IndexKind::IvfRabitq(IvfParams { bits: Some(4), codes_only: true, ..ivf }),
        ] {
            for with_payloads in [false, true] {
                let config = CollectionConfig { dim, metric };
                let (s, d) = if with_payloads { (Some(&schema), Some(&docs[..])) } else { (None, None) };
                let seg = NewSegment { config, schema: s, index, first_id: 1000, vectors: &vectors, payloads: d };
                let got = build(&seg).unwrap();
                let want = via_collection(config, s, index, 1000, &vectors, d);
                assert!(got.as_slice() == &want[..], "{metric:?} {index:?} payloads {with_payloads}: bytes differ");
                // And it opens, with its points.
                let col = Collection::from_bytes(got.as_slice()).unwrap();
                assert_eq!(col.len(), n);
                assert!(
                    col.contains(PointId::Num(1000))
                        && col.contains(PointId::Num(1000 + n as u64 - 1))
                        && !col.contains(PointId::Num(999))
                );
            }
        }
    }
}

#[test]
fn bad_rows_are_typed_errors_naming_the_row() {
    let dim = 8;
    let config = CollectionConfig { dim, metric: Metric::L2 };
    let mut vectors = clustered_vectors(3, 50, dim, 4);
    let schema = schema();
    let docs = payloads(50);
    let seg = |v: &'static [f32]| NewSegment {
        config,
        schema: None,
        index: IndexKind::Flat,
        first_id: 0,
        vectors: v,
        payloads: None,
    };
    vectors[17 * dim + 5] = f32::NAN;
    let v: &'static [f32] = Vec::leak(vectors.clone());
    assert_eq!(build(&seg(v)).unwrap_err(), Error::NonFinite { point: 17, element: 5 });
    vectors[17 * dim + 5] = 0.5;
    let v: &'static [f32] = Vec::leak(vectors.clone());
    assert!(matches!(build(&seg(&v[..v.len() - 1])).unwrap_err(), Error::LengthMismatch { ids: 49, dim: 8, .. }));
    let ok = build(&seg(v)).unwrap();
    assert_eq!(Collection::from_bytes(ok.as_slice()).unwrap().len(), 50);

    let mut bad_docs = docs.clone();
    bad_docs[31] = json!({"year": "not a number"});
    let with = |d: &[Value]| {
        build(&NewSegment { schema: Some(&schema), payloads: Some(d), ..seg(v) }).map(|_| ()).unwrap_err()
    };
    assert!(matches!(with(&bad_docs), Error::InvalidPayload { point: 31, .. }));
    assert_eq!(with(&docs[..49]), Error::PayloadCount { points: 50, payloads: 49 });
    // A bad payload and a bad vector: the error a collection's insert gives (payloads first).
    let mut nan = vectors.clone();
    nan[17 * dim] = f32::INFINITY;
    let nan: &'static [f32] = Vec::leak(nan);
    let both = build(&NewSegment { schema: Some(&schema), payloads: Some(&bad_docs), ..seg(nan) }).unwrap_err();
    let mut col = Collection::with_schema(config, schema.clone()).unwrap();
    let ids: Vec<u64> = (0..50).collect();
    assert_eq!(both, col.insert_with_payloads(&ids, nan, &bad_docs).unwrap_err());
    assert!(matches!(both, Error::InvalidPayload { point: 31, .. }));
    assert!(matches!(build(&NewSegment { payloads: Some(&docs), ..seg(v) }).unwrap_err(), Error::InvalidConfig(_)));
    assert!(matches!(build(&NewSegment { first_id: u64::MAX - 10, ..seg(v) }).unwrap_err(), Error::InvalidConfig(_)));
    assert!(matches!(
        build(&NewSegment { config: CollectionConfig { dim: 0, metric: Metric::L2 }, ..seg(v) }).unwrap_err(),
        Error::InvalidConfig(_)
    ));
}

/// Given centroids (another segment's) instead of trained ones: the segment partitions its rows
/// by them and is searched as any other; centroids that are not whole vectors are refused.
#[test]
fn reused_centroids_partition_the_rows() {
    let (n, dim) = (2000, 16);
    let vectors = clustered_vectors(11, n, dim, 8);
    let config = CollectionConfig { dim, metric: Metric::L2 };
    let index = IndexKind::IvfRabitq(IvfParams { partitions: Some(20), ..IvfParams::default() });
    let seg = |v: &'static [f32]| NewSegment { config, schema: None, index, first_id: 0, vectors: v, payloads: None };
    let (a, b): (&'static [f32], &'static [f32]) =
        (Vec::leak(vectors[..1000 * dim].to_vec()), Vec::leak(vectors[1000 * dim..].to_vec()));
    let first = Collection::from_bytes(build(&seg(a)).unwrap().as_slice()).unwrap();
    let centroids = first.segment(0).unwrap().ivf().unwrap().1.centroids.to_vec();
    let kernels = shoal_core::Kernels::best();
    let zeroed = |len| Ok(AlignedBytes::zeroed(len));
    let reused = seg(b).build_reusing_into(&kernels, &centroids, zeroed).unwrap();
    let col = Collection::from_bytes(reused.as_slice()).unwrap();
    let (_, data, _) = col.segment(0).unwrap().ivf().unwrap();
    assert_eq!(data.centroids, &centroids[..], "the given centroids, stored as they are");
    let exact = Collection::from_bytes(build(&seg(b)).unwrap().as_slice()).unwrap();
    let q = b[5 * dim..6 * dim].to_vec();
    let mut req = shoal_core::SearchRequest::nearest(q, 5);
    let got = col.search(&req).unwrap().points;
    req.params.exact = true;
    assert_eq!(got[0].id, 5, "a stored point finds itself");
    assert_eq!(got, exact.search(&req).unwrap().points);
    assert!(matches!(
        seg(b).build_reusing_into(&kernels, &centroids[..dim + 1], zeroed).unwrap_err(),
        Error::InvalidConfig(_)
    ));
}

/// Records what a build reports: per phase, its total and the units added to it.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<(&'static str, u64, u64)>>);

impl shoal_core::Progress for Recorder {
    fn phase(&self, name: &'static str, total: u64) {
        self.0.lock().unwrap().push((name, total, 0));
    }
    fn add(&self, units: u64) {
        self.0.lock().unwrap().last_mut().expect("units are added within a phase").2 += units;
    }
}

#[test]
fn a_reporting_build_names_its_phases_and_counts_them_out_with_the_same_bytes() {
    let (n, dim) = (5000, 16);
    let vectors = clustered_vectors(9, n, dim, 12);
    let docs = payloads(n);
    let schema = schema();
    let seg = NewSegment {
        config: CollectionConfig { dim, metric: Metric::Cosine },
        schema: Some(&schema),
        index: IndexKind::IvfRabitq(IvfParams { bits: Some(3), ..IvfParams::default() }),
        first_id: 0,
        vectors: &vectors,
        payloads: Some(&docs),
    };
    let rec = Recorder::default();
    let kernels = shoal_core::Kernels::best();
    let reported = seg.build_reporting_into(&kernels, &rec, |len| Ok(AlignedBytes::zeroed(len))).unwrap();
    assert_eq!(reported.as_slice(), build(&seg).unwrap().as_slice(), "reporting changes no byte");
    let phases = rec.0.into_inner().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p.0).collect();
    assert_eq!(
        names,
        [
            "k-means",
            "partitioning",
            "payloads and text",
            "writing rows",
            "encoding",
            "calibrating: exact neighbours",
            "calibrating: query settings",
            "checksums"
        ]
    );
    let totals: Vec<u64> = phases.iter().map(|p| p.1).collect();
    assert_eq!(totals, [10, n as u64, n as u64, 0, n as u64, 0, 0, 0], "k-means iterations, then rows");
    for (name, total, added) in phases {
        // A phase of known size is counted out exactly (the payloads in steps of 4,096 and a
        // remainder: n is not a multiple); one of unknown size adds nothing.
        assert_eq!(added, total, "{name}");
    }
}
