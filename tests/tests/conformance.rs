//! Identical results everywhere: the conformance scenario, run with every kernel variant of
//! the target, must give the outputs whose digests are committed in
//! `tests/golden/conformance.json` — the same ids, the same f32 score bits, the same segment
//! bytes — and exact searches must equal a brute-force oracle.
//!
//! The same file runs natively (x86_64, and aarch64 under QEMU in `make test`) and as a
//! wasm-bindgen-test suite in Node and headless Chromium (`wasm-pack test`, SIMD128 and scalar
//! builds), so every target is held to the one committed record. Natively it also writes the
//! fixtures that the npm package's conformance tests replay in Node. The plain wasm module under
//! wasmtime is checked by `tests/conformance-wasm/tests/wasmtime.rs`.
//!
//! `SHOAL_WRITE_GOLDEN=1 cargo test -p shoal-tests --test conformance` rewrites the digests
//! (after checking that every variant agrees) when the scenario or the writer changes on
//! purpose.

use shoal_core::Kernels;
use shoal_testkit::scenario::{CONFIGS, Output, check_digest, run, scenario};
use shoal_testkit::variants;
#[cfg(target_family = "wasm")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// Number of positions where two outputs differ, for a readable failure message.
fn differences(a: &Output, b: &Output) -> usize {
    let ids = a.ids.iter().zip(&b.ids).filter(|(x, y)| x != y).count() + a.ids.len().abs_diff(b.ids.len());
    let scores = a.score_bits.iter().zip(&b.score_bits).filter(|(x, y)| x != y).count()
        + a.score_bits.len().abs_diff(b.score_bits.len());
    let counts =
        a.counts.iter().zip(&b.counts).filter(|(x, y)| x != y).count() + usize::from(a.manifests != b.manifests);
    let seg =
        a.segment.iter().zip(&b.segment).filter(|(x, y)| x != y).count() + a.segment.len().abs_diff(b.segment.len());
    ids + scores + counts + seg
}

/// `f(0..n)`, natively spread over the machine's cores (each call is deterministic on its own),
/// in turn in wasm.
fn map_jobs<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    #[cfg(not(target_family = "wasm"))]
    {
        use std::sync::Mutex;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        let done = Mutex::new((0..n).map(|_| None).collect::<Vec<Option<T>>>());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(n);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let out = f(i);
                        done.lock().unwrap()[i] = Some(out);
                    }
                });
            }
        });
        done.into_inner().unwrap().into_iter().map(|o| o.expect("every job ran")).collect()
    }
    #[cfg(target_family = "wasm")]
    (0..n).map(f).collect()
}

/// Runs the configurations `which` with every variant: `[config][variant]`.
fn run_all(which: &[usize], variants: &[Kernels]) -> Vec<Vec<Output>> {
    let jobs: Vec<(usize, usize)> = which.iter().flat_map(|&c| (0..variants.len()).map(move |v| (c, v))).collect();
    let outputs = map_jobs(jobs.len(), |i| run(&scenario(CONFIGS[jobs[i].0]), variants[jobs[i].1]));
    let mut outputs = outputs.into_iter();
    which.iter().map(|_| outputs.by_ref().take(variants.len()).collect()).collect()
}

/// Runs the configurations `which` with every kernel variant of the target: every variant
/// equals the first (the scalar one, unless `SHOAL_ONLY_KERNELS` leaves it out), and (unless
/// `SHOAL_WRITE_GOLDEN` is set) the committed digests. Returns the first variant's outputs.
fn check_configs(which: &[usize]) -> Vec<Output> {
    let variants = variants::under_test("conformance");
    let write = std::env::var_os("SHOAL_WRITE_GOLDEN").is_some();
    assert!(!write || variants[0].name() == "scalar", "the digests are written from every variant, scalar first");
    let outputs = run_all(which, &variants);
    let mut reference = Vec::new();
    for (&c, mut outs) in which.iter().zip(outputs) {
        let config = &CONFIGS[c];
        for (k, out) in variants.iter().zip(&outs) {
            assert_eq!(
                differences(out, &outs[0]),
                0,
                "{}: kernels {} differ from {}",
                config.name,
                k.name(),
                variants[0].name()
            );
        }
        if !write {
            for (k, out) in variants.iter().zip(&outs) {
                check_digest(config, k.name(), out);
            }
        }
        reference.push(outs.swap_remove(0));
    }
    let line = variants::report("conformance", &variants);
    #[cfg(target_family = "wasm")]
    wasm_bindgen_test::console_log!("{line}");
    #[cfg(not(target_family = "wasm"))]
    let _ = line;
    reference
}

/// Natively: every configuration at once (in parallel), then (in parallel too) the oracle and
/// the fixtures for the Node replay and, with `SHOAL_WRITE_GOLDEN`, the digests.
#[cfg(not(target_family = "wasm"))]
#[test]
fn every_kernel_variant_gives_the_committed_outputs() {
    let all: Vec<usize> = (0..CONFIGS.len()).collect();
    let outputs = check_configs(&all);
    map_jobs(CONFIGS.len(), |c| {
        let s = scenario(CONFIGS[c]);
        native::check_against_oracle(&s, &outputs[c]);
        native::write_fixture(&s, &outputs[c]);
    });
    let mut digests = serde_json::Map::new();
    for (config, reference) in CONFIGS.iter().zip(&outputs) {
        digests.insert(config.name.to_string(), reference.digest());
    }
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/conformance.json");
        let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(digests)).unwrap();
        text.push('\n');
        std::fs::write(path, text).unwrap();
    }
}

/// In wasm: one test per configuration, each waiting for the next task (`setTimeout`) first,
/// so that the page answers its driver between configurations: wasm-bindgen-test runs
/// synchronous tests back to back in one call, and ChromeDriver gives up on a renderer silent
/// for 30 s (the debug builds are slow).
#[cfg(target_family = "wasm")]
mod each_configuration {
    use super::{CONFIGS, check_configs, test};

    /// Resolves on the next task of the event loop (Node and browsers alike).
    async fn next_task() {
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            let global = js_sys::global();
            let set_timeout = js_sys::Reflect::get(&global, &"setTimeout".into()).expect("setTimeout");
            let set_timeout: js_sys::Function = set_timeout.into();
            set_timeout.call2(&global, &resolve, &0.into()).expect("setTimeout call");
        });
        wasm_bindgen_futures::JsFuture::from(promise).await.expect("a timer resolves");
    }

    macro_rules! configuration_tests {
        ($($name:ident = $i:expr),* $(,)?) => {
            $(
                #[test]
                async fn $name() {
                    next_task().await;
                    check_configs(&[$i]);
                }
            )*
            /// Every configuration has its test above, once.
            #[test]
            fn every_configuration_has_a_test() {
                let mut listed = [$($i),*];
                listed.sort_unstable();
                assert!(listed.iter().copied().eq(0..CONFIGS.len()), "one test per configuration: {listed:?}");
            }
        };
    }

    configuration_tests!(
        config_0 = 0,
        config_1 = 1,
        config_2 = 2,
        config_3 = 3,
        config_4 = 4,
        config_5 = 5,
        config_6 = 6,
        config_7 = 7,
        config_8 = 8,
        config_9 = 9,
        config_10 = 10,
        config_11 = 11,
    );
}

/// The native-only parts: the brute-force oracle and the fixtures for the Node replay.
#[cfg(not(target_family = "wasm"))]
mod native {
    use std::path::{Path, PathBuf};

    use shoal_core::PointId;
    use shoal_payload::{Filter, reference};
    use shoal_testkit::oracle;
    use shoal_testkit::scenario::{
        FIELDS, FILTERS, NESTED_FIELDS, NESTED_FILTERS, Op, Output, SPARSE, Scenario, TEXTS, dense_specs, filter_of,
        fusion_request, live_points_at_searches, named_request, named_using, named_vector, text_of,
    };

    fn workspace_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
    }

    pub fn check_against_oracle(s: &Scenario, out: &Output) {
        let snaps = live_points_at_searches(s);
        let c = s.config;
        let mut at = 0;
        let mut count_at = 0;
        let mut checked = 0;
        let mut text_results = 0;
        // Named configurations: the dense vectors whose exact searches were checked (a bit each).
        let mut reached = 0u32;
        for (live, exact) in &snaps {
            for (qi, q) in s.queries.chunks_exact(c.dim).enumerate() {
                let n = out.counts[count_at] as usize;
                count_at += 1;
                let got: Vec<(PointId, u32)> = (at..at + n).map(|i| (out.ids[i], out.score_bits[i])).collect();
                at += n;
                let passing: Vec<(PointId, Vec<f32>)> = match filter_of(&c, qi) {
                    None => live.points.clone(),
                    Some(f) => {
                        let f = Filter::from_value(&f).unwrap();
                        let pass = |(p, doc): &(&(PointId, Vec<f32>), &serde_json::Value)| {
                            reference::matches_in(&f, doc, p.0, c.nested)
                        };
                        live.points.iter().zip(&live.payloads).filter(pass).map(|(p, _)| p.clone()).collect()
                    }
                };
                if c.fusion || text_of(&c, qi).is_some() || (c.named && named_using(&c, qi).is_none()) {
                    // Text, hybrid and fused searches: cross-target identity is checked here;
                    // their results against a naive BM25 and the fusion formulas are the
                    // business of the text and prefetch tests.
                    assert!(n <= c.k);
                    text_results += n;
                    continue;
                }
                if !exact {
                    // Approximate (IVF) search: cross-target identity is checked; recall is the
                    // business of the index tests. A (filtered) search still returns `k` results
                    // whenever that many live points pass.
                    assert_eq!(n, c.k.min(passing.len()), "{}: an approximate search returned too few results", c.name);
                    continue;
                }
                checked += 1;
                let want = match named_using(&c, qi).filter(|_| c.named) {
                    // Vector `d` of the live points, derived from their vector "a" (stored as
                    // given: "a" is not cosine).
                    Some(d) => {
                        reached |= 1 << d;
                        assert_ne!(c.metric, shoal_core::Metric::Cosine);
                        let spec = &dense_specs(&c)[d];
                        let prep = |v: &[f32]| {
                            let v = named_vector(v, d);
                            if spec.metric == shoal_core::Metric::Cosine { oracle::normalized(&v) } else { v }
                        };
                        let points: Vec<(PointId, Vec<f32>)> = passing.iter().map(|(id, v)| (*id, prep(v))).collect();
                        oracle::top_k(spec.metric, &points, &named_vector(q, d), c.k)
                    }
                    None => oracle::top_k(c.metric, &passing, q, c.k),
                };
                let want: Vec<(PointId, u32)> = want.iter().map(|&(id, s)| (id, s.to_bits())).collect();
                assert_eq!(got, want, "{}: result differs from the brute-force oracle", c.name);
            }
        }
        assert_eq!(at, out.ids.len());
        let plain = (0..c.queries)
            .filter(|&q| !c.fusion && text_of(&c, q).is_none() && (!c.named || named_using(&c, q).is_some()))
            .count();
        assert!(checked >= plain, "{}: at least the first search is exact", c.name);
        if c.named {
            assert_eq!(reached, (1 << dense_specs(&c).len()) - 1, "{}: every vector checked", c.name);
        }
        assert_eq!(text_results > 0, c.payloads && !c.nested, "{}: text and hybrid queries find points", c.name);
    }

    /// Writes `target/conformance/<name>.json` and `<name>.shoal` for the Node conformance tests.
    pub fn write_fixture(s: &Scenario, out: &Output) {
        use serde_json::{Value, json};
        let dir = workspace_root().join("target/conformance");
        std::fs::create_dir_all(&dir).unwrap();
        let c = s.config;
        // f32 values written as the exact f64 of the f32: JSON numbers parse back to that f64 in JS,
        // and `Float32Array` then holds the original bits.
        let floats = |v: &[f32]| Value::from(v.iter().map(|&x| x as f64).collect::<Vec<f64>>());
        // Integer ids as decimal strings (BigInt in JS), UUIDs as their canonical text.
        let ids = |v: &[PointId]| Value::from(v.iter().map(|x| x.to_string()).collect::<Vec<String>>());
        let ops: Vec<Value> = s
            .ops
            .iter()
            .map(|op| match op {
                Op::Insert { ids: i, vectors, payloads, sparse } => {
                    let mut op = json!({"op": "insert", "ids": ids(i), "vectors": floats(vectors)});
                    if c.named {
                        // Every dense vector by name, as the scenario derives them.
                        op["vectors"] = dense_specs(&c)
                            .iter()
                            .enumerate()
                            .map(|(d, spec)| {
                                let v: Vec<f32> =
                                    vectors.chunks_exact(c.dim).flat_map(|v| named_vector(v, d)).collect();
                                (spec.name.clone(), floats(&v))
                            })
                            .collect::<serde_json::Map<_, _>>()
                            .into();
                    }
                    if !payloads.is_empty() {
                        op["payloads"] = json!(payloads);
                    }
                    if !sparse.is_empty() {
                        // Sparse vectors by name ("plain", "weighted"), one (or null) per point.
                        let column = |t: usize| {
                            Value::from(
                                sparse[t]
                                    .iter()
                                    .map(|v| v.as_ref().map_or(Value::Null, |v| v.to_value()))
                                    .collect::<Vec<_>>(),
                            )
                        };
                        op["sparse"] = json!({"plain": column(0), "weighted": column(1)});
                    }
                    op
                }
                Op::Delete { ids: i } => json!({"op": "delete", "ids": ids(i)}),
                Op::Seal(None) => json!({"op": "seal"}),
                Op::Seal(Some(options)) => {
                    json!({"op": "seal", "options": serde_json::from_str::<Value>(options).unwrap()})
                }
                Op::RoundTrip => json!({"op": "roundtrip"}),
                Op::SetRoundTrip => json!({"op": "set_roundtrip"}),
                Op::Search => json!({"op": "search"}),
            })
            .collect();
        let fixture = json!({
            "name": c.name,
            "metric": c.metric.name(),
            "dim": c.dim,
            "k": c.k,
            "ops": ops,
            "queries": floats(&s.queries),
            // Query q uses filters[q % filters.length] (null: none).
            // Nested configurations: payloads are any objects, no declared fields, no text.
            "nested": c.nested,
            // Sparse configurations: the sparse vectors of the collection.
            "sparse": if c.sparse { serde_json::from_str::<Value>(SPARSE).unwrap() } else { Value::Null },
            "fields": match (c.payloads, c.nested) {
                (true, false) => serde_json::from_str::<Value>(FIELDS).unwrap(),
                (true, true) => serde_json::from_str::<Value>(NESTED_FIELDS).unwrap(),
                _ => Value::Null,
            },
            // ... and texts[q % texts.length] ("": none), alone when floor(q / texts.length) is odd.
            "texts": if c.payloads && !c.nested { TEXTS.to_vec() } else { Vec::new() },
            // (The configuration's own filters: `has_id` with UUIDs where its ids are UUIDs.)
            "filters": if c.payloads {
                let n = if c.nested { NESTED_FILTERS.len() } else { FILTERS.len() };
                (0..n).map(|q| filter_of(&c, q).unwrap_or(Value::Null)).collect::<Vec<_>>()
            } else {
                Vec::new()
            },
            // Fusion and named configurations: query q is requests[q], whole (its vectors included).
            "requests": s.queries.chunks_exact(c.dim).enumerate().filter(|_| c.fusion || c.named).map(|(q, v)| {
                if c.named { named_request(&c, q, v) } else { fusion_request(&c, q, v) }
            }).collect::<Vec<_>>(),
            // Named configurations: the collection's dense vectors (then each insert gives every
            // point's vectors by name).
            "vectors": if c.named {
                dense_specs(&c).iter().map(|d| (d.name.clone(), json!({"dim": d.dim, "metric": d.metric.name()}))).collect::<serde_json::Map<_, _>>().into()
            } else {
                Value::Null
            },
            "expected": {
                "ids": ids(&out.ids),
                "score_bits": out.score_bits,
                "counts": out.counts,
                "manifests": out.manifests,
            },
            "segment": format!("{}.shoal", c.name),
        });
        std::fs::write(dir.join(format!("{}.json", c.name)), serde_json::to_vec(&fixture).unwrap()).unwrap();
        std::fs::write(dir.join(format!("{}.shoal", c.name)), &out.segment).unwrap();
    }
}

/// The scenario's payloads reach every column layout the targets must read alike: value sets
/// (`tags`), inline codes (`n`) and counted direct columns with rows past the 15 codes a slot
/// counts (`refs`).
#[test]
fn scenario_payloads_cover_every_column_mode() {
    use shoal_payload::column::{COUNT_OPEN, DIRECT_TAG, MODE_CODES, MODE_COUNTED, MODE_SETS};
    let schema = shoal_payload::Schema::from_json(shoal_testkit::scenario::FIELDS).unwrap();
    let mut b = shoal_payload::PayloadBuilder::new(schema);
    for id in 0..2000u64 {
        b.push(&shoal_testkit::scenario::payload(id, 0)).unwrap();
    }
    let sections = b.finish();
    let p = sections.to_aligned();
    let view = p.view().unwrap();
    view.verify().unwrap();
    let mode = |name: &str| view.field(view.schema().field(name).unwrap().0).column.meta.mode;
    assert_eq!((mode("tags"), mode("n"), mode("refs")), (MODE_SETS, MODE_CODES, MODE_COUNTED));
    let refs = view.field(view.schema().field("refs").unwrap().0).column;
    assert!((0..refs.rows()).any(|r| refs.code(r) >= DIRECT_TAG && refs.code(r) & COUNT_OPEN == COUNT_OPEN));
}

/// An IVF build large enough for every chunked path of the parallel build (k-means++ over
/// several 2,048-row chunks of its sample, assignment over several 4,096-row tasks, many
/// partitions to encode): its bytes must equal the committed digest on every target — natively
/// over all cores, under QEMU, and sequentially in wasm.
#[test]
fn a_large_ivf_build_gives_the_committed_bytes() {
    use shoal_core::{Collection, CollectionConfig, IndexKind, Metric};
    let (n, dim) = (12_000, 16);
    let data = shoal_testkit::clustered_vectors(21, n, dim, 60);
    let ids: Vec<u64> = (0..n as u64).collect();
    let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
    col.insert(&ids, &data).unwrap();
    col.seal_with(IndexKind::from_json(r#"{"index": "ivf-rabitq", "bits": 3}"#).unwrap()).unwrap();
    let bytes = col.to_bytes().unwrap();
    let got = format!("{} {:08x}", bytes.len(), shoal_format::crc32c(bytes));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/large-build.txt");
    if std::env::var_os("SHOAL_WRITE_GOLDEN").is_some() {
        std::fs::write(path, format!("{got}\n")).unwrap();
        return;
    }
    assert_eq!(got, include_str!("../golden/large-build.txt").trim(), "the large IVF build's bytes changed");
}

/// Writes `target/conformance/remote/`, the fixtures of the Node test of
/// `Collection.openRemote` (bindings-js/test/remote.test.js): IVF segments laid out for ranges
/// (format 2, `NAME.v2.shoal`) and their format-1 twins (`NAME.v1.shoal`), with search
/// requests and the native results of reading the format-2 file by ranges (`NAME.json`) —
/// which must equal the local results of the twin, here and in wasm.
#[cfg(not(target_family = "wasm"))]
#[test]
fn remote_fixtures_read_by_ranges_as_locally() {
    use serde_json::json;
    use shoal_core::remote::{RangeCache, RemoteSegment, write_for_ranges_with, write_reordered_v1};
    use shoal_core::{Collection, CollectionConfig, IndexKind, Metric, SearchRequest};

    use shoal_testkit::read_by_ranges as drive;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/conformance/remote");
    std::fs::create_dir_all(&dir).unwrap();
    // (name, metric, dim, bits, codes only, coded centroids): every metric, 1 to 4 bits, a
    // dimension below 64 (several rows per vector block) and one above, a codes-only segment,
    // and one whose centroids are coded (`IVF_CENTROID_CODES`, as a writer lays out those over
    // 8 MiB: each search fetches those it may probe).
    let cases = [
        ("l2-1", Metric::L2, 48, 1, false, false),
        ("cosine-2", Metric::Cosine, 72, 2, false, false),
        ("dot-4", Metric::Dot, 33, 4, false, false),
        ("l2-3-codes", Metric::L2, 40, 3, true, false),
        ("l2-2-coded", Metric::L2, 160, 2, false, true),
    ];
    for (c, &(name, metric, dim, bits, codes_only, coded)) in cases.iter().enumerate() {
        let n = 6_000;
        let data = shoal_testkit::clustered_vectors(40 + c as u64, n, dim, 50);
        // Ids out of row order, some beyond 2^53 (BigInts in JavaScript).
        let ids: Vec<u64> = (0..n as u64).map(|i| if i % 97 == 5 { (1 << 60) + i } else { i * 7 + 3 }).collect();
        let mut col = Collection::new(CollectionConfig { dim, metric }).unwrap();
        col.insert(&ids, &data).unwrap();
        let partitions = if coded { 90 } else { 40 };
        let index = format!(
            r#"{{"index": "ivf-rabitq", "partitions": {partitions}, "bits": {bits}, "codes_only": {codes_only}}}"#
        );
        col.seal_with(IndexKind::from_json(&index).unwrap()).unwrap();
        let seg = col.segment(0).unwrap();
        let v2 = write_for_ranges_with(seg, if coded { 0 } else { shoal_core::remote::MAX_HOT_CENTROIDS }).unwrap();
        let head = shoal_format::SegmentHead::read(v2.as_slice()).unwrap();
        assert_eq!(head.entry(71).is_some(), coded, "{name}: IVF_CENTROID_CODES");
        let v1 = write_reordered_v1(seg).unwrap();
        let twin = Collection::from_bytes(v1.as_slice()).unwrap();
        let queries = shoal_testkit::clustered_vectors(900 + c as u64, 30, dim, 50);
        let mut cache = RangeCache::new(u64::MAX);
        let remote = drive(v2.as_slice(), &mut cache, RemoteSegment::open);
        let (mut requests, mut results) = (Vec::new(), Vec::new());
        for (q, v) in queries.chunks_exact(dim).enumerate() {
            // Default settings, and some with other probes, re-ranking, offsets and limits.
            let mut req = json!({"vector": v.iter().map(|&x| x as f64).collect::<Vec<f64>>(), "limit": 10});
            match q % 5 {
                1 => req["params"] = json!({"nprobe": 3, "rerank": 2}),
                2 => req["offset"] = json!(4),
                3 => req["limit"] = json!(1),
                4 => req["params"] = json!({"nprobe": 40}),
                _ => {}
            }
            let parsed = SearchRequest::from_json(&req.to_string()).unwrap();
            let got = drive(v2.as_slice(), &mut cache, |c| remote.search(&parsed, c));
            let local = twin.search(&parsed).unwrap();
            let row = |r: &shoal_core::SearchResponse| -> Vec<(String, u32)> {
                r.points.iter().map(|p| (p.id.to_string(), p.score.to_bits())).collect()
            };
            assert_eq!(row(&got), row(&local), "{name}: query {q} read by ranges differs from the local search");
            assert!(!got.points.is_empty(), "{name}: query {q} finds points");
            requests.push(req);
            results.push(json!(row(&got)));
        }
        std::fs::write(dir.join(format!("{name}.v2.shoal")), v2.as_slice()).unwrap();
        std::fs::write(dir.join(format!("{name}.v1.shoal")), v1.as_slice()).unwrap();
        let fixture = json!({"dim": dim, "metric": metric.name(), "rows": n, "codesOnly": codes_only,
            "bootstrapLen": remote.bootstrap_len(), "requests": requests, "results": results});
        std::fs::write(dir.join(format!("{name}.json")), fixture.to_string()).unwrap();
    }
}

/// Writes `target/conformance/remote/set/`, the set fixture of the Node test of
/// `Collection.openRemote(manifestUrl)`: a collection of three sealed IVF segments laid out for
/// ranges as `shoal publish` lays them out (`manifest.json` with bootstrap hints, and the
/// format-2 segments), and `set.json`: requests and the local set's results — which the set
/// read by ranges gives here, and must give in wasm.
#[cfg(not(target_family = "wasm"))]
#[test]
fn remote_set_fixture_reads_as_the_local_set() {
    use serde_json::json;
    use shoal_core::remote::{RangeCache, RemoteSegment, RemoteSet, SetManifest, SetStep, lay_out_segment};
    use shoal_core::{Collection, CollectionConfig, IndexKind, Metric, SearchRequest};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/conformance/remote");
    let set_dir = dir.join("set");
    std::fs::create_dir_all(&set_dir).unwrap();
    let (dim, n) = (36, 2_500);
    let mut col = Collection::new(CollectionConfig { dim, metric: Metric::L2 }).unwrap();
    let index = r#"{"index": "ivf-rabitq", "partitions": 20, "bits": 2}"#;
    col.set_index_kind(IndexKind::from_json(index).unwrap()).unwrap();
    for s in 0..3u64 {
        let data = shoal_testkit::clustered_vectors(70 + s, n, dim, 25);
        let ids: Vec<u64> = (0..n as u64)
            .map(|i| if i % 89 == 3 { (1 << 58) + s * 10_000 + i } else { (s * n as u64 + i) * 3 })
            .collect();
        col.insert(&ids, &data).unwrap();
        col.seal();
    }
    assert_eq!(col.segment_count(), 3);
    let manifest = col.checkpoint(None).manifest;
    let (mut entries, mut hints, mut files) = (Vec::new(), Vec::new(), Vec::new());
    for (i, entry) in manifest.segments.iter().enumerate() {
        let (e, hint, bytes) = lay_out_segment(entry, col.segment(i).unwrap()).unwrap();
        std::fs::write(set_dir.join(&e.file), bytes.as_slice()).unwrap();
        files.push(bytes);
        entries.push(e);
        hints.push(hint);
    }
    let published = SetManifest::published(&manifest, entries, hints);
    std::fs::write(set_dir.join("manifest.json"), published.to_json()).unwrap();
    assert_eq!(SetManifest::from_json(&published.to_json()).unwrap(), published);

    // Read by ranges from those bytes: every wave's ranges of every segment at once.
    fn run<T>(
        caches: &mut [RangeCache],
        files: &[shoal_core::AlignedBytes],
        step: &mut dyn FnMut(&[&RangeCache]) -> SetStep<T>,
    ) -> T {
        for _ in 0..8 {
            let view: Vec<&RangeCache> = caches.iter().collect();
            match step(&view) {
                SetStep::Done(t) => return t,
                SetStep::Fetch(fetch) => {
                    for (g, ranges) in fetch {
                        let b = files[g].as_slice();
                        for r in ranges {
                            caches[g].insert(r.start, &b[r.start as usize..(r.end as usize).min(b.len())]);
                        }
                    }
                }
            }
        }
        panic!("no answer in 8 waves")
    }
    let mut caches: Vec<RangeCache> = (0..3).map(|_| RangeCache::new(u64::MAX)).collect();
    let segments: Vec<RemoteSegment> = run(&mut caches, &files, &mut |c: &[&RangeCache]| {
        let mut fetch = Vec::new();
        let mut done = Vec::new();
        for (g, cache) in c.iter().enumerate() {
            match RemoteSegment::open_with(cache, published.bootstrap[g].unwrap()).unwrap() {
                shoal_core::remote::Step::Fetch(r) => fetch.push((g, r)),
                shoal_core::remote::Step::Done(s) => done.push(s),
            }
        }
        if fetch.is_empty() { SetStep::Done(done) } else { SetStep::Fetch(fetch) }
    });
    let set = RemoteSet::new(&published, segments).unwrap();
    let queries = shoal_testkit::clustered_vectors(971, 24, dim, 25);
    let (mut requests, mut results) = (Vec::new(), Vec::new());
    for (q, v) in queries.chunks_exact(dim).enumerate() {
        let mut req = json!({"vector": v.iter().map(|&x| x as f64).collect::<Vec<f64>>(), "limit": 10});
        match q % 4 {
            1 => req["params"] = json!({"nprobe": 2, "rerank": 3}),
            2 => req["offset"] = json!(3),
            3 => req["limit"] = json!(25),
            _ => {}
        }
        let parsed = SearchRequest::from_json(&req.to_string()).unwrap();
        let got = run(&mut caches, &files, &mut |c: &[&RangeCache]| set.search(&parsed, c).unwrap());
        let local = col.search(&parsed).unwrap();
        let row = |r: &shoal_core::SearchResponse| -> Vec<(String, u32)> {
            r.points.iter().map(|p| (p.id.to_string(), p.score.to_bits())).collect()
        };
        assert_eq!(row(&got), row(&local), "set query {q} read by ranges differs from the local set");
        assert!(!got.points.is_empty(), "set query {q} finds points");
        requests.push(req);
        results.push(json!(row(&got)));
    }
    let fixture =
        json!({"dim": dim, "metric": "l2", "rows": 3 * n, "segments": 3, "requests": requests, "results": results});
    std::fs::write(dir.join("set.json"), fixture.to_string()).unwrap();
}

/// Writes `target/conformance/remote/text/` (a published set of two segments with payloads and
/// text) and `text.json`: text, hybrid and vector requests, some with payloads, some filtered, and the local
/// set's results and payloads — which the set read by ranges gives here, and must give in wasm
/// (bindings-js/test/remote-fixtures.js, bindings-js/test/edge/run.mjs).
#[cfg(not(target_family = "wasm"))]
#[test]
fn remote_text_set_fixture_reads_as_the_local_set() {
    use serde_json::{Value, json};
    use shoal_core::remote::{RangeCache, RemoteSegment, RemoteSet, SetStep};
    use shoal_core::{Collection, CollectionConfig, IndexKind, Metric, SearchRequest};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/conformance/remote");
    let set_dir = dir.join("text");
    std::fs::create_dir_all(&set_dir).unwrap();
    let (dim, n) = (20, 900);
    let words: Vec<String> = (0..300).map(|i| format!("{}{}", ["tide", "shoal", "reef"][i % 3], i / 3)).collect();
    let schema = json!({"body": "text", "tag": "keyword", "n": "integer"});
    let config = CollectionConfig { dim, metric: Metric::Cosine };
    let mut col = Collection::with_schema(config, Collection::parse_schema(&schema).unwrap()).unwrap();
    col.set_index_kind(IndexKind::from_json(r#"{"index": "ivf-rabitq", "partitions": 10, "bits": 2}"#).unwrap())
        .unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for s in 0..2u64 {
        let data = shoal_testkit::clustered_vectors(80 + s, n, dim, 15);
        let ids: Vec<u64> = (0..n as u64)
            .map(|i| if i % 61 == 7 { (1 << 57) + s * 1000 + i } else { (s * n as u64 + i) * 5 })
            .collect();
        let payloads: Vec<Value> = (0..n)
            .map(|i| {
                let len = 1 + next() % 12;
                let body: Vec<&str> = (0..len)
                    .map(|_| {
                        let r = next();
                        &words[if r % 3 == 0 { (r % 7) as usize } else { (r % 300) as usize }][..]
                    })
                    .collect();
                json!({"body": body.join(" "), "tag": format!("t{}", i % 3), "n": i})
            })
            .collect();
        col.insert_with_payloads(&ids, &data, &payloads).unwrap();
        col.seal();
    }
    let p = shoal_testkit::publish_with_twins(&col);
    for (e, bytes) in p.manifest.manifest.segments.iter().zip(&p.files) {
        std::fs::write(set_dir.join(&e.file), bytes).unwrap();
    }
    std::fs::write(set_dir.join("manifest.json"), p.manifest.to_json()).unwrap();
    let files: Vec<&[u8]> = p.files.iter().map(Vec::as_slice).collect();
    /// Each segment's missing ranges (`None`: done).
    type Fetch = Option<Vec<(usize, Vec<std::ops::Range<u64>>)>>;
    let run = |caches: &mut [RangeCache], step: &mut dyn FnMut(&[&RangeCache]) -> Fetch| {
        for _ in 0..8 {
            let view: Vec<&RangeCache> = caches.iter().collect();
            match step(&view) {
                None => return,
                Some(fetch) => {
                    for (g, ranges) in fetch {
                        for r in ranges {
                            caches[g]
                                .insert(r.start, &files[g][r.start as usize..(r.end as usize).min(files[g].len())]);
                        }
                    }
                }
            }
        }
        panic!("no answer in 8 waves")
    };
    let mut caches: Vec<RangeCache> = (0..2).map(|_| RangeCache::new(u64::MAX)).collect();
    let mut segments = Vec::new();
    run(&mut caches, &mut |c: &[&RangeCache]| {
        let mut fetch = Vec::new();
        segments.clear();
        for (g, cache) in c.iter().enumerate() {
            match RemoteSegment::open_with(cache, p.manifest.prefix(g)).unwrap() {
                shoal_core::remote::Step::Fetch(r) => fetch.push((g, r)),
                shoal_core::remote::Step::Done(s) => segments.push(s),
            }
        }
        (!fetch.is_empty()).then_some(fetch)
    });
    let set = RemoteSet::new(&p.manifest, segments).unwrap();
    let queries = shoal_testkit::clustered_vectors(990, 40, dim, 15);
    let (mut requests, mut results, mut payloads) = (Vec::new(), Vec::new(), Vec::new());
    for (q, v) in queries.chunks_exact(dim).enumerate() {
        let (a, b) = (&words[q % 7], &words[(q * 37) % 300]);
        let vector = json!(v.iter().map(|&x| x as f64).collect::<Vec<f64>>());
        let tag = |t: &str| json!({"must": [{"key": "tag", "match": {"value": t}}]});
        let req = match q % 10 {
            0 => json!({"text": format!("{a} {b}"), "limit": 10}),
            1 => json!({"text": format!("+{a} {b}"), "limit": 5, "offset": 2, "with_payload": true}),
            2 => json!({"text": format!("\"{a} {b}\" {a}"), "limit": 10}),
            3 => json!({"text": format!("{a} {b}"), "vector": vector, "limit": 10}),
            4 => json!({"text": b, "vector": vector, "limit": 6, "fusion": "dbsf", "with_payload": true}),
            5 => json!({"vector": vector, "limit": 8, "with_payload": true}),
            // Filters: a few matches scanned exactly; many, checked by the IVF search; text and
            // hybrid requests filtered.
            6 => json!({"vector": vector, "limit": 10, "filter": tag("t1")}),
            7 => json!({"vector": vector, "limit": 6, "with_payload": true,
                "filter": {"must": [{"key": "n", "range": {"gte": 100}}]}}),
            8 => json!({"text": format!("{a} {b}"), "limit": 10, "filter": {"must_not": [tag("t0")]}}),
            _ => {
                json!({"text": a, "vector": vector, "limit": 10, "filter": {"must": [{"key": "n", "range": {"lt": 450}}]}})
            }
        };
        let parsed = SearchRequest::from_json(&req.to_string()).unwrap();
        let mut got = None;
        run(&mut caches, &mut |c: &[&RangeCache]| match set.search(&parsed, c).unwrap() {
            SetStep::Done(r) => {
                got = Some(r);
                None
            }
            SetStep::Fetch(f) => Some(f),
        });
        let got = got.unwrap();
        let local = p.local.search(&parsed).unwrap();
        let row = |r: &shoal_core::SearchResponse| -> Vec<(String, u32)> {
            r.points.iter().map(|p| (p.id.to_string(), p.score.to_bits())).collect()
        };
        let docs = |r: &shoal_core::SearchResponse| -> Vec<Option<Value>> {
            r.points.iter().map(|p| p.payload.clone()).collect()
        };
        assert_eq!(row(&got), row(&local), "text set query {q} read by ranges differs from the local set");
        assert_eq!(docs(&got), docs(&local), "text set query {q}: payloads");
        assert!(!got.points.is_empty(), "text set query {q} finds points");
        requests.push(req);
        results.push(json!(row(&got)));
        payloads.push(json!(docs(&got)));
    }
    let fixture = json!({"dim": dim, "metric": "cosine", "rows": 2 * n, "segments": 2, "requests": requests,
        "results": results, "payloads": payloads});
    std::fs::write(dir.join("text.json"), fixture.to_string()).unwrap();
}
