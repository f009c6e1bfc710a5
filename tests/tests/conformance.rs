//! Identical results everywhere: the conformance scenario run natively with every kernel
//! variant and in wasm under wasmtime (SIMD128 and scalar builds) must give the same ids, the
//! same f32 score bits and the same segment bytes; the results must also equal a brute-force
//! oracle. Writes the fixtures that the npm package's conformance tests replay in Node.

use std::path::{Path, PathBuf};
use std::process::Command;

use shoal_core::Kernels;
use shoal_payload::{Filter, reference};
use shoal_testkit::oracle;
use shoal_testkit::scenario::{
    CONFIGS, FIELDS, FILTERS, Op, Output, Scenario, TEXTS, filter_of, live_points_at_searches, run, scenario, text_of,
};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Number of positions where two outputs differ, for a readable failure message.
fn differences(a: &Output, b: &Output) -> usize {
    let ids = a.ids.iter().zip(&b.ids).filter(|(x, y)| x != y).count() + a.ids.len().abs_diff(b.ids.len());
    let scores = a.score_bits.iter().zip(&b.score_bits).filter(|(x, y)| x != y).count()
        + a.score_bits.len().abs_diff(b.score_bits.len());
    let counts = a.counts.iter().zip(&b.counts).filter(|(x, y)| x != y).count();
    let seg =
        a.segment.iter().zip(&b.segment).filter(|(x, y)| x != y).count() + a.segment.len().abs_diff(b.segment.len());
    ids + scores + counts + seg
}

fn check_against_oracle(s: &Scenario, out: &Output) {
    let snaps = live_points_at_searches(s);
    let c = s.config;
    let mut at = 0;
    let mut count_at = 0;
    let mut checked = 0;
    let mut text_results = 0;
    for (live, exact) in &snaps {
        for (qi, q) in s.queries.chunks_exact(c.dim).enumerate() {
            let n = out.counts[count_at] as usize;
            count_at += 1;
            let got: Vec<(u64, u32)> = (at..at + n).map(|i| (out.ids[i], out.score_bits[i])).collect();
            at += n;
            let passing: Vec<(u64, Vec<f32>)> = match filter_of(&c, qi) {
                None => live.points.clone(),
                Some(f) => {
                    let f = Filter::from_value(&f).unwrap();
                    let pass = |(p, doc): &(&(u64, Vec<f32>), &serde_json::Value)| reference::matches(&f, doc, p.0);
                    live.points.iter().zip(&live.payloads).filter(pass).map(|(p, _)| p.clone()).collect()
                }
            };
            if text_of(&c, qi).is_some() {
                // Text and hybrid searches: cross-target identity is checked here; their
                // results against a naive BM25 are the business of the text tests.
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
            let want = oracle::top_k(c.metric, &passing, q, c.k);
            let want: Vec<(u64, u32)> = want.iter().map(|&(id, s)| (id, s.to_bits())).collect();
            assert_eq!(got, want, "{}: result differs from the brute-force oracle", c.name);
        }
    }
    assert_eq!(at, out.ids.len());
    let plain = (0..c.queries).filter(|&q| text_of(&c, q).is_none()).count();
    assert!(checked >= plain, "{}: at least the first search is exact", c.name);
    assert_eq!(text_results > 0, c.payloads, "{}: text and hybrid queries find points", c.name);
}

#[test]
fn native_kernel_variants_match_the_scalar_reference_and_the_oracle() {
    for config in CONFIGS {
        let s = scenario(config);
        let reference = run(&s, Kernels::scalar());
        check_against_oracle(&s, &reference);
        let variants: Vec<Kernels> = Kernels::available().collect();
        assert!(!variants.is_empty());
        for k in variants {
            let out = run(&s, k);
            assert_eq!(differences(&out, &reference), 0, "{}: kernels {} differ from scalar", config.name, k.name());
        }
        write_fixture(&s, &reference);
    }
}

/// Writes `target/conformance/<name>.json` and `<name>.shoal` for the Node conformance tests.
fn write_fixture(s: &Scenario, out: &Output) {
    use serde_json::{Value, json};
    let dir = workspace_root().join("target/conformance");
    std::fs::create_dir_all(&dir).unwrap();
    let c = s.config;
    // f32 values written as the exact f64 of the f32: JSON numbers parse back to that f64 in JS,
    // and `Float32Array` then holds the original bits.
    let floats = |v: &[f32]| Value::from(v.iter().map(|&x| x as f64).collect::<Vec<f64>>());
    let ids = |v: &[u64]| Value::from(v.iter().map(|x| x.to_string()).collect::<Vec<String>>());
    let ops: Vec<Value> = s
        .ops
        .iter()
        .map(|op| match op {
            Op::Insert { ids: i, vectors, payloads } if payloads.is_empty() => {
                json!({"op": "insert", "ids": ids(i), "vectors": floats(vectors)})
            }
            Op::Insert { ids: i, vectors, payloads } => {
                json!({"op": "insert", "ids": ids(i), "vectors": floats(vectors), "payloads": payloads})
            }
            Op::Delete { ids: i } => json!({"op": "delete", "ids": ids(i)}),
            Op::Seal(None) => json!({"op": "seal"}),
            Op::Seal(Some(options)) => {
                json!({"op": "seal", "options": serde_json::from_str::<Value>(options).unwrap()})
            }
            Op::RoundTrip => json!({"op": "roundtrip"}),
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
        "fields": if c.payloads { serde_json::from_str::<Value>(FIELDS).unwrap() } else { Value::Null },
        // ... and texts[q % texts.length] ("": none), alone when floor(q / texts.length) is odd.
        "texts": if c.payloads { TEXTS.to_vec() } else { Vec::new() },
        "filters": if c.payloads {
            FILTERS.iter().map(|f| serde_json::from_str::<Value>(f).unwrap()).collect::<Vec<_>>()
        } else {
            Vec::new()
        },
        "expected": {"ids": ids(&out.ids), "score_bits": out.score_bits, "counts": out.counts},
        "segment": format!("{}.shoal", c.name),
    });
    std::fs::write(dir.join(format!("{}.json", c.name)), serde_json::to_vec(&fixture).unwrap()).unwrap();
    std::fs::write(dir.join(format!("{}.shoal", c.name)), &out.segment).unwrap();
}

/// Builds the conformance wasm module with or without SIMD128 and returns its path.
fn build_wasm(simd: bool) -> PathBuf {
    let root = workspace_root();
    let target_dir = root.join(if simd { "target/conformance-wasm-simd" } else { "target/conformance-wasm-scalar" });
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--release", "-p", "shoal-conformance-wasm", "--target", "wasm32-unknown-unknown"])
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("RUSTFLAGS", if simd { "-C target-feature=+simd128" } else { "" })
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS")
        .status()
        .expect("run cargo to build the conformance wasm module");
    assert!(
        status.success(),
        "building the conformance wasm module failed (is the wasm32-unknown-unknown target installed?)"
    );
    target_dir.join("wasm32-unknown-unknown/release/shoal_conformance_wasm.wasm")
}

struct Reader<'a>(&'a [u8]);
impl Reader<'_> {
    fn u32(&mut self) -> u32 {
        let (h, t) = self.0.split_at(4);
        self.0 = t;
        u32::from_le_bytes(h.try_into().unwrap())
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        h.to_vec()
    }
}

fn decode(buf: &[u8]) -> (String, Output) {
    let mut r = Reader(buf);
    let n = r.u32() as usize;
    let name = String::from_utf8(r.bytes(n)).unwrap();
    let n = r.u32() as usize;
    let ids = r.bytes(n * 8).chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
    let n = r.u32() as usize;
    let score_bits = r.bytes(n * 4).chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let n = r.u32() as usize;
    let counts = r.bytes(n * 4).chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let n = r.u32() as usize;
    let segment = r.bytes(n);
    assert!(r.0.is_empty());
    (name, Output { ids, score_bits, counts, segment })
}

#[test]
fn encoding_round_trips() {
    let out = Output { ids: vec![1, u64::MAX], score_bits: vec![7, 8], counts: vec![2], segment: vec![1, 2, 3] };
    assert_eq!(decode(&shoal_conformance_wasm::encode("x", &out)), ("x".to_string(), out));
}

#[test]
fn wasm_builds_under_wasmtime_match_native() {
    use wasmtime::{Engine, Instance, Module, Store};
    for simd in [true, false] {
        let path = build_wasm(simd);
        let engine = Engine::default();
        let module = Module::from_file(&engine, &path).unwrap();
        let mut store = Store::new(&engine, ());
        let instance = Instance::new(&mut store, &module, &[]).expect("the module needs no imports");
        let configs = instance.get_typed_func::<(), u32>(&mut store, "shoal_conformance_configs").unwrap();
        let run_fn = instance.get_typed_func::<u32, u32>(&mut store, "shoal_conformance_run").unwrap();
        let len_fn = instance.get_typed_func::<(), u32>(&mut store, "shoal_conformance_output_len").unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let zero_alloc = instance.get_typed_func::<(), u32>(&mut store, "shoal_zero_alloc_check").unwrap();
        assert_eq!(
            zero_alloc.call(&mut store, ()).unwrap(),
            0,
            "searches in wasm (simd: {simd}) allocated after warm-up"
        );
        assert_eq!(configs.call(&mut store, ()).unwrap() as usize, CONFIGS.len());
        for (i, config) in CONFIGS.iter().enumerate() {
            let ptr = run_fn.call(&mut store, i as u32).unwrap() as usize;
            let len = len_fn.call(&mut store, ()).unwrap() as usize;
            let (kernels, out) = decode(&memory.data(&store)[ptr..ptr + len]);
            assert_eq!(kernels, if simd { "simd128" } else { "scalar" }, "the build picked the wrong kernels");
            let native = run(&scenario(*config), Kernels::scalar());
            assert_eq!(differences(&out, &native), 0, "{}: wasm ({kernels}) differs from native", config.name);
        }
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
